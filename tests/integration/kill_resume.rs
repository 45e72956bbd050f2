//! Real kills (RUN-3, RUN-4): `kill -9` the `w6w-sim run --store DIR` process at random
//! moments, `w6w-sim resume` it (killing the resumer too), and the run that finally ends
//! must be the crash-free run — same RunState, same invocations — with a trace whose `seq`
//! rises strictly across every process that wrote to it. Also: a second process on a
//! run in use is refused before it can invoke anything.
//!
//! The kill moments come from a seeded generator (`W6W_KILL_SEED`, printed on failure)
//! drawn over the journal size of a crash-free run; `W6W_KILL_ROUNDS` runs (default 2)
//! of up to `W6W_KILL_KILLS` kills each (default 3). `scripts/kill-test.sh` runs a long
//! campaign.

// Real processes are killed at real moments: this test reads the wall clock on purpose.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::bin;
use serde_json::{Value, json};
use w6w_sim::sim;

/// A number from the environment (decimal or `0x` hex); a malformed one is an error.
fn env_u64(name: &str, default: u64) -> u64 {
    let Ok(v) = std::env::var(name) else {
        return default;
    };
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    }
    .unwrap_or_else(|e| panic!("{name}={v:?}: {e}"))
}

/// xorshift64*: the kill schedule is a function of the seed alone.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A chain with a retried step, then a foreach over its last output.
fn workflow(n: usize) -> (Value, Value) {
    let mut steps: Vec<Value> = (0..n)
        .map(|i| {
            let with = if i == 0 {
                json!({"seed": 1})
            } else {
                json!({"prev": {"$": format!("steps.s{}.output.i", i - 1)}, "i": i})
            };
            let mut s = json!({"id": format!("s{i}"), "uses": {"app": "demo", "action": "echo"}, "with": with});
            if i == n / 2 {
                s["retry"] = json!({"maxAttempts": 3, "backoff": "fixed", "delayMs": 100});
            }
            s
        })
        .collect();
    // Then a foreach, two iterations at a time, with a two-step body: a kill may land
    // while its frames are running (D-188) or as it folds them (D-189).
    steps.push(
        json!({"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
        "with": {"items": [1, 2, 3, 4, 5, 6], "body": ["fa", "fb"], "parallelism": 2}}),
    );
    steps.push(json!({"id": "fa", "uses": {"app": "demo", "action": "echo"},
        "with": {"item": {"$": "foreach.item"}, "prev": {"$": format!("steps.s{}.output.i", n - 1)}}}));
    steps.push(
        json!({"id": "fb", "uses": {"app": "demo", "action": "echo"},
        "with": {"a": {"$": "steps.fa.output.item"}}}),
    );
    let wf = json!({"manifestVersion": "2", "id": "wf_kill", "name": "kill", "steps": steps});
    let sc = json!({"runId": "run_k", "actions": {
        format!("s{}", n / 2): {"idempotent": true, "outcomes": [
            {"error": {"code": "flaky", "message": "flaky", "phase": "execute"}},
            {"error": {"code": "flaky", "message": "flaky", "phase": "execute"}},
            {"echo": true}]}}});
    (wf, sc)
}

struct Files {
    _dir: tempfile::TempDir,
    wf: PathBuf,
    sc: PathBuf,
    store: PathBuf,
    trace: PathBuf,
    /// The run id the scenario gives the run.
    run: String,
}

fn files(wf: &Value, sc: &Value) -> Files {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |name: &str| dir.path().join(name);
    std::fs::write(p("wf.json"), wf.to_string()).expect("write");
    std::fs::write(p("sc.json"), sc.to_string()).expect("write");
    Files {
        wf: p("wf.json"),
        sc: p("sc.json"),
        store: p("store"),
        trace: p("trace.jsonl"),
        run: "run_k".into(),
        _dir: dir,
    }
}

/// A dialect example (issue 44 item 5): the document (under its own name, so its
/// extension picks the dialect) and its scenario, copied into a fresh directory — with a
/// test sealing key: a sensitive output (the order's charge, D-275) is kept only sealed,
/// and without a key a resumed run reads `"[redacted]"` where the crash-free run read it
/// (D-252), so what it computes from it may differ. An operator who wants resumed runs to
/// equal crash-free ones holds a key; so does this campaign.
fn dialect_files(doc: &Path, scenario: &Path, run: &str) -> Files {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = doc.file_name().expect("file name");
    let wf = dir.path().join(name);
    let sc = dir.path().join("sc.json");
    std::fs::copy(doc, &wf).expect("copy document");
    let mut keyed: Value =
        serde_json::from_slice(&std::fs::read(scenario).expect("read scenario")).expect("scenario");
    keyed["sealingKey"] = Value::String("kill-campaign-key-Zt7mWb2Nc8Rd5Yp1Hs6Jf4".into());
    std::fs::write(&sc, keyed.to_string()).expect("write scenario");
    Files {
        wf,
        sc,
        store: dir.path().join("store"),
        trace: dir.path().join("trace.jsonl"),
        run: run.to_owned(),
        _dir: dir,
    }
}

