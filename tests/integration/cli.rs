//! The `w6w-sim` binary end to end: `validate`, `plan` and `eval`, their output and exit
//! codes (0 valid, 1 invalid, 2 usage / I/O / JSON syntax).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
    }
    child.wait_with_output().expect("the binary finishes")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("UTF-8 stderr")
}

fn temp_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    f.write_all(text.as_bytes()).expect("write temp file");
    f
}

fn path_str(f: &tempfile::NamedTempFile) -> &str {
    f.path().to_str().expect("UTF-8 temp path")
}

const SHAPE: &str = "tests/data/rfc/workflow-shape.json";
const BROKEN: &str = "tests/data/broken-workflow.json";
const CYCLIC: &str = "tests/data/cyclic-workflow.json";

#[test]
fn validate_a_valid_file_exits_0() {
    let out = run(&["validate", SHAPE], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{SHAPE}: valid\n"));
}

#[test]
fn validate_every_rfc_example_workflow() {
    let dir = Path::new(ROOT).join("tests/data/rfc");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("workflow-"))
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut args = vec!["validate", "--runnable"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args, None);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).ends_with(&format!("{n} of {n} files valid\n", n = files.len())));
}

#[test]
fn validate_broken_workflow_report_snapshot() {
    let human = run(&["validate", BROKEN], None);
    assert_eq!(code(&human), 1);
    let machine = run(&["validate", "--json", BROKEN], None);
    assert_eq!(code(&machine), 1);
    let line: Value = serde_json::from_str(stdout(&machine).trim_end()).expect("one JSON line");
    assert_eq!(stdout(&machine).lines().count(), 1);
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("validate_broken_workflow_human", stdout(&human));
        insta::assert_json_snapshot!("validate_broken_workflow_json", line);
    });
}

#[test]
fn validate_json_prints_one_line_per_file() {
    let out = run(&["validate", "--json", SHAPE, BROKEN, SHAPE], None);
    assert_eq!(code(&out), 1);
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], json!({"file": SHAPE, "ok": true, "errors": []}));
    assert_eq!(lines[1]["ok"], false);
    assert_eq!(lines[1]["file"], BROKEN);
    for e in lines[1]["errors"].as_array().expect("errors") {
        assert_eq!(e["status"], 400);
        assert!(e["code"].is_string() && e["path"].is_string() && e["message"].is_string());
    }
    assert_eq!(lines[2]["ok"], true);
}

#[test]
fn validate_unreadable_and_non_json_files_exit_2() {
    let missing = run(&["validate", "tests/data/no-such-file.json"], None);
    assert_eq!(code(&missing), 2);
    assert!(stderr(&missing).contains("tests/data/no-such-file.json: cannot read"));

    let bad = temp_file("{\n  \"manifestVersion\": \"2\",\n  \"id\": wf\n}\n");
    let out = run(&["validate", path_str(&bad)], None);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:3:9: not valid JSON", path_str(&bad))),
        "{err}"
    );

    let out = run(&["validate", "--json", path_str(&bad)], None);
    assert_eq!(code(&out), 2);
    let line: Value = serde_json::from_str(stdout(&out).trim_end()).expect("JSON line");
    assert_eq!(line["ok"], false);
    assert_eq!(line["error"]["code"], "json_syntax");
    assert_eq!(
        (
            line["error"]["line"].clone(),
            line["error"]["column"].clone()
        ),
        (json!(3), json!(9))
    );
}

#[test]
fn validate_an_unreadable_file_outranks_an_invalid_one() {
    let out = run(
        &["validate", BROKEN, "tests/data/no-such-file.json", SHAPE],
        None,
    );
    assert_eq!(code(&out), 2);
    assert!(stdout(&out).contains("1 of 3 files valid, 1 invalid, 1 could not be checked"));
}

#[test]
fn validate_usage_errors_exit_2() {
    assert_eq!(code(&run(&["validate"], None)), 2);
    assert_eq!(code(&run(&["validate", "--bogus", SHAPE], None)), 2);
    assert_eq!(code(&run(&["plan"], None)), 2);
    assert_eq!(code(&run(&["frobnicate"], None)), 2);
}

