//! `w6w-sim conformance` and `w6w-sim adapter serve` end to end: the same cases through the
//! in-process reference and through the process protocol give the same results; broken
//! adapters and broken case files give honest red reports, never a hang.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use w6w_sim::__internals::conformance::clause_catalogue;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn fixture_cases() -> String {
    data("cases").display().to_string()
}

fn serve_command() -> String {
    format!("'{BIN}' adapter serve")
}

fn sh_adapter(name: &str) -> String {
    format!("sh '{}'", data(&format!("adapters/{name}.sh")).display())
}

fn conformance(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("conformance")
        .args(args)
        .output()
        .expect("w6w-sim runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_report(args: &[&str]) -> (Value, i32) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = conformance(&all);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json is JSON ({e}): {}{}", stdout(&out), stderr(&out)));
    (v, out.status.code().expect("exit code"))
}

/// (id, passed, failures) of every case: what must agree across hosts.
fn per_case(report: &Value) -> Vec<(String, bool, Vec<String>)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let failures = c["failures"]
                .as_array()
                .expect("failures")
                .iter()
                .map(|f| f.as_str().expect("string").to_owned())
                .collect();
            (
                c["id"].as_str().expect("id").to_owned(),
                c["passed"].as_bool().expect("passed"),
                failures,
            )
        })
        .collect()
}

/// Whether a JSON report's case needs a run (`op.run` / `op.replay`).
fn effectful(case: &Value) -> bool {
    case["requires"]
        .as_array()
        .is_some_and(|r| r.iter().any(|n| n == "op.run" || n == "op.replay"))
}

