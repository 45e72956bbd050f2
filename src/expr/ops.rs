//! `logic`, `resolve`, `parse` and `serialize` ops of the request service.
//!
//! FOUNDATION PLACEHOLDER: the expression issue implements these.

use serde_json::Value;

use super::RunScope;
use crate::service::{bad_request, ok};

pub(crate) fn logic(_request: &Value) -> Value {
    bad_request("op \"logic\" is not available yet")
}

pub(crate) fn resolve(request: &Value) -> Value {
    let Some(with) = request.get("with").and_then(Value::as_object) else {
        return bad_request("\"with\" must be an object");
    };
    let scope = RunScope::from_json(request.get("scope").unwrap_or(&Value::Null));
    match super::resolve_with(with, &scope) {
        Ok(r) => ok(Value::Object(r.params)),
        Err(e) => serde_json::json!({"error": {"code": e.code.as_str(), "message": e.message}}),
    }
}

pub(crate) fn parse(_request: &Value) -> Value {
    bad_request("op \"parse\" is not available yet")
}

pub(crate) fn serialize(_request: &Value) -> Value {
    bad_request("op \"serialize\" is not available yet")
}
