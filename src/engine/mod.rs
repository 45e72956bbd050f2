//! The engine: run / resume / replay over the host contract.
//!
//! A few nouns, each `impl` in one place: [`Engine`] (a planned workflow and its entry
//! points: `run.rs`, with `replay.rs` and the run-level ladder `runerr.rs`), `walk::Walk`
//! (one pass over one graph: engine, host, journal, run context, graph, frame),
//! `step::StepCtx` (one step of a walk: dispatch by kind, one app step's life, the end
//! commit) and `control/` (one file per canonical control and `@w6w/call`). Around them:
//! edge routing and the additive skip set ([`routing`]), checkpoints as patches
//! ([`journal`]), META normalisation ([`meta`]), [`EngineCode`]. Invariant: talks to the
//! world only through [`crate::host::WorkflowContext`] (RUN-8) — it never reads a clock,
//! randomness or the disk. It knows nothing of how a host stores, schedules or invokes.
//!
//! Where to start: [`Engine::run`] → `runerr::Engine::ladder` → `run::Engine::drive_with`,
//! which builds the main graph's `Walk`; every step goes through `StepCtx::run`.

mod code;
mod control;
pub(crate) mod graph;
pub(crate) mod journal;
mod meta;
mod replay;
mod retry;
mod routing;
mod run;
mod runerr;
mod sealed;
mod sink;
pub(crate) mod step;
pub(crate) mod strand;
mod taint;
#[cfg(test)]
pub(crate) mod testing;
mod vars;
pub(crate) mod walk;

use serde_json::{Map, Value, json};

use crate::host::HostError;
use crate::model::{RunState, RunStatus, StepError, ValidationError};

pub(crate) use code::EngineCode;
pub(crate) use control::CALL_DEPTH_MAX;
pub(crate) use retry::{EXT_MAX_DELAY_MS, EXT_RETRY_ON, WAIT_MS_MAX};
pub use run::Engine;
pub(crate) use run::workflow_dialect;
pub(crate) use run::{secret_variables, taint_pointers};

/// What a host hands the engine to start a run (engine.md `RunSeed`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunSeed {
    pub run_id: String,
    /// The trigger context, `{ type, event? }`: the scope's `trigger` root.
    pub trigger: Value,
    /// Variables the caller supplied; declared defaults and `required` apply (MODEL-7).
    pub variables: Map<String, Value>,
    /// Composition hops already taken to reach this run (0 for a top-level run, CALL-2).
    pub call_depth: u32,
    /// SEC-1: JSON Pointers into `variables` of values the caller's run derived from a
    /// secret (a `@w6w/call` input): the run treats them as secret-derived (D-124).
    pub secret_paths: Vec<String>,
}

impl RunSeed {
    /// A manual top-level run with no variables.
    pub fn manual(run_id: &str) -> Self {
        RunSeed {
            run_id: run_id.to_owned(),
            trigger: json!({"type": "manual"}),
            variables: Map::new(),
            call_depth: 0,
            secret_paths: Vec::new(),
        }
    }
}

/// engine.md `RunResult`: `{ runId, status, output?, error?, state }`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub run_id: String,
    pub status: RunStatus,
    pub output: Option<Value>,
    pub error: Option<StepError>,
    /// The engine's mirror of the durable state: every checkpoint it made, applied.
    pub state: RunState,
}

impl RunResult {
    fn from_state(state: RunState) -> Self {
        RunResult {
            run_id: state.run_id.clone(),
            status: state.status,
            output: state.output.clone(),
            error: state.error.clone(),
            state,
        }
    }
}

/// Why the engine could not take a run to a terminal state. A run that *fails* is not an
/// error: it is an `Ok` result with status `failed`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The workflow cannot run (planning problems, or a step that is not runnable).
    #[error("invalid workflow: {}", summary(.0))]
    InvalidWorkflow(Vec<ValidationError>),
    /// MODEL-7: the run is rejected before it starts.
    #[error("run rejected: variable {variable:?}: {message}")]
    InvalidVariables { variable: String, message: String },
    /// A step kind this engine does not run yet (controls, @w6w/call: issue 5).
    #[error("step {step_id:?} cannot run on this engine: {message}")]
    UnsupportedStep { step_id: String, message: String },
    /// CTRL-7: a suspended run resumed without its token, with another token, or a token
    /// given for a run no wait suspended.
    #[error("run {run_id:?} cannot be resumed: {message}")]
    ResumeToken { run_id: String, message: String },
    /// resume / replay of a run the host has no state for.
    #[error("no run {0:?} in the host's state")]
    RunNotFound(String),
    /// resume of a run that is not resumable, or replay of one that is not replayable.
    #[error("run {run_id:?} cannot be {action}: {message}")]
    NotResumable {
        run_id: String,
        action: &'static str,
        message: String,
    },
    /// replay `from` a step the workflow does not declare.
    #[error("replay from {0:?}: the workflow has no such step")]
    UnknownStep(String),
    /// The host failed (a crash, a store error): the run stops where it is; its last
    /// durable checkpoint is what a restart resumes from (RUN-3).
    #[error(transparent)]
    Host(#[from] HostError),
}

fn summary(errors: &[ValidationError]) -> String {
    errors
        .iter()
        .map(|e| format!("{} at {:?}: {}", e.code, e.path, e.message))
        .collect::<Vec<_>>()
        .join("; ")
}

impl EngineError {
    /// Stable machine code (never renamed).
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::InvalidWorkflow(_) => "invalid_workflow",
            EngineError::InvalidVariables { .. } => "invalid_variables",
            EngineError::UnsupportedStep { .. } => "unsupported_step",
            EngineError::ResumeToken { .. } => "invalid_resume_token",
            EngineError::RunNotFound(_) => "run_not_found",
            EngineError::NotResumable { .. } => "run_not_resumable",
            EngineError::UnknownStep(_) => "unknown_step",
            EngineError::Host(h) => h.code(),
        }
    }
}

/// What a step is, computed from `uses.app` (node-types.md §Node kinds). `Control` and
/// `Call` are interpreted natively by the engine (`control.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    /// A registered app's action: retries, meta.
    App,
    /// `@w6w/*` host-internal apps (`@w6w/document`, `@w6w/script`, …): the invoke seam,
    /// retries, no meta (META-4).
    Internal,
    /// `@w6w/control`: interpreted by the engine, no retry loop (RETRY-6).
    Control,
    /// `@w6w/call`: `invoke_callable`, no retry loop, no meta (CALL-3).
    Call,
}

impl StepKind {
    pub(crate) fn of_app(app: &str) -> StepKind {
        match app {
            "@w6w/control" => StepKind::Control,
            "@w6w/call" => StepKind::Call,
            a if a.starts_with("@w6w/") => StepKind::Internal,
            _ => StepKind::App,
        }
    }

    /// RETRY-6: only these kinds run a retry loop.
    pub(crate) fn retries(self) -> bool {
        matches!(self, StepKind::App | StepKind::Internal)
    }

    /// META-4: only app steps carry meta.
    pub(crate) fn carries_meta(self) -> bool {
        self == StepKind::App
    }
}
