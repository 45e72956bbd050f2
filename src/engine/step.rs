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
use super::taint::Needles;
use super::walk::{StepEnd, Walk};
use super::{EngineCode, EngineError, StepKind};
use crate::expr::{ResolveError, ResolveMode, Resolved, RunScope};
use crate::host::{InvokeRequest, LogLevel, OnExecuted, WorkflowContext, iso8601_from_ms};
use crate::json::JsonText;
use crate::limits::MAX_NESTING_DEPTH;
use crate::model::{
    OnError, Phase, RetryPolicy, Step, StepError, StepExecution, StepMeta, StepStatus,
};

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
    pub(crate) existing: Option<std::sync::Arc<StepExecution>>,
    /// ERR-4: the step declares an outgoing error edge.
    pub(crate) error_edge: bool,
    /// The output this step succeeded with, as the value its record's text was written
    /// from (D-193): settling publishes it into the scope instead of reading the text back.
    pub(crate) live: std::cell::Cell<Option<Value>>,
    /// SEC-1 (D-274): what an app step was handed as secret-derived, looked for in its
    /// output and error message when its record is sealed.
    pub(crate) needles: std::cell::RefCell<Needles>,
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

    /// The step's `with` block resolved against its scope (see [`Engine::compile`]).
    pub(crate) fn resolve(&self) -> Result<Resolved, ResolveError> {
        match &*self.walk.engine.compile(self.i) {
            Ok(c) => c.resolve(self.scope, ResolveMode::Run),
            Err(e) => Err(e.clone()),
        }
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
        record.output = Some(JsonText::new(&output));
        self.live.set(Some(output));
        record.finished_at = Some(iso8601_from_ms(self.host().now_ms()));
        record
    }

    /// `record` succeeded with the output `text`, now: a control's output written from
    /// its instances' texts (D-195); the scope parses it when read.
    pub(crate) fn succeed_text(&self, mut record: StepExecution, text: JsonText) -> StepExecution {
        record.status = StepStatus::Succeeded;
        record.output = Some(text);
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
                // A step interrupted by a crash is re-run with its recorded attempt — or,
                // when that attempt's failure was already durable (D-111), goes on with
                // the retry it had scheduled.
                let running = self
                    .existing
                    .as_ref()
                    .filter(|r| r.status == StepStatus::Running);
                let first = running.map_or(1, |r| r.attempt.max(1));
                let pending = running.and_then(|r| PendingRetry::of(r));
                StepEnd::Done(self.execute(first, pending).await?)
            }
            // A control's or a call's future is boxed, not held inline: every step's future
            // (and so every walk's, boxed once per foreach iteration or branch) would
            // otherwise be as large as the largest control's.
            StepKind::Call => StepEnd::Done(Box::pin(super::control::call(&self)).await?),
            StepKind::Control => {
                let (end, errors) = Box::pin(super::control::run(&self)).await?;
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
            // RUN-2: step end (with its routing consequence, atomically). The record moves
            // into the checkpoint; the walk settles a copy of what routing and the scope
            // read.
            let view = settle_view(record);
            let committed = std::mem::replace(record, view);
            self.journal()
                .commit_step(self.host(), self.frame(), committed, extras)
                .await?;
        }
        // The value a plain succeeded output was written from is what the scope would
        // read back from its text (nothing sealed, nothing to re-materialise).
        let live = self.live.take();
        Ok(match (end, live) {
            (StepEnd::Done(view), Some(output))
                if view.status == StepStatus::Succeeded
                    && view.output.is_some()
                    && super::sealed::is_plain(&view) =>
            {
                StepEnd::Settled { view, output }
            }
            (end, _) => end,
        })
    }

    /// An app step's `running` record for `attempt`, started now, with its recorded input.
    fn started(&self, attempt: u32, resolved: Option<&Resolved>) -> StepExecution {
        let mut record = StepExecution::new(&self.step.id, StepStatus::Running, attempt);
        record.started_at = Some(iso8601_from_ms(self.host().now_ms()));
        if let Some(r) = resolved {
            // SEC-1: the recorded input is the redacted params. The output is secret-derived
            // wholly only when the host declares it sensitive (D-275); else it is tainted
            // where it holds what the step was handed (D-274).
            record.input = Some(r.redacted_text());
            self.needles.replace(Needles::of(r));
            if self.sensitive_output() {
                record
                    .extra
                    .insert(super::journal::SECRET_DERIVED.into(), Value::Bool(true));
            }
        }
        record
    }

    /// D-275: whether the host declares this app step's action to return sensitive output
    /// (a token-minting action): its output is then secret-derived wholly.
    fn sensitive_output(&self) -> bool {
        let step = self.step;
        let app = step.app().unwrap_or_default();
        let action = step.action().unwrap_or_default();
        self.host().action_sensitive_output(&step.id, app, action)
    }

    /// The last word on a terminal record before it is committed: limits and SEC-1.
    fn seal(&self, record: &mut StepExecution) {
        if record
            .output
            .as_ref()
            .is_some_and(|o| o.nests_deeper_than(MAX_NESTING_DEPTH))
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
            record.error = Some(Box::new(e));
        }
        let host = self.host();
        let secrets = host.secrets();
        let needles = self.needles.take();
        let detector = self.journal().detector(&secrets);
        let sensitive = super::journal::is_secret_derived(record);
        if let Some(e) = &mut record.error {
            // SEC-1: an error message that may quote what the step was handed (a sensitive
            // step: wholly) or does quote it (D-274: there) is redacted before it can reach
            // routing, the run error or stepErrors.
            if sensitive {
                e.message = crate::expr::REDACTED.to_owned();
            } else if let Some(m) = super::taint::redact_message(&e.message, &needles) {
                e.message = m;
            }
        }
        // SEC-1 (D-112): the secrets the output carries become references by name, so the
        // recorded output has none and a resumed run can still read it; the leaves holding
        // other secret material are tainted (D-274); an output recorded with any of those
        // "[redacted]" is sealed with the host's key (D-170).
        super::sealed::seal(record, &secrets, (&needles, detector), || {
            super::sealed::Sealer::of(host, self.journal(), self.frame())
        });
        if super::journal::is_secret_derived(record)
            && self
                .walk
                .engine
                .plan
                .controls
                .control(self.i)
                .map(|c| c.kind)
                == Some(crate::plan::ControlKind::If)
            && let Some(m) = record
                .output
                .as_ref()
                .and_then(|o| o.to_value().get("matched").cloned())
        {
            // D-113: the branch a secret-derived `if` took survives its output's
            // redaction, so a reused record routes as the live one did (the branch is
            // visible anyway in which steps ran).
            record.extra.insert("matched".into(), m);
        }
    }
}

