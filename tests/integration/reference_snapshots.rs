//! The reference adapter's full report, pinned: one insta snapshot per case file under
//! `snapshots/reference-<file>.snap`, mapping case id → the reference's response. Each was
//! reviewed by hand (`cargo insta review`); CI writes none, so any change in what the
//! reference answers fails here until it is reviewed again — even where the case's own
//! expectations are too loose to notice.
//!
//! The second test is the candidate side: a candidate's responses diffed against these
//! stored reports field by field (JSON Pointer, `- reference  + candidate`), so a host
//! author sees exactly which field differs without running the reference.

use std::path::PathBuf;

use serde_json::{Map, Value};
use w6w_sim::__internals::json::json_diff;
use w6w_sim::conformance::{Adapter, AdapterError, Reference, Suite};

/// A candidate that ignores error edges (ERR-4), broken at the seam: it drops every
/// `when: "error"` edge from a request's workflow before the reference answers it.
struct IgnoresErrorEdges;

impl Adapter for IgnoresErrorEdges {
    fn name(&self) -> String {
        "ignores-error-edges".into()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        let mut request = request.clone();
        if let Some(edges) = request
            .pointer_mut("/workflow/edges")
            .and_then(Value::as_array_mut)
        {
            edges.retain(|e| e["when"] != "error");
        }
        Reference.handle(&request)
    }
}

fn snapshots_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots")
}

/// case id → response, for every case of one file, answered by `adapter`.
fn responses(suite: &Suite, stem: &str, adapter: &mut dyn Adapter) -> Map<String, Value> {
    suite
        .cases()
        .filter(|(f, _)| f.stem() == stem)
        .map(|(_, c)| {
            let response = adapter.handle(&c.request).expect("in process");
            (c.id.clone(), response)
        })
        .collect()
}

fn stems(suite: &Suite) -> Vec<String> {
    let mut stems: Vec<String> = suite.cases().map(|(f, _)| f.stem()).collect();
    stems.dedup();
    stems
}

#[test]
fn reference_reports() {
    let suite = Suite::load_default().expect("the suite loads");
    for stem in stems(&suite) {
        let report = responses(&suite, &stem, &mut Reference);
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            input_file => format!("conformance/cases/{stem}.json"),
        }, {
            insta::assert_json_snapshot!(format!("reference-{stem}"), Value::Object(report));
        });
    }
}

/// The JSON body of a stored `.snap` file (after insta's `---` header).
fn stored(stem: &str) -> Map<String, Value> {
    let path = snapshots_dir().join(format!("reference-{stem}.snap"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let body = text
        .splitn(3, "---\n")
        .nth(2)
        .unwrap_or_else(|| panic!("{}: no insta header", path.display()));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_candidate_is_diffed_against_the_stored_reference_field_by_field() {
    let suite = Suite::load_default().expect("the suite loads");
    // The reference agrees with its stored self everywhere.
    for stem in stems(&suite) {
        let live = responses(&suite, &stem, &mut Reference);
        let snap = stored(&stem);
        assert_eq!(
            live.len(),
            snap.len(),
            "{stem}: one snapshot entry per case"
        );
        for (id, response) in &live {
            let d = json_diff(&snap[id], response);
            assert!(d.is_empty(), "{stem}/{id}: {d:?}");
        }
    }
    // A candidate that ignores error edges differs at exactly the fields it gets wrong.
    let live = responses(&suite, "err", &mut IgnoresErrorEdges);
    let snap = stored("err");
    let id = "err-error-edge-overrides-onerror";
    let diff = json_diff(&snap[id], &live[id]);
    let pointers: Vec<&str> = diff.iter().map(|d| d.pointer.as_str()).collect();
    assert!(pointers.contains(&"/ok/run/status"), "{pointers:?}");
    let status = diff
        .iter()
        .find(|d| d.pointer == "/ok/run/status")
        .expect("status differs");
    assert_eq!(status.expected, Some(Value::from("succeeded")));
    assert_eq!(status.actual, Some(Value::from("failed")));
}
