//! One walk's `steps` root layer (D-187, D-195): the entries `steps.<id> = { output, meta? }`
//! a walk published, in publication order.
//!
//! A run keeps every published entry to its end, because any later expression may read
//! it. Held as parsed JSON, a small output costs ten times its text, and a long run's
//! scope was most of its peak memory. So an entry the engine published from a record
//! keeps the compact JSON texts that record was written with, and the parsed value only
//! while it is in use: the value it was published with, while it is among the layer's
//! [`HOT`] newest, or the one a later read parsed from the texts, until [`HOT`] such
//! parses have gathered. Only a write (which has the layer to itself) drops a parse; a
//! later read parses it again. An entry published as a value (a host's or a test's scope, a sealed output
//! re-materialised) has no texts and keeps its value.
//!
//! Every read sees exactly the value the entry was published with: the texts are what
//! `serde_json` wrote from it (numbers round-trip, member order is kept), and a value that
//! could not be rebuilt from texts is never published with them.

use std::sync::{Mutex, OnceLock};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::json::JsonText;

/// A layer keeps the parsed values of its newest `HOT` text-backed entries, and up to `HOT`
/// more that reads parsed again.
const HOT: usize = 64;

/// One step's entry: its texts (when it has them) and its value, parsed while in use.
struct Entry {
    /// `None`: published as a value, which is kept.
    output: Option<JsonText>,
    /// META-4: the step's meta, for a text-backed entry that carries it.
    meta: Option<JsonText>,
    value: OnceLock<Box<Value>>,
}

/// A step's scope entry `{ output, meta? }` (META-4: meta only for succeeded app steps),
/// sized for what it holds: a scope keeps one per step of the run.
pub(crate) fn entry_value(output: Value, meta: Option<Value>) -> Value {
    let mut entry = Map::with_capacity(1 + usize::from(meta.is_some()));
    entry.insert("output".into(), output);
    if let Some(meta) = meta {
        entry.insert("meta".into(), meta);
    }
    Value::Object(entry)
}

impl Entry {
    /// The entry's value as it was published, rebuilt from its texts.
    fn rebuild(&self) -> Value {
        let output = self.output.as_ref().map_or(Value::Null, JsonText::to_value);
        entry_value(output, self.meta.as_ref().map(JsonText::to_value))
    }

    /// A copy of the entry's value, without keeping a parse of it.
    fn to_value(&self) -> Value {
        match self.value.get() {
            Some(v) => Value::clone(v),
            None => self.rebuild(),
        }
    }
}

impl Clone for Entry {
    /// A text-backed entry is copied as its texts; its value is parsed again when read.
    fn clone(&self) -> Entry {
        let value = OnceLock::new();
        if self.output.is_none()
            && let Some(v) = self.value.get()
        {
            let _ = value.set(v.clone());
        }
        Entry {
            output: self.output.clone(),
            meta: self.meta.clone(),
            value,
        }
    }
}

/// One walk's `steps` layer: step id → entry, in publication order (a republished id
/// keeps its place).
#[derive(Default)]
pub(crate) struct StepsLayer {
    entries: IndexMap<Box<str>, Entry, foldhash::fast::FixedState>,
    /// Positions of text-backed entries that a read parsed again (or that were republished
    /// in place), oldest first: their values are dropped together, by a later write.
    hot: Mutex<Vec<usize>>,
    /// The whole layer as one object, built when read whole, dropped by any write.
    whole: OnceLock<Value>,
}

impl StepsLayer {
    /// A layer with room for `n` entries.
    pub(crate) fn with_capacity(n: usize) -> StepsLayer {
        StepsLayer {
            entries: IndexMap::with_capacity_and_hasher(n, Default::default()),
            ..StepsLayer::default()
        }
    }

    /// A layer holding each member of `object` as an entry value.
    pub(crate) fn from_object(object: &Map<String, Value>) -> StepsLayer {
        let mut layer = StepsLayer::with_capacity(object.len());
        for (k, v) in object {
            layer.insert_value(k, v.clone());
        }
        layer
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.entries.contains_key(id)
    }

