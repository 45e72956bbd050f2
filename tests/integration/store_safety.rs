//! Issue 44 item 6 end to end: a damaged journal is refused, never shortened (D-210); a
//! `--trace` file that cannot be written fails the command (D-211); a symbolic link planted
//! in the store directory is refused, never followed (D-212); a finished run reads from a
//! store without creating anything in it (D-213).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{bin, example};

use serde_json::{Value, json};

/// `w6w-sim ARGS…`, run to its end.
fn cli(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    bin()
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("spawn")
}

/// A chain of eight echo steps, run `run_s`: enough records for a middle one.
fn chain() -> (Value, Value) {
    let steps: Vec<Value> = (0..8)
        .map(|i| json!({"id": format!("s{i}"), "uses": {"app": "demo", "action": "echo"}, "with": {"i": i}}))
        .collect();
    (
        json!({"manifestVersion": "2", "id": "wf_chain", "name": "chain", "steps": steps}),
        json!({"runId": "run_s"}),
    )
}

struct Files {
    dir: tempfile::TempDir,
    wf: PathBuf,
    sc: PathBuf,
    store: PathBuf,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().expect("tempdir");
        let (wf, sc) = chain();
        let p = |name: &str| dir.path().join(name);
        std::fs::write(p("wf.json"), wf.to_string()).expect("write");
        std::fs::write(p("sc.json"), sc.to_string()).expect("write");
        std::fs::create_dir(p("store")).expect("store dir");
        Files {
            wf: p("wf.json"),
            sc: p("sc.json"),
            store: p("store"),
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn in_store(&self, name: &str) -> PathBuf {
        self.store.join(name)
    }

    /// `run` (or `resume`) of the chain on the store.
    fn command(&self, verb: &str) -> Command {
        let mut c = bin();
        c.arg(verb).arg(&self.wf);
        if verb == "resume" {
            c.args(["--run", "run_s"]);
        }
        c.arg("--scenario")
            .arg(&self.sc)
            .arg("--store")
            .arg(&self.store);
        c
    }

    /// A run killed (aborted) right after checkpoint `n`, left for `resume`.
    fn killed_after(&self, n: u32) {
        let out = self
            .command("run")
            .env("W6W_SIM_ABORT_AFTER_CHECKPOINT", n.to_string())
            .output()
            .expect("spawn");
        assert!(!out.status.success(), "the process was aborted");
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The byte offsets of a journal's records (after the 8-byte magic).
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offs = Vec::new();
    let mut off = 8;
    while off + 8 <= bytes.len() {
        offs.push(off);
        let len = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]]);
        off += 8 + len as usize;
    }
    offs
}

/// D-210: one flipped bit in a middle record's length field used to read as a torn tail:
/// `resume` exited 0, cut every later acknowledged record off and invoked their steps
/// again. Now it is refused with the offset, before anything runs, the file untouched.
#[test]
fn resume_refuses_a_journal_whose_middle_record_length_points_past_the_end() {
    let f = Files::new();
    f.killed_after(6);
    let journal = f.in_store("run_s.journal");
    let mut bytes = std::fs::read(&journal).expect("journal");
    let offs = record_offsets(&bytes);
    assert!(offs.len() >= 6, "{} records", offs.len());
    let victim = offs[offs.len() / 2];
    bytes[victim + 2] ^= 0x04; // + 256 KiB: past the end of this small file
    std::fs::write(&journal, &bytes).expect("damage");
    let trace = f.path("trace.jsonl");
    let out = f
        .command("resume")
        .arg("--trace")
        .arg(&trace)
        .output()
        .expect("spawn");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("offset {victim}")), "{err}");
    assert!(err.contains("run_file_corrupt"), "{err}");
    assert!(err.contains("not a torn tail"), "{err}");
    assert!(out.stdout.is_empty(), "no report: nothing ran");
    assert_eq!(
        std::fs::read(&journal).expect("journal"),
        bytes,
        "the damaged journal is left as it was"
    );
    let traced = std::fs::read_to_string(&trace).unwrap_or_default();
    assert!(!traced.contains("invoke"), "nothing was invoked: {traced}");
}

