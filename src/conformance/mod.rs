//! The conformance suite: case files as data, one checker, per-clause coverage, and the
//! adapters a candidate host plugs in through.
//!
//! Owns: the case format (`conformance/cases/*.json`), [`check_expectations`], and clause
//! bookkeeping. Invariant: a case is pure data — adding one never needs Rust code. A case
//! is a request to the same op service `w6w-sim eval` speaks, plus expectations over the
//! response. The clause catalogue is embedded from `conformance/clauses.md`.
//!
//! Case file shape:
//! ```json
//! { "family": "PLAN", "description": "…",
//!   "cases": [ { "id": "plan-dup-ids", "clauses": ["PLAN-1"], "description": "…",
//!                "request": {"op": "validate", "workflow": {…}},
//!                "expect": { … } } ] }
//! ```
//! Expectations (at least one per case; every one given must hold):
//! - `"response": V` — the whole response equals V;
//! - `"ok": V` — `response.ok` equals V;
//! - `"error": {…}` — `response.error` includes these fields (subset match);
//! - `"match": {"/ptr": V}` — the value at each JSON Pointer equals V;
//! - `"includes": {"/ptr": V}` — the value at each pointer includes V (objects: subset of
//!   keys, recursively; arrays: same length, element-wise includes; scalars: equal);
//! - `"absent": ["/ptr"]` — nothing at each pointer, while its parent is there (D-377: an
//!   error answer does not satisfy `absent: ["/ok/run/steps/a/meta"]`);
//! - `"contains": {"/ptr": "text"}` — the string at each pointer contains the text;
//! - `"count": [{"pointer": "/invocations", "where": {…}, "equals": 3}]` — number of
//!   array elements including `where`;
//! - `"notContainsText": ["…"]` — the serialized response contains none of these strings.
//!
//! Numbers compare by value (`5` equals `5.0`).
//!
//! A top-level request field written `{"$file": "relative/path.json"}` is replaced at load
//! time by that file's JSON (relative to the case file), so `conformance/cases/examples.json`
//! runs the bundled `examples/` without copying them; adapters always receive plain JSON.
//! `{"$text": "relative/path"}` is replaced by the file's text (a WOML or YAML `source`).
//!
//! Loading ([`Suite::load`]) lints every file before any case runs and reports every
//! problem with its file and JSON Pointer: unknown fields (keys starting with `$`, such as
//! `"$comment"`, are annotations and allowed), a missing or empty `expect` (a case that
//! could never fail), an unknown expectation kind or a malformed one, a clause ID not in
//! the catalogue, a duplicate case id across files.
//!
//! Running: an [`Adapter`] answers requests — the in-process [`Reference`], a
//! [`ProcessAdapter`] speaking the JSON-lines [`protocol`] (`docs/adapter-protocol.md`), or
//! a host crate's own. [`run`] loads, selects ([`Selection`]: `--clause`, `--case`) and
//! returns a [`SuiteReport`] (text, JSON, JUnit).

pub(crate) mod adapter;
pub(crate) mod capability;
pub(crate) mod diff;
mod engine_seam;
pub(crate) mod generate;
mod host;
#[cfg(feature = "cli")]
pub(crate) mod html;
mod load;
#[cfg(feature = "cli")]
pub(crate) mod matrix;
#[cfg(feature = "cli")]
pub(crate) mod merge;
#[cfg(w6w_mutants)]
pub(crate) mod mutants;
#[cfg(feature = "cli")]
pub(crate) mod pool;
mod process;
pub(crate) mod protocol;
mod report;
mod runner;
pub(crate) mod shard;

pub(crate) use adapter::SELF_REPORTED;
pub use adapter::{
    Adapter, AdapterError, Evidence, FnAdapter, Reference, RunAndCrashes, WithCapabilities,
};
pub use capability::{CAPABILITIES, Capabilities, UnknownCapability};
pub use engine_seam::{EngineAdapter, EngineOnSim, ReferenceEngineAdapter, run_engine};
pub use host::{EngineOnHost, HostAdapter, MemoryDisk, SimulatedHost, run_host};
#[cfg(test)]
pub(crate) use load::LoadedFile;
pub use load::{LoadError, LoadProblem, Selection, Suite, default_cases_dir};
#[cfg(feature = "cli")]
pub(crate) use matrix::{CandidateKind, CandidateSpec, Matrix};
pub use process::{DEFAULT_DEADLINE, ProcessAdapter, ProcessOptions, split_command};
pub use report::{CaseResult, ClauseRow, SelectionSummary, SuiteReport};
#[cfg(feature = "cli")] // the HTML report
pub(crate) use report::{regenerate, rerun_case};
#[cfg(any(feature = "cli", w6w_mutants))]
pub(crate) use runner::run_suite;
pub use runner::{RunOptions, run};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::json_eq;

