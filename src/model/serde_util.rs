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

// At most this many bytes of elements are reserved up front on a sequence's own word
// (`size_hint`). serde_json's hints are exact (a `Value` array's length, none from text),
// so this only bounds a dishonest deserializer.
use crate::limits::MAX_RESERVED_BYTES;

/// How many `T`s to reserve up front for an announced length `n`: all of them, up to
/// [`MAX_RESERVED_BYTES`] of elements.
pub(crate) fn reserved_len<T>(n: usize) -> usize {
    n.min(MAX_RESERVED_BYTES / std::mem::size_of::<T>().max(1))
}

/// A `Vec<T>` reserved once for the length the input announces (D-196). serde's own
/// `Vec` impl reserves at most 1 MiB up front and doubles from there, so a 100,000-step
/// workflow read from a `Value` moved every step it had read several times over.
struct SizedVec<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for SizedVec<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Elements<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Elements<T> {
            type Value = SizedVec<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(reserved_len::<T>(seq.size_hint().unwrap_or(0)));
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(SizedVec(out))
            }
        }
        de.deserialize_seq(Elements(std::marker::PhantomData))
    }
}

/// `Vec<T>`, reserved for the announced length. Use with `deserialize_with = "sized_vec"`.
pub(crate) fn sized_vec<'de, T, D>(de: D) -> Result<Vec<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    SizedVec::deserialize(de).map(|v| v.0)
}

/// `Option<Vec<T>>` (`null` → `None`), reserved for the announced length. Use with
/// `#[serde(default, deserialize_with = "sized_vec_option")]`.
pub(crate) fn sized_vec_option<'de, T, D>(de: D) -> Result<Option<Vec<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<SizedVec<T>>::deserialize(de).map(|v| v.map(|v| v.0))
}