/// D-211: a full disk under `--trace` used to give exit 0 and a truncated trace. Every
/// command that writes a trace now fails (exit 2) and names the file; the report is still
/// printed, since the run happened.
#[cfg(target_os = "linux")]
#[test]
fn a_trace_write_failure_fails_run_replay_and_resume() {
    let full = Path::new("/dev/full");
    assert!(full.exists(), "this test needs /dev/full");
    let check = |what: &str, out: &Output| {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("cannot write the trace file /dev/full"),
            "{what}: {err}"
        );
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: the report is still printed: {e}"));
        assert!(report["run"].is_object(), "{what}");
    };
    let f = Files::new();
    let out = cli(&[&"run", &f.wf, &"--scenario", &f.sc, &"--trace", &full]);
    check("run", &out);
    let report = f.path("report.json");
    std::fs::write(&report, &out.stdout).expect("write");
    let out = cli(&[
        &"replay",
        &f.wf,
        &"--run",
        &report,
        &"--scenario",
        &f.sc,
        &"--trace",
        &full,
    ]);
    check("replay", &out);
    f.killed_after(3);
    let out = f
        .command("resume")
        .arg("--trace")
        .arg(full)
        .output()
        .expect("spawn");
    check("resume", &out);
    let out = cli(&[
        &"run",
        &example("order.woml.xml"),
        &"--scenario",
        &example("order.scenario.json"),
        &"--trace",
        &full,
    ]);
    check("run (WOML)", &out);
    // The same commands with a writable trace exit 0.
    let out = cli(&[
        &"run",
        &f.wf,
        &"--scenario",
        &f.sc,
        &"--trace",
        &f.path("t.jsonl"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// D-212: a symbolic link planted at the run's lock, temp or journal path made a run
/// truncate or overwrite the file it points to, outside the store. Each is refused,
/// naming the link, and the file outside is byte-identical afterwards.
#[cfg(unix)]
#[test]
fn a_symlink_planted_in_the_store_is_refused_and_its_target_left_alone() {
    let f = Files::new();
    let outside = f.path("outside.txt");
    let original = b"precious bytes outside the store\n".repeat(10);
    std::fs::write(&outside, &original).expect("write");
    for (name, verb) in [
        ("run_s.lock", "run"),
        (".run_s.journal.tmp", "run"),
        ("run_s.journal", "resume"),
    ] {
        let link = f.in_store(name);
        std::os::unix::fs::symlink(&outside, &link).expect("symlink");
        let out = f.command(verb).output().expect("spawn");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("{}: is a symbolic link", link.display())),
            "{name}: {err}"
        );
        assert!(err.contains("store_link"), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: no report");
        assert_eq!(
            std::fs::read(&outside).expect("outside"),
            original,
            "{name}: the file outside the store was changed"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("still there")
                .file_type()
                .is_symlink(),
            "{name}: the link was replaced"
        );
        std::fs::remove_file(&link).expect("remove link");
        for entry in std::fs::read_dir(&f.store).expect("store") {
            std::fs::remove_file(entry.expect("entry").path()).expect("clean");
        }
    }
    // Without a link the same run succeeds, and a stale temp file a killed writer left
    // (a regular file) does not stop the next one.
    std::fs::write(f.in_store(".run_s.journal.tmp"), b"half a snapshot").expect("write");
    let out = f.command("run").output().expect("spawn");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// D-213: a finished run read from a store directory this process cannot write: `resume`
/// used to fail creating the lock file. It now prints the finished run's report and
/// creates nothing; an unfinished run there is refused (without the lock another process
/// may be running it). As root, permissions are not enforced, so the commands run as
/// `nobody` (`setpriv`).
#[cfg(unix)]
#[test]
fn a_finished_run_reads_from_a_store_that_cannot_be_written() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = Files::new();
    let finished = f.command("run").output().expect("spawn");
    assert_eq!(finished.status.code(), Some(0), "{}", stderr(&finished));
    let finished: Value = serde_json::from_slice(&finished.stdout).expect("report");
    let unfinished = f.path("unfinished.json");
    std::fs::write(&unfinished, json!({"runId": "run_u"}).to_string()).expect("write");
    let out = bin()
        .arg("run")
        .arg(&f.wf)
        .arg("--scenario")
        .arg(&unfinished)
        .arg("--store")
        .arg(&f.store)
        .env("W6W_SIM_ABORT_AFTER_CHECKPOINT", "2")
        .output()
        .expect("spawn");
    assert!(!out.status.success(), "aborted");
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
    };
    for entry in std::fs::read_dir(&f.store).expect("store") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "lock") {
            std::fs::remove_file(&path).expect("no lock files: a reader would need one");
        } else {
            mode(&path, 0o444);
        }
    }
    for p in [&f.wf, &f.sc, &unfinished] {
        mode(p, 0o444);
    }
    mode(f.dir.path(), 0o755);
    mode(&f.store, 0o555);
    let listing = || {
        let mut names: Vec<(String, Vec<u8>)> = std::fs::read_dir(&f.store)
            .expect("store")
            .map(|e| {
                let p = e.expect("entry").path();
                let name = p.file_name().unwrap_or_default().to_string_lossy().into();
                (name, std::fs::read(&p).expect("read"))
            })
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let root = std::fs::metadata(f.dir.path()).expect("meta").uid() == 0;
    let reader = |args: &[&std::ffi::OsStr]| -> Output {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_w6w-sim"));
            c
        } else {
            bin()
        };
        c.args(args)
            .output()
            .expect("spawn (as root this needs setpriv)")
    };
    let os = |p: &Path| p.as_os_str().to_owned();
    let (wf, sc, store) = (os(&f.wf), os(&f.sc), os(&f.store));
    let out = reader(&[
        "resume".as_ref(),
        &wf,
        "--run".as_ref(),
        "run_s".as_ref(),
        "--scenario".as_ref(),
        &sc,
        "--store".as_ref(),
        &store,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("report");
    assert_eq!(report["run"], finished["run"]);
    let journal = os(&f.in_store("run_s.journal"));
    let out = reader(&[
        "replay".as_ref(),
        &wf,
        "--run".as_ref(),
        &journal,
        "--scenario".as_ref(),
        &sc,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = reader(&[
        "resume".as_ref(),
        &wf,
        "--run".as_ref(),
        "run_u".as_ref(),
        "--scenario".as_ref(),
        &os(&unfinished),
        "--store".as_ref(),
        &store,
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("store_read_only"), "{err}");
    assert!(err.contains("only a finished run is read"), "{err}");
    assert!(out.stdout.is_empty(), "no report for an unfinished run");
    assert_eq!(listing(), before, "reading created or changed nothing");
    mode(&f.store, 0o755);
}
