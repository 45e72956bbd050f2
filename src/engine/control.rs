//! The canonical controls, interpreted natively (CTRL-1…10), and `@w6w/call` (CALL-1…3).
//!
//! Owns: what `if`, `foreach`, `parallel`, `wait`, `aggregate`, `merge` and `call` do at
//! run time. Companion §5 item 2: the *engine* decides a control's outcome; the host
//! computes nothing and is never invoked for a control. Invariant: controls and calls run
//! no retry loop (RETRY-6) and carry no meta (CALL-3, META-4); sub-block steps record into
//! frames of their control and never take part in main-graph routing (CTRL-9).

use serde_json::{Map, Value, json};

use super::EngineError;
use super::graph::Block;
use super::journal::{Extras, Frame, Journal};
use super::run::Engine;
use super::step::finish_failed;
use super::strand::InFlight;
use super::walk::{GraphOutcome, RunCtx, StepEnd, Suspension};
use crate::expr::{ResolveError, ResolveMode, Resolved, RunScope};
use crate::host::{LogLevel, ScheduleDirective, WorkflowContext, iso8601_from_ms};
use crate::model::{OnError, Phase, StepError, StepExecution, StepStatus};
use crate::plan::{
    ControlParams, JoinMode, ParallelStrategy, PlanValue, WaitSpec, parse_duration_ms,
    parse_timestamp_ms,
};

/// CALL-2: the composition depth bound (node-types.md 2026-08-20, default 16).
pub const CALL_DEPTH_MAX: u32 = 16;

/// A `foreach` over more items than this fails with `param_invalid` (a limit on
/// everything: one record per iteration is kept in the run state).
pub const FOREACH_ITEMS_MAX: usize = 100_000;

fn param_invalid(message: impl Into<String>) -> StepError {
    let mut e = StepError::new("param_invalid", message, Phase::Resolution);
    e.retryable = false;
    e
}

/// JSONLogic truthiness: `false`, `null`, `0`, `""` and `[]` are falsy.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

/// A sub-block instance's records with in-flight steps marked canceled.
fn closed(mut records: Map<String, Value>, canceled: bool) -> Value {
    if canceled {
        for r in records.values_mut() {
            if r.get("status").and_then(Value::as_str) == Some("running")
                && let Value::Object(m) = r
            {
                m.insert("status".into(), json!("skipped"));
                m.insert("canceled".into(), json!(true));
            }
        }
    }
    Value::Object(records)
}

/// The output of a sub-block instance: its last step's output when it succeeded.
fn block_output(records: &Map<String, Value>, last_id: &str) -> Value {
    records
        .get(last_id)
        .filter(|r| r.get("status").and_then(Value::as_str) == Some("succeeded"))
        .and_then(|r| r.get("output").cloned())
        .unwrap_or(Value::Null)
}

fn sub_error(what: &str, error: &StepError) -> StepError {
    let mut e = error.clone();
    let inner = error.step_id.as_deref().unwrap_or("?");
    e.message = format!("{what}, step {inner}: {}", error.message);
    e.step_id = None;
    e
}

