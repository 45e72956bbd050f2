//! `w6w-sim matrix` (issue 9 item 6): several candidates, one per-clause table.

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

/// A broken candidate at the seam: it answers every request `{"ok": "wrong"}`.
fn wrong_adapter() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/adapters/wrong.sh").to_owned()
}

#[test]
fn the_matrix_puts_candidates_side_by_side_in_markdown_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let adapter = format!("adapter:'{BIN}' adapter serve");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["matrix", "--candidate", "ref=reference"])
        .args(["--candidate", &format!("proc={adapter}")])
        .args(["--candidate", "core=reference-engine"])
        .args(["--capabilities", "core=op.run,op.replay"])
        .args([
            "--candidate",
            &format!("broken=adapter:sh '{}'", wrong_adapter()),
        ])
        .args(["--clause", "RETRY-1", "--clause", "PLAN-1"])
        .args(["--markdown", "m.md", "--json", "m.json"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("m.md")).expect("markdown");
    assert!(
        md.contains("| clause | ref | proc | core | broken |"),
        "{md}"
    );
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("m.json")).expect("json"))
            .expect("valid JSON");
    let cell = |clause: &str, who: &str| {
        json["clauses"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["clause"] == clause))
            .map(|r| r["results"][who].clone())
            .unwrap_or(Value::Null)
    };
    let retry_ref = cell("RETRY-1", "ref");
    assert!(retry_ref["passed"].as_u64().is_some_and(|n| n > 0));
    // Through the adapter protocol runs are self-reported (D-102): `adapter serve`
    // declares a profile without them, so RETRY-1 is not applicable there, never passed;
    // its pure ops agree with the reference.
    assert_eq!(cell("RETRY-1", "proc")["passed"], 0);
    assert_eq!(
        cell("RETRY-1", "proc")["notApplicable"],
        retry_ref["passed"]
    );
    assert_eq!(
        cell("PLAN-1", "proc"),
        cell("PLAN-1", "ref"),
        "the adapter agrees"
    );
    assert_eq!(
        cell("RETRY-1", "core"),
        retry_ref,
        "run cases are in the core"
    );
    assert!(
        cell("RETRY-1", "broken")["failed"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    let plan = cell("PLAN-1", "core");
    assert_eq!(plan["passed"], 0);
    assert_eq!(plan["notApplicable"], cell("PLAN-1", "ref")["passed"]);
}

#[test]
fn a_bad_candidate_is_a_usage_error() {
    for args in [
        vec!["matrix", "--candidate", "x=warp"],
        vec![
            "matrix",
            "--candidate",
            "a=reference",
            "--candidate",
            "a=reference",
        ],
        vec![
            "matrix",
            "--candidate",
            "a=reference",
            "--capabilities",
            "a=teleport",
        ],
    ] {
        let out = Command::new(BIN).args(&args).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
