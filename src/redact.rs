//! The redaction sink (SEC-1): the one component every recorded or printed byte of a run
//! passes through before it leaves the process — checkpoints (before any store), trace
//! events, the report, error messages, `eval` responses, conformance reports.
//!
//! Owns: the needles of one run — every secret of the scenario in every encoding it can
//! take on its way to a byte (raw, JSON-escaped, `{:?}`-escaped, JSON-escaped twice, a
//! number rendered as text) — plus the secret-derived values the engine declared to the
//! host (`WorkflowContext::secret_derived`), and the walk that replaces them with
//! `"[redacted]"`.
//!
//! Invariant: scrubbing is defense in depth behind taint tracking (`Resolved::secret_paths`,
//! `engine::journal::SECRET_DERIVED`), which redacts secret-derived values wholly where the
//! engine records them. This layer catches what taint cannot see: a secret an action or a
//! scenario echoes verbatim, or an error message that quotes one. Only data is scrubbed
//! (values, keys, texts), never structural fields such as statuses, so a scrubbed patch
//! stays a patch. Limits (docs/decisions.md D-42): a secret-derived value shorter than
//! [`DERIVED_NEEDLE_MIN`] characters is replaced where it stands as a whole value, never as a
//! substring of unrelated text.

use std::cell::RefCell;

use serde_json::{Map, Number, Value};

use crate::expr::REDACTED;
use crate::model::{RunState, RunStatePatch, StepError, StepExecution, StepMeta};

/// A declared secret-derived string shorter than this is not scrubbed as a substring (it
/// would erase unrelated text); it is still replaced wherever it is a whole value.
pub const DERIVED_NEEDLE_MIN: usize = 4;

/// The secret values of one run, ready to scrub with.
#[derive(Debug, Default)]
pub struct Scrubber {
    /// Every encoding of every secret string leaf, longest first (so a needle that
    /// contains another is replaced whole).
    needles: Vec<String>,
    /// Numeric secrets, replaced where a number equals one.
    numbers: Vec<Number>,
    /// Values the engine declared secret-derived during the run, replaced wholly where
    /// they appear as a value; their long string leaves also become needles.
    derived: RefCell<Derived>,
}

#[derive(Debug, Default, Clone)]
struct Derived {
    values: Vec<Value>,
    needles: Vec<String>,
}

impl Clone for Scrubber {
    fn clone(&self) -> Self {
        Scrubber {
            needles: self.needles.clone(),
            numbers: self.numbers.clone(),
            derived: RefCell::new(self.derived.borrow().clone()),
        }
    }
}

