//! Issue 41 item 3 end to end (D-270…D-274): `w6w-sim inspect FILE` on a journal a real
//! `run --store DIR` wrote, on a torn and a damaged copy (offsets asserted), on a report and
//! a RunState; read-only (bytes, mtime, no lock file, a live holder's lock left alone);
//! a secret never in its output; an authenticated journal verified with its key and read
//! NOT VERIFIED without one.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{bin, example};

fn run_retry(store: &Path) -> (Value, PathBuf) {
    let out = bin()
        .arg("run")
        .arg(example("retry.workflow.json"))
        .arg("--scenario")
        .arg(example("retry.scenario.json"))
        .arg("--store")
        .arg(store)
        .env_remove("W6W_SEALING_KEY")
        .output()
        .expect("spawn");
    let report = crate::support::report(&out);
    (report, store.join("run_1.journal"))
}

fn inspect(args: &[&std::ffi::OsStr]) -> Output {
    bin()
        .arg("inspect")
        .args(args)
        .env_remove("W6W_SEALING_KEY")
        .output()
        .expect("spawn")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        stderr(out)
    );
    serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON")
}

fn inspect_json(file: &Path) -> Value {
    json_of(&inspect(&["--json".as_ref(), file.as_os_str()]))
}

/// The file's bytes and mtime, to show inspect changed neither.
fn fingerprint(p: &Path) -> (Vec<u8>, std::time::SystemTime) {
    let bytes = std::fs::read(p).expect("read");
    let mtime = std::fs::metadata(p)
        .and_then(|m| m.modified())
        .expect("mtime");
    (bytes, mtime)
}

#[test]
fn a_journal_is_inspected_read_only_as_text_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let (report, journal) = run_retry(&store);
    // The run's lock file is removed: inspect must not create one.
    std::fs::remove_file(store.join("run_1.lock")).expect("remove the lock file");
    let before = fingerprint(&journal);

    let text = inspect(&[journal.as_os_str()]);
    assert!(text.status.success(), "{}", stderr(&text));
    let t = stdout(&text);
    for want in [
        "kind:        journal",
        "format:      w6w-sim/journal-2",
        "auth:        none",
        "run:         run_1",
        "workflow:    wf_retry_demo",
        "status:      succeeded",
        "notify           failed     attempt 1  connection_revoked",
        "torn tail:   no",
        "trace seq:   ceiling 0",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }

    let j = inspect_json(&journal);
    assert_eq!(j["format"], "w6w-sim/inspect-1");
    assert_eq!(j["kind"], "journal");
    // The folded RunState is the report's, byte for byte.
    assert_eq!(j["run"], report["run"]);
    assert_eq!(j["summary"]["status"], "succeeded");
    assert_eq!(j["summary"]["clockMs"], report["clockMs"]);
    assert_eq!(j["summary"]["checkpoints"], report["checkpoints"]);
    let cps = j["journal"]["checkpoints"].as_array().expect("checkpoints");
    assert_eq!(Some(cps.len() as u64), report["checkpoints"].as_u64());
    // Numbered 1..=N, on a virtual clock that never goes back.
    for (i, c) in cps.iter().enumerate() {
        assert_eq!(c["n"], json!(i + 1), "{c}");
    }
    let times: Vec<u64> = cps.iter().filter_map(|c| c["clockMs"].as_u64()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(times.last(), report["clockMs"].as_u64().as_ref());
    assert_eq!(j["journal"]["torn"], Value::Null);
    assert_eq!(j["journal"]["authentication"], "none");
    assert_eq!(j["journal"]["bytes"], json!(before.0.len()));

    assert_eq!(fingerprint(&journal), before, "inspect changed the journal");
    assert!(
        !store.join("run_1.lock").exists(),
        "inspect created a lock file"
    );
}

#[test]
fn inspect_reads_a_run_whose_lock_a_live_process_holds_and_leaves_it_held() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let (_, journal) = run_retry(&store);
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(store.join("run_1.lock"))
        .expect("open the lock file");
    lock.try_lock().expect("this test holds the run's lock");
    let out = inspect(&[journal.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("status:      succeeded"));
    // Still ours: another opener is refused.
    let again = std::fs::File::open(store.join("run_1.lock")).expect("open");
    assert!(
        again.try_lock().is_err(),
        "the lock was taken from its holder"
    );
}