    /// Set `id`'s entry to `value`, kept as it is.
    pub(crate) fn insert_value(&mut self, id: &str, value: Value) {
        self.write(
            id,
            Entry {
                output: None,
                meta: None,
                value: OnceLock::from(Box::new(value)),
            },
        );
    }

    /// Set `id`'s entry to `{ output, meta? }` from the texts its record holds; `live`,
    /// when given, is that entry's value, the one the texts were written from (D-195).
    /// Without it the entry is parsed when first read.
    pub(crate) fn insert_texts(
        &mut self,
        id: &str,
        output: JsonText,
        meta: Option<JsonText>,
        live: Option<Value>,
    ) {
        let value = OnceLock::new();
        if let Some(live) = live {
            let _ = value.set(Box::new(live));
        }
        let at = self.write(
            id,
            Entry {
                output: Some(output),
                meta,
                value,
            },
        );
        let newest = at + 1 == self.entries.len();
        // The entry published HOT writes ago is no longer among the newest.
        if newest
            && let Some(old) = at.checked_sub(HOT)
            && let Some((_, e)) = self.entries.get_index_mut(old)
            && e.output.is_some()
        {
            e.value.take();
        }
        let hot = self.hot.get_mut().unwrap_or_else(|p| p.into_inner());
        if !newest {
            // Republished in place: tracked like a parse, so that it is dropped in turn.
            hot.push(at);
        }
        if hot.len() >= HOT {
            // Parses that reads (or republishing) added: dropped together, parsed again
            // when read again.
            for at in hot.drain(..) {
                if let Some((_, e)) = self.entries.get_index_mut(at)
                    && e.output.is_some()
                {
                    e.value.take();
                }
            }
        }
    }

    fn write(&mut self, id: &str, entry: Entry) -> usize {
        self.whole.take();
        match self.entries.get_full_mut(id) {
            Some((at, _, e)) => {
                *e = entry;
                at
            }
            None => self.entries.insert_full(id.into(), entry).0,
        }
    }

    /// Remove `id`'s entry (the others keep their order).
    pub(crate) fn remove(&mut self, id: &str) {
        if self.entries.shift_remove(id).is_some() {
            self.whole.take();
            // Positions moved: forget them, and every parse they tracked with them.
            self.hot
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
            for e in self.entries.values_mut() {
                if e.output.is_some() {
                    e.value.take();
                }
            }
        }
    }

    /// The entry `steps.<id>`, parsed from its texts if it is not in use.
    pub(crate) fn get(&self, id: &str) -> Option<&Value> {
        let (at, _, e) = self.entries.get_full(id)?;
        if let Some(v) = e.value.get() {
            return Some(v);
        }
        let mut parsed = false;
        let v = e.value.get_or_init(|| {
            parsed = true;
            Box::new(e.rebuild())
        });
        if parsed {
            self.hot.lock().unwrap_or_else(|p| p.into_inner()).push(at);
        }
        Some(v)
    }

    /// The whole layer as one object (built once per write).
    pub(crate) fn whole(&self) -> &Value {
        self.whole.get_or_init(|| {
            let mut m = Map::with_capacity(self.entries.len());
            for (k, e) in &self.entries {
                m.insert(k.to_string(), e.to_value());
            }
            Value::Object(m)
        })
    }

    /// `layers` (outermost first) as one layer: an inner entry replaces an outer one in
    /// its place, as publishing into a copy of the outer entries would have placed it.
    pub(crate) fn merged<'l>(layers: impl Iterator<Item = &'l StepsLayer>) -> StepsLayer {
        let mut out = StepsLayer::default();
        for layer in layers {
            for (k, e) in &layer.entries {
                out.write(k, e.clone());
            }
        }
        out
    }

    /// Every entry as `(id, value)`, in order, without keeping parses.
    pub(crate) fn to_entries(&self) -> impl Iterator<Item = (&str, Value)> + '_ {
        self.entries.iter().map(|(k, e)| (&**k, e.to_value()))
    }
}

