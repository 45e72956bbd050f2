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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::output;
    use crate::engine::testing::{TestHost, act, control, run, workflow};
    use crate::model::StepStatus;

    fn matched(condition: Value) -> Value {
        let p = json!({"condition": condition})
            .as_object()
            .cloned()
            .unwrap_or_default();
        output(&p).map_or(Value::Null, |o| o["matched"].clone())
    }

    #[test]
    fn truthiness_is_jsonlogic_s() {
        for falsy in [
            json!(false),
            Value::Null,
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
        ] {
            assert_eq!(matched(falsy.clone()), json!(false), "{falsy}");
        }
        for truthy in [json!(true), json!(-1), json!(0.5), json!("0"), json!([0])] {
            assert_eq!(matched(truthy.clone()), json!(true), "{truthy}");
        }
    }

    #[test]
    fn an_object_or_a_missing_condition_is_param_invalid() {
        let e = output(&serde_json::Map::new()).expect_err("missing");
        assert_eq!(e.code, "param_invalid");
        let p = json!({"condition": {"var": "x"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            output(&p).map_err(|e| e.code),
            Err("param_invalid".to_owned())
        );
    }

    #[test]
    fn an_unmatched_if_skips_its_successors() {
        for (condition, then_status) in
            [(false, StepStatus::Skipped), (true, StepStatus::Succeeded)]
        {
            let host = TestHost::new();
            let wf = workflow(
                json!([
                    control("gate", "if", json!({"condition": condition})),
                    act("then", json!({}))
                ]),
                json!([{"from": "gate", "to": "then"}]),
            );
            let r = run(&wf, &host);
            assert_eq!(r.state.steps["gate"].status, StepStatus::Succeeded);
            assert_eq!(
                r.state.steps["then"].status, then_status,
                "condition {condition}"
            );
        }
    }
}
