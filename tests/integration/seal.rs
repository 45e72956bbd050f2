//! Issue 44 item 1 end to end (D-250…D-253): the sealing key comes from the operator
//! (`--key-file`, `W6W_SEALING_KEY`), never from the secrets; without one nothing keyed is
//! stored; a killed run resumes with its key and is refused with another or none; an
//! envelope from another run never opens; a changed journal is refused with its offset; key
//! material is never printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::bin;

/// The operator's key material (random-looking, ≥ 32 bytes).
const KEY: &str = "Kq93vLx0Zt7mWb2Nc8Rd5Yp1Hs6Jf4Ge";
/// Another operator's.
const OTHER_KEY: &str = "uT5nB8vC2xZ9mQ4wE7rY1pL6kJ3hG0fD";

/// a is handed the PIN and returns a branch computed from it; its action is declared to
/// return sensitive output (D-275), so the output is secret-derived wholly and sealed; the
/// gate routes on it; `pay` runs only on "pay!".
fn workflow() -> Value {
    json!({"manifestVersion": "2", "id": "wf_pay", "name": "pay", "steps": [
        {"id": "a", "uses": {"app": "bank", "action": "check"}, "with": {"pin": "{{ secrets.PIN }}"}},
        {"id": "gate", "uses": {"app": "@w6w/control", "action": "if"},
         "with": {"condition": {"$expr": {"==": [{"var": "steps.a.output.branch"}, "pay!"]}}}},
        {"id": "pay", "uses": {"app": "bank", "action": "pay"}, "with": {"amount": 100}}
    ], "edges": [{"from": "a", "to": "gate"}, {"from": "gate", "to": "pay"}]})
}

