//! `--html FILE` (issue 41 items 4 and 5), checked in a real headless browser: Chromium
//! from Debian's packages loads each page from disk, and the test reads what the page's
//! script drew (the DOM Chromium dumps) and every console message it logged. A missing
//! `chromium` fails these tests — never a vacuous pass — unless `W6W_SKIP_BROWSER=1`
//! says to skip them knowingly (as `W6W_SKIP_NODE` does for the Node seam tests).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{bin, example, report};

/// Whether to run: `chromium` must be on PATH unless `W6W_SKIP_BROWSER=1`.
fn browser() -> bool {
    if std::env::var("W6W_SKIP_BROWSER").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED: W6W_SKIP_BROWSER=1");
        return false;
    }
    let found = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "`chromium` is not on PATH: the --html pages are checked in a real headless browser \
         (apt-get install chromium, as .ci/run does, or set W6W_SKIP_BROWSER=1 to skip them \
         knowingly)"
    );
    true
}

/// A scratch directory for a browser test, or `None` to skip it (`W6W_SKIP_BROWSER=1`).
fn browser_dir() -> Option<tempfile::TempDir> {
    browser().then(|| tempfile::tempdir().expect("tempdir"))
}

/// What Chromium made of a page: the DOM after its scripts ran, and every console line.
struct Loaded {
    dom: String,
    console: Vec<String>,
}

/// Load `page` in headless Chromium (its own throwaway profile) and dump the DOM; console
/// messages — a script error among them — come on stderr with `--enable-logging`.
fn load(page: &Path) -> Loaded {
    let profile = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", page.display());
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let mut waited = Duration::ZERO;
    while child.try_wait().expect("wait").is_none() {
        if waited > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish loading {url} in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
        waited += Duration::from_millis(20);
    }
    let dom = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    assert!(
        dom.contains("</html>"),
        "no DOM for {url}; stderr:\n{stderr}"
    );
    Loaded { dom, console }
}

/// A page loaded with no console message at all and its script ran to its end.
fn clean(page: &Path) -> Loaded {
    let l = load(page);
    assert!(
        l.console.is_empty(),
        "{}: the console logged:\n{}",
        page.display(),
        l.console.join("\n")
    );
    assert!(
        l.dom.contains("data-rendered=\""),
        "{}: the script did not finish drawing",
        page.display()
    );
    l
}

/// [`clean`] for each page, side by side: the wall time is about one browser start.
fn clean_all(pages: &[&Path]) -> Vec<Loaded> {
    std::thread::scope(|s| {
        let handles: Vec<_> = pages.iter().map(|p| s.spawn(|| clean(p))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("load"))
            .collect()
    })
}

