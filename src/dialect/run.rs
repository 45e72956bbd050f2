//! Running an imported dialect document on the simulator, exactly as a w6w workflow runs
//! (same scenario format, crashes, retries and replay), plus what each dialect promises
//! its authors to see.
//!
//! Owns: the WOML script runtime's failure classification (a scripted error on a script
//! step is a WOML failure kind — `script_threw`, `timeout`, `invalid_json`, `size`,
//! `crash`, `interrupted`, `cancelled`; phase `execute`; only `script_threw` is marked
//! `retryable`, WOML-11), and the report additions: `dialect`, WOML-13's public `result`
//! (the final step's output on a succeeded run, `null` otherwise), WOML-15's `attempt`
//! binding on every script invocation record (`number`, `maxAttempts`, and the
//! `idempotencyKey` `<runId>:<stepId>` — the run id is stable across resumes, so the key
//! is stable across attempts and crash-resume), and YML-5's `bindings` (step id → the
//! value it binds) for YAML.
//! Invariant: the engine runs the imported w6w workflow unchanged; this file only reads
//! the scenario before and the report after.

use serde_json::{Map, Value, json};

use super::{Binds, Dialect, Imported, StepKind};
use crate::model::Phase;
use crate::sim::scenario::ScenarioError;
use crate::sim::{self, SimError, SimOptions, Store};

/// WOML's script failure kinds (woml-steps.txt, WOML-11), as action error codes.
pub fn script_failure_kinds() -> &'static [&'static str] {
    &[
        "script_threw",
        "timeout",
        "invalid_json",
        "size",
        "crash",
        "interrupted",
        "cancelled",
    ]
}

/// Why a dialect run did not produce a report.
#[derive(Debug)]
pub enum DialectRunError {
    /// The scenario does not parse, or scripts a failure WOML does not have.
    Scenario(Vec<ScenarioError>),
    Sim(SimError),
}

impl DialectRunError {
    pub fn to_json(&self) -> Value {
        match self {
            DialectRunError::Scenario(errors) => json!({
                "code": "invalid_scenario",
                "message": "invalid scenario",
                "errors": errors,
            }),
            DialectRunError::Sim(e) => e.to_json(),
        }
    }

    pub fn is_input_error(&self) -> bool {
        match self {
            DialectRunError::Scenario(_) => true,
            DialectRunError::Sim(e) => e.is_input_error(),
        }
    }
}

/// D-260: what a dialect run's journal records of the document it was started from, and
/// what `resume`/`replay` compare before anything runs: the dialect, the SHA-256 of the
/// document's bytes, and the SHA-256 of the w6w workflow it imported to (which the
/// scenario's `manifest` shapes too). Neither the document nor any value of it is stored.
#[cfg(feature = "cli")]
pub(crate) fn source_identity(imported: &Imported, document: &[u8]) -> Value {
    use sha2::{Digest, Sha256};
    let hex = |bytes: &[u8]| {
        let mut out = String::with_capacity(64);
        for b in Sha256::digest(bytes) {
            out.push_str(&format!("{b:02x}"));
        }
        out
    };
    let workflow = serde_json::to_vec(&imported.workflow).unwrap_or_default();
    json!({
        "dialect": imported.dialect,
        "documentSha256": hex(document),
        "workflowSha256": hex(&workflow),
    })
}

/// Split a scenario document into the scenario proper and its optional `manifest` (YML-3).
pub fn split_manifest(scenario: &Value) -> (Value, Option<Value>) {
    let mut s = scenario.clone();
    let manifest = s.as_object_mut().and_then(|m| m.remove("manifest"));
    (s, manifest)
}

/// Run `imported` under `scenario` (a scenario document without `manifest`).
pub fn run(
    imported: &Imported,
    scenario: &Value,
    options: &SimOptions,
    store: Option<Box<dyn Store>>,
    sink: Option<Box<dyn std::io::Write>>,
) -> Result<Value, DialectRunError> {
    let prepared = prepare_scenario(imported, scenario)?;
    let scenario = sim::load_scenario(&prepared).map_err(DialectRunError::Sim)?;
    let workflow = sim::load_workflow(&imported.workflow).map_err(DialectRunError::Sim)?;
    let simulation = sim::Simulation::new(&workflow, &scenario)
        .options(options)
        .trace_sink(sink);
    let report = match store {
        Some(store) => simulation.store(store).run(),
        None => simulation.run(),
    }
    .map_err(DialectRunError::Sim)?;
    let mut out = report.into_json();
    decorate(imported, &scenario.run_id, &mut out);
    Ok(out)
}

