//! A type's unknown members, kept for the lossless round trip (MODEL-round-trip).

use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The unknown members of a step, its `uses`, an edge or a step record: a map behind a
/// box, and no box at all when there are none (D-196). Nearly every document and record
/// has none, so each carries 8 bytes here instead of an inline 72-byte map.
///
/// It reads as a [`Map`] (`Deref`), empty when absent, and a mutable borrow makes the map
/// on first use (`DerefMut`). With `#[serde(flatten)]` it (de)serializes exactly as the
/// map it holds.
#[derive(Debug, Clone, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

/// What an absent [`Extra`] reads as.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl Extra {
    /// No unknown members.
    pub fn new() -> Extra {
        Extra(None)
    }

    /// The members, or `None` when there are none.
    pub fn as_map(&self) -> Option<&Map<String, Value>> {
        self.0.as_deref()
    }

    /// Member `key`, mutably, without making a map when there is none (a `DerefMut`
    /// borrow would).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.as_mut()?.get_mut(key)
    }

    /// Remove member `key`, keeping the others' order, without making a map when there
    /// is none.
    pub fn shift_remove(&mut self, key: &str) -> Option<Value> {
        self.0.as_mut()?.shift_remove(key)
    }

    /// `Map::remove` (which swaps the last member into the gap), without making a map
    /// when there is none.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.0.as_mut()?.remove(key)
    }

    /// Add `members` (a later one replaces an earlier one's value), making the map only
    /// when there is one.
    pub fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, members: I) {
        let mut members = members.into_iter().peekable();
        if members.peek().is_some() {
            Map::extend(&mut **self, members);
        }
    }

    /// The members as a map of their own.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl From<Map<String, Value>> for Extra {
    /// Boxes `map` unless it is empty.
    fn from(map: Map<String, Value>) -> Extra {
        Extra((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl From<Extra> for Map<String, Value> {
    fn from(extra: Extra) -> Map<String, Value> {
        extra.into_map()
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(members: I) -> Extra {
        Extra::from(members.into_iter().collect::<Map<String, Value>>())
    }
}

impl IntoIterator for Extra {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_map().into_iter()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Box::default)
    }
}

impl PartialEq for Extra {
    /// Equal when the members are: a map made empty by a mutable borrow equals none.
    fn eq(&self, other: &Extra) -> bool {
        **self == **other
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extra {
    /// As `Map`'s own `Deserialize` (a later duplicate replaces an earlier one's value in
    /// its place; a unit is an empty map), but the map is made only when a member comes
    /// (D-197): with `flatten` every step, `uses` and edge is asked for its unknown
    /// members, and nearly all have none.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Extra, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Extra;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<Extra, E> {
                Ok(Extra::new())
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<Extra, A::Error> {
                let mut extra = Extra::new();
                while let Some((name, value)) = access.next_entry::<String, Value>()? {
                    extra.0.get_or_insert_with(Box::default).insert(name, value);
                }
                Ok(extra)
            }
        }
        d.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        id: String,
        #[serde(flatten)]
        extra: Extra,
    }

    #[test]
    fn an_extra_round_trips_as_the_map_it_holds_and_boxes_only_members() {
        for doc in [
            json!({"id": "a"}),
            json!({"id": "a", "x": 1, "y": {"z": [null]}}),
            json!({"z": true, "id": "a", "a": "b"}),
        ] {
            let held: Holder = serde_json::from_value(doc.clone()).expect("reads");
            assert_eq!(held.extra.is_empty(), held.extra.as_map().is_none());
            assert_eq!(serde_json::to_value(&held).expect("writes"), doc);
            let text = serde_json::to_string(&doc).expect("text");
            let from_text: Holder = serde_json::from_str(&text).expect("reads text");
            assert_eq!(from_text, held);
        }
        // A repeated member replaces the earlier value in its place, as `Map` reads it.
        let text = r#"{"id":"a","x":1,"y":2,"x":3}"#;
        let held: Holder = serde_json::from_str(text).expect("reads text");
        let as_map: Map<String, Value> = serde_json::from_str(text).expect("reads a map");
        let members: Vec<(&String, &Value)> = held.extra.iter().collect();
        let want: Vec<(&String, &Value)> = as_map.iter().filter(|(k, _)| *k != "id").collect();
        assert_eq!(members, want);
        let mut extra = Extra::new();
        assert!(extra.is_empty() && extra.get("k").is_none());
        extra.insert("k".to_owned(), json!(1));
        assert_eq!(extra.get("k"), Some(&json!(1)));
        assert_eq!(Map::from(extra.clone()).len(), 1);
        assert_eq!(Extra::from(Map::new()), Extra::new());
        let mut untouched = Extra::new();
        assert!(untouched.remove("absent").is_none() && untouched.get_mut("absent").is_none());
        assert!(untouched.as_map().is_none(), "a look-up makes no map");
        untouched.extend(Map::new());
        assert!(
            untouched.as_map().is_none(),
            "extending by nothing makes no map"
        );
        untouched.extend([("a".to_owned(), json!(2))]);
        assert_eq!(untouched.get("a"), Some(&json!(2)));
        let mut emptied = Extra::new();
        assert!(emptied.iter_mut().next().is_none());
        assert_eq!(emptied, Extra::new(), "an emptied map equals none");
    }
}
