//! The run model's small vocabulary: the run and step statuses (RUN-5, RUN-6), the
//! Invocation phase, a step's error and its host-reported metadata.

use serde::{Deserialize, Serialize};

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
