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
use super::store::{Store, StoreError};
use super::world::{Invocation, JsonText, World};
use crate::engine::{Engine, EngineError, RunResult, RunSeed};
use crate::host::{
    CallableRequest, HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, RunTrigger,
    ScheduleDirective, WorkflowContext,
};
use crate::model::{Phase, RunState, RunStatePatch, RunStatus, StepError};
use crate::redact::Scrubber;
use crate::validate::{ValidateOptions, validate_workflow};

/// CALL-2: the composition depth bound (node-types.md 2026-08-20, default 16): the
/// engine's own bound, enforced again here for the run-level reroute.
pub(crate) use crate::engine::CALL_DEPTH_MAX;

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
    /// Copies taken at checkpoints for `sim::Simulation::crash_points` (none unless asked).
    pub(crate) forks: &'a RefCell<super::Forks>,
    pub(crate) scrub: &'a Scrubber,
    pub(crate) options: &'a SimOptions,
    pub(crate) info: RunInfo,
    pub(crate) role: Role,
    /// Issue 40: the workflow's script steps, run when the scenario does not script them.
    pub(crate) scripts: &'a super::scripts::ScriptBook,
}

/// The trace fields of a `crashAfterCheckpoint` fault firing after checkpoint `n`.
pub(crate) fn crash_after_checkpoint(n: u64) -> Value {
    json!({"fault": "crashAfterCheckpoint", "afterCheckpoint": n})
}

impl SimHost<'_> {
    /// `sim::Simulation::crash_points`: keep a copy of the world and the store as a crash right
    /// after top-level checkpoint `n` would leave them (asked for up to `forks.upto`).
    fn fork_at(&self, n: u64) {
        let mut forks = self.forks.borrow_mut();
        if n > forks.upto {
            return;
        }
        let world = self.world.borrow().fork_after_crash();
        let store = self.store.borrow().fork();
        if let (Some(world), Some(store)) = (world, store) {
            let restarts = forks.restarts;
            forks.taken.insert(
                n,
                super::Fork {
                    world,
                    store,
                    restarts,
                },
            );
        }
    }

    /// SEC-1 judged on what the engine under test wrote (D-207): `true` when `v` holds a
    /// secret, and then the run is stopped. Only the top-level run is the candidate's; a
    /// child run is the host's own engine.
    fn leaks(&self, what: &str, v: &Value) -> bool {
        if self.role != Role::Top {
            return false;
        }
        let judge = self.world.borrow().judge.clone();
        let Some(judge) = judge else {
            return false;
        };
        match judge.in_value(v, "", &|_| false) {
            None => false,
            Some(leak) => {
                self.world.borrow_mut().leak(leak.message(what));
                true
            }
        }
    }

    pub(super) fn scrubbed(&self, mut v: Value) -> Value {
        self.scrub.value(&mut v);
        v
    }

    pub(super) fn event(&self, event: &str, fields: Value) {
        let fields = self.tagged(fields);
        self.world.borrow_mut().event(event, fields);
    }

    /// Whether trace events are recorded at all (kept or streamed). A caller whose event
    /// fields cost copies builds them only when this holds.
    pub(super) fn tracing(&self) -> bool {
        self.world.borrow().tracing()
    }

    /// A child run's entries name their run (D-125); the top-level run's carry no `runId`.
    fn tagged(&self, mut fields: Value) -> Value {
        if self.role == Role::Child
            && let Value::Object(m) = &mut fields
        {
            m.insert("runId".into(), json!(self.info.id));
        }
        fields
    }
}

