//! Dialect ops of the request service (README's eval table):
//!
//! - `{"op":"validate","dialect":"woml"|"yaml","source":TEXT,"manifest"?:M,
//!   "runnable"?:bool}` → `true`, or `invalid_workflow` with `errors` (each `{status, code,
//!   clause, path, line, column, message}` — the w6w shape plus a position); without
//!   `runnable` the document is judged against its text alone, with it also whether it
//!   can run (D-237);
//! - `{"op":"import","dialect":D,"source":TEXT,"manifest"?:M}` → `{dialect, workflow,
//!   notes}` (the w6w workflow), or `invalid_workflow` with `errors`;
//! - `{"op":"run","dialect":D,"source":TEXT,"scenario":S}` → the run report with the
//!   dialect's additions (`run.rs`); the scenario's `manifest` key supplies YML-3 schemas.
//!
//! A `validate` or `run` request without `dialect` is not ours (the w6w ops answer it).

use serde_json::{Value, json};

use super::{bad_request, ok};
use crate::dialect::split_manifest;
use crate::dialect::{Dialect, Manifest, Problem, import};
use crate::host::StoreFactory;

/// Answer `request` if it is a dialect request; `None` leaves it to the w6w ops.
pub(crate) fn handle(op: &str, request: &Value) -> Option<Value> {
    let has_dialect = request.get("dialect").is_some();
    match op {
        "import" => Some(answer(op, request, None)),
        "validate" | "run" if has_dialect => Some(answer(op, request, None)),
        _ => None,
    }
}

/// The dialect `run` op on a caller-supplied store (a `conformance::HostAdapter`'s).
pub(crate) fn run_on(request: &Value, store: Box<dyn StoreFactory>) -> Value {
    answer("run", request, Some(store))
}

/// The dialect `run` op on any w6w engine: the document is imported here, `run` answers
/// the plain w6w request `{"op": "run", "workflow", "scenario"}` (a candidate engine
/// behind a protocol, say), and its report gets the dialect's additions.
pub(crate) fn run_with<E>(
    request: &Value,
    run: impl FnOnce(&Value) -> Result<Value, E>,
) -> Result<Value, E> {
    let imported = match imported(request) {
        Ok(i) => i,
        Err(response) => return Ok(response),
    };
    let plain = match plain(&imported, request) {
        Ok(plain) => plain,
        Err(response) => return Ok(response),
    };
    let mut response = run(&plain)?;
    if let Some(report) = response.get_mut("ok") {
        crate::dialect::decorate_report(&imported, report);
    }
    Ok(response)
}

/// The plain w6w `run` request a dialect `run` request becomes (what an engine behind a
/// seam is sent), or `None` when the request is not a dialect request or does not import.
pub(crate) fn plain_request(request: &Value) -> Option<Value> {
    request.get("dialect")?;
    plain(&imported(request).ok()?, request).ok()
}

/// The plain request for an imported document: its workflow and the request's scenario
/// prepared for it, or the error response.
fn plain(imported: &crate::dialect::Imported, request: &Value) -> Result<Value, Value> {
    let (scenario, _) = split_manifest(request.get("scenario").unwrap_or(&json!({})));
    let scenario = crate::dialect::prepare_scenario(imported, &scenario)
        .map_err(|e| json!({"error": e.to_json()}))?;
    Ok(json!({"op": "run", "workflow": imported.workflow, "scenario": scenario}))
}

/// The imported document of a dialect request, or the error response.
fn imported(request: &Value) -> Result<crate::dialect::Imported, Value> {
    let (dialect, source, manifest) = parts(request)?;
    import(dialect, source.as_bytes(), manifest.as_ref()).map_err(|p| invalid(&p))
}

/// A dialect request's dialect, source text and manifest, or the error response.
fn parts(request: &Value) -> Result<(Dialect, &str, Option<Manifest>), Value> {
    let dialect = match request.get("dialect").and_then(Value::as_str) {
        Some(name) => match Dialect::from_name(name) {
            Some(Dialect::W6w) | None => {
                return Err(bad_request(format!(
                    "\"dialect\" is \"woml\" or \"yaml\" for a dialect request, not {name:?}"
                )));
            }
            Some(d) => d,
        },
        None => return Err(bad_request("missing \"dialect\" (\"woml\" or \"yaml\")")),
    };
    let Some(source) = request.get("source").and_then(Value::as_str) else {
        return Err(bad_request("missing \"source\" (the document's text)"));
    };
    let (_, scenario_manifest) = split_manifest(request.get("scenario").unwrap_or(&json!({})));
    let manifest_doc = request.get("manifest").cloned().or(scenario_manifest);
    let manifest = match manifest_doc.as_ref().map(Manifest::from_json) {
        None => None,
        Some(Ok(m)) => Some(m),
        Some(Err(problems)) => {
            return Err(json!({"error": {"code": "invalid_manifest",
                "message": "the manifest is not valid", "errors": problems}}));
        }
    };
    Ok((dialect, source, manifest))
}

