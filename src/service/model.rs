//! `validate` and `plan` ops of the request service.
//!
//! Requests: `{"op": "validate" | "plan", "workflow": W, "runnable"?: bool,
//! "previous"?: P}`. `runnable` applies the PLAN-9 gate; `previous` is the stored document
//! a save replaces (MODEL-5: the key grammar is checked only when `previous` has no key).
//! `plan` also takes `"hostSchedule"?: bool` (default true: CTRL-7, `false` plans for a
//! host without `schedule`) and `"detail"?: bool`, which turns the success payload into
//! `{"order": [ids], "subBlocks": [{control, branch?, level, steps, order, root, last,
//! implicitChain}]}`.
//! Responses: `{"ok": true}` / `{"ok": [ids]}`, or
//! `{"error": {"code": "invalid_workflow", "errors": [{status, code, path, message}]}}`;
//! a request that is itself malformed gets `bad_request`.

use serde_json::{Value, json};

use super::{bad_request, ok};
use crate::model::{ValidationError, Workflow, errors_to_json};
use crate::plan::{Plan, PlanOptions, SubBlockKind};
use crate::validate::{ValidateOptions, validate_save};

/// The error response for an invalid workflow.
pub(crate) fn invalid(errors: &[ValidationError]) -> Value {
    let message = match errors.first() {
        Some(e) => format!(
            "the workflow is invalid: {} problem(s); first at {}: {}",
            errors.len(),
            if e.path.is_empty() { "/" } else { &e.path },
            e.message
        ),
        None => "the workflow is invalid".to_owned(),
    };
    json!({"error": {"code": "invalid_workflow", "message": message, "errors": errors_to_json(errors)}})
}

/// Validate the request's workflow; `Err` is the finished response.
fn validated(request: &Value) -> Result<Workflow, Value> {
    let Some(doc) = request.get("workflow") else {
        return Err(bad_request(
            "missing \"workflow\": the workflow document to check",
        ));
    };
    let runnable = match request.get("runnable") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad_request("\"runnable\" must be a boolean")),
    };
    let previous = match request.get("previous") {
        None | Some(Value::Null) => None,
        Some(p @ Value::Object(_)) => Some(p),
        Some(_) => {
            return Err(bad_request(
                "\"previous\" must be the stored workflow document (an object) or null",
            ));
        }
    };
    validate_save(doc, previous, ValidateOptions { runnable }).map_err(|e| invalid(&e))
}

pub(crate) fn validate(request: &Value) -> Value {
    match validated(request) {
        Ok(_) => ok(Value::Bool(true)),
        Err(response) => response,
    }
}

fn flag(request: &Value, name: &str, default: bool) -> Result<bool, Value> {
    match request.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad_request(format!("\"{name}\" must be a boolean"))),
    }
}

pub(crate) fn plan(request: &Value) -> Value {
    let (schedule, detail) = match (
        flag(request, "hostSchedule", true),
        flag(request, "detail", false),
    ) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let workflow = match validated(request) {
        Ok(w) => w,
        Err(response) => return response,
    };
    let options = PlanOptions {
        host_supports_schedule: schedule,
    };
    match crate::plan::plan_with(&workflow, &options) {
        Ok(p) if detail => ok(detailed(&p, &workflow)),
        Ok(p) => ok(json!(p.ids(&workflow))),
        Err(errors) => invalid(&errors),
    }
}

/// The main order plus every sub-block's plan, by step id.
fn detailed(p: &Plan, w: &Workflow) -> Value {
    let id = |i: usize| w.steps[i].id.as_str();
    let ids = |v: &[usize]| v.iter().map(|&i| id(i)).collect::<Vec<_>>();
    let blocks: Vec<Value> = p
        .controls
        .blocks
        .iter()
        .map(|b| {
            let mut o = json!({
                "control": id(b.control),
                "level": b.level,
                "steps": ids(&b.steps),
                "order": ids(&b.order),
                "root": id(b.root),
                "last": id(b.last),
                "implicitChain": b.implicit_chain,
            });
            if let SubBlockKind::Branch(n) = b.kind {
                o["branch"] = json!(n);
            }
            o
        })
        .collect();
    json!({"order": p.ids(w), "subBlocks": blocks})
}

