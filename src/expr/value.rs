//! Evaluation values and JS coercion: truthiness, `Number()`, `String()`, loose and strict
//! equality, SameValueZero, the JS property walk behind `var`, and `JSON.stringify`.
//!
//! Owns: the one place JS value semantics live. Knows nothing of operators or scopes.

use std::borrow::Cow;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::limits::MAX_NESTING_DEPTH;
use super::number::{json_number, number_to_string, number_value, string_to_number};

/// A value during evaluation. Arrays and objects borrowed from the data or the rule stay
/// borrowed (`Ref`), which also gives JS reference identity for `===` for free.
#[derive(Debug, Clone)]
pub(crate) enum Val<'a> {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
    /// A borrowed JSON array or object (scalars are always read into the variants above).
    Ref(&'a Value),
    /// A freshly built array (an evaluated array literal, `missing`, `map`, …).
    Arr(Vec<Val<'a>>),
    /// A freshly built JSON array or object (a materialised data root, `merge`).
    Owned(Rc<Value>),
}

impl<'a> Val<'a> {
    /// Read a JSON value: scalars become scalar variants, containers stay borrowed.
    #[inline]
    pub(crate) fn from_json(v: &'a Value) -> Val<'a> {
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => Val::Num(json_number(n)),
            Value::String(s) => Val::Str(Cow::Borrowed(s)),
            Value::Array(_) | Value::Object(_) => Val::Ref(v),
        }
    }

    #[inline]
    pub(crate) fn is_nullish(&self) -> bool {
        matches!(self, Val::Undefined | Val::Null)
    }

    fn as_json_container(&self) -> Option<&Value> {
        match self {
            Val::Ref(v) => Some(v),
            Val::Owned(v) => Some(v),
            _ => None,
        }
    }

    fn is_array(&self) -> bool {
        matches!(self, Val::Arr(_)) || self.as_json_container().is_some_and(Value::is_array)
    }

    /// Whether any array element satisfies `f`; `None` when this is not an array.
    pub(crate) fn any_item(&self, mut f: impl FnMut(&Val<'_>) -> bool) -> Option<bool> {
        match self {
            Val::Arr(items) => Some(items.iter().any(f)),
            Val::Ref(Value::Array(items)) => Some(items.iter().any(|i| f(&Val::from_json(i)))),
            Val::Owned(v) => match v.as_ref() {
                Value::Array(items) => Some(items.iter().any(|i| f(&Val::from_json(i)))),
                _ => None,
            },
            _ => None,
        }
    }

    /// Array elements as values, for arrays only.
    pub(crate) fn array_items(&self) -> Option<Vec<Val<'_>>> {
        match self {
            Val::Arr(items) => Some(items.clone()),
            Val::Ref(Value::Array(items)) => Some(items.iter().map(Val::from_json).collect()),
            Val::Owned(v) => match v.as_ref() {
                Value::Array(items) => Some(items.iter().map(Val::from_json).collect()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value as JSON output (`undefined` → null, numbers per [`number_value`]).
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Val::Undefined | Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Num(x) => number_value(*x),
            Val::Str(s) => Value::String(s.to_string()),
            Val::Ref(v) => (*v).clone(),
            Val::Arr(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Val::Owned(v) => v.as_ref().clone(),
        }
    }
}

/// The dialect's truthiness: JS `!!`, except that an empty array is falsy.
#[inline]
pub(crate) fn truthy(v: &Val<'_>) -> bool {
    match v {
        Val::Undefined | Val::Null => false,
        Val::Bool(b) => *b,
        Val::Num(x) => !(x.is_nan() || *x == 0.0),
        Val::Str(s) => !s.is_empty(),
        Val::Arr(items) => !items.is_empty(),
        Val::Ref(v) => !matches!(v, Value::Array(a) if a.is_empty()),
        Val::Owned(v) => !matches!(v.as_ref(), Value::Array(a) if a.is_empty()),
    }
}

/// JS `Number(v)`.
#[inline]
pub(crate) fn to_number(v: &Val<'_>) -> f64 {
    match v {
        Val::Undefined => f64::NAN,
        Val::Null => 0.0,
        Val::Bool(b) => f64::from(u8::from(*b)),
        Val::Num(x) => *x,
        Val::Str(s) => string_to_number(s),
        // ToPrimitive: an array becomes its `String()`, an object "[object Object]" (NaN).
        other if other.is_array() => string_to_number(&to_js_string(other)),
        _ => f64::NAN,
    }
}

/// [`to_number`] of a JSON value, without building a [`Val`].
#[inline]
pub(crate) fn json_to_number(v: &Value) -> f64 {
    match v {
        Value::Number(n) => json_number(n),
        Value::String(s) => string_to_number(s),
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        container => to_number(&Val::Ref(container)),
    }
}

/// [`truthy`] of a JSON value, without building a [`Val`].
#[inline]
pub(crate) fn json_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => {
            let x = json_number(n);
            !(x.is_nan() || x == 0.0)
        }
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(_) => true,
    }
}

/// JS `String(v)`: arrays join their elements with "," (null/undefined elements as ""),
/// objects are "[object Object]".
pub(crate) fn to_js_string(v: &Val<'_>) -> String {
    let mut out = String::new();
    write_js_string(v, &mut out, 0);
    out
}

fn write_js_string(v: &Val<'_>, out: &mut String, depth: usize) {
    match v {
        Val::Undefined => out.push_str("undefined"),
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Num(x) => out.push_str(&number_to_string(*x)),
        Val::Str(s) => out.push_str(s),
        other => match other.array_items() {
            // Past the nesting limit the elements are elided rather than recursed into.
            Some(_) if depth >= MAX_NESTING_DEPTH => {}
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !item.is_nullish() {
                        write_js_string(item, out, depth + 1);
                    }
                }
            }
            None => out.push_str("[object Object]"),
        },
    }
}

