//! `logic`, `resolve`, `parse` and `serialize` ops of the request service (issue 3 item 10).
//!
//! Owns: request decoding and error rendering for the expression ops; every behaviour is a
//! call into the expression API. Failures are `{"error": {"code", "message", …}}` with
//! `ref` / `path` / `step` / `operator` where they apply.

use serde_json::{Map, Value, json};

use super::{bad_request, ok};
use crate::expr::{
    CompiledWith, Dialect, Logic, Mode, Part, ResolveError, ResolveMode, RunScope, check_required,
    parse_root_anchored, parse_template, serialize_template,
};

fn dialect(request: &Value) -> Result<Dialect, Value> {
    match request.get("dialect") {
        None | Some(Value::Null) => Ok(Dialect::W6w),
        Some(Value::String(s)) => Dialect::from_name(s).ok_or_else(|| {
            bad_request(format!(
                "unknown dialect {s:?}; known: \"w6w\", \"extended\""
            ))
        }),
        Some(_) => Err(bad_request("\"dialect\" must be a string")),
    }
}

fn resolve_error(e: &ResolveError) -> Value {
    let mut m = Map::new();
    m.insert("code".into(), Value::from(e.code.as_str()));
    m.insert("message".into(), Value::from(e.message.clone()));
    m.insert("phase".into(), Value::from("resolution"));
    m.insert("path".into(), Value::from(e.path.clone()));
    if let Some(r) = &e.reference {
        let key = if e.code == crate::expr::ResolveCode::UnknownOperator {
            "operator"
        } else {
            "ref"
        };
        m.insert(key.into(), Value::from(r.clone()));
    }
    if let Some(s) = &e.step {
        m.insert("step".into(), Value::from(s.clone()));
    }
    json!({ "error": m })
}

/// `{"op":"logic","logic":L,"data":D,"dialect"?}` → `{"ok": value}`.
pub(crate) fn logic(request: &Value) -> Value {
    let dialect = match dialect(request) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let Some(rule) = request.get("logic") else {
        return bad_request("\"logic\" is required");
    };
    let empty = Value::Object(Map::new());
    let data = request.get("data").unwrap_or(&empty);
    match Logic::compile(rule, dialect) {
        Ok(compiled) => ok(compiled.evaluate(data)),
        Err(e) => {
            let mut m = Map::new();
            m.insert("code".into(), Value::from(e.code.as_str()));
            m.insert("message".into(), Value::from(e.message));
            if let Some(op) = e.operator {
                m.insert("operator".into(), Value::from(op));
            }
            json!({ "error": m })
        }
    }
}

/// `{"op":"resolve","with":W,"scope":S,"mode"?:"run"|"test","step"?,"dialect"?,
/// "required"?:[names],"redact"?:bool}` → `{"ok": params}` (plus `"secretPaths"` when
/// `redact` is set, in which case `ok` holds the redacted params).
pub(crate) fn resolve(request: &Value) -> Value {
    let Some(with) = request.get("with").and_then(Value::as_object) else {
        return bad_request("\"with\" must be an object");
    };
    let dialect = match dialect(request) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let scope = match request.get("scope") {
        None | Some(Value::Null) => RunScope::new(),
        Some(s @ Value::Object(_)) => RunScope::from_json(s),
        Some(_) => return bad_request("\"scope\" must be an object"),
    };
    let mode = match request.get("mode").and_then(Value::as_str) {
        None | Some("run") => ResolveMode::Run,
        Some("test") => ResolveMode::Test,
        Some(other) => {
            return bad_request(format!("unknown mode {other:?}; known: \"run\", \"test\""));
        }
    };
    let step = request.get("step").and_then(Value::as_str);
    if mode == ResolveMode::Test && step.is_none() {
        return bad_request("mode \"test\" needs the tested step's id in \"step\"");
    }
    let compiled = match CompiledWith::compile_with(with, dialect) {
        Ok(c) => c,
        Err(e) => return resolve_error(&e),
    };
    let resolved = match (mode, step) {
        (ResolveMode::Test, Some(step)) => compiled.resolve_test(&scope, step),
        _ => compiled.resolve(&scope, ResolveMode::Run),
    };
    let resolved = match resolved {
        Ok(r) => r,
        Err(e) => return resolve_error(&e),
    };
    if let Some(required) = request.get("required").and_then(Value::as_array) {
        let names: Vec<&str> = required.iter().filter_map(Value::as_str).collect();
        if let Err(e) = check_required(with, &resolved, &names) {
            return resolve_error(&e);
        }
    }
    if request.get("redact").and_then(Value::as_bool) == Some(true) {
        return json!({
            "ok": Value::Object(resolved.redacted()),
            "secretPaths": resolved.secret_paths,
        });
    }
    ok(Value::Object(resolved.params))
}

/// `{"op":"parse","text":T,"mode":"editor"|"render","rootAnchored"?:true}` → `{"ok":[parts]}`.
/// With `rootAnchored`, the text is parsed in editor mode whatever `mode` says.
pub(crate) fn parse(request: &Value) -> Value {
    let Some(text) = request.get("text").and_then(Value::as_str) else {
        return bad_request("\"text\" must be a string");
    };
    let mode = match request.get("mode").and_then(Value::as_str) {
        None | Some("editor") => Mode::Editor,
        Some("render") => Mode::Render,
        Some(other) => {
            return bad_request(format!(
                "unknown mode {other:?}; known: \"editor\", \"render\""
            ));
        }
    };
    let anchored = request.get("rootAnchored").and_then(Value::as_bool) == Some(true);
    // The root-anchoring rule always parses in editor mode (amendment 2026-08-14 item 4),
    // so `mode` does not apply to it.
    let parts = if anchored {
        parse_root_anchored(text)
    } else {
        parse_template(text, mode).map(|p| p.parts)
    };
    match parts {
        Ok(parts) => ok(Value::Array(parts.iter().map(Part::to_json).collect())),
        Err(e) => json!({"error": {"code": "limit_exceeded", "message": e.message}}),
    }
}

/// `{"op":"serialize","parts":P}` → `{"ok": text}`.
pub(crate) fn serialize(request: &Value) -> Value {
    let Some(parts) = request.get("parts").and_then(Value::as_array) else {
        return bad_request("\"parts\" must be an array");
    };
    let parts: Vec<Part> = parts.iter().map(Part::from_json).collect();
    ok(Value::String(serialize_template(&parts)))
}