fn scenario(branch: &str) -> Value {
    json!({"runId": "run_1", "secrets": {"PIN": "4711"},
           "actions": {"a": {"sensitiveOutput": true,
                             "outcomes": [{"output": {"branch": branch, "n": 4}}]}}})
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let f = Files {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        f.write("wf.json", &workflow().to_string());
        f.write("key", KEY);
        f.write("other.key", OTHER_KEY);
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    /// `VERB wf.json --scenario SC --store STORE` (+ `--run run_1` for resume).
    fn command(&self, verb: &str, sc: &Path, store: &Path) -> Command {
        let mut c = bin();
        c.arg(verb).arg(self.path("wf.json"));
        if verb == "resume" {
            c.args(["--run", "run_1"]);
        }
        c.arg("--scenario").arg(sc).arg("--store").arg(store);
        c.env_remove("W6W_SEALING_KEY");
        c
    }
}

fn run(c: &mut Command) -> Output {
    c.output().expect("spawn")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn report(out: &Output) -> Value {
    assert!(out.status.success(), "{}", text(out));
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn invoked(report: &Value, step: &str) -> usize {
    report["invocations"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|i| i["stepId"] == step).count())
}

/// D-250: without key material nothing in the store is keyed — no envelope, no tag — so
/// nothing can confirm a guess of the PIN; with a key file the output is sealed and the
/// journal authenticated.
#[test]
fn without_a_key_the_store_holds_nothing_keyed_and_with_one_it_seals_and_authenticates() {
    let f = Files::new();
    let sc = f.write("sc.json", &scenario("pay!").to_string());
    let plain = f.path("plain");
    let out = run(&mut f.command("run", &sc, &plain));
    assert_eq!(invoked(&report(&out), "pay"), 1);
    let journal = std::fs::read(plain.join("run_1.journal")).expect("journal");
    let journal = String::from_utf8_lossy(&journal);
    assert!(!journal.contains("encryptedOutput"), "{journal}");
    assert!(!journal.contains("4711"), "{journal}");
    assert!(journal.contains("w6w-sim/journal-2"));

    let keyed = f.path("keyed");
    let out = run(f
        .command("run", &sc, &keyed)
        .arg("--key-file")
        .arg(f.path("key")));
    assert_eq!(invoked(&report(&out), "pay"), 1);
    let journal = std::fs::read(keyed.join("run_1.journal")).expect("journal");
    let journal = String::from_utf8_lossy(&journal);
    assert!(journal.contains("\"encryptedOutput\":\"v2."), "{journal}");
    assert!(journal.contains("\"sealId\""), "{journal}");
    assert!(journal.contains("w6w-sim/journal-3"));
    assert!(!journal.contains("4711"), "{journal}");
    assert!(!journal.contains(KEY), "the key material is never stored");
}

/// D-251, D-252: a run killed after a's end resumes with its key (the gate reads the
/// sealed branch, `pay` runs once, a is not invoked again); with no key or another key the
/// resume is refused with a clear code, nothing runs, and no key is printed.
#[test]
fn a_killed_run_resumes_with_its_key_and_is_refused_with_another_or_none() {
    let f = Files::new();
    let sc = f.write("sc.json", &scenario("pay!").to_string());
    let store = f.path("store");
    let killed = run(f
        .command("run", &sc, &store)
        .arg("--key-file")
        .arg(f.path("key"))
        .env("W6W_SIM_ABORT_AFTER_CHECKPOINT", "3"));
    assert!(!killed.status.success(), "the process was aborted");
    let before = std::fs::read(store.join("run_1.journal")).expect("journal");

    let none = run(&mut f.command("resume", &sc, &store));
    assert!(!none.status.success());
    assert!(
        text(&none).contains("sealing_key_required"),
        "{}",
        text(&none)
    );
    let other = run(f
        .command("resume", &sc, &store)
        .arg("--key-file")
        .arg(f.path("other.key")));
    assert!(!other.status.success());
    assert!(
        text(&other).contains("sealing_key_wrong"),
        "{}",
        text(&other)
    );
    for out in [&none, &other, &killed] {
        let t = text(out);
        assert!(!t.contains(KEY) && !t.contains(OTHER_KEY), "{t}");
    }
    assert_eq!(
        std::fs::read(store.join("run_1.journal")).expect("journal"),
        before,
        "a refused resume changes nothing"
    );

    // The right key, from the environment this time.
    let resumed = run(f.command("resume", &sc, &store).env("W6W_SEALING_KEY", KEY));
    let r = report(&resumed);
    assert_eq!(r["run"]["status"], "succeeded", "{r}");
    assert_eq!(r["run"]["steps"]["pay"]["status"], "succeeded", "{r}");
    assert_eq!((invoked(&r, "a"), invoked(&r, "pay")), (1, 1), "{r}");
    assert!(!text(&resumed).contains(KEY));
}

/// D-251: an envelope copied from another run — same workflow, same run id, same key,
/// another store — never opens: the victim's replay from the gate reads "[redacted]" and
/// does not pay, where the other run's own replay does. Put into the victim's journal it is
/// refused as a changed record, with the offset.
#[test]
fn an_envelope_from_another_run_never_opens_and_a_changed_journal_is_refused() {
    let f = Files::new();
    let victim_sc = f.write("victim.json", &scenario("nope").to_string());
    let other_sc = f.write("other.json", &scenario("pay!").to_string());
    let key = f.path("key");
    let victim = report(&run(f
        .command("run", &victim_sc, &f.path("victim"))
        .arg("--key-file")
        .arg(&key)));
    let other = report(&run(f
        .command("run", &other_sc, &f.path("other"))
        .arg("--key-file")
        .arg(&key)));
    assert_eq!((invoked(&victim, "pay"), invoked(&other, "pay")), (0, 1));
    let envelope = |r: &Value| r["run"]["steps"]["a"]["encryptedOutput"].clone();
    let (theirs, ours) = (envelope(&other), envelope(&victim));
    assert!(theirs.is_string() && ours.is_string(), "{victim}");
    assert_ne!(theirs, ours);

    let replay = |state: &Value, name: &str| {
        let run_file = f.write(name, &state.to_string());
        report(&run(bin()
            .arg("replay")
            .arg(f.path("wf.json"))
            .arg("--run")
            .arg(&run_file)
            .arg("--scenario")
            .arg(&victim_sc)
            .args(["--from", "gate", "--key-file"])
            .arg(&key)
            .env_remove("W6W_SEALING_KEY")))
    };
    // The other run's record opens in its own run: its replay pays again.
    assert_eq!(invoked(&replay(&other["run"], "theirs.json"), "pay"), 1);
    // Transplanted into the victim's run it does not open.
    let mut transplanted = victim["run"].clone();
    transplanted["steps"]["a"]["encryptedOutput"] = theirs.clone();
    let r = replay(&transplanted, "transplanted.json");
    assert_eq!(invoked(&r, "pay"), 0, "{r}");
    assert_eq!(r["run"]["steps"]["gate"]["status"], "succeeded");

    // Into the victim's journal (same length, checksum fixed): refused with the offset.
    let path = f.path("victim").join("run_1.journal");
    let mut bytes = std::fs::read(&path).expect("journal");
    let (ours, theirs) = (ours.as_str().unwrap_or(""), theirs.as_str().unwrap_or(""));
    assert_eq!(ours.len(), theirs.len());
    let at = bytes
        .windows(ours.len())
        .position(|w| w == ours.as_bytes())
        .expect("the envelope is in the journal");
    bytes[at..at + theirs.len()].copy_from_slice(theirs.as_bytes());
    let mut off = 8;
    let record = loop {
        let len = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]])
            as usize;
        if at < off + 8 + len {
            break off;
        }
        off += 8 + len;
    };
    let len = u32::from_le_bytes([
        bytes[record],
        bytes[record + 1],
        bytes[record + 2],
        bytes[record + 3],
    ]) as usize;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[record..record + 4]);
    h.update(&bytes[record + 8..record + 8 + len]);
    let crc = h.finalize().to_le_bytes();
    bytes[record + 4..record + 8].copy_from_slice(&crc);
    std::fs::write(&path, &bytes).expect("write");
    let out = run(f
        .command("resume", &victim_sc, &f.path("victim"))
        .arg("--key-file")
        .arg(&key));
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("run_file_tampered"), "{t}");
    assert!(t.contains(&format!("offset {record}")), "{t}");
}

