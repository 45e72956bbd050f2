//! One step's life: resolve → start checkpoint → invoke → meta → classify → retry.
//!
//! Owns: [`StepCtx`], the context of one step of a walk, and everything between "this step
//! may run" and "this step is terminal": [`StepCtx::run`] dispatches by kind (an app step
//! here, a control or call in [`super::control`]) and commits the end. Invariant: a kind's
//! runner returns the terminal record *without* checkpointing it — [`StepCtx::run`] writes
//! the end checkpoint together with its routing consequences (stepErrors) in one patch.
//! A step reads the scope but never writes it, so strands can run several at once.

use serde_json::Value;

use super::journal::{Extras, Frame, Journal};
use super::meta::normalize_meta;
use super::retry::{retry_allowed_by, wait_before_attempt_ms};
use super::walk::{StepEnd, Walk};
use super::{EngineCode, EngineError, StepKind};
use crate::expr::{CompiledWith, ResolveError, ResolveMode, Resolved, RunScope};
use crate::host::{InvokeRequest, LogLevel, OnExecuted, WorkflowContext, iso8601_from_ms};
use crate::limits::{MAX_NESTING_DEPTH, nests_deeper_than};
use crate::model::{OnError, Phase, Step, StepError, StepExecution, StepStatus};

/// One step of a walk: the walk's context plus what is particular to the step.
pub(crate) struct StepCtx<'a, C> {
    pub(crate) walk: Walk<'a, C>,
    /// The step's index in `Workflow.steps`.
    pub(crate) i: usize,
    pub(crate) step: &'a Step,
    pub(crate) kind: StepKind,
    /// The scope the step resolves against (read-only).
    pub(crate) scope: &'a RunScope,
    /// CTRL-8: a join's inbound outputs (empty for any other step).
    pub(crate) inbound: Vec<(String, Value)>,
    /// The step's record already in the state (a crash or a `wait` interrupted it).
    pub(crate) existing: Option<StepExecution>,
    /// ERR-4: the step declares an outgoing error edge.
    pub(crate) error_edge: bool,
}

