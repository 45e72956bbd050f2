//! Every example document of the RFC (tests/data/rfc/) parses into the typed model and
//! serializes back to an equal JSON value; unknown fields survive at every level.
//!
//! The file name says the type: `workflow-*`, `run-state-*`, `step-execution-*`,
//! `retry-policy-*`. Workflows must also pass save-time validation (runnable).

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use w6w_sim::model::{RetryPolicy, RunState, StepExecution, Workflow};
use w6w_sim::{ValidateOptions, validate_workflow};

fn rfc_examples() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/rfc");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/rfc exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&p).expect("readable");
            (name, serde_json::from_str(&text).expect("example is JSON"))
        })
        .collect()
}

fn round_trip<T: Serialize + DeserializeOwned>(name: &str, doc: &Value) -> T {
    let typed: T = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
    let back = serde_json::to_value(&typed).expect("serializes");
    assert_eq!(&back, doc, "{name} does not round-trip");
    typed
}

#[test]
fn every_rfc_example_round_trips_losslessly() {
    let examples = rfc_examples();
    assert!(examples.len() >= 10, "examples missing: {}", examples.len());
    for (name, doc) in &examples {
        if name.starts_with("workflow-") {
            round_trip::<Workflow>(name, doc);
            let validated = validate_workflow(doc, ValidateOptions { runnable: true })
                .unwrap_or_else(|e| panic!("{name} is not valid: {e:?}"));
            assert_eq!(&serde_json::to_value(&validated).expect("serializes"), doc);
        } else if name.starts_with("run-state-") || name == "run-state.json" {
            round_trip::<RunState>(name, doc);
        } else if name.starts_with("step-execution-") {
            round_trip::<StepExecution>(name, doc);
        } else if name.starts_with("retry-policy") {
            round_trip::<RetryPolicy>(name, doc);
        } else {
            panic!("{name}: no type for this example; name it after its type");
        }
    }
}

#[test]
fn the_shape_example_reads_as_the_rfc_describes() {
    let (_, doc) = rfc_examples()
        .into_iter()
        .find(|(n, _)| n == "workflow-shape.json")
        .expect("shape example");
    let w: Workflow = serde_json::from_value(doc).expect("parses");
    assert_eq!(w.steps[0].retry_policy().expect("retry").max_attempts(), 3);
    assert_eq!(w.steps[0].retry_policy().expect("retry").delay_ms(), 1000.0);
    assert_eq!(w.edges()[0].when(), w6w_sim::model::When::Success);
    // MODEL-1: no settings means both authoring features on.
    assert!(w.auto_save() && w.save_position());
}

#[test]
fn model_1_settings_default_to_true_unless_explicitly_false() {
    let with_settings = |settings: Option<Value>| -> Workflow {
        let mut doc = json!({"manifestVersion": "2", "id": "w", "name": "w", "steps": []});
        if let Some(s) = settings {
            doc["settings"] = s;
        }
        serde_json::from_value(doc).expect("parses")
    };
    let cases = [
        (None, true, true),
        (Some(json!({})), true, true),
        (Some(json!({"autoSave": false})), false, true),
        (Some(json!({"savePosition": false})), true, false),
        (
            Some(json!({"autoSave": null, "savePosition": 0})),
            true,
            true,
        ),
        (
            Some(json!({"autoSave": true, "savePosition": true})),
            true,
            true,
        ),
        (Some(json!("arbitrary")), true, true),
    ];
    for (settings, auto_save, save_position) in cases {
        let w = with_settings(settings.clone());
        assert_eq!(
            (w.auto_save(), w.save_position()),
            (auto_save, save_position),
            "{settings:?}"
        );
    }
}

/// Decision MODEL-roundtrip (docs/decisions.md (Foundation: model, validation, planner, CLI)): unknown fields are preserved,
/// not rejected, at every level of every type.
#[test]
fn unknown_fields_are_preserved_at_every_level() {
    let workflow = json!({
        "manifestVersion": "2", "id": "w", "name": "w", "x-top": [1, {"a": null}],
        "variables": [{"key": "v", "x-var": 1}],
        "steps": [{"id": "a", "x-step": "s",
                   "uses": {"app": "x", "action": "y", "x-uses": true},
                   "retry": {"maxAttempts": 2, "x-retry": 0.5}}],
        "edges": [{"from": "a", "to": "a2", "x-edge": {}}],
        "reroute": {"target": {"kind": "function", "function": "f"}, "x-reroute": "r"}
    });
    let mut workflow = workflow;
    workflow["steps"]
        .as_array_mut()
        .expect("steps")
        .push(json!({"id": "a2"}));
    round_trip::<Workflow>("workflow with unknown fields", &workflow);
    assert!(validate_workflow(&workflow, ValidateOptions::default()).is_ok());

    let run = json!({"runId": "r", "workflowId": "w", "status": "queued", "variables": {},
        "steps": {"a": {"stepId": "a", "status": "pending", "attempt": 0, "x-exec": 1}},
        "resumeToken": "tok"});
    round_trip::<RunState>("run state with unknown fields", &run);
}

#[test]
fn numbers_keep_their_spelling() {
    // MODEL-3 accepts 3.0 and 1e300 as integers; the document must still say what it said.
    for policy in [
        json!({"maxAttempts": 3.0}),
        json!({"maxAttempts": 1e300, "delayMs": 0.25}),
        json!({"maxAttempts": 18446744073709551615u64}),
    ] {
        round_trip::<RetryPolicy>("policy", &policy);
    }
}