fn command(f: &Files, resume: bool) -> Command {
    let mut c = bin();
    if resume {
        c.arg("resume").arg(&f.wf).arg("--run").arg(&f.run);
    } else {
        c.arg("run").arg(&f.wf);
    }
    c.arg("--scenario")
        .arg(&f.sc)
        .arg("--store")
        .arg(&f.store)
        .arg("--trace")
        .arg(&f.trace)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Run to the end, killing the process `kills` times. Each kill lands when the journal
/// has grown past a size drawn between its current size and `full` (the size a
/// crash-free run ends with), plus a random delay of up to two checkpoint intervals
/// (`gap`), so kills spread over the whole run whatever the disk's speed and land
/// between an append and its fdatasync, mid-invocation, or mid-trace-line.
/// Returns the final report and how many kills landed before the process finished.
fn run_with_kills(f: &Files, rng: &mut Rng, kills: u64, full: u64, gap: Duration) -> (Value, u64) {
    let journal = f.store.join(format!("{}.journal", f.run));
    let size = || std::fs::metadata(&journal).map(|m| m.len()).unwrap_or(0);
    let mut landed = 0;
    for attempt in 0..=kills + 50 {
        let resume = journal.exists();
        let now = size();
        let mut child = command(f, resume).spawn().expect("spawn");
        if attempt < kills && full > now {
            let target = now + 1 + rng.next() % (full - now);
            let deadline = Instant::now() + Duration::from_secs(120);
            while child.try_wait().expect("try_wait").is_none()
                && size() < target
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_micros(50));
            }
            let gap_us = u64::try_from(gap.as_micros()).unwrap_or(u64::MAX);
            let extra = Instant::now() + Duration::from_micros(rng.next() % (2 * gap_us + 1));
            while child.try_wait().expect("try_wait").is_none() && Instant::now() < extra {
                std::thread::sleep(Duration::from_micros(20));
            }
            if child.try_wait().expect("try_wait").is_none() {
                child.kill().expect("SIGKILL");
                let _ = child.wait();
                landed += 1;
                continue;
            }
        }
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "attempt {attempt} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
        return (report, landed);
    }
    panic!("the run never finished")
}

fn trace_seqs(path: &Path) -> (Vec<u64>, usize) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut seqs = Vec::new();
    let mut torn = 0;
    for line in text.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => seqs.push(v["seq"].as_u64().expect("seq")),
            Err(_) => torn += 1,
        }
    }
    (seqs, torn)
}

#[test]
fn killed_at_random_moments_and_resumed_the_run_ends_as_the_crash_free_run() {
    let seed = env_u64("W6W_KILL_SEED", 0x5eed_0013);
    let rounds = env_u64("W6W_KILL_ROUNDS", 2);
    let kills = env_u64("W6W_KILL_KILLS", 3);
    let (wf, sc) = workflow(60);
    let reference = sim::Simulation::new(
        &sim::load_workflow(&wf).expect("workflow"),
        &sim::load_scenario(&sc).expect("scenario"),
    )
    .run()
    .expect("crash-free run")
    .to_json();

    // How large a crash-free run's journal grows: the kills are drawn over it.
    let clean_files = files(&wf, &sc);
    let start = Instant::now();
    let (clean, _) = run_with_kills(&clean_files, &mut Rng(1), 0, 0, Duration::ZERO);
    let checkpoints = clean["checkpoints"].as_u64().expect("checkpoints").max(1);
    let gap = start.elapsed() / u32::try_from(checkpoints).unwrap_or(u32::MAX);
    assert_eq!(
        clean["run"], reference["run"],
        "a disk run is the memory run"
    );
    let full = std::fs::metadata(clean_files.store.join("run_k.journal"))
        .expect("journal")
        .len();

    let mut rng = Rng(seed | 1);
    let mut total_landed = 0;
    for round in 0..rounds {
        let f = files(&wf, &sc);
        let (report, landed) = run_with_kills(&f, &mut rng, kills, full, gap);
        total_landed += landed;
        let ctx = format!("seed {seed:#x} round {round} ({landed} kills landed)");
        eprintln!("{ctx}");
        assert_eq!(report["run"], reference["run"], "{ctx}: the final RunState");
        assert_eq!(
            report["invocations"], reference["invocations"],
            "{ctx}: no terminal step ran again, every interrupted one exactly once more"
        );
        let (seqs, torn) = trace_seqs(&f.trace);
        assert!(torn as u64 <= landed, "{ctx}: {torn} torn trace lines");
        for w in seqs.windows(2) {
            assert!(w[0] < w[1], "{ctx}: trace seq {} then {}", w[0], w[1]);
        }
    }
    // A campaign whose every run finished before its kill compared crash-free runs only.
    assert!(
        kills == 0 || rounds == 0 || total_landed > 0,
        "seed {seed:#x}: no kill landed in {rounds} rounds of {kills}: nothing was recovered"
    );
}