/// Every encoding in which `s` can reach a recorded byte.
fn encodings(s: &str) -> Vec<String> {
    let mut out = vec![s.to_owned()];
    let json = serde_json::to_string(s).unwrap_or_default();
    let json_inner = json
        .get(1..json.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    let debug = format!("{s:?}");
    let debug_inner = debug
        .get(1..debug.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    // A JSON text quoted inside another JSON string (a patch in a message, a response
    // embedded in a report) escapes the escapes once more.
    let twice = serde_json::to_string(&json_inner).unwrap_or_default();
    let twice_inner = twice
        .get(1..twice.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    for e in [json_inner, debug_inner, twice_inner] {
        if !e.is_empty() && !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn sort_needles(needles: &mut Vec<String>) {
    needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    needles.dedup();
}

impl Scrubber {
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut s = Scrubber::default();
        for v in secrets {
            s.collect(v);
        }
        sort_needles(&mut s.needles);
        s
    }

    fn collect(&mut self, v: &Value) {
        match v {
            Value::String(t) if !t.is_empty() => self.needles.extend(encodings(t)),
            Value::Number(n) => {
                self.numbers.push(n.clone());
                // A number rendered into text (`"pin={{ secrets.PIN }}"`), in JSON's and
                // in JavaScript's spelling.
                let js = crate::expr::number::number_to_string(crate::expr::number::json_number(n));
                self.needles.push(n.to_string());
                self.needles.push(js);
            }
            Value::Array(items) => items.iter().for_each(|i| self.collect(i)),
            Value::Object(m) => m.values().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.numbers.is_empty() && {
            let d = self.derived.borrow();
            d.values.is_empty() && d.needles.is_empty()
        }
    }

    /// SEC-1: the engine declared `v` secret-derived; it is redacted from now on.
    pub fn add_derived(&self, v: &Value) {
        let mut d = self.derived.borrow_mut();
        if matches!(v, Value::Null | Value::Bool(_)) || d.values.contains(v) {
            return;
        }
        d.values.push(v.clone());
        let mut leaves = Vec::new();
        string_leaves(v, &mut leaves);
        for leaf in leaves {
            if leaf.chars().count() >= DERIVED_NEEDLE_MIN {
                d.needles.extend(encodings(&leaf));
            }
        }
        sort_needles(&mut d.needles);
    }

    /// Replace every occurrence of a secret inside `text`; `None` when there is none.
    pub fn text(&self, text: &str) -> Option<String> {
        let derived = self.derived.borrow();
        let hit = |n: &String| text.contains(n.as_str());
        if !self.needles.iter().any(hit) && !derived.needles.iter().any(hit) {
            return None;
        }
        let mut all: Vec<&String> = self.needles.iter().chain(derived.needles.iter()).collect();
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let mut out = text.to_owned();
        for n in all {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), REDACTED);
            }
        }
        Some(out)
    }

    /// [`Scrubber::text`], always returning the text to use.
    pub fn line(&self, text: &str) -> String {
        self.text(text).unwrap_or_else(|| text.to_owned())
    }

    fn is_derived(&self, v: &Value) -> bool {
        let d = self.derived.borrow();
        !d.values.is_empty() && d.values.contains(v)
    }

    /// Scrub a JSON value in place: string values, object keys, numeric secrets, and any
    /// declared secret-derived value (replaced wholly).
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        if self.is_derived(v) {
            *v = Value::String(REDACTED.to_owned());
            return;
        }
        match v {
            Value::String(t) => {
                if let Some(s) = self.text(t) {
                    *t = s;
                }
            }
            Value::Number(n)
                if self
                    .numbers
                    .iter()
                    .any(|s| s == n || s.as_f64() == n.as_f64()) =>
            {
                *v = Value::String(REDACTED.to_owned());
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(m) => self.map(m),
            _ => {}
        }
    }

    /// Scrub a value that is about to be recorded, returning it.
    pub fn scrubbed(&self, mut v: Value) -> Value {
        self.value(&mut v);
        v
    }

    pub fn map(&self, m: &mut Map<String, Value>) {
        if self.is_empty() {
            return;
        }
        if m.keys().any(|k| self.text(k).is_some()) {
            let old = std::mem::take(m);
            for (k, v) in old {
                m.insert(self.text(&k).unwrap_or(k), v);
            }
        }
        m.values_mut().for_each(|v| self.value(v));
    }

    pub fn error(&self, e: &mut StepError) {
        for s in [&mut e.code, &mut e.message] {
            if let Some(t) = self.text(s) {
                *s = t;
            }
        }
        if let Some(id) = &mut e.step_id
            && let Some(t) = self.text(id)
        {
            *id = t;
        }
    }

    fn meta(&self, m: &mut StepMeta) {
        for s in [&mut m.app, &mut m.version, &mut m.action] {
            if let Some(t) = self.text(s) {
                *s = t;
            }
        }
        if let Some(c) = &mut m.connection_id
            && let Some(t) = self.text(c)
        {
            *c = t;
        }
    }

    pub fn step(&self, s: &mut StepExecution) {
        if self.is_empty() {
            return;
        }
        for v in [&mut s.input, &mut s.output].into_iter().flatten() {
            self.value(v);
        }
        if let Some(e) = &mut s.error {
            self.error(e);
        }
        if let Some(m) = &mut s.meta {
            self.meta(m);
        }
        self.map(&mut s.extra);
    }

    /// Scrub a checkpoint before it reaches any store.
    pub fn patch(&self, p: &mut RunStatePatch) {
        if self.is_empty() {
            return;
        }
        if let Some(vars) = &mut p.variables {
            self.map(vars);
        }
        if let Some(o) = &mut p.output {
            self.value(o);
        }
        if let Some(e) = &mut p.error {
            self.error(e);
        }
        p.steps
            .values_mut()
            .for_each(|s| self.step(std::sync::Arc::make_mut(s)));
        p.step_errors.iter_mut().for_each(|e| self.error(e));
        self.map(&mut p.extra);
    }

    /// Scrub a whole run state (a replayed `--run FILE`, the final report).
    pub fn state(&self, r: &mut RunState) {
        if self.is_empty() {
            return;
        }
        self.map(&mut r.variables);
        if let Some(o) = &mut r.output {
            self.value(o);
        }
        if let Some(e) = &mut r.error {
            self.error(e);
        }
        r.steps
            .values_mut()
            .for_each(|s| self.step(std::sync::Arc::make_mut(s)));
        r.step_errors.iter_mut().for_each(|e| self.error(e));
        self.map(&mut r.extra);
    }
}

fn string_leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| string_leaves(i, out)),
        Value::Object(m) => m.values().for_each(|i| string_leaves(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrubs_values_keys_and_substrings() {
        let secrets = [
            json!("hunter2"),
            json!({"k": "abc-token"}),
            json!(4242),
            json!(""),
        ];
        let s = Scrubber::new(secrets.iter());
        let mut v = json!({"a": "x hunter2 y", "hunter2": 1, "n": 4242, "deep": ["abc-token"],
                           "keep": "fine", "e": "", "pin": "pin=4242"});
        s.value(&mut v);
        assert_eq!(
            v,
            json!({"a": "x [redacted] y", "[redacted]": 1, "n": "[redacted]",
                   "deep": ["[redacted]"], "keep": "fine", "e": "", "pin": "pin=[redacted]"})
        );
    }

    #[test]
    fn scrubs_every_encoding() {
        let secret = "pw\"Q\\z\u{1}é";
        let s = Scrubber::new([json!(secret)].iter());
        let json_form = serde_json::to_string(secret).unwrap_or_default();
        let debug_form = format!("{secret:?}");
        let twice = serde_json::to_string(&json_form).unwrap_or_default();
        for text in [
            format!("raw {secret} end"),
            format!("json {json_form} end"),
            format!("debug {debug_form} end"),
            format!("twice {twice} end"),
        ] {
            let out = s.line(&text);
            assert!(!out.contains(secret), "{out}");
            assert!(out.contains(REDACTED), "{out}");
            assert!(!out.contains("pw\\\"Q"), "{out}");
        }
    }

    #[test]
    fn derived_values_are_replaced_wholly_and_long_leaves_as_substrings() {
        let s = Scrubber::new([].iter());
        assert!(s.is_empty());
        s.add_derived(&json!({"kind": "function", "id": "fn-derived"}));
        s.add_derived(&json!("derived-id"));
        s.add_derived(&json!("ab"));
        let mut v = json!({"t": {"kind": "function", "id": "fn-derived"},
                           "w": {"kind": "workflow", "workflow": "derived-id"},
                           "m": "no workflow \"derived-id\"", "short": "ab", "in": "abc"});
        s.value(&mut v);
        assert_eq!(
            v,
            json!({"t": "[redacted]", "w": {"kind": "workflow", "workflow": "[redacted]"},
                   "m": "no workflow \"[redacted]\"", "short": "[redacted]", "in": "abc"})
        );
    }
}