fn same_reference(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (Val::Ref(x), Val::Ref(y)) => std::ptr::eq(*x, *y),
        (Val::Owned(x), Val::Owned(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

fn is_container(v: &Val<'_>) -> bool {
    matches!(v, Val::Ref(_) | Val::Arr(_) | Val::Owned(_))
}

/// JS strict equality `===`: objects and arrays by reference.
pub(crate) fn strict_eq(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (Val::Undefined, Val::Undefined) | (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Num(x), Val::Num(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x == y,
        _ => same_reference(a, b),
    }
}

/// SameValueZero (`Array.prototype.includes`): strict equality, except NaN equals NaN.
pub(crate) fn same_value_zero(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) if x.is_nan() && y.is_nan() => true,
        _ => strict_eq(a, b),
    }
}

/// JS abstract (loose) equality `==`.
pub(crate) fn loose_eq(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (x, y) if x.is_nullish() || y.is_nullish() => x.is_nullish() && y.is_nullish(),
        (Val::Num(_), Val::Num(_)) | (Val::Str(_), Val::Str(_)) | (Val::Bool(_), Val::Bool(_)) => {
            strict_eq(a, b)
        }
        (x, y) if is_container(x) && is_container(y) => same_reference(x, y),
        (Val::Num(x), Val::Str(s)) | (Val::Str(s), Val::Num(x)) => *x == string_to_number(s),
        (Val::Bool(x), other) | (other, Val::Bool(x)) => {
            loose_eq(&Val::Num(f64::from(u8::from(*x))), other)
        }
        // ToPrimitive of an array or object is its `String()`.
        (x, prim) | (prim, x) if is_container(x) => {
            loose_eq(&Val::Str(Cow::Owned(to_js_string(x))), prim)
        }
        _ => false,
    }
}

/// One JS property read `value[seg]`, as `var` performs it. Objects read keys; arrays read
/// canonical indexes and `length`; strings read `length` (UTF-16 units) and single
/// characters by UTF-16 index. Inherited properties (`constructor`, …) are not emulated.
pub(crate) fn property<'a>(value: &Val<'a>, seg: &str) -> Option<Val<'a>> {
    match value {
        Val::Ref(v) => json_property(v, seg),
        Val::Owned(v) => json_property(v, seg).map(|p| detach(&p)),
        Val::Arr(items) => {
            if seg == "length" {
                Some(Val::Num(items.len() as f64))
            } else {
                canonical_index(seg).and_then(|i| items.get(i).cloned())
            }
        }
        Val::Str(s) => string_property(s, seg),
        _ => None,
    }
}

