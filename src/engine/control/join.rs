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

/// CTRL-8: the one join function behind `aggregate` and `merge` (`merge`: a non-empty
/// `entries` list replaces the inbound outputs).
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
    match entries {
        Some(entries) => join_entries(mode, entries),
        None => join_inbound(mode, inbound),
    }
}

/// The inbound outputs: an array in edge order, or one object (the later edge wins on a
/// key collision).
fn join_inbound(mode: JoinMode, inbound: &[(String, Value)]) -> Result<Value, StepError> {
    Ok(match mode {
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
    })
}

/// A merge's explicit entries: their values in order, or an object keyed by `key` (no
/// duplicates). An entry with no value (JSON's undefined) is dropped.
fn join_entries(mode: JoinMode, entries: &[Value]) -> Result<Value, StepError> {
    let mut values = Vec::new();
    let mut object = Map::new();
    for (k, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return Err(param_invalid(format!(
                "merge entries[{k}] must be an object"
            )));
        };
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

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::join;
    use crate::plan::{JoinMode, PlanValue};

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn inbound() -> Vec<(String, Value)> {
        vec![
            ("a".into(), json!({"k": 1, "a": true})),
            ("b".into(), json!({"k": 2})),
        ]
    }

    #[test]
    fn aggregate_collects_inbound_outputs_in_edge_order() {
        let array = PlanValue::Known(JoinMode::Array);
        let out = join(array, &Map::new(), &inbound(), false);
        assert_eq!(out, Ok(json!({"result": [{"k": 1, "a": true}, {"k": 2}]})));
        let object = PlanValue::Known(JoinMode::Object);
        let out = join(object, &Map::new(), &inbound(), false);
        assert_eq!(
            out,
            Ok(json!({"result": {"k": 2, "a": true}})),
            "the later edge wins"
        );
        let not_objects = vec![("a".into(), json!([1]))];
        let e = join(object, &Map::new(), &not_objects, false).expect_err("array in object mode");
        assert_eq!(e.code, "param_invalid");
    }

    #[test]
    fn a_mode_resolved_at_run_time_is_checked() {
        let at_run = PlanValue::AtRunTime;
        let out = join(
            at_run,
            &params(json!({"mode": "object"})),
            &inbound(),
            false,
        );
        assert_eq!(out.map(|o| o["result"]["k"].clone()), Ok(json!(2)));
        let e = join(at_run, &params(json!({"mode": "set"})), &inbound(), false).expect_err("mode");
        assert!(e.message.ends_with("got \"set\""), "{}", e.message);
    }

    #[test]
    fn merge_entries_replace_the_inbound_outputs() {
        let p = params(
            json!({"entries": [{"key": "x", "value": 1}, {"key": "y"}, {"key": "z", "value": null}]}),
        );
        let array = PlanValue::Known(JoinMode::Array);
        assert_eq!(
            join(array, &p, &inbound(), true),
            Ok(json!({"result": [1, null]}))
        );
        let object = PlanValue::Known(JoinMode::Object);
        assert_eq!(
            join(object, &p, &inbound(), true),
            Ok(json!({"result": {"x": 1, "z": null}})),
            "an entry without a value is dropped"
        );
        // Aggregate ignores entries; an empty list means the inbound outputs.
        assert_eq!(
            join(array, &p, &inbound(), false).map(|o| o["result"].as_array().map(Vec::len)),
            Ok(Some(2))
        );
        let empty = params(json!({"entries": []}));
        assert_eq!(
            join(array, &empty, &inbound(), true).map(|o| o["result"][1].clone()),
            Ok(json!({"k": 2}))
        );
    }

    #[test]
    fn merge_refuses_bad_entries() {
        let object = PlanValue::Known(JoinMode::Object);
        let dup = params(json!({"entries": [{"key": "x", "value": 1}, {"key": "x", "value": 2}]}));
        let e = join(object, &dup, &[], true).expect_err("duplicate");
        assert_eq!(e.message, "merge entries[1].key \"x\" is a duplicate");
        let nokey = params(json!({"entries": [{"value": 1}]}));
        assert!(
            join(object, &nokey, &[], true).is_err(),
            "object mode needs keys"
        );
        let bad = params(json!({"entries": [3]}));
        assert!(join(PlanValue::Known(JoinMode::Array), &bad, &[], true).is_err());
        let notlist = params(json!({"entries": {"key": "x"}}));
        assert!(join(object, &notlist, &[], true).is_err());
    }
}
