//! Run and resume: the sequential plan walk (RUN-1…9, ERR-*).
//!
//! Owns: the [`Engine`] façade, the walk over `plan.order` ([`Engine::drive`]) and
//! finalisation. Invariant: the walk treats a terminal record already in the state exactly
//! like a step it just finished — same routing, same scope publication, no invocation and
//! no checkpoint — so run, resume (RUN-4) and replay (REPLAY-1) are one loop over
//! different starting states.

use serde_json::{Value, json};

use super::journal::Journal;
use super::routing::{Routed, SkipSet, has_error_edge};
use super::{EngineError, RunResult, RunSeed, StepKind, step};
use crate::expr::{CompiledWith, Dialect, ResolveError, RunScope};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{
    OnError, RunState, RunStatus, StepError, StepExecution, StepStatus, ValidationCode,
    ValidationError, Workflow,
};
use crate::plan::Plan;

/// How one pass over the graph ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GraphOutcome {
    Succeeded,
    /// ERR-12: a failure reached a step with neither an error edge nor a continuing onError.
    Failed(StepError),
    /// RUN-7: the host's signal was raised between steps.
    Canceled,
}

/// The engine for one workflow: planned once, then any number of runs / resumes / replays.
#[derive(Debug, Clone)]
pub struct Engine<'w> {
    pub(crate) workflow: &'w Workflow,
    pub(crate) plan: Plan,
    pub(crate) kinds: Vec<StepKind>,
    /// Each step's `with` block, compiled once per workflow (issue 3 "compile once"): a
    /// static problem (unknown operator, bad `=` payload) is kept and fails that step at
    /// run time with phase `resolution`, exactly where an author would look for it.
    pub(crate) compiled: Vec<Result<CompiledWith, ResolveError>>,
}

/// The workflow-level extension key that opts a workflow into the extended JSONLogic
/// dialect (`docs/decisions.md` D-6). Absent means the normative @w6w/expr dialect.
pub const DIALECT_KEY: &str = "x-w6w-dialect";

/// The dialect a workflow asked for, or a validation problem for a value we do not know.
pub fn workflow_dialect(workflow: &Workflow) -> Result<Dialect, ValidationError> {
    match workflow.extra.get(DIALECT_KEY) {
        None => Ok(Dialect::W6w),
        Some(Value::String(s)) if s == "w6w" => Ok(Dialect::W6w),
        Some(Value::String(s)) if s == "extended" => Ok(Dialect::Extended),
        Some(other) => Err(ValidationError::new(
            ValidationCode::InvalidValue,
            format!("/{DIALECT_KEY}"),
            format!("{DIALECT_KEY} must be \"w6w\" (the default) or \"extended\", not {other}"),
        )),
    }
}

impl<'w> Engine<'w> {
    /// Plan the workflow and check each step is runnable by this engine.
    pub fn new(workflow: &'w Workflow) -> Result<Self, EngineError> {
        let plan = crate::plan::plan(workflow).map_err(EngineError::InvalidWorkflow)?;
        let mut problems = Vec::new();
        let mut kinds = Vec::with_capacity(workflow.steps.len());
        for (i, step) in workflow.steps.iter().enumerate() {
            let (Some(app), Some(_)) = (step.app(), step.action()) else {
                problems.push(ValidationError::new(
                    ValidationCode::MissingField,
                    format!("/steps/{i}/uses"),
                    format!(
                        "step {:?} is not runnable: uses.app and uses.action are required",
                        step.id
                    ),
                ));
                kinds.push(StepKind::App);
                continue;
            };
            kinds.push(StepKind::of_app(app));
        }
        if workflow.steps.is_empty() {
            problems.push(ValidationError::new(
                ValidationCode::NoSteps,
                "/steps",
                "a runnable workflow has at least one step",
            ));
        }
        let dialect = workflow_dialect(workflow).unwrap_or_else(|e| {
            problems.push(e);
            Dialect::W6w
        });
        if !problems.is_empty() {
            return Err(EngineError::InvalidWorkflow(problems));
        }
        let empty = serde_json::Map::new();
        let compiled = workflow
            .steps
            .iter()
            .map(|s| CompiledWith::compile_with(s.with.as_ref().unwrap_or(&empty), dialect))
            .collect();
        Ok(Engine {
            workflow,
            plan,
            kinds,
            compiled,
        })
    }

