//! SEC-1, precisely (D-274): where a step record's output is secret-derived.
//!
//! Owns: the record key [`OUTPUT_TAINT`] — the leaves of an output holding secret material
//! that no secret reference by name rebuilds, found by [`crate::redact::taint::scan`] when
//! the record is sealed — and the places a published record taints in the scope
//! ([`places`]).
//!
//! Invariants: an action's output is not tainted merely because a param was — only where
//! it holds what it was handed (or a secret) — unless the host declares the action's output
//! sensitive (`WorkflowContext::action_sensitive_output`, D-275); then it is secret-derived
//! wholly (`journal::SECRET_DERIVED`), as every control whose params read a secret is.

use serde_json::Value;

use super::journal::is_secret_derived;
use super::sealed::SECRET_REFS;
use crate::model::StepExecution;
pub(crate) use crate::redact::taint::{Needles, redact_message, scan};

/// The record `extra` key listing the JSON Pointers (into the output) of the leaves that
/// hold secret material other than a whole secret the record refers to by name
/// ([`SECRET_REFS`]). They are recorded `"[redacted]"`, come back from the output's
/// envelope when the host holds a sealing key, and are tainted in the scope.
pub(crate) const OUTPUT_TAINT: &str = "outputTaint";

/// Mark `record`'s output leaves at `pointers` tainted, leaving out those a secret
/// reference by name already covers (they are rebuilt exactly from the secret).
pub(crate) fn mark(record: &mut StepExecution, pointers: Vec<String>) {
    // A set: an output may hold thousands of references and tainted leaves (D-373).
    let named: std::collections::HashSet<&str> = match record.extra.get(SECRET_REFS) {
        Some(Value::Array(refs)) => refs.iter().filter_map(|r| r["path"].as_str()).collect(),
        _ => std::collections::HashSet::new(),
    };
    let kept: Vec<Value> = pointers
        .into_iter()
        .filter(|p| !named.contains(&p.as_str()))
        .map(Value::String)
        .collect();
    if !kept.is_empty() {
        record.extra.insert(OUTPUT_TAINT.into(), Value::Array(kept));
    }
}

/// The pointers `record` lists under [`OUTPUT_TAINT`].
pub(crate) fn output_taint(record: &StepExecution) -> impl Iterator<Item = &str> {
    record
        .extra
        .get(OUTPUT_TAINT)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Where a published record's output is secret-derived, as JSON Pointers into the output
/// (`""`: all of it): everything for a secret-derived record or one whose secret sits in a
/// key (an empty reference list); else each secret reference's and each tainted leaf's
/// place. Empty: nothing.
pub(crate) fn places(record: &StepExecution) -> Vec<String> {
    let refs = match record.extra.get(SECRET_REFS) {
        Some(Value::Array(refs)) => Some(refs),
        _ => None,
    };
    if is_secret_derived(record) || refs.is_some_and(Vec::is_empty) {
        return vec![String::new()];
    }
    let mut out: Vec<String> = refs
        .into_iter()
        .flatten()
        .filter_map(|r| r["path"].as_str().map(str::to_owned))
        .collect();
    out.extend(output_taint(record).map(str::to_owned));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn places_are_whole_for_a_sensitive_record_and_precise_otherwise() {
        let mut r = StepExecution::new("a", crate::model::StepStatus::Succeeded, 1);
        r.extra
            .insert(SECRET_REFS.into(), json!([{"path": "/k", "secret": "K"}]));
        mark(&mut r, vec!["/k".into(), "/b64".into()]);
        assert_eq!(places(&r), ["/k", "/b64"]);
        r.extra.insert("secretDerived".into(), json!(true));
        assert_eq!(places(&r), [""]);
    }
}
