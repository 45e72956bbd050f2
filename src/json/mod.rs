//! Strict JSON input: every document the tool reads from a user — a workflow, a scenario,
//! a case file, an `eval` request — is parsed here, and a duplicate object key is an error
//! naming the JSON Pointer of the duplicate (issue 12 item 6).
//!
//! Owns: [`parse`], a `serde_json` deserializer driven through a [`DeserializeSeed`] that
//! builds the `Value` itself and refuses a key it has already seen in the same object
//! (one map look-up per key; the duplicate's pointer is written only when there is one,
//! D-372).
//! `serde_json` has no option for this (its `Map` keeps the last value silently), and the
//! crates that add one replace the whole parser; a seed over `serde_json`'s own tokenizer
//! keeps its line/column errors, number handling and recursion limit (docs/decisions.md
//! D-47). Invariant: accepts exactly what `serde_json::from_str` accepts, minus duplicates,
//! and yields the same `Value`. `diff.rs` compares values ([`json_eq`], [`json_diff`]); `text.rs` holds a recorded value as
//! its compact text ([`JsonText`]).
//! The bottom of the layer order: it uses only `limits`.

mod diff;
mod text;

pub(crate) use diff::{DiffEntry, json_same};
pub use diff::{json_diff, json_eq};
pub use text::JsonText;

/// Property-test JSON leaves that stress a writer: finite floats, big integers, and
/// strings with quotes, backslashes, newlines and control characters.
#[cfg(test)]
pub(crate) fn arb_leaf() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::from),
        "[\\PC\"\\\\\n\u{1}]{0,6}".prop_map(Value::from),
    ]
}

/// Property-test documents shared by the crate's tests: trees of up to three levels whose
/// leaves come from `leaf` and whose object keys match the regex `key`, so each test picks
/// the alphabet its property needs (secrets that occur often, keys that collide, …).
#[cfg(test)]
pub(crate) fn arb_tree(
    leaf: impl proptest::strategy::Strategy<Value = Value> + 'static,
    key: &'static str,
) -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    leaf.prop_recursive(3, 16, 3, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// Why a text is not an acceptable JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// 1-based; 0 when unknown.
    pub line: usize,
    pub column: usize,
    /// For a duplicate key: the JSON Pointer of the second occurrence.
    pub duplicate: Option<String>,
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsonError {}

/// The marker that tells a duplicate-key error from a syntax error.
const DUP: &str = "duplicate key at ";

/// For `#[serde(deserialize_with = "json::present")]` on an `Option<Value>` field: a field
/// that is there, `null` included, is `Some` (`Some(Value::Null)`); an absent one is `None`
/// with `#[serde(default)]`. A protocol that tells "absent" from "null" reads it this way.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// Parse `text` as one JSON document, refusing duplicate object keys.
pub(crate) fn parse(text: &str) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed { at: ROOT }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| {
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let full = e.to_string();
            let full = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
            let duplicate = full.strip_prefix(DUP).map(|rest| {
                // "<pointer> (key \"k\")"
                rest.split(" (key ").next().unwrap_or_default().to_owned()
            });
            JsonError {
                line: e.line(),
                column: e.column(),
                duplicate,
                message: full,
            }
        })?;
    Ok(value)
}

/// [`parse`] for bytes: invalid UTF-8 is an error, never a panic.
pub fn parse_bytes(bytes: &[u8]) -> Result<Value, JsonError> {
    let text = std::str::from_utf8(bytes).map_err(|e| JsonError {
        line: 0,
        column: 0,
        duplicate: None,
        message: format!("not UTF-8: {e}"),
    })?;
    parse(text)
}

