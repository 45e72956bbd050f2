//! `--shard K/N`: a deterministic split of a campaign across CI runners.
//!
//! Owns: which cases and which generated seeds belong to shard K of N. Invariant: the N
//! shards partition the selection exactly (every case and every seed index in exactly
//! one shard), and membership depends only on the case id (a stable FNV-1a hash, so
//! adding a case never moves the others) or the seed's index — never on order, time or
//! the machine.

use std::fmt;

/// Shard `index` (0-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    /// Parse `K/N` (1 ≤ K ≤ N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text:?}: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 || k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard {
            index: k - 1,
            count: n,
        })
    }

    /// `K` of `K/N` (1-based).
    pub fn number(&self) -> u64 {
        self.index + 1
    }

    /// `N` of `K/N`.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the case with this id runs in this shard.
    pub fn takes_case(&self, id: &str) -> bool {
        fnv1a(FNV_OFFSET, id.as_bytes()) % self.count == self.index
    }

    /// Whether generated workflow number `i` (seed `SEED + i`) runs in this shard.
    pub fn takes_seed_index(&self, i: u64) -> bool {
        i % self.count == self.index
    }
}

/// FNV-1a's 64-bit offset basis: the hash of no bytes.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64-bit, continued from `h` over `bytes`: stable across builds and platforms.
pub(crate) fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!(Shard::parse("2/4").map(|s| s.to_string()), Ok("2/4".into()));
        for bad in ["0/4", "5/4", "1/0", "x/2", "3", "", "1/2/3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shards_partition_cases_and_seeds_exactly() {
        let n = 5;
        let shards: Vec<Shard> = (1..=n)
            .map(|k| Shard::parse(&format!("{k}/{n}")).expect("shard"))
            .collect();
        for i in 0..1000u64 {
            let id = format!("case-{i}");
            assert_eq!(shards.iter().filter(|s| s.takes_case(&id)).count(), 1);
            assert_eq!(shards.iter().filter(|s| s.takes_seed_index(i)).count(), 1);
        }
        // Every shard gets a fair part of the cases.
        for s in &shards {
            let mine = (0..1000)
                .filter(|i| s.takes_case(&format!("case-{i}")))
                .count();
            assert!((120..=280).contains(&mine), "{s}: {mine}");
        }
    }
}
