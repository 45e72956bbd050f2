//! The published formats (issue 9 item 7): docs/schemas/*.json are the contract a host
//! author reads, so every example scenario, every scenario and report the reference
//! produces over the suite, and the conformance report itself must validate against them.

use std::path::Path;

use serde_json::{Value, json};
use w6w_sim::conformance::{self, Capabilities, Reference, RunOptions, Suite, WithCapabilities};

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schemas")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    jsonschema::validator_for(&doc).unwrap_or_else(|e| panic!("{name} is not a schema: {e}"))
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(5)
        .collect()
}

#[test]
fn every_example_scenario_and_its_report_validate() {
    let scenario = schema("scenario.json");
    let report = schema("report.json");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/") {
        let path = entry.expect("entry").path();
        let name = path.display().to_string();
        if !name.ends_with(".scenario.json") {
            continue;
        }
        let doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("read"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let bad = errors(&scenario, &doc);
        assert!(bad.is_empty(), "{name}: {bad:?}");
        let wf_path = name.replace(".scenario.json", ".workflow.json");
        // A dialect example's workflow is its WOML / YAML source: its run is a case, checked
        // by the test below.
        let Ok(bytes) = std::fs::read(&wf_path) else {
            continue;
        };
        let workflow: Value = serde_json::from_slice(&bytes).expect("json");
        let answer = w6w_sim::__internals::service::handle(
            &json!({"op": "run", "workflow": workflow, "scenario": doc}),
        );
        let ok = answer
            .get("ok")
            .unwrap_or_else(|| panic!("{name}: {answer}"));
        let bad = errors(&report, ok);
        assert!(bad.is_empty(), "report of {name}: {bad:?}");
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} examples");
    // And they are not vacuous.
    for bad in [
        json!({"faults": {"crashAfter": [1]}}),
        json!({"actions": {"a": {"outcomes": [{"echo": true, "output": 1}]}}}),
        json!({"actions": {"a": {"outcomes": [{"error": {"code": "x", "phase": "later"}}]}}}),
    ] {
        assert!(!errors(&scenario, &bad).is_empty(), "{bad}");
    }
    assert!(!errors(&report, &json!({"run": {}, "invocations": []})).is_empty());
}

#[test]
fn every_scenario_and_report_of_the_suite_validates() {
    let scenario = schema("scenario.json");
    let report = schema("report.json");
    let suite = Suite::load_default().expect("suite loads");
    let (mut scenarios, mut reports) = (0, 0);
    for (file, case) in suite.cases() {
        let op = case.request.get("op").and_then(Value::as_str);
        if !matches!(op, Some("run" | "replay")) {
            continue;
        }
        let answer = w6w_sim::__internals::service::handle(&case.request);
        // A WOML / YAML run adds its dialect's own scenario rules on top of the schema.
        let rejected_scenario = answer.pointer("/error/code").and_then(Value::as_str)
            == Some("invalid_scenario")
            && case.request.get("dialect").is_none();
        if let Some(s) = case.request.get("scenario") {
            let bad = errors(&scenario, s);
            // The schema and the parser agree: what one refuses, so does the other.
            assert_eq!(
                bad.is_empty(),
                !rejected_scenario,
                "{}/{}: schema says {bad:?}, the reference answered {answer}",
                file.stem(),
                case.id
            );
            scenarios += 1;
        }
        if let Some(ok) = answer.get("ok") {
            let bad = errors(&report, ok);
            assert!(bad.is_empty(), "{}/{}: {bad:?}", file.stem(), case.id);
            reports += 1;
        }
    }
    assert!(scenarios > 100 && reports > 100, "{scenarios} {reports}");
}

#[test]
fn the_conformance_report_validates_with_and_without_a_profile() {
    let v = schema("conformance-report.json");
    let options = RunOptions {
        generate: 2,
        ..RunOptions::default()
    };
    let full = conformance::run(&mut Reference, &options).expect("loads");
    let bad = errors(&v, &full.to_json());
    assert!(bad.is_empty(), "{bad:?}");
    let mut core = WithCapabilities::new(Reference, Capabilities::engine_core());
    let profiled = conformance::run(&mut core, &options).expect("loads");
    assert!(profiled.not_applicable() > 0);
    let json = profiled.to_json();
    let bad = errors(&v, &json);
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(json["capabilities"], json!(["op.replay", "op.run"]));
}