impl Clone for StepsLayer {
    fn clone(&self) -> StepsLayer {
        StepsLayer {
            entries: self.entries.clone(),
            hot: Mutex::new(Vec::new()),
            whole: OnceLock::new(),
        }
    }
}

impl PartialEq for StepsLayer {
    /// Equal when they hold the same entries, in the same order, with equal values.
    fn eq(&self, other: &StepsLayer) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|((a, ea), (b, eb))| a == b && ea.to_value() == eb.to_value())
    }
}

impl std::fmt::Debug for StepsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.to_entries()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_entry(layer: &mut StepsLayer, id: &str, output: Value, meta: Option<Value>) {
        let live = match &meta {
            Some(m) => json!({"output": output, "meta": m}),
            None => json!({"output": output}),
        };
        let meta = meta.as_ref().map(JsonText::new);
        layer.insert_texts(id, JsonText::new(&output), meta, Some(live));
    }

    /// D-195: a text-backed entry reads as the value it was published with, before and
    /// after its parse is dropped, and only the newest parses are kept.
    #[test]
    fn an_entry_reads_as_published_whether_or_not_its_parse_is_kept() {
        let mut layer = StepsLayer::default();
        let n = 5 * HOT;
        let want =
            |i: usize| json!({"output": {"i": i, "f": 0.1 + i as f64, "s": format!("\"{i}\\")}});
        for i in 0..n {
            let meta = (i % 3 == 0).then(|| json!({"app": "a", "connectionId": null}));
            text_entry(
                &mut layer,
                &format!("s{i}"),
                want(i)["output"].clone(),
                meta,
            );
        }
        fn parsed(layer: &StepsLayer) -> usize {
            layer
                .entries
                .values()
                .filter(|e| e.value.get().is_some())
                .count()
        }
        assert!(parsed(&layer) < 2 * HOT, "{} parses kept", parsed(&layer));
        for i in 0..n {
            let mut expected = want(i);
            if i % 3 == 0 {
                expected["meta"] = json!({"app": "a", "connectionId": null});
            }
            assert_eq!(layer.get(&format!("s{i}")), Some(&expected), "s{i}");
        }
        let keys: Vec<&String> = layer
            .whole()
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys.len(), n);
        assert_eq!(keys[7], "s7");
        // A write drops the older parses again; a value entry is always kept.
        layer.insert_value("v", json!({"output": [1]}));
        text_entry(&mut layer, "t", json!(1), None);
        for i in 0..2 * HOT {
            text_entry(&mut layer, &format!("u{i}"), json!(i), None);
        }
        assert!(
            parsed(&layer) <= 2 * HOT + 1,
            "{} parses kept",
            parsed(&layer)
        );
        assert_eq!(layer.get("v"), Some(&json!({"output": [1]})));
        assert_eq!(
            layer.get("s0").map(|v| &v["output"]),
            Some(&want(0)["output"])
        );
    }

    /// A removal keeps the others' order and values; a copy and a merge read the same.
    #[test]
    fn remove_copy_and_merge_keep_every_other_entry() {
        let mut a = StepsLayer::default();
        for i in 0..3 * HOT {
            text_entry(&mut a, &format!("s{i}"), json!(i), None);
        }
        let copy = a.clone();
        assert_eq!(copy, a);
        a.remove("s1");
        assert!(!a.contains("s1") && copy.contains("s1"));
        assert_eq!(a.get("s2"), Some(&json!({"output": 2})));
        assert_eq!(a.len(), 3 * HOT - 1);
        let mut inner = StepsLayer::default();
        inner.insert_value("s0", json!("replaced"));
        inner.insert_value("new", json!(true));
        let merged = StepsLayer::merged([&a, &inner].into_iter());
        let order: Vec<&str> = merged.entries.keys().map(|k| &**k).collect();
        assert_eq!(&order[..2], ["s0", "s2"]);
        assert_eq!(order.last(), Some(&"new"));
        assert_eq!(merged.get("s0"), Some(&json!("replaced")));
        assert_eq!(merged.get("s5"), Some(&json!({"output": 5})));
    }
}