/// The record `extra` keys settling reads (routing, the scope, SEC-1 unsealing); a
/// control's `iterations` / `branches` are not among them.
const SETTLE_EXTRA: [&str; 6] = [
    "matched",
    super::journal::SECRET_DERIVED,
    super::sealed::SEALED_OUTPUT,
    super::sealed::ENCRYPTED_OUTPUT,
    super::sealed::SECRET_REFS,
    super::taint::OUTPUT_TAINT,
];

/// What [`super::walk::Walk::settle`] reads of a terminal record: its status, attempt,
/// output, error, meta and the [`SETTLE_EXTRA`] keys. The checkpointed record keeps the
/// rest (recorded input, timestamps, a control's folded sub-records), so settling copies
/// neither the params a second time nor a foreach's whole `iterations`.
fn settle_view(record: &StepExecution) -> StepExecution {
    StepExecution {
        step_id: record.step_id.clone(),
        status: record.status,
        attempt: record.attempt,
        input: None,
        output: record.output.clone(),
        error: record.error.clone(),
        started_at: None,
        finished_at: None,
        meta: record.meta.clone(),
        extra: record
            .extra
            .iter()
            .filter(|(k, _)| SETTLE_EXTRA.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        blocks: None,
    }
}

/// RUN-2 / RUN-4 (D-111): the record `extra` key that says the attempt recorded in it has
/// failed and the next one is scheduled: `{"attempt": n+1, "at": ISO-8601}`. Written
/// *before* the backoff wait, removed by the retry-attempt checkpoint after it, so a crash
/// during the backoff never re-runs an attempt whose failure the engine recorded.
pub(crate) const NEXT_ATTEMPT: &str = "nextAttempt";

/// A retry a crash interrupted during its backoff (see [`NEXT_ATTEMPT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PendingRetry {
    attempt: u32,
    at_ms: u64,
}