/// One member name as a JSON Pointer token (RFC 6901: `~` as `~0`, then `/` as `~1`): the
/// crate's one escape, for every pointer it writes.
pub(crate) fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON Pointer held as where it is — a chain of borrowed parents on the stack — and
/// written out only when a message names it (D-330, D-372): a walk over a clean document
/// writes no pointer text at all. The chain is as deep as the document, which the caller
/// bounds (serde_json's recursion limit, the storage walk's depth check).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pointer<'p> {
    /// A pointer as written: `""` (the root) or `"/reroute"`.
    At(&'p str),
    /// Element `index` of the array at the parent.
    Item(&'p Pointer<'p>, usize),
    /// Member `name` of the object at the parent.
    Member(&'p Pointer<'p>, &'p str),
}

/// The document's root.
pub(crate) const ROOT: Pointer<'static> = Pointer::At("");

impl Pointer<'_> {
    /// Append the pointer to `out`.
    pub(crate) fn write(&self, out: &mut String) {
        match *self {
            Pointer::At(pointer) => out.push_str(pointer),
            Pointer::Item(parent, index) => {
                parent.write(out);
                out.push('/');
                out.push_str(itoa::Buffer::new().format(index));
            }
            Pointer::Member(parent, name) => {
                parent.write(out);
                out.push('/');
                out.push_str(&pointer_token(name));
            }
        }
    }

    /// The pointer, written out.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// The pointer of member `name` of this value, written out.
    pub(crate) fn child(&self, name: &str) -> String {
        Pointer::Member(self, name).render()
    }
}

struct Seed<'p> {
    at: Pointer<'p>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Seed {
            at: Pointer::Item(&self.at, out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One look-up per key: the entry both refuses a duplicate and takes the value.
            match out.entry(key) {
                Entry::Occupied(seen) => {
                    let key = seen.key();
                    let path = self.at.child(key);
                    return Err(de::Error::custom(format!("{DUP}{path} (key {key:?})")));
                }
                Entry::Vacant(slot) => {
                    let v = map.next_value_seed(Seed {
                        at: Pointer::Member(&self.at, slot.key()),
                    })?;
                    slot.insert(v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_value_as_serde_json() {
        let text = r#"{"a": [1, -2, 3.5, 1e400, "x\u0001", null, true, {"b": {}}], "c": 18446744073709551615}"#;
        let ours = parse(text);
        let theirs: Result<Value, _> = serde_json::from_str(text);
        assert_eq!(ours.ok(), theirs.ok());
        assert_eq!(parse("[1, 2]").ok(), Some(json!([1, 2])));
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_pointer() {
        let e = parse("{\"steps\": [], \"x\": {\"a/b\": 1, \"a/b\": 2}}").err();
        assert_eq!(e.and_then(|e| e.duplicate), Some("/x/a~1b".to_owned()));
        let e = parse("{\"steps\": [1], \"steps\": [2]}").err();
        let e = e.map(|e| (e.duplicate, e.line));
        assert_eq!(e, Some((Some("/steps".to_owned()), 1)));
        let e = parse("[{}, {\"k\": 1, \"k\": 1}]").err();
        assert_eq!(e.and_then(|e| e.duplicate), Some("/1/k".to_owned()));
    }

    use proptest::prelude::*;

    proptest! {
        /// A document without duplicate keys parses to serde_json's own value.
        #[test]
        fn parses_what_serde_json_parses(doc in arb_tree(arb_leaf(), "[a-z/~]{0,3}")) {
            let text = doc.to_string();
            prop_assert_eq!(parse(&text), Ok(doc));
        }

        /// A duplicate key anywhere is refused, naming the pointer of its second occurrence
        /// (keys with `/` and `~` escaped, array indexes as written) and nothing else.
        #[test]
        fn a_duplicate_key_is_named_by_its_pointer(
            before in arb_tree(arb_leaf(), "[a-z]{0,2}"),
            outer in "[a-z/~]{0,3}",
            key in "[a-z/~]{0,3}",
            first in arb_tree(arb_leaf(), "[a-z]{0,2}"),
            second in arb_tree(arb_leaf(), "[a-z]{0,2}"),
        ) {
            let quoted = |s: &str| Value::from(s).to_string();
            let text = format!(
                "{{{}: [{before}, {{{}: {first}, {}: {second}}}]}}",
                quoted(&outer),
                quoted(&key),
                quoted(&key)
            );
            let pointer = format!("/{}/1/{}", pointer_token(&outer), pointer_token(&key));
            prop_assert_eq!(parse(&text).err().and_then(|e| e.duplicate), Some(pointer));
        }
    }

    #[test]
    fn syntax_errors_keep_their_position() {
        let e = parse("{\n  \"a\": ,\n}").err();
        assert!(matches!(
            e,
            Some(JsonError {
                line: 2,
                duplicate: None,
                ..
            })
        ));
        assert!(parse("{} trailing").is_err());
        assert!(parse_bytes(b"{\"a\": \"\xff\"}").is_err());
        let deep = "[".repeat(100_000);
        assert!(
            parse(&deep).is_err(),
            "recursion limit, never a stack overflow"
        );
    }
}
