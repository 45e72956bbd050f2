//! `run` and `replay` ops of the request service.
//!
//! `{"op":"run","workflow":W,"scenario":S}` → `{"ok": REPORT}`;
//! `{"op":"replay","workflow":W,"run":RUNSTATE,"scenario":S,"from"?:ID}` → `{"ok": REPORT}`.
//! Errors are `{"error": {"code", "message", …}}`: `invalid_workflow` (with `errors`),
//! `invalid_scenario` (with `path` and `errors`), `invalid_variables` (with `variable`),
//! `invalid_run` for a RUNSTATE that does not parse. The memory store, unless a
//! `conformance::HostAdapter` supplies its own (`run_on_host`, `replay_on_host`).

use std::rc::Rc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{bad_request, ok};
use crate::host::StoreFactory;
use crate::model::{RunState, Workflow};
use crate::sim::{
    MemoryStore, Scenario, SimError, SimOptions, Simulation, load_scenario, load_workflow,
};

fn error(e: &SimError) -> Value {
    json!({ "error": e.to_json() })
}

/// The last document a thread loaded into a `T`, and what loading it gave. A campaign
/// asks about one workflow and scenario many times in a row (a plain run, a run per
/// crash point, a replay); loading is a pure function of the document, so an identical
/// document (`Value` equality: `1` and `1.0` differ, which only costs a miss) gets the
/// same result without being parsed and validated again. The comparison is
/// `json::json_same`: `==` that walks equal members in order without hashing a key. A
/// document that fails to load is not remembered.
type Last<T> = std::cell::RefCell<Option<(Value, Rc<T>)>>;

thread_local! {
    static LAST_WORKFLOW: Last<Workflow> = const { std::cell::RefCell::new(None) };
    static LAST_SCENARIO: Last<Scenario> = const { std::cell::RefCell::new(None) };
}

/// `load(doc)`, remembered in `last` (see [`Last`]).
fn load_cached<T>(
    last: &Last<T>,
    doc: &Value,
    load: impl FnOnce(&Value) -> Result<T, SimError>,
) -> Result<Rc<T>, SimError> {
    let hit = last
        .borrow()
        .as_ref()
        .filter(|(d, _)| crate::json::json_same(d, doc))
        .map(|(_, t)| Rc::clone(t));
    if let Some(t) = hit {
        return Ok(t);
    }
    let loaded = Rc::new(load(doc)?);
    *last.borrow_mut() = Some((doc.clone(), Rc::clone(&loaded)));
    Ok(loaded)
}

fn inputs(request: &Value) -> Result<(Rc<Workflow>, Rc<Scenario>), Value> {
    let Some(w) = request.get("workflow") else {
        return Err(bad_request("missing \"workflow\""));
    };
    let workflow = LAST_WORKFLOW
        .with(|last| load_cached(last, w, load_workflow))
        .map_err(|e| error(&e))?;
    let empty = json!({});
    let doc = request.get("scenario").unwrap_or(&empty);
    let scenario = LAST_SCENARIO
        .with(|last| load_cached(last, doc, load_scenario))
        .map_err(|e| error(&e))?;
    Ok((workflow, scenario))
}

/// SEC-1: every byte of a response passes through the request's redaction sink — built
/// from the raw `scenario.secrets`, so even a scenario that fails to load is scrubbed.
pub(crate) fn redacted(request: &Value, response: Value) -> Value {
    redact_with(redactor(request).as_ref(), response)
}

/// The sink [`redacted`] scrubs `request`'s answers with; `None` when it has no secrets.
fn redactor(request: &Value) -> Option<crate::sim::Scrubber> {
    let secrets = request
        .get("scenario")
        .and_then(|s| s.get("secrets"))
        .and_then(Value::as_object)?;
    Some(crate::sim::Scrubber::new(secrets.values()))
}

/// An answer scrubbed by [`redactor`]'s sink.
fn redact_with(sink: Option<&crate::sim::Scrubber>, mut response: Value) -> Value {
    if let Some(sink) = sink {
        scrub_answer(sink, &mut response);
    }
    response
}

/// The keys of an answer's envelope: the protocol's own words, never data (D-171).
const ENVELOPE_KEYS: [&str; 6] = ["ok", "error", "code", "message", "path", "errors"];

/// Scrub an answer, keeping its envelope readable: the keys `ok` / `error` and an error's
/// `code`, `message`, `path`, `errors` (and theirs, in each `errors` entry) are the
/// protocol's fixed words — a secret that spells one (`"error"`, `"o"`) must not turn an
/// answer into `{"[redacted]": …}` that no client can read (found by the `eval_line`
/// fuzzer). Every value, and every other key, goes through the sink.
fn scrub_answer(sink: &crate::sim::Scrubber, answer: &mut Value) {
    let Value::Object(top) = answer else {
        sink.value(answer);
        return;
    };
    let keep_keys = |sink: &crate::sim::Scrubber, m: &mut serde_json::Map<String, Value>| {
        let old = std::mem::take(m);
        for (k, v) in old {
            let k = if ENVELOPE_KEYS.contains(&k.as_str()) {
                k
            } else {
                sink.line(&k)
            };
            m.insert(k, v);
        }
    };
    keep_keys(sink, top);
    for (k, v) in top.iter_mut() {
        match (k.as_str(), v) {
            ("error", Value::Object(err)) => {
                keep_keys(sink, err);
                for (k, v) in err.iter_mut() {
                    match (k.as_str(), v) {
                        ("errors", Value::Array(items)) => {
                            for item in items {
                                if let Value::Object(entry) = item {
                                    keep_keys(sink, entry);
                                    entry.values_mut().for_each(|v| sink.value(v));
                                } else {
                                    sink.value(item);
                                }
                            }
                        }
                        (_, v) => sink.value(v),
                    }
                }
            }
            (_, v) => sink.value(v),
        }
    }
}