/// The pure ops answer alike in process and through `adapter serve`; `run` / `replay`
/// through the adapter protocol would be self-reported (D-102), so `adapter serve`
/// declares a profile without them and those cases are not applicable — never passed.
#[test]
fn the_process_adapter_gives_the_same_results_as_the_in_process_reference() {
    let serve = serve_command();
    let fixtures = fixture_cases();
    // The bundled suite (whatever state it is in) and the fixture with a red case.
    for extra in [vec![], vec!["--cases", fixtures.as_str()]] {
        let (inproc, inproc_code) = json_report(&extra);
        // The report's verdict is the exit status's.
        assert_eq!(inproc["allPassed"], json!(inproc_code == 0), "{extra:?}");
        let mut args = extra.clone();
        args.extend(["--adapter", serve.as_str()]);
        let (process, process_code) = json_report(&args);
        let pure = |r: &Value| -> Vec<(String, bool, Vec<String>)> {
            let ids: Vec<&str> = r["cases"]
                .as_array()
                .expect("cases")
                .iter()
                .filter(|c| !effectful(c))
                .map(|c| c["id"].as_str().expect("id"))
                .collect();
            per_case(r)
                .into_iter()
                .filter(|(id, _, _)| ids.contains(&id.as_str()))
                .collect()
        };
        assert_eq!(pure(&inproc), pure(&process), "{extra:?}");
        assert!(!pure(&inproc).is_empty());
        for case in process["cases"].as_array().expect("cases") {
            if effectful(case) {
                assert_eq!(case["status"], "notApplicable", "{case}");
            }
        }
        let effectful_count = process["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| effectful(c))
            .count();
        assert!(
            effectful_count > 0 || !extra.is_empty(),
            "the suite has runs"
        );
        assert_eq!(process["totals"]["notApplicable"], json!(effectful_count));
        assert_eq!(
            process["capabilities"],
            json!(["*", "-op.replay", "-op.run"])
        );
        assert_eq!(inproc["implementation"], process["implementation"]);
        let failed = process["totals"]["failed"].as_u64().expect("failed");
        assert_eq!(process_code, i32::from(failed > 0), "{extra:?}");
        assert_eq!(process["allPassed"], json!(failed == 0), "{extra:?}");
    }
    let (fixture, code) = json_report(&["--cases", &fixtures, "--adapter", &serve]);
    assert_eq!(code, 1, "a failing case makes the exit status 1");
    assert_eq!(
        fixture["totals"],
        json!({"cases": 3, "passed": 2, "failed": 1, "notApplicable": 0})
    );
    assert_eq!(
        (&fixture["judged"], &fixture["allPassed"]),
        (&json!(3), &json!(false))
    );
    // The same adapter made to claim runs (`--capabilities` overrides the ack): every
    // effectful case fails, naming the seams that observe what a run does.
    let (claimed, code) = json_report(&[
        "--clause",
        "RETRY-1",
        "--adapter",
        &serve,
        "--capabilities",
        "*",
    ]);
    assert_eq!(code, 1);
    let cases = claimed["cases"].as_array().expect("cases");
    assert!(!cases.is_empty());
    for case in cases {
        assert!(effectful(case), "{case}");
        assert_eq!(case["status"], "failed", "{case}");
        let why = case["failures"][0].as_str().expect("a failure");
        assert!(
            why.starts_with("self_reported: ")
                && why.contains("--engine")
                && why.contains("--host"),
            "{why}"
        );
    }
    let (reference, code) = json_report(&["--clause", "RETRY-1"]);
    assert_eq!(
        code, 0,
        "the same cases pass against the reference: {reference}"
    );
}

#[test]
fn the_text_report_lists_every_clause_failures_timing_and_the_closing_line() {
    let out = conformance(&["--cases", &fixture_cases()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"2 passed, 1 failed"));
    for (id, _) in clause_catalogue() {
        let row = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no row for {id}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        match id.as_str() {
            "PLAN-4" | "PLAN-3" | "RUN-1" => assert_eq!(cols[1..], ["1", "1", "0"], "{row}"),
            "PLAN-5" => assert_eq!(cols[1..], ["1", "0", "1", "FAILED"], "{row}"),
            _ => assert_eq!(cols[1..], ["0", "0", "0", "no", "cases"], "{row}"),
        }
    }
    assert!(text.contains("  fixture-deliberately-wrong [PLAN-5] (fixture.json)"));
    assert!(text.contains("    - ok: expected [\"b\",\"a\"], got [\"a\",\"b\"]"));
    let timing = lines[lines.len() - 2];
    assert!(
        timing.starts_with("3 cases in ") && timing.ends_with(" cases/s"),
        "{timing}"
    );
    assert!(
        stderr(&out).is_empty(),
        "no progress indicator when stderr is not a terminal: {:?}",
        stderr(&out)
    );
}

#[test]
fn clause_and_case_filters_select_cases_and_rows() {
    let f = fixture_cases();
    let (v, code) = json_report(&["--cases", &f, "--clause", "PLAN-4"]);
    assert_eq!(code, 0);
    assert_eq!(v["totals"]["cases"], 1);
    assert_eq!(v["clauses"].as_array().map(Vec::len), Some(1));
    let (v, _) = json_report(&["--cases", &f, "--clause", "plan"]);
    assert_eq!(v["totals"]["cases"], 3);
    assert!(
        v["clauses"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["clause"].as_str().is_some_and(|c| c.starts_with("PLAN-")))
    );
    let (v, _) = json_report(&["--cases", &f, "--clause", "RUN", "--clause", "PLAN-3"]);
    assert_eq!(v["totals"]["cases"], 2);
    let (v, code) = json_report(&["--cases", &f, "--case", "cycle"]);
    assert_eq!((v["totals"]["cases"].clone(), code), (json!(1), 0));
    for bad in [
        vec!["--clause", "RETYR"],
        vec!["--clause", "RETRY-999"],
        vec!["--case", "no-such-case"],
    ] {
        let mut args = vec!["--cases", f.as_str()];
        args.extend(bad.iter());
        let out = conformance(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(stdout(&out).is_empty(), "{bad:?}");
    }
}

#[test]
fn junit_has_one_testcase_per_case_with_clauses_and_the_diff() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("junit.xml");
    let out = conformance(&[
        "--cases",
        &fixture_cases(),
        "--junit",
        path.to_str().expect("utf-8"),
        "--adapter",
        &sh_adapter("wrong"),
        "--diff-reference",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let xml = std::fs::read_to_string(&path).expect("junit written");
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert_eq!(xml.matches("<testcase ").count(), 3);
    assert_eq!(xml.matches("<failure ").count(), 3);
    assert!(
        xml.contains(
            "<testcase name=\"fixture-chain-order\" classname=\"w6w.conformance.fixture\""
        )
    );
    assert!(xml.contains("<property name=\"clause\" value=\"RUN-1\"/>"));
    assert!(xml.contains("name=\"w6w conformance: wrong-adapter 0.0.1\""));
    // The expectation diff, XML-escaped.
    assert!(
        xml.contains("/ok: - [&quot;c&quot;,&quot;a&quot;,&quot;b&quot;]  + &quot;wrong&quot;"),
        "{xml}"
    );
    let bad_dir = dir.path().join("missing/junit.xml");
    let out = conformance(&[
        "--cases",
        &fixture_cases(),
        "--clause",
        "PLAN-4",
        "--junit",
        bad_dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2), "an unwritable JUnit file");
    assert!(stderr(&out).contains("cannot write the JUnit report"));
}

#[test]
fn a_wrong_adapter_is_red_with_the_differing_field() {
    let out = conformance(&[
        "--cases",
        &fixture_cases(),
        "--adapter",
        &sh_adapter("wrong"),
        "--diff-reference",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.starts_with("w6w conformance suite against wrong-adapter 0.0.1\n"));
    assert_eq!(text.lines().last(), Some("0 passed, 3 failed"));
    assert!(text.contains("    - ok: expected [\"c\",\"a\",\"b\"], got \"wrong\""));
    assert!(text.contains("      /ok: - [\"c\",\"a\",\"b\"]  + \"wrong\""));
    assert!(text.contains("      /error: - {\"code\":\"invalid_workflow\""));
}

/// Run a broken adapter; every case fails with a message containing each of `needles`.
fn assert_all_red(adapter: &str, extra: &[&str], needles: &[&str]) {
    #[allow(clippy::disallowed_methods)] // real time: a broken adapter must fail fast, not hang
    let started = Instant::now();
    let mut args = vec!["--cases", "", "--adapter", adapter];
    let f = fixture_cases();
    args[1] = &f;
    args.extend_from_slice(extra);
    let (v, code) = json_report(&args);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{adapter} took {:?}",
        started.elapsed()
    );
    assert_eq!(code, 1, "{adapter}");
    assert_eq!(
        v["totals"],
        json!({"cases": 3, "passed": 0, "failed": 3, "notApplicable": 0}),
        "{adapter}"
    );
    for c in v["cases"].as_array().expect("cases") {
        assert_eq!(c["adapterFailed"], true, "{c}");
        let msg = c["failures"][0].as_str().expect("message");
        for n in needles {
            assert!(msg.contains(n), "{adapter}: {msg:?} lacks {n:?}");
        }
    }
}

/// Issue 12 item 7: an adapter that answers then hangs cannot outlast `--deadline`; the
/// report names the deadline.
#[test]
fn the_overall_deadline_ends_a_hanging_adapter_run() {
    assert_all_red(
        &sh_adapter("silent"),
        &["--timeout-ms", "60000", "--deadline", "1"],
        &[],
    );
    let f = fixture_cases();
    let (v, _) = json_report(&[
        "--cases",
        &f,
        "--adapter",
        &sh_adapter("silent"),
        "--timeout-ms",
        "60000",
        "--deadline",
        "1",
    ]);
    let last = v["cases"][2]["failures"][0].as_str().unwrap_or_default();
    assert!(last.contains("deadline of 1 s passed"), "{last}");
}

/// D-209: `--deadline` bounds an `--engine` or `--host` run as it bounds an `--adapter`
/// one — a candidate that answers the hello and then stays silent costs at most the
/// deadline, not `--timeout-ms` per case, and every case left fails naming it.
#[test]
fn the_overall_deadline_ends_a_silent_engine_or_host_run() {
    let silent = format!(
        "sh '{}'",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/context/silent-candidate.sh")
            .display()
    );
    let f = fixture_cases();
    let engine = ["--cases", &f, "--engine", &silent];
    let host = ["--clause", "RUN-2", "--generate", "0", "--host", &silent];
    for seam in [&engine[..], &host[..]] {
        let mut args = seam.to_vec();
        args.extend_from_slice(&["--timeout-ms", "60000", "--deadline", "1"]);
        let (v, code) = json_report(&args);
        assert_eq!(code, 1, "{seam:?}");
        let cases = v["cases"].as_array().expect("cases");
        let judged: Vec<&Value> = cases
            .iter()
            .filter(|c| c["status"] != "notApplicable")
            .collect();
        assert!(judged.len() >= 3, "{seam:?}: {v}");
        assert!(judged.iter().all(|c| c["passed"] == false), "{seam:?}");
        let last = judged.last().map(|c| c.to_string()).unwrap_or_default();
        assert!(last.contains("deadline of 1 s passed"), "{seam:?}: {last}");
    }
}

/// Issue 12 item 7: whatever the adapter forked is killed with it.
#[cfg(unix)]
#[test]
fn the_adapters_whole_process_group_is_killed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("helper.pid");
    let adapter = format!("{} '{}'", sh_adapter("forker"), pidfile.display());
    let (_, code) = json_report(&["--cases", &fixture_cases(), "--adapter", &adapter]);
    assert_eq!(code, 1);
    let pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
    let pid = pid.trim();
    assert!(!pid.is_empty(), "the helper was started");
    let mut gone = false;
    for _ in 0..200 {
        // Gone, or a zombie waiting for init to reap it: dead either way.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone, "the adapter's helper {pid} outlived the suite");
}

/// Issue 12 item 7: a flood of blank lines and a 2 MB answer neither exhaust memory nor
/// land whole in the report: a bounded prefix is kept.
#[test]
fn a_huge_answer_is_kept_as_a_bounded_prefix() {
    let f = fixture_cases();
    let (v, code) = json_report(&["--cases", &f, "--adapter", &sh_adapter("flood")]);
    assert_eq!(code, 1);
    let r = &v["cases"][0]["response"];
    assert_eq!(
        r["truncated"],
        true,
        "{}",
        &r.to_string()[..200.min(r.to_string().len())]
    );
    assert!(r["bytes"].as_u64().unwrap_or(0) > 1_000_000);
    assert!(r["prefix"].as_str().map_or(usize::MAX, str::len) <= 64 * 1024);
}

#[test]
fn a_crashing_adapter_is_red_with_its_exit_status_and_stderr() {
    assert_all_red(
        &sh_adapter("crash"),
        &[],
        &["exited (exit status: 3)", "boom: simulated crash"],
    );
}

#[test]
fn a_silent_adapter_times_out_and_is_given_up_on() {
    let (v, _) = json_report(&[
        "--cases",
        &fixture_cases(),
        "--adapter",
        &sh_adapter("silent"),
        "--timeout-ms",
        "200",
    ]);
    let msgs: Vec<&str> = v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["failures"][0].as_str().expect("message"))
        .collect();
    // Three timeouts in a row (each on a fresh process), then no more restarts.
    assert!(
        msgs[0].contains("adapter timeout: no answer within 200 ms"),
        "{msgs:?}"
    );
    assert_all_red(&sh_adapter("silent"), &["--timeout-ms", "200"], &["200 ms"]);
}

#[test]
fn a_garbled_or_mute_adapter_or_one_without_the_protocol_is_red() {
    assert_all_red(&sh_adapter("garbled"), &[], &["not JSON", "DEBUG handling"]);
    assert_all_red(
        &sh_adapter("no-hello"),
        &[],
        &["adapter handshake", "Welcome to some other program"],
    );
    assert_all_red(
        &sh_adapter("mute"),
        &["--startup-timeout-ms", "200"],
        &["adapter handshake", "ack to the hello"],
    );
}

/// D-376: an adapter whose ack declares no capabilities has every case, and every generated
/// workflow, not applicable: nothing is judged, so the run is not a pass — exit 1, and the
/// report says why above the closing line. With a profile that keeps one case in, the same
/// adapter is judged on it as usual.
#[test]
fn an_adapter_whose_profile_leaves_everything_out_is_not_a_pass() {
    let adapter = sh_adapter("empty-profile");
    let out = conformance(&["--adapter", &adapter, "--clause", "PLAN-1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Nothing was judged: every selected case and generated workflow was outside the profile (none)"),
        "{text}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("0 passed, 0 failed, ") && last.ends_with(" not applicable"),
        "{last}"
    );
    // The JSON report carries the verdict, not only totals of zero.
    let (v, code) = json_report(&["--adapter", &adapter, "--clause", "PLAN-1"]);
    assert_eq!(
        (code, &v["judged"], &v["allPassed"]),
        (1, &json!(0), &json!(false))
    );
    // The whole suite and its generated workflows: still nothing judged, still exit 1.
    let out = conformance(&["--adapter", &adapter, "--generate", "3", "--seed", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // A profile that lets the pure ops in: those are judged (the adapter answers `true`
    // to everything, so they fail), and the run is judged by its failures again.
    let out = conformance(&[
        "--adapter",
        &adapter,
        "--clause",
        "PLAN-1",
        "--capabilities",
        "*",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !stdout(&out).contains("Nothing was judged"),
        "{}",
        stdout(&out)
    );
}

/// D-376: a host that starts but fails its handshake is a broken candidate, judged like a
/// bad adapter: exit 1, the cases that need it failed naming the handshake. A host command
/// that cannot start at all stays a usage error (exit 2).
#[test]
fn a_host_that_fails_its_handshake_is_judged_not_a_usage_error() {
    let host = sh_adapter("no-ready-host");
    let out = conformance(&["--host", &host, "--clause", "RUN-3"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("host handshake: the first line is not JSON"),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("0 passed, ")),
        "{text}"
    );
    let out = conformance(&["--host", "/nonexistent/host", "--clause", "RUN-3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn an_adapter_that_cannot_start_is_a_usage_error() {
    for cmd in ["/nonexistent/host-adapter", "'unterminated", ""] {
        let out = conformance(&["--cases", &fixture_cases(), "--adapter", cmd]);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(stderr(&out).contains("adapter spawn"), "{}", stderr(&out));
    }
}

#[test]
fn malformed_case_files_name_the_file_and_the_json_pointer() {
    let out = conformance(&["--cases", data("bad-cases").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for needle in [
        "broken.json: at /cases/1/expects: unknown field \"expects\"",
        "broken.json: at /cases/1/clauses/1: \"RETRY-99\" is not a clause ID",
        "broken.json: at /cases/1: missing field \"expect\"",
        "broken.json: at /cases/2/expect/count/0/pointer: \"invocations\" is not a JSON Pointer",
        "broken.json: at /cases/2/expect/count/0: count needs \"equals\"",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    let out = conformance(&["--cases", data("bad-syntax").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("syntax.json: not valid JSON (line 3, column 15)"),
        "{}",
        stderr(&out)
    );
    let out = conformance(&["--cases", data("no-such-dir").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read the case directory"));
}

/// The worked transcript in docs/adapter-protocol.md is real: every `→` line sent to
/// `w6w-sim adapter serve` gets exactly the `←` line that follows it.
#[test]
fn the_documented_transcript_is_what_adapter_serve_says() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/adapter-protocol.md"),
    )
    .expect("docs/adapter-protocol.md");
    let start = doc.find("<!-- transcript -->").expect("transcript marker");
    let block = &doc[start..];
    let block = &block[block.find("```").expect("fence") + 3..];
    let block = &block[block.find('\n').expect("newline") + 1..];
    let block = &block[..block.find("```").expect("closing fence")];
    let mut sent = String::new();
    let mut expected = Vec::new();
    for line in block.lines() {
        if let Some(l) = line.strip_prefix("→ ") {
            sent.push_str(l);
            sent.push('\n');
        } else if let Some(l) = line.strip_prefix("← ") {
            expected.push(serde_json::from_str::<Value>(l).expect("← line is JSON"));
        }
    }
    assert!(expected.len() >= 4, "transcript too short");
    let mut child = Command::new(BIN)
        .args(["adapter", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(sent.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("serve exits at EOF");
    assert!(out.status.success());
    let got: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn one_crash_costs_one_case_because_the_adapter_is_restarted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("crashed-once");
    let adapter = format!("{} '{}' '{BIN}'", sh_adapter("flaky"), marker.display());
    let (v, code) = json_report(&["--cases", &fixture_cases(), "--adapter", &adapter]);
    assert_eq!(code, 1);
    let results: Vec<(bool, bool)> = v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| (c["passed"] == true, c["adapterFailed"] == true))
        .collect();
    // Case 1: the crash. Case 2: the restarted adapter answers correctly. Case 3: answered,
    // and red only because its expectation is deliberately wrong.
    assert_eq!(
        results,
        [(false, true), (true, false), (false, false)],
        "{v}"
    );
    assert!(
        v["cases"][0]["failures"][0]
            .as_str()
            .is_some_and(|m| m.contains("crashing on purpose")),
        "{v}"
    );
}

#[test]
fn generated_workflows_are_counted_and_a_selection_turns_them_off() {
    let (v, code) = json_report(&["--generate", "5", "--seed", "100"]);
    assert_eq!(code, 0);
    assert_eq!(v["generated"]["count"], 5);
    assert_eq!(v["generated"]["failed"], 0);
    let out = conformance(&["--case", "retry-auth"]);
    let text = stdout(&out);
    assert!(
        !text.contains("Generated workflows (seeds"),
        "a --case selection runs no generated workflows unless asked"
    );
    assert!(
        text.contains("No generated workflows: --case selects cases only"),
        "and says so: {text}"
    );
}

#[test]
fn shards_split_cases_and_generated_seeds_into_a_partition() {
    let json_of = |args: &[&str]| -> Value {
        let out = conformance(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON report")
    };
    let ids = |v: &Value| -> Vec<String> {
        v["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let whole = json_of(&["--clause", "RUN", "--generate", "9", "--json"]);
    let mut union = Vec::new();
    let mut generated = 0;
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let part = json_of(&[
            "--clause",
            "RUN",
            "--generate",
            "9",
            "--json",
            "--seed",
            "6",
            "--shard",
            &shard,
        ]);
        assert_eq!(part["generated"]["shard"], shard.as_str());
        generated += part["generated"]["count"].as_u64().expect("count");
        union.extend(ids(&part));
    }
    let mut expected = ids(&whole);
    expected.sort();
    let n = union.len();
    union.sort();
    union.dedup();
    assert_eq!(union.len(), n, "no case runs in two shards");
    assert_eq!(union, expected, "together the shards run every case");
    assert_eq!(generated, 9, "every generated seed in exactly one shard");

    let out = conformance(&["--clause", "RUN", "--shard", "4/3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected K/N"));
    // D-215: every run draws a fresh seed unless told, so shards must be told one.
    let out = conformance(&["--clause", "RUN", "--generate", "3", "--shard", "1/3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shard needs --seed"));
}

/// D-215: without `--seed`, each run draws its generated workflows from a fresh seed and
/// the report says which; `--seed` reproduces it.
#[test]
fn generated_workflows_take_a_fresh_printed_seed_unless_one_is_given() {
    let seed_of = |args: &[&str]| -> u64 {
        let (v, code) = json_report(args);
        assert_eq!(code, 0, "{v}");
        v["generated"]["seed"]
            .as_u64()
            .expect("the report prints the seed")
    };
    let args = ["--clause", "PLAN-1", "--generate", "2"];
    let (a, b) = (seed_of(&args), seed_of(&args));
    assert_ne!(a, b, "a fresh seed each run");
    let again = a.to_string();
    let pinned = [
        "--clause",
        "PLAN-1",
        "--generate",
        "2",
        "--seed",
        again.as_str(),
    ];
    assert_eq!(seed_of(&pinned), a, "--seed reproduces it");
}

/// Issue 9 item 7: a repro command names the candidate that was tested, for every seam.
#[test]
fn rerun_commands_name_the_engine_or_host_that_was_tested() {
    let engine = format!("'{BIN}' engine serve");
    let out = conformance(&["--cases", &fixture_cases(), "--engine", &engine]);
    assert_eq!(out.status.code(), Some(1), "the fixture has a wrong case");
    let text = stdout(&out);
    let rerun = text
        .lines()
        .find(|l| l.trim_start().starts_with("rerun: "))
        .unwrap_or_else(|| panic!("no rerun line: {text}"));
    assert!(
        rerun.contains(" --engine ") && rerun.contains("engine serve"),
        "{rerun}"
    );
}

/// The campaign the merge test shards: two families and 12 generated workflows.
const CAMPAIGN: [&str; 8] = [
    "--clause",
    "RETRY",
    "--clause",
    "PLAN",
    "--generate",
    "12",
    "--seed",
    "9",
];

/// Issue 13 item 5: `w6w-sim merge` joins the shards' `--json` reports into the report one
/// unsharded run prints (timing aside), writes JUnit, and refuses part of a campaign.
#[test]
fn merge_joins_the_shards_into_the_unsharded_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let mut args = CAMPAIGN.to_vec();
        args.extend(["--shard", &shard, "--json"]);
        let out = conformance(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let file = dir.path().join(format!("s{k}.json"));
        std::fs::write(&file, &out.stdout).expect("write");
        files.push(file.display().to_string());
    }
    let junit = dir.path().join("merged.xml");
    let mut args = vec![
        "merge".to_owned(),
        "--junit".into(),
        junit.display().to_string(),
    ];
    args.extend(files.iter().cloned());
    let merged = Command::new(BIN).args(&args).output().expect("runs");
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let whole = conformance(&CAMPAIGN);
    let untimed = |o: &Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| !l.contains(" cases/s"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(untimed(&merged), untimed(&whole));
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("generated-9\""), "{xml}");

    let partial = Command::new(BIN)
        .args(["merge", &files[0], &files[2]])
        .output()
        .expect("runs");
    assert_eq!(partial.status.code(), Some(2));
    assert!(
        stderr(&partial).contains("2/3 missing"),
        "{}",
        stderr(&partial)
    );
}

/// The report without what a clock decides: elapsed times and speeds.
fn timeless(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains(" cases/s"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn timeless_json(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| k != "elapsedMs" && k != "casesPerSecond");
            m.values_mut().for_each(timeless_json);
        }
        Value::Array(a) => a.iter_mut().for_each(timeless_json),
        _ => {}
    }
}

/// Issue 38 item 7 (D-222): `--jobs N` judges on N candidates at once and prints the report
/// `--jobs 1` prints, save its timings — for the reference in threads, and for a process
/// engine whose sessions are salted from one session seed, with failures and generated
/// workflows in the mix.
#[test]
fn jobs_change_nothing_but_the_clock() {
    // An engine that leaks a secret into a log line fails the SEC-1 cases it is given.
    let leaky =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/context/leaky-engine.js");
    let engine = format!("node '{}' log '{BIN}' engine serve", leaky.display());
    for extra in [
        vec!["--generate", "30", "--seed", "7"],
        vec![
            "--engine",
            &engine,
            "--session-seed",
            "11",
            "--clause",
            "RETRY",
            "--clause",
            "RUN-3",
            "--clause",
            "SEC-1",
            "--generate",
            "6",
            "--seed",
            "3",
            "--capabilities",
            "op.run,op.replay,templates",
        ],
    ] {
        let run = |jobs: &str, json: bool| {
            let mut args = extra.clone();
            args.extend(["--jobs", jobs]);
            if json {
                args.push("--json");
            }
            let out = conformance(&args);
            assert!(out.status.code().is_some_and(|c| c < 2), "{}", stderr(&out));
            stdout(&out)
        };
        let one = run("1", false);
        assert!(one.contains("passed"), "{one}");
        if extra.contains(&"--engine") {
            assert!(one.contains("SEC-1:"), "the leaky engine fails: {one}");
        }
        // Two workers for the text, three for the JSON: each report against `--jobs 1`.
        assert_eq!(timeless(&one), timeless(&run("2", false)), "--jobs 2");
        let mut a: Value = serde_json::from_str(&run("1", true)).expect("json");
        let mut b: Value = serde_json::from_str(&run("3", true)).expect("json");
        timeless_json(&mut a);
        timeless_json(&mut b);
        assert_eq!(a, b);
    }
}

#[test]
fn jobs_on_a_host_need_a_store_per_process() {
    let out = conformance(&["--host", "node host.js --dir /tmp/x", "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("{job}"), "{}", stderr(&out));
    let out = conformance(&["--jobs", "0"]);
    assert_eq!(out.status.code(), Some(2));
}
