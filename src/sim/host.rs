//! `SimHost`: the simulator's `WorkflowContext` — the reference host.
//!
//! Owns: routing each host-contract call to the world (clock, faults, trace), the scripted
//! actions and the store. Invariant: every call is recorded in the trace, redacted and
//! scrubbed (SEC-1); nothing here reads a real clock.

use std::cell::RefCell;

use serde_json::{Map, Value, json};

use super::SimOptions;
use super::exec::Sleep;
use super::scenario::{OutcomeKind, Scenario};
use super::store::{MemoryStore, Store};
use super::world::World;
use crate::engine::{Engine, RunSeed};
use crate::host::{
    HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, RunTrigger, ScheduleDirective,
    WorkflowContext,
};
use crate::model::{Phase, RunState, RunStatePatch, RunStatus, StepError};
use crate::redact::Scrubber;
use crate::validate::{ValidateOptions, validate_workflow};

/// CALL-2: the composition depth bound (node-types.md 2026-08-20, default 16): the
/// engine's own bound, enforced again here for the run-level reroute.
pub use crate::engine::CALL_DEPTH_MAX;

/// Whether this host serves the top-level run or a composed child run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Faults, cancellation and the report apply.
    Top,
    /// A reroute / call target: runs to completion in memory; trace only.
    Child,
}

pub(crate) struct SimHost<'a> {
    pub(crate) world: &'a RefCell<World>,
    pub(crate) scenario: &'a Scenario,
    pub(crate) store: &'a RefCell<Box<dyn Store>>,
    /// The simulator's own fold of acknowledged checkpoints (RUN-3 check), if verifying.
    pub(crate) acked: &'a RefCell<Option<super::Acked>>,
    pub(crate) scrub: &'a Scrubber,
    pub(crate) options: &'a SimOptions,
    pub(crate) info: RunInfo,
    pub(crate) role: Role,
}

impl SimHost<'_> {
    fn scrubbed(&self, mut v: Value) -> Value {
        self.scrub.value(&mut v);
        v
    }

    fn event(&self, event: &str, mut fields: Value) {
        if self.role == Role::Child
            && let Value::Object(m) = &mut fields
        {
            m.insert("runId".into(), json!(self.info.id));
        }
        self.world.borrow_mut().event(event, fields);
    }
}

