//! SEC-1, precisely (D-274): the places of a value — a step's output, an action's result
//! as a host records it — that hold secret material.
//!
//! Owns: [`Needles`], what a step was handed as secret-derived (the values at its params'
//! secret paths: any scalar found wholly, a text of [`DERIVED_NEEDLE_MIN`] characters or
//! more also inside another text), and [`scan`], which finds every leaf holding a needle
//! or any form of a run secret the [`Detector`] knows (raw, base64, hex, percent-encoded,
//! an 8-character piece). The engine records those leaves redacted and taints them
//! (`engine::taint`); a host recording an invocation's result redacts the same leaves.
//! Invariant: read-only; what no needle or detector recognises (an action's own
//! transformation of a secret) is the action's declared business (D-274, D-275).

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::DERIVED_NEEDLE_MIN;
use super::leak::Detector;
use crate::expr::Resolved;
use crate::model::pointer_token;

/// What a step was handed as secret-derived: found in its output wholly (any scalar) or,
/// for long enough text, inside another text.
///
/// Sets, not lists: a step may be handed thousands of derived values (a whole tainted
/// output), and every leaf of what it returns is looked up (D-373).
#[derive(Debug, Default)]
pub(crate) struct Needles {
    /// The texts found wholly.
    whole_texts: HashSet<String>,
    /// The numbers found wholly (as `Value`'s `==` compares them: `1` and `1.0` differ).
    whole_numbers: HashSet<Number>,
    /// The texts also found inside another text, in the order they were handed.
    inside: Vec<String>,
    inside_seen: HashSet<String>,
}

impl Needles {
    /// The values at `resolved`'s secret paths (their scalar leaves).
    pub(crate) fn of(resolved: &Resolved) -> Needles {
        Needles::of_params(&resolved.params, &resolved.secret_paths)
    }

    /// The values at `secret_paths` (JSON Pointers into `params`).
    pub(crate) fn of_params(params: &Map<String, Value>, secret_paths: &[String]) -> Needles {
        let mut needles = Needles::default();
        for p in secret_paths {
            if p.is_empty() {
                // All the params.
                params.values().for_each(|v| needles.add(v));
                continue;
            }
            let Some(rest) = p.strip_prefix('/') else {
                continue;
            };
            let (key, inside) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let key = key.replace("~1", "/").replace("~0", "~");
            if let Some(v) = params.get(&key).and_then(|v| v.pointer(inside)) {
                needles.add(v);
            }
        }
        needles
    }

    /// The values at `places` (pointers into `output`, `""`: all of it) — what a join is
    /// handed as secret material by a tainted inbound output.
    pub(crate) fn add_places(&mut self, output: &Value, places: &[String]) {
        for p in places {
            if let Some(v) = output.pointer(p) {
                self.add(v);
            }
        }
    }

    fn add(&mut self, v: &Value) {
        match v {
            Value::Array(items) => items.iter().for_each(|x| self.add(x)),
            Value::Object(m) => m.values().for_each(|x| self.add(x)),
            Value::Null | Value::Bool(_) => {}
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => {
                if s.chars().count() >= DERIVED_NEEDLE_MIN && self.inside_seen.insert(s.clone()) {
                    self.inside.push(s.clone());
                }
                self.whole_texts.insert(s.clone());
            }
            Value::Number(n) => {
                self.whole_numbers.insert(n.clone());
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.whole_texts.is_empty() && self.whole_numbers.is_empty()
    }

    /// Whether `text` is a needle wholly.
    fn is_whole(&self, text: &str) -> bool {
        self.whole_texts.contains(text)
    }

    /// Whether `text` holds a needle (wholly, or a long one inside it).
    fn in_text(&self, text: &str) -> bool {
        self.is_whole(text) || self.inside.iter().any(|n| text.contains(n.as_str()))
    }
}

/// The pointers of `output`'s leaves holding secret material: a needle, or a secret form
/// `detector` finds. A key holding one taints its whole object. Sorted, no pointer inside
/// another.
pub(crate) fn scan(output: &Value, needles: &Needles, detector: &Detector) -> Vec<String> {
    let mut out = Vec::new();
    if needles.is_empty() && detector.is_empty() {
        return out;
    }
    walk(output, &mut String::new(), needles, detector, &mut out);
    out
}

fn walk(v: &Value, at: &mut String, needles: &Needles, detector: &Detector, out: &mut Vec<String>) {
    let hit = match v {
        Value::String(s) => needles.in_text(s) || detector.in_text(s).is_some(),
        Value::Number(_) => {
            matches!(v, Value::Number(n) if needles.whole_numbers.contains(n))
                || detector.in_value(v, "", &|_| false).is_some()
        }
        Value::Null | Value::Bool(_) => false,
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(itoa::Buffer::new().format(i));
                walk(x, at, needles, detector, out);
                at.truncate(len);
            }
            false
        }
        Value::Object(m) => {
            if m.keys()
                .any(|k| needles.in_text(k) || detector.in_text(k).is_some())
            {
                true
            } else {
                for (k, x) in m {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&pointer_token(k));
                    walk(x, at, needles, detector, out);
                    at.truncate(len);
                }
                false
            }
        }
    };
    if hit {
        out.push(at.clone());
    }
}

