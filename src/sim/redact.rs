//! SEC-1 defense in depth: scrub secret plaintext out of everything the simulator records.
//!
//! Owns: the list of secret needles of one scenario and the walk that replaces them.
//! Invariant: the engine already records `Resolved::redacted()` params; this layer does
//! not trust that — every checkpoint (before it reaches a store), trace event and report
//! passes through [`Scrubber`], so an action that *echoes* a secret, or an error message
//! that quotes one, still never persists it. Only data is scrubbed (values, keys, error
//! texts), never structural fields such as statuses, so a scrubbed patch stays a patch.

use serde_json::{Map, Number, Value};

use crate::expr::REDACTED;
use crate::model::{RunStatePatch, StepError, StepExecution, StepMeta};

/// The secret values of one scenario, ready to scrub with.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Non-empty string leaves of every secret, longest first (so a secret that contains
    /// another is replaced whole).
    needles: Vec<String>,
    /// Numeric secrets, scrubbed where a number equals one.
    numbers: Vec<Number>,
}

impl Scrubber {
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut s = Scrubber::default();
        for v in secrets {
            s.collect(v);
        }
        s.needles
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        s.needles.dedup();
        s
    }

    fn collect(&mut self, v: &Value) {
        match v {
            Value::String(t) if !t.is_empty() => self.needles.push(t.clone()),
            Value::Number(n) => self.numbers.push(n.clone()),
            Value::Array(items) => items.iter().for_each(|i| self.collect(i)),
            Value::Object(m) => m.values().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.numbers.is_empty()
    }

    /// Replace every occurrence of a secret inside `text`.
    pub fn text(&self, text: &str) -> Option<String> {
        if !self.needles.iter().any(|n| text.contains(n.as_str())) {
            return None;
        }
        let mut out = text.to_owned();
        for n in &self.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), REDACTED);
            }
        }
        Some(out)
    }

    /// Scrub a JSON value in place: string values, object keys, numeric secrets.
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
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
        p.steps.values_mut().for_each(|s| self.step(s));
        p.step_errors.iter_mut().for_each(|e| self.error(e));
        self.map(&mut p.extra);
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
                           "keep": "fine", "e": ""});
        s.value(&mut v);
        assert_eq!(
            v,
            json!({"a": "x [redacted] y", "[redacted]": 1, "n": "[redacted]",
                   "deep": ["[redacted]"], "keep": "fine", "e": ""})
        );
    }
}