impl WorkflowContext for SimHost<'_> {
    fn run(&self) -> &RunInfo {
        &self.info
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError> {
        // Borrowed, not copied: a script can hold many outcomes.
        let unscripted;
        let script = match self.scenario.actions.get(&req.step_id) {
            Some(s) => s,
            None => {
                unscripted = super::scenario::ActionScript::default();
                &unscripted
            }
        };
        // `maxAttempts` has no upper bound (MODEL-3), so a scenario that always fails a
        // retryable action must still end (SEC-2): the invocation budget.
        let over_budget = {
            let mut w = self.world.borrow_mut();
            let max = w.limits.invocations;
            let over = w.snap.total_invocations >= max || w.halt.is_some();
            if over {
                w.exceed(format!("the run's invocation limit of {max} ran out"));
            }
            over
        };
        if over_budget {
            return std::future::pending().await;
        }
        let (outcome, at_ms, crash) = {
            let mut w = self.world.borrow_mut();
            w.snap.total_invocations += 1;
            let count = w
                .snap
                .invocation_counts
                .entry(req.step_id.clone())
                .or_insert(0);
            let index = usize::try_from(*count).unwrap_or(usize::MAX);
            *count += 1;
            if w.track_counts {
                w.counts_changed.push(req.step_id.clone());
            }
            let outcome = script
                .outcomes
                .get(index.min(script.outcomes.len().saturating_sub(1)))
                .cloned()
                .unwrap_or_else(super::scenario::Outcome::echo);
            let at_ms = w.now_ms();
            let crash = if self.role == Role::Top {
                self.scenario
                    .faults
                    .crash_in_invoke
                    .iter()
                    .enumerate()
                    .find(|(i, f)| {
                        f.step == req.step_id
                            && f.attempt == req.attempt
                            && !w.snap.fired_invoke_faults.contains(i)
                    })
                    .map(|(i, _)| i)
            } else {
                None
            };
            (outcome, at_ms, crash)
        };
        let params = Value::Object(req.redacted_params());
        let entry = self.scrubbed(json!({
            "stepId": req.step_id, "app": req.app, "action": req.action,
            "connection": req.connection, "attempt": req.attempt, "params": params,
            "atMs": at_ms,
        }));
        // META-1: the host reports through onExecuted only, before the call settles.
        let reports = outcome.meta.clone().unwrap_or_else(|| script.meta.clone());
        for r in &reports {
            req.on_executed.report(r.clone());
        }
        let result: Result<Value, InvokeError> = if req.app == DOCUMENT_APP {
            self.document(&req)
        } else {
            match &outcome.kind {
                OutcomeKind::Output(v) => Ok(v.clone()),
                OutcomeKind::Echo => Ok(Value::Object(req.params.clone())),
                OutcomeKind::Error(e) => Err(e.clone()),
            }
        };
        if outcome.latency_ms > 0 {
            // The invocation takes virtual time; other strands run meanwhile. If the engine
            // cancels it (a race loser, a fail-fast foreach), the trace says so.
            let mut guard = CancelGuard {
                host: self,
                step_id: req.step_id.clone(),
                attempt: req.attempt,
                armed: true,
            };
            Sleep::until(self.world, at_ms.saturating_add(outcome.latency_ms)).await;
            guard.armed = false;
        }
        {
            let mut w = self.world.borrow_mut();
            if self.role == Role::Top {
                w.snap.invocations.push(entry.clone());
            }
        }
        let mut fields = entry;
        if let Value::Object(m) = &mut fields {
            m.remove("atMs");
            m.insert("latencyMs".into(), json!(outcome.latency_ms));
            // SEC-1: an invocation given a secret-derived param has a secret-derived result
            // (the engine's rule, docs/decisions.md D-41): recorded redacted wholly.
            let tainted = !req.secret_paths.is_empty();
            match &result {
                Ok(_) if tainted => {
                    m.insert("output".into(), json!(crate::expr::REDACTED));
                }
                Ok(v) => {
                    m.insert("output".into(), self.scrubbed(v.clone()));
                }
                Err(e) => {
                    let mut e = e.clone();
                    if tainted {
                        e.message = crate::expr::REDACTED.to_owned();
                    }
                    self.scrub.error(&mut e);
                    m.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                }
            }
            if !reports.is_empty() {
                m.insert("metaReports".into(), self.scrubbed(Value::Array(reports)));
            }
        }
        self.event("invoke", fields);
        if let Some(i) = crash {
            {
                let mut w = self.world.borrow_mut();
                w.snap.fired_invoke_faults.insert(i);
                w.snap.crashes += 1;
                w.crash_pending = true;
            }
            self.event(
                "crash",
                json!({"fault": "crashInInvoke", "stepId": req.step_id, "attempt": req.attempt,
                       "note": "the action ran; its result was never checkpointed"}),
            );
            // The process is gone: this call never returns; the simulator drops the run.
            return std::future::pending().await;
        }
        result
    }

    fn action_idempotent(&self, step_id: &str, _app: &str, _action: &str) -> bool {
        self.scenario
            .actions
            .get(step_id)
            .is_some_and(|a| a.idempotent)
    }

    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        let message = self
            .scrub
            .text(message)
            .unwrap_or_else(|| message.to_owned());
        let mut fields = json!({"level": level, "message": message});
        if let (Some(d), Value::Object(m)) = (data, &mut fields) {
            m.insert("data".into(), self.scrubbed(d.clone()));
        }
        self.event("log", fields);
    }

    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError> {
        // SEC-1: nothing secret reaches a store (a copy only when there is a secret to scrub).
        let patch: std::borrow::Cow<'_, RunStatePatch> = if self.scrub.is_empty() {
            std::borrow::Cow::Borrowed(patch)
        } else {
            let mut p = patch.clone();
            self.scrub.patch(&mut p);
            std::borrow::Cow::Owned(p)
        };
        let patch = patch.as_ref();
        let bytes = serialized_len(patch);
        let over = {
            let mut w = self.world.borrow_mut();
            let max = w.limits.recorded_bytes;
            w.snap.recorded_bytes = w.snap.recorded_bytes.saturating_add(bytes);
            if w.snap.recorded_bytes > max {
                w.exceed(format!(
                    "the run's checkpoints passed their limit of {max} recorded bytes"
                ));
            }
            w.halt.is_some()
        };
        if over {
            // Nothing more is recorded; the simulator stops the run.
            return std::future::pending().await;
        }
        let n = {
            let mut w = self.world.borrow_mut();
            if self.role == Role::Top {
                w.snap.checkpoints += 1;
                w.snap.checkpoint_bytes += bytes;
            }
            w.snap.checkpoints
        };
        // The store reads the live world (no copy: a copy per checkpoint would make a
        // long run quadratic) and, for a top-level run, which invocation counts changed.
        let stored = {
            let mut store = self.store.borrow_mut();
            if !store.keeps_world() {
                store.checkpoint(patch, &super::world::WorldSnapshot::default())
            } else if self.role == Role::Top {
                let mut w = self.world.borrow_mut();
                let changed = std::mem::take(&mut w.counts_changed);
                let r = store.checkpoint_changes(patch, &w.snap, &changed);
                if r.is_err() {
                    // Not durable: the next checkpoint must still carry these.
                    let mut changed = changed;
                    changed.append(&mut w.counts_changed);
                    w.counts_changed = changed;
                }
                r
            } else {
                store.checkpoint(patch, &self.world.borrow().snap)
            }
        };
        if let Err(e) = stored {
            if self.role == Role::Top {
                let mut w = self.world.borrow_mut();
                w.snap.checkpoints -= 1;
                w.snap.checkpoint_bytes -= bytes;
            }
            self.event("checkpoint_failed", json!({"message": e.0}));
            return Err(HostError::Store(e.0));
        }
        if let Some(acked) = self.acked.borrow_mut().as_mut() {
            acked.checkpoint(patch, n);
        }
        let tracing = {
            let w = self.world.borrow();
            w.keep_trace || w.sink.is_some()
        };
        if tracing {
            let fields = json!({"n": n, "bytes": bytes,
                                "patch": serde_json::to_value(patch).unwrap_or_default()});
            self.event("checkpoint", fields);
        }
        if self.role == Role::Child {
            return Ok(());
        }
        if self.options.abort_after_checkpoint == Some(n) {
            // Testing hook (`W6W_SIM_ABORT_AFTER_CHECKPOINT`): a real process death right
            // after checkpoint n is durable. `w6w-sim resume` continues the run.
            self.event("process_abort", json!({"afterCheckpoint": n}));
            std::process::abort();
        }
        if self.scenario.cancel_after_checkpoint == Some(n) {
            self.world.borrow_mut().snap.aborted = true;
            self.event("cancel", json!({"afterCheckpoint": n}));
        }
        if self.scenario.faults.crash_after_checkpoint.contains(&n) {
            self.world.borrow_mut().snap.crashes += 1;
            self.event(
                "crash",
                json!({"fault": "crashAfterCheckpoint", "afterCheckpoint": n}),
            );
            return Err(HostError::Crashed);
        }
        Ok(())
    }

    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        let loaded = self
            .store
            .borrow()
            .load(run_id)
            .map_err(|e| HostError::Store(e.0))?;
        self.event("load", json!({"found": loaded.is_some()}));
        Ok(loaded.map(|s| s.state))
    }

    fn now_ms(&self) -> u64 {
        self.world.borrow().now_ms()
    }

    async fn sleep(&self, ms: u64) {
        let deadline = self.now_ms().saturating_add(ms);
        Sleep::until(self.world, deadline).await;
    }

    async fn wait_before_retry(&self, step_id: Option<&str>, attempt: u32, ms: u64) {
        let entry = json!({"stepId": step_id, "attempt": attempt, "ms": ms});
        self.event("wait", entry.clone());
        let deadline = {
            let mut w = self.world.borrow_mut();
            if self.role == Role::Top {
                w.snap.waits.push(entry);
            }
            w.now_ms().saturating_add(ms)
        };
        // Backoff waits take virtual time; other strands run meanwhile.
        Sleep::until(self.world, deadline).await;
    }

    fn supports_schedule(&self) -> bool {
        true
    }

    async fn schedule(&self, directive: ScheduleDirective) -> Result<(), HostError> {
        let (token, at_ms) = match &directive {
            ScheduleDirective::After {
                after_ms,
                resume_token,
            } => (
                resume_token.clone(),
                self.now_ms().saturating_add(*after_ms),
            ),
            ScheduleDirective::At { at, resume_token } => (
                resume_token.clone(),
                crate::plan::parse_timestamp_ms(at)
                    .ok()
                    .and_then(|ms| u64::try_from(ms).ok())
                    .unwrap_or(0),
            ),
        };
        // D-103: a candidate host keeps the schedule itself, durably, before it counts as
        // made; the suite fires it only after reading it back from a restarted host.
        if self.role == Role::Top && self.store.borrow().keeps_schedules() {
            let kept = crate::host::ScheduleEntry {
                run_id: self.info.id.clone(),
                resume_token: token.clone(),
                fire_at_ms: at_ms,
            };
            if let Err(e) = self.store.borrow_mut().schedule(&kept) {
                self.event("schedule_failed", json!({"message": self.scrub.line(&e.0)}));
                return Err(if e.0.starts_with("store_unsupported") {
                    HostError::Unsupported("schedule")
                } else {
                    HostError::Store(e.0)
                });
            }
        }
        let entry = self.scrubbed(json!({"token": token, "fireAtMs": at_ms,
                           "directive": serde_json::to_value(&directive).unwrap_or_default()}));
        self.event("schedule", entry.clone());
        if self.role == Role::Top {
            let mut w = self.world.borrow_mut();
            w.snap.schedules.push(entry);
            // The fire time itself, which the recorded entry may show redacted (SEC-1).
            w.snap.fire_times.insert(token, at_ms);
        }
        Ok(())
    }

    fn aborted(&self) -> bool {
        self.role == Role::Top && self.world.borrow().snap.aborted
    }

    fn secret_derived(&self, value: &Value) {
        self.scrub.add_derived(value);
    }

    fn secrets(&self) -> Map<String, Value> {
        self.scenario.secrets.clone()
    }

    fn documents(&self) -> Value {
        Value::Object(self.scenario.documents.clone())
    }

    async fn invoke_callable(
        &self,
        target: &Value,
        input: Value,
        wait: bool,
        depth: u32,
    ) -> Result<Value, InvokeError> {
        let at_ms = self.now_ms();
        let result = self.dispatch(target, input.clone(), depth).await;
        let mut entry = json!({"target": target, "input": input, "wait": wait,
                               "depth": depth, "atMs": at_ms});
        if let Value::Object(m) = &mut entry {
            match &result {
                Ok((run_id, out)) => {
                    m.insert("runId".into(), json!(run_id));
                    m.insert("status".into(), json!("succeeded"));
                    m.insert("output".into(), self.scrubbed(out.clone()));
                }
                Err((run_id, e)) => {
                    let mut e = e.clone();
                    self.scrub.error(&mut e);
                    if let Some(id) = run_id {
                        m.insert("runId".into(), json!(id));
                    }
                    m.insert("status".into(), json!("failed"));
                    m.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                }
            }
        }
        let entry = self.scrubbed(entry);
        self.event("call", entry.clone());
        if self.role == Role::Top {
            self.world.borrow_mut().snap.calls.push(entry);
        }
        match result {
            Ok((run_id, out)) => Ok(if wait { out } else { json!({"runId": run_id}) }),
            // CALL-1: `wait: false` hands back the handle of a run that was enqueued; its
            // later failure is the callee's, visible in the trace, not the caller's.
            Err((Some(run_id), _)) if !wait => Ok(json!({"runId": run_id})),
            Err((_, e)) => Err(e),
        }
    }
}