fn answer(op: &str, request: &Value, store: Option<Box<dyn StoreFactory>>) -> Value {
    let response = answer_unscrubbed(op, request, store);
    scrub_refusal(request, response)
}

/// D-262 for the service: a refusal (a validation problem quotes the document, which may
/// hold a value equal to one of the scenario's secrets) goes through the scenario's
/// secrets in every encoding the sink knows, as `run`'s errors do on the command line. A
/// report is the run's own, already scrubbed by its sink.
fn scrub_refusal(request: &Value, mut response: Value) -> Value {
    let secrets = request
        .get("scenario")
        .and_then(|s| s.get("secrets"))
        .and_then(Value::as_object);
    if let (Some(secrets), Some(error)) = (secrets, response.get_mut("error"))
        && !secrets.is_empty()
    {
        let sink = crate::redact::Scrubber::new(secrets.values());
        scrub_strings(&sink, error);
    }
    response
}

/// Every string inside `v` through `sink`'s prose scrubbing — but a problem's `code` and
/// `clause`, which are the protocol's words, and every key.
fn scrub_strings(sink: &crate::redact::Scrubber, v: &mut Value) {
    match v {
        Value::String(s) => *s = sink.prose(s),
        Value::Array(items) => items.iter_mut().for_each(|x| scrub_strings(sink, x)),
        Value::Object(m) => m
            .iter_mut()
            .filter(|(k, _)| !matches!(k.as_str(), "code" | "clause"))
            .for_each(|(_, x)| scrub_strings(sink, x)),
        _ => {}
    }
}

fn answer_unscrubbed(op: &str, request: &Value, store: Option<Box<dyn StoreFactory>>) -> Value {
    if op == "run" {
        let on_sim = |plain: &Value| -> Result<Value, std::convert::Infallible> {
            Ok(match store {
                Some(store) => crate::service::sim::run_on_host(plain, store),
                None => crate::service::sim::run(plain),
            })
        };
        return match run_with(request, on_sim) {
            Ok(v) => v,
            Err(never) => match never {},
        };
    }
    if op == "validate" {
        return validate(request);
    }
    match imported(request) {
        Ok(i) => ok(i.to_json()),
        Err(response) => response,
    }
}

/// The `validate` op: the document alone, or with `"runnable": true` the import's judgement.
fn validate(request: &Value) -> Value {
    let check = match request.get("runnable") {
        None | Some(Value::Bool(false)) => crate::dialect::Check::Document,
        Some(Value::Bool(true)) => crate::dialect::Check::Runnable,
        Some(_) => return bad_request("\"runnable\" must be a boolean"),
    };
    let (dialect, source, manifest) = match parts(request) {
        Ok(p) => p,
        Err(response) => return response,
    };
    match crate::dialect::validate(dialect, source.as_bytes(), manifest.as_ref(), check) {
        Ok(_) => ok(Value::Bool(true)),
        Err(p) => invalid(&p),
    }
}

fn invalid(problems: &[Problem]) -> Value {
    json!({"error": {
        "code": "invalid_workflow",
        "message": format!("the document is not valid: {} problem(s)", problems.len()),
        "errors": problems.iter().map(Problem::to_json).collect::<Vec<_>>(),
    }})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// D-262 in the service: a dialect refusal never quotes a scenario secret, raw or
    /// encoded.
    #[test]
    fn a_dialect_refusal_never_quotes_a_secret() {
        let secret = "hunter2-secret-7f3a";
        let b64 = "aHVudGVyMi1zZWNyZXQtN2YzYQ";
        for (dialect, source) in [
            (
                "yaml",
                format!(
                    "steps:\n  - a:\n      x.a: {{}}\n  - {secret}:\n      x.b: {{}}\n  - {secret}:\n      x.c: {{}}\n"
                ),
            ),
            (
                "yaml",
                format!("steps:\n  - a:\n      x.a: {{ k: \"{{{{ {b64}.x }}}}\" }}\n"),
            ),
            (
                "woml",
                format!(
                    "<workflow><steps><step id=\"{secret}\"/><step id=\"{secret}\"/></steps></workflow>"
                ),
            ),
        ] {
            for op in ["run", "validate"] {
                let request = json!({"op": op, "dialect": dialect, "source": source,
                    "scenario": {"secrets": {"K": secret}}});
                let answer = crate::service::handle(&request).to_string();
                assert!(
                    answer.contains("\"error\""),
                    "{op} {dialect} is refused: {answer}"
                );
                assert!(
                    !answer.contains(secret) && !answer.contains(b64),
                    "{op} {dialect} quotes the secret: {answer}"
                );
            }
        }
    }
}