impl Engine<'_> {
    fn start_record<C: WorkflowContext>(&self, ctx: &C, i: usize) -> StepExecution {
        let mut record = StepExecution::new(&self.workflow.steps[i].id, StepStatus::Running, 1);
        record.started_at = Some(iso8601_from_ms(ctx.now_ms()));
        record
    }

    /// RUN-2 start of a control or call step: the start checkpoint (recorded input is the
    /// redacted params, SEC-1), then the params — or, when resolution failed, the step's
    /// terminal failed record (phase `resolution`, never retried: RETRY-6).
    async fn start_resolved<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        frame: &Frame,
        i: usize,
        resolved: Result<Resolved, ResolveError>,
        carried_start: Option<String>,
    ) -> Result<Result<(StepExecution, Map<String, Value>), StepExecution>, EngineError> {
        let mut record = self.start_record(ctx, i);
        // RUN-6 / D-73: a control resumed after a crash continues the same attempt (its
        // finished frames are carried), so it keeps the time that attempt started.
        if let Some(at) = carried_start {
            record.started_at = Some(at);
        }
        if let Ok(r) = &resolved {
            record.input = Some(Value::Object(r.redacted()));
            super::journal::mark_secret_derived(&mut record, r);
        }
        journal
            .commit_step(ctx, frame, record.clone(), Extras::default())
            .await?;
        Ok(match resolved {
            Ok(r) => Ok((record, r.params)),
            Err(e) => {
                let error = StepError::new(e.code.as_str(), e.message, Phase::Resolution);
                Err(finish_failed(ctx, record, error, None))
            }
        })
    }

    fn succeed<C: WorkflowContext>(
        ctx: &C,
        mut record: StepExecution,
        output: Value,
    ) -> StepExecution {
        record.status = StepStatus::Succeeded;
        record.output = Some(output);
        record.finished_at = Some(iso8601_from_ms(ctx.now_ms()));
        record
    }

    /// Run one control step (CTRL-2…8). Returns its end and, under `continue-record`,
    /// the failures it swallowed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn control<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        frame: &Frame,
        i: usize,
        scope: &RunScope,
        inbound: Vec<(String, Value)>,
        existing: Option<StepExecution>,
        error_edge: bool,
    ) -> Result<(StepEnd, Vec<StepError>), EngineError> {
        let step = &self.workflow.steps[i];
        let Some(control) = self.plan.controls.control(i) else {
            let record = self.start_record(ctx, i);
            let e = StepError::new(
                "unknown_control",
                format!("step {:?} is not a canonical control", step.id),
                Phase::Resolution,
            );
            return Ok((
                StepEnd::Done(finish_failed(ctx, record, e, None)),
                Vec::new(),
            ));
        };
        let resolved = self.compiled[i]
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| c.resolve(scope, ResolveMode::Run));
        let carried_start = existing
            .as_ref()
            .filter(|r| r.status == StepStatus::Running)
            .and_then(|r| r.started_at.clone());
        if let ControlParams::Wait(spec) = &control.params {
            let end = self
                .wait(ctx, journal, rc, frame, i, *spec, resolved, existing)
                .await?;
            return Ok((end, Vec::new()));
        }
        // RUN-2: control start (a resumed control re-runs; its frames are reused).
        let (record, params) = match self
            .start_resolved(ctx, journal, frame, i, resolved, carried_start)
            .await?
        {
            Ok(started) => started,
            Err(failed) => return Ok((StepEnd::Done(failed), Vec::new())),
        };
        let done = |r: Result<Value, StepError>, record: StepExecution| match r {
            Ok(out) => StepEnd::Done(Self::succeed(ctx, record, out)),
            Err(e) => StepEnd::Done(finish_failed(ctx, record, e, None)),
        };
        Ok(match &control.params {
            ControlParams::If => (done(if_output(&params), record), Vec::new()),
            ControlParams::Aggregate { mode } => (
                done(join(*mode, &params, &inbound, false), record),
                Vec::new(),
            ),
            ControlParams::Merge { mode } => (
                done(join(*mode, &params, &inbound, true), record),
                Vec::new(),
            ),
            ControlParams::Foreach { body, parallelism } => {
                self.foreach(
                    ctx,
                    journal,
                    rc,
                    frame,
                    i,
                    scope,
                    &params,
                    *body,
                    *parallelism,
                    record,
                    error_edge,
                )
                .await?
            }
            ControlParams::Parallel { branches, strategy } => (
                self.parallel(
                    ctx, journal, rc, frame, i, scope, &params, branches, *strategy, record,
                )
                .await?,
                Vec::new(),
            ),
            ControlParams::Wait(_) => (StepEnd::Canceled, Vec::new()),
        })
    }

    /// CTRL-4/5: `foreach`.
    #[allow(clippy::too_many_arguments)]
    async fn foreach<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        frame: &Frame,
        i: usize,
        scope: &RunScope,
        params: &Map<String, Value>,
        body: usize,
        parallelism: PlanValue<u64>,
        mut record: StepExecution,
        error_edge: bool,
    ) -> Result<(StepEnd, Vec<StepError>), EngineError> {
        let step = &self.workflow.steps[i];
        let fail = |record, e| {
            Ok((
                StepEnd::Done(finish_failed(ctx, record, e, None)),
                Vec::new(),
            ))
        };
        let items = match params.get("items") {
            Some(Value::Array(a)) if a.len() <= FOREACH_ITEMS_MAX => a.clone(),
            Some(Value::Array(a)) => {
                return fail(
                    record,
                    param_invalid(format!(
                        "foreach items has {} entries; at most {FOREACH_ITEMS_MAX} are allowed",
                        a.len()
                    )),
                );
            }
            other => {
                return fail(
                    record,
                    param_invalid(format!(
                        "foreach items must resolve to an array, got {}",
                        other.map_or("nothing".to_owned(), Value::to_string)
                    )),
                );
            }
        };
        let parallelism = match parallelism {
            PlanValue::Known(p) => p,
            PlanValue::AtRunTime => match params.get("parallelism").and_then(Value::as_f64) {
                Some(p) if p >= 1.0 && p.fract() == 0.0 => p as u64,
                _ => {
                    return fail(
                        record,
                        param_invalid("foreach parallelism must resolve to a whole number >= 1"),
                    );
                }
            },
        };
        let Some(block) = self.plan.controls.blocks.get(body) else {
            return fail(record, param_invalid("foreach body has no plan"));
        };
        let graph = Block {
            sub: block,
            slot: &self.plan.controls.slot,
        };
        let last_id = &self.workflow.steps[block.last].id;
        // CTRL-5: an error edge overrides onError — the foreach fails fast and routes.
        let fail_fast = error_edge || step.on_error() == OnError::Fail;
        let tainted = super::journal::is_secret_derived(&record);
        let n = items.len();
        let width = usize::try_from(parallelism)
            .unwrap_or(usize::MAX)
            .clamp(1, n.max(1));
        let frames: Vec<Frame> = (0..n)
            .map(|k| frame.child(&step.id, "iterations", k))
            .collect();
        let mut outcomes: Vec<Option<GraphOutcome>> = vec![None; n];
        let mut canceled_iterations: Vec<usize> = Vec::new();
        {
            let mut inflight = InFlight::new();
            let mut next = 0;
            let mut stop = false;
            loop {
                while !stop && inflight.len() < width && next < n {
                    let mut child = scope.clone();
                    // CTRL-4: each iteration's child scope adds foreach.item / foreach.index.
                    child.foreach = Some(json!({"item": items[next], "index": next}));
                    if tainted {
                        // SEC-1: items drawn from a secret-derived value are secret-derived.
                        child.taint(&["foreach"]);
                    }
                    inflight.push(
                        next,
                        self.walk(ctx, journal, rc, &graph, &frames[next], child),
                    );
                    next += 1;
                }
                let Some((k, result)) = inflight.next().await else {
                    break;
                };
                let outcome = result?;
                match &outcome {
                    GraphOutcome::Failed(_) if fail_fast => {
                        stop = true;
                        canceled_iterations = inflight.cancel_all();
                        ctx.log(
                            LogLevel::Warn,
                            &format!(
                                "foreach {}: iteration {k} failed; canceled in-flight iterations {canceled_iterations:?}; {} never started",
                                step.id,
                                n - next
                            ),
                            Some(&json!({"step": step.id, "failedIteration": k,
                                         "canceledIterations": canceled_iterations})),
                        );
                    }
                    // FAN-6 applied to iterations: stop launching, let in-flight ones end.
                    GraphOutcome::Suspended(_) | GraphOutcome::Canceled => stop = true,
                    _ => {}
                }
                outcomes[k] = Some(outcome);
            }
        }
        if let Some(s) = outcomes.iter().flatten().find_map(|o| match o {
            GraphOutcome::Suspended(s) => Some(s.clone()),
            _ => None,
        }) {
            return Ok((StepEnd::Suspended(s), Vec::new()));
        }
        if outcomes
            .iter()
            .flatten()
            .any(|o| *o == GraphOutcome::Canceled)
        {
            return Ok((StepEnd::Canceled, Vec::new()));
        }
        let mut iterations = Vec::with_capacity(n);
        let mut items_out = Vec::with_capacity(n);
        for (k, f) in frames.iter().enumerate() {
            let records = journal.frame_records(f);
            items_out.push(block_output(&records, last_id));
            iterations.push(closed(records, canceled_iterations.contains(&k)));
        }
        record
            .extra
            .insert("iterations".into(), Value::Array(iterations));
        let failures: Vec<(usize, StepError)> = outcomes
            .iter()
            .enumerate()
            .filter_map(|(k, o)| match o {
                Some(GraphOutcome::Failed(e)) => Some((k, e.clone())),
                _ => None,
            })
            .collect();
        if fail_fast && let Some((k, e)) = failures.first() {
            // FAN-7 for iterations: the reported error is the lowest failed index.
            return fail(record, sub_error(&format!("iteration {k}"), e));
        }
        // CTRL-5 "continue": failed iterations stay failed in their records, their
        // `items` entry is null, the foreach succeeds; continue-record also lists them.
        let kept = if step.on_error() == OnError::ContinueRecord {
            failures
                .iter()
                .map(|(k, e)| sub_error(&format!("iteration {k}"), e).for_step(&step.id))
                .collect()
        } else {
            Vec::new()
        };
        if !failures.is_empty() {
            record.extra.insert(
                "failedIterations".into(),
                json!(failures.iter().map(|(k, _)| k).collect::<Vec<_>>()),
            );
        }
        Ok((
            StepEnd::Done(Self::succeed(ctx, record, json!({"items": items_out}))),
            kept,
        ))
    }

    /// CTRL-6: `parallel` with `all`, `race` and `any`.
    #[allow(clippy::too_many_arguments)]
    async fn parallel<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        frame: &Frame,
        i: usize,
        scope: &RunScope,
        params: &Map<String, Value>,
        branches: &[usize],
        strategy: PlanValue<ParallelStrategy>,
        mut record: StepExecution,
    ) -> Result<StepEnd, EngineError> {
        let step = &self.workflow.steps[i];
        let strategy = match strategy {
            PlanValue::Known(s) => s,
            PlanValue::AtRunTime => match params.get("strategy").and_then(Value::as_str) {
                Some("all") | None => ParallelStrategy::All,
                Some("race") => ParallelStrategy::Race,
                Some("any") => ParallelStrategy::Any,
                Some(other) => {
                    let e = param_invalid(format!(
                        "parallel strategy must be \"all\", \"race\" or \"any\", got {other:?}"
                    ));
                    return Ok(StepEnd::Done(finish_failed(ctx, record, e, None)));
                }
            },
        };
        let mut graphs = Vec::with_capacity(branches.len());
        for &b in branches {
            let Some(sub) = self.plan.controls.blocks.get(b) else {
                let e = param_invalid("parallel branch has no plan");
                return Ok(StepEnd::Done(finish_failed(ctx, record, e, None)));
            };
            graphs.push(Block {
                sub,
                slot: &self.plan.controls.slot,
            });
        }
        let n = graphs.len();
        let frames: Vec<Frame> = (0..n)
            .map(|b| frame.child(&step.id, "branches", b))
            .collect();
        let mut outcomes: Vec<Option<GraphOutcome>> = vec![None; n];
        let mut winner: Option<usize> = None;
        let mut canceled: Vec<usize> = Vec::new();
        {
            let mut inflight = InFlight::new();
            for (b, g) in graphs.iter().enumerate() {
                inflight.push(b, self.walk(ctx, journal, rc, g, &frames[b], scope.clone()));
            }
            while let Some((b, result)) = inflight.next().await {
                let outcome = result?;
                let decided = match (&outcome, strategy) {
                    // Open question 3: under `all` the first failure cancels the rest.
                    (GraphOutcome::Failed(_), ParallelStrategy::All) => true,
                    // `race`: the first branch to complete wins, failed or not.
                    (GraphOutcome::Succeeded | GraphOutcome::Failed(_), ParallelStrategy::Race) => {
                        winner = Some(b);
                        true
                    }
                    // `any`: the first branch to succeed wins.
                    (GraphOutcome::Succeeded, ParallelStrategy::Any) => {
                        winner = Some(b);
                        true
                    }
                    _ => false,
                };
                outcomes[b] = Some(outcome);
                if decided {
                    canceled = inflight.cancel_all();
                    if !canceled.is_empty() {
                        ctx.log(
                            LogLevel::Info,
                            &format!(
                                "parallel {}: branch {b} decided the {} strategy; canceled branches {canceled:?}",
                                step.id,
                                match strategy {
                                    ParallelStrategy::All => "all",
                                    ParallelStrategy::Race => "race",
                                    ParallelStrategy::Any => "any",
                                }
                            ),
                            Some(&json!({"step": step.id, "decidedBy": b, "canceledBranches": canceled})),
                        );
                    }
                    break;
                }
            }
        }
        if winner.is_none() {
            if let Some(s) = outcomes.iter().flatten().find_map(|o| match o {
                GraphOutcome::Suspended(s) => Some(s.clone()),
                _ => None,
            }) {
                return Ok(StepEnd::Suspended(s));
            }
            if outcomes
                .iter()
                .flatten()
                .any(|o| *o == GraphOutcome::Canceled)
            {
                return Ok(StepEnd::Canceled);
            }
        }
        let mut records = Vec::with_capacity(n);
        let mut outputs = Vec::with_capacity(n);
        for (b, f) in frames.iter().enumerate() {
            let r = journal.frame_records(f);
            outputs.push(block_output(
                &r,
                &self.workflow.steps[graphs[b].sub.last].id,
            ));
            records.push(closed(r, canceled.contains(&b)));
        }
        record
            .extra
            .insert("branches".into(), Value::Array(records));
        if let Some(w) = winner {
            if let Some(GraphOutcome::Failed(e)) = &outcomes[w] {
                return Ok(StepEnd::Done(finish_failed(
                    ctx,
                    record,
                    sub_error(&format!("branch {w} won the race by failing"), e),
                    None,
                )));
            }
            let out = json!({"winner": w, "output": outputs[w]});
            return Ok(StepEnd::Done(Self::succeed(ctx, record, out)));
        }
        if let Some((b, e)) = outcomes.iter().enumerate().find_map(|(b, o)| match o {
            Some(GraphOutcome::Failed(e)) => Some((b, e)),
            _ => None,
        }) {
            let what = if strategy == ParallelStrategy::Any {
                format!("every branch failed; first, branch {b}")
            } else {
                format!("branch {b}")
            };
            return Ok(StepEnd::Done(finish_failed(
                ctx,
                record,
                sub_error(&what, e),
                None,
            )));
        }
        Ok(StepEnd::Done(Self::succeed(
            ctx,
            record,
            json!({"branches": outputs}),
        )))
    }

    /// CTRL-7: `wait` — schedule with a fresh token and suspend; complete on resume with
    /// that token.
    #[allow(clippy::too_many_arguments)]
    async fn wait<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        frame: &Frame,
        i: usize,
        spec: WaitSpec,
        resolved: Result<crate::expr::Resolved, crate::expr::ResolveError>,
        existing: Option<StepExecution>,
    ) -> Result<StepEnd, EngineError> {
        let step = &self.workflow.steps[i];
        if let Some(r) = existing.clone().filter(|r| r.status == StepStatus::Running)
            && let Some(token) = r.extra.get("resumeToken").and_then(Value::as_str)
            && rc.resume_token.as_deref() == Some(token)
        {
            // Resumed with this wait's token: the wait is over.
            let out = json!({"resumeToken": token,
                             "scheduledFor": r.extra.get("scheduledFor").cloned().unwrap_or(Value::Null),
                             "resumedAt": iso8601_from_ms(ctx.now_ms())});
            return Ok(StepEnd::Done(Self::succeed(ctx, r, out)));
        }
        if let Some(r) = existing.filter(|r| r.status == StepStatus::Running)
            && let Some(token) = r.extra.get("resumeToken").and_then(Value::as_str)
            && let Some(at) = r.extra.get("scheduledFor").and_then(Value::as_str)
        {
            // CTRL-7 / invariant 8: this wait already suspended with a durable token (a
            // crash came before the run ended queued, or another wait's resume re-entered
            // it). The host may already hold a schedule for that token, so the run stays
            // resumable with exactly that token: schedule it again for the recorded time
            // (a duplicate firing finds the run no longer waiting for it and is refused)
            // and suspend without minting a new one.
            let token = token.to_owned();
            let directive = ScheduleDirective::At {
                at: at.to_owned(),
                resume_token: token.clone(),
            };
            if let Err(e) = ctx.schedule(directive).await {
                let mut record = r;
                record.extra.remove("resumeToken");
                let mut error = StepError::new("schedule_failed", e.to_string(), Phase::Execute);
                error.retryable = false;
                return Ok(StepEnd::Done(finish_failed(ctx, record, error, None)));
            }
            ctx.log(
                LogLevel::Info,
                &format!(
                    "wait {} is still suspended until {at} (token {token}, recorded before the restart)",
                    step.id
                ),
                None,
            );
            return Ok(StepEnd::Suspended(Suspension {
                token,
                step_id: step.id.clone(),
            }));
        }
        let mut record = self.start_record(ctx, i);
        let fail = |record, e| Ok(StepEnd::Done(finish_failed(ctx, record, e, None)));
        let params = match resolved {
            Ok(r) => {
                record.input = Some(Value::Object(r.redacted()));
                super::journal::mark_secret_derived(&mut record, &r);
                if super::journal::is_secret_derived(&record) {
                    // SEC-1: the host records the wait time redacted.
                    for key in ["until", "duration"] {
                        if let Some(v) = r.params.get(key) {
                            ctx.secret_derived(v);
                        }
                    }
                }
                r.params
            }
            Err(e) => {
                let error = StepError::new(e.code.as_str(), e.message, Phase::Resolution);
                return fail(record, error);
            }
        };
        let text = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let now = ctx.now_ms();
        let (after_ms, at_ms) = match spec {
            WaitSpec::Duration { delay_ms } => {
                let ms = match delay_ms {
                    PlanValue::Known(ms) => Ok(ms),
                    PlanValue::AtRunTime => parse_duration_ms(&text("duration")),
                };
                match ms {
                    Ok(ms) => (Some(ms), now.saturating_add(ms)),
                    Err(m) => return fail(record, param_invalid(format!("wait duration: {m}"))),
                }
            }
            WaitSpec::Until { at_ms } => {
                let at = match at_ms {
                    PlanValue::Known(at) => Ok(at),
                    PlanValue::AtRunTime => parse_timestamp_ms(&text("until")),
                };
                match at {
                    Ok(at) => (None, u64::try_from(at).unwrap_or(0)),
                    Err(m) => return fail(record, param_invalid(format!("wait until: {m}"))),
                }
            }
        };
        let seq = journal.next_wait_seq();
        let token = format!("{}:wait:{seq}:{}", journal.run_id(), step.id);
        let directive = match after_ms {
            Some(after_ms) => ScheduleDirective::After {
                after_ms,
                resume_token: token.clone(),
            },
            None => ScheduleDirective::At {
                at: iso8601_from_ms(at_ms),
                resume_token: token.clone(),
            },
        };
        if super::journal::is_secret_derived(&record) {
            // SEC-1: the time is secret-derived in every spelling the host may record.
            // (The time as a number is not declared: equal numbers elsewhere — an `atMs` —
            // are not derived from it, and the clock shows the time anyway, D-43.)
            ctx.secret_derived(&json!(iso8601_from_ms(at_ms)));
        }
        record.extra.insert("resumeToken".into(), json!(token));
        record
            .extra
            .insert("scheduledFor".into(), json!(iso8601_from_ms(at_ms)));
        let mut extras = Extras::default();
        extras.extra.insert("waitSeq".into(), json!(seq));
        // The token is durable before the host may fire it.
        journal
            .commit_step(ctx, frame, record.clone(), extras)
            .await?;
        if let Err(e) = ctx.schedule(directive).await {
            record.extra.remove("resumeToken");
            let mut error = StepError::new("schedule_failed", e.to_string(), Phase::Execute);
            error.retryable = false;
            return fail(record, error);
        }
        ctx.log(
            LogLevel::Info,
            &format!(
                "wait {} suspends the run until {} (token {token})",
                step.id,
                iso8601_from_ms(at_ms)
            ),
            None,
        );
        Ok(StepEnd::Suspended(Suspension {
            token,
            step_id: step.id.clone(),
        }))
    }

    /// CALL-1…3: `@w6w/call` `call` through the host's one bounded seam.
    pub(crate) async fn call<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        frame: &Frame,
        i: usize,
        scope: &RunScope,
    ) -> Result<StepExecution, EngineError> {
        let step = &self.workflow.steps[i];
        let resolved = self.compiled[i]
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| c.resolve(scope, ResolveMode::Run));
        let (record, params) = match self
            .start_resolved(ctx, journal, frame, i, resolved, None)
            .await?
        {
            Ok(started) => started,
            Err(failed) => return Ok(failed),
        };
        if step.action() != Some("call") {
            let mut e = StepError::new(
                "unknown_action",
                format!(
                    "@w6w/call has one action, \"call\", not {:?}",
                    step.action().unwrap_or("")
                ),
                Phase::Resolution,
            );
            e.retryable = false;
            return Ok(finish_failed(ctx, record, e, None));
        }
        let target = match params.get("target") {
            Some(t @ Value::Object(m))
                if matches!(
                    m.get("kind").and_then(Value::as_str),
                    Some("workflow" | "function")
                ) =>
            {
                t.clone()
            }
            other => {
                // Name the shape, never the resolved value (SEC-1).
                let e = param_invalid(format!(
                    "call target must be {{\"kind\": \"workflow\" | \"function\", …}}, got {}",
                    other.map_or("nothing", crate::expr::json_type_name)
                ));
                return Ok(finish_failed(ctx, record, e, None));
            }
        };
        let wait = match params.get("wait") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                let e = param_invalid(format!(
                    "call wait must be a boolean, got {}",
                    crate::expr::json_type_name(other)
                ));
                return Ok(finish_failed(ctx, record, e, None));
            }
        };
        let input = params
            .get("input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let depth = rc.call_depth.saturating_add(1);
        if depth > CALL_DEPTH_MAX {
            // CALL-2: refused before dispatch; nothing runs, nothing is enqueued.
            let mut e = StepError::new(
                "call_depth_exceeded",
                format!("call depth {depth} exceeds the bound of {CALL_DEPTH_MAX}"),
                Phase::Resolution,
            );
            e.retryable = false;
            return Ok(finish_failed(ctx, record, e, None));
        }
        if let Some(recorded) = &record.input {
            // SEC-1: the host records the secret-derived parts of target / input redacted.
            declare_secret_derived(ctx, &Value::Object(params.clone()), recorded);
        }
        // RETRY-6 / CALL-3: one dispatch, no retry loop, no meta.
        Ok(
            match ctx.invoke_callable(&target, input, wait, depth).await {
                Ok(out) => Self::succeed(ctx, record, out),
                Err(mut e) => {
                    e.retryable = false;
                    e.step_id = None;
                    finish_failed(ctx, record, e, None)
                }
            },
        )
    }
}