/// The first-party document app (CALL-4), served by the host from the scenario.
pub(crate) const DOCUMENT_APP: &str = "@w6w/document";

/// Traces an invocation the engine dropped before it settled.
struct CancelGuard<'h, 'a> {
    host: &'h SimHost<'a>,
    step_id: String,
    attempt: u32,
    armed: bool,
}

impl Drop for CancelGuard<'_, '_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let quiet = self
            .host
            .world
            .try_borrow()
            .map_or(true, |w| w.crash_pending || w.halt.is_some());
        if !quiet {
            self.host.event(
                "invoke_canceled",
                json!({"stepId": self.step_id, "attempt": self.attempt,
                       "note": "canceled by the engine before the action settled"}),
            );
        }
    }
}

impl SimHost<'_> {
    /// CALL-4: `@w6w/document` `get {key}` → `{key, format, content}` from the scenario's
    /// `documents`. A string value is a `text` document (content as is); any other value
    /// is a `json` document whose content is that value, already parsed.
    fn document(&self, req: &InvokeRequest) -> Result<Value, InvokeError> {
        let refuse = |code: &str, message: String, phase: Phase| {
            let mut e = StepError::new(code, message, phase);
            e.retryable = false;
            Err(e)
        };
        if req.action != "get" {
            return refuse(
                "unknown_action",
                "@w6w/document is read-only: \"get\" is its only action".to_owned(),
                Phase::Resolution,
            );
        }
        let Some(key) = req.params.get("key").and_then(Value::as_str) else {
            return refuse(
                "param_invalid",
                "@w6w/document get needs a string key".into(),
                Phase::Resolution,
            );
        };
        match self.scenario.documents.get(key) {
            None => refuse(
                "document_not_found",
                // The key is a ref (it names a document); a secret-derived key is redacted
                // with the whole message (the step is secret-derived), a secret one by the sink.
                format!("no document with key {key:?}"),
                Phase::Execute,
            ),
            Some(Value::String(text)) => Ok(json!({"key": key, "format": "text", "content": text})),
            Some(v) => Ok(json!({"key": key, "format": "json", "content": v})),
        }
    }

    /// CALL-1/CALL-2 through the one seam: run a workflow target from the scenario's
    /// `workflows` map to a terminal state.
    async fn dispatch(
        &self,
        target: &Value,
        input: Value,
        depth: u32,
    ) -> Result<(String, Value), (Option<String>, InvokeError)> {
        self.dispatch_inner(target, input, depth).await
    }

    async fn dispatch_inner(
        &self,
        target: &Value,
        input: Value,
        depth: u32,
    ) -> Result<(String, Value), (Option<String>, InvokeError)> {
        let pre = |e: StepError| Err((None, e));
        if depth > CALL_DEPTH_MAX {
            return pre(StepError::new(
                "call_depth_exceeded",
                format!("call depth {depth} exceeds the bound of {CALL_DEPTH_MAX}"),
                Phase::Resolution,
            ));
        }
        let kind = target.get("kind").and_then(Value::as_str);
        let Some(id) = target
            .get("workflow")
            .and_then(Value::as_str)
            .filter(|_| kind == Some("workflow"))
        else {
            return pre(StepError::new(
                "unsupported_callable",
                format!(
                    "the simulator dispatches {{\"kind\": \"workflow\", \"workflow\": ID}} targets only, got a target of type {} (param \"target\")",
                    crate::expr::json_type_name(target)
                ),
                Phase::Resolution,
            ));
        };
        let Some(doc) = self.scenario.workflows.get(id) else {
            return pre(StepError::new(
                "unknown_workflow",
                "the target's workflow id (param \"target\") names no workflow in the scenario's workflows".to_owned(),
                Phase::Resolution,
            ));
        };
        let workflow = validate_workflow(doc, ValidateOptions { runnable: true })
            .map_err(|errs| {
                StepError::new(
                    "invalid_workflow",
                    format!(
                        "workflow {id:?} is invalid: {}",
                        serde_json::to_string(&errs).unwrap_or_default()
                    ),
                    Phase::Resolution,
                )
            })
            .map_err(|e| (None, e))?;
        let engine = Engine::new(&workflow).map_err(|e| {
            (
                None,
                StepError::new(e.code(), e.to_string(), Phase::Resolution),
            )
        })?;
        let variables = match input {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return pre(StepError::new(
                    "param_invalid",
                    format!(
                        "a workflow target's input (param \"input\") must be an object, got a {}",
                        crate::expr::json_type_name(&other)
                    ),
                    Phase::Resolution,
                ));
            }
        };
        let n = self.world.borrow().snap.calls.len();
        let run_id = format!("{}.call{}", self.info.id, n + 1);
        let child_store: RefCell<Box<dyn Store>> = RefCell::new(Box::new(MemoryStore::default()));
        let child_acked = RefCell::new(None);
        let child = SimHost {
            world: self.world,
            scenario: self.scenario,
            store: &child_store,
            acked: &child_acked,
            scrub: self.scrub,
            options: self.options,
            info: RunInfo {
                id: run_id.clone(),
                workflow_id: workflow.id.clone(),
                trigger: RunTrigger::Manual,
                attempt: 1,
            },
            role: Role::Child,
        };
        let seed = RunSeed {
            run_id: run_id.clone(),
            trigger: json!({"type": "manual"}),
            variables,
            call_depth: depth,
        };
        // Boxed: a child run may itself reroute, so this future is recursive.
        let fut: std::pin::Pin<Box<dyn std::future::Future<Output = _> + '_>> =
            Box::pin(engine.run(seed, &child));
        match fut.await {
            Ok(r) if r.status == RunStatus::Succeeded => {
                Ok((run_id, r.output.unwrap_or(Value::Null)))
            }
            Ok(r) => {
                let mut e = r.error.unwrap_or_else(|| {
                    StepError::new(
                        "call_failed",
                        format!("run {run_id} ended {}", r.status.as_str()),
                        Phase::Execute,
                    )
                });
                // Wrap once: a message that already names a failed child run (a nested
                // call chain) passes through, so it names the deepest run and the root
                // cause instead of growing by one prefix per hop.
                if !is_wrapped_child_failure(&e.message) {
                    e.message = format!("run {run_id} of workflow {id:?} failed: {}", e.message);
                }
                Err((Some(run_id), e))
            }
            Err(e) => Err((
                Some(run_id),
                StepError::new(e.code(), e.to_string(), Phase::Resolution),
            )),
        }
    }
}

/// Whether `message` is already a child-run failure written by `invoke_callable`.
fn is_wrapped_child_failure(message: &str) -> bool {
    message.starts_with("run ")
        && message.contains(" of workflow ")
        && message.contains(" failed: ")
}

/// The length of `patch`'s JSON, counted without building it.
fn serialized_len(patch: &RunStatePatch) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, patch) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}