#[test]
fn a_second_process_on_a_run_in_use_is_refused_before_it_invokes_anything() {
    let (wf, sc) = workflow(3);
    let f = files(&wf, &sc);
    let (_, _) = run_with_kills(&f, &mut Rng(1), 0, 0, Duration::ZERO);
    let before = std::fs::read(f.store.join("run_k.journal")).expect("journal");
    // This process holds the run open, as a live `w6w-sim resume` would.
    let holder = w6w_sim::sim::JournalStore::open(&f.store).expect("open");
    let held = w6w_sim::sim::Store::load(&holder, "run_k").expect("load");
    assert!(held.is_some());
    let out = command(&f, true).output().expect("spawn");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "run run_k is in use by process {}",
            std::process::id()
        )),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no report");
    let after = std::fs::read(f.store.join("run_k.journal")).expect("journal");
    assert_eq!(before, after, "the refused process wrote nothing");
    // A second `run` with the same id is refused the same way.
    let out = command(&f, false).output().expect("spawn");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is in use by process"));
}

/// Issue 44 item 5: a WOML and a YAML run killed at random moments and resumed from the
/// same document end with the crash-free run's report — RunState, invocations, and the
/// dialect's additions (`result`, WOML-15 attempt bindings, YML-5 `bindings`).
#[test]
fn killed_dialect_runs_resume_to_the_crash_free_report_with_result_and_bindings() {
    let seed = env_u64("W6W_KILL_SEED", 0x5eed_0044);
    let rounds = env_u64("W6W_KILL_ROUNDS", 2).max(1) * 2;
    let kills = env_u64("W6W_KILL_KILLS", 3);
    let mut rng = Rng(seed | 1);
    let mut total_landed = 0;
    for (doc, scenario) in [
        ("order.woml.xml", "order.scenario.json"),
        ("helpdesk.yaml", "helpdesk.scenario.json"),
    ] {
        let (doc, scenario) = (
            crate::support::example(doc),
            crate::support::example(scenario),
        );
        let keyed = dialect_files(&doc, &scenario, "");
        let out = bin()
            .arg("run")
            .arg(&keyed.wf)
            .arg("--scenario")
            .arg(&keyed.sc)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference: Value = serde_json::from_slice(&out.stdout).expect("report");
        let run = reference["run"]["runId"]
            .as_str()
            .expect("runId")
            .to_owned();
        let clean_files = dialect_files(&doc, &scenario, &run);
        let start = Instant::now();
        let (clean, _) = run_with_kills(&clean_files, &mut Rng(1), 0, 0, Duration::ZERO);
        let checkpoints = clean["checkpoints"].as_u64().unwrap_or(1).max(1);
        let gap = start.elapsed() / u32::try_from(checkpoints).unwrap_or(u32::MAX);
        let full = std::fs::metadata(clean_files.store.join(format!("{run}.journal")))
            .expect("journal")
            .len();
        let keys = ["run", "invocations", "dialect", "result", "bindings"];
        for key in keys {
            assert_eq!(
                clean[key], reference[key],
                "{key}: a disk run is the memory run"
            );
        }
        assert_eq!(reference["run"]["status"], "succeeded", "{}", doc.display());
        for round in 0..rounds {
            let f = dialect_files(&doc, &scenario, &run);
            let (report, landed) = run_with_kills(&f, &mut rng, kills, full, gap);
            total_landed += landed;
            let ctx = format!(
                "{} seed {seed:#x} round {round} ({landed} kills landed)",
                doc.display()
            );
            eprintln!("{ctx}");
            for key in keys {
                assert_eq!(report[key], reference[key], "{ctx}: {key}");
            }
        }
    }
    assert!(
        kills == 0 || total_landed > 0,
        "seed {seed:#x}: no kill landed: nothing was recovered"
    );
}
