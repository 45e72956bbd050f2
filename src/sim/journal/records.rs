//! The journal's records: their JSON forms, the frame around each, the authentication chain
//! and the mirror a checkpoint updates in place.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{FRAME_HEADER, JournalError, RECORD_MAX, TAG_BYTES};
use crate::host::SealingKey;
use crate::host::sealing::KeyUse;
use crate::model::{RunState, RunStatePatch};
use crate::sim::world::WorldSnapshot;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Header {
    pub(super) format: String,
    pub(super) run_id: String,
    /// D-260: what the run was started from when it is not a w6w workflow — a dialect
    /// document's identity (`{dialect, documentSha256, workflowSha256}`), checked by
    /// `resume` and `replay` before anything runs. Absent for a w6w run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) source: Option<Value>,
}

/// D-251: the authentication chain of a `journal-3` file — the journal sub-key of the
/// sealing key, the previous record's tag and the next record's index.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Chain {
    pub(super) key: [u8; 32],
    pub(super) prev: [u8; TAG_BYTES],
    pub(super) index: u64,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain {{ index: {} }}", self.index)
    }
}

impl Chain {
    /// The chain of a journal's first record (its header).
    pub(super) fn start(key: &SealingKey) -> Self {
        Chain {
            key: key.derive(KeyUse::Journal),
            prev: [0; TAG_BYTES],
            index: 0,
        }
    }

    /// The tag of the next record (`kind` + `json`).
    pub(super) fn tag(&self, kind: u8, json: &[u8]) -> [u8; TAG_BYTES] {
        use hmac::Mac as _;
        let mut out = [0u8; TAG_BYTES];
        // HMAC takes a key of any length: construction cannot fail.
        if let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key) {
            mac.update(b"w6w-sim journal record v3");
            mac.update(&self.prev);
            mac.update(&self.index.to_be_bytes());
            mac.update(&[kind]);
            mac.update(json);
            out.copy_from_slice(&mac.finalize().into_bytes());
        }
        out
    }

    /// `tag` when it is the next record's (compared in constant time), else `None`.
    pub(super) fn verify(&self, kind: u8, json: &[u8], tag: &[u8]) -> Option<[u8; TAG_BYTES]> {
        let want = self.tag(kind, json);
        let same =
            tag.len() == TAG_BYTES && want.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        same.then_some(want)
    }

    pub(super) fn advance(&mut self, tag: [u8; TAG_BYTES]) {
        self.prev = tag;
        self.index += 1;
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SnapshotOut<'a> {
    pub(super) state: &'a RunState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) world: Option<&'a WorldSnapshot>,
    pub(super) seq_ceiling: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SnapshotIn {
    pub(super) state: RunState,
    #[serde(default)]
    pub(super) world: Option<WorldSnapshot>,
    #[serde(default)]
    pub(super) seq_ceiling: u64,
}

#[derive(Serialize)]
pub(super) struct PatchOut<'a> {
    pub(super) patch: &'a RunStatePatch,
    pub(super) world: DeltaOut<'a>,
}

#[derive(Deserialize)]
pub(super) struct PatchIn {
    pub(super) patch: RunStatePatch,
    pub(super) world: DeltaIn,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Lease {
    pub(super) seq_ceiling: u64,
}

/// The new tail of an append-only report list: `items` start at index `at`.
#[derive(Serialize)]
pub(super) struct TailOut<'a, T = Value> {
    pub(super) at: usize,
    pub(super) items: &'a [T],
}

#[derive(Deserialize)]
pub(super) struct TailIn<T = Value> {
    pub(super) at: usize,
    pub(super) items: Vec<T>,
}

pub(super) fn tail_is_empty<T>(t: &TailOut<'_, T>) -> bool {
    t.items.is_empty()
}

