//! Comparing JSON values: [`json_eq`] (equality with numbers compared by value) and
//! [`json_diff`] (which JSON Pointers differ between two documents).
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
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// `token` escaped for a JSON Pointer (RFC 6901).
fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

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
                path.push_str(&escape_token(k));
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
