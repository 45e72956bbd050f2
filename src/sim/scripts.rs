//! Script steps on the simulated host (issue 40): a WOML `<script>` step (or a YAML `run`
//! step in JavaScript) whose outcome the scenario does not script by id runs its body in
//! [`crate::script`], and the scenario is its outside world.
//!
//! Owns: which steps are script steps (their body under the step's `x-woml` / `x-yaml`
//! extension, the `<config>` timeout under the workflow's `x-woml-config.timeoutMs`), the
//! bindings each attempt gets (`attempt.idempotencyKey` is `<runId>:<stepId>`, stable
//! across attempts and crash-resume, as the report's WOML-15 binding says), the attempt's
//! seed (the scenario's seed, the step and the attempt), answering
//! `services`/`fetch` calls from the scenario's `scripts.calls` (per call name, `METHOD
//! URL` or `service.method`, in that order; outcomes consumed in order and counted in the
//! world, so a crash-resume takes the next one), and what a script leaves in the report
//! (the invocation's `script.calls`) and the trace (`scriptCall`, `console`).
//! Invariant: everything a script's run writes goes through the redaction sink, and a
//! script that read a secret has its call requests and console lines recorded as
//! `[redacted]` wholly (SEC-1, the D-41 rule); a scenario that scripts the step by id, a
//! child run, `--no-scripts` and `"scripts": {"run": false}` leave today's behaviour.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::host::SimHost;
use super::scenario::{Outcome, OutcomeKind};
use crate::host::InvokeRequest;
use crate::model::{Phase, StepError, Workflow};
use crate::script::{self, Answer, Attempt, Call, Ended, Style};

/// One script step: its body and what bounds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScriptStep {
    body: String,
    style: Style,
    max_attempts: u64,
}

/// The script steps of a workflow, by step id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ScriptBook {
    steps: HashMap<String, ScriptStep>,
    timeout_ms: Option<u64>,
}

/// The languages a YAML `run: <language>` with `code` runs in (any other is carried).
const JAVASCRIPT: [&str; 4] = ["javascript", "js", "typescript", "ts"];

impl ScriptBook {
    /// The script steps of `workflow`'s top-level steps (a WOML document has no other).
    pub(crate) fn of(workflow: &Workflow) -> ScriptBook {
        let config = workflow.extra.get("x-woml-config");
        let steps = workflow.steps.iter().filter_map(|step| {
            let uses = step.uses.as_ref()?;
            let ext = step.extra.as_map()?;
            let max_attempts = step.retry_policy().map_or(1, |p| p.max_attempts());
            let (app, action) = (uses.app.as_deref()?, uses.action.as_deref()?);
            let found = script_of(app, action, ext)?;
            Some((step.id.to_string(), found, max_attempts))
        });
        ScriptBook::from_parts(config, steps)
    }

    /// [`ScriptBook::of`] for a workflow document not yet typed (the context protocol's).
    pub(crate) fn of_json(workflow: &Value) -> ScriptBook {
        let config = workflow.get("x-woml-config");
        let steps = workflow
            .get("steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|step| {
                let id = step.get("id")?.as_str()?;
                let uses = step.get("uses")?;
                let text = |k: &str| uses.get(k).and_then(Value::as_str);
                let found = script_of(text("app")?, text("action")?, step.as_object()?)?;
                let max_attempts = step
                    .pointer("/retry/maxAttempts")
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                Some((id.to_owned(), found, max_attempts))
            });
        ScriptBook::from_parts(config, steps)
    }

    fn from_parts(
        config: Option<&Value>,
        steps: impl Iterator<Item = (String, (String, Style), u64)>,
    ) -> ScriptBook {
        let timeout_ms = config
            .and_then(|c| c.get("timeoutMs"))
            .and_then(Value::as_u64);
        let steps = steps
            .map(|(id, (body, style), max_attempts)| {
                let step = ScriptStep {
                    body,
                    style,
                    max_attempts,
                };
                (id, step)
            })
            .collect();
        ScriptBook { steps, timeout_ms }
    }

    fn get(&self, step_id: &str) -> Option<&ScriptStep> {
        self.steps.get(step_id)
    }
}

/// The body of a step naming `app`/`action` with extension members `ext`, if it is a
/// script step.
fn script_of(app: &str, action: &str, ext: &Map<String, Value>) -> Option<(String, Style)> {
    match (app, action) {
        ("woml", "script") => {
            let body = ext.get("x-woml")?.get("script")?.as_str()?;
            Some((body.to_owned(), Style::Woml))
        }
        ("yaml", "run") => Some((yaml_body(ext.get("x-yaml")?)?, Style::Yaml)),
        _ => None,
    }
}