/// An error message with every needle it quotes replaced by `"[redacted]"` (a needle that
/// is the whole message, or a long one inside it; D-42's floor), `None` when it quotes
/// none. The secrets themselves, in every form, are the sink's to remove.
pub(crate) fn redact_message(message: &str, needles: &Needles) -> Option<String> {
    if needles.is_whole(message) {
        return Some(crate::expr::REDACTED.to_owned());
    }
    let mut out: Option<String> = None;
    let mut inside: Vec<&String> = needles.inside.iter().collect();
    // Longest first, so a needle holding another is replaced whole.
    inside.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for n in inside {
        let text = out.as_deref().unwrap_or(message);
        if text.contains(n.as_str()) {
            out = Some(text.replace(n.as_str(), crate::expr::REDACTED));
        }
    }
    out
}

/// `value` with every leaf at `places` (pointers, `""`: all of it) replaced by `"[redacted]"`.
pub(crate) fn redact_places(value: &mut Value, places: &[String]) {
    for p in places {
        if let Some(leaf) = value.pointer_mut(p) {
            *leaf = Value::String(crate::expr::REDACTED.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolved(params: Value, paths: &[&str]) -> Resolved {
        Resolved {
            params: params.as_object().cloned().unwrap_or_default(),
            secret_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn only_the_leaves_holding_what_the_step_was_handed_are_tainted() {
        let r = resolved(
            json!({"apiKey": "tok-derived-1", "limit": 2, "pin": 4711}),
            &["/apiKey", "/pin"],
        );
        let needles = Needles::of(&r);
        let output = json!({
            "items": [{"name": "ada"}, {"name": "grace"}],
            "echo": "Bearer tok-derived-1",
            "n": 4711,
            "count": 2,
        });
        let none = Detector::default();
        assert_eq!(scan(&output, &needles, &none), ["/echo", "/n"]);
        // A key holding one taints its whole object.
        let keyed = json!({"a": {"tok-derived-1": 1, "b": 2}, "c": 3});
        assert_eq!(scan(&keyed, &needles, &none), ["/a"]);
    }

    /// Needles are sets (D-373) that match as `Value`'s `==` did: a number by its type too,
    /// a text wholly, a long text also inside another; repeats change nothing.
    #[test]
    fn needles_match_as_values_compare() {
        let r = resolved(
            json!({"n": 7, "f": 2.5, "t": "tok-derived-22", "again": ["tok-derived-22", 7]}),
            &["/n", "/f", "/t", "/again"],
        );
        let needles = Needles::of(&r);
        assert_eq!(needles.inside, ["tok-derived-22"]);
        let output = json!({"a": 7, "b": 7.0, "c": 2.5, "d": "x tok-derived-22 y", "e": "tok"});
        let none = Detector::new(std::iter::empty::<&Value>());
        assert_eq!(scan(&output, &needles, &none), ["/a", "/c", "/d"]);
        assert!(Needles::default().is_empty() && !needles.is_empty());
    }

    #[test]
    fn a_secret_in_any_form_is_found_without_needles() {
        let secret = json!("hunter2-is-long-enough");
        let detector = Detector::new([&secret]);
        let b64 = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "hunter2-is-long-enough",
        );
        let output = json!({"plain": "nothing", "b64": b64, "piece": "xx-is-long-en-xx"});
        assert_eq!(
            scan(&output, &Needles::default(), &detector),
            ["/b64", "/piece"]
        );
    }
}