/// Copy a value out of a shorter-lived borrow (a property of an `Owned` root, the items
/// of a fresh array): scalars and strings as they are, an array item by item (so an
/// `undefined` item stays one), borrowed or owned JSON as owned JSON.
pub(crate) fn detach<'a>(v: &Val<'_>) -> Val<'a> {
    match v {
        Val::Undefined => Val::Undefined,
        Val::Null => Val::Null,
        Val::Bool(b) => Val::Bool(*b),
        Val::Num(x) => Val::Num(*x),
        Val::Str(s) => Val::Str(Cow::Owned(s.to_string())),
        Val::Arr(items) => Val::Arr(items.iter().map(detach).collect()),
        Val::Ref(_) | Val::Owned(_) => Val::Owned(Rc::new(v.to_json())),
    }
}

/// Key lookup. Small objects (the common case for step outputs and scopes) are scanned
/// linearly: comparing a few short keys is cheaper than hashing one.
/// The scan is always inlined into the walk; the hashed lookup is a call.
#[inline(always)]
pub(crate) fn object_get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 8 {
        for (k, v) in map {
            if key_eq(k, key) {
                return Some(v);
            }
        }
        None
    } else {
        hashed_get(map, key)
    }
}

#[inline(never)]
fn hashed_get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key)
}

/// String equality for object keys.
#[inline]
fn key_eq(a: &str, b: &str) -> bool {
    // Keys of one length mostly differ in their first byte: test it before comparing more.
    a.len() == b.len()
        && a.as_bytes().first() == b.as_bytes().first()
        && same_bytes(a.as_bytes(), b.as_bytes())
}

/// `a == b` for strings, inlined for the short keys and values data mostly has.
#[inline]
pub(crate) fn same_str(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// `a == b`, without calling out to `memcmp` for the short keys data mostly has: two
/// overlapping word loads cover 4 to 16 bytes.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    fn word<const N: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<N>() == b.first_chunk::<N>() && a.last_chunk::<N>() == b.last_chunk::<N>()
    }
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        8..=16 => word::<8>(a, b),
        4..=7 => word::<4>(a, b),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

pub(crate) fn json_property<'a>(v: &'a Value, seg: &str) -> Option<Val<'a>> {
    match v {
        Value::Object(map) => object_get(map, seg).map(Val::from_json),
        Value::Array(items) => {
            if seg == "length" {
                Some(Val::Num(items.len() as f64))
            } else {
                canonical_index(seg)
                    .and_then(|i| items.get(i))
                    .map(Val::from_json)
            }
        }
        Value::String(s) => string_property(s, seg),
        _ => None,
    }
}

pub(crate) fn string_property<'a>(s: &str, seg: &str) -> Option<Val<'a>> {
    if seg == "length" {
        return Some(Val::Num(s.encode_utf16().count() as f64));
    }
    let i = canonical_index(seg)?;
    let unit = s.encode_utf16().nth(i)?;
    // A lone surrogate half (JS can hand one back) has no Rust string form: absent.
    char::from_u32(u32::from(unit)).map(|c| Val::Str(Cow::Owned(c.to_string())))
}

/// A canonical array index ("0", "17"; not "01", "+1", "-1" or "1.0"), as JS property
/// keys treat them.
pub(crate) fn canonical_index(seg: &str) -> Option<usize> {
    let b = seg.as_bytes();
    if b.is_empty() || (b.len() > 1 && b[0] == b'0') || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    seg.parse().ok()
}

