//! The engine seam end to end: our engine behind `w6w-sim engine serve`, judged by the
//! suite as its WorkflowContext (docs/context-protocol.md).

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};
use w6w_sim::conformance::{self, Adapter, AdapterError, RunOptions};
use w6w_sim::conformance::{EngineOptions, EngineProcess};

fn serve_cmd() -> String {
    format!("'{}' engine serve", env!("CARGO_BIN_EXE_w6w-sim"))
}

fn engine() -> EngineProcess {
    EngineProcess::start(&serve_cmd(), EngineOptions::default()).expect("engine serve starts")
}

fn example(name: &str) -> (Value, Value) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let read = |f: String| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(f)).expect("example"))
            .expect("json")
    };
    (
        read(format!("{name}.workflow.json")),
        read(format!("{name}.scenario.json")),
    )
}

#[test]
fn our_engine_behind_the_protocol_passes_every_case_and_generated_workflow() {
    let mut candidate = engine();
    let report = conformance::run(&mut candidate, &RunOptions::default()).expect("suite loads");
    let traffic = candidate.traffic();
    report.assert_all_passed();
    assert!(
        report.generated_count() >= 200,
        "the generated workflows ran"
    );
    // Every scripted crash was a real SIGKILL of the process, and a fresh one resumed.
    assert!(traffic.kills > 100, "{traffic:?}");
    assert_eq!(traffic.spawns, traffic.kills + 1, "{traffic:?}");
    assert!(traffic.calls > 10 * traffic.sessions / 2, "{traffic:?}");
}

#[test]
fn a_crash_is_a_real_kill_and_the_fresh_process_recovers_through_state_load() {
    let (workflow, mut scenario) = example("crash-recovery");
    scenario["runId"] = json!("crash-1");
    let request = json!({"op": "run", "workflow": workflow, "scenario": scenario});
    let mut candidate = engine();
    let got = candidate.handle(&request).expect("answers");
    let traffic = candidate.traffic();
    assert_eq!(
        got,
        w6w_sim::__internals::service::handle(&request),
        "same report as in process"
    );
    assert_eq!(got["ok"]["crashes"], json!(2));
    assert_eq!(traffic.kills, 2, "{traffic:?}");
    assert_eq!(traffic.spawns, 3, "{traffic:?}");
    assert_eq!(
        got["ok"]["run"]["runId"],
        json!("crash-1"),
        "the salt is mapped back"
    );
}

#[test]
fn the_same_scenario_gives_a_byte_identical_report_every_time() {
    // Strands with latencies, a race and a crash inside an invocation: several calls are
    // outstanding at once, and virtual time moves only while the candidate is idle.
    for name in ["parallel-race", "diamond", "foreach-failing", "wait"] {
        let (workflow, scenario) = example(name);
        let request = json!({"op": "run", "workflow": workflow, "scenario": scenario});
        let reports: Vec<String> = (0..3)
            .map(|_| {
                let got = engine().handle(&request).expect("answers");
                serde_json::to_string(&got).expect("serializes")
            })
            .collect();
        assert_eq!(reports[0], reports[1], "{name}");
        assert_eq!(reports[1], reports[2], "{name}");
        let reference =
            serde_json::to_string(&w6w_sim::__internals::service::handle(&request)).expect("ser");
        assert_eq!(reports[0], reference, "{name}: the seam changes nothing");
    }
}

/// A candidate that is a shell script: it answers the hello and then whatever `body` does.
fn script(body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("candidate.sh");
    let mut f = std::fs::File::create(&path).expect("create");
    writeln!(
        f,
        "read hello\necho '{{\"type\":\"ready\",\"protocol\":\"w6w-context\",\"version\":1,\"implementation\":{{\"name\":\"script\"}}}}'\n{body}"
    )
    .expect("write");
    (dir, format!("sh '{}'", path.display()))
}

fn one_step_run() -> Value {
    json!({"op": "run",
           "workflow": {"manifestVersion": "2", "id": "w", "name": "w",
                        "steps": [{"id": "a", "uses": {"app": "x", "action": "y"}}]},
           "scenario": {}})
}