    /// The deterministic plan order, as step ids.
    pub fn order(&self) -> Vec<&'w str> {
        self.plan.ids(self.workflow)
    }

    /// Refuse step kinds this engine does not interpret yet (issue 5: controls, call).
    fn check_supported(&self) -> Result<(), EngineError> {
        for (i, kind) in self.kinds.iter().enumerate() {
            let what = match kind {
                StepKind::Control => "@w6w/control steps",
                StepKind::Call => "@w6w/call steps",
                StepKind::App | StepKind::Internal => continue,
            };
            return Err(EngineError::UnsupportedStep {
                step_id: self.workflow.steps[i].id.clone(),
                message: format!("{what} are not interpreted by this engine version"),
            });
        }
        Ok(())
    }

    /// Start a run: seed variables once (MODEL-7, RUNERR-3), checkpoint `running`, walk the
    /// plan, and apply the run-level ladder (RUNERR-*) if the graph fails.
    pub async fn run<C: WorkflowContext>(
        &self,
        seed: RunSeed,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        self.check_supported()?;
        let variables = super::vars::seed_variables(self.workflow, &seed.variables)?;
        let journal = Journal::new(RunState::new(&seed.run_id, &self.workflow.id));
        let mut start = journal.patch();
        start.workflow_id = Some(self.workflow.id.clone());
        start.status = Some(RunStatus::Running);
        start.variables = Some(variables);
        start.extra.insert("trigger".into(), seed.trigger.clone());
        start.extra.insert("runAttempt".into(), json!(1));
        ctx.log(
            LogLevel::Info,
            &format!("run {} of {} started", seed.run_id, self.workflow.id),
            None,
        );
        journal.commit(ctx, start).await?;
        self.ladder(
            ctx,
            journal,
            &super::replay::Carried::default(),
            seed.call_depth,
        )
        .await
    }

    /// Continue a run after a crash from its last durable state (RUN-3, RUN-4). Terminal
    /// steps are not re-invoked; a step recorded `running` is re-run with the same attempt
    /// number. The authored run-level ladder never runs here (RUNERR-4).
    pub async fn resume<C: WorkflowContext>(
        &self,
        run_id: &str,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        self.check_supported()?;
        let state = ctx
            .load(run_id)
            .await?
            .ok_or_else(|| EngineError::RunNotFound(run_id.to_owned()))?;
        if state.workflow_id != self.workflow.id {
            return Err(EngineError::NotResumable {
                run_id: run_id.to_owned(),
                action: "resumed",
                message: format!(
                    "it belongs to workflow {:?}, not {:?}",
                    state.workflow_id, self.workflow.id
                ),
            });
        }
        match state.status {
            // Nothing left to do: resuming a finished run is idempotent.
            s if s.is_terminal() => return Ok(RunResult::from_state(state)),
            RunStatus::Queued if state.steps.is_empty() && state.variables.is_empty() => {
                return Err(EngineError::NotResumable {
                    run_id: run_id.to_owned(),
                    action: "resumed",
                    message: "it never started".into(),
                });
            }
            _ => {}
        }
        ctx.log(
            LogLevel::Info,
            &format!("run {run_id} resumed from its last checkpoint"),
            None,
        );
        let journal = Journal::new(state);
        let outcome = self.drive(ctx, &journal).await?;
        self.finalize(ctx, journal, outcome).await
    }

    /// One pass over the plan (the sequential path of FAN-1).
    pub(crate) async fn drive<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
    ) -> Result<GraphOutcome, EngineError> {
        let mut scope = self.scope(ctx, journal);
        let mut skips = SkipSet::default();
        for &i in &self.plan.order {
            let step = &self.workflow.steps[i];
            let kind = self.kinds[i];
            let record = match journal.step(&step.id) {
                // RUN-4 / REPLAY-1: a terminal record is reused, never re-invoked.
                Some(r) if r.status.is_terminal() => r,
                existing => {
                    // RUN-7: the signal is polled between steps.
                    if ctx.aborted() {
                        ctx.log(
                            LogLevel::Warn,
                            &format!("run canceled before step {}", step.id),
                            None,
                        );
                        return Ok(GraphOutcome::Canceled);
                    }
                    if skips.step_skipped(&self.plan, i) {
                        // ERR-6: every inbound edge is skipped.
                        let record = StepExecution::new(&step.id, StepStatus::Skipped, 0);
                        journal
                            .commit(ctx, journal.step_patch(record.clone()))
                            .await?;
                        record
                    } else {
                        // A step interrupted by a crash is re-run with its recorded attempt.
                        let first = existing
                            .filter(|r| r.status == StepStatus::Running)
                            .map_or(1, |r| r.attempt.max(1));
                        let record = step::execute(
                            ctx,
                            journal,
                            step,
                            kind,
                            &self.compiled[i],
                            &scope,
                            first,
                        )
                        .await?;
                        let mut end = journal.step_patch(record.clone());
                        if let Some(err) = &record.error
                            && !has_error_edge(&self.plan, i)
                            && step.on_error() == OnError::ContinueRecord
                        {
                            // ERR-3: the swallowed failure stays observable.
                            end.step_errors.push(err.clone().for_step(&step.id));
                        }
                        // RUN-2: step end (with its routing consequence, atomically).
                        journal.commit(ctx, end).await?;
                        record
                    }
                }
            };
            match record.status {
                StepStatus::Succeeded => {
                    let meta = if kind.carries_meta() {
                        record
                            .meta
                            .as_ref()
                            .and_then(|m| serde_json::to_value(m).ok())
                    } else {
                        None
                    };
                    // META-4: meta is published beside output for succeeded app steps only.
                    scope.publish_step(
                        &step.id,
                        record.output.clone().unwrap_or(Value::Null),
                        meta,
                    );
                    skips.route(&self.plan, i, Routed::Succeeded);
                }
                StepStatus::Failed => {
                    let error = record.error.clone().unwrap_or_else(|| {
                        StepError::new(
                            "step_failed",
                            "the step failed",
                            crate::model::Phase::Execute,
                        )
                    });
                    if has_error_edge(&self.plan, i) {
                        // ERR-4: the error edge overrides onError.
                        skips.route(&self.plan, i, Routed::FailedToErrorEdges);
                    } else if step.on_error() == OnError::Fail {
                        // ERR-1 / ERR-12.
                        return Ok(GraphOutcome::Failed(error.for_step(&step.id)));
                    } else {
                        // ERR-2 / ERR-3 / ERR-7.
                        skips.route(&self.plan, i, Routed::FailedContinuing);
                    }
                }
                StepStatus::Skipped => skips.route(&self.plan, i, Routed::Skipped),
                // Unreachable by construction (execute returns terminal records); routing
                // nothing is the safe reading of a non-terminal record.
                StepStatus::Pending | StepStatus::Running => {}
            }
        }
        Ok(GraphOutcome::Succeeded)
    }

    /// The scope a pass starts from: vars, trigger, documents and secrets from the state
    /// and the host; `steps` fills in as the walk publishes.
    fn scope<C: WorkflowContext>(&self, ctx: &C, journal: &Journal) -> RunScope {
        let mut scope = RunScope::new().with_secrets(ctx.secrets());
        scope.vars = journal.variables();
        scope.trigger = journal
            .extra("trigger")
            .unwrap_or_else(|| json!({"type": "manual"}));
        scope.documents = ctx.documents();
        scope
    }

    /// RUN-9: the output of the last succeeded step by plan order (`null` when none did).
    pub(crate) fn last_output(&self, state: &RunState) -> Value {
        self.plan
            .order
            .iter()
            .rev()
            .filter_map(|&i| state.steps.get(&self.workflow.steps[i].id))
            .find(|r| r.status == StepStatus::Succeeded)
            .and_then(|r| r.output.clone())
            .unwrap_or(Value::Null)
    }

    /// Write the terminal status for a pass that is not handled by the ladder.
    pub(crate) async fn finalize<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: Journal,
        outcome: GraphOutcome,
    ) -> Result<RunResult, EngineError> {
        let mut patch = journal.patch();
        match outcome {
            GraphOutcome::Succeeded => {
                patch.status = Some(RunStatus::Succeeded);
                patch.output = Some(self.last_output(&journal.snapshot()));
            }
            GraphOutcome::Failed(error) => {
                patch.status = Some(RunStatus::Failed);
                patch.error = Some(error);
            }
            GraphOutcome::Canceled => patch.status = Some(RunStatus::Canceled),
        }
        let status = patch.status.map_or("?", RunStatus::as_str);
        journal.commit(ctx, patch).await?;
        ctx.log(LogLevel::Info, &format!("run ended {status}"), None);
        Ok(RunResult::from_state(journal.into_state()))
    }
}
