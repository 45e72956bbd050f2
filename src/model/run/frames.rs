//! Frames: a running sub-block instance's records (a foreach iteration, a parallel
//! branch), typed and shared (D-188), and how reading JSON tells a frame it can type from
//! one it keeps as JSON.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::record::{StepExecution, to_json};

/// The run-level key prefix of a running sub-block instance's records (a foreach
/// iteration, a parallel branch): [`RunState::frames`](super::RunState::frames).
pub(crate) const FRAME_PREFIX: &str = "frame:";

/// One running sub-block instance's step records by step id, in checkpoint order. Like
/// `steps`, the records are shared between a patch, the engine's mirror and a memory store.
pub type FrameRecords = IndexMap<String, Arc<StepExecution>, FrameHasher>;

/// The hasher of [`FrameRecords`] and of the maps of frames ([`RunState::frames`](super::RunState::frames),
/// [`RunStatePatch::frames`](super::RunStatePatch::frames)): foldhash, seeded per map, as the planner's id map (D-130).
/// A frame key (`frame:/loop.iterations[1234]`) is hashed about fifteen times per foreach
/// iteration (two checkpoints, each folded by the mirror and the store, and the control's
/// end), which SipHash made a tenth of a 10,000-item foreach's instructions.
pub(crate) type FrameHasher = foldhash::fast::RandomState;

/// Frames by key: [`RunState::frames`](super::RunState::frames).
pub type Frames = IndexMap<String, Arc<FrameRecords>, FrameHasher>;

/// Frames a patch sets (`Some`) or removes (`None`): [`RunStatePatch::frames`](super::RunStatePatch::frames).
pub type PatchFrames = IndexMap<String, Option<Arc<FrameRecords>>, FrameHasher>;

/// `value` as a frame's typed records, when `key` names a frame and every record in
/// `value` serializes back to an equal JSON value (a store that reorders an object's
/// members, as a `jsonb` column does, still gives typed frames). Anything else — a record
/// that does not parse, or one whose typed form would drop or change a member — stays
/// JSON in `extra`, untouched (D-188).
fn typed_frame(key: &str, value: &Value) -> Option<FrameRecords> {
    if !key.starts_with(FRAME_PREFIX) {
        return None;
    }
    typed_records(value)
}

/// `value` as typed records by step id, when every record serializes back equal (see
/// [`typed_frame`]).
pub(super) fn typed_records(value: &Value) -> Option<FrameRecords> {
    let Value::Object(members) = value else {
        return None;
    };
    let mut records = FrameRecords::with_capacity_and_hasher(members.len(), FrameHasher::default());
    for (id, json) in members {
        let record = StepExecution::deserialize(json).ok()?;
        if to_json(&record) != *json {
            return None;
        }
        records.insert(id.clone(), Arc::new(record));
    }
    Some(records)
}

/// A flattened map's unknown keys that `typed` does not take (they stay in `extra`).
fn untyped<'de, D: serde::Deserializer<'de>, T>(
    de: D,
    typed: impl Fn(&str, &Value) -> Option<T>,
) -> Result<Map<String, Value>, D::Error> {
    let mut all = Map::deserialize(de)?;
    all.retain(|k, v| typed(k, v).is_none());
    Ok(all)
}

/// A flattened map's unknown keys that `typed` takes, typed.
fn typed<'de, D: serde::Deserializer<'de>, T>(
    de: D,
    typed: impl Fn(&str, &Value) -> Option<T>,
) -> Result<IndexMap<String, T, FrameHasher>, D::Error> {
    let all = Map::deserialize(de)?;
    Ok(all
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), typed(k, v)?)))
        .collect())
}

/// A state's unknown keys but its typed frames (see [`RunState::frames`](super::RunState::frames)).
pub(super) fn extra_of_state<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<Map<String, Value>, D::Error> {
    untyped(de, typed_frame)
}

/// A state's typed frames among its unknown keys.
pub(super) fn frames_of_state<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Frames, D::Error> {
    typed(de, |k, v| typed_frame(k, v).map(Arc::new))
}

/// A frame a patch sets (`Some`) or removes (`null` under a frame key).
fn patch_frame(key: &str, value: &Value) -> Option<Option<Arc<FrameRecords>>> {
    if value.is_null() && key.starts_with(FRAME_PREFIX) {
        return Some(None);
    }
    typed_frame(key, value).map(|f| Some(Arc::new(f)))
}

/// A patch's unknown keys but the frames it sets or removes.
pub(super) fn extra_of_patch<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<Map<String, Value>, D::Error> {
    untyped(de, patch_frame)
}

/// The frames a patch sets or removes, among its unknown keys.
pub(super) fn frames_of_patch<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<PatchFrames, D::Error> {
    typed(de, patch_frame)
}