/// The clause catalogue, vendored from the spec (`conformance/clauses.md`).
pub(crate) const CLAUSES_MD: &str = include_str!("../../conformance/clauses.md");

/// Every clause ID in the catalogue, with its one-line text, in catalogue order.
pub fn clause_catalogue() -> Vec<(String, String)> {
    CLAUSES_MD
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("- ")?;
            let (id, text) = rest.split_once(' ')?;
            let valid = id.split_once('-').is_some_and(|(fam, num)| {
                !fam.is_empty()
                    && fam.chars().all(|c| c.is_ascii_uppercase())
                    && !num.is_empty()
                    && num.chars().all(|c| c.is_ascii_digit())
            });
            valid.then(|| (id.to_owned(), text.to_owned()))
        })
        .collect()
}

/// One case file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseFile {
    pub family: String,
    #[serde(default)]
    pub description: String,
    pub cases: Vec<Case>,
}

/// One conformance case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    pub id: String,
    pub clauses: Vec<String>,
    #[serde(default)]
    pub description: String,
    pub request: Value,
    #[serde(default)]
    pub expect: Map<String, Value>,
    /// Capabilities the case needs beyond what its content shows
    /// ([`capability::required`] derives the rest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
}

/// The result of checking one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    pub id: String,
    pub clauses: Vec<String>,
    /// Empty when the case passed.
    pub failures: Vec<String>,
    pub response: Value,
}