#[test]
fn a_torn_tail_is_shown_with_its_offset_and_left_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, journal) = run_retry(&dir.path().join("store"));
    let whole = inspect_json(&journal);
    let cps = whole["journal"]["checkpoints"].as_array().expect("cps");
    let last = cps.last().expect("a last checkpoint");
    let last_at = last["offset"].as_u64().expect("offset");
    let len = std::fs::metadata(&journal).expect("meta").len();
    // Cut the last record in the middle: the append a killed process never finished.
    let cut = last_at + (len - last_at) / 2;
    let torn = dir.path().join("torn.journal");
    let mut bytes = std::fs::read(&journal).expect("read");
    bytes.truncate(cut as usize);
    std::fs::write(&torn, &bytes).expect("write");
    let before = fingerprint(&torn);

    let j = inspect_json(&torn);
    assert_eq!(
        j["journal"]["torn"],
        json!({"offset": last_at, "bytes": cut - last_at})
    );
    assert_eq!(
        j["journal"]["checkpoints"].as_array().map(Vec::len),
        Some(cps.len() - 1)
    );
    assert_eq!(j["summary"]["status"], "running");
    let t = stdout(&inspect(&[torn.as_os_str()]));
    assert!(
        t.contains(&format!(
            "torn tail:   yes, {} bytes at offset {last_at}",
            cut - last_at
        )),
        "{t}"
    );
    assert_eq!(fingerprint(&torn), before, "inspect cut the torn tail");
}

#[test]
fn a_damaged_middle_record_is_refused_with_the_file_and_its_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, journal) = run_retry(&dir.path().join("store"));
    let whole = inspect_json(&journal);
    let cps = whole["journal"]["checkpoints"].as_array().expect("cps");
    let mid = &cps[cps.len() / 2];
    let at = mid["offset"].as_u64().expect("offset");
    let mut bytes = std::fs::read(&journal).expect("read");
    // A byte of the record's JSON, past its frame header and kind.
    bytes[at as usize + 12] ^= 0x01;
    let damaged = dir.path().join("damaged.journal");
    std::fs::write(&damaged, &bytes).expect("write");
    let before = fingerprint(&damaged);
    for args in [
        vec![damaged.as_os_str()],
        vec!["--json".as_ref(), damaged.as_os_str()],
    ] {
        let out = inspect(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(out.stdout.is_empty(), "{}", stdout(&out));
        let e = stderr(&out);
        assert!(
            e.contains(&format!("{}: offset {at}:", damaged.display())),
            "{e}"
        );
        assert!(e.contains("[run_file_corrupt]"), "{e}");
    }
    assert_eq!(fingerprint(&damaged), before);
}

#[test]
fn a_report_a_run_state_and_other_files_are_told_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (report, _) = run_retry(&dir.path().join("store"));
    let rp = dir.path().join("report.json");
    std::fs::write(&rp, report.to_string()).expect("write");
    let j = inspect_json(&rp);
    assert_eq!(j["kind"], "report");
    assert_eq!(j["run"], report["run"]);
    assert_eq!(j["journal"], Value::Null);
    assert_eq!(j["summary"]["checkpoints"], report["checkpoints"]);

    let sp = dir.path().join("state.json");
    std::fs::write(&sp, report["run"].to_string()).expect("write");
    let j = inspect_json(&sp);
    assert_eq!(j["kind"], "runState");
    assert_eq!(j["run"], report["run"]);
    assert_eq!(j["summary"]["checkpoints"], Value::Null);

    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"hello": 1}"#).expect("write");
    let out = inspect(&[other.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("[inspect_not_a_run]"),
        "{}",
        stderr(&out)
    );

    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, [0xffu8, 0, 1, 2]).expect("write");
    let out = inspect(&[junk.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[inspect_unrecognized]"),
        "{}",
        stderr(&out)
    );
}

const PIN: &str = "4711-9382-5521";
const KEY: &str = "Kq93vLx0Zt7mWb2Nc8Rd5Yp1Hs6Jf4Ge";
const OTHER_KEY: &str = "uT5nB8vC2xZ9mQ4wE7rY1pL6kJ3hG0fD";

