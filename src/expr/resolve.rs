//! resolveWith: walk a `with` block once against a run scope (EXPR-3, EXPR-6, EXPR-7).
//!
//! MINIMAL FOUNDATION VERSION — `$` path markers and recursion only. The expression issue
//! replaces this file with the full dialect (`$expr`, ExprValue, templates, test mode),
//! keeping every public signature below.

use serde_json::{Map, Value};

use super::scope::RunScope;

/// Placeholder written instead of a secret-derived value in recorded input (SEC-1).
pub const REDACTED: &str = "[redacted]";

/// How a with block is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResolveMode {
    /// Full-run semantics: a `$` binding to a missing step output resolves to null.
    #[default]
    Run,
    /// Single-step test (BIND-2…5): a `$` binding to a step with no output fails.
    Test,
}

/// Stable codes for resolution failures (phase `"resolution"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResolveCode {
    /// ENV-5: a render part's ref is absent/null/empty.
    RenderRefUnresolved,
    /// ENV-5: a render part's ref resolved to a non-string.
    RenderRefNotAString,
    /// ENV-3 / TPL-6: a secret part or `{{ secrets.X }}` names no available secret.
    SecretNotFound,
    /// EXPR-2: JSONLogic that the dialect refuses (unknown operator, bad shape).
    InvalidExpression,
    /// BIND-3: test mode, a `$` binding names a step with no output in the supplied state.
    StepOutputMissing,
    /// SEC-2: a limit (nesting depth, template length, …) was exceeded.
    LimitExceeded,
}

impl ResolveCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolveCode::RenderRefUnresolved => "render_ref_unresolved",
            ResolveCode::RenderRefNotAString => "render_ref_not_a_string",
            ResolveCode::SecretNotFound => "secret_not_found",
            ResolveCode::InvalidExpression => "invalid_expression",
            ResolveCode::StepOutputMissing => "step_output_missing",
            ResolveCode::LimitExceeded => "limit_exceeded",
        }
    }
}

/// A resolution failure: the step fails with phase `"resolution"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveError {
    pub code: ResolveCode,
    pub message: String,
    /// The ref / path / step the error concerns, when there is one.
    pub reference: Option<String>,
    /// JSON Pointer into the with block where it happened.
    pub path: String,
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ResolveError {}

/// A resolved with block, plus which values derive from secrets (SEC-1).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The params handed to the action.
    pub params: Map<String, Value>,
    /// JSON Pointers (into `params`) of values derived from secret plaintext.
    pub secret_paths: Vec<String>,
}

impl Resolved {
    /// The params with every secret-derived value replaced by [`REDACTED`], for recording
    /// as `StepExecution.input` and in traces.
    pub fn redacted(&self) -> Map<String, Value> {
        let mut root = Value::Object(self.params.clone());
        for p in &self.secret_paths {
            if let Some(v) = root.pointer_mut(p) {
                *v = Value::String(REDACTED.to_owned());
            }
        }
        match root {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// Resolve a with block against the scope with full-run semantics.
pub fn resolve_with(with: &Map<String, Value>, scope: &RunScope) -> Result<Resolved, ResolveError> {
    resolve_with_mode(with, scope, ResolveMode::Run)
}

/// Resolve a with block in the given mode.
pub fn resolve_with_mode(
    with: &Map<String, Value>,
    scope: &RunScope,
    _mode: ResolveMode,
) -> Result<Resolved, ResolveError> {
    let mut params = Map::new();
    for (k, v) in with {
        params.insert(k.clone(), resolve_value(v, scope));
    }
    Ok(Resolved {
        params,
        secret_paths: Vec::new(),
    })
}

fn resolve_value(value: &Value, scope: &RunScope) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$") => {
            let path = map.get("$").and_then(Value::as_str).unwrap_or_default();
            scope
                .data_root()
                .lookup(path)
                .cloned()
                .unwrap_or(Value::Null)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve_value(v, scope)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| resolve_value(v, scope)).collect())
        }
        other => other.clone(),
    }
}