#[test]
fn plan_9_validate_runnable_rejects_drafts() {
    let draft = temp_file(
        r#"{"manifestVersion": "2", "id": "w", "name": "w", "steps": [{"id": "a", "uses": {"action": "y"}}]}"#,
    );
    let out = run(&["validate", path_str(&draft)], None);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let out = run(
        &["validate", "--runnable", "--json", path_str(&draft)],
        None,
    );
    assert_eq!(code(&out), 1);
    let line: Value = serde_json::from_str(stdout(&out).trim_end()).expect("JSON line");
    assert_eq!(line["errors"][0]["code"], "missing_field");
    assert_eq!(line["errors"][0]["path"], "/steps/0/uses/app");

    let empty = temp_file(r#"{"manifestVersion": "2", "id": "w", "name": "w", "steps": []}"#);
    assert_eq!(code(&run(&["validate", path_str(&empty)], None)), 0);
    let out = run(
        &["validate", "--runnable", "--json", path_str(&empty)],
        None,
    );
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains(r#""code":"no_steps""#));
}

#[test]
fn model_5_validate_previous_skips_the_grammar_for_a_stored_key() {
    let doc =
        r#"{"manifestVersion": "2", "id": "w", "name": "w", "key": "Legacy_Key", "steps": []}"#;
    let file = temp_file(doc);
    let out = run(&["validate", "--json", path_str(&file)], None);
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains(r#""code":"invalid_key""#));
    let out = run(
        &["validate", "--previous", path_str(&file), path_str(&file)],
        None,
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let no_key =
        temp_file(r#"{"manifestVersion": "2", "id": "w", "name": "w", "key": null, "steps": []}"#);
    let out = run(
        &["validate", "--previous", path_str(&no_key), path_str(&file)],
        None,
    );
    assert_eq!(code(&out), 1);
}

#[test]
fn plan_prints_the_order_as_a_json_array() {
    let out = run(&["plan", SHAPE], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "[\"fetch\",\"post\"]\n");
    let doc = r#"{"manifestVersion": "2", "id": "w", "name": "w",
        "steps": [{"id": "c"}, {"id": "b"}, {"id": "a"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]}"#;
    let out = run(&["plan", "-"], Some(doc));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).expect("JSON"),
        json!(["a", "b", "c"])
    );
}

#[test]
fn plan_of_an_invalid_workflow_exits_1_with_the_errors() {
    let out = run(&["plan", CYCLIC], None);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("[cycle]"), "{err}");
    assert!(err.contains(r#""loop-1" → "loop-2" → "loop-1""#), "{err}");
    assert!(!err.contains(r#""after""#), "{err}");
    let out = run(&["plan", BROKEN], None);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("[duplicate_step_id]"));
    let out = run(&["plan", "tests/data/no-such-file.json"], None);
    assert_eq!(code(&out), 2);
}

#[test]
fn eval_answers_every_line_in_order_and_never_aborts() {
    let valid = r#"{"manifestVersion":"2","id":"w","name":"w","steps":[{"id":"b"},{"id":"a"}],"edges":[{"from":"a","to":"b"}]}"#;
    let input = [
        format!(r#"{{"op":"validate","workflow":{valid}}}"#),
        "this is not json".to_owned(),
        format!(r#"{{"op":"plan","workflow":{valid}}}"#),
        r#"{"op":"no-such-op"}"#.to_owned(),
        r#"{"op":"validate","workflow":{"manifestVersion":"2","id":"w","name":"w","steps":[{"id":"a.b"}]}}"#.to_owned(),
        format!(r#"{{"op":"validate","runnable":true,"workflow":{valid}}}"#),
    ]
    .join("\n");
    let out = run(&["eval"], Some(&input));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0], json!({"ok": true}));
    assert_eq!(lines[1]["error"]["code"], "bad_request");
    assert_eq!(lines[2], json!({"ok": ["a", "b"]}));
    assert_eq!(lines[3]["error"]["code"], "bad_request");
    assert_eq!(
        lines[4],
        json!({"error": {"code": "invalid_workflow", "message": lines[4]["error"]["message"],
            "errors": [{"status": 400,
            "code": "dotted_step_id", "path": "/steps/0/id",
            "message": lines[4]["error"]["errors"][0]["message"]}]}})
    );
    assert_eq!(lines[5]["error"]["errors"][0]["path"], "/steps/0/uses");
    // Issue 12 item 6: every error response has a code and a message.
    for l in &lines {
        if let Some(e) = l.get("error") {
            assert!(e["code"].is_string() && e["message"].is_string(), "{l}");
        }
    }
    assert!(
        lines[4]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("/steps/0/id")),
        "{}",
        lines[4]
    );
}

/// D-214: a blank or whitespace-only line is answered `bad_request` like any other bad
/// line (it used to get no answer, so a client counting lines waited forever).
#[test]
fn eval_answers_a_blank_line_with_bad_request() {
    let input = "\n   \n{\"op\":\"logic\",\"logic\":{\"+\":[1,2]},\"data\":{}}\n\t\r\n";
    let out = run(&["eval"], Some(input));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 4, "one answer per line: {lines:?}");
    for i in [0, 1, 3] {
        assert_eq!(lines[i]["error"]["code"], "bad_request", "line {i}");
        assert!(
            lines[i]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("blank request line")),
            "line {i}: {}",
            lines[i]
        );
    }
    assert_eq!(lines[2], json!({"ok": 3}));
}

/// Issue 12 item 6: a line of invalid UTF-8, a request with a duplicate key and an
/// overlong line each get `bad_request`, and the service carries on.
#[test]
fn eval_survives_invalid_utf8_and_refuses_duplicate_keys() {
    let mut input: Vec<u8> = Vec::new();
    input.extend_from_slice(b"{\"op\":\"logic\",\"logic\":\"\xff\xfe\",\"data\":{}}\n");
    input.extend_from_slice(b"\xc3\x28\n");
    input.extend_from_slice(
        br#"{"op":"validate","workflow":{"manifestVersion":"2","id":"w","name":"w","steps":[{"id":"a"}],"steps":[]}}"#,
    );
    input.push(b'\n');
    input.extend_from_slice(br#"{"op":"logic","logic":{"+":[1,2]},"data":{}}"#);
    input.push(b'\n');
    let mut child = Command::new(BIN)
        .arg("eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(&input).expect("write stdin");
    }
    let out = child.wait_with_output().expect("the binary finishes");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0]["error"]["code"], "bad_request");
    assert_eq!(lines[1]["error"]["code"], "bad_request");
    assert_eq!(lines[2]["error"]["code"], "bad_request");
    assert_eq!(lines[2]["error"]["path"], "/workflow/steps", "{}", lines[2]);
    assert_eq!(lines[3], json!({"ok": 3}));
}
