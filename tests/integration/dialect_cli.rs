//! `w6w-sim validate | import | run` on WOML and YAML documents, end to end: output, the
//! `--json` shape (the w6w one plus `line`, `column`, `clause`) and exit codes (0 valid,
//! 1 invalid, 2 usage / I/O).

use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("UTF-8")
}

fn write(dir: &tempfile::TempDir, name: &str, body: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, body).expect("write");
    p.to_string_lossy().into_owned()
}

#[test]
fn validate_recognises_dialects_by_extension_and_reports_positions() {
    let out = run(&[
        "validate",
        "examples/order.woml.xml",
        "examples/helpdesk.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("examples/order.woml.xml: valid (woml)"));

    let dir = tempfile::tempdir().expect("tmp");
    let bad = write(
        &dir,
        "bad.xml",
        b"<workflow>\n  <steps>\n    <step id=\"a\" retry=\"12\"><script>1</script></step>\n  </steps>\n</workflow>\n",
    );
    let out = run(&["validate", "--json", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let line: Value = serde_json::from_str(text(&out.stdout).trim()).expect("one JSON line");
    assert_eq!(line["ok"], false);
    let e = &line["errors"][0];
    assert_eq!(e["status"], 400);
    assert_eq!(e["code"], "invalid_retry");
    assert_eq!(e["clause"], "WOML-5");
    assert_eq!(e["path"], "/workflow/steps/step[1]/@retry");
    assert_eq!(
        (e["line"].as_u64(), e["column"].as_u64()),
        (Some(3), Some(18))
    );

    let human = run(&["validate", &bad]);
    assert!(
        text(&human.stdout).contains("bad.xml:3:18:"),
        "{}",
        text(&human.stdout)
    );

    // --dialect forces a dialect whatever the extension.
    let yaml_as_txt = write(&dir, "w.txt", b"steps:\n  - a:\n      x.y: {}\n");
    assert_eq!(
        run(&["validate", "--dialect", "yaml", &yaml_as_txt])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn invalid_utf8_and_missing_files_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = write(
        &dir,
        "b.yaml",
        b"steps:\n  - a:\n      x.y: {q: \"\xff\"}\n",
    );
    let out = run(&["validate", "--json", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let line: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(line["errors"][0]["code"], "invalid_utf8");
    assert_eq!(line["errors"][0]["line"], 3);
    assert_eq!(run(&["validate", "missing.yaml"]).status.code(), Some(2));
    assert_eq!(run(&["import", "missing.xml"]).status.code(), Some(2));
    assert_eq!(
        run(&["import", "--dialect", "toml", "x.xml"]).status.code(),
        Some(2)
    );
}

#[test]
fn import_prints_the_w6w_workflow_and_refuses_unsupported_constructs_by_line() {
    let out = run(&["import", "examples/order.woml.xml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let wf: Value = serde_json::from_str(&text(&out.stdout)).expect("workflow JSON");
    assert_eq!(wf["manifestVersion"], "2");
    assert_eq!(wf["steps"][2]["retry"]["x-w6w-maxDelayMs"], 1500);
    assert!(text(&out.stderr).contains("note:"), "notes on stderr");

    let dir = tempfile::tempdir().expect("tmp");
    let doc = write(
        &dir,
        "c.woml",
        b"<workflow>\n  <steps>\n    <step id=\"a\"><script>1</script></step>\n    <switch/>\n  </steps>\n</workflow>\n",
    );
    let out = run(&["import", &doc]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("c.woml:4:5:")
            && err.contains("unsupported_construct")
            && err.contains("<switch>"),
        "{err}"
    );
}

/// D-237, D-238: `validate` judges the document against its text; `--runnable` also
/// refuses, by line, what the simulator cannot run.
#[test]
fn validate_judges_the_document_and_runnable_what_can_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let yaml = write(
        &dir,
        "c.yaml",
        b"steps:\n  - a:\n      x.y: {}\n  - pick:\n      choose: {}\n",
    );
    let woml = write(
        &dir,
        "c.woml",
        b"<workflow>\n  <steps>\n    <step id=\"a\"><script>1</script></step>\n    <fork/>\n  </steps>\n</workflow>\n",
    );
    for (doc, at, construct) in [(&yaml, ":5:7:", "choose"), (&woml, ":4:5:", "<fork>")] {
        let out = run(&["validate", doc]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        let out = run(&["validate", "--runnable", doc]);
        assert_eq!(out.status.code(), Some(1));
        let said = text(&out.stdout);
        assert!(
            said.contains(at) && said.contains("unsupported_construct") && said.contains(construct),
            "{said}"
        );
    }
}

#[test]
fn run_takes_a_dialect_document_and_the_scenario_manifest() {
    let out = run(&[
        "run",
        "examples/helpdesk.yaml",
        "--scenario",
        "examples/helpdesk.scenario.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("report");
    assert_eq!(report["dialect"], "yaml");
    assert_eq!(report["run"]["steps"]["notify"]["status"], "failed");
    assert_eq!(report["run"]["status"], "succeeded");

    let dir = tempfile::tempdir().expect("tmp");
    let scenario = write(
        &dir,
        "s.json",
        br#"{"manifest": {"actions": {"helpdesk.new_ticket": {"input": {"type": "object", "properties": {}}}}}}"#,
    );
    let doc = write(
        &dir,
        "t.yaml",
        b"steps:\n  - t:\n      helpdesk.new_ticket:\n        queue: tier1\n",
    );
    let out = run(&["run", &doc, "--scenario", &scenario]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the manifest refuses the unknown argument"
    );
    assert!(
        text(&out.stderr).contains("param_invalid"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 44 item 5 (D-260): a dialect run's journal records its document; resuming it
/// with another document — another dialect's, or the `import`ed w6w JSON, which runs
/// other retry rules — is refused before anything runs.
#[test]
fn a_dialect_run_resumes_only_from_the_document_that_started_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let doc = crate::support::example("order.woml.xml");
    let sc = crate::support::example("order.scenario.json");
    let out = crate::support::bin()
        .env("W6W_SIM_ABORT_AFTER_CHECKPOINT", "2")
        .arg("run")
        .arg(&doc)
        .arg("--scenario")
        .arg(&sc)
        .arg("--store")
        .arg(&store)
        .output()
        .expect("run");
    assert!(!out.status.success(), "the abort hook killed the run");
    let imported = crate::support::bin()
        .arg("import")
        .arg(&doc)
        .output()
        .expect("import");
    let json_wf = dir.path().join("order.json");
    std::fs::write(&json_wf, &imported.stdout).expect("write");
    for other in [crate::support::example("triage.yaml"), json_wf] {
        let out = crate::support::bin()
            .arg("resume")
            .arg(&other)
            .arg("--scenario")
            .arg(&sc)
            .arg("--store")
            .arg(&store)
            .args(["--run", "run_1"])
            .output()
            .expect("resume");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", other.display());
        assert!(
            err.contains("run_not_resumable") && err.contains("woml document with sha256"),
            "{err}"
        );
    }
    let out = crate::support::bin()
        .arg("resume")
        .arg(&doc)
        .arg("--scenario")
        .arg(&sc)
        .arg("--store")
        .arg(&store)
        .args(["--run", "run_1"])
        .output()
        .expect("resume");
    let report = crate::support::report(&out);
    assert_eq!(report["run"]["status"], "succeeded");
    assert_eq!(report["dialect"], "woml");
    assert!(
        !report["result"].is_null(),
        "WOML-13's result survives the resume"
    );
    // replay takes the document and its journal too.
    let out = crate::support::bin()
        .arg("replay")
        .arg(&doc)
        .arg("--scenario")
        .arg(&sc)
        .arg("--run")
        .arg(store.join("run_1.journal"))
        .output()
        .expect("replay");
    let replayed = crate::support::report(&out);
    assert_eq!(replayed["result"], report["result"]);
    let out = crate::support::bin()
        .arg("replay")
        .arg(crate::support::example("triage.yaml"))
        .arg("--scenario")
        .arg(&sc)
        .arg("--run")
        .arg(store.join("run_1.journal"))
        .output()
        .expect("replay");
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 44 item 2 (D-262): a validation error on `run`'s path never quotes a document
/// value equal to a scenario secret, in any dialect.
#[test]
fn run_validation_errors_never_quote_a_scenario_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "hunter2-very-secret";
    let sc = dir.path().join("sc.json");
    std::fs::write(
        &sc,
        serde_json::json!({"runId": "r", "secrets": {"PW": secret}}).to_string(),
    )
    .expect("write");
    let docs = [
        (
            "wf.json",
            serde_json::json!({"id": "w", "manifestVersion": "2", "steps": [
                {"id": secret, "type": "nope"}]})
            .to_string(),
        ),
        (
            "wf.yaml",
            format!("name: w\nsteps:\n  - id: a\n    {secret}: 1\n"),
        ),
        (
            "wf.woml.xml",
            format!(
                "<workflow id=\"w\"><steps><step id=\"a\" retry=\"{secret}\"><script>return 1</script></step></steps></workflow>"
            ),
        ),
    ];
    for (name, text) in docs {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let out = crate::support::bin()
            .arg("run")
            .arg(&path)
            .arg("--scenario")
            .arg(&sc)
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(!err.contains(secret), "{name} quotes the secret: {err}");
        assert!(
            !err.contains("aHVudGVyMi12ZXJ5LXNlY3JldA"),
            "{name}: base64 of the secret: {err}"
        );
    }
}

/// Issue 40 (D-283): the example's scripts run deterministically — the same scenario gives
/// a byte-identical report and trace, run after run.
#[test]
fn a_woml_run_with_scripts_is_byte_identical_run_after_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let once = |n: usize| {
        let trace = dir.path().join(format!("t{n}.jsonl"));
        let out = crate::support::bin()
            .arg("run")
            .arg(crate::support::example("order.woml.xml"))
            .arg("--scenario")
            .arg(crate::support::example("order.scenario.json"))
            .arg("--trace")
            .arg(&trace)
            .output()
            .expect("run");
        crate::support::report(&out);
        (out.stdout, std::fs::read(&trace).expect("trace"))
    };
    let first = once(1);
    assert_eq!(first, once(2));
    let trace = String::from_utf8_lossy(&first.1);
    assert!(trace.contains("\"event\":\"scriptCall\""), "{trace}");
    assert!(trace.contains("\"event\":\"console\""), "{trace}");
}

/// Issue 40 (D-284): `--no-scripts` keeps script steps carried, not executed — an
/// unscripted step echoes its inputs and no call is made; so does `"scripts": {"run":
/// false}`.
#[test]
fn no_scripts_keeps_scripts_carried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = write(
        &dir,
        "a.woml.xml",
        b"<workflow><steps><step id=\"a\"><script>throw new Error('ran');</script></step></steps></workflow>",
    );
    let ran = write(&dir, "ran.json", b"{}");
    let off = write(&dir, "off.json", br#"{"scripts": {"run": false}}"#);
    let report = |args: &[&str]| {
        let out = run(args);
        serde_json::from_slice::<Value>(&out.stdout).expect("a report")
    };
    let r = report(&["run", &doc, "--scenario", &ran]);
    assert_eq!(r["run"]["steps"]["a"]["error"]["code"], "script_threw");
    assert_eq!(r["run"]["steps"]["a"]["error"]["message"], "Error: ran");
    for r in [
        report(&["run", &doc, "--scenario", &ran, "--no-scripts"]),
        report(&["run", &doc, "--scenario", &off]),
    ] {
        assert_eq!(r["run"]["status"], "succeeded", "{r}");
        assert!(
            r["run"]["steps"]["a"]["output"]["context"].is_object(),
            "{r}"
        );
        assert!(r["invocations"][0].get("script").is_none(), "{r}");
    }
}