impl<'a, C: WorkflowContext> StepCtx<'a, C> {
    pub(crate) fn host(&self) -> &'a C {
        self.walk.host
    }

    pub(crate) fn journal(&self) -> &'a Journal {
        self.walk.journal
    }

    pub(crate) fn frame(&self) -> &'a Frame {
        self.walk.frame
    }

    /// The step's `with` block resolved against its scope (compiled once per workflow).
    pub(crate) fn resolve(&self) -> Result<Resolved, ResolveError> {
        self.walk.engine.compiled[self.i]
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| c.resolve(self.scope, ResolveMode::Run))
    }

    /// A fresh `running` record, started now.
    pub(crate) fn start_record(&self) -> StepExecution {
        let mut record = StepExecution::new(&self.step.id, StepStatus::Running, 1);
        record.started_at = Some(iso8601_from_ms(self.host().now_ms()));
        record
    }

    /// `record` succeeded with `output`, now.
    pub(crate) fn succeed(&self, mut record: StepExecution, output: Value) -> StepExecution {
        record.status = StepStatus::Succeeded;
        record.output = Some(output);
        record.finished_at = Some(iso8601_from_ms(self.host().now_ms()));
        record
    }

    /// `record` failed with `error`, now (no meta).
    pub(crate) fn fail(&self, record: StepExecution, error: StepError) -> StepExecution {
        finish_failed(self.host(), record, error, None)
    }

    /// Run the step (not skipped, not already terminal) and commit its end.
    pub(crate) async fn run(self) -> Result<StepEnd, EngineError> {
        let mut extras = Extras::default();
        let mut end = match self.kind {
            StepKind::App | StepKind::Internal => {
                // A step interrupted by a crash is re-run with its recorded attempt.
                let first = self
                    .existing
                    .as_ref()
                    .filter(|r| r.status == StepStatus::Running)
                    .map_or(1, |r| r.attempt.max(1));
                StepEnd::Done(
                    execute(
                        self.host(),
                        self.journal(),
                        self.frame(),
                        self.step,
                        self.kind,
                        &self.walk.engine.compiled[self.i],
                        self.scope,
                        first,
                    )
                    .await?,
                )
            }
            StepKind::Call => StepEnd::Done(super::control::call(&self).await?),
            StepKind::Control => {
                let (end, errors) = super::control::run(&self).await?;
                extras.step_errors = errors;
                extras
                    .clear_prefixes
                    .push(self.frame().child_prefix(&self.step.id));
                end
            }
        };
        if let StepEnd::Done(record) = &mut end {
            self.seal(record);
            if let Some(err) = &record.error
                && !self.error_edge
                && self.step.on_error() == OnError::ContinueRecord
            {
                // ERR-3: the swallowed failure stays observable.
                extras.step_errors.push(err.clone().for_step(&self.step.id));
            }
            // RUN-2: step end (with its routing consequence, atomically).
            self.journal()
                .commit_step(self.host(), self.frame(), record.clone(), extras)
                .await?;
        }
        Ok(end)
    }

    /// The last word on a terminal record before it is committed: limits and SEC-1.
    fn seal(&self, record: &mut StepExecution) {
        if record
            .output
            .as_ref()
            .is_some_and(|o| nests_deeper_than(o, MAX_NESTING_DEPTH))
        {
            // Issue 12 item 5: an output the store could not read back fails its step,
            // never the store (a run that cannot be resumed).
            record.status = StepStatus::Failed;
            record.output = None;
            let mut e = StepError::new(
                EngineCode::LimitExceeded,
                format!("the step's output nests deeper than {MAX_NESTING_DEPTH} levels"),
                Phase::Execute,
            );
            e.retryable = false;
            record.error = Some(e);
        }
        if super::journal::is_secret_derived(record)
            && let Some(e) = &mut record.error
        {
            // SEC-1: a secret-derived step's error message may quote what it was given;
            // it is redacted before it can reach routing, the run error or stepErrors.
            e.message = crate::expr::REDACTED.to_owned();
        }
    }
}