/// SEC-1: declare to the host every value of `params` that the recorded (redacted) input
/// shows as `"[redacted]"` — exactly the secret-derived parts, never their neighbours.
fn declare_secret_derived<C: WorkflowContext>(ctx: &C, params: &Value, recorded: &Value) {
    match (params, recorded) {
        (Value::Object(p), Value::Object(r)) => {
            for (k, v) in p {
                if let Some(rv) = r.get(k) {
                    declare_secret_derived(ctx, v, rv);
                }
            }
        }
        (Value::Array(p), Value::Array(r)) => {
            for (v, rv) in p.iter().zip(r) {
                declare_secret_derived(ctx, v, rv);
            }
        }
        (v, Value::String(r)) if r == crate::expr::REDACTED && v != recorded => {
            ctx.secret_derived(v);
        }
        _ => {}
    }
}

/// CTRL-2: `{matched}`; an object condition cannot be coerced (it is an expression that
/// was never evaluated, or a record mistaken for a flag) and is `param_invalid`.
fn if_output(params: &Map<String, Value>) -> Result<Value, StepError> {
    match params.get("condition") {
        None => Err(param_invalid("if needs a condition")),
        Some(Value::Object(_)) => Err(param_invalid(
            "if condition resolved to an object, which has no truth value here; use a boolean, number, string, null or array",
        )),
        Some(v) => Ok(json!({"matched": truthy(v)})),
    }
}

