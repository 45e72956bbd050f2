//! Run and resume: the sequential plan walk (RUN-1…9, ERR-*).
//!
//! Owns: the [`Engine`] façade, the walk over `plan.order` ([`Engine::drive`]) and
//! finalisation. Invariant: the walk treats a terminal record already in the state exactly
//! like a step it just finished — same routing, same scope publication, no invocation and
//! no checkpoint — so run, resume (RUN-4) and replay (REPLAY-1) are one loop over
//! different starting states.

use std::sync::Arc;

use serde_json::{Value, json};

use super::journal::{Frame, Journal};
use super::walk::{RunCtx, Walk};
use super::{EngineError, RunResult, RunSeed, StepKind};
use crate::expr::{CompiledWith, Dialect, ResolveError, RunScope};
use crate::host::{LogLevel, WorkflowContext};
use crate::json::JsonText;
use crate::model::{RunState, RunStatus, StepStatus, ValidationCode, ValidationError, Workflow};
use crate::plan::{ControlKind, Plan};

pub(crate) use super::walk::GraphOutcome;

/// D-124: the run-level `extra` key listing the JSON Pointers (into `variables`) of the
/// variables a caller handed this run secret-derived.
pub(crate) const SECRET_VARIABLES: &str = "secretVariables";

/// The secret-derived variable pointers recorded for this run (D-124).
pub(crate) fn secret_variables(journal: &Journal) -> Vec<String> {
    journal
        .extra(SECRET_VARIABLES)
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Mark `root` + each JSON Pointer of `pointers` tainted in `scope` (`""`: all of `root`).
pub(crate) fn taint_pointers(scope: &mut RunScope, root: &str, pointers: &[String]) {
    for pointer in pointers {
        let segments: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let mut dotted = vec![root];
        dotted.extend(segments.iter().map(String::as_str));
        scope.taint(&dotted);
    }
}

/// The run `extra` key holding the variables' secret references (D-112).
pub(crate) const VARIABLE_REFS: &str = "variablesSecretRefs";

/// The engine for one workflow: planned once, then any number of runs / resumes / replays.
#[derive(Debug, Clone)]
pub struct Engine<'w> {
    pub(crate) workflow: &'w Workflow,
    pub(crate) plan: Plan,
    pub(crate) kinds: Vec<StepKind>,
    /// The expression dialect the workflow asked for (D-6).
    pub(crate) dialect: Dialect,
    /// Each sub-block step's `with` block, compiled once per workflow (issue 3 "compile
    /// once"); `None` for a main-graph step, compiled by [`Engine::compile`] when it runs
    /// (D-195; boxed, as a long run's steps are mostly main-graph ones). A static problem
    /// (unknown operator, bad `=` payload) fails that step at run time with phase
    /// `resolution`, exactly where an author would look for it.
    pub(crate) compiled: Vec<Option<Box<Result<CompiledWith, ResolveError>>>>,
}

/// Step `i`'s `with` block, compiled. Companion §1.10: a merge entry made of one marker
/// keeps its type (D-71).
fn compile_step(
    workflow: &Workflow,
    plan: &Plan,
    i: usize,
    dialect: Dialect,
) -> Result<CompiledWith, ResolveError> {
    let empty = serde_json::Map::new();
    let with = workflow
        .steps
        .get(i)
        .and_then(|s| s.with.as_ref())
        .unwrap_or(&empty);
    let compiled = CompiledWith::compile_with(with, dialect);
    match plan.controls.control(i).map(|c| c.kind) {
        Some(ControlKind::Merge) => compiled.map(|c| c.with_single_reference_entries(with)),
        _ => compiled,
    }
}

/// The workflow-level extension key that opts a workflow into the extended JSONLogic
/// dialect (`docs/decisions.md` D-6). Absent means the normative @w6w/expr dialect.
pub(crate) const DIALECT_KEY: &str = "x-w6w-dialect";

