//! One checkpoint: [`RunStatePatch`], the change since the previous one.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::frames::{PatchFrames, extra_of_patch, frames_of_patch};
use super::record::StepExecution;
use super::status::{RunStatus, StepError};
use crate::model::serde_util::present;

/// One checkpoint: the change since the previous one (see [`RunState::apply`](super::RunState::apply)).
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
    /// Frames to set whole (`None`, written `null`, removes one): see [`RunState::frames`](super::RunState::frames).
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

impl RunStatePatch {
    /// This patch emptied — equal to `RunStatePatch { run_id, ..Default::default() }` —
    /// with its run id and the capacity of its maps and lists kept (D-186).
    pub(super) fn empty_keeping_capacity(&mut self) {
        // Every field, named: a field added to the patch fails to compile here until it is
        // emptied.
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
        } = self;
        *workflow_id = None;
        *reset_steps = false;
        *status = None;
        *variables = None;
        *output = None;
        *error = None;
        clear.clear();
        steps.clear();
        step_errors.clear();
        extra.clear();
        frames.clear();
    }
}