/// A YAML `run` body: `run: <code>`, or `run: <language>` with `code: <code>` when the
/// language is JavaScript.
fn yaml_body(x: &Value) -> Option<String> {
    // `run: {code: <code>}` (the body as a map) is the code itself.
    if let Some(code) = x.get("run").and_then(|r| r.get("code")) {
        return code.as_str().map(str::to_owned);
    }
    let run = x.get("run")?.as_str()?;
    match x.get("code") {
        None => Some(run.to_owned()),
        Some(code) => {
            let lang = run.trim().to_ascii_lowercase();
            JAVASCRIPT
                .contains(&lang.as_str())
                .then(|| code.as_str().map(str::to_owned))
                .flatten()
        }
    }
}

/// What running a script step's attempt gave the host.
pub(crate) struct ScriptRun {
    /// The invocation's outcome, as if scripted (its latency is the script's virtual time).
    pub(crate) outcome: Outcome,
    /// The report's `script` member of the invocation: `{"calls": [...]}`.
    pub(crate) record: Value,
}

impl SimHost<'_> {
    /// Run `req`'s script if it is a script step this host runs (see the module doc);
    /// `Err` is a run budget that ran out (the caller stops the run).
    pub(crate) fn run_script(
        &self,
        req: &InvokeRequest,
        at_ms: u64,
    ) -> Option<Result<ScriptRun, String>> {
        if self.role != super::host::Role::Top
            || !self.options.run_scripts
            || !self.scenario.scripts.run
            || self
                .scenario
                .actions
                .get(&req.step_id)
                .is_some_and(|a| a.scripted)
        {
            return None;
        }
        let step = self.scripts.get(&req.step_id)?;
        let tainted = !req.secret_paths.is_empty();
        let key = format!("{}:{}", self.info.id, req.step_id);
        let attempt = json!({
            "number": req.attempt,
            "maxAttempts": step.max_attempts,
            "idempotencyKey": key,
        });
        let bindings = match step.style {
            Style::Woml => json!({
                "context": req.params.get("context").cloned().unwrap_or_else(|| json!({})),
                "attempt": attempt,
                "secrets": req.params.get("secrets").cloned().unwrap_or_else(|| json!({})),
            }),
            Style::Yaml => json!({
                "message": req.params.get("message").cloned().unwrap_or(Value::Null),
                "steps": req.params.get("steps").cloned().unwrap_or_else(|| json!({})),
                "attempt": attempt,
            }),
        };
        let job = Attempt {
            body: &step.body,
            style: step.style,
            bindings: &bindings,
            start_ms: at_ms,
            seed: self.script_seed(&req.step_id, req.attempt),
            timeout_ms: self.scripts.timeout_ms,
        };
        let mut world = ScriptWorld {
            host: self,
            step_id: &req.step_id,
            attempt: req.attempt,
            tainted,
            calls: Vec::new(),
        };
        let done = script::run(&job, &mut world);
        let kind = match done.ended {
            Ended::Returned(v) => OutcomeKind::Output(v),
            Ended::Failed(f) => {
                let mut e = StepError::new(f.kind.code(), f.message, Phase::Execute);
                e.retryable = f.kind == script::FailureKind::Threw;
                OutcomeKind::Error(e)
            }
            Ended::OverBudget(message) => return Some(Err(message)),
        };
        Some(Ok(ScriptRun {
            outcome: Outcome {
                kind,
                latency_ms: done.elapsed_ms,
                meta: None,
            },
            record: json!({"calls": world.calls}),
        }))
    }

    /// `Math.random`'s state for one attempt: SHA-256 of the scenario's seed, the step and
    /// the attempt — not the run id, which a conformance session salts per candidate
    /// (D-215), and never the CLI's entropy: a report must reproduce.
    fn script_seed(&self, step_id: &str, attempt: u32) -> [u32; 4] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"w6w-sim script seed v1");
        h.update(self.scenario.seed.to_be_bytes());
        h.update((step_id.len() as u64).to_be_bytes());
        h.update(step_id.as_bytes());
        h.update(attempt.to_be_bytes());
        let d = h.finalize();
        let word = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        [word(0), word(4), word(8), word(12)]
    }
}

/// The script's outside world for one attempt: the scenario answers, the trace records.
struct ScriptWorld<'h, 'a> {
    host: &'h SimHost<'a>,
    step_id: &'h str,
    attempt: u32,
    tainted: bool,
    calls: Vec<Value>,
}

