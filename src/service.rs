//! The JSON-lines request service behind `w6w-sim eval` and the conformance cases.
//!
//! Owns: request routing and the response envelope — `{"ok": value}` on success,
//! `{"error": {"code", "message", …}}` on failure. Each op's behaviour lives in the module
//! that owns it; this file only dispatches. Invariant: never panics and never aborts on a
//! bad line; every request line gets exactly one response line.

use serde_json::{Value, json};

/// The response for a malformed request.
pub fn bad_request(message: impl Into<String>) -> Value {
    json!({"error": {"code": "bad_request", "message": message.into()}})
}

/// Wrap a success value.
pub fn ok(value: Value) -> Value {
    json!({ "ok": value })
}

/// Handle one request object.
pub fn handle(request: &Value) -> Value {
    let Some(obj) = request.as_object() else {
        return bad_request("a request must be a JSON object with an \"op\" field");
    };
    let Some(op) = obj.get("op").and_then(Value::as_str) else {
        return bad_request("a request needs a string \"op\" field");
    };
    // Issue 10: `import`, and `validate` / `run` with a `dialect` (WOML, YAML).
    if let Some(response) = crate::dialect::ops::handle(op, request) {
        return response;
    }
    match op {
        "validate" => crate::model::ops::validate(request),
        "plan" => crate::model::ops::plan(request),
        "saves" => crate::model::ops::saves(request),
        "logic" => crate::expr::ops::logic(request),
        "resolve" => crate::expr::ops::resolve(request),
        "parse" => crate::expr::ops::parse(request),
        "serialize" => crate::expr::ops::serialize(request),
        "run" => crate::sim::ops::run(request),
        "replay" => crate::sim::ops::replay(request),
        other => bad_request(format!(
            "unknown op {other:?}; known ops: validate, plan, saves, logic, resolve, parse, serialize, run, replay, import"
        )),
    }
}

/// Handle one request line (JSON text) and return one response line (no newline).
pub fn handle_line(line: &str) -> String {
    let response = match serde_json::from_str::<Value>(line) {
        Ok(request) => handle(&request),
        Err(e) => bad_request(format!(
            "request is not valid JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        )),
    };
    serde_json::to_string(&response).unwrap_or_else(|e| {
        format!(r#"{{"error":{{"code":"internal","message":"cannot serialize response: {e}"}}}}"#)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_get_bad_request() {
        for line in [
            "",
            "not json",
            "[1,2]",
            "{}",
            r#"{"op":5}"#,
            r#"{"op":"nope"}"#,
        ] {
            let out: Value = serde_json::from_str(&handle_line(line)).expect("response is JSON");
            assert_eq!(out["error"]["code"], "bad_request", "line {line:?}");
        }
    }
}
