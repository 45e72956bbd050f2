//! Why a simulation gives no report ([`SimError`], each with a stable code), and the
//! checks that refuse one before anything runs: [`load_workflow`], [`load_scenario`],
//! [`check_reachable`].

use serde_json::{Value, json};

use super::scenario::{self, Scenario, ScenarioError, parse_scenario};
use crate::engine::EngineError;
use crate::model::{ValidationError, Workflow};
use crate::validate::{ValidateOptions, validate_workflow};

/// Why the simulator produced no report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("invalid workflow")]
    InvalidWorkflow(Vec<ValidationError>),
    #[error("invalid scenario")]
    InvalidScenario(Vec<ScenarioError>),
    /// The run was rejected before it started (e.g. a required variable is missing).
    #[error("{0}")]
    Rejected(EngineError),
    /// resume / replay refused (no such run, wrong workflow, not resumable…).
    #[error("{0}")]
    Engine(EngineError),
    #[error("store: {0}")]
    Store(String),
    /// The engine awaited something that never completes (a bug, never a hang).
    #[error("simulation halted: {0}")]
    Halted(String),
    /// D-121: the scenario asks for something no run of this workflow tree can do (a
    /// fault that can never fire): every such problem, each with its JSON Pointer.
    #[error("unreachable fault")]
    UnreachableFault(Vec<ScenarioError>),
    /// A run budget ([`super::Limits`]) ran out.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// A candidate engine behind the context protocol refused the run (its own
    /// `{code, message, …}`), or broke the protocol (`context_protocol`).
    #[error("{}", .0.get("message").and_then(Value::as_str).unwrap_or("the candidate engine failed"))]
    Candidate(Value),
    /// RUN-3/RUN-4: a candidate host's store, reopened after a simulated crash, did not
    /// return the state of the last checkpoint it acknowledged.
    #[error("{0}")]
    NotDurable(String),
}

impl SimError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            SimError::InvalidWorkflow(_) => "invalid_workflow",
            SimError::InvalidScenario(_) => "invalid_scenario",
            SimError::UnreachableFault(_) => "unreachable_fault",
            SimError::Rejected(e) | SimError::Engine(e) => e.code(),
            SimError::Store(_) => "store_error",
            SimError::Halted(_) => "sim_halted",
            SimError::LimitExceeded(_) => "limit_exceeded",
            SimError::Candidate(_) => "candidate_error",
            SimError::NotDurable(_) => "checkpoint_not_durable",
        }
    }

    /// Whether the *input* is at fault (CLI exit 1) rather than I/O (exit 2).
    pub fn is_input_error(&self) -> bool {
        !matches!(self, SimError::Store(_))
    }

    /// `{"code", "message", …}` with the details a caller needs.
    pub fn to_json(&self) -> Value {
        match self {
            SimError::InvalidWorkflow(errors) => json!({
                "code": self.code(),
                "message": errors.iter().map(|e| format!("{} at {:?}: {}", e.code, e.path, e.message)).collect::<Vec<_>>().join("; "),
                "errors": errors,
            }),
            SimError::InvalidScenario(errors) | SimError::UnreachableFault(errors) => json!({
                "code": self.code(),
                "message": errors.iter().map(|e| format!("{}: {}", if e.path.is_empty() { "/" } else { &e.path }, e.message)).collect::<Vec<_>>().join("; "),
                "path": errors.first().map(|e| e.path.clone()).unwrap_or_default(),
                "errors": errors,
            }),
            SimError::Rejected(EngineError::InvalidVariables { variable, message }) => json!({
                "code": self.code(), "message": message, "variable": variable,
            }),
            SimError::Rejected(EngineError::InvalidWorkflow(errors))
            | SimError::Engine(EngineError::InvalidWorkflow(errors)) => json!({
                "code": self.code(), "message": self.to_string(), "errors": errors,
            }),
            SimError::Candidate(answer) => answer.clone(),
            _ => json!({"code": self.code(), "message": self.to_string()}),
        }
    }
}

/// Parse and validate a workflow document for running (`validate_workflow`, runnable).
pub fn load_workflow(doc: &Value) -> Result<Workflow, SimError> {
    validate_workflow(doc, ValidateOptions { runnable: true }).map_err(SimError::InvalidWorkflow)
}

/// D-121: refuse a scenario whose faults no run of `workflow` (and the scenario's own
/// workflows) can ever reach, naming each (`unreachable_fault`).
pub(crate) fn check_reachable(workflow: &Value, scenario: &Scenario) -> Result<(), SimError> {
    reachable(scenario::unreachable_faults(workflow, scenario))
}

/// [`check_reachable`] of a typed (validated) workflow, without a JSON copy of it.
pub(super) fn check_reachable_typed(
    workflow: &Workflow,
    scenario: &Scenario,
) -> Result<(), SimError> {
    reachable(scenario::unreachable_faults_typed(workflow, scenario))
}

fn reachable(errors: Vec<ScenarioError>) -> Result<(), SimError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SimError::UnreachableFault(errors))
    }
}

/// Parse and check a scenario document.
pub fn load_scenario(doc: &Value) -> Result<Scenario, SimError> {
    parse_scenario(doc).map_err(SimError::InvalidScenario)
}
