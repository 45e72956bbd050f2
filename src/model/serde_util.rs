//! Serde helpers for fields where JSON `null` and an absent key mean different things.
//!
//! The RFC distinguishes them in several places (`retry: null` is "no retry" and must
//! round-trip as written; a succeeded run's `output` may be a present `null`). Plain
//! `Option<T>` folds the two together, so these helpers keep the distinction.

use serde::{Deserialize, Deserializer};

/// `Option<Option<T>>`: absent → `None`, `null` → `Some(None)`, value → `Some(Some(v))`.
/// Use with `#[serde(default, deserialize_with = "double_option", skip_serializing_if = "Option::is_none")]`.
pub(crate) fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// `Option<Value>` (or `Option<JsonText>`) where a present `null` is kept as `Some(null)`.
/// Use with `#[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]`.
pub(crate) fn present<'de, T, D>(de: D) -> Result<Option<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    T::deserialize(de).map(Some)
}
