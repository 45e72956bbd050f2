//! The planner's id map (D-130, D-197, D-199): step id → index of its first declaration.
//!
//! A fast path, kept because it pays (D-331): it answers exactly as a plain
//! `HashMap<&str, usize>` filled in declared order, first declaration wins — the
//! definition, which `plan::id_map::tests::the_id_map_answers_as_a_plain_map` (property:
//! random ids sharing prefixes and lengths, repeated, past the inline prefix and the tag's
//! length byte) holds it equal to. Planning and validation resolve every id and edge end
//! through it ([`analyse`](super::analyse)).

use std::hash::BuildHasher;

/// Step id → index of its first declaration (D-130: foldhash, seeded per process, so a
/// crafted document cannot force collisions; nothing iterates the map, so plans do not
/// depend on the seed).
///
/// Open addressing with linear probing over a power-of-two table at most three quarters
/// full, sized once for the step count (it never grows). Each 32-byte slot holds the
/// id's first [`ID_PREFIX`] bytes (zero-padded) beside its index and a tag of hash bits
/// and length, so a probe confirms an id of up to [`ID_PREFIX`] bytes with one tag and
/// one fixed-size comparison, without reading the step's string; a longer id is
/// confirmed against the step's own string (`id_of`). A name is turned into its
/// [`IdKey`] once and probed with that (D-197). Look-ups come in batches
/// ([`IdMap::touch`]): the first slot of every look-up in the batch is loaded before any
/// is probed, so their cache misses overlap instead of queuing one behind another.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdMap {
    hasher: foldhash::fast::RandomState,
    /// Empty slots have tag 0; empty when there are no steps.
    slots: Vec<IdSlot>,
}

/// How many bytes of an id a map slot holds inline.
const ID_PREFIX: usize = 24;

/// How many look-ups [`analyse`](super::analyse) hashes and touches before probing them.
pub(super) const ID_BATCH: usize = 32;

/// 32 bytes, aligned so that a slot never straddles two cache lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct IdSlot {
    /// [`IdKey::tag`] of the id held; 0 marks an empty slot.
    tag: u32,
    index: u32,
    /// [`IdKey::prefix`] of the id held.
    prefix: [u64; ID_WORDS],
}

/// The first [`ID_PREFIX`] bytes of `bytes`, zero-padded, as little-endian words: equal
/// words mean equal padded prefixes. Whole words are read as they are; the last, partial
/// word is read as the 8 bytes ending where it ends, shifted down (or, in a name shorter
/// than a word, from two overlapping halves, or byte by byte), so no byte is copied twice.
#[inline]
fn padded_words(bytes: &[u8]) -> [u64; ID_WORDS] {
    let mut words = [0u64; ID_WORDS];
    let head = &bytes[..bytes.len().min(ID_PREFIX)];
    let mut rest = head;
    let mut i = 0;
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        words[i] = u64::from_le_bytes(*chunk);
        rest = tail;
        i += 1;
    }
    let k = rest.len();
    if k == 0 {
        return words;
    }
    let shift = |w: u64, by: usize| w >> (8 * by);
    words[i] = if let Some(window) = head.last_chunk::<8>() {
        // The 8 bytes ending with the partial word: its `k` bytes are the top ones.
        shift(u64::from_le_bytes(*window), 8 - k)
    } else if let (Some(lo), Some(hi)) = (head.first_chunk::<4>(), head.last_chunk::<4>()) {
        // 4 ≤ len < 8: the first 4 bytes, then the last `len - 4` from the last 4.
        u64::from(u32::from_le_bytes(*lo)) | shift(u64::from(u32::from_le_bytes(*hi)), 8 - k) << 32
    } else {
        head.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b))
    };
    words
}

/// How many words an [`IdKey`]'s prefix has.
const ID_WORDS: usize = ID_PREFIX / 8;

/// A name as the map probes for it: its hash, a tag and its first bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct IdKey {
    hash: u64,
    /// 24 bits of the hash above the name's length (saturated at 255); never 0. Equal tags
    /// mean equal lengths for any name shorter than 255 bytes.
    tag: u32,
    /// The name's first [`ID_PREFIX`] bytes, zero-padded ([`padded_words`]).
    prefix: [u64; ID_WORDS],
}