/// What changed in the world since the previous record: every scalar, the changed
/// invocation counts, the fired faults when they grew, and the tails of the report lists.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeltaOut<'a> {
    pub(super) clock_ms: u64,
    pub(super) checkpoints: u64,
    pub(super) crashes: u64,
    pub(super) aborted: bool,
    pub(super) checkpoint_bytes: u64,
    pub(super) seq: u64,
    pub(super) total_invocations: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) invocation_counts: BTreeMap<&'a str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fired_invoke_faults: Option<&'a BTreeSet<usize>>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    pub(super) invocations: TailOut<'a, crate::sim::world::Invocation>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    pub(super) waits: TailOut<'a>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    pub(super) calls: TailOut<'a>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    pub(super) schedules: TailOut<'a>,
    /// Every schedule's fire time, when one was added (D-122: a child's wait fires after
    /// a real kill too; `resume --token` moves the clock to it, D-125).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fire_times: Option<&'a BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    pub(super) canceled: TailOut<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeltaIn {
    pub(super) clock_ms: u64,
    pub(super) checkpoints: u64,
    pub(super) crashes: u64,
    pub(super) aborted: bool,
    pub(super) checkpoint_bytes: u64,
    pub(super) seq: u64,
    pub(super) total_invocations: u64,
    #[serde(default)]
    pub(super) invocation_counts: BTreeMap<String, u64>,
    #[serde(default)]
    pub(super) fired_invoke_faults: Option<BTreeSet<usize>>,
    #[serde(default)]
    pub(super) invocations: Option<TailIn<crate::sim::world::Invocation>>,
    #[serde(default)]
    pub(super) waits: Option<TailIn>,
    #[serde(default)]
    pub(super) calls: Option<TailIn>,
    #[serde(default)]
    pub(super) schedules: Option<TailIn>,
    #[serde(default)]
    pub(super) fire_times: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub(super) canceled: Option<TailIn>,
}

impl<'a> DeltaOut<'a> {
    /// What of `world` the journal does not hold yet, past mirror `m`: the scalars, the
    /// invocation counts that changed (all of them when `changed_counts` is `None`), and
    /// each append-only list's new tail.
    pub(super) fn of(
        world: &'a WorldSnapshot,
        m: Mirror,
        changed_counts: Option<&[String]>,
    ) -> Self {
        let invocation_counts: BTreeMap<&str, u64> = match changed_counts {
            Some(keys) => keys
                .iter()
                .filter_map(|k| {
                    world
                        .invocation_counts
                        .get_key_value(k.as_str())
                        .map(|(k, v)| (k.as_str(), *v))
                })
                .collect(),
            None => world
                .invocation_counts
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect(),
        };
        DeltaOut {
            clock_ms: world.clock_ms,
            checkpoints: world.checkpoints,
            crashes: world.crashes,
            aborted: world.aborted,
            checkpoint_bytes: world.checkpoint_bytes,
            seq: world.seq,
            total_invocations: world.total_invocations,
            invocation_counts,
            fired_invoke_faults: (world.fired_invoke_faults.len() != m.fired)
                .then_some(&world.fired_invoke_faults),
            invocations: TailOut {
                at: m.invocations,
                items: &world.invocations[m.invocations..],
            },
            waits: TailOut {
                at: m.waits,
                items: &world.waits[m.waits..],
            },
            calls: TailOut {
                at: m.calls,
                items: &world.calls[m.calls..],
            },
            schedules: TailOut {
                at: m.schedules,
                items: &world.schedules[m.schedules..],
            },
            fire_times: (world.fire_times.len() != m.fire_times).then_some(&world.fire_times),
            canceled: TailOut {
                at: m.canceled,
                items: &world.canceled[m.canceled..],
            },
        }
    }
}

/// How much of the world the journal already holds (lengths of the append-only lists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Mirror {
    pub(super) invocations: usize,
    pub(super) waits: usize,
    pub(super) calls: usize,
    pub(super) schedules: usize,
    pub(super) fired: usize,
    pub(super) fire_times: usize,
    pub(super) canceled: usize,
}

