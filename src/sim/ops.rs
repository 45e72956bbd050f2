//! `run` and `replay` ops of the request service.
//!
//! `{"op":"run","workflow":W,"scenario":S}` → `{"ok": REPORT}`;
//! `{"op":"replay","workflow":W,"run":RUNSTATE,"scenario":S,"from"?:ID}` → `{"ok": REPORT}`.
//! Errors are `{"error": {"code", "message", …}}`: `invalid_workflow` (with `errors`),
//! `invalid_scenario` (with `path` and `errors`), `invalid_variables` (with `variable`),
//! `invalid_run` for a RUNSTATE that does not parse. The memory store, unless a
//! `conformance::HostAdapter` supplies its own (`run_on_host`, `replay_on_host`).

use serde_json::{Value, json};

use super::{MemoryStore, Scenario, SimError, SimOptions, load_scenario, load_workflow};
use crate::host::StoreFactory;
use crate::model::{RunState, Workflow};
use crate::service::{bad_request, ok};

fn error(e: &SimError) -> Value {
    json!({ "error": e.to_json() })
}

fn inputs(request: &Value) -> Result<(Workflow, Scenario), Value> {
    let Some(w) = request.get("workflow") else {
        return Err(bad_request("missing \"workflow\""));
    };
    let workflow = load_workflow(w).map_err(|e| error(&e))?;
    let empty = json!({});
    let scenario =
        load_scenario(request.get("scenario").unwrap_or(&empty)).map_err(|e| error(&e))?;
    Ok((workflow, scenario))
}

pub(crate) fn run(request: &Value) -> Value {
    run_with(request, |workflow, scenario| {
        super::run_on_store(
            workflow,
            scenario,
            &SimOptions::default(),
            Box::new(MemoryStore::default()),
            None,
        )
    })
}

/// The `run` op on a candidate host's durable store (a `conformance::HostAdapter`'s).
pub(crate) fn run_on_host(request: &Value, factory: Box<dyn StoreFactory>) -> Value {
    run_with(request, |workflow, scenario| {
        super::run_on_host_store(workflow, scenario, &SimOptions::default(), factory)
    })
}

/// The `run` op, the simulation done by `simulate`.
pub(crate) fn run_with(
    request: &Value,
    simulate: impl FnOnce(&Workflow, &Scenario) -> Result<super::Report, SimError>,
) -> Value {
    super::with_stack(|| run_inner(request, simulate))
}

fn run_inner(
    request: &Value,
    simulate: impl FnOnce(&Workflow, &Scenario) -> Result<super::Report, SimError>,
) -> Value {
    let (workflow, scenario) = match inputs(request) {
        Ok(x) => x,
        Err(e) => return e,
    };
    match simulate(&workflow, &scenario) {
        Ok(report) => ok(report.to_json()),
        Err(e) => error(&e),
    }
}

pub(crate) fn replay(request: &Value) -> Value {
    replay_with(request, |workflow, scenario, original, from| {
        super::replay_on_store(
            workflow,
            scenario,
            original,
            from,
            &SimOptions::default(),
            Box::new(MemoryStore::default()),
            None,
        )
    })
}

/// The `replay` op on a candidate host's durable store (a `conformance::HostAdapter`'s).
pub(crate) fn replay_on_host(request: &Value, factory: Box<dyn StoreFactory>) -> Value {
    replay_with(request, |workflow, scenario, original, from| {
        super::replay_on_host_store(
            workflow,
            scenario,
            original,
            from,
            &SimOptions::default(),
            factory,
        )
    })
}

/// The `replay` op, the simulation done by `simulate`.
pub(crate) fn replay_with(
    request: &Value,
    simulate: impl FnOnce(
        &Workflow,
        &Scenario,
        &RunState,
        Option<&str>,
    ) -> Result<super::Report, SimError>,
) -> Value {
    super::with_stack(|| replay_inner(request, simulate))
}

fn replay_inner(
    request: &Value,
    simulate: impl FnOnce(
        &Workflow,
        &Scenario,
        &RunState,
        Option<&str>,
    ) -> Result<super::Report, SimError>,
) -> Value {
    let (workflow, scenario) = match inputs(request) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let Some(run) = request.get("run") else {
        return bad_request("missing \"run\" (the RunState to replay)");
    };
    let original: RunState = match serde_json::from_value(run.clone()) {
        Ok(r) => r,
        Err(e) => {
            return json!({"error": {"code": "invalid_run", "path": "/run",
                                    "message": format!("\"run\" is not a RunState: {e}")}});
        }
    };
    let from = match request.get("from") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return bad_request("\"from\" must be a step id"),
    };
    match simulate(&workflow, &scenario, &original, from) {
        Ok(report) => ok(report.to_json()),
        Err(e) => error(&e),
    }
}
