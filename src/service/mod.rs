//! The JSON-lines request service behind `w6w-sim eval` and the conformance cases.
//!
//! Owns: request routing and the response envelope — `{"ok": value}` on success,
//! `{"error": {"code", "message", …}}` on failure. This file dispatches; one submodule per
//! domain decodes that domain's requests and renders its errors (`model.rs`: validate /
//! plan / saves, `expr.rs`: logic / resolve / parse / serialize, `sim.rs`: run / replay,
//! `dialect.rs`: import and the WOML/YAML forms), each a thin call into the domain's API.
//! The service sits above the domains and no domain imports it (ARCHITECTURE.md#layers).
//! Invariant: never panics and never aborts on a bad line; every request line gets exactly
//! one response line.

use serde_json::{Value, json};

pub(crate) mod dialect;
pub(crate) mod expr;
pub(crate) mod model;
pub(crate) mod sim;

/// The longest request line `eval` reads; a longer one is answered `bad_request` and
/// skipped without being held in memory (SEC-2).
#[cfg(feature = "cli")]
pub(crate) use crate::limits::MAX_REQUEST_LINE_BYTES;

/// The response for a malformed request.
pub(crate) fn bad_request(message: impl Into<String>) -> Value {
    json!({"error": {"code": "bad_request", "message": message.into()}})
}

/// Wrap a success value.
pub(crate) fn ok(value: Value) -> Value {
    // Moved into the envelope: `json!` would serialize `value` again, a deep copy of
    // every answer (a whole report).
    let mut envelope = serde_json::Map::with_capacity(1);
    envelope.insert("ok".to_owned(), value);
    Value::Object(envelope)
}

/// Handle one request object. Every error response carries `code` and `message`.
pub fn handle(request: &Value) -> Value {
    finish(route(request))
}

pub(crate) use sim::{run_and_crash_points, run_and_crash_points_with};

/// The envelope every answer leaves with: an error carries a string `code` and `message`.
fn finish(mut response: Value) -> Value {
    if let Some(err) = response.get_mut("error").and_then(Value::as_object_mut) {
        if !err.get("code").is_some_and(Value::is_string) {
            err.insert("code".into(), Value::String("internal".into()));
        }
        if !err.get("message").is_some_and(Value::is_string) {
            let message = summary(err);
            err.insert("message".into(), Value::String(message));
        }
    }
    response
}

/// A one-line message for an error that carries only a code and a list of `errors`.
fn summary(err: &serde_json::Map<String, Value>) -> String {
    let code = err.get("code").and_then(Value::as_str).unwrap_or("error");
    let list = err.get("errors").and_then(Value::as_array);
    match list.and_then(|l| l.first()) {
        Some(first) => format!(
            "{code}: {} problem(s); first at {}: {}",
            list.map_or(0, Vec::len),
            first.get("path").and_then(Value::as_str).unwrap_or("/"),
            first
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        None => code.replace('_', " "),
    }
}

fn route(request: &Value) -> Value {
    let Some(obj) = request.as_object() else {
        return bad_request("a request must be a JSON object with an \"op\" field");
    };
    let Some(op) = obj.get("op").and_then(Value::as_str) else {
        return bad_request("a request needs a string \"op\" field");
    };
    // Issue 10: `import`, and `validate` / `run` with a `dialect` (WOML, YAML).
    if let Some(response) = dialect::handle(op, request) {
        return response;
    }
    match op {
        "validate" => model::validate(request),
        "plan" => model::plan(request),
        "saves" => model::saves(request),
        "logic" => expr::logic(request),
        "resolve" => expr::resolve(request),
        "parse" => expr::parse(request),
        "serialize" => expr::serialize(request),
        "run" => sim::run(request),
        "replay" => sim::replay(request),
        other => bad_request(format!(
            "unknown op {other:?}; known ops: validate, plan, saves, logic, resolve, parse, serialize, run, replay, import"
        )),
    }
}

/// Handle one request line (JSON text) and return one response line (no newline).
pub fn handle_line(line: &str) -> String {
    handle_bytes(line.as_bytes())
}

/// Handle one request line as raw bytes: invalid UTF-8, bad JSON and duplicate keys each
/// get `bad_request` (with the duplicate's `path`), never an end of the service.
pub fn handle_bytes(line: &[u8]) -> String {
    let response = if line.iter().all(u8::is_ascii_whitespace) {
        // D-214: answered like any other bad line, saying what was wrong with it.
        bad_request("a blank request line; every line must hold one JSON request object")
    } else {
        match crate::json::parse_bytes(line) {
            Ok(request) => handle(&request),
            Err(e) => {
                let mut r = bad_request(format!("request is not acceptable JSON: {e}"));
                if let Some(path) = e.duplicate
                    && let Some(err) = r.get_mut("error").and_then(Value::as_object_mut)
                {
                    err.insert("path".into(), Value::String(path));
                }
                r
            }
        }
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
            " \t\r",
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

    /// D-171, found by the `eval_line` fuzzer: a secret that spells an envelope word
    /// (`"error"`, or a letter of `"ok"`) is scrubbed from every value, never from the
    /// envelope's keys — the answer stays readable.
    #[test]
    fn a_secret_spelling_an_envelope_word_leaves_the_envelope_readable() {
        let wf = serde_json::json!({"manifestVersion": "2", "id": "wf", "name": "wf",
            "steps": [{"id": "a", "uses": {"app": "app", "action": "act"}}]});
        for secret in ["error", "errors", "code", "message", "path", "o", "e", "ok"] {
            let bad = serde_json::json!({"op": "run", "workflow": wf, "scenario": {
                "secrets": {"S": secret}, "actions": {"a": {"outceoms": []}}}});
            let out: Value = serde_json::from_str(&handle_line(&bad.to_string()))
                .unwrap_or_else(|e| panic!("{secret}: not JSON: {e}"));
            let err = &out["error"];
            assert!(err["code"].is_string(), "{secret}: {out}");
            assert!(err["message"].is_string(), "{secret}: {out}");
            assert!(err["errors"][0]["path"].is_string(), "{secret}: {out}");
            let message = err["message"].as_str().unwrap_or_default();
            assert!(
                !message.replace(crate::expr::REDACTED, "").contains(secret),
                "{secret}: the message still holds the secret: {out}"
            );
            let good = serde_json::json!({"op": "run", "workflow": wf, "scenario": {
                "secrets": {"S": secret}}});
            let out: Value = serde_json::from_str(&handle_line(&good.to_string()))
                .unwrap_or_else(|e| panic!("{secret}: not JSON: {e}"));
            assert!(out.get("ok").is_some(), "{secret}: {out}");
        }
    }
}
