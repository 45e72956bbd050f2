//! resolveWith's public face: modes, errors with stable codes, the resolved params with
//! their secret taint (SEC-1), and the one-call entry points. The work happens in
//! [`super::compile`]: every entry point here compiles the with block and resolves it.

use serde_json::{Map, Value};

use super::compile::CompiledWith;
use super::jsonlogic::Dialect;
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

/// Everything that shapes one resolution besides the block and the scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveOptions<'a> {
    pub mode: ResolveMode,
    /// The step under a single-step test, named in BIND-3 messages.
    pub tested_step: Option<&'a str>,
    /// The JSONLogic dialect; [`Dialect::W6w`] unless a workflow opts in.
    pub dialect: Dialect,
}

/// Stable codes for resolution failures (phase `"resolution"`). Never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResolveCode {
    /// ENV-5: a render part's ref is absent/null/empty.
    RenderRefUnresolved,
    /// ENV-5: a render part's ref resolved to a non-string.
    RenderRefNotAString,
    /// ENV-3 / TPL-6: a secret part or `{{ secrets.X }}` names no available secret.
    SecretNotFound,
    /// EXPR-2: JSONLogic that the dialect refuses for its shape (empty arithmetic, an `=`
    /// marker whose payload is not JSON, a `$` path that is not a string).
    InvalidExpression,
    /// EXPR-2: a one-key object whose key is not an operator of the dialect.
    UnknownOperator,
    /// BIND-3: test mode, a binding names a step with no output in the supplied state.
    StepOutputMissing,
    /// BIND-6: a required param resolved to null.
    ParamInvalid,
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
            ResolveCode::UnknownOperator => "unknown_operator",
            ResolveCode::StepOutputMissing => "step_output_missing",
            ResolveCode::ParamInvalid => "param_invalid",
            ResolveCode::LimitExceeded => "limit_exceeded",
        }
    }
}

/// A resolution failure: the step fails with phase `"resolution"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveError {
    pub code: ResolveCode,
    pub message: String,
    /// The ref / path / operator / secret name the error concerns, when there is one.
    pub reference: Option<String>,
    /// JSON Pointer into the with block where it happened.
    pub path: String,
    /// The step the error names: for BIND-3/BIND-6, the step the binding points at.
    pub step: Option<String>,
}

impl ResolveError {
    pub(crate) fn new(code: ResolveCode, message: String, path: &str) -> ResolveError {
        ResolveError {
            code,
            message,
            reference: None,
            path: path.to_owned(),
            step: None,
        }
    }

    pub(crate) fn with_ref(mut self, reference: &str) -> ResolveError {
        self.reference = Some(reference.to_owned());
        self
    }
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
    /// JSON Pointers (into `params`) of values derived from secret plaintext: every string
    /// built from a secret part or a `{{ secrets.X }}` marker, wholly.
    pub secret_paths: Vec<String>,
}

impl Resolved {
    /// The params with every secret-derived value replaced by [`REDACTED`], for recording
    /// as `StepExecution.input` and in traces.
    pub fn redacted(&self) -> Map<String, Value> {
        redact_params(&self.params, &self.secret_paths)
    }

    /// [`Resolved::redacted`] as compact JSON text, what a step record keeps as its input
    /// (D-193); without secret-derived values the params are written as they are, uncopied.
    pub fn redacted_text(&self) -> crate::json::JsonText {
        if self.secret_paths.is_empty() {
            crate::json::JsonText::from_map(&self.params)
        } else {
            crate::json::JsonText::from_map(&self.redacted())
        }
    }
}

/// `params` with the value at each of `secret_paths` (JSON Pointers) replaced by
/// [`REDACTED`]: one copy of the params.
pub(crate) fn redact_params(
    params: &Map<String, Value>,
    secret_paths: &[String],
) -> Map<String, Value> {
    // Short-lived: the recorded input is this copy's text (D-193).
    let mut root = Value::Object(params.clone());
    for p in secret_paths {
        if let Some(v) = root.pointer_mut(p) {
            *v = Value::String(REDACTED.to_owned());
        }
    }
    match root {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Resolve a with block against the scope with full-run semantics.
pub fn resolve_with(with: &Map<String, Value>, scope: &RunScope) -> Result<Resolved, ResolveError> {
    resolve_with_mode(with, scope, ResolveMode::Run)
}

/// Resolve a with block in the given mode.
pub(crate) fn resolve_with_mode(
    with: &Map<String, Value>,
    scope: &RunScope,
    mode: ResolveMode,
) -> Result<Resolved, ResolveError> {
    resolve_with_options(
        with,
        scope,
        &ResolveOptions {
            mode,
            ..ResolveOptions::default()
        },
    )
}

/// Resolve with every option spelled out (compiles, then resolves once).
pub(crate) fn resolve_with_options(
    with: &Map<String, Value>,
    scope: &RunScope,
    options: &ResolveOptions<'_>,
) -> Result<Resolved, ResolveError> {
    CompiledWith::compile_with(with, options.dialect)?.resolve_with_options(scope, options)
}

/// BIND-6: the step a `{"$": "steps.<id>…"}` binding points at, if it is one.
pub(crate) fn binding_step(value: &Value) -> Option<&str> {
    let map = value.as_object().filter(|m| m.len() == 1)?;
    let path = map.get("$")?.as_str()?;
    let mut segs = path.split('.');
    (segs.next() == Some("steps")).then(|| segs.next())?
}

/// BIND-6: fail when a required param resolved to null, naming the step its binding
/// points at when it is a `$` binding to a step.
pub(crate) fn check_required(
    with: &Map<String, Value>,
    resolved: &Resolved,
    required: &[&str],
) -> Result<(), ResolveError> {
    for name in required {
        if resolved.params.get(*name).is_none_or(Value::is_null) {
            let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
            let step = with.get(*name).and_then(binding_step);
            let message = match step {
                Some(s) => format!(
                    "required param {name:?} resolved to null: its binding points at step {s:?}, which has no such output"
                ),
                None => format!("required param {name:?} resolved to null"),
            };
            let mut e =
                ResolveError::new(ResolveCode::ParamInvalid, message, &pointer).with_ref(name);
            e.step = step.map(str::to_owned);
            return Err(e);
        }
    }
    Ok(())
}