impl ScriptWorld<'_, '_> {
    /// A value the script made, as the report may hold it: `[redacted]` when the script
    /// read a secret, else through the redaction sink.
    fn shown(&self, v: Value) -> Value {
        if self.tainted {
            json!(crate::expr::REDACTED)
        } else {
            let mut v = v;
            self.host.scrub.value(&mut v);
            v
        }
    }

    fn unscripted(&self, call: &Call) -> String {
        let callee = call.callee();
        if self.tainted {
            return format!(
                "unscripted call: {callee} (the script read a secret, so its request is not \
                 shown); add it to the scenario's scripts.calls"
            );
        }
        let keys: Vec<String> = call.keys().iter().map(|k| format!("{k:?}")).collect();
        let message = format!(
            "unscripted call: {callee}; the scenario's scripts.calls has no entry for {}",
            keys.join(" or ")
        );
        self.host.scrub.text(&message).unwrap_or(message)
    }
}

impl script::Host for ScriptWorld<'_, '_> {
    fn call(&mut self, call: &Call) -> Answer {
        let calls = &self.host.scenario.scripts.calls;
        let Some((key, script)) = call
            .keys()
            .into_iter()
            .find_map(|k| calls.get(&k).map(|s| (k, s)))
        else {
            let message = self.unscripted(call);
            let record = json!({
                "call": call.callee(),
                "atMs": call.at_ms,
                "request": self.shown(call.request.clone()),
                "unscripted": true,
            });
            self.record(record);
            return Answer::Unscripted(message);
        };
        let index = {
            let mut w = self.host.world.borrow_mut();
            let counter = format!("scriptCall:{key}");
            let count = w.snap.invocation_counts.entry(counter.clone()).or_insert(0);
            let index = usize::try_from(*count).unwrap_or(usize::MAX);
            *count += 1;
            if w.track_counts {
                w.counts_changed.push(counter);
            }
            index
        };
        let outcome = script
            .outcomes
            .get(index.min(script.outcomes.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(Outcome::echo);
        let latency_ms = outcome.latency_ms;
        let mut record = Map::new();
        record.insert("call".into(), json!(call.callee()));
        let mut key_shown = Value::String(key);
        self.host.scrub.value(&mut key_shown);
        record.insert("key".into(), key_shown);
        record.insert("atMs".into(), json!(call.at_ms));
        record.insert("latencyMs".into(), json!(latency_ms));
        record.insert("request".into(), self.shown(call.request.clone()));
        let answer = match outcome.kind {
            OutcomeKind::Output(output) => {
                record.insert("output".into(), self.host.scrubbed(output.clone()));
                Answer::Output { output, latency_ms }
            }
            OutcomeKind::Echo => {
                let output = call
                    .request
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| call.request.clone());
                record.insert("output".into(), self.shown(output.clone()));
                Answer::Output { output, latency_ms }
            }
            OutcomeKind::Error(e) => {
                let error = json!({"code": e.code, "message": e.message});
                record.insert("error".into(), self.host.scrubbed(error.clone()));
                Answer::Error { error, latency_ms }
            }
        };
        self.record(Value::Object(record));
        answer
    }

    fn console(&mut self, level: &str, text: &str, at_ms: u64) {
        if !self.host.tracing() {
            return;
        }
        let text = self.shown(json!(text));
        self.host.event(
            "console",
            json!({
                "stepId": self.step_id,
                "attempt": self.attempt,
                "level": level,
                "text": text,
                "lineAtMs": at_ms,
            }),
        );
    }
}

impl ScriptWorld<'_, '_> {
    fn record(&mut self, record: Value) {
        if self.host.tracing() {
            let mut fields = record.clone();
            if let Value::Object(m) = &mut fields {
                // The event's own `atMs` is when the attempt started; the call's is its own.
                if let Some(at) = m.remove("atMs") {
                    m.insert("callAtMs".into(), at);
                }
                m.insert("stepId".into(), json!(self.step_id));
                m.insert("attempt".into(), json!(self.attempt));
            }
            self.host.event("scriptCall", fields);
        }
        self.calls.push(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_bodies_are_javascript_only() {
        assert_eq!(
            yaml_body(&json!({"run": "return 1"})),
            Some("return 1".into())
        );
        assert_eq!(
            yaml_body(&json!({"run": "JavaScript", "code": "return 2"})),
            Some("return 2".into())
        );
        assert_eq!(
            yaml_body(&json!({"run": "python", "code": "return 1"})),
            None
        );
        assert_eq!(yaml_body(&json!({"run": {"x": 1}})), None);
        assert_eq!(
            yaml_body(&json!({"run": {"code": "return 3"}})),
            Some("return 3".into())
        );
    }
}