/// `JSON.stringify` with compact output, keys in JS property order (array indexes first,
/// D-240) and JS number formatting. `None` past [`MAX_NESTING_DEPTH`].
pub(crate) fn json_stringify(v: &Val<'_>) -> Option<String> {
    let mut out = String::new();
    match v {
        Val::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match item {
                    Val::Undefined => out.push_str("null"),
                    other => out.push_str(&json_stringify(other)?),
                }
            }
            out.push(']');
        }
        Val::Undefined => return None,
        other => write_json(&other.to_json(), &mut out, 0)?,
    }
    Some(out)
}

/// Compact JSON text of a JSON value with JS number formatting.
pub(crate) fn write_json(v: &Value, out: &mut String, depth: usize) -> Option<()> {
    if depth > MAX_NESTING_DEPTH {
        return None;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let x = json_number(n);
            if x.is_finite() {
                out.push_str(&number_to_string(x));
            } else {
                out.push_str("null");
            }
        }
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out, depth)?,
    }
    Some(())
}

/// An object's members in `JSON.stringify` order (ECMA-262 OrdinaryOwnPropertyKeys):
/// array-index keys (canonical decimal, at most 2³²−2) first, ascending by value, then
/// every other key in insertion order (D-240).
fn write_object(map: &Map<String, Value>, out: &mut String, depth: usize) -> Option<()> {
    out.push('{');
    let mut first = true;
    let mut member = |k: &str, item: &Value, out: &mut String| -> Option<()> {
        if !first {
            out.push(',');
        }
        first = false;
        write_json_string(k, out);
        out.push(':');
        write_json(item, out, depth + 1)
    };
    // Most objects have no index key: one cheap look at each key's first byte decides.
    if map
        .keys()
        .any(|k| k.starts_with(|c: char| c.is_ascii_digit()))
    {
        let mut indexed: Vec<(u32, &String, &Value)> = map
            .iter()
            .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
            .collect();
        indexed.sort_unstable_by_key(|(i, _, _)| *i);
        for (_, k, item) in &indexed {
            member(k, item, out)?;
        }
        for (k, item) in map.iter().filter(|(k, _)| array_index(k).is_none()) {
            member(k, item, out)?;
        }
    } else {
        for (k, item) in map {
            member(k, item, out)?;
        }
    }
    out.push('}');
    Some(())
}

/// A JS array index: a canonical decimal key (`"0"`, `"17"`; not `"01"` or `"-1"`) whose
/// value is at most 2³²−2. Larger integer keys are ordinary string keys in JS.
fn array_index(key: &str) -> Option<u32> {
    canonical_index(key)
        .and_then(|i| u32::try_from(i).ok())
        .filter(|i| *i != u32::MAX)
}

/// A JSON string literal (quotes and escapes as serde_json writes them, which is what
/// `JSON.stringify` writes for every string Rust can hold).
fn write_json_string(s: &str, out: &mut String) {
    out.push_str(&Value::String(s.to_owned()).to_string());
}

/// How a resolved value joins a string (ENV-1, TPL-4): strings verbatim, null/absent as
/// "", numbers and booleans by `String()`, arrays and objects as compact JSON.
pub(crate) fn template_string(v: &Val<'_>) -> Option<String> {
    let mut out = String::new();
    write_template_string(v, &mut out)?;
    Some(out)
}

