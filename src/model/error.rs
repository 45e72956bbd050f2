//! Save-time validation problems: `{status: 400, code, path, message}`.

use serde::{Deserialize, Serialize};

/// Stable machine codes for validation problems. Codes are never renamed; new ones are
/// appended. `as_str` is the wire spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidationCode {
    /// PLAN-1
    DuplicateStepId,
    /// PLAN-2, ERR-13
    DanglingEdge,
    /// PLAN-3, ERR-13
    Cycle,
    /// PLAN-6
    InvalidEdgeWhen,
    /// PLAN-8
    DottedStepId,
    /// MODEL-3, MODEL-4
    InvalidRetryPolicy,
    /// MODEL-5
    InvalidKey,
    /// PLAN-9
    NoSteps,
    /// A field holds a JSON value of the wrong type.
    InvalidType,
    /// A required field is absent.
    MissingField,
    /// A field holds a value outside its enum (e.g. `onError`, `fanOut`).
    InvalidValue,
    /// PLAN-7: a main-graph edge touches a control's sub-block step.
    SubBlockEdge,
    /// CTRL-1: a `@w6w/control` action outside the canonical set.
    UnknownControl,
    /// CTRL-7: a `wait` on a host without `schedule`.
    UnsupportedWait,
    /// CTRL-6: a parallel strategy the engine cannot honour.
    UnsupportedStrategy,
    /// A control's params are malformed at plan time.
    ParamInvalid,
}

impl ValidationCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationCode::DuplicateStepId => "duplicate_step_id",
            ValidationCode::DanglingEdge => "dangling_edge",
            ValidationCode::Cycle => "cycle",
            ValidationCode::InvalidEdgeWhen => "invalid_edge_when",
            ValidationCode::DottedStepId => "dotted_step_id",
            ValidationCode::InvalidRetryPolicy => "invalid_retry_policy",
            ValidationCode::InvalidKey => "invalid_key",
            ValidationCode::NoSteps => "no_steps",
            ValidationCode::InvalidType => "invalid_type",
            ValidationCode::MissingField => "missing_field",
            ValidationCode::InvalidValue => "invalid_value",
            ValidationCode::SubBlockEdge => "sub_block_edge",
            ValidationCode::UnknownControl => "unknown_control",
            ValidationCode::UnsupportedWait => "unsupported_wait",
            ValidationCode::UnsupportedStrategy => "unsupported_strategy",
            ValidationCode::ParamInvalid => "param_invalid",
        }
    }
}

impl std::fmt::Display for ValidationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One save-time problem. `path` is a JSON Pointer (RFC 6901) into the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationError {
    pub status: u16,
    pub code: ValidationCode,
    pub path: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(code: ValidationCode, path: impl Into<String>, message: impl Into<String>) -> Self {
        ValidationError {
            status: 400,
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{} at {}: {}", self.code, path, self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Escape one reference token for a JSON Pointer (RFC 6901 §3: `~` → `~0`, `/` → `~1`).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
