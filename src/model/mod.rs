//! The RFC's document and run types, and save-time validation.
//!
//! Owns: serde types for Workflow/Step/Edge/RetryPolicy/… and RunState/StepExecution/
//! RunStatePatch; `validate`, which reports every problem with a JSON Pointer.
//! Invariant: no execution, no I/O, no clock.

mod error;
pub(crate) mod ops;
mod run;
mod serde_util;
mod validate;
mod workflow;

pub use error::{ValidationCode, ValidationError, pointer_token};
pub use run::{
    PatchField, Phase, RunState, RunStatePatch, RunStatus, StepError, StepExecution, StepMeta,
    StepStatus,
};
pub use validate::{ValidateOptions, validate_workflow};
pub use workflow::{
    Backoff, CallableOnError, Edge, ErrorReroute, FanOut, OnError, RetryPolicy, Step, Uses, When,
    Workflow, WorkflowVariable,
};