/// CTRL-8: the one join function behind `aggregate` and `merge`.
fn join(
    mode: PlanValue<JoinMode>,
    params: &Map<String, Value>,
    inbound: &[(String, Value)],
    merge: bool,
) -> Result<Value, StepError> {
    let mode = match mode {
        PlanValue::Known(m) => m,
        PlanValue::AtRunTime => match params.get("mode").and_then(Value::as_str) {
            None | Some("array") => JoinMode::Array,
            Some("object") => JoinMode::Object,
            Some(other) => {
                return Err(param_invalid(format!(
                    "mode must be \"array\" or \"object\", got {other:?}"
                )));
            }
        },
    };
    let entries = if merge {
        match params.get("entries") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.is_empty() => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                return Err(param_invalid(format!(
                    "merge entries must be an array, got {other}"
                )));
            }
        }
    } else {
        None
    };
    let Some(entries) = entries else {
        return Ok(match mode {
            JoinMode::Array => {
                json!({"result": inbound.iter().map(|(_, v)| v).collect::<Vec<_>>()})
            }
            JoinMode::Object => {
                let mut out = Map::new();
                for (id, v) in inbound {
                    let Value::Object(m) = v else {
                        return Err(param_invalid(format!(
                            "object mode merges objects; the output of {id:?} is {v}"
                        )));
                    };
                    // The later edge wins on a key collision.
                    out.extend(m.clone());
                }
                json!({"result": out})
            }
        });
    };
    let mut values = Vec::new();
    let mut object = Map::new();
    for (k, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return Err(param_invalid(format!(
                "merge entries[{k}] must be an object"
            )));
        };
        // An entry with no value (JSON's undefined) is dropped.
        let Some(value) = e.get("value") else {
            continue;
        };
        match mode {
            JoinMode::Array => values.push(value.clone()),
            JoinMode::Object => {
                let key = match e.get("key") {
                    Some(Value::String(s)) if !s.is_empty() => s,
                    _ => {
                        return Err(param_invalid(format!(
                            "merge entries[{k}].key must be a non-empty string in object mode"
                        )));
                    }
                };
                if object.insert(key.clone(), value.clone()).is_some() {
                    return Err(param_invalid(format!(
                        "merge entries[{k}].key {key:?} is a duplicate"
                    )));
                }
            }
        }
    }
    Ok(match mode {
        JoinMode::Array => json!({"result": values}),
        JoinMode::Object => json!({"result": object}),
    })
}
