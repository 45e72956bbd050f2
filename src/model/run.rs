//! The run model: RunState, StepExecution, StepError, StepMeta and RunStatePatch.
//!
//! A RunState is never written whole by the engine: every checkpoint is a
//! [`RunStatePatch`], and the store folds patches with [`RunState::apply`]. That keeps the
//! bytes a run writes linear in its length (RUN-2) and gives every host one definition of
//! what a patch means.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extra::Extra;
use super::serde_util::present;
use crate::json::JsonText;

/// RUN-5: the five run statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Canceled => "canceled",
        }
    }

    /// Succeeded, failed and canceled runs never change again (queued runs resume).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Canceled
        )
    }
}

/// RUN-6: the five step statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Skipped,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Running => "running",
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
        }
    }

    /// RUN-4: terminal steps are never re-invoked on resume.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StepStatus::Succeeded | StepStatus::Failed | StepStatus::Skipped
        )
    }
}

/// The Invocation phase an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Resolution,
    Auth,
    Execute,
    Output,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Resolution => "resolution",
            Phase::Auth => "auth",
            Phase::Execute => "execute",
            Phase::Output => "output",
        }
    }
}

/// RFC § StepError. `stepId` is our addition (see `docs/decisions.md`): it names the step
/// an error belongs to wherever the error appears outside that step's own record
/// (`RunState.error`, `RunState.stepErrors`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepError {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    pub code: String,
    pub message: String,
    pub phase: Phase,
    pub retryable: bool,
}

impl StepError {
    pub fn new(code: impl Into<String>, message: impl Into<String>, phase: Phase) -> Self {
        StepError {
            step_id: None,
            code: code.into(),
            message: message.into(),
            phase,
            retryable: false,
        }
    }

    /// The same error attributed to `step_id`.
    pub fn for_step(mut self, step_id: &str) -> Self {
        self.step_id = Some(step_id.to_owned());
        self
    }
}