impl CaseOutcome {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Run one case through `handler` (the op service, or a candidate adapter) and check it.
#[cfg(test)]
pub(crate) fn check_case(case: &Case, handler: &dyn Fn(&Value) -> Value) -> CaseOutcome {
    let mut response = handler(&case.request);
    // SEC-1: what the report keeps (failure texts, the response, JSON/JUnit) passes
    // through the case's redaction sink — an adapter may echo a secret anywhere. A failure
    // text scrubs the values it quotes, never the suite's own words (issue 38 item 8).
    let scrub = case_scrubber(&case.request);
    let failures = check_expectations(&case.expect, &response, &scrub);
    scrub.value(&mut response);
    CaseOutcome {
        id: case.id.clone(),
        clauses: case.clauses.clone(),
        failures,
        response,
    }
}

/// The redaction sink of one case: the secrets its request hands the service (a run's
/// `scenario.secrets`, a resolve's `scope.secrets`), in every encoding the leak detector
/// knows — a report keeps what a candidate answered, and a candidate may have encoded them.
pub(crate) fn case_scrubber(request: &Value) -> crate::redact::Scrubber {
    let secrets = ["/scenario/secrets", "/scope/secrets"]
        .iter()
        .filter_map(|p| request.pointer(p).and_then(Value::as_object))
        .flat_map(|m| m.values());
    crate::redact::Scrubber::new(secrets)
}

/// Check expectations against a response; returns one message per failed expectation.
/// Every value a message quotes (the response's, and the case's own) is shown through
/// `scrub`; the message's own words are not (a one-letter secret must not turn
/// "expected" into `e[redacted]pected`).
pub(crate) fn check_expectations(
    expect: &Map<String, Value>,
    response: &Value,
    scrub: &crate::redact::Scrubber,
) -> Vec<String> {
    let show = |v: &Value| -> String {
        if scrub.touches(v) {
            scrub.scrubbed(v.clone()).to_string()
        } else {
            v.to_string()
        }
    };
    let mut failures = Vec::new();
    for (kind, spec) in expect {
        match kind.as_str() {
            "response" => {
                if !json_eq(response, spec) {
                    failures.push(format!(
                        "response: expected {}, got {}",
                        show(spec),
                        show(response)
                    ));
                }
            }
            "ok" => match response.get("ok") {
                Some(v) if json_eq(v, spec) => {}
                Some(v) => failures.push(format!("ok: expected {}, got {}", show(spec), show(v))),
                None => failures.push(format!(
                    "ok: expected {}, got response {}",
                    show(spec),
                    show(response)
                )),
            },
            "error" => match response.get("error") {
                Some(v) if includes(v, spec) => {}
                Some(v) => failures.push(format!(
                    "error: expected to include {}, got {}",
                    show(spec),
                    show(v)
                )),
                None => failures.push(format!(
                    "error: expected {}, got response {}",
                    show(spec),
                    show(response)
                )),
            },
            "match" | "includes" | "contains" => {
                pointer_expectations(kind, spec, response, &show, &mut failures);
            }
            "absent" => absent_expectations(spec, response, &show, &mut failures),
            "count" => count_expectations(spec, response, &mut failures),
            "notContainsText" => not_contains_text(spec, response, &mut failures),
            other => failures.push(format!("unknown expectation kind {other:?}")),
        }
    }
    failures
}

/// `absent`: nothing at each pointer, while its parent is there — what would hold the
/// member must be in the answer, or the expectation would hold of any answer that is not
/// the one asked for, such as an error (D-377). A top-level pointer's parent is the
/// response itself, which is always there.
fn absent_expectations(
    spec: &Value,
    response: &Value,
    show: &dyn Fn(&Value) -> String,
    failures: &mut Vec<String>,
) {
    for ptr in spec.as_array().into_iter().flatten() {
        let ptr = ptr.as_str().unwrap_or_default();
        if let Some(got) = response.pointer(ptr) {
            failures.push(format!("absent {ptr}: expected nothing, got {}", show(got)));
            continue;
        }
        let parent = ptr.rfind('/').map_or("", |at| &ptr[..at]);
        if response.pointer(parent).is_none() {
            failures.push(format!(
                "absent {ptr}: expected {parent} without it, but there is nothing at {parent}"
            ));
        }
    }
}

/// `match`, `includes` and `contains`: the value at each pointer equals, includes or (a
/// string) contains what the case gives.
fn pointer_expectations(
    kind: &str,
    spec: &Value,
    response: &Value,
    show: &dyn Fn(&Value) -> String,
    failures: &mut Vec<String>,
) {
    let Some(map) = spec.as_object() else {
        failures.push(format!("{kind}: expectation must be an object of pointers"));
        return;
    };
    for (ptr, want) in map {
        let got = response.pointer(ptr);
        let ok = match (kind, got) {
            (_, None) => false,
            ("match", Some(g)) => json_eq(g, want),
            ("includes", Some(g)) => includes(g, want),
            (_, Some(g)) => match (g.as_str(), want.as_str()) {
                (Some(g), Some(w)) => g.contains(w),
                _ => false,
            },
        };
        if !ok {
            let got = got.map_or_else(|| "nothing".to_owned(), show);
            failures.push(format!("{kind} {ptr}: expected {}, got {got}", show(want)));
        }
    }
}

/// `count`: the number of array elements at a pointer that include `where`.
fn count_expectations(spec: &Value, response: &Value, failures: &mut Vec<String>) {
    for c in spec.as_array().into_iter().flatten() {
        let ptr = c.get("pointer").and_then(Value::as_str).unwrap_or_default();
        let filter = c.get("where");
        let want = c.get("equals").and_then(Value::as_u64);
        let got = response
            .pointer(ptr)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|i| filter.is_none_or(|f| includes(i, f)))
                    .count()
            });
        if got.map(|g| g as u64) != want {
            let filter = filter.map_or_else(|| "{}".to_owned(), Value::to_string);
            let want = want.map_or_else(|| "(no valid equals)".into(), |w| w.to_string());
            let got = got.map_or_else(|| "no array there".into(), |g| g.to_string());
            failures.push(format!(
                "count {ptr} where {filter}: expected {want}, got {got}"
            ));
        }
    }
}

