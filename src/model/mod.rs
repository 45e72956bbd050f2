//! The RFC's document and run types, and save-time validation.
//!
//! Owns: serde types for Workflow/Step/Edge/RetryPolicy/… and RunState/StepExecution/
//! RunStatePatch; `validate`, which reports every problem with a JSON Pointer, in document
//! order; `key`, the MODEL-5 grammar and its first-assignment gate (`validate_save`).
//! Invariant: no execution, no I/O, no clock. Unknown fields are preserved in each type's
//! `extra` map, and every document `validate_workflow` accepts round-trips through the
//! typed model to an equal JSON value.

mod error;
mod key;
mod registry;
mod run;
mod serde_util;
mod validate;
mod workflow;

pub use error::{
    ValidationCode, ValidationError, errors_to_json, json_kind, pointer_token, show_value,
};
pub use key::{
    KEY_LEN_MAX, KEY_LEN_MIN, is_first_key_assignment, is_valid_key, key_grammar_problems,
    stored_key, validate_save,
};
pub use registry::{Registry, SaveError};
pub use run::{
    PatchField, Phase, RunState, RunStatePatch, RunStatus, StepError, StepExecution, StepMeta,
    StepStatus,
};
pub use validate::{MAX_NESTING_DEPTH, ValidateOptions, validate_workflow};
pub use workflow::{
    Backoff, CallableOnError, EXT_MAX_DELAY_MS, EXT_RETRY_ON, Edge, ErrorReroute, FanOut, OnError,
    RetryPolicy, Step, Uses, When, Workflow, WorkflowVariable,
};