impl PendingRetry {
    /// The pending retry a `running` record carries, if any. A malformed entry (not one
    /// this engine wrote) reads as none: the recorded attempt then simply runs again.
    fn of(record: &StepExecution) -> Option<Self> {
        let next = record.extra.get(NEXT_ATTEMPT)?;
        let attempt = u32::try_from(next.get("attempt")?.as_u64()?).ok()?;
        let at = crate::plan::parse_timestamp_ms(next.get("at")?.as_str()?).ok()?;
        (attempt > record.attempt).then_some(PendingRetry {
            attempt,
            at_ms: u64::try_from(at).unwrap_or(0),
        })
    }

    fn entry(attempt: u32, at_ms: u64) -> Value {
        serde_json::json!({"attempt": attempt, "at": iso8601_from_ms(at_ms)})
    }
}

/// What every attempt of one app step sends and how its failures are retried (built once
/// per step).
struct Invocation<'a> {
    app: String,
    action: String,
    connection: Option<String>,
    resolved: Resolved,
    idempotent: bool,
    policy: Option<&'a RetryPolicy>,
    max_attempts: u64,
}

impl<'a, C: WorkflowContext> StepCtx<'a, C> {
    /// Run an app or internal step to a terminal record, starting at `first_attempt` (1 for
    /// a fresh step; the interrupted attempt's number on resume, see `docs/decisions.md
    /// (Engine and simulator)` RUN-4).
    async fn execute(
        &self,
        first_attempt: u32,
        pending: Option<PendingRetry>,
    ) -> Result<StepExecution, EngineError> {
        let (host, journal) = (self.host(), self.journal());
        // Resolution happens once per step: the scope a step reads is terminal upstream
        // state, so every attempt would resolve the same params. The with block was
        // compiled once per workflow (`Engine::new`); a static problem surfaces here as a
        // resolution failure.
        let resolved = self.resolve();
        let attempt = match pending.filter(|_| resolved.is_ok()) {
            Some(p) => self.finish_backoff(p).await,
            None => first_attempt.max(1),
        };
        let mut record = self.started(attempt, resolved.as_ref().ok());
        // RUN-2: step start (or, after a pending retry, the retry attempt).
        journal
            .commit_step(host, self.frame(), record.clone(), Extras::default())
            .await?;
        let mut inv = match resolved {
            Ok(r) => self.invocation(r),
            Err(e) => {
                // Resolution errors are never retried (companion §3.4).
                let mut error =
                    StepError::new(e.code.as_str(), e.message.clone(), Phase::Resolution);
                error.retryable = false;
                let id = &self.step.id;
                let message = format!("step {id}: resolution failed: {}", e.message);
                host.log(LogLevel::Warn, &message, None);
                return Ok(self.fail(record, error));
            }
        };
        loop {
            let attempt = record.attempt;
            let (result, meta) = self.invoke(&mut inv, attempt).await;
            let mut error = match result {
                Ok(output) => {
                    record.status = StepStatus::Succeeded;
                    record.output = Some(JsonText::new(&output));
                    self.live.set(Some(output));
                    record.meta = meta.map(Box::new);
                    record.finished_at = Some(iso8601_from_ms(host.now_ms()));
                    return Ok(record);
                }
                Err(e) => e,
            };
            // The recorded `retryable` is the engine's classification (WF § StepError).
            error.step_id = None;
            error.retryable =
                self.kind.retries() && retry_allowed_by(inv.policy, &error, inv.idempotent);
            let Some((next, wait_ms)) = self.retry_after(&inv, attempt, &error) else {
                return Ok(finish_failed(host, record, error, meta));
            };
            self.backoff(&record, next, wait_ms).await?;
            record.attempt = next;
            // RUN-2: the retry attempt, after the wait.
            record.started_at = Some(iso8601_from_ms(host.now_ms()));
            journal
                .commit_step(host, self.frame(), record.clone(), Extras::default())
                .await?;
        }
    }

    /// RUN-2 (D-111): make the failed attempt durable with the retry it schedules, then
    /// wait the backoff (RETRY-4/5) on the host's clock — so a crash during the wait
    /// (another strand checkpointing) never re-runs the failed attempt.
    async fn backoff(
        &self,
        record: &StepExecution,
        next: u32,
        wait_ms: u64,
    ) -> Result<(), EngineError> {
        let host = self.host();
        let mut failed = record.clone();
        let at_ms = host.now_ms().saturating_add(wait_ms);
        failed
            .extra
            .insert(NEXT_ATTEMPT.into(), PendingRetry::entry(next, at_ms));
        self.journal()
            .commit_step(host, self.frame(), failed, Extras::default())
            .await?;
        host.wait_before_retry(Some(&self.step.id), next, wait_ms)
            .await;
        Ok(())
    }

