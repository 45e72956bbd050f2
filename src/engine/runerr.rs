//! The run-level handler (WF 2026-08-21, RUNERR-1…7): retry → reroute → onError.
//!
//! Owns: what happens once a whole pass over the graph has failed. Invariant: read only
//! by [`Engine::run`], [`Engine::replay`] and a `wait`'s token resume — the run's choke
//! points (D-72). A crash-resumed execution runs no retry (RUNERR-4: the host's redelivery
//! and the retry ladder would multiply) but its final failure still meets reroute and
//! onError ([`Engine::handle_failure`], D-110). A queued or canceled run is not a failure
//! (RUNERR-7).

use serde_json::{Value, json};

use super::journal::Journal;
use super::replay::Carried;
use super::retry::wait_before_attempt_ms;
use super::run::{Engine, GraphOutcome};
use super::walk::RunCtx;
use super::{EngineError, RunResult};
use crate::expr::{CompiledWith, ResolveMode, RunScope};
use crate::host::{CallableRequest, LogLevel, WorkflowContext};
use crate::model::{CallableOnError, ErrorReroute, PatchField, Phase, RunStatus, StepError};

impl Engine<'_> {
    /// Drive the graph up to `retry.maxAttempts` times (RUNERR-2), then handle a final
    /// failure. `carried` are records a replay reuses on every pass.
    pub(crate) async fn ladder<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: Journal,
        carried: &Carried,
        call_depth: u32,
    ) -> Result<RunResult, EngineError> {
        let first = RunCtx {
            call_depth,
            resume_token: None,
        };
        self.ladder_from(ctx, journal, carried, first, 1).await
    }

    /// The ladder from run attempt `attempt`, whose first pass runs under `first` — a
    /// fresh start, or a run a fired `wait` resumed (D-72): that resume is the run going
    /// on, not a host redelivering a crashed execution, so the authored policy still holds
    /// for the RUN, counting the attempts already made (`runAttempt`).
    pub(crate) async fn ladder_from<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: Journal,
        carried: &Carried,
        first: RunCtx,
        mut attempt: u64,
    ) -> Result<RunResult, EngineError> {
        let policy = self.workflow.retry_policy();
        let max_attempts = policy.map_or(1, |p| p.max_attempts());
        let call_depth = first.call_depth;
        let mut first = Some(first);
        loop {
            let outcome = match first.take() {
                Some(rc) => self.drive_with(ctx, &journal, &rc).await?,
                None => self.drive(ctx, &journal, call_depth).await?,
            };
            let GraphOutcome::Failed(error) = outcome else {
                return self.finalize(ctx, journal, outcome).await;
            };
            if attempt >= max_attempts || attempt >= u64::from(u32::MAX) {
                return self.handle_failure(ctx, journal, error, call_depth).await;
            }
            attempt += 1;
            let wait_ms = wait_before_attempt_ms(policy, attempt);
            ctx.log(
                LogLevel::Info,
                &format!(
                    "run failed at step {} ({}); run-level retry: attempt {attempt} of {max_attempts} after {wait_ms} ms",
                    error.step_id.as_deref().unwrap_or("?"),
                    error.code
                ),
                None,
            );
            let attempt32 = u32::try_from(attempt).unwrap_or(u32::MAX);
            ctx.wait_before_retry(None, attempt32, wait_ms).await;
            if ctx.aborted() {
                return self.finalize(ctx, journal, GraphOutcome::Canceled).await;
            }
            // RUNERR-2: the whole graph again, from the top — one `running` transition per
            // attempt. The seed (variables) is not touched (RUNERR-3).
            let mut patch = journal.patch();
            patch.reset_steps = true;
            patch.status = Some(RunStatus::Running);
            patch.steps = carried.records.clone();
            patch.extra.insert("runAttempt".into(), json!(attempt));
            journal.commit(ctx, patch).await?;
        }
    }

    /// Retry is spent: reroute once if declared, else onError (companion §4.4 order).
    pub(crate) async fn handle_failure<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: Journal,
        error: StepError,
        call_depth: u32,
    ) -> Result<RunResult, EngineError> {
        let mut patch = journal.patch();
        if let Some(reroute) = &self.workflow.reroute {
            match self
                .reroute(ctx, &journal, reroute, &error, call_depth)
                .await
            {
                Ok(output) => {
                    // RUNERR-5: handled — succeeded, original error in stepErrors, run
                    // error cleared, in the persisted row too.
                    patch.status = Some(RunStatus::Succeeded);
                    patch.output = Some(output);
                    patch.clear = vec![PatchField::Error];
                    patch.step_errors.push(error);
                }
                Err(reroute_error) => {
                    // RUNERR-6: the handler failed too — the run stays failed, with the
                    // original error; the reroute's own failure is kept beside it.
                    patch.status = Some(RunStatus::Failed);
                    patch.error = Some(error);
                    patch.extra.insert(
                        "rerouteError".into(),
                        serde_json::to_value(&reroute_error).unwrap_or_default(),
                    );
                }
            }
        } else if self.workflow.on_error == Some(CallableOnError::Continue) {
            // RUNERR-5: onError "continue" resolves the run with a null output.
            patch.status = Some(RunStatus::Succeeded);
            patch.output = Some(Value::Null);
            patch.clear = vec![PatchField::Error];
            patch.step_errors.push(error);
        } else {
            // RUNERR-1: the run keeps its failed status.
            patch.status = Some(RunStatus::Failed);
            patch.error = Some(error);
        }
        let status = patch.status.map_or("?", RunStatus::as_str);
        journal.commit(ctx, patch).await?;
        ctx.log(LogLevel::Info, &format!("run ended {status}"), None);
        Ok(RunResult::from_state(journal.into_state()))
    }

    /// RUNERR-6/7: dispatch the reroute once, through the host's callable seam; its
    /// output, or why it failed (its `with` did not resolve, or the handler failed).
    async fn reroute<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        reroute: &ErrorReroute,
        error: &StepError,
        call_depth: u32,
    ) -> Result<Value, StepError> {
        // RUNERR-7: `with` resolves against { inputs, error, trigger }; absent `with`
        // passes the inputs unchanged. No secrets: the reroute pass has none.
        let mut scope = RunScope::new();
        let inputs = self.variables(journal, &RunScope::new().with_secrets(ctx.secrets()));
        scope.inputs = Some(inputs.clone());
        let trigger = journal.extra("trigger");
        scope.trigger = std::sync::Arc::new(trigger.unwrap_or_else(|| json!({"type": "manual"})));
        scope.extra.insert(
            "error".into(),
            serde_json::to_value(error).unwrap_or_default(),
        );
        // SEC-1 (D-124): a run whose own variables are secret-derived passes that on.
        let secret_vars = super::secret_variables(journal);
        super::taint_pointers(&mut scope, "inputs", &secret_vars);
        let input = match &reroute.with {
            None => Ok((inputs, secret_vars)),
            Some(with) => {
                let dialect = super::workflow_dialect(self.workflow).unwrap_or_default();
                CompiledWith::compile_with(with, dialect)
                    .and_then(|c| c.resolve(&scope, ResolveMode::Run))
            }
            .map(|r| (Value::Object(r.params), r.secret_paths))
            .map_err(|e| StepError::new(e.code.as_str(), e.message, Phase::Resolution)),
        };
        ctx.log(
            LogLevel::Info,
            &format!("run failed; dispatching reroute to {}", reroute.target),
            None,
        );
        let dispatched = match input {
            Ok((input, secret_paths)) => {
                for p in &secret_paths {
                    if let Some(v) = input.pointer(p) {
                        ctx.secret_derived(v);
                    }
                }
                // D-120: one reroute per run, so one key: a crash-resumed handler
                // continues the child it started.
                let req = CallableRequest {
                    target: reroute.target.clone(),
                    input,
                    wait: true,
                    depth: call_depth.saturating_add(1),
                    step_id: String::new(),
                    dispatch_id: "reroute".into(),
                    secret_paths,
                };
                ctx.invoke_callable(req).await
            }
            Err(e) => Err(e),
        };
        #[cfg(w6w_mutants)] // RUNERR-6 mutant (mutant build only): failure as success
        let dispatched = match dispatched {
            Err(_) if crate::mutants::active(crate::mutants::Mutant::RerouteFailureAsSuccess) => {
                Ok(serde_json::Value::Null)
            }
            other => other,
        };
        dispatched
    }
}
