//! `if` (CTRL-2): `{matched}` from the condition's JSONLogic truthiness.
//!
//! Owns: the truth value of a resolved condition. Invariant: an object condition has no
//! truth value here (it is an expression that was never evaluated, or a record mistaken
//! for a flag) and fails `param_invalid`; routing skips every outgoing edge of an
//! unmatched `if` ([`crate::engine::walk`]).

use serde_json::{Map, Value, json};

use super::param_invalid;
use crate::model::StepError;

/// CTRL-2: `{matched}`; an object condition cannot be coerced (it is an expression that
/// was never evaluated, or a record mistaken for a flag) and is `param_invalid`.
pub(super) fn output(params: &Map<String, Value>) -> Result<Value, StepError> {
    match params.get("condition") {
        None => Err(param_invalid("if needs a condition")),
        Some(Value::Object(_)) => Err(param_invalid(
            "if condition resolved to an object, which has no truth value here; use a boolean, number, string, null or array",
        )),
        Some(v) => Ok(json!({"matched": truthy(v)})),
    }
}

/// JSONLogic truthiness: `false`, `null`, `0`, `""` and `[]` are falsy.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}