/// `notContainsText`: no needle in the serialized response, nor in any decoded string or
/// key.
fn not_contains_text(spec: &Value, response: &Value, failures: &mut Vec<String>) {
    // Both the serialized text (escaped forms) and every decoded string and key
    // (raw forms: a quote, a backslash, a control character).
    let text = response.to_string();
    let mut leaves = Vec::new();
    string_leaves(response, &mut leaves);
    for (i, needle) in spec.as_array().into_iter().flatten().enumerate() {
        if let Some(n) = needle.as_str()
            && (text.contains(n) || leaves.iter().any(|l| l.contains(n)))
        {
            // The needle is usually a secret: name it by position, never quote it.
            failures.push(format!(
                "notContainsText: response contains needle {i} ({} chars)",
                n.chars().count()
            ));
        }
    }
}

/// Every string value and object key of `v`.
fn string_leaves<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| string_leaves(i, out)),
        Value::Object(m) => m.iter().for_each(|(k, i)| {
            out.push(k);
            string_leaves(i, out);
        }),
        _ => {}
    }
}

/// Whether `got` includes `want` (see the module docs).
pub(crate) fn includes(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| includes(gv, wv))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(g, w)| includes(g, w))
        }
        _ => json_eq(got, want),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn catalogue_has_every_family() {
        let ids: Vec<String> = clause_catalogue().into_iter().map(|(id, _)| id).collect();
        for id in [
            "PLAN-1", "MODEL-8", "RUN-9", "RETRY-6", "ERR-13", "SEC-2", "CALL-4",
        ] {
            assert!(ids.contains(&id.to_owned()), "{id} missing");
        }
    }

    /// Issue 38 item 8: a failure scrubs the values it quotes, never its own words — with a
    /// one-letter secret, "expected" stays "expected".
    #[test]
    fn a_failure_quotes_scrubbed_values_in_readable_words() {
        let case: Case = serde_json::from_value(json!({
            "id": "c", "clauses": ["SEC-1"],
            "request": {"op": "run", "scenario": {"secrets": {"S": "e"}}},
            "expect": {"ok": {"v": "no"}}
        }))
        .expect("case");
        let outcome = check_case(&case, &|_| json!({"ok": {"v": "e", "w": "tree"}}));
        assert_eq!(
            outcome.failures,
            vec![r#"ok: expected {"v":"no"}, got {"v":"[redacted]","w":"tr[redacted][redacted]"}"#]
        );
        assert_eq!(outcome.response["ok"]["v"], "[redacted]");
    }

    /// D-377: `absent` holds of an answer that has what would hold the member and lacks
    /// the member — not of an answer that has neither (an error in place of the run).
    #[test]
    fn an_absent_member_needs_what_would_hold_it() {
        let absent: Map<String, Value> =
            serde_json::from_value(json!({"absent": ["/ok/run/steps/a/meta", "/error"]}))
                .expect("valid");
        let check = |response: Value| check_expectations(&absent, &response, &Default::default());
        assert!(
            check(json!({"ok": {"run": {"steps": {"a": {"status": "succeeded"}}}}})).is_empty()
        );
        let failures = check(json!({"error": {"code": "store_error"}}));
        assert_eq!(
            failures,
            vec![
                "absent /ok/run/steps/a/meta: expected /ok/run/steps/a without it, but there is nothing at /ok/run/steps/a".to_owned(),
                "absent /error: expected nothing, got {\"code\":\"store_error\"}".to_owned(),
            ]
        );
        assert_eq!(check(json!({"ok": {"run": {"steps": {}}}})).len(), 1);
    }

    #[test]
    fn expectations_fail_when_they_should() {
        let response = json!({"ok": {"a": 1, "b": [1, 2]}});
        let pass: Map<String, Value> = serde_json::from_value(json!({
            "ok": {"a": 1.0, "b": [1, 2]},
            "match": {"/ok/a": 1},
            "includes": {"/ok": {"b": [1, 2]}},
            "absent": ["/error"],
            "count": [{"pointer": "/ok/b", "equals": 2}]
        }))
        .expect("valid");
        assert!(check_expectations(&pass, &response, &Default::default()).is_empty());
        let fail: Map<String, Value> = serde_json::from_value(json!({
            "ok": {"a": 2},
            "match": {"/ok/c": 1},
            "absent": ["/ok/a"],
            "count": [{"pointer": "/ok/b", "equals": 3}],
            "notContainsText": ["\"b\""]
        }))
        .expect("valid");
        assert_eq!(
            check_expectations(&fail, &response, &Default::default()).len(),
            5
        );
    }
}
