//! A run's state (RUN-5) and the one definition of what a checkpoint means:
//! [`RunState::apply`] folds a [`RunStatePatch`] into it (by reference; the by-value and
//! draining spellings call it).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::frames::{FRAME_PREFIX, FrameRecords, Frames, extra_of_state, frames_of_state};
use super::patch::{PatchField, RunStatePatch};
use super::record::{StepExecution, to_json};
use super::status::{RunStatus, StepError};
use crate::model::serde_util::present;

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
    /// The state as JSON: what `serde_json::to_value` gives (an extension named like a
    /// field replaces it).
    pub fn into_json(self) -> Value {
        to_json(&self)
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
        // Every field, named: a field added to the patch fails to compile here until it is
        // folded. Field by field, so only what the patch sets is copied (never its run id).
        let RunStatePatch {
            run_id: _,
            workflow_id,
            reset_steps,
            status,
            variables,
            output,
            error,
            clear,
            steps,
            step_errors,
            extra,
            frames,
        } = patch;
        if *reset_steps {
            self.steps.clear();
            self.output = None;
            self.error = None;
        }
        if let Some(w) = workflow_id {
            self.workflow_id.clone_from(w);
        }
        if let Some(status) = status {
            self.status = *status;
        }
        if let Some(vars) = variables {
            self.variables.clone_from(vars);
        }
        self.clear(clear);
        if let Some(output) = output {
            self.output = Some(output.clone());
        }
        if let Some(error) = error {
            self.error = Some(error.clone());
        }
        for (id, exec) in steps {
            match self.steps.get_mut(id) {
                Some(record) => *record = Arc::clone(exec),
                None => {
                    self.steps.insert(id.clone(), Arc::clone(exec));
                }
            }
        }
        self.step_errors.extend(step_errors.iter().cloned());
        for (k, v) in extra {
            self.set_extra(k, v.clone());
        }
        for (k, frame) in frames {
            self.set_frame(k, frame.clone());
        }
    }

    /// Set (or, with `null`, remove) a run-level `extra` key; a frame of that key goes. The
    /// key is copied only when it is new to the state.
    fn set_extra(&mut self, k: &str, value: Value) {
        if k.starts_with(FRAME_PREFIX) {
            self.frames.swap_remove(k);
        }
        if value.is_null() {
            self.extra.remove(k);
        } else if let Some(slot) = self.extra.get_mut(k) {
            *slot = value;
        } else {
            self.extra.insert(k.to_owned(), value);
        }
    }

    /// Set (or, with `None`, remove) a frame; an `extra` key of that name goes. The key is
    /// copied only when it is new to the state.
    fn set_frame(&mut self, k: &str, frame: Option<Arc<FrameRecords>>) {
        // Removing hashes the key even when it is absent: a short `extra` (a run's
        // `trigger` and `runAttempt`) is scanned instead, once per checkpoint into a frame.
        if self.extra.len() > 8 || self.extra.keys().any(|e| e == k) {
            self.extra.remove(k);
        }
        match (frame, self.frames.get_mut(k)) {
            (Some(frame), Some(slot)) => *slot = frame,
            (Some(frame), None) => {
                self.frames.insert(k.to_owned(), frame);
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

    /// [`RunState::apply`] taking the patch by value (its records are shared either way).
    pub fn apply_owned(&mut self, patch: RunStatePatch) {
        self.apply(&patch);
    }

    /// [`RunState::apply`], then `patch` emptied — equal to
    /// `RunStatePatch { run_id, ..Default::default() }` — with its run id and the capacity of
    /// its step map and lists kept, so the engine's next checkpoint reuses them instead of
    /// allocating them again (D-186).
    pub fn apply_draining(&mut self, patch: &mut RunStatePatch) {
        self.apply(patch);
        patch.empty_keeping_capacity();
    }
}