/// The scenario document a w6w engine runs for `imported` (any engine, any host): checked
/// like any scenario, and each scripted error of a WOML script step classified as the
/// script runtime does (phase `execute`, `retryable` only for `script_threw`; D-32).
pub(crate) fn prepare_scenario(
    imported: &Imported,
    scenario: &Value,
) -> Result<Value, DialectRunError> {
    let parsed = sim::load_scenario(scenario).map_err(|e| match e {
        SimError::InvalidScenario(errors) => DialectRunError::Scenario(errors),
        other => DialectRunError::Sim(other),
    })?;
    let mut out = scenario.clone();
    declare_secret_readers(imported, &mut out);
    let mut problems = Vec::new();
    for info in imported.steps.iter().filter(|s| s.kind == StepKind::Script) {
        if !parsed.actions.contains_key(&info.id) {
            continue;
        }
        let Some(Value::Array(outcomes)) = out.pointer_mut(&format!(
            "/actions/{}/outcomes",
            crate::model::pointer_token(&info.id)
        )) else {
            continue;
        };
        for (i, outcome) in outcomes.iter_mut().enumerate() {
            let Some(Value::Object(e)) = outcome.get_mut("error") else {
                continue;
            };
            let code = e
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !script_failure_kinds().contains(&code.as_str()) {
                problems.push(ScenarioError {
                    path: format!(
                        "/actions/{}/outcomes/{i}/error/code",
                        crate::model::pointer_token(&info.id)
                    ),
                    message: format!(
                        "{code:?} is not a WOML script failure; a script step fails with one of {}",
                        script_failure_kinds().join(", ")
                    ),
                });
            }
            e.insert("phase".into(), json!(Phase::Execute.as_str()));
            e.insert(
                "retryable".into(),
                json!(code == super::woml::RETRIED_FAILURE),
            );
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(DialectRunError::Scenario(problems))
    }
}

/// D-226, D-275: a script step that reads a secret (its `with` carries `secrets`, WOML-16)
/// returns sensitive output — the script is code the engine cannot see into, handed the
/// secret — so the scenario declares its action's output sensitive: secret-derived wholly.
fn declare_secret_readers(imported: &Imported, scenario: &mut Value) {
    let steps = imported.workflow["steps"].as_array().into_iter().flatten();
    let readers: Vec<String> = steps
        .filter(|s| {
            s.pointer("/with/secrets")
                .is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()))
        })
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .filter(|id| {
            imported
                .steps
                .iter()
                .any(|i| i.kind == StepKind::Script && &i.id == id)
        })
        .collect();
    let Value::Object(root) = scenario else {
        return;
    };
    for id in readers {
        let actions = root.entry("actions").or_insert_with(|| json!({}));
        if let Value::Object(actions) = actions
            && let Value::Object(action) = actions.entry(id).or_insert_with(|| json!({}))
        {
            action.insert("sensitiveOutput".into(), Value::Bool(true));
        }
    }
}

/// Add the dialect's report fields (see the module doc) to a w6w run report.
pub(crate) fn decorate_report(imported: &Imported, report: &mut Value) {
    let run_id = report
        .pointer("/run/runId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    decorate(imported, &run_id, report);
}

fn decorate(imported: &Imported, run_id: &str, report: &mut Value) {
    let Value::Object(top) = report else {
        return;
    };
    top.insert("dialect".into(), json!(imported.dialect));
    let succeeded = top.get("run").and_then(|r| r.get("status")) == Some(&json!("succeeded"));
    match imported.dialect {
        Dialect::Woml => {
            // WOML-13: the final value-producing node on the main route — in a chain, the
            // last step — is the public result; never a partial value of a failed run.
            let result = imported
                .steps
                .last()
                .filter(|_| succeeded)
                .and_then(|last| step_output(top, &last.id))
                .unwrap_or(Value::Null);
            top.insert("result".into(), result);
            if let Some(Value::Array(invocations)) = top.get_mut("invocations") {
                attempt_bindings(imported, run_id, invocations);
            }
        }
        Dialect::Yaml => {
            let bindings = yaml_bindings(imported, top);
            top.insert("bindings".into(), Value::Object(bindings));
        }
        Dialect::W6w => {}
    }
}

/// A step's output when it succeeded (`null` for a success without one).
fn step_output(top: &Map<String, Value>, id: &str) -> Option<Value> {
    let rec = top.get("run")?.get("steps")?.get(id)?;
    (rec.get("status")? == "succeeded").then(|| rec.get("output").cloned().unwrap_or(Value::Null))
}

/// Each WOML script invocation's `attempt` binding: its number, the step's attempts and
/// its idempotency key.
fn attempt_bindings(imported: &Imported, run_id: &str, invocations: &mut [Value]) {
    for inv in invocations.iter_mut() {
        let Some(id) = inv.get("stepId").and_then(Value::as_str) else {
            continue;
        };
        let Some(info) = imported
            .steps
            .iter()
            .find(|s| s.id == id && s.kind == StepKind::Script)
        else {
            continue;
        };
        let number = inv.get("attempt").cloned().unwrap_or(json!(1));
        let binding = json!({"attempt": {
            "number": number,
            "maxAttempts": info.max_attempts,
            "idempotencyKey": format!("{run_id}:{id}"),
        }});
        if let Value::Object(m) = inv {
            m.insert("bindings".into(), binding);
        }
    }
}

/// YML-5: what each step binds (D-231): an action call's output, the run's returned
/// value, the agent's value, a value's structure, a render's string or parts, a
/// for_each's iteration scopes, a parallel's branch scopes. Synthetic steps, wait and
/// stop (nothing readable) and steps inside a construct's body (their construct binds
/// them) are not listed.
fn yaml_bindings(imported: &Imported, top: &Map<String, Value>) -> Map<String, Value> {
    let mut bindings = Map::new();
    for info in &imported.steps {
        let Some(out) = step_output(top, &info.id) else {
            continue;
        };
        let bound = match info.binds {
            Binds::Nothing => continue,
            Binds::Output => out,
            Binds::ResultValue => out.pointer("/result/value").cloned().unwrap_or(Value::Null),
            Binds::Result => out.get("result").cloned().unwrap_or(Value::Null),
            Binds::IterationScopes => Value::Array(
                out.get("items")
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .map(|i| i.get("result").cloned().unwrap_or(Value::Null))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
        };
        bindings.insert(info.id.clone(), bound);
    }
    bindings
}
