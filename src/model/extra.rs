//! A type's unknown members, kept for the lossless round trip (MODEL-round-trip).

use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The unknown members of a step, its `uses` or an edge: a map behind a box, and no box at
/// all when there are none (D-196). Nearly every document has none, so a step or an edge
/// carries 8 bytes here instead of an inline 72-byte map.
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
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Extra, D::Error> {
        Map::deserialize(d).map(Extra::from)
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
        let mut extra = Extra::new();
        assert!(extra.is_empty() && extra.get("k").is_none());
        extra.insert("k".to_owned(), json!(1));
        assert_eq!(extra.get("k"), Some(&json!(1)));
        assert_eq!(Map::from(extra.clone()).len(), 1);
        assert_eq!(Extra::from(Map::new()), Extra::new());
        let mut emptied = Extra::new();
        assert!(emptied.remove("absent").is_none());
        assert_eq!(emptied, Extra::new(), "an emptied map equals none");
    }
}
