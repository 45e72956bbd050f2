//! The RFC's document and run types, and a document's storage rules.
//!
//! Owns: serde types for Workflow/Step/Edge/RetryPolicy/… and RunState/StepExecution/
//! RunStatePatch; `validate`, the per-field storage rules over the raw document, each
//! problem with a JSON Pointer (the graph rules are `plan`'s, and `crate::validate` runs
//! both); `key`, the MODEL-5 grammar and when it applies; the validation error type.
//! Invariant: no execution, no I/O, no clock; the lowest layer, it imports only `limits`.
//! Unknown fields are preserved in each type's `extra` map, and every document
//! `validate::validate_workflow` accepts round-trips through the typed model to an equal
//! JSON value.

mod error;
pub(crate) mod extra;
mod key;
mod run;
pub(crate) mod serde_util;
mod validate;
mod workflow;

pub use error::{ValidationCode, ValidationError};
pub(crate) use error::{errors_to_json, json_kind, pointer_token, show_value};
pub use extra::Extra;
pub(crate) use key::{is_first_key_assignment, stored_key};
pub use run::{
    BlockKind, Blocks, FrameRecords, Frames, PatchField, PatchFrames, Phase, RunState,
    RunStatePatch, RunStatus, StepError, StepExecution, StepMeta, StepStatus,
};
pub(crate) use run::{FRAME_PREFIX, FrameHasher, records_json};
#[cfg(test)]
pub(crate) use validate::MAX_NESTING_DEPTH;
#[cfg(test)]
pub(crate) use validate::storage_problems;
pub(crate) use validate::{KeyGate, StorageChecked, storage_checked_workflow};
pub use workflow::{
    Backoff, CallableOnError, Edge, ErrorReroute, FanOut, Id, OnError, RetryPolicy, Step, Uses,
    When, Workflow, WorkflowVariable,
};
pub(crate) use workflow::{EXT_MAX_DELAY_MS, EXT_RETRY_ON};