/// `{"op": "saves", "saves": [{"account": A, "workflow": W, "seed"?: bool}, …]}`: apply the
/// saves in order to an empty registry (MODEL-5 against the previously stored document,
/// MODEL-6 key uniqueness per account). `seed: true` stores a document as it already
/// exists in a host, unchecked. Answers `{"ok": [per-save result]}`, each `{"ok": true}` or
/// `{"error": {"code": "invalid_workflow" | "key_conflict", …}}`.
pub(crate) fn saves(request: &Value) -> Value {
    let Some(saves) = request.get("saves").and_then(Value::as_array) else {
        return bad_request("\"saves\" must be an array of {account, workflow} objects");
    };
    let mut registry = crate::validate::Registry::new();
    let mut results = Vec::with_capacity(saves.len());
    for (i, save) in saves.iter().enumerate() {
        let (Some(account), Some(doc)) = (
            save.get("account").and_then(Value::as_str),
            save.get("workflow").filter(|w| w.is_object()),
        ) else {
            return bad_request(format!(
                "saves[{i}] needs a string \"account\" and an object \"workflow\""
            ));
        };
        if save.get("seed").and_then(Value::as_bool) == Some(true) {
            registry.seed(account, doc.clone());
            results.push(json!({"ok": true}));
            continue;
        }
        results.push(match registry.save(account, doc) {
            Ok(()) => json!({"ok": true}),
            Err(e) => json!({"error": e.to_json()}),
        });
    }
    ok(Value::Array(results))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wf() -> Value {
        json!({"manifestVersion": "2", "id": "w", "name": "w",
               "steps": [{"id": "b"}, {"id": "a"}], "edges": [{"from": "a", "to": "b"}]})
    }

    #[test]
    fn validate_and_plan_succeed() {
        assert_eq!(
            validate(&json!({"op": "validate", "workflow": wf()})),
            json!({"ok": true})
        );
        assert_eq!(
            plan(&json!({"op": "plan", "workflow": wf()})),
            json!({"ok": ["a", "b"]})
        );
    }

    #[test]
    fn plan_9_runnable_flag_gates_drafts() {
        let draft = json!({"op": "validate", "workflow": wf()});
        assert_eq!(validate(&draft), json!({"ok": true}));
        let mut gated = draft.clone();
        gated["runnable"] = json!(true);
        let out = validate(&gated);
        assert_eq!(out["error"]["code"], "invalid_workflow");
        assert_eq!(out["error"]["errors"][0]["path"], "/steps/0/uses");
        assert_eq!(out["error"]["errors"][0]["status"], 400);
    }

    #[test]
    fn invalid_workflow_errors_have_the_wire_shape() {
        let out = plan(&json!({"op": "plan", "workflow": {"manifestVersion": "2"}}));
        let errors = out["error"]["errors"].as_array().expect("errors array");
        assert_eq!(errors.len(), 3, "{out}");
        for e in errors {
            let keys: Vec<&String> = e.as_object().expect("object").keys().collect();
            assert_eq!(keys, ["status", "code", "path", "message"]);
        }
    }

    #[test]
    fn malformed_requests_are_bad_requests() {
        for request in [
            json!({"op": "validate"}),
            json!({"op": "validate", "workflow": wf(), "runnable": "yes"}),
            json!({"op": "plan", "workflow": wf(), "previous": [1]}),
        ] {
            assert_eq!(
                validate(&request)["error"]["code"],
                "bad_request",
                "{request}"
            );
        }
    }

    #[test]
    fn model_5_previous_document_skips_the_key_grammar() {
        let mut w = wf();
        w["key"] = json!("Old_Key");
        let first = validate(&json!({"op": "validate", "workflow": w.clone()}));
        assert_eq!(first["error"]["errors"][0]["code"], "invalid_key");
        let later = validate(&json!({"op": "validate", "workflow": w.clone(), "previous": w}));
        assert_eq!(later, json!({"ok": true}));
    }
}