/// Run `step` to a terminal record, starting at `first_attempt` (1 for a fresh step; the
/// interrupted attempt's number on resume, see `docs/decisions.md (Engine and simulator)` RUN-4).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute<C: WorkflowContext>(
    ctx: &C,
    journal: &Journal,
    frame: &Frame,
    step: &Step,
    kind: StepKind,
    compiled: &Result<CompiledWith, ResolveError>,
    scope: &RunScope,
    first_attempt: u32,
) -> Result<StepExecution, EngineError> {
    // Resolution happens once per step: the scope a step reads is terminal upstream state,
    // so every attempt would resolve the same params. The with block was compiled once
    // per workflow (`Engine::new`); a static problem surfaces here as a resolution failure.
    let resolved = compiled
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|c| c.resolve(scope, ResolveMode::Run));

    let mut record = StepExecution::new(&step.id, StepStatus::Running, first_attempt.max(1));
    record.started_at = Some(iso8601_from_ms(ctx.now_ms()));
    if let Ok(r) = &resolved {
        // SEC-1: the recorded input is the redacted params.
        record.input = Some(Value::Object(r.redacted()));
        super::journal::mark_secret_derived(&mut record, r);
    }
    // RUN-2: step start.
    journal
        .commit_step(ctx, frame, record.clone(), Extras::default())
        .await?;

    let resolved = match resolved {
        Ok(r) => r,
        Err(e) => {
            // Resolution errors are never retried (companion §3.4).
            let mut error = StepError::new(e.code.as_str(), e.message.clone(), Phase::Resolution);
            error.retryable = false;
            ctx.log(
                LogLevel::Warn,
                &format!("step {}: resolution failed: {}", step.id, e.message),
                None,
            );
            return Ok(finish_failed(ctx, record, error, None));
        }
    };

    let app = step.app().unwrap_or_default().to_owned();
    let action = step.action().unwrap_or_default().to_owned();
    let connection = step
        .uses
        .as_ref()
        .and_then(|u| u.connection())
        .map(str::to_owned);
    let idempotent = ctx.action_idempotent(&step.id, &app, &action);
    let policy = if kind.retries() {
        step.retry_policy()
    } else {
        None
    };
    let max_attempts = policy.map_or(1, |p| p.max_attempts());

    loop {
        let attempt = record.attempt;
        // META-3: a fresh callback per attempt, so a superseded attempt's report can
        // never land on a later one.
        let on_executed = OnExecuted::new();
        let request = InvokeRequest {
            app: app.clone(),
            action: action.clone(),
            connection: connection.clone(),
            params: resolved.params.clone(),
            step_id: step.id.clone(),
            attempt,
            on_executed: on_executed.clone(),
            secret_paths: resolved.secret_paths.clone(),
        };
        let result = ctx.invoke(request).await;
        // META-1: meta only from onExecuted's first report, never from the result.
        let meta = if kind.carries_meta() {
            on_executed
                .first_report()
                .and_then(|raw| normalize_meta(&raw))
        } else {
            None
        };
        #[cfg(w6w_mutants)] // META-1 mutant (mutant build only): meta from the result
        let meta = match &result {
            Ok(v) if crate::mutants::active(crate::mutants::Mutant::MetaFromResult) => {
                v.get("meta").and_then(normalize_meta).or(meta)
            }
            _ => meta,
        };
        let mut error = match result {
            Ok(output) => {
                record.status = StepStatus::Succeeded;
                record.output = Some(output);
                record.meta = meta;
                record.finished_at = Some(iso8601_from_ms(ctx.now_ms()));
                return Ok(record);
            }
            Err(e) => e,
        };
        // The recorded `retryable` is the engine's classification (WF § StepError).
        error.step_id = None;
        error.retryable = kind.retries() && retry_allowed_by(policy, &error, idempotent);
        let more = u64::from(attempt) < max_attempts && attempt < u32::MAX;
        if !(error.retryable && more) {
            let why = if !error.retryable {
                "not retryable"
            } else {
                "attempts exhausted"
            };
            ctx.log(
                LogLevel::Warn,
                &format!(
                    "step {} attempt {attempt} failed ({} {}): {why}",
                    step.id,
                    error.phase.as_str(),
                    error.code
                ),
                None,
            );
            return Ok(finish_failed(ctx, record, error, meta));
        }
        let next = attempt + 1;
        let wait_ms = wait_before_attempt_ms(policy, u64::from(next));
        ctx.log(
            LogLevel::Info,
            &format!(
                "step {} attempt {attempt} failed ({} {}): retrying as attempt {next} of {max_attempts} after {wait_ms} ms",
                step.id,
                error.phase.as_str(),
                error.code
            ),
            None,
        );
        // RETRY-4/5: wait on the host's clock, then record the retry attempt (RUN-2).
        ctx.wait_before_retry(Some(&step.id), next, wait_ms).await;
        record.attempt = next;
        record.started_at = Some(iso8601_from_ms(ctx.now_ms()));
        journal
            .commit_step(ctx, frame, record.clone(), Extras::default())
            .await?;
    }
}

pub(crate) fn finish_failed<C: WorkflowContext>(
    ctx: &C,
    mut record: StepExecution,
    error: StepError,
    meta: Option<crate::model::StepMeta>,
) -> StepExecution {
    record.status = StepStatus::Failed;
    record.error = Some(error);
    // META-4: a failed step MAY record its last attempt's meta (never published to scope).
    record.meta = meta;
    record.finished_at = Some(iso8601_from_ms(ctx.now_ms()));
    record
}