impl Mirror {
    pub(super) fn of(w: &WorldSnapshot) -> Self {
        Mirror {
            invocations: w.invocations.len(),
            waits: w.waits.len(),
            calls: w.calls.len(),
            schedules: w.schedules.len(),
            fired: w.fired_invoke_faults.len(),
            fire_times: w.fire_times.len(),
            canceled: w.canceled.len(),
        }
    }

    /// The lists only ever grow; a shorter one means the caller's world is another
    /// world (a snapshot is written instead of a delta).
    pub(super) fn follows(&self, w: &WorldSnapshot) -> bool {
        w.invocations.len() >= self.invocations
            && w.waits.len() >= self.waits
            && w.calls.len() >= self.calls
            && w.schedules.len() >= self.schedules
            && w.fired_invoke_faults.len() >= self.fired
            && w.fire_times.len() >= self.fire_times
            && w.canceled.len() >= self.canceled
    }
}

pub(super) fn apply_tail<T>(
    list: &mut Vec<T>,
    tail: Option<TailIn<T>>,
    fail: &dyn Fn(String) -> JournalError,
) -> Result<(), JournalError> {
    let Some(tail) = tail else { return Ok(()) };
    if tail.at != list.len() {
        return Err(fail(format!(
            "a report list resumes at index {} but {} entries precede it",
            tail.at,
            list.len()
        )));
    }
    list.extend(tail.items);
    Ok(())
}

pub(super) fn apply_delta(
    world: &mut WorldSnapshot,
    d: DeltaIn,
    fail: &dyn Fn(String) -> JournalError,
) -> Result<(), JournalError> {
    world.clock_ms = d.clock_ms;
    world.checkpoints = d.checkpoints;
    world.crashes = d.crashes;
    world.aborted = d.aborted;
    world.checkpoint_bytes = d.checkpoint_bytes;
    world.seq = d.seq;
    world.total_invocations = d.total_invocations;
    world.invocation_counts.extend(d.invocation_counts);
    if let Some(f) = d.fired_invoke_faults {
        world.fired_invoke_faults = f;
    }
    apply_tail(&mut world.invocations, d.invocations, fail)?;
    apply_tail(&mut world.waits, d.waits, fail)?;
    apply_tail(&mut world.calls, d.calls, fail)?;
    apply_tail(&mut world.schedules, d.schedules, fail)?;
    if let Some(f) = d.fire_times {
        world.fire_times = f;
    }
    apply_tail(&mut world.canceled, d.canceled, fail)?;
    Ok(())
}

/// Frame `kind` + the JSON of `body` into `buf` (cleared first), with the next tag of
/// `chain` when the journal is authenticated; the tag is returned for the caller to
/// [`Chain::advance`] once the record is durable.
pub(super) fn frame(
    buf: &mut Vec<u8>,
    kind: u8,
    body: &impl Serialize,
    chain: Option<&Chain>,
) -> Result<Option<[u8; TAG_BYTES]>, String> {
    buf.clear();
    buf.extend_from_slice(&[0; FRAME_HEADER]);
    buf.push(kind);
    serde_json::to_writer(&mut *buf, body).map_err(|e| format!("cannot serialize: {e}"))?;
    let tag = chain.map(|c| c.tag(kind, &buf[FRAME_HEADER + 1..]));
    if let Some(tag) = &tag {
        buf.extend_from_slice(tag);
    }
    let len = buf.len() - FRAME_HEADER;
    if len > RECORD_MAX {
        return Err(format!("a record of {len} bytes exceeds {RECORD_MAX}"));
    }
    let len_bytes = u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len_bytes);
    h.update(&buf[FRAME_HEADER..]);
    buf[0..4].copy_from_slice(&len_bytes);
    buf[4..8].copy_from_slice(&h.finalize().to_le_bytes());
    Ok(tag)
}

/// Move `chain` past a record whose tag `frame` returned.
pub(super) fn advance(chain: &mut Option<Chain>, tag: Option<[u8; TAG_BYTES]>) {
    if let (Some(c), Some(t)) = (chain.as_mut(), tag) {
        c.advance(t);
    }
}