impl WorkflowContext for SimHost<'_> {
    fn run(&self) -> &RunInfo {
        &self.info
    }

    async fn invoke(&self, mut req: InvokeRequest) -> Result<Value, InvokeError> {
        // Borrowed, not copied: a script can hold many outcomes.
        let unscripted;
        let script = match self.scenario.actions.get(&req.step_id) {
            Some(s) => s,
            None => {
                unscripted = super::scenario::ActionScript::default();
                &unscripted
            }
        };
        if self.over_invocation_budget() {
            return std::future::pending().await;
        }
        let echo = super::scenario::Outcome::echo();
        let (outcome, at_ms, crash) = self.count_invocation(&req, script, &echo);
        // Issue 40: a script step the scenario does not script by id runs its body.
        let executed = match self.run_script(&req, at_ms) {
            None => None,
            Some(Ok(run)) => Some(run),
            Some(Err(message)) => {
                self.world.borrow_mut().exceed(message);
                return std::future::pending().await;
            }
        };
        let (outcome, script_record) = match &executed {
            Some(run) => (&run.outcome, Some(JsonText::new(&run.record))),
            None => (outcome, None),
        };
        let params = self.recorded_params(&req);
        // META-1: the host reports through onExecuted only, before the call settles.
        let reports = outcome.meta.clone().unwrap_or_else(|| script.meta.clone());
        for r in &reports {
            req.on_executed.report(r.clone());
        }
        // D-274: what the step was handed as secret-derived, to find in what it returns.
        let needles = (!req.secret_paths.is_empty())
            .then(|| crate::redact::taint::Needles::of_params(&req.params, &req.secret_paths));
        let result = self.invocation_result(&mut req, &outcome.kind);
        // Typed (D-186): the report's JSON object is built only when a report is. The
        // request's texts move into it; nothing reads them from the request after this.
        let attempt = req.attempt;
        let entry = self.invocation_entry(req, params, at_ms, script_record);
        self.take_latency(&entry, at_ms, outcome.latency_ms).await;
        // D-125: the report lists the invocations of every run of the tree.
        let tracing = self.tracing();
        let mut fields = if tracing {
            entry.clone().into_json()
        } else {
            Value::Null
        };
        let crash = crash.map(|i| (i, entry.step_id.clone()));
        self.world.borrow_mut().snap.invocations.push(entry);
        if let Value::Object(m) = &mut fields {
            m.remove("atMs");
            m.insert("latencyMs".into(), json!(outcome.latency_ms));
            let sensitive = script.sensitive_output;
            self.trace_result(m, &result, sensitive, needles.as_ref());
            if !reports.is_empty() {
                m.insert("metaReports".into(), self.scrubbed(Value::Array(reports)));
            }
            self.event("invoke", fields);
        }
        if let Some((i, step_id)) = crash {
            self.crash_in_invoke(i, &step_id, attempt).await;
        }
        result
    }

    fn action_idempotent(&self, step_id: &str, _app: &str, _action: &str) -> bool {
        self.scenario
            .actions
            .get(step_id)
            .is_some_and(|a| a.idempotent)
    }

    fn action_sensitive_output(&self, step_id: &str, _app: &str, _action: &str) -> bool {
        self.scenario
            .actions
            .get(step_id)
            .is_some_and(|a| a.sensitive_output)
    }

    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        if self.world.borrow().judge.is_some() {
            let line = json!({"level": level, "message": message, "data": data});
            if self.leaks("a log line", &line) {
                return;
            }
        }
        if !self.tracing() {
            return;
        }
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
        if self.world.borrow().judge.is_some()
            && self.leaks(
                "a checkpoint (RunStatePatch)",
                &serde_json::to_value(patch).unwrap_or_default(),
            )
        {
            // The simulator stops the run; nothing of this checkpoint is stored.
            return std::future::pending().await;
        }
        // SEC-1: nothing secret reaches a store (a copy only when there is a secret to scrub).
        let patch: std::borrow::Cow<'_, RunStatePatch> = if self.scrub.touches_patch(patch) {
            let mut p = patch.clone();
            self.scrub.patch(&mut p);
            std::borrow::Cow::Owned(p)
        } else {
            std::borrow::Cow::Borrowed(patch)
        };
        let patch = patch.as_ref();
        let bytes = serialized_len(patch);
        if self.over_recorded_bytes(bytes) {
            // Nothing more is recorded; the simulator stops the run.
            return std::future::pending().await;
        }
        // D-121: one numbering for every checkpoint of the run tree, in the order they
        // are made, counted across restarts (what `crashAfterCheckpoint` names).
        let n = {
            let mut w = self.world.borrow_mut();
            w.snap.checkpoints += 1;
            w.snap.checkpoint_bytes += bytes;
            w.snap.checkpoints
        };
        if let Err(e) = self.store_checkpoint(patch) {
            {
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
        if self.role == Role::Top
            && let Some(written) = self.world.borrow_mut().written_steps.as_mut()
        {
            // D-380: which step records this replay wrote, for its judge.
            written.extend(patch.steps.keys().cloned());
        }
        if self.tracing() {
            let fields = json!({"n": n, "bytes": bytes,
                                "patch": serde_json::to_value(patch).unwrap_or_default()});
            self.event("checkpoint", fields);
        }
        self.after_checkpoint(n)
    }

    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        let loaded = self
            .store
            .borrow()
            .load(run_id)
            .map_err(|e| HostError::Store(e.0))?;
        if self.tracing() {
            self.event("load", json!({"found": loaded.is_some()}));
        }
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
        let entry = self.tagged(json!({"stepId": step_id, "attempt": attempt, "ms": ms}));
        self.event("wait", entry.clone());
        let deadline = {
            let mut w = self.world.borrow_mut();
            w.snap.waits.push(entry);
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
        let entry = self.scrubbed(self.tagged(json!({"token": token, "fireAtMs": at_ms,
                           "directive": serde_json::to_value(&directive).unwrap_or_default()})));
        self.event("schedule", entry.clone());
        let mut w = self.world.borrow_mut();
        w.snap.schedules.push(entry);
        // The fire time itself, which the recorded entry may show redacted (SEC-1); a
        // child run's too: its caller fires it (D-122).
        w.snap.fire_times.insert(token, at_ms);
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

    /// D-250: the key the scenario carries or the operator gave; never one derived from
    /// the secrets.
    fn sealing_key(&self) -> Option<crate::host::SealingKey> {
        self.scenario.sealing_key.clone()
    }

    /// D-251: the simulator's randomness — SHA-256 in counter mode over the scenario's
    /// seed, the CLI's entropy, the run id and the checkpoints made so far — so a seed
    /// reproduces a run, and a crash-free run and its crashed copies draw alike.
    fn random_bytes(&self, out: &mut [u8]) -> bool {
        use sha2::{Digest, Sha256};
        let checkpoints = self.world.borrow().snap.checkpoints;
        for (block, chunk) in out.chunks_mut(32).enumerate() {
            let mut h = Sha256::new();
            h.update(b"w6w-sim host randomness v1");
            h.update(self.scenario.seed.to_be_bytes());
            h.update(self.scenario.entropy.to_be_bytes());
            h.update(checkpoints.to_be_bytes());
            h.update((block as u64).to_be_bytes());
            h.update(self.info.id.as_bytes());
            let digest = h.finalize();
            chunk.copy_from_slice(&digest[..chunk.len()]);
        }
        true
    }

    fn documents(&self) -> Value {
        Value::Object(self.scenario.documents.clone())
    }

    async fn invoke_callable(&self, req: CallableRequest) -> Result<Value, InvokeError> {
        let at_ms = self.now_ms();
        let result = self.dispatch(&req).await;
        let mut entry = json!({"target": req.target, "input": req.input, "wait": req.wait,
                               "depth": req.depth, "atMs": at_ms});
        if let Value::Object(m) = &mut entry {
            if !req.step_id.is_empty() {
                m.insert("stepId".into(), json!(req.step_id));
            }
            match &result {
                Ok(d) => {
                    if let Some(id) = &d.run_id {
                        m.insert("childRunId".into(), json!(id));
                    }
                    if d.continued {
                        m.insert("continued".into(), json!(true));
                    }
                    m.insert("status".into(), json!(d.status));
                    m.insert("output".into(), self.scrubbed(d.output.clone()));
                }
                Err((run_id, e)) => {
                    let mut e = e.clone();
                    self.scrub.error(&mut e);
                    if let Some(id) = run_id {
                        m.insert("childRunId".into(), json!(id));
                    }
                    m.insert("status".into(), json!("failed"));
                    m.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                }
            }
        }
        let entry = self.scrubbed(self.tagged(entry));
        self.event("call", entry.clone());
        self.world.borrow_mut().snap.calls.push(entry);
        // D-121: `crashInInvoke` naming a call step: the dispatch came back, the host dies
        // before the call's result is checkpointed.
        let crash = {
            let w = self.world.borrow();
            invoke_fault(self.scenario, &w, &req.step_id, 1)
        };
        if let Some(i) = crash.filter(|_| !req.step_id.is_empty()) {
            self.crash_in_invoke(i, &req.step_id, 1).await;
        }
        match result {
            Ok(d) => Ok(match (&d.run_id, req.wait) {
                (Some(run_id), false) => json!({"runId": run_id}),
                _ => d.output,
            }),
            // CALL-1: `wait: false` hands back the handle of a run that was enqueued; its
            // later failure is the callee's, visible in the trace, not the caller's.
            Err((Some(run_id), _)) if !req.wait => Ok(json!({"runId": run_id})),
            Err((_, e)) => Err(e),
        }
    }
}

/// What one dispatch came to.
struct Dispatched {
    /// The child run (`None` for a function target).
    run_id: Option<String>,
    /// `succeeded`, or `queued` for a `wait: false` child a wait suspended.
    status: &'static str,
    output: Value,
    /// The child run already existed: this dispatch continued it (D-120).
    continued: bool,
}

type DispatchResult = Result<Dispatched, (Option<String>, InvokeError)>;

/// D-121: the first `crashInInvoke` fault for (`step`, `attempt`) that has not fired.
fn invoke_fault(scenario: &Scenario, w: &World, step: &str, attempt: u32) -> Option<usize> {
    scenario
        .faults
        .crash_in_invoke
        .iter()
        .enumerate()
        .find(|(i, f)| {
            f.step == step && f.attempt == attempt && !w.snap.fired_invoke_faults.contains(i)
        })
        .map(|(i, _)| i)
}

/// The first-party document app (CALL-4), served by the host from the scenario.
pub(crate) const DOCUMENT_APP: &str = "@w6w/document";

/// Traces (and reports, D-125) an invocation the engine dropped before it settled.
struct CancelGuard<'h, 'a> {
    host: &'h SimHost<'a>,
    entry: &'h Invocation,
    armed: bool,
}

impl Drop for CancelGuard<'_, '_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(mut w) = self.host.world.try_borrow_mut() else {
            return;
        };
        if w.crash_pending || w.halt.is_some() {
            return;
        }
        let mut entry = self.entry.clone().into_json();
        if let Value::Object(m) = &mut entry {
            m.insert("canceledAtMs".into(), json!(w.now_ms()));
        }
        w.snap.canceled.push(entry);
        drop(w);
        let mut fields = json!({"stepId": self.entry.step_id, "attempt": self.entry.attempt,
               "note": "canceled by the engine before the action settled"});
        if let (Some(id), Value::Object(m)) = (&self.entry.run_id, &mut fields) {
            m.insert("runId".into(), Value::String(id.to_string()));
        }
        self.host
            .world
            .borrow_mut()
            .event("invoke_canceled", fields);
    }
}

