//! Variable seeding (MODEL-7): the run's `variables`, resolved once before it starts.
//!
//! Owns: supplied value → default → required rejection, and the advisory type check.

use serde_json::{Map, Value};

use super::EngineError;
use crate::model::Workflow;
use crate::model::json_kind;

/// Seed `vars` from what the caller supplied.
///
/// - a supplied non-null value wins (an explicit `null` counts as "not supplied", so a
///   default still applies and a required variable is still missing);
/// - otherwise the declared `default` applies;
/// - otherwise a `required` variable rejects the run with `invalid_variables`, naming it;
/// - a declared `type` is checked against a supplied value ("hosts SHOULD validate at the
///   run boundary"): a mismatch rejects the run rather than surprising a step later;
/// - supplied keys the workflow does not declare are kept (the caller's data is not lost).
pub(crate) fn seed_variables(
    workflow: &Workflow,
    supplied: &Map<String, Value>,
) -> Result<Map<String, Value>, EngineError> {
    let mut vars = supplied.clone();
    for var in workflow.variables() {
        match supplied.get(&var.key).filter(|v| !v.is_null()) {
            Some(value) => {
                if let Some(t) = var.type_.as_deref()
                    && !type_matches(t, value)
                {
                    return Err(EngineError::InvalidVariables {
                        variable: var.key.clone(),
                        message: format!(
                            "declared type {t:?} but the supplied value is {}",
                            json_kind(value)
                        ),
                    });
                }
            }
            None => match &var.default {
                Some(default) => {
                    vars.insert(var.key.clone(), default.clone());
                }
                None if var.required == Some(true) => {
                    return Err(EngineError::InvalidVariables {
                        variable: var.key.clone(),
                        message: format!(
                            "required variable {:?} has no value and no default",
                            var.key
                        ),
                    });
                }
                None => {}
            },
        }
    }
    Ok(vars)
}

fn type_matches(declared: &str, value: &Value) -> bool {
    match declared {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        // An unknown advisory type name constrains nothing.
        _ => true,
    }
}
