//! One step's life: resolve → start checkpoint → invoke → meta → classify → retry.
//!
//! Owns: everything between "this step may run" and "this step is terminal". Invariant:
//! returns the terminal record *without* checkpointing it — the caller writes the end
//! checkpoint together with its routing consequences (stepErrors) in one patch. It reads
//! the scope but never writes it, so issue 5's strands can run several at once.

use serde_json::Value;

use super::journal::{Extras, Frame, Journal};
use super::meta::normalize_meta;
use super::retry::{retry_allowed_by, wait_before_attempt_ms};
use super::{EngineError, StepKind};
use crate::expr::{CompiledWith, ResolveError, ResolveMode, RunScope};
use crate::host::{InvokeRequest, LogLevel, OnExecuted, WorkflowContext, iso8601_from_ms};
use crate::model::{Phase, Step, StepError, StepExecution, StepStatus};

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
