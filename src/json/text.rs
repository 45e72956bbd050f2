//! [`JsonText`]: a JSON value held as its compact text (D-191, D-193).

use serde::{Deserialize, Serialize};
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Map, Value};

/// A recorded JSON value held as its compact text (D-191). The report lists every
/// invocation's params, so the simulator keeps them all for the run: as a `Value` a
/// two-key object holds about 370 B of heap, as text the 20-odd bytes of its JSON.
/// serde_json writes the text verbatim, so the disk journal's bytes are what the `Value`
/// wrote; it reads from any JSON value; two are equal when their texts are.
#[derive(Clone)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// The compact JSON of `value`.
    pub fn new(value: &Value) -> JsonText {
        JsonText::of(value)
    }

    /// The compact JSON of an object's map (without building the object).
    pub fn from_map(map: &Map<String, Value>) -> JsonText {
        JsonText::of(map)
    }

    /// The compact JSON of a value whose serialization cannot fail (string keys, finite
    /// numbers): a `Value`, a map of them, a record's typed parts.
    pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> JsonText {
        // Serializing a `Value`, a `Map<String, Value>` or a typed record part (the only
        // callers) cannot fail: its keys are strings and its numbers finite.
        JsonText(to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The text `null`.
    pub fn null() -> JsonText {
        JsonText(RawValue::NULL.to_owned())
    }

    /// The text, compact JSON.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Whether the text is JSON `null`.
    pub fn is_null(&self) -> bool {
        self.as_str() == "null"
    }

    /// Whether the value nests containers (arrays, objects) more than `max` deep, as
    /// `limits::nests_deeper_than` counts for a `Value`: read off the text's brackets
    /// outside strings, without parsing it.
    pub fn nests_deeper_than(&self, max: usize) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for &b in self.as_str().as_bytes() {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        false
    }

    /// The value the text stands for.
    pub fn to_value(&self) -> Value {
        // The text came from a value `serde_json` held, at most its read depth deep, so it
        // parses; were it ever refused, the text itself is kept, as a string, not lost.
        serde_json::from_str(self.0.get()).unwrap_or_else(|_| Value::String(self.0.get().into()))
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> JsonText {
        JsonText::new(value)
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> JsonText {
        JsonText::new(&value)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Value> for JsonText {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JsonText, D::Error> {
        Value::deserialize(d).map(|v| JsonText::new(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json_leaf() -> impl Strategy<Value = Value> {
        crate::json::arb_leaf()
    }

    proptest! {
        /// D-193: the text's nesting, read off its brackets, is the value's (strings full
        /// of brackets, quotes and backslashes included), and its value equals serde's
        /// parse of the text, member order included.
        #[test]
        fn json_text_nests_and_parses_as_its_value(
            v in crate::json::arb_tree(
                prop_oneof![
                    Just(Value::Null),
                    any::<i64>().prop_map(Value::from),
                    "[\\[\\]{}\"\\\\a]{0,5}".prop_map(Value::from),
                ],
                "[\\[{\"\\\\]{0,2}",
            ),
            max in 0usize..5,
        ) {
            let t = JsonText::new(&v);
            prop_assert_eq!(
                t.nests_deeper_than(max),
                crate::limits::nests_deeper_than(&v, max)
            );
            let theirs: Value = serde_json::from_str(t.as_str()).expect("serde reads it");
            prop_assert_eq!(t.to_value().to_string(), theirs.to_string());
            prop_assert_eq!(t.to_value(), v);
        }
    }

    #[test]
    fn null_is_the_text_null() {
        assert!(JsonText::new(&Value::Null).is_null());
        assert!(!JsonText::new(&Value::from("null")).is_null());
        assert!(!JsonText::new(&serde_json::json!([null])).is_null());
    }

    proptest! {
        /// D-191: a value held as text writes the very bytes the value wrote (so the disk
        /// journal is unchanged), reads back from text and from a `Value`, and gives back
        /// the value, key order included.
        #[test]
        fn json_text_writes_and_reads_as_its_value(
            v in crate::json::arb_tree(json_leaf(), "[a-z\"\\\\]{0,3}")
        ) {
            let t = JsonText::new(&v);
            let by_value = serde_json::to_vec(&v).expect("a value writes");
            prop_assert_eq!(serde_json::to_vec(&t).expect("text writes"), by_value.clone());
            prop_assert_eq!(t.as_str().as_bytes(), &by_value[..]);
            prop_assert_eq!(
                serde_json::to_string_pretty(&t.to_value()).expect("pretty"),
                serde_json::to_string_pretty(&v).expect("pretty")
            );
            let from_text: JsonText = serde_json::from_slice(&by_value).expect("reads from text");
            let from_value: JsonText = serde_json::from_value(v.clone()).expect("reads from a value");
            prop_assert_eq!(&from_text, &t);
            prop_assert_eq!(&from_value, &t);
            prop_assert_eq!(serde_json::to_value(&t).expect("to a value"), v);
        }
    }
}