/// A run whose first step reads a secret, and whose output is computed from it.
fn secret_run(dir: &Path, key: Option<&Path>) -> (Value, PathBuf) {
    let wf = dir.join("wf.json");
    std::fs::write(
        &wf,
        json!({"manifestVersion": "2", "id": "wf_pin", "name": "pin", "steps": [
            {"id": "a", "uses": {"app": "bank", "action": "check"}, "with": {"pin": "{{ secrets.PIN }}", "note": "pin {{ secrets.PIN }}"}},
            {"id": "b", "uses": {"app": "bank", "action": "pay"}, "with": {"amount": 100, "ref": "{{ steps.a.output.echo }}"}}
        ], "edges": [{"from": "a", "to": "b"}]})
        .to_string(),
    )
    .expect("write");
    let sc = dir.join("sc.json");
    std::fs::write(
        &sc,
        json!({"runId": "run_1", "secrets": {"PIN": PIN},
               "actions": {"a": {"outcomes": [{"output": {"echo": PIN, "n": 4}}]}}})
        .to_string(),
    )
    .expect("write");
    let store = dir.join("store");
    let mut c = bin();
    c.arg("run")
        .arg(&wf)
        .arg("--scenario")
        .arg(&sc)
        .arg("--store")
        .arg(&store)
        .env_remove("W6W_SEALING_KEY");
    if let Some(k) = key {
        c.arg("--key-file").arg(k);
    }
    let report = crate::support::report(&c.output().expect("spawn"));
    (report, store.join("run_1.journal"))
}

fn no_secret(out: &Output) {
    let all = format!("{}{}", stdout(out), stderr(out));
    for needle in [PIN, "4711", "9382", "5521", KEY, OTHER_KEY] {
        assert!(
            !all.contains(needle),
            "{needle:?} in inspect output:\n{all}"
        );
    }
}

#[test]
fn a_secret_never_appears_and_an_authenticated_journal_says_whether_it_was_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Without a key: journal-2, the secret redacted as in the report.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    let (report, journal) = secret_run(&plain, None);
    for args in [
        vec![journal.as_os_str()],
        vec!["--json".as_ref(), journal.as_os_str()],
    ] {
        let out = inspect(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        no_secret(&out);
    }
    assert_eq!(inspect_json(&journal)["run"], report["run"]);

    // With a key: journal-3.
    let keyed = dir.path().join("keyed");
    std::fs::create_dir(&keyed).expect("mkdir");
    let key = dir.path().join("key");
    std::fs::write(&key, KEY).expect("write");
    let other = dir.path().join("other.key");
    std::fs::write(&other, OTHER_KEY).expect("write");
    let (report, journal) = secret_run(&keyed, Some(&key));
    let before = fingerprint(&journal);

    let out = inspect(&[journal.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    no_secret(&out);
    assert!(
        stdout(&out).contains("auth:        NOT VERIFIED"),
        "{}",
        stdout(&out)
    );
    let j = inspect_json(&journal);
    assert_eq!(j["journal"]["format"], "w6w-sim/journal-3");
    assert_eq!(j["journal"]["authentication"], "unverified");
    assert_eq!(j["run"], report["run"]);

    let out = inspect(&["--key-file".as_ref(), key.as_os_str(), journal.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    no_secret(&out);
    assert!(
        stdout(&out).contains("auth:        verified"),
        "{}",
        stdout(&out)
    );
    let out = bin()
        .args(["inspect", "--json"])
        .arg(&journal)
        .env("W6W_SEALING_KEY", KEY)
        .output()
        .expect("spawn");
    no_secret(&out);
    assert_eq!(json_of(&out)["journal"]["authentication"], "verified");

    let out = inspect(&[
        "--key-file".as_ref(),
        other.as_os_str(),
        journal.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    no_secret(&out);
    assert!(
        stderr(&out).contains("[sealing_key_wrong]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fingerprint(&journal), before);
}

#[test]
fn the_text_view_of_a_fixed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, journal) = run_retry(&dir.path().join("store"));
    let out = inspect(&[journal.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out).replace(&journal.display().to_string(), "STORE/run_1.journal");
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("inspect_retry_journal_text", text);
    });
}
