//! Comparing JSON values: [`json_eq`] (equality with numbers compared by value),
//! [`json_same`] (serde_json's equality, faster on equal documents) and [`json_diff`]
//! (which JSON Pointers differ between two documents).
//!
//! Owns: the one definition of "the same JSON" that the conformance expectations, the
//! simulator's durability check (a reopened store against the acknowledged checkpoints)
//! and `--diff-reference` share. Refuses to know what the documents mean.

use serde_json::{Value, json};

/// JSON equality with numbers compared by value.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && in_step(x, y, json_eq).unwrap_or_else(|| {
                    x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
                })
        }
        _ => a == b,
    }
}

/// `a == b`, serde_json's own equality (objects compared as maps, numbers exactly), with
/// members compared in order first: two documents built by the same code list their
/// members in the same order, and walking both maps in step saves a hashed look-up per
/// member (the whole cost of comparing two equal RunStates). Only when the orders differ
/// are the maps compared by key; a value that differs under the same key settles it.
pub(crate) fn json_same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && in_step(x, y, json_same).unwrap_or_else(|| x == y)
        }
        _ => a == b,
    }
}

/// `x` and `y` (of one length) walked in step: `Some(equal)` when the answer is known
/// from the walk — every key in the same place and the values `eq`, or a value that
/// differs from the other map's value under the same key (a keyed comparison would compare
/// that same pair) — and `None` when a key is out of place before that, so only a keyed
/// comparison can tell. A difference deep in a document is thus walked once, not once
/// more per enclosing map.
fn in_step(
    x: &serde_json::Map<String, Value>,
    y: &serde_json::Map<String, Value>,
    eq: fn(&Value, &Value) -> bool,
) -> Option<bool> {
    for ((k, v), (l, w)) in x.iter().zip(y) {
        if k != l {
            return None;
        }
        if !eq(v, w) {
            return Some(false);
        }
    }
    Some(true)
}

/// `token` escaped for a JSON Pointer (RFC 6901).
use crate::limits::MAX_DIFF_ENTRIES;

/// One differing field. `None` means the field is absent on that side.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffEntry {
    pub pointer: String,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

impl DiffEntry {
    pub fn to_json(&self) -> Value {
        json!({"pointer": self.pointer, "reference": self.expected, "candidate": self.actual})
    }
}

/// Every leaf-level difference between `expected` and `actual`, in document order
/// (`expected`'s keys first, then keys only `actual` has), at most [`MAX_DIFF_ENTRIES`].
pub fn json_diff(expected: &Value, actual: &Value) -> Vec<DiffEntry> {
    let mut out = Vec::new();
    walk(&mut String::new(), Some(expected), Some(actual), &mut out);
    out
}

fn walk(path: &mut String, e: Option<&Value>, a: Option<&Value>, out: &mut Vec<DiffEntry>) {
    if out.len() >= MAX_DIFF_ENTRIES {
        return;
    }
    match (e, a) {
        (Some(Value::Object(eo)), Some(Value::Object(ao))) => {
            let keys = eo.keys().chain(ao.keys().filter(|k| !eo.contains_key(*k)));
            for k in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&super::pointer_token(k));
                walk(path, eo.get(k), ao.get(k), out);
                path.truncate(len);
            }
        }
        (Some(Value::Array(ea)), Some(Value::Array(aa))) => {
            for i in 0..ea.len().max(aa.len()) {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(path, ea.get(i), aa.get(i), out);
                path.truncate(len);
            }
        }
        (Some(x), Some(y)) if json_eq(x, y) => {}
        (None, None) => {}
        _ => out.push(DiffEntry {
            pointer: path.clone(),
            expected: e.cloned(),
            actual: a.cloned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..3).prop_map(|n| json!(n)),
            Just(json!(1.0)),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        crate::json::arb_tree(leaf, "[abc]")
    }

    /// The same members in another order, recursively.
    fn reversed(v: &Value) -> Value {
        match v {
            Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            ),
            v => v.clone(),
        }
    }

    proptest! {
        // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
        #![proptest_config(ProptestConfig::default())]

        /// `json_same` is `==` and the in-order path changes neither function's answer:
        /// on any two values, on a value and itself, and on a value and its members in
        /// reverse order.
        #[test]
        fn json_same_is_serde_equality_in_any_member_order(a in value(), b in value()) {
            let r = reversed(&a);
            for (x, y) in [(&a, &b), (&a, &a), (&a, &r), (&r, &b)] {
                prop_assert_eq!(json_same(x, y), x == y);
            }
            prop_assert!(json_eq(&a, &r));
            prop_assert_eq!(json_eq(&a, &b), json_eq(&r, &b));
        }
    }

    #[test]
    fn diff_names_every_differing_leaf_by_pointer() {
        let reference = json!({"run": {"status": "succeeded", "steps": [{"id": "a"}, {"id": "b"}]},
                               "checkpoints": 4, "a/b": 1});
        let candidate = json!({"run": {"status": "failed", "steps": [{"id": "a"}]},
                               "checkpoints": 4.0, "a/b": 1, "extra": true});
        let d = json_diff(&reference, &candidate);
        let ptrs: Vec<&str> = d.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(ptrs, ["/run/status", "/run/steps/1", "/extra"]);
        assert_eq!(d[1].actual, None);
        assert_eq!(d[2].expected, None);
        assert!(json_diff(&reference, &reference).is_empty());
        assert_eq!(json_diff(&json!(1), &json!("1"))[0].pointer, "");
        assert_eq!(json_diff(&json!({"~": 1}), &json!({}))[0].pointer, "/~0");
    }

    #[test]
    fn diff_is_bounded() {
        let big: Vec<u32> = (0..1000).collect();
        let d = json_diff(&json!(big), &json!([]));
        assert_eq!(d.len(), MAX_DIFF_ENTRIES);
    }
}