/// META-*: host-reported execution metadata, normalised to exactly four keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepMeta {
    pub app: String,
    pub version: String,
    pub action: String,
    pub connection_id: Option<String>,
}

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
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("stepId", &self.step_id)?;
        m.serialize_entry("status", &self.status)?;
        m.serialize_entry("attempt", &self.attempt)?;
        // An absent optional field is not written; a present `null` is.
        fn optional<M: SerializeMap, T: Serialize>(
            m: &mut M,
            key: &str,
            value: &Option<T>,
        ) -> Result<(), M::Error> {
            value.as_ref().map_or(Ok(()), |v| m.serialize_entry(key, v))
        }
        optional(&mut m, "input", &self.input)?;
        optional(&mut m, "output", &self.output)?;
        optional(&mut m, "error", &self.error)?;
        optional(&mut m, "startedAt", &self.started_at)?;
        optional(&mut m, "finishedAt", &self.finished_at)?;
        optional(&mut m, "meta", &self.meta)?;
        let mut blocks = self.blocks.as_deref();
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
        for (k, v) in &self.extra {
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
    /// As JSON: an array of `{stepId: record}` objects.
    pub fn into_json(self) -> Value {
        Value::Array(
            self.frames
                .into_iter()
                .map(|f| records_json(Arc::unwrap_or_clone(f)))
                .collect(),
        )
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
}

impl StepExecution {
    /// The record as JSON, exactly what `serde_json::to_value` gives, its values moved
    /// (or, for a shared record, cloned) into place instead of serialized again: a copy
    /// of a `Value` keeps its maps' hashes, a serialization hashes every key anew.
    pub fn into_json(self) -> Value {
        // Exactly the fields this record carries, plus its extensions: the map is kept
        // (a foreach's frames, the report), so it is not sized for every field.
        let optional = [
            self.input.is_some(),
            self.output.is_some(),
            self.error.is_some(),
            self.started_at.is_some(),
            self.finished_at.is_some(),
            self.meta.is_some(),
        ];
        let present = optional.iter().filter(|&&p| p).count();
        let blocks = usize::from(self.blocks.is_some());
        let mut m = Map::with_capacity(3 + present + self.extra.len() + blocks);
        m.insert("stepId".into(), Value::String(self.step_id));
        m.insert("status".into(), Value::from(self.status.as_str()));
        m.insert("attempt".into(), Value::from(self.attempt));
        if let Some(input) = self.input {
            m.insert("input".into(), input.to_value());
        }
        if let Some(output) = self.output {
            m.insert("output".into(), output.to_value());
        }
        if let Some(error) = self.error {
            m.insert("error".into(), to_json(&error));
        }
        if let Some(at) = self.started_at {
            m.insert("startedAt".into(), Value::String(at));
        }
        if let Some(at) = self.finished_at {
            m.insert("finishedAt".into(), Value::String(at));
        }
        if let Some(meta) = self.meta {
            m.insert("meta".into(), to_json(&meta));
        }
        // As serializing does: an extension named like a field replaces it, and the
        // blocks stand where they were set among the extensions.
        let mut blocks = self.blocks;
        let mut due = |m: &mut Map<String, Value>, after: Option<&str>, last: bool| {
            if blocks
                .as_ref()
                .is_some_and(|b| last || b.after.as_deref() == after)
                && let Some(b) = blocks.take()
            {
                m.insert(b.kind.key().into(), b.into_json());
            }
        };
        due(&mut m, None, false);
        for (k, v) in self.extra {
            let key = k.clone();
            m.insert(k, v);
            due(&mut m, Some(&key), false);
        }
        due(&mut m, None, true);
        Value::Object(m)
    }
}

/// The run-level key prefix of a running sub-block instance's records (a foreach
/// iteration, a parallel branch): [`RunState::frames`].
pub const FRAME_PREFIX: &str = "frame:";

/// One running sub-block instance's step records by step id, in checkpoint order. Like
/// `steps`, the records are shared between a patch, the engine's mirror and a memory store.
pub type FrameRecords = IndexMap<String, Arc<StepExecution>, FrameHasher>;

/// The hasher of [`FrameRecords`] and of the maps of frames ([`RunState::frames`],
/// [`RunStatePatch::frames`]): foldhash, seeded per map, as the planner's id map (D-130).
/// A frame key (`frame:/loop.iterations[1234]`) is hashed about fifteen times per foreach
/// iteration (two checkpoints, each folded by the mirror and the store, and the control's
/// end), which SipHash made a tenth of a 10,000-item foreach's instructions.
pub type FrameHasher = foldhash::fast::RandomState;

/// Frames by key: [`RunState::frames`].
pub type Frames = IndexMap<String, Arc<FrameRecords>, FrameHasher>;

/// Frames a patch sets (`Some`) or removes (`None`): [`RunStatePatch::frames`].
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
fn typed_records(value: &Value) -> Option<FrameRecords> {
    let Value::Object(members) = value else {
        return None;
    };
    let mut records = FrameRecords::with_capacity_and_hasher(members.len(), FrameHasher::default());
    for (id, json) in members {
        let record = StepExecution::deserialize(json).ok()?;
        if record.clone().into_json() != *json {
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

/// A state's unknown keys but its typed frames (see [`RunState::frames`]).
fn extra_of_state<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Map<String, Value>, D::Error> {
    untyped(de, typed_frame)
}

/// A state's typed frames among its unknown keys.
fn frames_of_state<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Frames, D::Error> {
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
fn extra_of_patch<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Map<String, Value>, D::Error> {
    untyped(de, patch_frame)
}

/// The frames a patch sets or removes, among its unknown keys.
fn frames_of_patch<'de, D: serde::Deserializer<'de>>(de: D) -> Result<PatchFrames, D::Error> {
    typed(de, patch_frame)
}

/// A small typed value (an error, a meta) as JSON; these always serialize.
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// Step records by id (a run's `steps`, a frame) as the JSON object serde writes for them,
/// moved where unshared (see [`StepExecution::into_json`]), cloned where shared.
pub fn records_json<S>(records: IndexMap<String, Arc<StepExecution>, S>) -> Value {
    let mut m = Map::with_capacity(records.len());
    for (id, record) in records {
        m.insert(id, Arc::unwrap_or_clone(record).into_json());
    }
    Value::Object(m)
}

/// RUN-5: the full state of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunState {
    pub run_id: String,
    pub workflow_id: String,
    pub status: RunStatus,
    #[serde(default)]
    pub variables: Map<String, Value>,
    /// Only started (or skipped) steps appear, in the order they first appeared. Records
    /// are shared, never copied, between the patch that wrote them, the engine's mirror and
    /// a memory store (D-182): change one with [`Arc::make_mut`].
    #[serde(default)]
    pub steps: IndexMap<String, Arc<StepExecution>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// ERR-3 / RUNERR-5: swallowed-but-recorded failures, in the order they happened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_errors: Vec<StepError>,
    /// Engine extensions (e.g. a suspension's `resumeToken`), kept verbatim. Holds no key
    /// that `frames` holds (see there).
    #[serde(flatten, deserialize_with = "extra_of_state")]
    pub extra: Map<String, Value>,
    /// Each running sub-block instance's records (a foreach iteration, a parallel branch),
    /// keyed [`FRAME_PREFIX`]`/<control>.<kind>[<i>]`. In JSON they are run-level keys
    /// beside `extra`'s; typed here so a checkpoint shares them instead of copying them
    /// (D-188). A key is in `frames` or in `extra`, never both: [`RunState::apply`] keeps
    /// it so, and reading JSON puts a key here only when its value is exactly what these
    /// records serialize to.
    #[serde(flatten, deserialize_with = "frames_of_state")]
    pub frames: Frames,
}

impl RunState {
    /// The state as JSON, exactly what `serde_json::to_value` gives, without serializing
    /// what it already holds as JSON again (see [`StepExecution::into_json`]).
    pub fn into_json(self) -> Value {
        let mut m = Map::with_capacity(8 + self.extra.len() + self.frames.len());
        m.insert("runId".into(), Value::String(self.run_id));
        m.insert("workflowId".into(), Value::String(self.workflow_id));
        m.insert("status".into(), Value::from(self.status.as_str()));
        m.insert("variables".into(), Value::Object(self.variables));
        m.insert("steps".into(), records_json(self.steps));
        if let Some(output) = self.output {
            m.insert("output".into(), output);
        }
        if let Some(error) = self.error {
            m.insert("error".into(), to_json(&error));
        }
        if !self.step_errors.is_empty() {
            m.insert("stepErrors".into(), to_json(&self.step_errors));
        }
        for (k, v) in self.extra {
            m.insert(k, v);
        }
        for (k, frame) in self.frames {
            m.insert(k, records_json(Arc::unwrap_or_clone(frame)));
        }
        Value::Object(m)
    }

    /// An empty state for a run that has not checkpointed yet.
    pub fn new(run_id: &str, workflow_id: &str) -> Self {
        RunState {
            run_id: run_id.to_owned(),
            workflow_id: workflow_id.to_owned(),
            status: RunStatus::Queued,
            variables: Map::new(),
            steps: IndexMap::new(),
            output: None,
            error: None,
            step_errors: Vec::new(),
            extra: Map::new(),
            frames: Frames::default(),
        }
    }

    /// Build the state a sequence of patches describes.
    pub fn from_patches<'a>(patches: impl IntoIterator<Item = &'a RunStatePatch>) -> Option<Self> {
        let mut state: Option<RunState> = None;
        for patch in patches {
            let s = state.get_or_insert_with(|| {
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                )
            });
            s.apply(patch);
        }
        state
    }

    /// Fold one checkpoint into this state. Patch semantics (our definition; the
    /// companions leave `RunStatePatch` SILENT):
    /// - `resetSteps: true` first clears `steps`, `output`, `error` (a run-level retry
    ///   drives the graph again from the top, RUNERR-2);
    /// - fields named in `clear` are removed (`stepErrors` is emptied before this patch's
    ///   own entries are appended), then each field present in the patch
    ///   replaces the state's;
    /// - each entry of `steps` replaces that step's whole record (upsert, order kept);
    /// - `stepErrors` entries are appended; `extra` keys are set (`null` removes).
    pub fn apply(&mut self, patch: &RunStatePatch) {
        // Field by field, so only what the patch sets is copied (never its run id).
        if patch.reset_steps {
            self.steps.clear();
            self.output = None;
            self.error = None;
        }
        if let Some(w) = &patch.workflow_id {
            self.workflow_id.clone_from(w);
        }
        if let Some(status) = patch.status {
            self.status = status;
        }
        if let Some(vars) = &patch.variables {
            self.variables.clone_from(vars);
        }
        self.clear(&patch.clear);
        if let Some(output) = &patch.output {
            self.output = Some(output.clone());
        }
        if let Some(error) = &patch.error {
            self.error = Some(error.clone());
        }
        for (id, exec) in &patch.steps {
            match self.steps.get_mut(id) {
                Some(record) => *record = Arc::clone(exec),
                None => {
                    self.steps.insert(id.clone(), Arc::clone(exec));
                }
            }
        }
        self.step_errors.extend(patch.step_errors.iter().cloned());
        for (k, v) in &patch.extra {
            self.set_extra(k, v.clone());
        }
        for (k, frame) in &patch.frames {
            self.set_frame(k, frame.clone());
        }
    }

    /// Set (or, with `null`, remove) a run-level `extra` key; a frame of that key goes. The
    /// key is copied (`into`) only when it is new to the state.
    fn set_extra<K: AsRef<str> + Into<String>>(&mut self, key: K, value: Value) {
        let k = key.as_ref();
        if k.starts_with(FRAME_PREFIX) {
            self.frames.swap_remove(k);
        }
        if value.is_null() {
            self.extra.remove(k);
        } else if let Some(slot) = self.extra.get_mut(k) {
            *slot = value;
        } else {
            self.extra.insert(key.into(), value);
        }
    }

    /// Set (or, with `None`, remove) a frame; an `extra` key of that name goes. The key is
    /// copied (`into`) only when it is new to the state.
    fn set_frame<K: AsRef<str> + Into<String>>(
        &mut self,
        key: K,
        frame: Option<Arc<FrameRecords>>,
    ) {
        let k = key.as_ref();
        // Removing hashes the key even when it is absent: a short `extra` (a run's
        // `trigger` and `runAttempt`) is scanned instead, once per checkpoint into a frame.
        if self.extra.len() > 8 || self.extra.keys().any(|e| e == k) {
            self.extra.remove(k);
        }
        match (frame, self.frames.get_mut(k)) {
            (Some(frame), Some(slot)) => *slot = frame,
            (Some(frame), None) => {
                self.frames.insert(key.into(), frame);
            }
            // `swap_remove`: a control's end removes every frame it had, O(1) each.
            (None, _) => {
                self.frames.swap_remove(k);
            }
        }
    }

    fn clear(&mut self, fields: &[PatchField]) {
        for field in fields {
            match field {
                PatchField::Output => self.output = None,
                PatchField::Error => self.error = None,
                PatchField::StepErrors => self.step_errors.clear(),
            }
        }
    }

    /// [`RunState::apply`] taking the patch by value: its records move into the state
    /// instead of being copied (the engine folds each checkpoint it made this way).
    pub fn apply_owned(&mut self, mut patch: RunStatePatch) {
        self.apply_draining(&mut patch);
    }

    /// [`RunState::apply_owned`] that leaves `patch` empty — equal to
    /// `RunStatePatch { run_id, ..Default::default() }` — with its run id and the capacity of
    /// its step map and lists kept, so the engine's next checkpoint reuses them instead of
    /// allocating them again (D-186).
    pub fn apply_draining(&mut self, patch: &mut RunStatePatch) {
        // Every field, named: a field added to the patch fails to compile here until it is
        // folded (and emptied) below.
        let RunStatePatch {
            run_id: _,
            workflow_id: _,
            reset_steps: _,
            status: _,
            variables: _,
            output: _,
            error: _,
            clear: _,
            steps: _,
            step_errors: _,
            extra: _,
            frames: _,
        } = &*patch;
        if std::mem::take(&mut patch.reset_steps) {
            self.steps.clear();
            self.output = None;
            self.error = None;
        }
        if let Some(w) = patch.workflow_id.take() {
            self.workflow_id = w;
        }
        if let Some(status) = patch.status.take() {
            self.status = status;
        }
        if let Some(vars) = patch.variables.take() {
            self.variables = vars;
        }
        self.clear(&patch.clear);
        patch.clear.clear();
        if let Some(output) = patch.output.take() {
            self.output = Some(output);
        }
        if let Some(error) = patch.error.take() {
            self.error = Some(error);
        }
        for (id, exec) in patch.steps.drain(..) {
            self.steps.insert(id, exec);
        }
        self.step_errors.append(&mut patch.step_errors);
        for (k, v) in std::mem::take(&mut patch.extra) {
            self.set_extra(k, v);
        }
        for (k, frame) in patch.frames.drain(..) {
            self.set_frame(k, frame);
        }
    }
}

/// One checkpoint: the change since the previous one (see [`RunState::apply`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatePatch {
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_steps: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Map<String, Value>>,
    /// Sets the run output (a present `null` sets a null output, RUNERR-5).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    /// Sets the run-level error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// Fields to remove before the fields above are set (e.g. clearing `error` when a
    /// run-level handler recovers the run, RUNERR-5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clear: Vec<PatchField>,
    /// Each entry replaces that step's whole record (shared with the states it is folded
    /// into, D-182).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub steps: IndexMap<String, Arc<StepExecution>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_errors: Vec<StepError>,
    /// Run-level `extra` keys to set (`null` removes the key).
    #[serde(flatten, deserialize_with = "extra_of_patch")]
    pub extra: Map<String, Value>,
    /// Frames to set whole (`None`, written `null`, removes one): see [`RunState::frames`].
    /// Applied after `extra`, so a key named in both ends as this map says.
    #[serde(flatten, deserialize_with = "frames_of_patch")]
    pub frames: PatchFrames,
}

/// A RunState field a patch can remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PatchField {
    Output,
    Error,
    /// Empties `stepErrors` (a replay starts from the carried records only).
    StepErrors,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `into_json` is `serde_json::to_value` by other means: every optional field absent
    /// and present (a present `null` too), extensions (one named like a field), shared
    /// and unshared records.
    #[test]
    fn into_json_is_what_serde_gives() {
        let bare = StepExecution::new("a", StepStatus::Skipped, 0);
        let mut full = StepExecution::new("b", StepStatus::Failed, 3);
        full.input = Some(json!({"x": [1, {"y": null}]}).into());
        full.output = Some(Value::Null.into());
        full.error = Some(Box::new(
            StepError::new("boom", "it broke", Phase::Execute).for_step("b"),
        ));
        full.started_at = Some("2026-01-01T00:00:00.000Z".into());
        full.finished_at = Some("2026-01-01T00:00:01.000Z".into());
        full.meta = Some(Box::new(StepMeta {
            app: "app".into(),
            version: "1".into(),
            action: "act".into(),
            connection_id: None,
        }));
        full.extra.insert("iterations".into(), json!([1, 2]));
        full.extra.insert("attempt".into(), json!("ext"));
        // `to_value`'s document (where an extension named like a field replaces it; a
        // streamed `to_string` would write the name twice), compared as text so member
        // order counts at every level.
        fn as_value<T: Serialize>(x: &T) -> String {
            serde_json::to_value(x).unwrap().to_string()
        }
        for record in [&bare, &full] {
            assert_eq!(record.clone().into_json().to_string(), as_value(record));
        }
        let mut state = RunState::new("r", "wf");
        let check = |s: RunState| {
            let want = as_value(&s);
            assert_eq!(s.into_json().to_string(), want);
        };
        check(state.clone());
        let shared = Arc::new(full);
        state.steps.insert("a".into(), Arc::new(bare));
        state.steps.insert("b".into(), Arc::clone(&shared));
        state.status = RunStatus::Failed;
        state.variables.insert("v".into(), json!(1));
        state.output = Some(Value::Null);
        state.error = shared.error.as_deref().cloned();
        state.step_errors = vec![StepError::new("e", "m", Phase::Resolution)];
        state.extra.insert("resumeToken".into(), json!("t"));
        state.extra.insert("status".into(), json!("ext"));
        check(state);
        assert_eq!(
            Arc::strong_count(&shared),
            1,
            "a shared record is cloned, not taken"
        );
    }

    fn record(id: &str, status: StepStatus, output: Value) -> Arc<StepExecution> {
        let mut r = StepExecution::new(id, status, 1);
        r.input = Some(json!({"k": id}).into());
        r.output = Some(output.into());
        Arc::new(r)
    }

    /// `apply` (by reference, field by field) and `apply_owned` (by value) are two spellings
    /// of one patch semantics: every field, the upsert order and `null` removal agree.
    #[test]
    fn apply_by_reference_and_by_value_fold_alike() {
        let mut p1 = RunStatePatch {
            run_id: "r".into(),
            workflow_id: Some("wf".into()),
            status: Some(RunStatus::Running),
            variables: Some(json!({"v": 1}).as_object().cloned().unwrap_or_default()),
            ..RunStatePatch::default()
        };
        p1.steps
            .insert("a".into(), record("a", StepStatus::Running, json!(null)));
        p1.steps
            .insert("b".into(), record("b", StepStatus::Succeeded, json!(2)));
        p1.extra.insert("x".into(), json!({"keep": true}));
        p1.extra.insert("y".into(), json!(1));
        p1.step_errors
            .push(StepError::new("e", "m", Phase::Execute));
        let mut p2 = RunStatePatch {
            run_id: "r".into(),
            output: Some(Value::Null),
            error: Some(StepError::new("f", "n", Phase::Output)),
            clear: vec![PatchField::StepErrors],
            ..RunStatePatch::default()
        };
        p2.steps
            .insert("c".into(), record("c", StepStatus::Skipped, json!(3)));
        p2.steps
            .insert("a".into(), record("a", StepStatus::Succeeded, json!([1])));
        p2.extra.insert("y".into(), Value::Null);
        let f = |id: &str| -> Arc<FrameRecords> {
            let r = record(id, StepStatus::Succeeded, json!(id));
            Arc::new([(id.to_owned(), r)].into_iter().collect())
        };
        p1.frames
            .insert("frame:/l.iterations[0]".into(), Some(f("b0")));
        p1.frames
            .insert("frame:/l.iterations[1]".into(), Some(f("b1")));
        p2.frames.insert("frame:/l.iterations[0]".into(), None);
        p2.frames
            .insert("frame:/l.iterations[1]".into(), Some(f("b2")));
        let p3 = RunStatePatch {
            run_id: "r".into(),
            reset_steps: true,
            clear: vec![PatchField::Output, PatchField::Error],
            status: Some(RunStatus::Failed),
            ..RunStatePatch::default()
        };
        for patches in [vec![&p1], vec![&p1, &p2], vec![&p1, &p2, &p3]] {
            let mut by_ref = RunState::new("r", "");
            let mut by_value = RunState::new("r", "");
            let mut drained = RunState::new("r", "");
            // D-186: one patch refilled for every fold, as the engine's journal reuses it.
            let mut spare = RunStatePatch::default();
            for p in &patches {
                by_ref.apply(p);
                by_value.apply_owned((*p).clone());
                spare.clone_from(p);
                drained.apply_draining(&mut spare);
                let empty = RunStatePatch {
                    run_id: p.run_id.clone(),
                    ..RunStatePatch::default()
                };
                assert_eq!(spare, empty, "a drained patch is an empty one");
            }
            assert_eq!(by_ref, by_value);
            assert_eq!(by_ref, drained);
            let drained_order: Vec<&String> = drained.steps.keys().collect();
            assert_eq!(drained_order, by_ref.steps.keys().collect::<Vec<_>>());
            let order: Vec<&String> = by_ref.steps.keys().collect();
            let want_order: Vec<&String> = by_value.steps.keys().collect();
            assert_eq!(order, want_order);
        }
        let mut s = RunState::new("r", "");
        s.apply(&p1);
        s.apply(&p2);
        assert_eq!(s.steps.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(s.steps["a"].output, Some(json!([1]).into()));
        assert!(s.step_errors.is_empty() && !s.extra.contains_key("y"));
        assert_eq!(
            s.frames.keys().collect::<Vec<_>>(),
            ["frame:/l.iterations[1]"]
        );
        assert!(s.frames["frame:/l.iterations[1]"].contains_key("b2"));
    }

    /// A frame's record as `serde_json::to_value` writes it.
    fn frame_value(records: &[&StepExecution]) -> Value {
        let m: Map<String, Value> = records
            .iter()
            .map(|r| (r.step_id.clone(), serde_json::to_value(r).unwrap()))
            .collect();
        Value::Object(m)
    }

    /// D-188: typed frames are the run-level JSON keys they stand for. A state or patch
    /// holding a frame writes exactly what it wrote with the frame as `extra` JSON, and
    /// reads back typed; `into_json` agrees.
    #[test]
    fn a_typed_frame_is_the_json_key_it_stands_for() {
        let mut a = StepExecution::new("a", StepStatus::Succeeded, 2);
        a.input = Some(json!({"item": 3}).into());
        a.output = Some(Value::Null.into());
        a.error = Some(Box::new(StepError::new("c", "m", Phase::Execute)));
        a.extra.insert("secretDerived".into(), json!(true));
        let b = StepExecution::new("b", StepStatus::Running, 1);
        let key = "frame:/loop.iterations[3]";
        let frame: FrameRecords = [&a, &b]
            .into_iter()
            .map(|r| (r.step_id.clone(), Arc::new(r.clone())))
            .collect();
        let mut typed = RunState::new("r", "wf");
        typed.extra.insert("waitSeq".into(), json!(2));
        typed.frames.insert(key.into(), Arc::new(frame.clone()));
        let mut plain = RunState::new("r", "wf");
        plain.extra.insert("waitSeq".into(), json!(2));
        plain.extra.insert(key.into(), frame_value(&[&a, &b]));
        let text = serde_json::to_string(&typed).unwrap();
        assert_eq!(text, serde_json::to_string(&plain).unwrap());
        assert_eq!(typed.clone().into_json().to_string(), text);
        let back: RunState = serde_json::from_str(&text).unwrap();
        assert_eq!(back, typed, "read back typed, nothing left in extra");

        let mut patch = RunStatePatch {
            run_id: "r".into(),
            ..RunStatePatch::default()
        };
        patch.extra.insert("waitSeq".into(), json!(3));
        patch.frames.insert(key.into(), Some(Arc::new(frame)));
        patch
            .frames
            .insert("frame:/loop.iterations[0]".into(), None);
        let doc = json!({"runId": "r", "waitSeq": 3, key: frame_value(&[&a, &b]),
                         "frame:/loop.iterations[0]": null});
        assert_eq!(serde_json::to_value(&patch).unwrap(), doc);
        let back: RunStatePatch = serde_json::from_value(doc).unwrap();
        assert_eq!(back, patch);
    }

    /// D-188: a frame key whose value typed records would not give back equal (not an
    /// object, a record that does not parse, a member typed records would drop or change)
    /// is kept as JSON in `extra`, byte for byte; so is a record-shaped value under a key
    /// that is not a frame's. A frame whose records only have their members in another
    /// order is typed, and gives back an equal value.
    #[test]
    fn an_odd_frame_stays_json_untouched() {
        let a = StepExecution::new("a", StepStatus::Succeeded, 1);
        let good = frame_value(&[&a]);
        let key = "frame:/loop.iterations[0]";
        let odd = [
            json!([1]),
            json!({"a": {"stepId": "a"}}),
            json!({"a": {"stepId": "a", "status": "succeeded", "attempt": 1, "error": null}}),
            json!({"a": {"stepId": "a", "status": "failed", "attempt": 1,
                         "error": {"code": "c", "message": "m", "phase": "execute",
                                   "retryable": false, "more": 1}}}),
        ];
        for value in odd {
            let doc = json!({"runId": "r", "workflowId": "wf", "status": "running",
                             "variables": {}, "steps": {}, key: value});
            let s: RunState = serde_json::from_value(doc.clone()).unwrap();
            assert!(s.frames.is_empty(), "{value}");
            assert_eq!(serde_json::to_string(&s).unwrap(), doc.to_string());
            let p: RunStatePatch =
                serde_json::from_value(json!({"runId": "r", key: value})).unwrap();
            assert!(p.frames.is_empty() && p.extra[key] == value, "{value}");
        }
        let s: RunState = serde_json::from_value(json!({"runId": "r", "workflowId": "wf",
            "status": "running", "frames": good, "frame:x": good}))
        .unwrap();
        assert_eq!(s.extra.keys().collect::<Vec<_>>(), ["frames"]);
        assert_eq!(s.frames.keys().collect::<Vec<_>>(), ["frame:x"]);
        let p: RunStatePatch =
            serde_json::from_value(json!({"runId": "r", "other": null})).unwrap();
        assert!(p.frames.is_empty() && p.extra["other"].is_null());
        let reordered = json!({"a": {"attempt": 1, "status": "succeeded", "stepId": "a"}});
        let s: RunState = serde_json::from_value(json!({"runId": "r", "workflowId": "wf",
            "status": "running", key: reordered}))
        .unwrap();
        assert!(
            s.extra.is_empty(),
            "typed although its members are in another order"
        );
        assert_eq!(serde_json::to_value(&s).unwrap()[key], reordered);
    }

    /// D-189: a control record's typed blocks are the record-level key they stand for: a
    /// record holding them writes exactly what it wrote with them as `extra` JSON (in the
    /// same place among the other keys), reads back typed, and `into_json` agrees; nested
    /// blocks too.
    #[test]
    fn typed_blocks_are_the_json_key_they_stand_for() {
        let mut inner = StepExecution::new("a", StepStatus::Succeeded, 1);
        inner.output = Some(json!({"x": [1, 2]}).into());
        let mut nested = StepExecution::new("inner", StepStatus::Succeeded, 1);
        let frame: FrameRecords = [("a".to_owned(), Arc::new(inner.clone()))]
            .into_iter()
            .collect();
        nested.blocks = Some(Box::new(Blocks {
            kind: BlockKind::Branches,
            frames: vec![Arc::new(frame.clone())],
            after: None,
        }));
        let nested_frame: FrameRecords = [("inner".to_owned(), Arc::new(nested.clone()))]
            .into_iter()
            .collect();
        for &kind in BlockKind::ALL {
            let mut typed = StepExecution::new("loop", StepStatus::Succeeded, 1);
            typed.extra.insert("secretDerived".into(), json!(true));
            typed.blocks = Some(Box::new(Blocks {
                kind,
                frames: vec![
                    Arc::new(frame.clone()),
                    Arc::new(FrameRecords::default()),
                    Arc::new(nested_frame.clone()),
                ],
                after: Some("secretDerived".into()),
            }));
            // A key set after the blocks is written after them, as it was set.
            typed.extra.insert("failedIterations".into(), json!([1]));
            let mut plain = typed.clone();
            plain.blocks = None;
            plain.extra.shift_remove("failedIterations");
            let nested_json = json!({"inner": {"stepId": "inner", "status": "succeeded",
                "attempt": 1, "branches": [{"a": serde_json::to_value(&inner).unwrap()}]}});
            plain.extra.insert(
                kind.key().into(),
                json!([{"a": serde_json::to_value(&inner).unwrap()}, {}, nested_json]),
            );
            plain.extra.insert("failedIterations".into(), json!([1]));
            let text = serde_json::to_string(&typed).unwrap();
            assert_eq!(text, serde_json::to_string(&plain).unwrap());
            assert_eq!(typed.clone().into_json().to_string(), text);
            let back: StepExecution = serde_json::from_str(&text).unwrap();
            assert_eq!(back, typed, "read back typed, nested blocks too");
        }
    }

    /// D-189: an `iterations` / `branches` value typed records would not give back equal
    /// stays JSON in `extra`, byte for byte.
    #[test]
    fn odd_blocks_stay_json_untouched() {
        let a = serde_json::to_value(StepExecution::new("a", StepStatus::Running, 1)).unwrap();
        let mut with_null = a.clone();
        with_null["error"] = Value::Null;
        for value in [
            json!({"a": a}),
            json!([1]),
            json!([{"a": a}, []]),
            json!([{"a": with_null}]),
            json!([{"a": {"stepId": "a"}}]),
        ] {
            let doc = json!({"stepId": "loop", "status": "succeeded", "attempt": 1,
                             "iterations": value});
            let r: StepExecution = serde_json::from_value(doc.clone()).unwrap();
            assert!(r.blocks.is_none(), "{value}");
            assert_eq!(serde_json::to_string(&r).unwrap(), doc.to_string());
        }
    }

    /// A record as JSON: what this crate writes, or (`odd`) the same with one change a
    /// foreign store might make — a `null` member, a member removed, a member added to
    /// its error — or any small JSON value.
    fn record_doc() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let written = (
            0usize..5,
            0u32..3,
            proptest::option::of(0i64..9),
            any::<bool>(),
        )
            .prop_map(|(status, attempt, output, failed)| {
                let statuses = [
                    StepStatus::Pending,
                    StepStatus::Running,
                    StepStatus::Succeeded,
                    StepStatus::Failed,
                    StepStatus::Skipped,
                ];
                let mut r = StepExecution::new("s", statuses[status], attempt);
                r.output = output.map(|n| json!({"n": n}).into());
                if failed {
                    r.error = Some(Box::new(StepError::new("c", "m", Phase::Execute)));
                }
                serde_json::to_value(&r).unwrap()
            });
        (written, 0usize..5).prop_map(|(mut doc, odd)| {
            match odd {
                1 => doc["finishedAt"] = Value::Null,
                2 => {
                    doc.as_object_mut().map(|m| m.remove("status"));
                }
                3 if doc.get("error").is_some() => doc["error"]["more"] = json!(1),
                4 => doc = json!([doc]),
                _ => {}
            }
            doc
        })
    }

    /// A frame's JSON: records by id (some perhaps odd), or any small value.
    fn frame_doc() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            4 => proptest::collection::vec(record_doc(), 0..3).prop_map(|records| {
                let m: Map<String, Value> = records
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (format!("s{i}"), r))
                    .collect();
                Value::Object(m)
            }),
            1 => Just(json!([1])),
            1 => Just(Value::Null),
        ]
    }

    proptest::proptest! {
        /// D-188 / D-189: whatever a store gives back, reading it as a RunState or a patch
        /// and writing it again gives an equal JSON value: typed frames and blocks lose
        /// nothing, and what they cannot type is kept as it was.
        #[test]
        fn any_state_or_patch_reads_and_writes_back_equal(
            frames in proptest::collection::vec((0usize..4, frame_doc()), 0..4),
            blocks in proptest::collection::vec(frame_doc(), 0..3),
            branches in proptest::bool::ANY,
        ) {
            let keys = ["frame:/a.iterations[0]", "frame:/b.branches[1]", "other", "frames"];
            let mut control = serde_json::to_value(StepExecution::new("c", StepStatus::Succeeded, 1)).unwrap();
            control["secretDerived"] = json!(true);
            control[if branches { "branches" } else { "iterations" }] = Value::Array(blocks);
            control["failedIterations"] = json!([0]);
            control["z1"] = json!(1);
            control["z2"] = json!(2);
            let mut doc = json!({"runId": "r", "workflowId": "wf", "status": "running",
                                 "variables": {}, "steps": {"c": control}});
            let mut patch = json!({"runId": "r", "steps": {"c": doc["steps"]["c"].clone()}});
            for (k, v) in frames {
                patch[keys[k]] = v.clone();
                if !v.is_null() {
                    doc[keys[k]] = v;
                }
            }
            let state: RunState = serde_json::from_value(doc.clone()).unwrap();
            proptest::prop_assert_eq!(serde_json::to_value(&state).unwrap(), doc.clone());
            // A record's keys keep their order, its blocks where they stood.
            proptest::prop_assert_eq!(
                serde_json::to_string(&state.steps["c"]).unwrap(),
                doc["steps"]["c"].to_string()
            );
            proptest::prop_assert_eq!(state.into_json(), doc);
            let p: RunStatePatch = serde_json::from_value(patch.clone()).unwrap();
            proptest::prop_assert_eq!(serde_json::to_value(&p).unwrap(), patch);
        }
    }

    /// D-188: a key lives in `frames` or in `extra`, never both, whichever a patch set last
    /// (a patch's frames after its extra keys), by reference and by value alike.
    #[test]
    fn a_key_is_a_frame_or_an_extra_never_both() {
        let key = "frame:/loop.iterations[0]";
        let frame: Arc<FrameRecords> = Arc::new(
            [("a".to_owned(), record("a", StepStatus::Succeeded, json!(1)))]
                .into_iter()
                .collect(),
        );
        let patch = |extra: Option<Value>, frame: Option<Option<Arc<FrameRecords>>>| {
            let mut p = RunStatePatch {
                run_id: "r".into(),
                ..RunStatePatch::default()
            };
            if let Some(v) = extra {
                p.extra.insert(key.into(), v);
            }
            if let Some(f) = frame {
                p.frames.insert(key.into(), f);
            }
            p
        };
        let steps = [
            (patch(Some(json!("foreign")), None), Some(false)),
            (patch(None, Some(Some(frame.clone()))), Some(true)),
            (patch(Some(json!("again")), None), Some(false)),
            (
                patch(Some(json!("both")), Some(Some(frame.clone()))),
                Some(true),
            ),
            (patch(None, Some(None)), None),
            (patch(Some(json!("x")), None), Some(false)),
            (patch(Some(Value::Null), None), None),
        ];
        let mut by_ref = RunState::new("r", "wf");
        let mut by_value = RunState::new("r", "wf");
        for (p, want) in steps {
            by_ref.apply(&p);
            by_value.apply_owned(p);
            for s in [&by_ref, &by_value] {
                let got = match (s.frames.contains_key(key), s.extra.contains_key(key)) {
                    (false, false) => None,
                    (true, false) => Some(true),
                    (false, true) => Some(false),
                    (true, true) => panic!("{key} is both a frame and an extra key"),
                };
                assert_eq!(got, want);
            }
        }
    }

    /// D-182: folding a patch shares its records with the state (no copy), and a writer
    /// through `Arc::make_mut` copies a shared record instead of changing the patch's.
    #[test]
    fn folding_shares_records_and_a_writer_copies_a_shared_one() {
        let mut p = RunStatePatch {
            run_id: "r".into(),
            ..RunStatePatch::default()
        };
        p.steps
            .insert("a".into(), record("a", StepStatus::Succeeded, json!(1)));
        let mut s = RunState::new("r", "");
        s.apply(&p);
        assert!(Arc::ptr_eq(&s.steps["a"], &p.steps["a"]));
        let mut owned = RunState::new("r", "");
        owned.apply_owned(p.clone());
        assert!(Arc::ptr_eq(&owned.steps["a"], &p.steps["a"]));
        if let Some(r) = s.steps.get_mut("a") {
            Arc::make_mut(r).output = Some(json!(2).into());
        }
        assert_eq!(p.steps["a"].output, Some(json!(1).into()));
        assert_eq!(s.steps["a"].output, Some(json!(2).into()));
        // Serialized, a shared record is the record itself.
        let text = serde_json::to_string(&owned).unwrap_or_default();
        assert!(text.contains(r#""steps":{"a":{"stepId":"a","status":"succeeded""#));
    }
}
