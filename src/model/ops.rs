//! `validate` and `plan` ops of the request service.
//!
//! FOUNDATION PLACEHOLDER: typed parse + planner only; the foundation issue replaces this
//! with full save-time validation (every problem, JSON Pointer paths).

use serde_json::{Value, json};

use crate::model::Workflow;
use crate::service::{bad_request, ok};

fn invalid(errors: Value) -> Value {
    json!({"error": {"code": "invalid_workflow", "errors": errors}})
}

fn parse(request: &Value) -> Result<Workflow, Value> {
    let Some(w) = request.get("workflow") else {
        return Err(bad_request("missing \"workflow\""));
    };
    serde_json::from_value::<Workflow>(w.clone()).map_err(|e| {
        invalid(
            json!([{"status": 400, "code": "invalid_type", "path": "", "message": e.to_string()}]),
        )
    })
}

pub(crate) fn validate(request: &Value) -> Value {
    match parse(request).map(|w| crate::plan::plan(&w)) {
        Ok(Ok(_)) => ok(Value::Bool(true)),
        Ok(Err(errors)) => invalid(serde_json::to_value(errors).unwrap_or_default()),
        Err(e) => e,
    }
}

pub(crate) fn plan(request: &Value) -> Value {
    match parse(request) {
        Ok(w) => match crate::plan::plan(&w) {
            Ok(p) => ok(json!(p.ids(&w))),
            Err(errors) => invalid(serde_json::to_value(errors).unwrap_or_default()),
        },
        Err(e) => e,
    }
}