/// [`template_string`], appended to `out` (a template's text is built in one buffer).
/// `None` past [`MAX_NESTING_DEPTH`], when nothing has been appended.
pub(crate) fn write_template_string(v: &Val<'_>, out: &mut String) -> Option<()> {
    match v {
        Val::Undefined | Val::Null => {}
        Val::Str(s) => out.push_str(s),
        Val::Bool(_) | Val::Num(_) => write_js_string(v, out, 0),
        other => out.push_str(&json_stringify(other)?),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(x: &str) -> Val<'_> {
        Val::Str(Cow::Borrowed(x))
    }

    #[test]
    fn loose_equality_matches_js() {
        let arr12 = json!([1, 2]);
        let empty = json!([]);
        assert!(loose_eq(&Val::Num(1.0), &s("1")));
        assert!(loose_eq(&Val::Null, &Val::Undefined));
        assert!(!loose_eq(&Val::Null, &Val::Num(0.0)));
        assert!(!loose_eq(&Val::Null, &Val::Bool(false)));
        assert!(loose_eq(&Val::Ref(&empty), &Val::Bool(false)));
        assert!(loose_eq(&Val::Ref(&arr12), &s("1,2")));
        assert!(!loose_eq(&Val::Num(f64::NAN), &Val::Num(f64::NAN)));
        assert!(loose_eq(&Val::Bool(true), &s("1")));
    }

    #[test]
    fn strict_equality_is_by_reference_for_containers() {
        let a = json!([1]);
        let b = json!([1]);
        assert!(!strict_eq(&Val::Ref(&a), &Val::Ref(&b)));
        assert!(strict_eq(&Val::Ref(&a), &Val::Ref(&a)));
        assert!(strict_eq(&Val::Num(0.0), &Val::Num(-0.0)));
    }

    #[test]
    fn number_and_string_coercion() {
        let five = json!([5]);
        let obj = json!({});
        assert_eq!(to_number(&Val::Ref(&five)), 5.0);
        assert!(to_number(&Val::Ref(&obj)).is_nan());
        assert_eq!(to_number(&Val::Bool(true)), 1.0);
        let nested = json!([1, [2, null], "x"]);
        assert_eq!(to_js_string(&Val::Ref(&nested)), "1,2,,x");
        assert_eq!(to_js_string(&Val::Ref(&obj)), "[object Object]");
    }

    #[test]
    fn property_walk_emulates_length_and_string_index() {
        let v = json!({"items": [1, 2, 3], "s": "héllo", "e": "😀"});
        let items = json_property(&v, "items").expect("items");
        assert!(matches!(property(&items, "length"), Some(Val::Num(x)) if x == 3.0));
        assert!(property(&items, "01").is_none());
        let st = json_property(&v, "s").expect("s");
        assert!(matches!(property(&st, "1"), Some(Val::Str(c)) if c == "é"));
        let e = json_property(&v, "e").expect("e");
        assert!(matches!(property(&e, "length"), Some(Val::Num(x)) if x == 2.0));
        assert!(property(&e, "0").is_none());
    }

    /// D-240: `JSON.stringify` key order (observed in Node 20): array-index keys first,
    /// ascending; 2³²−1, leading zeros and signs are ordinary keys in insertion order.
    #[test]
    fn stringify_orders_array_index_keys_first() {
        let v = json!({"x": 1, "20": "b", "10": "a", "4294967295": 2, "4294967294": 3, "01": 4, "-1": 5});
        assert_eq!(
            json_stringify(&Val::Ref(&v)).expect("fits"),
            r#"{"10":"a","20":"b","4294967294":3,"x":1,"4294967295":2,"01":4,"-1":5}"#
        );
        let nested = json!([{"b": {"2": 1, "1": 2}, "0": null}]);
        assert_eq!(
            json_stringify(&Val::Ref(&nested)).expect("fits"),
            r#"[{"0":null,"b":{"1":2,"2":1}}]"#
        );
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("4294967294"), Some(u32::MAX - 1));
        assert_eq!(array_index("4294967295"), None);
        assert_eq!(array_index("99999999999999999999999"), None);
    }

    #[test]
    fn stringify_is_compact_js() {
        let v = json!({"b": 1.0, "a": [1e21, "x\"y"], "c": null});
        assert_eq!(
            json_stringify(&Val::Ref(&v)).expect("fits"),
            r#"{"b":1,"a":[1e+21,"x\"y"],"c":null}"#
        );
    }
}