impl IdKey {
    /// Whether the id of `slot` (whose tag equals this key's) is `name`, this key's name;
    /// `full` reads the slot's whole id when the prefix cannot decide.
    fn matches<'a>(
        &self,
        slot: &IdSlot,
        name: &str,
        full: impl FnOnce(usize) -> Option<&'a str>,
    ) -> bool {
        // Equal tags mean equal lengths below 255 bytes; such a name of at most
        // `ID_PREFIX` bytes is the slot's id exactly when the padded prefixes are equal.
        // Word by word in registers: `==` on the arrays compiled to a 16-byte load of the
        // key just stored as two 8-byte words, a failed store-to-load forwarding that
        // stalled every probe (D-199).
        let [a, b, c] = slot.prefix;
        let [x, y, z] = self.prefix;
        (a ^ x) | (b ^ y) | (c ^ z) == 0
            && (name.len() <= ID_PREFIX || full(slot.index as usize) == Some(name))
    }
}

impl IdMap {
    pub(super) fn with_capacity(n: usize) -> IdMap {
        let slots = if n == 0 {
            Vec::new()
        } else {
            // ≤ 3/4 full, so every probe sequence meets an empty slot.
            vec![IdSlot::default(); (n + n / 3 + 1).next_power_of_two()]
        };
        IdMap {
            hasher: foldhash::fast::RandomState::default(),
            slots,
        }
    }

    pub(super) fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// `name`'s key from its `hash`: the hash, its tag and its padded first bytes.
    #[inline]
    pub(super) fn key(&self, name: &str, hash: u64) -> IdKey {
        let bytes = name.as_bytes();
        // At most 255 (fits the tag's low byte).
        let len = bytes.len().min(255) as u32;
        // The high hash bits pick the tag (the low ones pick the slot); a zero tag (an
        // empty id whose tag bits are zero) is moved off the empty marker.
        let tag = ((hash >> 40) as u32) << 8 | len;
        IdKey {
            hash,
            tag: if tag == 0 { 1 << 8 } else { tag },
            prefix: padded_words(bytes),
        }
    }