/// The attributes of every opening tag in `dom` that holds `marker`, in document order.
fn tags(dom: &str, marker: &str) -> Vec<BTreeMap<String, String>> {
    let mut found = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find('<') {
        let tail = &rest[i..];
        let end = tail.find('>').unwrap_or(tail.len());
        let tag = &tail[..end];
        if tag.contains(marker) {
            let mut attrs = BTreeMap::new();
            let mut t = tag;
            while let Some(eq) = t.find("=\"") {
                let name = t[..eq].rsplit([' ', '<']).next().unwrap_or("").to_owned();
                let after = &t[eq + 2..];
                let close = after.find('"').unwrap_or(after.len());
                attrs.insert(name, after[..close].to_owned());
                t = &after[(close + 1).min(after.len())..];
            }
            found.push(attrs);
        }
        rest = &tail[end.min(tail.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
    }
    found
}

/// The DOM of the lane whose `data-key` is `key`, from its opening tag to the next lane's.
fn lane(dom: &str, key: &str) -> String {
    let attr = format!("data-key=\"{key}\"");
    dom.split("<div class=\"lane ")
        .skip(1)
        .find(|p| p.split('>').next().is_some_and(|tag| tag.contains(&attr)))
        .unwrap_or_else(|| panic!("no lane {key}"))
        .to_owned()
}

/// `w6w-sim run WF --scenario SC --html PAGE` (and `extra`): the report it printed.
fn run_to(wf: &Path, sc: &Path, page: &Path, extra: &[&std::ffi::OsStr]) -> Value {
    let out = bin()
        .arg("run")
        .arg(wf)
        .arg("--scenario")
        .arg(sc)
        .args(extra)
        .arg("--html")
        .arg(page)
        .env_remove("W6W_SEALING_KEY")
        .output()
        .expect("spawn");
    report(&out)
}

/// The example NAME run with `--html DIR/NAME.html`: its report and the page.
fn run_html(dir: &Path, name: &str) -> (Value, PathBuf) {
    let page = dir.join(format!("{name}.html"));
    let wf = example(&format!("{name}.workflow.json"));
    let r = run_to(&wf, &example(&format!("{name}.scenario.json")), &page, &[]);
    (r, page)
}

/// `w6w-sim ARGS --html PAGE`, which must succeed.
fn write_page<S: AsRef<std::ffi::OsStr>>(args: &[S], page: &Path) {
    let out = bin()
        .args(args)
        .arg("--html")
        .arg(page)
        .env_remove("W6W_SEALING_KEY")
        .output()
        .expect("spawn");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Step ids of the report's run, in its records' order.
fn step_order(report: &Value) -> Vec<String> {
    report["run"]["steps"]
        .as_object()
        .expect("steps")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn a_run_page_shows_every_step_in_order_with_its_attempts_and_crashes() {
    let Some(dir) = browser_dir() else { return };
    let (retry, retry_page) = run_html(dir.path(), "retry");
    let (crash, crash_page) = run_html(dir.path(), "crash-recovery");
    let loaded = clean_all(&[&retry_page, &crash_page]);
    let (a, b) = (&loaded[0], &loaded[1]);
    for (report, loaded) in [(&retry, a), (&crash, b)] {
        let lanes = tags(&loaded.dom, "class=\"lane ");
        let steps: Vec<String> = lanes
            .iter()
            .filter(|t| t.get("data-kind").map(String::as_str) == Some("step"))
            .map(|t| t["data-step"].clone())
            .collect();
        assert_eq!(
            steps,
            step_order(report),
            "the lanes, as the browser drew them"
        );
        assert_eq!(lanes[0]["data-kind"], "run");
        let root = tags(&loaded.dom, "data-rendered=");
        assert_eq!(root[0]["data-rendered"], lanes.len().to_string());
    }
    // retry: fetch took three attempts, two failed, with a backoff before each retry.
    let fetch = lane(&a.dom, "/fetch");
    assert_eq!(fetch.matches("data-kind=\"attempt\"").count(), 3, "{fetch}");
    assert_eq!(fetch.matches("data-outcome=\"failed\"").count(), 2);
    assert_eq!(fetch.matches("data-kind=\"backoff\"").count(), 2);
    let notify = lane(&a.dom, "/notify");
    assert!(notify.contains("the run went on"), "{notify}");
    assert!(a.dom.contains("retrying as attempt 2 of 5 after 1000 ms"));
    // crash-recovery: ship's first attempt was cut by the crash; two crashes, two restarts.
    let ship = lane(&b.dom, "/ship");
    assert_eq!(
        ship.matches("data-outcome=\"crashed\"").count(),
        1,
        "{ship}"
    );
    assert_eq!(ship.matches("data-outcome=\"succeeded\"").count(), 1);
    let run = lane(&b.dom, "run");
    assert_eq!(run.matches("class=\"mark m-crash\"").count(), 2, "{run}");
    assert_eq!(run.matches("class=\"mark m-restart\"").count(), 2);
    assert!(b.dom.contains("crashed 2 times"));
}

#[test]
fn strands_waits_error_routes_and_the_table_pages_draw_in_a_real_browser() {
    let Some(dir) = browser_dir() else { return };
    let (foreach, foreach_page) = run_html(dir.path(), "foreach-failing");
    let (_, wait_page) = run_html(dir.path(), "wait");
    let (_, edges_page) = run_html(dir.path(), "error-edges");
    let table = dir.path().join("conformance.html");
    write_page(&["conformance", "--clause", "RETRY"], &table);
    let loaded = clean_all(&[&foreach_page, &wait_page, &edges_page, &table]);
    // foreach: one lane per started iteration, one per iteration never started, in order.
    let keys: Vec<String> = tags(&loaded[0].dom, "class=\"lane ")
        .iter()
        .map(|t| t["data-key"].clone())
        .collect();
    assert_eq!(
        keys,
        [
            "run",
            "/loop",
            "/loop.iterations[0]/fetch",
            "/loop.iterations[1]/fetch",
            "/loop.iterations[2]",
            "/loop.iterations[3]"
        ]
    );
    assert_eq!(foreach["run"]["status"], "failed");
    // The failing step is open in the details: its error, as the report holds it.
    assert!(
        loaded[0]
            .dom
            .contains("iteration 1, step fetch: item b broke")
    );
    // wait: the run lane is suspended until the wake-up; so is the wait step.
    let pause = lane(&loaded[1].dom, "/pause");
    assert!(pause.contains("data-kind=\"waiting\""), "{pause}");
    assert!(pause.contains("class=\"mark m-wake\""));
    // error-edges: charge failed down its error edge; receipt was skipped.
    let charge = lane(&loaded[2].dom, "/charge");
    assert!(charge.contains("error-routed → alert"), "{charge}");
    let receipt = lane(&loaded[2].dom, "/receipt");
    assert!(receipt.contains("data-status=\"skipped\""), "{receipt}");
    // The table: one row per clause the run covered, every cell passed.
    let rows = tags(&loaded[3].dom, "data-clause=");
    assert!(rows.len() > 3, "{}", loaded[3].dom);
    assert!(rows.iter().all(|r| r["data-failed"] == "no"));
    assert!(rows.iter().any(|r| r["data-clause"] == "RETRY-1"));
}

#[test]
fn a_failed_case_in_the_matrix_page_shows_its_message_and_rerun_command() {
    let Some(dir) = browser_dir() else { return };
    let page = dir.path().join("matrix.html");
    // A candidate that echoes every request back answers none: it fails every case.
    let md = dir.path().join("m.md");
    let md = md.to_str().expect("a UTF-8 temp path");
    write_page(
        &[
            "matrix",
            "--candidate",
            "ref=reference",
            "--candidate",
            "echo=adapter:cat",
            "--clause",
            "PLAN-1",
            "--markdown",
            md,
        ],
        &page,
    );
    let l = clean(&page);
    let failures = tags(&l.dom, "class=\"failure");
    assert!(!failures.is_empty(), "{}", l.dom);
    assert!(failures.iter().all(|f| f["data-candidate"] == "echo"));
    let cells = tags(&l.dom, "class=\"cell ");
    assert!(
        cells
            .iter()
            .any(|c| c["data-candidate"] == "echo" && c["data-failed"] != "0")
    );
    assert!(
        cells
            .iter()
            .all(|c| c["data-candidate"] != "ref" || c["data-failed"] == "0")
    );
    let first = &failures[0]["data-case"];
    assert!(
        l.dom.contains(&format!(
            "w6w-sim matrix --candidate echo=adapter:cat --case '{first}'"
        )),
        "the rerun command names the candidate and the case:\n{}",
        l.dom
    );
}

#[test]
fn a_script_error_on_a_page_fails_the_check() {
    let Some(dir) = browser_dir() else { return };
    // The same shell, CSP and data as every page, with a script that throws: the checker
    // must see it (so a broken run.js or matrix.js cannot pass as a blank page).
    let page = dir.path().join("broken.html");
    let html = w6w_sim::__internals::sim::page(&json!({"lanes": []}), "DATA.lanes.x.y;");
    std::fs::write(&page, html).expect("write");
    let l = load(&page);
    assert!(
        l.console.iter().any(|c| c.contains("TypeError")),
        "the console showed no error: {:?}",
        l.console
    );
    assert!(!l.dom.contains("data-rendered=\""));
}

#[test]
fn markup_in_ids_and_messages_is_shown_as_text_and_never_runs() {
    let Some(dir) = browser_dir() else { return };
    let hostile = "</script><img src=x onerror=\"document.title='pwned'\"><b>bold</b><!--";
    let wf = dir.path().join("wf.json");
    std::fs::write(
        &wf,
        json!({"manifestVersion": "2", "id": "wf_</script>", "name": "x", "steps": [
            {"id": "a", "uses": {"app": "<i>app</i>", "action": "go"}, "with": {"note": hostile}}
        ], "edges": []})
        .to_string(),
    )
    .expect("write");
    let sc = dir.path().join("sc.json");
    std::fs::write(
        &sc,
        json!({"actions": {"a": {"outcomes": [{"error": {"code": "bad", "message": hostile, "phase": "execute"}}]}}})
        .to_string(),
    )
    .expect("write");
    let page = dir.path().join("hostile.html");
    let r = run_to(&wf, &sc, &page, &[]);
    assert_eq!(r["run"]["status"], "failed");
    let html = std::fs::read_to_string(&page).expect("read");
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two"
    );
    assert!(!html.contains("<img") && !html.contains("<b>") && !html.contains("<i>"));
    let l = clean(&page);
    assert!(!l.dom.contains("<img") && !l.dom.contains("<b>bold"));
    assert!(
        l.dom
            .contains("<title>run run_1 — wf_&lt;/script&gt; failed</title>")
    );
    // Shown, as text: in the headline and in the failing step's details.
    assert!(
        l.dom.matches("&lt;/script&gt;&lt;img src=x").count() >= 2,
        "{}",
        l.dom
    );
}

const SECRET: &str = "sk_live_9f8e7d6c5b4a3210zyxw";

/// No secret byte in `text`: not raw, not in any encoding the leak detector knows (escaped,
/// base64 at every alignment, hex, percent-encoded), and no 8-character piece of it.
fn no_secret(what: &str, text: &str) {
    let detector = w6w_sim::__internals::redact::Detector::new([&json!(SECRET)]);
    assert!(
        detector.in_text(text).is_none(),
        "{what}: holds the secret ({:?})",
        detector.in_text(text)
    );
    let chars: Vec<char> = SECRET.chars().collect();
    for piece in chars.windows(8) {
        let piece: String = piece.iter().collect();
        assert!(
            !text.contains(&piece),
            "{what}: holds an 8-character piece of the secret"
        );
    }
}

#[test]
fn no_view_of_a_secret_bearing_run_holds_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let wf = d.join("wf.json");
    std::fs::write(
        &wf,
        json!({"manifestVersion": "2", "id": "wf_key", "name": "key", "steps": [
            {"id": "fetch", "uses": {"app": "crm", "action": "list"},
             "retry": {"maxAttempts": 2, "backoff": "fixed", "delayMs": 100},
             "with": {"apiKey": "{{ secrets.API_KEY }}", "note": "key {{ secrets.API_KEY }}", "limit": 2}},
            {"id": "post", "uses": {"app": "chat", "action": "post"},
             "with": {"text": "{{ steps.fetch.output.echo }}"}}
        ], "edges": [{"from": "fetch", "to": "post"}]})
        .to_string(),
    )
    .expect("write");
    let sc = d.join("sc.json");
    std::fs::write(
        &sc,
        json!({"runId": "run_1", "secrets": {"API_KEY": SECRET},
               "actions": {
                 "fetch": {"outcomes": [
                   {"error": {"code": "denied", "message": format!("key {SECRET} refused"), "phase": "execute", "retryable": true}},
                   {"output": {"echo": SECRET, "n": 2}}]},
                 "post": {"outcomes": [{"error": {"code": "bad", "message": format!("no {SECRET}"), "phase": "execute"}}]}},
               "faults": {"crashAfterCheckpoint": [3]}})
        .to_string(),
    )
    .expect("write");
    let store = d.join("store");
    let run_page = d.join("run.html");
    let r = run_to(
        &wf,
        &sc,
        &run_page,
        &["--store".as_ref(), store.as_os_str()],
    );
    let report_file = d.join("report.json");
    std::fs::write(&report_file, r.to_string()).expect("write");
    let mut pages = vec![run_page.clone()];
    for (name, args) in [
        (
            "replay",
            vec![
                "replay".into(),
                wf.clone().into_os_string(),
                "--run".into(),
                report_file.clone().into_os_string(),
                "--scenario".into(),
                sc.clone().into_os_string(),
            ],
        ),
        (
            "inspect-journal",
            vec![
                "inspect".into(),
                store.join("run_1.journal").into_os_string(),
            ],
        ),
        (
            "inspect-report",
            vec!["inspect".into(), report_file.clone().into_os_string()],
        ),
    ] {
        let page = d.join(format!("{name}.html"));
        write_page(&args, &page);
        pages.push(page);
    }
    for page in &pages {
        let html = std::fs::read_to_string(page).expect("read");
        assert!(
            html.contains("fetch") && html.contains("post"),
            "{}",
            page.display()
        );
        no_secret(&page.display().to_string(), &html);
    }
    // The report did carry the run's values the pages show, redacted where it redacts.
    let html = std::fs::read_to_string(&run_page).expect("read");
    assert!(html.contains("[redacted]"));
    // What a reader sees once the script has drawn it (decoded from the JSON) holds none
    // either.
    if browser() {
        let l = clean(&run_page);
        no_secret("the run page's DOM", &l.dom);
    }
}

#[test]
fn inspect_never_writes_its_picture_over_the_file_it_inspects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, _) = run_html(dir.path(), "retry");
    let file = dir.path().join("report.json");
    std::fs::write(&file, r.to_string()).expect("write");
    let out = bin()
        .arg("inspect")
        .arg(&file)
        .arg("--html")
        .arg(dir.path().join(".").join("report.json"))
        .output()
        .expect("spawn");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("inspect never writes it"));
    let kept: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("still the report");
    assert_eq!(kept, r, "the inspected file is unchanged");
}