/// D-250: key material below the floor — short, a repeated pattern, holding a secret — is
/// refused before anything runs, naming the file or variable and never the material.
#[test]
fn a_short_guessable_or_secret_holding_key_is_refused_without_printing_it() {
    let f = Files::new();
    let sc = f.write("sc.json", &scenario("pay!").to_string());
    let store = f.path("store");
    let cases = [
        ("short.key", "Sh0rt-Key-material", "sealing_key_too_short"),
        (
            "pattern.key",
            "hunter2!hunter2!hunter2!hunter2!",
            "sealing_key_low_entropy",
        ),
        (
            "pin.key",
            "Kq93vLx0Zt7mWb2Nc8Rd5Y4711s6Jf4Ge",
            "sealing_key_holds_a_secret",
        ),
    ];
    for (name, material, code) in cases {
        let path = f.write(name, material);
        for out in [
            run(f.command("run", &sc, &store).arg("--key-file").arg(&path)),
            run(f
                .command("run", &sc, &store)
                .env("W6W_SEALING_KEY", material)),
        ] {
            let t = text(&out);
            assert_eq!(out.status.code(), Some(2), "{t}");
            assert!(t.contains(code), "{t}");
            assert!(
                !t.contains(material) && !t.contains("hunter2") && !t.contains("4711"),
                "{t}"
            );
            assert!(out.stdout.is_empty(), "nothing ran: {t}");
        }
    }
    assert!(!store.join("run_1.journal").exists(), "nothing was stored");
    let missing = run(f
        .command("run", &sc, &store)
        .arg("--key-file")
        .arg(f.path("nope")));
    assert!(
        text(&missing).contains("sealing_key_unreadable"),
        "{}",
        text(&missing)
    );
}