#[test]
fn a_candidate_that_reports_instead_of_checkpointing_is_refused() {
    // It claims a finished run without a single checkpoint: nothing the suite did not
    // observe exists.
    let (_dir, cmd) = script("read start\necho '{\"type\":\"done\"}'\nsleep 5");
    let mut candidate = EngineProcess::start(&cmd, EngineOptions::default()).expect("starts");
    let err = candidate.handle(&one_step_run()).expect_err("refused");
    assert!(err.to_string().contains("never checkpointed"), "{err}");
}

#[test]
fn an_idle_that_hides_a_call_and_a_silent_candidate_fail_without_hanging() {
    let (_dir, cmd) = script(
        "read start\n\
         echo '{\"type\":\"call\",\"id\":1,\"member\":\"sleep\",\"args\":{\"ms\":5}}'\n\
         echo '{\"type\":\"idle\",\"waiting\":[]}'\nsleep 5",
    );
    let mut candidate = EngineProcess::start(&cmd, EngineOptions::default()).expect("starts");
    let err = candidate.handle(&one_step_run()).expect_err("protocol");
    assert!(matches!(err, AdapterError::Protocol(_)), "{err}");
    assert!(err.to_string().contains("waiting"), "{err}");

    let (_dir, cmd) = script("read start\nsleep 30");
    let options = EngineOptions {
        line_timeout: Duration::from_millis(200),
        ..EngineOptions::default()
    };
    let mut candidate = EngineProcess::start(&cmd, options).expect("starts");
    let err = candidate.handle(&one_step_run()).expect_err("timeout");
    assert!(err.to_string().contains("timeout"), "{err}");
}

/// The protocol error a scripted candidate's first turn earns on a one-step run.
fn protocol_error(turn: &str) -> String {
    let (_dir, cmd) = script(&format!(
        "read start\necho '{turn}'\necho '{{\"type\":\"idle\",\"waiting\":[1]}}'\nsleep 5"
    ));
    let mut candidate = EngineProcess::start(&cmd, EngineOptions::default()).expect("starts");
    let err = candidate.handle(&one_step_run()).expect_err("protocol");
    assert!(matches!(err, AdapterError::Protocol(_)), "{err}");
    err.to_string()
}

/// D-209: a message the suite cannot read is refused naming the protocol, the message and
/// member, the JSON Pointer of the field and where its shape is written down.
#[test]
fn a_malformed_checkpoint_is_refused_naming_the_field() {
    let said = protocol_error(
        r#"{"type":"call","id":1,"member":"state.checkpoint","args":{"patch":{"runId":"r","steps":{"a":{"stepId":"a","status":"running","attempt":"1"}}}}}"#,
    );
    for part in [
        "context protocol v1",
        "a \"call\" message (member \"state.checkpoint\")",
        "/args/patch/steps/a/attempt",
        "docs/schemas/context/call.json",
    ] {
        assert!(said.contains(part), "{part:?} missing from {said}");
    }
    let said = protocol_error(
        r#"{"type":"call","id":1,"member":"invoke","args":{"app":"a","action":"b","params":[],"stepId":"s","attempt":1}}"#,
    );
    assert!(
        said.contains("needs /args/params (invalid type: sequence, expected a map)"),
        "{said}"
    );
}

#[test]
fn a_checkpoint_for_another_run_is_refused() {
    // A recorded transcript names the run id of the session it was recorded in; the suite
    // salts every session's run id, so the replayed checkpoint is for a run that is not here.
    let (_dir, cmd) = script(
        "read start\n\
         echo '{\"type\":\"call\",\"id\":1,\"member\":\"state.checkpoint\",\"args\":{\"patch\":{\"runId\":\"run_1\",\"status\":\"running\"}}}'\n\
         echo '{\"type\":\"idle\",\"waiting\":[1]}'\nsleep 5",
    );
    let mut candidate = EngineProcess::start(&cmd, EngineOptions::default()).expect("starts");
    let err = candidate.handle(&one_step_run()).expect_err("refused");
    assert!(err.to_string().contains("transcript"), "{err}");
}