    /// The first slot of `hash`.
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.slots.len().wrapping_sub(1)
    }

    /// Load the first slot of each hash, so the probes that follow find them in cache.
    pub(super) fn touch(&self, hashes: &[u64]) {
        if self.slots.is_empty() {
            return;
        }
        let mut seen = 0u32;
        for &hash in hashes {
            seen ^= self.slots[self.home(hash)].tag;
        }
        std::hint::black_box(seen);
    }

    /// The slot holding `name` (whose key is `key`), or the empty slot where it would go.
    #[inline]
    fn find<'a>(
        &self,
        name: &str,
        key: &IdKey,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<(usize, bool)> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key.hash);
        loop {
            let slot = &self.slots[at];
            if slot.tag == 0 {
                return Some((at, false));
            }
            if slot.tag == key.tag && key.matches(slot, name, &id_of) {
                return Some((at, true));
            }
            at = (at + 1) & mask;
        }
    }

    /// The index of the step declaring `name` first; `id_of(i)` is step `i`'s id.
    pub(crate) fn get<'a>(
        &self,
        name: &str,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        self.get_keyed(name, &self.key(name, self.hash(name)), id_of)
    }

    /// The index of the step declaring `name` (whose hash is `hash`), if any: an edge
    /// end's look-up in the batches of [`analyse`](super::analyse).
    #[inline(always)]
    pub(super) fn resolve<'a>(
        &self,
        name: Option<&str>,
        hash: u64,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        let name = name?;
        self.get_keyed(name, &self.key(name, hash), id_of)
    }

    #[inline]
    fn get_keyed<'a>(
        &self,
        name: &str,
        key: &IdKey,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        match self.find(name, key, id_of)? {
            (at, true) => Some(self.slots[at].index as usize),
            (_, false) => None,
        }
    }

    /// Record `name` → `index` unless `name` is already there; returns the earlier index.
    /// At most the capacity's step count of ids are ever inserted.
    pub(super) fn insert_first<'a>(
        &mut self,
        name: &str,
        key: &IdKey,
        index: u32,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        let (at, found) = self.find(name, key, id_of)?;
        if found {
            return Some(self.slots[at].index as usize);
        }
        self.slots[at] = IdSlot {
            tag: key.tag,
            index,
            prefix: key.prefix,
        };
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The definition: the plain map, first declaration wins.
    fn plain_first<'a>(ids: &[&'a str]) -> HashMap<&'a str, usize> {
        let mut map = HashMap::new();
        for (i, &id) in ids.iter().enumerate() {
            map.entry(id).or_insert(i);
        }
        map
    }

    /// An id drawn to meet the map's edges: a shared stem cut or extended around the
    /// 8-byte words, the 24-byte inline prefix and the tag's 255-byte length, with an
    /// optional trailing NUL or non-ASCII tail.
    fn id() -> impl Strategy<Value = String> {
        let stems = prop::sample::select(vec!["", "s", "step-", "abcdefghijklmnopqrstuvw", "é"]);
        (
            stems,
            0usize..4,
            0usize..300,
            prop::option::of(prop::sample::select(vec!["\0", "x", "é"])),
        )
            .prop_map(|(stem, copies, cut, tail)| {
                let mut s = stem.repeat(copies + 1);
                s.push_str(&"q".repeat(cut % 30));
                if cut >= 250 {
                    s = format!("{}{s}", "y".repeat(cut));
                }
                if let Some(t) = tail {
                    s.push_str(t);
                }
                s
            })
    }

    proptest! {
        /// The fast path answers as the plain map: the same first declaration for every
        /// repeated id as it is inserted, the same index for every declared id, and no
        /// index for an id never declared.
        #[test]
        fn the_id_map_answers_as_a_plain_map(
            ids in prop::collection::vec(id(), 0..40),
            absent in prop::collection::vec(id(), 0..10),
        ) {
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let plain = plain_first(&refs);
            let id_of = |i: usize| refs.get(i).copied();
            let mut map = IdMap::with_capacity(refs.len());
            for (i, &id) in refs.iter().enumerate() {
                let first = map.insert_first(id, &map.key(id, map.hash(id)), i as u32, id_of);
                let want = plain.get(id).copied().filter(|&f| f != i);
                prop_assert_eq!(first, want, "{:?}", id);
            }
            for probe in refs.iter().copied().chain(absent.iter().map(String::as_str)) {
                prop_assert_eq!(map.get(probe, id_of), plain.get(probe).copied(), "{:?}", probe);
                prop_assert_eq!(map.resolve(Some(probe), map.hash(probe), id_of), plain.get(probe).copied());
            }
        }
    }

    #[test]
    fn the_id_map_tells_apart_ids_that_share_a_prefix_or_a_length() {
        let long = "a-very-long-step-identifier-";
        let ids: Vec<String> = vec![
            "x".into(),
            format!("{long}1"),
            format!("{long}2"),
            format!("{long}1"),
            long.into(),
            "".into(),
            "12345678901234567890".into(),
            "12345678901234567890x".into(),
            // At the 24-byte prefix and past it; differing only after it; a trailing NUL
            // (the padding's own byte); longer than the tag's length byte; not ASCII.
            "abcdefghijklmnopqrstuvwx".into(),
            "abcdefghijklmnopqrstuvwxy".into(),
            "abcdefghijklmnopqrstuvwxz".into(),
            "ab".into(),
            "ab\0".into(),
            "é".repeat(150),
            format!("{}!", "é".repeat(150)),
        ];
        let id_of = |i: usize| ids.get(i).map(String::as_str);
        let mut map = IdMap::with_capacity(ids.len());
        let firsts: Vec<Option<usize>> = (0..ids.len())
            .map(|i| {
                let id = &ids[i];
                map.insert_first(id, &map.key(id, map.hash(id)), i as u32, id_of)
            })
            .collect();
        let mut want = vec![None; ids.len()];
        want[3] = Some(1);
        assert_eq!(firsts, want, "only the repeated long id is a duplicate");
        for (i, id) in ids.iter().enumerate() {
            let want = if i == 3 { 1 } else { i };
            assert_eq!(map.get(id, id_of), Some(want), "{id:?}");
        }
        for absent in [
            &format!("{long}3")[..],
            "y",
            "1234567890123456789",
            "a-very-long",
            "abcdefghijklmnopqrstuvw",
            "abcdefghijklmnopqrstuvwxyz",
            "a",
            "ab\0\0",
            "\0",
            &"é".repeat(149),
        ] {
            assert_eq!(map.get(absent, id_of), None, "{absent:?}");
        }
        assert_eq!(IdMap::with_capacity(0).get("x", id_of), None);
    }

    /// The zero-padded first bytes of `bytes`, the plain way.
    fn padded_plainly(bytes: &[u8]) -> [u64; ID_WORDS] {
        let mut buf = [0u8; ID_PREFIX];
        let k = bytes.len().min(ID_PREFIX);
        buf[..k].copy_from_slice(&bytes[..k]);
        let mut words = [0u64; ID_WORDS];
        for (w, chunk) in words.iter_mut().zip(buf.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        words
    }

    proptest! {
        #[test]
        fn padded_words_are_the_zero_padded_prefix(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(padded_words(&bytes), padded_plainly(&bytes));
        }
    }

    #[test]
    fn padded_words_at_every_length() {
        // Every length around each word boundary, with no zero byte to hide a slip.
        let bytes: Vec<u8> = (1..=40).collect();
        for len in 0..=bytes.len() {
            assert_eq!(
                padded_words(&bytes[..len]),
                padded_plainly(&bytes[..len]),
                "{len}"
            );
        }
    }
}