/// The options of an op run: the report carries no trace, so none is kept in memory;
/// `"limits"?: {"invocations"?, "virtualMs"?, "recordedBytes"?, "traceBytes"?}` lowers or
/// raises the run's budgets (`sim::Limits`).
pub(crate) fn op_options(request: &Value) -> Result<SimOptions, Value> {
    let mut limits = crate::sim::Limits::DEFAULT;
    match request.get("limits") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let slot = match k.as_str() {
                    "invocations" => &mut limits.invocations,
                    "virtualMs" => &mut limits.virtual_ms,
                    "recordedBytes" => &mut limits.recorded_bytes,
                    "traceBytes" => &mut limits.trace_bytes,
                    other => {
                        return Err(bad_request(format!(
                            "unknown limit {other:?}; known: invocations, virtualMs, recordedBytes, traceBytes"
                        )));
                    }
                };
                *slot = v.as_u64().ok_or_else(|| {
                    bad_request(format!("limit {k:?} must be a non-negative integer"))
                })?;
            }
        }
        Some(_) => return Err(bad_request("\"limits\" must be an object")),
    }
    Ok(SimOptions {
        keep_trace: false,
        limits,
        ..SimOptions::default()
    })
}

/// The `run` request for `workflow` and `scenario` (an object) with the fault plan
/// `crashAfterCheckpoint: [k]` in place of the scenario's own.
pub(crate) fn crash_request(workflow: &Value, scenario: &Map<String, Value>, k: u64) -> Value {
    let mut scenario = scenario.clone();
    scenario.insert("faults".into(), json!({"crashAfterCheckpoint": [k]}));
    json!({"op": "run", "workflow": workflow, "scenario": scenario})
}

