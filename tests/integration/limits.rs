//! Issue 12 items 4 and 5 end to end: run budgets stop `run --store DIR` and `--trace` in
//! bounded time with `limit_exceeded`, and what the engine writes can always be read back —
//! a value nested past the limit fails its step, never the store.

use std::process::Command;

use serde_json::{Value, json};
use w6w_sim::sim::{self, SimOptions, StoreChoice};
use w6w_sim::sim::{JournalStore, Store};

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = json!({"n": v});
    }
    v
}

/// A with value nested past the limit is refused at save time, with its path.
#[test]
fn validation_refuses_what_the_store_could_not_hold() {
    let wf = json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": [
        {"id": "a", "uses": {"app": "app", "action": "act"},
         "with": {"deep": nested(w6w_sim::__internals::limits::MAX_NESTING_DEPTH)}}]});
    let errors = sim::load_workflow(&wf).err();
    assert!(
        matches!(&errors, Some(sim::SimError::InvalidWorkflow(e)) if !e.is_empty()),
        "{errors:?}"
    );
    let ok = json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": [
        {"id": "a", "uses": {"app": "app", "action": "act"},
         "with": {"deep": nested(w6w_sim::__internals::limits::MAX_NESTING_DEPTH - 6)}}]});
    assert!(sim::load_workflow(&ok).is_ok());
}

/// An echo chain that wraps the previous output one level deeper per step: the step that
/// would pass the limit fails with `limit_exceeded`, and the store reads back (resumable).
#[test]
fn values_built_at_run_time_past_the_limit_fail_their_step_not_the_store() {
    let n = w6w_sim::__internals::limits::MAX_NESTING_DEPTH + 5;
    let mut steps = vec![json!({"id": "s0", "uses": {"app": "app", "action": "act"},
                                "with": {"w": 0}})];
    let mut edges = Vec::new();
    for i in 1..n {
        steps.push(
            json!({"id": format!("s{i}"), "uses": {"app": "app", "action": "act"},
                          "with": {"w": {"$": format!("steps.s{}.output", i - 1)}}}),
        );
        edges.push(json!({"from": format!("s{}", i - 1), "to": format!("s{i}")}));
    }
    let wf = json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": steps,
                    "edges": edges});
    let workflow = sim::load_workflow(&wf).expect("valid");
    let scenario = sim::load_scenario(&json!({})).expect("scenario");
    let dir = tempfile::tempdir().expect("temp dir");
    let options = SimOptions {
        store: StoreChoice::Dir(dir.path().to_path_buf()),
        keep_trace: false,
        ..SimOptions::default()
    };
    let report = sim::Simulation::new(&workflow, &scenario)
        .options(&options)
        .run()
        .expect("a report");
    assert_eq!(report.run.status.as_str(), "failed");
    let err = report.run.error.clone().expect("run error");
    assert_eq!(err.code, "limit_exceeded", "{err:?}");
    let store = JournalStore::open(dir.path()).expect("store");
    let stored = store
        .load(&report.run.run_id)
        .expect("the store file reads back");
    assert!(stored.is_some());
}

fn write(dir: &std::path::Path, name: &str, v: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).expect("write");
    p.display().to_string()
}

/// `retry.maxAttempts: 1e9` on an always-failing action, on a disk store and with a trace
/// file: each budget ends the run `limit_exceeded` (exit 1), quickly.
#[test]
fn budgets_stop_run_with_a_store_and_a_trace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let wf = write(
        dir.path(),
        "wf.json",
        &json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": [
            {"id": "a", "uses": {"app": "app", "action": "act"},
             "retry": {"maxAttempts": 1_000_000_000u64, "backoff": "fixed", "delayMs": 1}}]}),
    );
    let sc = write(
        dir.path(),
        "sc.json",
        &json!({"actions": {"a": {"idempotent": true, "outcomes": [
            {"error": {"code": "flaky", "phase": "execute", "retryable": true, "message": "x"}}]}}}),
    );
    let store = dir.path().join("store");
    let trace = dir.path().join("trace.jsonl");
    for (flags, needle) in [
        (vec!["--max-invocations", "40"], "invocation limit of 40"),
        (
            vec!["--max-recorded-bytes", "20000"],
            "20000 recorded bytes",
        ),
        (
            vec!["--max-trace-bytes", "30000"],
            "trace passed its limit of 30000",
        ),
        (vec!["--max-virtual-ms", "30"], "virtual time"),
    ] {
        let _ = std::fs::remove_dir_all(&store);
        let _ = std::fs::remove_file(&trace);
        let out = Command::new(BIN)
            .args(["run", &wf, "--scenario", &sc, "--store"])
            .arg(&store)
            .arg("--trace")
            .arg(&trace)
            .args(&flags)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {err}");
        assert!(
            err.contains("limit_exceeded") && err.contains(needle),
            "{flags:?}: {err}"
        );
        let written = std::fs::metadata(&trace).map_or(0, |m| m.len());
        assert!(written < 1_000_000, "{flags:?}: trace of {written} bytes");
    }
}