#[test]
fn the_documented_transcript_is_what_engine_serve_says() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/context-protocol.md"),
    )
    .expect("doc");
    let block = doc
        .split("<!-- transcript -->")
        .nth(1)
        .and_then(|rest| rest.split("```text").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("a transcript block");
    let (mut input, mut expected) = (String::new(), Vec::new());
    for line in block.lines() {
        if let Some(l) = line.strip_prefix("→ ") {
            input.push_str(l);
            input.push('\n');
        } else if let Some(l) = line.strip_prefix("← ") {
            expected.push(l.to_owned());
        }
    }
    assert!(expected.len() > 20, "the transcript has a session");
    let mut out = Vec::new();
    w6w_sim::__internals::context_protocol::serve_engine(&mut input.as_bytes(), &mut out)
        .expect("serves");
    let got: Vec<String> = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect();
    // Compare as JSON values: field order inside an object does not matter.
    let parse = |l: &String| serde_json::from_str::<Value>(l).expect("json line");
    assert_eq!(
        got.iter().map(parse).collect::<Vec<_>>(),
        expected.iter().map(parse).collect::<Vec<_>>()
    );
}

/// A small structural check of a message against its schema: `required`, `const` / `enum`
/// of top-level properties, and `additionalProperties: false`.
fn conforms(message: &Value, schema: &Value) -> Result<(), String> {
    let obj = message.as_object().ok_or("not an object")?;
    for r in schema["required"].as_array().into_iter().flatten() {
        let r = r.as_str().unwrap_or_default();
        if !obj.contains_key(r) {
            return Err(format!("missing {r}"));
        }
    }
    let props = schema["properties"].as_object().ok_or("no properties")?;
    for (k, v) in obj {
        let Some(p) = props.get(k) else {
            if schema["additionalProperties"] == json!(false) {
                return Err(format!("unknown field {k}"));
            }
            continue;
        };
        if let Some(c) = p.get("const")
            && c != v
        {
            return Err(format!("{k}: {v} is not {c}"));
        }
        if let Some(e) = p.get("enum").and_then(Value::as_array)
            && !e.contains(v)
        {
            return Err(format!("{k}: {v} is not one of {e:?}"));
        }
    }
    Ok(())
}

#[test]
fn every_message_of_the_transcript_conforms_to_its_schema() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/context-protocol.md")).expect("doc");
    let block = doc.split("<!-- transcript -->").nth(1).expect("transcript");
    let mut kinds = std::collections::BTreeSet::new();
    for line in block.lines() {
        let Some(l) = line.strip_prefix("→ ").or_else(|| line.strip_prefix("← ")) else {
            continue;
        };
        let message: Value = serde_json::from_str(l).expect("json");
        let kind = message["type"].as_str().expect("type").to_owned();
        let path = root.join(format!("docs/schemas/context/{kind}.json"));
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("schema")).expect("json");
        assert_eq!(schema["properties"]["type"]["const"], json!(kind));
        if let Err(e) = conforms(&message, &schema) {
            panic!("{kind}: {e}: {l}");
        }
        kinds.insert(kind);
    }
    assert!(kinds.len() >= 9, "{kinds:?}");
    // The schema rejects what it should.
    let idle: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/schemas/context/idle.json")).expect("schema"),
    )
    .expect("json");
    assert!(conforms(&json!({"type": "idle"}), &idle).is_err());
    assert!(conforms(&json!({"type": "idle", "waiting": [], "x": 1}), &idle).is_err());
}

#[test]
fn the_cli_runs_the_suite_through_engine_serve_and_refuses_two_candidates() {
    let bin = env!("CARGO_BIN_EXE_w6w-sim");
    let out = std::process::Command::new(bin)
        .args(["conformance", "--engine", &serve_cmd(), "--clause", "RETRY"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("passed, 0 failed"), "{text}");
    assert!(
        text.contains("w6w-sim reference engine"),
        "the report names the candidate: {text}"
    );
    let out = std::process::Command::new(bin)
        .args(["conformance", "--engine", &serve_cmd(), "--adapter", "x"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "--engine and --adapter conflict"
    );
    let out = std::process::Command::new(bin)
        .args([
            "conformance",
            "--engine",
            "/nonexistent/engine",
            "--clause",
            "RETRY",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "an engine that cannot start is a usage error"
    );
}