impl SimHost<'_> {
    /// The invocation as the report lists it, its texts scrubbed.
    fn invocation_entry(
        &self,
        req: InvokeRequest,
        params: JsonText,
        at_ms: u64,
        script: Option<JsonText>,
    ) -> Invocation {
        let mut entry = Invocation {
            step_id: req.step_id.into(),
            app: req.app.into(),
            action: req.action.into(),
            connection: req.connection.map(Into::into),
            attempt: req.attempt,
            params,
            at_ms,
            run_id: (self.role == Role::Child).then(|| self.info.id.as_str().into()),
            script,
        };
        entry.scrub_texts(self.scrub);
        entry
    }

    /// The invocation takes virtual time; other strands run meanwhile. If the engine
    /// cancels it (a race loser, a fail-fast foreach), the trace says so.
    async fn take_latency(&self, entry: &Invocation, at_ms: u64, latency_ms: u64) {
        if latency_ms > 0 {
            let mut guard = CancelGuard {
                host: self,
                entry,
                armed: true,
            };
            Sleep::until(self.world, at_ms.saturating_add(latency_ms)).await;
            guard.armed = false;
        }
    }

    /// Count a checkpoint's bytes against the run's recorded-bytes limit: whether the
    /// run must stop (the world is told when the limit passes).
    fn over_recorded_bytes(&self, bytes: u64) -> bool {
        let mut w = self.world.borrow_mut();
        let max = w.limits.recorded_bytes;
        w.snap.recorded_bytes = w.snap.recorded_bytes.saturating_add(bytes);
        if w.snap.recorded_bytes > max {
            w.exceed(format!(
                "the run's checkpoints passed their limit of {max} recorded bytes"
            ));
        }
        w.halt.is_some()
    }

    /// The store reads the live world (no copy: a copy per checkpoint would make a long
    /// run quadratic) and, for a top-level run, which invocation counts changed.
    fn store_checkpoint(&self, patch: &RunStatePatch) -> Result<(), StoreError> {
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
    }

    /// What happens once checkpoint `n` is durable: the testing abort, the scenario's
    /// cancel, a fork of the world, or a scripted crash.
    fn after_checkpoint(&self, n: u64) -> Result<(), HostError> {
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
        if self.role == Role::Top {
            self.fork_at(n);
        }
        if self.scenario.faults.crash_after_checkpoint.contains(&n) {
            let fields = self.tagged(crash_after_checkpoint(n));
            self.world.borrow_mut().crash(fields);
            return Err(HostError::Crashed);
        }
        Ok(())
    }

    /// `maxAttempts` has no upper bound (MODEL-3), so a scenario that always fails a
    /// retryable action must still end (SEC-2): whether the invocation budget ran out
    /// (the world is told once).
    fn over_invocation_budget(&self) -> bool {
        let mut w = self.world.borrow_mut();
        let max = w.limits.invocations;
        let over = w.snap.total_invocations >= max || w.halt.is_some();
        if over {
            w.exceed(format!("the run's invocation limit of {max} ran out"));
        }
        over
    }

    /// Count the invocation: the scripted outcome it gets (the last one repeats, `echo`
    /// without any), when it starts, and the `crashInInvoke` fault it meets, if any.
    fn count_invocation<'s>(
        &self,
        req: &InvokeRequest,
        script: &'s super::scenario::ActionScript,
        echo: &'s super::scenario::Outcome,
    ) -> (&'s super::scenario::Outcome, u64, Option<usize>) {
        let mut w = self.world.borrow_mut();
        w.snap.total_invocations += 1;
        // The step id is copied once per step, not per invocation.
        let counts = &mut w.snap.invocation_counts;
        let seen = match counts.get_mut(&req.step_id) {
            Some(count) => {
                *count += 1;
                *count - 1
            }
            None => {
                counts.insert(req.step_id.clone(), 1);
                0
            }
        };
        let index = usize::try_from(seen).unwrap_or(usize::MAX);
        if w.track_counts {
            w.counts_changed.push(req.step_id.clone());
        }
        // Borrowed from the script, not copied: an output is copied once, by the caller.
        let outcome = script
            .outcomes
            .get(index.min(script.outcomes.len().saturating_sub(1)))
            .unwrap_or(echo);
        let at_ms = w.now_ms();
        // D-121: a fault fires in whichever run of the tree reaches it.
        let crash = invoke_fault(self.scenario, &w, &req.step_id, req.attempt);
        (outcome, at_ms, crash)
    }

    /// The params as recorded, before an echo takes them: redacted (SEC-1), scrubbed, and
    /// held as text (D-191). With nothing to redact or scrub, they are written as they
    /// are, without a copy.
    fn recorded_params(&self, req: &InvokeRequest) -> JsonText {
        if req.secret_paths.is_empty() && self.scrub.is_empty() {
            JsonText::from_map(&req.params)
        } else {
            let mut params = Value::Object(req.redacted_params());
            self.scrub.value(&mut params);
            JsonText::new(&params)
        }
    }

    /// What the invocation returns: the scripted output or error, the params echoed, or
    /// the document a document step reads.
    fn invocation_result(
        &self,
        req: &mut InvokeRequest,
        kind: &OutcomeKind,
    ) -> Result<Value, InvokeError> {
        if req.app == DOCUMENT_APP {
            // D-126: a scripted error is the host's internal API failing; otherwise the
            // host serves the document (an `output` is refused when the run starts).
            match kind {
                OutcomeKind::Error(e) => Err(e.clone()),
                _ => self.document(req),
            }
        } else {
            match kind {
                OutcomeKind::Output(v) => Ok(v.clone()),
                // The params were recorded (redacted) before; nothing reads them after this.
                OutcomeKind::Echo => Ok(Value::Object(std::mem::take(&mut req.params))),
                OutcomeKind::Error(e) => Err(e.clone()),
            }
        }
    }

    /// SEC-1: the result goes into the trace as the engine records it (D-274, D-275):
    /// redacted wholly when the action's output is declared sensitive, else where it holds
    /// what the step was handed; the sink removes every secret in every form.
    fn trace_result(
        &self,
        m: &mut Map<String, Value>,
        result: &Result<Value, InvokeError>,
        sensitive: bool,
        needles: Option<&crate::redact::taint::Needles>,
    ) {
        let none = crate::redact::taint::Needles::default();
        let needles = needles.unwrap_or(&none);
        let no_forms = crate::redact::leak::Detector::default();
        match result {
            Ok(_) if sensitive => {
                m.insert("output".into(), json!(crate::expr::REDACTED));
            }
            Ok(v) => {
                let mut v = v.clone();
                let places = crate::redact::taint::scan(&v, needles, &no_forms);
                crate::redact::taint::redact_places(&mut v, &places);
                m.insert("output".into(), self.scrubbed(v));
            }
            Err(e) => {
                let mut e = e.clone();
                if sensitive {
                    e.message = crate::expr::REDACTED.to_owned();
                } else if let Some(m) = crate::redact::taint::redact_message(&e.message, needles) {
                    e.message = m;
                }
                self.scrub.error(&mut e);
                m.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
            }
        }
    }

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

    /// `crashInInvoke` fault `i` fires: the host process dies; this never returns.
    async fn crash_in_invoke(&self, i: usize, step_id: &str, attempt: u32) {
        let fields = self.tagged(
            json!({"fault": "crashInInvoke", "stepId": step_id, "attempt": attempt,
                   "note": "the action ran; its result was never checkpointed"}),
        );
        {
            let mut w = self.world.borrow_mut();
            w.snap.fired_invoke_faults.insert(i);
            w.crash(fields);
        }
        // The process is gone: this call never returns; the simulator drops the run.
        std::future::pending::<()>().await;
    }

    /// CALL-1/CALL-2 through the one seam: a function target from the scenario's
    /// `functions`, a workflow target from its `workflows` run to a terminal state.
    async fn dispatch(&self, req: &CallableRequest) -> DispatchResult {
        let pre = |e: StepError| Err((None, e));
        if req.depth > CALL_DEPTH_MAX {
            return pre(StepError::new(
                "call_depth_exceeded",
                format!(
                    "call depth {} exceeds the bound of {CALL_DEPTH_MAX}",
                    req.depth
                ),
                Phase::Resolution,
            ));
        }
        let target = &req.target;
        match target.get("kind").and_then(Value::as_str) {
            Some("function") => return self.function(req).await,
            Some("workflow") => {}
            _ => {
                return pre(StepError::new(
                    "unsupported_callable",
                    format!(
                        "the simulator dispatches {{\"kind\": \"workflow\" | \"function\", …}} targets only, got a target of type {} (param \"target\")",
                        crate::expr::json_type_name(target)
                    ),
                    Phase::Resolution,
                ));
            }
        }
        let Some(id) = target.get("workflow").and_then(Value::as_str) else {
            return pre(StepError::new(
                "param_invalid",
                "a workflow target names its workflow: {\"kind\": \"workflow\", \"workflow\": ID} (param \"target\")",
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
        let variables = match &req.input {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            other => {
                return pre(StepError::new(
                    "param_invalid",
                    format!(
                        "a workflow target's input (param \"input\") must be an object, got a {}",
                        crate::expr::json_type_name(other)
                    ),
                    Phase::Resolution,
                ));
            }
        };
        self.child_run(req, id, &workflow, variables).await
    }

    /// D-126: a `{kind: "function"}` target answers from the scenario's `functions`
    /// script (one outcome per dispatch, the last repeats; `echo` returns the input).
    async fn function(&self, req: &CallableRequest) -> DispatchResult {
        let pre = |e: StepError| Err((None, e));
        let Some(id) = req.target.get("function").and_then(Value::as_str) else {
            return pre(StepError::new(
                "param_invalid",
                "a function target names its function: {\"kind\": \"function\", \"function\": ID} (param \"target\")",
                Phase::Resolution,
            ));
        };
        let Some(script) = self.scenario.functions.get(id) else {
            return pre(StepError::new(
                "unknown_function",
                "the target's function id (param \"target\") names no function in the scenario's functions".to_owned(),
                Phase::Resolution,
            ));
        };
        let outcome = {
            let mut w = self.world.borrow_mut();
            w.snap.total_invocations += 1;
            let count = w
                .snap
                .invocation_counts
                .entry(format!("function:{id}"))
                .or_insert(0);
            let index = usize::try_from(*count).unwrap_or(usize::MAX);
            *count += 1;
            script
                .outcomes
                .get(index.min(script.outcomes.len().saturating_sub(1)))
                .cloned()
                .unwrap_or_else(super::scenario::Outcome::echo)
        };
        if outcome.latency_ms > 0 {
            let at = self.now_ms().saturating_add(outcome.latency_ms);
            Sleep::until(self.world, at).await;
        }
        match outcome.kind {
            OutcomeKind::Output(v) => Ok(Dispatched {
                run_id: None,
                status: "succeeded",
                output: v,
                continued: false,
            }),
            OutcomeKind::Echo => Ok(Dispatched {
                run_id: None,
                status: "succeeded",
                output: req.input.clone(),
                continued: false,
            }),
            OutcomeKind::Error(e) => pre(e),
        }
    }

    /// D-120/D-122: run (or continue) the child run this dispatch key names, in the
    /// simulator's own store, until it ends — a `wait` it suspends on fires on the virtual
    /// clock and the child resumes with its token while the caller blocks.
    async fn child_run(
        &self,
        req: &CallableRequest,
        id: &str,
        workflow: &crate::model::Workflow,
        variables: Map<String, Value>,
    ) -> DispatchResult {
        let engine = Engine::new(workflow).map_err(|e| {
            (
                None,
                StepError::new(e.code(), e.to_string(), Phase::Resolution),
            )
        })?;
        let run_id = if req.dispatch_id.is_empty() {
            // A caller that sends no key (an older candidate engine): a fresh child.
            let n = self.world.borrow().snap.calls.len();
            format!("{}.call{}", self.info.id, n + 1)
        } else {
            child_run_id(&self.info.id, &req.dispatch_id)
        };
        let child = self.child_host(run_id.clone(), workflow.id.clone());
        let stored = self
            .store
            .borrow()
            .load(&run_id)
            .map_err(|e| (None, StepError::new("store_error", e.0, Phase::Execute)))?;
        let continued = stored.is_some();
        type Fut<'f> = std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<RunResult, EngineError>> + 'f>,
        >;
        // Boxed: a child run may itself call or reroute, so these futures are recursive.
        let first: Fut<'_> = match stored {
            None => Box::pin(engine.run(
                RunSeed {
                    run_id: run_id.clone(),
                    trigger: json!({"type": "manual"}),
                    variables,
                    call_depth: req.depth,
                    secret_paths: req.secret_paths.clone(),
                },
                &child,
            )),
            Some(s) if s.state.status.is_terminal() || s.state.status == RunStatus::Queued => {
                Box::pin(std::future::ready(Ok(result_of(s.state))))
            }
            // The caller crashed while this child ran: crash-resume it (RUN-4).
            Some(_) => Box::pin(engine.resume(&run_id, &child)),
        };
        let mut result = first.await;
        while req.wait
            && let Ok(r) = &result
            && r.status == RunStatus::Queued
        {
            let token = self.fire_child(&r.state).await;
            let next: Fut<'_> = Box::pin(engine.resume_with(&run_id, token.as_deref(), &child));
            result = next.await;
        }
        self.child_outcome(id, run_id, continued, result).await
    }

    /// The host a child run runs on: this run's world, store and scenario, its own run.
    fn child_host(&self, run_id: String, workflow_id: String) -> Self {
        SimHost {
            world: self.world,
            scenario: self.scenario,
            store: self.store,
            acked: self.acked,
            forks: self.forks,
            scrub: self.scrub,
            options: self.options,
            scripts: self.scripts,
            info: RunInfo {
                id: run_id,
                workflow_id,
                trigger: RunTrigger::Manual,
                attempt: 1,
            },
            role: Role::Child,
        }
    }

    /// D-122: a suspended child's schedule fires on the virtual clock (the caller waits
    /// for it); the token to resume it with.
    async fn fire_child(&self, state: &RunState) -> Option<String> {
        let token = state.extra.get("resumeToken").and_then(Value::as_str)?;
        let at = self.world.borrow().snap.fire_times.get(token).copied()?;
        Sleep::until(self.world, at).await;
        let child_id = state.run_id.clone();
        let mut w = self.world.borrow_mut();
        w.event(
            "schedule_fired",
            json!({"token": token, "runId": child_id,
                   "note": "the virtual clock reached the child run's wait; its caller resumes it with the token"}),
        );
        Some(token.to_owned())
    }

    /// What a child run's end means for its caller.
    async fn child_outcome(
        &self,
        id: &str,
        run_id: String,
        continued: bool,
        result: Result<RunResult, EngineError>,
    ) -> DispatchResult {
        match result {
            Ok(r) if r.status == RunStatus::Succeeded => Ok(Dispatched {
                run_id: Some(run_id),
                status: "succeeded",
                output: r.output.unwrap_or(Value::Null),
                continued,
            }),
            // `wait: false`: the handle of a run a wait suspended (D-122).
            Ok(r) if r.status == RunStatus::Queued => Ok(Dispatched {
                run_id: Some(run_id),
                status: "queued",
                output: Value::Null,
                continued,
            }),
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
            // The process died inside the child (a fault fired there): so did the caller.
            Err(EngineError::Host(HostError::Crashed)) => std::future::pending().await,
            Err(e) => Err((
                Some(run_id),
                StepError::new(e.code(), e.to_string(), Phase::Resolution),
            )),
        }
    }
}

/// D-120: the child run a dispatch key names, `<caller>.<key>` (`run_1.call1`,
/// `run_1.reroute`); past the run-id length bound (a deep chain), the top run's id and a
/// stable hash of the full name, so every store accepts it.
pub(crate) fn child_run_id(caller: &str, key: &str) -> String {
    let full = format!("{caller}.{key}");
    if super::scenario::run_id_ok(&full) {
        return full;
    }
    // FNV-1a 64: stable across builds and platforms (no std hasher is).
    let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let root: String = caller
        .split('.')
        .next()
        .unwrap_or(caller)
        .chars()
        .take(100)
        .collect();
    format!("{root}.h{hash:016x}")
}

/// A stored run as the engine's result.
fn result_of(state: RunState) -> RunResult {
    RunResult {
        run_id: state.run_id.clone(),
        status: state.status,
        output: state.output.clone(),
        error: state.error.clone(),
        state,
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
