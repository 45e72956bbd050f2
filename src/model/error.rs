//! Save-time validation problems: `{status: 400, code, path, message}`.

use serde::{Deserialize, Serialize};

/// Stable machine codes for validation problems. Codes are never renamed; new ones are
/// appended. `as_str` is the wire spelling.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::VariantArray,
)]
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
    /// SEC-2: the document nests deeper than `model::MAX_NESTING_DEPTH`.
    NestingTooDeep,
}

impl ValidationCode {
    /// Every code, in declaration order: derived from the enum, so a code added later is
    /// in it (and in every check that walks it).
    pub const ALL: &'static [ValidationCode] = <Self as strum::VariantArray>::VARIANTS;

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
            ValidationCode::NestingTooDeep => "nesting_too_deep",
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
    /// The wire shape `{status, code, path, message}`, built without a fallible
    /// serializer so callers never need to handle an error that cannot happen.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "status": self.status,
            "code": self.code.as_str(),
            "path": self.path,
            "message": self.message,
        })
    }

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

/// A list of problems in the wire shape: a JSON array of [`ValidationError::to_json`].
pub(crate) fn errors_to_json(errors: &[ValidationError]) -> serde_json::Value {
    serde_json::Value::Array(errors.iter().map(ValidationError::to_json).collect())
}

/// Escape one reference token for a JSON Pointer (RFC 6901 §3): the json layer's one escape.
pub(crate) use crate::json::pointer_token;

/// The JSON kind of a value as a noun phrase for messages ("a string", "null", …).
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a value for messages: compact JSON, cut after 60 characters.
pub(crate) fn show_value(v: &serde_json::Value) -> String {
    use crate::limits::SHOWN_VALUE_CHARS_MAX as MAX;
    let text = v.to_string();
    if text.chars().count() <= MAX {
        text
    } else {
        format!("{}…", text.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_codes_match_serde_spelling() {
        for &code in ValidationCode::ALL {
            let serde = serde_json::to_value(code).expect("serializes");
            assert_eq!(serde, code.as_str(), "{code:?}");
            let back: ValidationCode = serde_json::from_value(serde).expect("deserializes");
            assert_eq!(back, code);
            let e = ValidationError::new(code, "/a~1b", "m");
            assert_eq!(e.to_json(), serde_json::to_value(&e).expect("serializes"));
        }
        let mut spellings: Vec<&str> = ValidationCode::ALL.iter().map(|c| c.as_str()).collect();
        spellings.sort_unstable();
        spellings.dedup();
        assert_eq!(
            spellings.len(),
            ValidationCode::ALL.len(),
            "two codes, one spelling"
        );
    }

    #[test]
    fn pointer_tokens_escape_tilde_before_slash() {
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
        assert_eq!(pointer_token("~1"), "~01");
    }
}
