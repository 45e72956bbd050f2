//! `aggregate` and `merge` (CTRL-8): one join function behind both.
//!
//! Owns: combining a join's inbound outputs (`array` / `object` mode) and a merge's
//! explicit `entries`. Invariant: inbound outputs arrive in declared edge order, skipped
//! and failed sources contributing nothing ([`crate::engine::walk`]); on an object-mode
//! key collision the later edge wins, while a duplicate merge entry key is refused.

use serde_json::{Map, Value, json};

use super::param_invalid;
use crate::model::StepError;
use crate::plan::{JoinMode, PlanValue};

/// CTRL-8: the one join function behind `aggregate` and `merge`.
pub(super) fn join(
    mode: PlanValue<JoinMode>,
    params: &Map<String, Value>,
    inbound: &[(String, Value)],
    merge: bool,
) -> Result<Value, StepError> {
    let mode = match mode {
        PlanValue::Known(m) => m,
        PlanValue::AtRunTime => match params.get("mode").and_then(Value::as_str) {
            None | Some("array") => JoinMode::Array,
            Some("object") => JoinMode::Object,
            Some(other) => {
                return Err(param_invalid(format!(
                    "mode must be \"array\" or \"object\", got {other:?}"
                )));
            }
        },
    };
    let entries = if merge {
        match params.get("entries") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.is_empty() => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                return Err(param_invalid(format!(
                    "merge entries must be an array, got {other}"
                )));
            }
        }
    } else {
        None
    };
    let Some(entries) = entries else {
        return Ok(match mode {
            JoinMode::Array => {
                json!({"result": inbound.iter().map(|(_, v)| v).collect::<Vec<_>>()})
            }
            JoinMode::Object => {
                let mut out = Map::new();
                for (id, v) in inbound {
                    let Value::Object(m) = v else {
                        return Err(param_invalid(format!(
                            "object mode merges objects; the output of {id:?} is {v}"
                        )));
                    };
                    // The later edge wins on a key collision.
                    out.extend(m.clone());
                }
                json!({"result": out})
            }
        });
    };
    let mut values = Vec::new();
    let mut object = Map::new();
    for (k, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return Err(param_invalid(format!(
                "merge entries[{k}] must be an object"
            )));
        };
        // An entry with no value (JSON's undefined) is dropped.
        let Some(value) = e.get("value") else {
            continue;
        };
        match mode {
            JoinMode::Array => values.push(value.clone()),
            JoinMode::Object => {
                let key = match e.get("key") {
                    Some(Value::String(s)) if !s.is_empty() => s,
                    _ => {
                        return Err(param_invalid(format!(
                            "merge entries[{k}].key must be a non-empty string in object mode"
                        )));
                    }
                };
                if object.insert(key.clone(), value.clone()).is_some() {
                    return Err(param_invalid(format!(
                        "merge entries[{k}].key {key:?} is a duplicate"
                    )));
                }
            }
        }
    }
    Ok(match mode {
        JoinMode::Array => json!({"result": values}),
        JoinMode::Object => json!({"result": object}),
    })
}