    /// D-111 on resume: the recorded attempt already failed — wait what is left of its
    /// backoff on the host's clock; the attempt it scheduled is the one to run.
    async fn finish_backoff(&self, pending: PendingRetry) -> u32 {
        let host = self.host();
        let left = pending.at_ms.saturating_sub(host.now_ms());
        host.wait_before_retry(Some(&self.step.id), pending.attempt, left)
            .await;
        pending.attempt
    }

    fn invocation(&self, resolved: Resolved) -> Invocation<'a> {
        let step = self.step;
        let app = step.app().unwrap_or_default().to_owned();
        let action = step.action().unwrap_or_default().to_owned();
        let connection = step
            .uses
            .as_ref()
            .and_then(|u| u.connection())
            .map(str::to_owned);
        let idempotent = self.host().action_idempotent(&step.id, &app, &action);
        let policy = if self.kind.retries() {
            step.retry_policy()
        } else {
            None
        };
        Invocation {
            app,
            action,
            connection,
            resolved,
            idempotent,
            policy,
            max_attempts: policy.map_or(1, |p| p.max_attempts()),
        }
    }

    /// One attempt through the host's `invoke`: its result and (META-1) its meta.
    async fn invoke(
        &self,
        inv: &mut Invocation<'_>,
        attempt: u32,
    ) -> (Result<Value, StepError>, Option<StepMeta>) {
        // META-3: a fresh callback per attempt, so a superseded attempt's report can
        // never land on a later one.
        let on_executed = OnExecuted::new();
        // The last attempt the policy allows takes what it sends instead of copying it:
        // nothing reads the invocation after it (`retry_after` refuses a next attempt).
        let last = u64::from(attempt) >= inv.max_attempts;
        fn give<T: Clone + Default>(v: &mut T, last: bool) -> T {
            if last { std::mem::take(v) } else { v.clone() }
        }
        let request = InvokeRequest {
            app: give(&mut inv.app, last),
            action: give(&mut inv.action, last),
            connection: give(&mut inv.connection, last),
            params: give(&mut inv.resolved.params, last),
            step_id: String::from(self.step.id.as_str()),
            attempt,
            on_executed: on_executed.clone(),
            secret_paths: give(&mut inv.resolved.secret_paths, last),
        };
        let result = self.host().invoke(request).await;
        // META-1: meta only from onExecuted's first report, never from the result.
        let meta = if self.kind.carries_meta() {
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
        (result, meta)
    }

    /// RETRY-3…5: the next attempt and the wait before it, or `None` when the failed
    /// `attempt` is the last (not retryable, or attempts exhausted). Logs either way.
    fn retry_after(
        &self,
        inv: &Invocation<'_>,
        attempt: u32,
        error: &StepError,
    ) -> Option<(u32, u64)> {
        let more = u64::from(attempt) < inv.max_attempts && attempt < u32::MAX;
        let (id, phase, code) = (&self.step.id, error.phase.as_str(), &error.code);
        if !(error.retryable && more) {
            let why = if !error.retryable {
                "not retryable"
            } else {
                "attempts exhausted"
            };
            self.host().log(
                LogLevel::Warn,
                &format!("step {id} attempt {attempt} failed ({phase} {code}): {why}"),
                None,
            );
            return None;
        }
        let next = attempt + 1;
        let wait_ms = wait_before_attempt_ms(inv.policy, u64::from(next));
        let max_attempts = inv.max_attempts;
        self.host().log(
            LogLevel::Info,
            &format!(
                "step {id} attempt {attempt} failed ({phase} {code}): retrying as attempt {next} of {max_attempts} after {wait_ms} ms"
            ),
            None,
        );
        Some((next, wait_ms))
    }
}

pub(crate) fn finish_failed<C: WorkflowContext>(
    ctx: &C,
    mut record: StepExecution,
    error: StepError,
    meta: Option<StepMeta>,
) -> StepExecution {
    record.status = StepStatus::Failed;
    record.error = Some(Box::new(error));
    // META-4: a failed step MAY record its last attempt's meta (never published to scope).
    record.meta = meta.map(Box::new);
    record.finished_at = Some(iso8601_from_ms(ctx.now_ms()));
    record
}
