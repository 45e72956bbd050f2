//! A step's record (RUN-6): [`StepExecution`], its one JSON form (the `Serialize` impl,
//! which places a control's typed [`Blocks`] among the record's extensions) and how
//! reading JSON types those blocks (D-189).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::frames::{FrameRecords, typed_records};
use super::status::{StepError, StepMeta, StepStatus};
use crate::json::JsonText;
use crate::model::extra::Extra;
use crate::model::serde_util::present;

/// RUN-6: one step's record in a run. Serialized by hand (below) only to write `blocks`
/// where they stand among the `extra` keys; it writes what the derive wrote.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepExecution {
    pub step_id: String,
    pub status: StepStatus,
    /// 1-based; +1 per retry. 0 only for steps that never started (skipped).
    pub attempt: u32,
    /// Resolved params, with secret-derived values redacted (SEC-1), held as compact
    /// JSON text (D-193): a run keeps every step's input to its end, and nothing in the
    /// run reads it back but the report, a call's retry and the secret scans.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<JsonText>,
    /// Present on succeeded (a present `null` is a real null output, BIND-4). Held as
    /// compact JSON text like `input` (D-193); the run reads outputs from its scope.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<JsonText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<StepError>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// META-5: persisted with the record it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<StepMeta>>,
    /// Engine extensions (e.g. a step's `secretDerived`), kept verbatim. Holds no key that
    /// `blocks` holds (see there).
    #[serde(flatten, deserialize_with = "extra_of_record")]
    pub extra: Extra,
    /// A foreach's `iterations` or a parallel's `branches`: every sub-block instance's
    /// records, typed and shared (D-189). In JSON, the one record-level key they always
    /// were, in the same place among `extra`'s keys; reading JSON types it only when every
    /// record in it serializes back to an equal value, else it stays in `extra` untouched.
    #[serde(flatten, deserialize_with = "blocks_of_record")]
    pub blocks: Option<Box<Blocks>>,
}

impl Serialize for StepExecution {
    /// The record's one JSON form (every to-JSON conversion of a record, a frame or a
    /// state goes through it). Every field is named below, so a field added to the record
    /// fails to compile here until it is written; the derived `Deserialize` reads what
    /// this writes (`run::tests::any_state_or_patch_reads_and_writes_back_equal`).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let StepExecution {
            step_id,
            status,
            attempt,
            input,
            output,
            error,
            started_at,
            finished_at,
            meta,
            extra,
            blocks,
        } = self;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("stepId", step_id)?;
        m.serialize_entry("status", status)?;
        m.serialize_entry("attempt", attempt)?;
        // An absent optional field is not written; a present `null` is.
        fn optional<M: SerializeMap, T: Serialize>(
            m: &mut M,
            key: &str,
            value: &Option<T>,
        ) -> Result<(), M::Error> {
            value.as_ref().map_or(Ok(()), |v| m.serialize_entry(key, v))
        }
        optional(&mut m, "input", input)?;
        optional(&mut m, "output", output)?;
        optional(&mut m, "error", error)?;
        optional(&mut m, "startedAt", started_at)?;
        optional(&mut m, "finishedAt", finished_at)?;
        optional(&mut m, "meta", meta)?;
        // The blocks stand where they were set among the extensions.
        let mut blocks = blocks.as_deref();
        let mut due = |m: &mut S::SerializeMap, after: Option<&str>, last: bool| match blocks
            .filter(|b| last || b.after.as_deref() == after)
        {
            Some(b) => {
                blocks = None;
                m.serialize_entry(b.kind.key(), &b.frames)
            }
            None => Ok(()),
        };
        due(&mut m, None, false)?;
        for (k, v) in extra {
            m.serialize_entry(k, v)?;
            due(&mut m, Some(k), false)?;
        }
        due(&mut m, None, true)?;
        m.end()
    }
}

/// Which sub-block instances a control's [`Blocks`] are: the record-level key they are
/// written under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::VariantArray)]
pub enum BlockKind {
    /// A foreach's, one per item.
    Iterations,
    /// A parallel's, one per branch.
    Branches,
}

impl BlockKind {
    /// Both kinds, in declaration order (derived from the enum).
    pub const ALL: &'static [BlockKind] = <Self as strum::VariantArray>::VARIANTS;

    /// The record-level key: `iterations` / `branches`.
    pub fn key(self) -> &'static str {
        match self {
            BlockKind::Iterations => "iterations",
            BlockKind::Branches => "branches",
        }
    }
}

/// A control's sub-block instances' records, one frame per instance in index order (an
/// instance that never started has an empty frame), shared with the frames they were
/// checkpointed in (D-189).
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    pub kind: BlockKind,
    pub frames: Vec<Arc<FrameRecords>>,
    /// The `extra` key they are written after (`None`: before every extension; a key no
    /// longer in `extra`: after all of them), so a record writes its keys in the order
    /// they were set.
    pub after: Option<String>,
}

impl Blocks {
    /// As JSON: an array of `{stepId: record}` objects, what serde writes for `frames`.
    pub fn into_json(self) -> Value {
        to_json(&self.frames)
    }
}

/// The typed blocks among a record's unknown keys: the first kind whose value is an array
/// of frames typed records give back equal.
fn typed_blocks(all: &Map<String, Value>) -> Option<Blocks> {
    BlockKind::ALL.iter().copied().find_map(|kind| {
        let Some(Value::Array(items)) = all.get(kind.key()) else {
            return None;
        };
        let frames = items
            .iter()
            .map(|f| typed_records(f).map(Arc::new))
            .collect::<Option<Vec<_>>>()?;
        // The unknown key just before it in the document.
        let after = all
            .keys()
            .take_while(|k| k.as_str() != kind.key())
            .last()
            .cloned();
        Some(Blocks {
            kind,
            frames,
            after,
        })
    })
}

/// A record's unknown keys but the one its typed blocks took.
fn extra_of_record<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Extra, D::Error> {
    let mut all = Map::deserialize(de)?;
    if let Some(b) = typed_blocks(&all) {
        // `shift_remove`: the keys after it keep their order.
        all.shift_remove(b.kind.key());
    }
    Ok(Extra::from(all))
}

/// A record's typed blocks, among its unknown keys.
fn blocks_of_record<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<Option<Box<Blocks>>, D::Error> {
    let all = Map::deserialize(de)?;
    Ok(typed_blocks(&all).map(Box::new))
}

impl StepExecution {
    /// A fresh record for a step about to start.
    pub fn new(step_id: &str, status: StepStatus, attempt: u32) -> Self {
        StepExecution {
            step_id: step_id.to_owned(),
            status,
            attempt,
            input: None,
            output: None,
            error: None,
            started_at: None,
            finished_at: None,
            meta: None,
            extra: Extra::new(),
            blocks: None,
        }
    }

    /// The record as JSON: what `serde_json::to_value` gives (an extension named like a
    /// field replaces it).
    pub fn into_json(self) -> Value {
        to_json(&self)
    }
}

/// Step records by id (a run's `steps`, a frame) as the JSON object serde writes for them.
pub(crate) fn records_json<S>(records: IndexMap<String, Arc<StepExecution>, S>) -> Value {
    to_json(&records)
}

/// A typed run value as JSON. Serializing into a `Value` fails only on a map key that is
/// not a string or on invalid raw JSON text, which the run model cannot hold.
pub(super) fn to_json<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}