/// RUN-3/RUN-4 in a campaign, asked request by request through `ask`: the answer to the
/// `run` of `workflow` and `scenario` (an object), then — if it is a report — the answer
/// to [`crash_request`]`(workflow, scenario, k)` for each `k` of `select(its
/// checkpoints)`.
pub(crate) fn run_and_crash_points_with<E>(
    workflow: &Value,
    scenario: &Map<String, Value>,
    select: &dyn Fn(u64) -> Vec<u64>,
    mut ask: impl FnMut(&Value) -> Result<Value, E>,
) -> (Result<Value, E>, Vec<Result<Value, E>>) {
    let plain = ask(&json!({"op": "run", "workflow": workflow, "scenario": scenario}));
    let checkpoints = plain
        .as_ref()
        .ok()
        .and_then(|answer| answer.pointer("/ok/checkpoints"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let crashes = select(checkpoints)
        .into_iter()
        .map(|k| ask(&crash_request(workflow, scenario, k)))
        .collect();
    (plain, crashes)
}

pub(crate) fn run_and_crash_points(
    workflow: &Value,
    scenario: &Map<String, Value>,
    max: u64,
    select: &dyn Fn(u64) -> Vec<u64>,
) -> (Value, Vec<Value>) {
    let request = json!({"op": "run", "workflow": workflow, "scenario": scenario});
    let (Ok(options), Ok((loaded, parsed))) = (op_options(&request), inputs(&request)) else {
        // Refused before anything runs: the plain answer says why, and there is no crash.
        let (plain, crashes) = run_and_crash_points_with(workflow, scenario, select, |r| {
            Ok::<_, std::convert::Infallible>(super::handle(r))
        });
        let plain = plain.unwrap_or_else(|never| match never {});
        let crashes = crashes
            .into_iter()
            .map(|c| c.unwrap_or_else(|never| match never {}))
            .collect();
        return (plain, crashes);
    };
    // The crash requests differ from `request` in their fault plan only, which neither
    // the options nor the redaction read: one sink scrubs every answer.
    let sink = redactor(&request);
    let answer = |result: Result<crate::sim::Report, SimError>| {
        let answer = match result {
            Ok(report) => ok(report.into_json()),
            Err(e) => error(&e),
        };
        super::finish(redact_with(sink.as_ref(), answer))
    };
    let forked = crate::sim::with_stack(|| {
        crate::sim::Simulation::new(&loaded, &parsed)
            .options(&options)
            .crash_points(max)
    });
    let checkpoints = forked
        .plain
        .as_ref()
        .map_or(0, |report| report.world.checkpoints);
    let chosen = select(checkpoints);
    // `reports[k - 1]` is the crash after checkpoint `k`, for every `k` up to `max` (a `k`
    // past it is not answered).
    let mut reports: Vec<Option<_>> = forked.reports.into_iter().map(Some).collect();
    let crashes = chosen
        .into_iter()
        .filter_map(|k| reports.get_mut(usize::try_from(k - 1).ok()?)?.take())
        .map(answer)
        .collect();
    (answer(forked.plain), crashes)
}

pub(crate) fn run(request: &Value) -> Value {
    let options = match op_options(request) {
        Ok(o) => o,
        Err(e) => return e,
    };
    run_with(request, |workflow, scenario| {
        Simulation::new(workflow, scenario)
            .options(&options)
            .store(Box::new(MemoryStore::default()))
            .run()
    })
}

/// The `run` op on a candidate host's durable store (a `conformance::HostAdapter`'s).
pub(crate) fn run_on_host(request: &Value, factory: Box<dyn StoreFactory>) -> Value {
    let options = match op_options(request) {
        Ok(o) => o,
        Err(e) => return e,
    };
    run_with(request, |workflow, scenario| {
        Simulation::new(workflow, scenario)
            .options(&options)
            .host_store(factory)
            .run()
    })
}

/// The `run` op, the simulation done by `simulate`.
pub(crate) fn run_with(
    request: &Value,
    simulate: impl FnOnce(&Workflow, &Scenario) -> Result<crate::sim::Report, SimError>,
) -> Value {
    redacted(
        request,
        crate::sim::with_stack(|| run_inner(request, simulate)),
    )
}

fn run_inner(
    request: &Value,
    simulate: impl FnOnce(&Workflow, &Scenario) -> Result<crate::sim::Report, SimError>,
) -> Value {
    let (workflow, scenario) = match inputs(request) {
        Ok(x) => x,
        Err(e) => return e,
    };
    match simulate(&workflow, &scenario) {
        Ok(report) => ok(report.into_json()),
        Err(e) => error(&e),
    }
}

pub(crate) fn replay(request: &Value) -> Value {
    let options = match op_options(request) {
        Ok(o) => o,
        Err(e) => return e,
    };
    replay_with(request, |workflow, scenario, original, from| {
        Simulation::new(workflow, scenario)
            .options(&options)
            .store(Box::new(MemoryStore::default()))
            .replay(original, from)
    })
}

/// The `replay` op on a candidate host's durable store (a `conformance::HostAdapter`'s).
pub(crate) fn replay_on_host(request: &Value, factory: Box<dyn StoreFactory>) -> Value {
    let options = match op_options(request) {
        Ok(o) => o,
        Err(e) => return e,
    };
    replay_with(request, |workflow, scenario, original, from| {
        Simulation::new(workflow, scenario)
            .options(&options)
            .host_store(factory)
            .replay(original, from)
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
    ) -> Result<crate::sim::Report, SimError>,
) -> Value {
    redacted(
        request,
        crate::sim::with_stack(|| replay_inner(request, simulate)),
    )
}

fn replay_inner(
    request: &Value,
    simulate: impl FnOnce(
        &Workflow,
        &Scenario,
        &RunState,
        Option<&str>,
    ) -> Result<crate::sim::Report, SimError>,
) -> Value {
    let (workflow, scenario) = match inputs(request) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if let Err(e) = op_options(request) {
        return e;
    }
    let Some(run) = request.get("run") else {
        return bad_request("missing \"run\" (the RunState to replay)");
    };
    let original = match RunState::deserialize(run) {
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
        Ok(report) => ok(report.into_json()),
        Err(e) => error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// An identical document is loaded once; a different one (even `1.0` for `1`) and one
    /// after a failure are loaded again, and a failure is never remembered.
    #[test]
    fn the_last_document_is_loaded_once() {
        let loads = Cell::new(0);
        let load = |doc: &Value| {
            loads.set(loads.get() + 1);
            match doc.get("n") {
                Some(n) => Ok(n.to_string()),
                None => Err(SimError::Store("no n".into())),
            }
        };
        let a = json!({"n": 1, "m": {"x": [1, 2]}});
        let reordered = json!({"m": {"x": [1, 2]}, "n": 1});
        let last: Last<String> = std::cell::RefCell::new(None);
        let got = |doc: &Value| load_cached(&last, doc, load).map(|t| (*t).clone());
        assert_eq!(got(&a).ok().as_deref(), Some("1"));
        assert_eq!(got(&a.clone()).ok().as_deref(), Some("1"));
        assert_eq!(got(&reordered).ok().as_deref(), Some("1"));
        assert_eq!(loads.get(), 1);
        assert_eq!(got(&json!({"n": 1.0})).ok().as_deref(), Some("1.0"));
        assert_eq!(loads.get(), 2);
        assert!(got(&json!({})).is_err());
        assert!(got(&json!({})).is_err());
        assert_eq!(loads.get(), 4);
        assert_eq!(got(&json!({"n": 1.0})).ok().as_deref(), Some("1.0"));
        assert_eq!(loads.get(), 4);
    }
}
