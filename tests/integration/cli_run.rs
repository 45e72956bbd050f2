//! The CLI end to end: `w6w-sim run | replay | resume`, exit codes, and recovery after a
//! REAL process death (`W6W_SIM_ABORT_AFTER_CHECKPOINT` makes the process abort right after
//! that checkpoint is durable; `w6w-sim resume` continues from the disk store).

use std::path::Path;
use std::process::Output;

use crate::support::{bin, example, report};
use serde_json::Value;

fn run(workflow: &str, scenario: &Path, extra: &[&str]) -> Output {
    bin()
        .arg("run")
        .arg(example(workflow))
        .arg("--scenario")
        .arg(scenario)
        .args(extra)
        .output()
        .expect("spawn w6w-sim")
}

#[test]
fn run_prints_the_report_and_exits_zero_even_for_a_failed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("s.json");
    std::fs::write(
        &scenario,
        r#"{"variables": {"amount": 1}, "actions": {"charge": {"outcomes": [{"output": {"receiptId": "r1"}}]},
            "receipt": {"outcomes": [{"error": {"code": "smtp_down", "phase": "execute"}}]}}}"#,
    )
    .expect("write");
    let r = report(&run("error-edges.workflow.json", &scenario, &[]));
    assert_eq!(r["run"]["status"], "failed");
    assert_eq!(r["run"]["error"]["stepId"], "receipt");
    for key in ["invocations", "waits", "checkpoints", "crashes", "clockMs"] {
        assert!(r.get(key).is_some(), "report has {key}");
    }
}

#[test]
fn invalid_inputs_exit_one_with_a_pointer_and_io_errors_exit_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"faults": {"crashAfterCheckpoint": ["x"]}}"#).expect("write");
    let out = run("retry.workflow.json", &bad, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/faults/crashAfterCheckpoint/0"), "{err}");

    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").expect("write");
    let out = run("error-edges.workflow.json", &empty, &[]);
    assert_eq!(out.status.code(), Some(1), "required variable missing");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("amount") && err.contains("invalid_variables"),
        "{err}"
    );

    let out = run("retry.workflow.json", &dir.path().join("missing.json"), &[]);
    assert_eq!(out.status.code(), Some(2));

    let wf = dir.path().join("wf.json");
    std::fs::write(
        &wf,
        r#"{"manifestVersion":"2","id":"w","name":"w","steps":[{"id":"a","uses":{"app":"x","action":"y"}}],
            "edges":[{"from":"a","to":"a"}]}"#,
    )
    .expect("write");
    let out = bin()
        .arg("run")
        .arg(&wf)
        .arg("--scenario")
        .arg(&empty)
        .output()
        .expect("spawn");
    assert_eq!(out.status.code(), Some(1), "invalid workflow");
}

#[test]
fn a_killed_process_is_resumed_from_the_disk_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let trace = dir.path().join("trace.jsonl");
    let scenario = example("retry.scenario.json");
    // Reference: the same run with no kill.
    let reference = report(&run("retry.workflow.json", &scenario, &[]));

    let killed = bin()
        .arg("run")
        .arg(example("retry.workflow.json"))
        .arg("--scenario")
        .arg(&scenario)
        .arg("--store")
        .arg(&store)
        .arg("--trace")
        .arg(&trace)
        .env("W6W_SIM_ABORT_AFTER_CHECKPOINT", "4")
        .output()
        .expect("spawn");
    assert!(!killed.status.success(), "the process was aborted");
    assert!(killed.stdout.is_empty(), "no report from a dead process");
    let stored = w6w_sim::__internals::sim::read_run_file(&store.join("run_1.journal"))
        .expect("the journal reads back whole");
    assert_eq!(stored.state.status.as_str(), "running");
    assert_eq!(stored.world.expect("world").checkpoints, 4);
    let traced = std::fs::read_to_string(&trace).expect("trace");
    assert!(traced.lines().any(|l| l.contains("\"process_abort\"")));

    let resumed = report(
        &bin()
            .arg("resume")
            .arg(example("retry.workflow.json"))
            .arg("--store")
            .arg(&store)
            .arg("--run")
            .arg("run_1")
            .arg("--scenario")
            .arg(&scenario)
            .arg("--trace")
            .arg(&trace)
            .output()
            .expect("spawn"),
    );
    assert_eq!(
        resumed["run"], reference["run"],
        "same final state as the crash-free run"
    );
    // One trace file across both processes: `seq` never repeats or goes back, although
    // the dead process wrote events after its last durable checkpoint.
    let seqs: Vec<u64> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("whole trace lines")["seq"]
                .as_u64()
                .expect("seq")
        })
        .collect();
    assert!(seqs.len() > 10);
    for w in seqs.windows(2) {
        assert!(w[0] < w[1], "trace seq {} then {}", w[0], w[1]);
    }
    assert_eq!(resumed["invocations"], reference["invocations"]);
    assert_eq!(resumed["crashes"], 1);

    // Resuming a finished run is idempotent: nothing runs again.
    let again = report(
        &bin()
            .args(["resume"])
            .arg(example("retry.workflow.json"))
            .arg("--store")
            .arg(&store)
            .args(["--run", "run_1", "--scenario"])
            .arg(&scenario)
            .output()
            .expect("spawn"),
    );
    assert_eq!(again["run"], reference["run"]);
    assert_eq!(again["invocations"], reference["invocations"]);
}

#[test]
fn replay_reuses_the_recorded_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = example("retry.scenario.json");
    let first = report(&run("retry.workflow.json", &scenario, &[]));
    let saved = dir.path().join("report.json");
    std::fs::write(&saved, first.to_string()).expect("write");
    let r = report(
        &bin()
            .arg("replay")
            .arg(example("retry.workflow.json"))
            .arg("--run")
            .arg(&saved)
            .arg("--scenario")
            .arg(&scenario)
            .output()
            .expect("spawn"),
    );
    assert_eq!(r["run"]["status"], first["run"]["status"]);
    assert_eq!(
        r["run"]["steps"]["fetch"]["output"],
        first["run"]["steps"]["fetch"]["output"]
    );
    let steps: Vec<&str> = r["invocations"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|i| i["stepId"].as_str())
        .collect();
    assert_eq!(steps, ["notify"], "only the failed step runs fresh");

    let from = report(
        &bin()
            .arg("replay")
            .arg(example("retry.workflow.json"))
            .arg("--run")
            .arg(&saved)
            .arg("--scenario")
            .arg(&scenario)
            .args(["--from", "notify"])
            .output()
            .expect("spawn"),
    );
    let steps: Vec<&str> = from["invocations"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|i| i["stepId"].as_str())
        .collect();
    assert_eq!(
        steps,
        ["notify", "log"],
        "from notify: notify and every later plan step"
    );
}

#[test]
fn replay_reads_a_run_straight_from_a_store_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let scenario = example("retry.scenario.json");
    let first = report(&run(
        "retry.workflow.json",
        &scenario,
        &["--store", store.to_str().expect("utf-8 path")],
    ));
    let r = report(
        &bin()
            .arg("replay")
            .arg(example("retry.workflow.json"))
            .arg("--run")
            .arg(store.join("run_1.journal"))
            .arg("--scenario")
            .arg(&scenario)
            .output()
            .expect("spawn"),
    );
    assert_eq!(r["run"]["status"], first["run"]["status"]);
    let steps: Vec<&str> = r["invocations"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|i| i["stepId"].as_str())
        .collect();
    assert_eq!(
        steps,
        ["notify"],
        "the journal's succeeded steps are reused"
    );
}