/// The dialect a workflow asked for, or a validation problem for a value we do not know.
pub(crate) fn workflow_dialect(workflow: &Workflow) -> Result<Dialect, ValidationError> {
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
        // A sub-block step (a foreach body, a parallel branch) may run once per instance,
        // so its with block is compiled once, here. A main-graph step runs once per pass:
        // it is compiled when it runs and dropped after, so a long run does not keep every
        // step's compiled block alive to its end (D-195).
        let compiled = (0..workflow.steps.len())
            .map(|i| {
                (plan.rank.get(i) == Some(&crate::plan::NOT_ON_MAIN_GRAPH))
                    .then(|| Box::new(compile_step(workflow, &plan, i, dialect)))
            })
            .collect();
        Ok(Engine {
            workflow,
            plan,
            kinds,
            dialect,
            compiled,
        })
    }

    /// Step `i`'s compiled `with` block: the one compiled up front for a sub-block step,
    /// else compiled now (D-195).
    pub(crate) fn compile(
        &self,
        i: usize,
    ) -> std::borrow::Cow<'_, Result<CompiledWith, ResolveError>> {
        match self.compiled.get(i) {
            Some(Some(c)) => std::borrow::Cow::Borrowed(&**c),
            _ => std::borrow::Cow::Owned(compile_step(self.workflow, &self.plan, i, self.dialect)),
        }
    }

    /// The deterministic plan order, as step ids.
    pub fn order(&self) -> Vec<&'w str> {
        self.plan.ids(self.workflow)
    }

    /// CTRL-7: a `wait` needs the host's `schedule`; without it planning fails with
    /// `unsupported_wait` before any step runs.
    fn check_supported<C: WorkflowContext>(&self, ctx: &C) -> Result<(), EngineError> {
        if self.plan.controls.has_wait() && !ctx.supports_schedule() {
            let options = crate::plan::PlanOptions {
                host_supports_schedule: false,
            };
            crate::plan::plan_with(self.workflow, &options)
                .map_err(EngineError::InvalidWorkflow)?;
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
        // SEC-1 (D-207): what the engine writes is scrubbed by the engine, not its host.
        self.start(seed, &super::sink::Sunk::new(ctx)).await
    }

    async fn start<C: WorkflowContext>(
        &self,
        seed: RunSeed,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        self.check_supported(ctx)?;
        let variables = super::vars::seed_variables(self.workflow, &seed.variables)?;
        let mut fresh = RunState::new(&seed.run_id, &self.workflow.id);
        // Sized once for every step, instead of growing (and copying) as records arrive.
        fresh.steps.reserve(self.workflow.steps.len());
        let journal = Journal::new(fresh);
        let mut start = journal.patch();
        start.workflow_id = Some(self.workflow.id.clone());
        start.status = Some(RunStatus::Running);
        // SEC-1 / D-112: a variable holding a secret's value is recorded with a reference
        // by name, so a resumed run seeds the same value (RUNERR-3) and no store holds it.
        let variables = match super::sealed::seal_variables(&variables, &ctx.secrets()) {
            Some((recorded, refs)) => {
                start.extra.insert(VARIABLE_REFS.into(), refs);
                recorded
            }
            None => variables,
        };
        start.variables = Some(variables);
        start.extra.insert("trigger".into(), seed.trigger.clone());
        start.extra.insert("runAttempt".into(), json!(1));
        if let Some(id) = super::sealed::draw_seal_id(ctx) {
            // D-251: every envelope of this run is bound to it, so none opens in another
            // run (the same run id in another store included). Not a secret.
            start.extra.insert(super::sealed::SEAL_ID.into(), json!(id));
        }
        if seed.call_depth > 0 {
            start
                .extra
                .insert("callDepth".into(), json!(seed.call_depth));
        }
        if !seed.secret_paths.is_empty() {
            // D-124: durable, so a resumed child re-taints the same variables.
            start
                .extra
                .insert(SECRET_VARIABLES.into(), json!(seed.secret_paths));
        }
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
    /// number. The authored run-level retry never runs here (RUNERR-4); a final failure
    /// still meets reroute and onError (D-110). A run suspended
    /// by a `wait` is refused: it resumes only with its token ([`Engine::resume_with`]).
    pub async fn resume<C: WorkflowContext>(
        &self,
        run_id: &str,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        self.resume_with(run_id, None, ctx).await
    }

    /// Continue a run: after a crash (`token` `None`), or a run suspended by a `wait`
    /// with the token that wait gave `schedule` (CTRL-7, engine.md invariant 8). A token
    /// resume runs inside the run-level ladder (D-72); a crash resume runs no retry but
    /// still reroutes / applies onError (RUNERR-4, D-110).
    pub async fn resume_with<C: WorkflowContext>(
        &self,
        run_id: &str,
        token: Option<&str>,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        // SEC-1 (D-207): what the engine writes is scrubbed by the engine, not its host.
        self.continue_run(run_id, token, &super::sink::Sunk::new(ctx))
            .await
    }

    async fn continue_run<C: WorkflowContext>(
        &self,
        run_id: &str,
        token: Option<&str>,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        self.check_supported(ctx)?;
        let state = ctx
            .load(run_id)
            .await?
            .ok_or_else(|| EngineError::RunNotFound(run_id.to_owned()))?;
        // Nothing left to do: resuming a finished run is idempotent.
        if self.check_resumable(run_id, &state, token)? {
            return Ok(RunResult::from_state(state));
        }
        let call_depth = state
            .extra
            .get("callDepth")
            .and_then(Value::as_u64)
            .and_then(|d| u32::try_from(d).ok())
            .unwrap_or(0);
        let journal = Journal::new(state);
        let resume_token = Self::wake(ctx, &journal, run_id, token).await?;
        let rc = RunCtx {
            call_depth,
            resume_token,
        };
        // D-72: a run a fired `wait` resumed is the run going on — the authored ladder holds
        // for it, counting the attempts already made. Only a crash-resumed execution (no
        // token: a host redelivery) skips the retry (RUNERR-4).
        if token.is_some() {
            let attempt = journal
                .extra("runAttempt")
                .and_then(|v| v.as_u64())
                .unwrap_or(1)
                .max(1);
            let carried = super::replay::Carried::default();
            return self.ladder_from(ctx, journal, &carried, rc, attempt).await;
        }
        // RUNERR-4 (D-110): a crash-resumed execution runs no authored retry — the host's
        // redelivery and the retry ladder would multiply — but a final failure is still
        // handled by reroute and onError, which re-run nothing: a crash must not change
        // how a run ends.
        match self.drive_with(ctx, &journal, &rc).await? {
            GraphOutcome::Failed(error) => {
                self.handle_failure(ctx, journal, error, call_depth).await
            }
            outcome => self.finalize(ctx, journal, outcome).await,
        }
    }

    /// Whether `state` may be resumed with `token`: `Ok(true)` when it is already finished
    /// (nothing to do), `Ok(false)` when the resume goes on, the refusal otherwise.
    fn check_resumable(
        &self,
        run_id: &str,
        state: &RunState,
        token: Option<&str>,
    ) -> Result<bool, EngineError> {
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
        let expected = state.extra.get("resumeToken").and_then(Value::as_str);
        let refuse_token = |message| {
            Err(EngineError::ResumeToken {
                run_id: run_id.to_owned(),
                message,
            })
        };
        match state.status {
            s if s.is_terminal() => Ok(true),
            RunStatus::Queued if state.steps.is_empty() && state.variables.is_empty() => {
                Err(EngineError::NotResumable {
                    run_id: run_id.to_owned(),
                    action: "resumed",
                    message: "it never started".into(),
                })
            }
            RunStatus::Queued if expected.is_some() && token != expected => {
                refuse_token(match token {
                    None => {
                        "it is suspended by a wait and resumes only with that wait's resume token"
                            .into()
                    }
                    Some(t) => format!("{t:?} is not the token of its pending wait"),
                })
            }
            // The right token for the pending wait.
            RunStatus::Queued if expected.is_some() => Ok(false),
            _ if token.is_some() => refuse_token(format!(
                "it is {} and not suspended by a wait",
                state.status.as_str()
            )),
            _ => Ok(false),
        }
    }

    /// The token this invocation resumes with: a token resume checkpoints `running` (and
    /// which wait is over, so a crash after it still knows); a crash resume picks up a
    /// token resume that crashed.
    async fn wake<C: WorkflowContext>(
        ctx: &C,
        journal: &Journal,
        run_id: &str,
        token: Option<&str>,
    ) -> Result<Option<String>, EngineError> {
        let Some(t) = token else {
            ctx.log(
                LogLevel::Info,
                &format!("run {run_id} resumed from its last checkpoint"),
                None,
            );
            return Ok(journal
                .extra("resumedWith")
                .and_then(|v| v.as_str().map(str::to_owned)));
        };
        ctx.log(
            LogLevel::Info,
            &format!("run {run_id} resumed with token {t}"),
            None,
        );
        let mut patch = journal.patch();
        patch.status = Some(RunStatus::Running);
        patch.extra.insert("resumeToken".into(), Value::Null);
        patch.extra.insert("suspendedAt".into(), Value::Null);
        // A crash after this checkpoint still knows which wait is over.
        patch.extra.insert("resumedWith".into(), json!(t));
        journal.commit(ctx, patch).await?;
        Ok(Some(t.to_owned()))
    }

    /// One pass over the main graph (the ladder's unit).
    pub(crate) async fn drive<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        call_depth: u32,
    ) -> Result<GraphOutcome, EngineError> {
        let rc = RunCtx {
            call_depth,
            resume_token: None,
        };
        self.drive_with(ctx, journal, &rc).await
    }

    /// One pass over the main graph: the plain loop (FAN-1) or strands (FAN-2…7).
    pub(crate) async fn drive_with<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
    ) -> Result<GraphOutcome, EngineError> {
        let scope = self.scope(ctx, journal);
        let frame = Frame::main();
        let walk = Walk {
            engine: self,
            host: ctx,
            journal,
            run: rc,
            graph: &self.plan,
            frame: &frame,
        };
        walk.walk(scope).await
    }

    /// The scope a pass starts from: vars, trigger, documents and secrets from the state
    /// and the host; `steps` fills in as the walk publishes.
    fn scope<C: WorkflowContext>(&self, ctx: &C, journal: &Journal) -> RunScope {
        let mut scope = RunScope::new().with_secrets(ctx.secrets());
        // `steps` fills in as the walk publishes: sized once for every step.
        scope.reserve_steps(self.workflow.steps.len());
        scope.vars = Arc::new(self.variables(journal, &scope));
        taint_pointers(&mut scope, "vars", &secret_variables(journal));
        scope.trigger = Arc::new(
            journal
                .extra("trigger")
                .unwrap_or_else(|| json!({"type": "manual"})),
        );
        scope.documents = Arc::new(ctx.documents());
        scope
    }

    /// The run's variables as the crash-free run seeded them: recorded secret references
    /// re-materialised from `scope`'s secrets (D-112; never recorded).
    pub(crate) fn variables(&self, journal: &Journal, scope: &RunScope) -> Value {
        super::sealed::unseal_variables(
            journal.variables(),
            journal.extra(VARIABLE_REFS).as_ref(),
            |n| scope.secrets().get(n).cloned(),
        )
    }

    /// RUN-9: the output of the last succeeded step by plan order (`null` when none did).
    pub(crate) fn last_output(&self, state: &RunState) -> Value {
        self.plan
            .order
            .iter()
            .rev()
            .filter_map(|&i| state.steps.get(self.workflow.steps[i].id.as_str()))
            .find(|r| r.status == StepStatus::Succeeded)
            .and_then(|r| r.output.as_ref().map(JsonText::to_value))
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
                patch.output = Some(journal.read(|state| self.last_output(state)));
            }
            GraphOutcome::Failed(error) => {
                patch.status = Some(RunStatus::Failed);
                patch.error = Some(error);
            }
            GraphOutcome::Canceled => patch.status = Some(RunStatus::Canceled),
            GraphOutcome::Suspended(s) => {
                // CTRL-7 / RUNERR-7: queued is not a failure; the token is the only key.
                patch.status = Some(RunStatus::Queued);
                patch.extra.insert("resumeToken".into(), json!(s.token));
                patch.extra.insert(
                    "suspendedAt".into(),
                    json!({"stepId": s.step_id, "token": s.token,
                           "at": crate::host::iso8601_from_ms(ctx.now_ms())}),
                );
            }
        }
        let status = patch.status.map_or("?", RunStatus::as_str);
        journal.commit(ctx, patch).await?;
        ctx.log(LogLevel::Info, &format!("run ended {status}"), None);
        Ok(RunResult::from_state(journal.into_state()))
    }
}
