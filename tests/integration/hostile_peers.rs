//! Hostile candidates drawn from a seed (`tests/data/adapters/random_peer.py`): an adapter,
//! an engine and a host that get past the hello most of the time, then answer with wrong
//! ids and types, numbers beyond f64, lone surrogates, NUL, deep nesting, invalid UTF-8,
//! half lines, a line over the 16 MiB limit, messages out of turn and sudden exits. Whatever
//! they send, the suite judges them — exit 1, every case that ran red or not applicable —
//! and never panics, aborts or hangs. Seeds per seam: `PROPTEST_CASES` / 8 (default 8), from
//! `W6W_HOSTILE_SEED` (default 1) on, so a failure names the seed that reproduces it.
//! `python3` missing is a failure unless `W6W_SKIP_PYTHON=1` says to skip.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn python3() -> bool {
    crate::support::python3("the hostile peers (Python 3 scripts)")
}

/// Run the suite against the random peer of `seam` (`adapter`, `engine`, `host`) drawn from
/// `seed`; its exit code, stdout and stderr, or why it did not finish.
fn run(seam: &str, seed: u64) -> (Option<i32>, String, String) {
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapters/random_peer.py");
    let candidate = format!("python3 '{}' {seam} {seed}", peer.display());
    let mut child = Command::new(BIN)
        .args(["conformance", &format!("--{seam}"), &candidate])
        .args([
            "--clause", "PLAN-1", "--clause", "RETRY-2", "--clause", "RUN-3",
        ])
        .args(["--timeout-ms", "1000", "--startup-timeout-ms", "3000"])
        .args(["--deadline", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("w6w-sim starts");
    // Real time: a hang is the failure this test looks for, and the suite's own deadline
    // (60 s) must have ended the run well before this bound.
    #[allow(clippy::disallowed_methods)]
    let started = Instant::now();
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let _ = stdout.read_to_string(&mut out);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                err.push_str(&reader.join().unwrap_or_default());
                return (status.code(), out, err);
            }
            Ok(None) if started.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return (None, out, format!("did not finish within 120 s\n{err}"));
            }
        }
    }
}

/// Every seed of `seam`'s peer is judged: exit 1, something failed or nothing was judged,
/// and no panic.
fn judged(seam: &str) {
    if !python3() {
        return;
    }
    let first = env_number("W6W_HOSTILE_SEED", 1);
    let seeds = (env_number("PROPTEST_CASES", 64) / 8).max(1);
    for seed in first..first + seeds {
        let (code, out, err) = run(seam, seed);
        let again = format!("W6W_HOSTILE_SEED={seed} (the {seam} peer)");
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{again}: the suite panicked\n{err}"
        );
        assert_eq!(code, Some(1), "{again}: exit {code:?}\n{out}\n{err}");
        let last = out.lines().last().unwrap_or_default();
        let failed = last
            .split(", ")
            .nth(1)
            .and_then(|f| f.strip_suffix(" failed"))
            .and_then(|n| n.parse::<usize>().ok());
        assert!(
            failed.is_some_and(|n| n > 0) || out.contains("Nothing was judged"),
            "{again}: a hostile peer must fail something or be judged on nothing: {last:?}\n{out}"
        );
    }
}

#[test]
fn a_hostile_adapter_is_judged_and_never_takes_the_suite_down() {
    judged("adapter");
}

#[test]
fn a_hostile_engine_is_judged_and_never_takes_the_suite_down() {
    judged("engine");
}

#[test]
fn a_hostile_host_is_judged_and_never_takes_the_suite_down() {
    judged("host");
}

/// D-378: an engine that ends every session at once passes no replay. Replaying a finished
/// run from a recording it never walks leaves the suite's own recording as the report; the
/// seam refuses a replay that wrote no checkpoint, naming why.
#[test]
fn an_engine_that_does_nothing_passes_no_replay() {
    no_replay_passes(None, "ended without writing one checkpoint");
}

/// D-380: nor does one that loads the recording and writes its status back unchanged —
/// one checkpoint, no step record. It passed `replay-determinism` and
/// `sec-replay-run-trigger-scrubbed` under D-378 alone.
#[test]
fn an_engine_that_only_writes_the_recorded_status_passes_no_replay() {
    no_replay_passes(
        Some("status"),
        "holding a record no checkpoint of the replay wrote",
    );
}

/// Against the lazy engine in `mode`, no replay case of REPLAY and SEC-1 passes, and a
/// finished run's replay fails saying `why`.
fn no_replay_passes(mode: Option<&str>, why: &str) {
    if !python3() {
        return;
    }
    let out = against_the_lazy_engine(mode, &["--json", "--clause", "REPLAY", "--clause", "SEC-1"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the report is JSON");
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    let replays: Vec<&serde_json::Value> = cases
        .iter()
        .filter(|c| {
            c["requires"]
                .as_array()
                .is_some_and(|r| r.iter().any(|n| n == "op.replay"))
        })
        .collect();
    assert!(
        replays.len() >= 10,
        "the selection holds replays: {}",
        replays.len()
    );
    for case in &replays {
        assert_ne!(
            case["status"], "passed",
            "{} passed against a lazy engine ({mode:?})",
            case["id"]
        );
    }
    let refused = |id: &str| {
        replays.iter().any(|c| {
            c["id"] == id
                && c["failures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|f| f.as_str().is_some_and(|f| f.contains(why)))
        })
    };
    for id in ["replay-determinism", "sec-replay-run-trigger-scrubbed"] {
        assert!(refused(id), "{id} is refused saying {why:?}");
    }
}

/// D-379: against the whole suite an engine that does nothing passes nothing. The runs and
/// replays the suite refuses before any session starts are the suite's own answers: not
/// judged at the engine seam, and said so.
#[test]
fn an_engine_that_does_nothing_passes_nothing() {
    if !python3() {
        return;
    }
    let out = against_the_lazy_engine(None, &["--generate", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("0 passed, ")),
        "{text}"
    );
    assert!(
        text.contains("Not judged at this seam: ")
            && text.contains("the engine seam judges what reaches the engine"),
        "{text}"
    );
}

/// `w6w-sim conformance ARGS --engine` the do-nothing engine
/// (`tests/fixtures/context/lazy-engine.py`, given `mode` as its argument).
fn against_the_lazy_engine(mode: Option<&str>, args: &[&str]) -> std::process::Output {
    let engine =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/context/lazy-engine.py");
    let mode = mode.map(|m| format!(" {m}")).unwrap_or_default();
    Command::new(BIN)
        .arg("conformance")
        .args(args)
        .args(["--engine", &format!("python3 '{}'{mode}", engine.display())])
        .output()
        .expect("w6w-sim runs")
}
