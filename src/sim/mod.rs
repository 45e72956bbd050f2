//! The deterministic simulated host: the reference `WorkflowContext`.
//!
//! Owns: all nondeterminism of a simulated run — the virtual clock, scripted actions, the
//! fault plan, the durable stores (memory, an on-disk journal), the trace and the report — and
//! the executor that drives the engine. Invariant: the same workflow and scenario always
//! give the same report and trace, byte for byte; nothing reads a real clock.
//!
//! Where to start: [`run`] (a scenario from the top, crashing and resuming as the fault
//! plan says), [`resume`] (continue a run a real process left on disk), [`replay`].
//!
//! The executor ([`exec`]) runs in virtual time: action latencies and backoff waits are
//! timers, and when every strand is blocked the clock jumps to the earliest one (ties by
//! creation order), so concurrency is deterministic. A future pending with no timer left is
//! either a simulated crash (the run is dropped, exactly like a dead process, and a fresh
//! engine resumes from the store) or a bug (reported as `sim_stalled`, never a hang). A run
//! a `wait` suspends is resumed by firing its schedule: the clock moves to the scheduled
//! time and the engine resumes with the token (unless `stop_at_suspend`).

mod engine_seam;
pub(crate) mod exec;
pub(crate) mod host;
mod hosted;
pub mod html;
pub mod inspect;
pub mod journal;
pub mod scenario;
mod scripts;
pub mod store;
pub mod world;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;

use serde_json::{Map, Value, json};

pub use crate::redact::Scrubber;
pub use engine_seam::{EngineFactory, ReferenceEngine, WorkflowEngine};
pub use host::CALL_DEPTH_MAX;
pub use journal::{JOURNAL_FORMAT, JournalError, JournalStore};
pub use scenario::{Scenario, ScenarioError, parse_scenario};
pub use store::{DiskStore, MemoryStore, STORE_FORMAT, Store, StoreError, StoredRun};
pub use world::{EPOCH_MS, WorldSnapshot};

use crate::engine::{Engine, EngineError, RunResult, RunSeed};
use crate::host::{HostError, RunInfo, RunTrigger};
use crate::model::{RunState, RunStatus, ValidationError, Workflow};
use crate::validate::{ValidateOptions, validate_workflow};
use exec::{Exec, block_on};
use host::{Role, SimHost};
use world::World;

/// Where the simulated host keeps run state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    Memory,
    /// One append-only journal per run in this directory ([`JournalStore`]).
    Dir(PathBuf),
}

/// A run's budgets (issue 12 item 4, SEC-2). Each one, when exceeded, stops the run with
/// `limit_exceeded` — through `run`, `eval`, `--store` alike — so no input runs for
/// minutes or fills the memory or the disk. Documented with their defaults in README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Action invocations, top-level and composed, across restarts.
    pub invocations: u64,
    /// Virtual time the run may span, from the epoch (2026-01-01T00:00:00Z), in ms.
    pub virtual_ms: u64,
    /// Bytes of checkpoint patches written (what the store records).
    pub recorded_bytes: u64,
    /// Bytes of trace events (kept in memory or streamed to `--trace`).
    pub trace_bytes: u64,
}

impl Limits {
    /// The defaults: room for every bench and suite run by orders of magnitude, small enough
    /// that `retry.maxAttempts: 1e9` on an always-failing action ends within seconds.
    pub const DEFAULT: Limits = Limits {
        invocations: crate::limits::DEFAULT_INVOCATIONS_MAX,
        virtual_ms: crate::limits::DEFAULT_VIRTUAL_MS_MAX,
        recorded_bytes: crate::limits::DEFAULT_RECORDED_BYTES_MAX,
        trace_bytes: crate::limits::DEFAULT_TRACE_BYTES_MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// How to run the simulator.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub store: StoreChoice,
    /// Testing hook: `std::process::abort()` right after this checkpoint (1-based, counted
    /// across restarts) is durable — a real process death for crash-recovery tests.
    pub abort_after_checkpoint: Option<u64>,
    /// Keep the trace in memory (the bench turns it off for a 10,000-step chain).
    pub keep_trace: bool,
    /// CTRL-7: stop when a `wait` suspends the run (report the queued state and token)
    /// instead of firing the schedule and resuming.
    pub stop_at_suspend: bool,
    /// The run's budgets.
    pub limits: Limits,
    /// SEC-1 judged on what the engine wrote (docs/decisions.md D-207): every checkpoint
    /// and log line of the top-level run is looked through for the scenario's secrets, in
    /// every form, before the redaction sink touches it; a hit stops the run with
    /// [`crate::redact::leak::SECRET_LEAK`]. The engine seams set it for the engine under
    /// test.
    pub judge_secrets: bool,
    /// D-260: the dialect document this run is started or continued from
    /// (`{dialect, documentSha256, workflowSha256}`, [`crate::dialect::source_identity`]);
    /// `None` for a w6w workflow. A disk store records it in a new run's journal, and
    /// `resume` refuses a run whose journal records another (or none).
    pub source: Option<Value>,
    /// Issue 40: run the script steps of an imported WOML / YAML workflow that the scenario
    /// does not script by id (`--no-scripts` turns it off: carried, not executed).
    pub run_scripts: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            store: StoreChoice::Memory,
            abort_after_checkpoint: None,
            keep_trace: true,
            stop_at_suspend: false,
            limits: Limits::DEFAULT,
            judge_secrets: false,
            source: None,
            run_scripts: true,
        }
    }
}

/// Why the simulator produced no report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("invalid workflow")]
    InvalidWorkflow(Vec<ValidationError>),
    #[error("invalid scenario")]
    InvalidScenario(Vec<ScenarioError>),
    /// The run was rejected before it started (e.g. a required variable is missing).
    #[error("{0}")]
    Rejected(EngineError),
    /// resume / replay refused (no such run, wrong workflow, not resumable…).
    #[error("{0}")]
    Engine(EngineError),
    #[error("store: {0}")]
    Store(String),
    /// The engine awaited something that never completes (a bug, never a hang).
    #[error("simulation halted: {0}")]
    Halted(String),
    /// D-121: the scenario asks for something no run of this workflow tree can do (a
    /// fault that can never fire): every such problem, each with its JSON Pointer.
    #[error("unreachable fault")]
    UnreachableFault(Vec<ScenarioError>),
    /// A run budget ([`Limits`]) ran out.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// A candidate engine behind the context protocol refused the run (its own
    /// `{code, message, …}`), or broke the protocol (`context_protocol`).
    #[error("{}", .0.get("message").and_then(Value::as_str).unwrap_or("the candidate engine failed"))]
    Candidate(Value),
    /// RUN-3/RUN-4: a candidate host's store, reopened after a simulated crash, did not
    /// return the state of the last checkpoint it acknowledged.
    #[error("{0}")]
    NotDurable(String),
}

impl SimError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            SimError::InvalidWorkflow(_) => "invalid_workflow",
            SimError::InvalidScenario(_) => "invalid_scenario",
            SimError::UnreachableFault(_) => "unreachable_fault",
            SimError::Rejected(e) | SimError::Engine(e) => e.code(),
            SimError::Store(_) => "store_error",
            SimError::Halted(_) => "sim_halted",
            SimError::LimitExceeded(_) => "limit_exceeded",
            SimError::Candidate(_) => "candidate_error",
            SimError::NotDurable(_) => "checkpoint_not_durable",
        }
    }

    /// Whether the *input* is at fault (CLI exit 1) rather than I/O (exit 2).
    pub fn is_input_error(&self) -> bool {
        !matches!(self, SimError::Store(_))
    }

    /// `{"code", "message", …}` with the details a caller needs.
    pub fn to_json(&self) -> Value {
        match self {
            SimError::InvalidWorkflow(errors) => json!({
                "code": self.code(),
                "message": errors.iter().map(|e| format!("{} at {:?}: {}", e.code, e.path, e.message)).collect::<Vec<_>>().join("; "),
                "errors": errors,
            }),
            SimError::InvalidScenario(errors) | SimError::UnreachableFault(errors) => json!({
                "code": self.code(),
                "message": errors.iter().map(|e| format!("{}: {}", if e.path.is_empty() { "/" } else { &e.path }, e.message)).collect::<Vec<_>>().join("; "),
                "path": errors.first().map(|e| e.path.clone()).unwrap_or_default(),
                "errors": errors,
            }),
            SimError::Rejected(EngineError::InvalidVariables { variable, message }) => json!({
                "code": self.code(), "message": message, "variable": variable,
            }),
            SimError::Rejected(EngineError::InvalidWorkflow(errors))
            | SimError::Engine(EngineError::InvalidWorkflow(errors)) => json!({
                "code": self.code(), "message": self.to_string(), "errors": errors,
            }),
            SimError::Candidate(answer) => answer.clone(),
            _ => json!({"code": self.code(), "message": self.to_string()}),
        }
    }
}

/// Parse and validate a workflow document for running (`validate_workflow`, runnable).
pub fn load_workflow(doc: &Value) -> Result<Workflow, SimError> {
    validate_workflow(doc, ValidateOptions { runnable: true }).map_err(SimError::InvalidWorkflow)
}

/// D-121: refuse a scenario whose faults no run of `workflow` (and the scenario's own
/// workflows) can ever reach, naming each (`unreachable_fault`).
pub fn check_reachable(workflow: &Value, scenario: &Scenario) -> Result<(), SimError> {
    reachable(scenario::unreachable_faults(workflow, scenario))
}

/// [`check_reachable`] of a typed (validated) workflow, without a JSON copy of it.
fn check_reachable_typed(workflow: &Workflow, scenario: &Scenario) -> Result<(), SimError> {
    reachable(scenario::unreachable_faults_typed(workflow, scenario))
}

fn reachable(errors: Vec<scenario::ScenarioError>) -> Result<(), SimError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SimError::UnreachableFault(errors))
    }
}

/// Parse and check a scenario document.
pub fn load_scenario(doc: &Value) -> Result<Scenario, SimError> {
    parse_scenario(doc).map_err(SimError::InvalidScenario)
}

/// The outcome of a simulation.
#[derive(Debug, Clone)]
pub struct Report {
    /// The RunState as finally loaded from the store.
    pub run: RunState,
    pub world: WorldSnapshot,
    /// Every event, in order (empty when `keep_trace` is off).
    pub trace: Vec<Value>,
    /// D-121: the scenario's faults that did not fire, `{fault, …}` (empty when all did).
    pub unfired: Vec<Value>,
}

impl Report {
    /// The report (issue 4 item 6): `{run, invocations, waits, checkpoints, crashes,
    /// clockMs}`, plus `calls` when the run dispatched a reroute target.
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`Report::to_json`], moving the recorded entries instead of copying them.
    pub fn into_json(self) -> Value {
        let world = self.world;
        let mut m = Map::new();
        m.insert("run".into(), self.run.into_json());
        let invocations = world
            .invocations
            .into_iter()
            .map(world::Invocation::into_json);
        m.insert("invocations".into(), Value::Array(invocations.collect()));
        m.insert("waits".into(), Value::Array(world.waits));
        m.insert("checkpoints".into(), json!(world.checkpoints));
        m.insert("crashes".into(), json!(world.crashes));
        m.insert("clockMs".into(), json!(world.clock_ms));
        // Each list below only when it holds something.
        for (key, list) in [
            // Reroute targets the run dispatched.
            ("calls", world.calls),
            // CTRL-7: every suspension the run went through, and when it fired.
            ("schedules", world.schedules),
            // D-125: invocations the engine canceled (race/any losers, fail-fast).
            ("canceled", world.canceled),
            // D-121: faults this simulation did not reach (a scenario says what it did).
            ("unfiredFaults", self.unfired),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), Value::Array(list));
            }
        }
        Value::Object(m)
    }
}

/// What a candidate's store acknowledged, folded by the simulator itself: run id → (state,
/// the checkpoint number that acknowledged it).
#[derive(Debug, Default)]
pub(crate) struct Acked {
    runs: BTreeMap<String, (RunState, u64)>,
}

impl Acked {
    pub(crate) fn checkpoint(&mut self, patch: &crate::model::RunStatePatch, n: u64) {
        let entry = self.runs.entry(patch.run_id.clone()).or_insert_with(|| {
            (
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                ),
                0,
            )
        });
        entry.0.apply(patch);
        entry.1 = n;
    }

    pub(crate) fn put(&mut self, state: &RunState) {
        self.runs.insert(state.run_id.clone(), (state.clone(), 0));
    }
}

/// A simulation copied right after one of its top-level checkpoints, as a crash there
/// would leave it (`run_crash_points`).
pub(crate) struct Fork {
    pub(crate) world: World,
    pub(crate) store: Box<dyn Store>,
    /// Process lives that had ended before this one (a suspension's resume is one).
    pub(crate) restarts: u64,
}

/// The copies a simulation keeps: one per top-level checkpoint `1..=upto` (none by
/// default), by checkpoint number.
#[derive(Default)]
pub(crate) struct Forks {
    pub(crate) upto: u64,
    /// The drive loop's count of ended process lives, for the copies it takes.
    pub(crate) restarts: u64,
    pub(crate) taken: BTreeMap<u64, Fork>,
}

/// The stack a simulation runs on when its caller's is short: engine futures of an
/// unoptimised build are large, and a `cargo test` thread has only 2 MiB. Reserved, not
/// committed: only the pages touched are memory.
pub use crate::limits::SIM_STACK_BYTES;

use crate::limits::STACK_RED_ZONE;

/// Run `f` with at least [`STACK_RED_ZONE`] bytes of stack, on a fresh stack segment of this
/// thread when the caller's is shorter (no thread, so nothing needs to be `Send`).
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, SIM_STACK_BYTES, f)
}

use crate::limits::RESTARTS_MAX;

/// The store of `choice`; a journal store authenticates its records with the scenario's
/// sealing key, if it holds one (D-251).
fn open_store(
    choice: &StoreChoice,
    scenario: &Scenario,
    source: Option<&Value>,
) -> Result<Box<dyn Store>, SimError> {
    Ok(match choice {
        StoreChoice::Memory => Box::new(MemoryStore::default()),
        StoreChoice::Dir(dir) => Box::new(
            JournalStore::open_keyed(dir, scenario.sealing_key.clone())
                .map_err(|e| SimError::Store(e.0))?
                .with_source(source.cloned()),
        ),
    })
}

/// D-121: the faults of `scenario` that did not fire by the end of this simulation.
fn unfired_faults(scenario: &Scenario, snap: &WorldSnapshot) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, n) in scenario.faults.crash_after_checkpoint.iter().enumerate() {
        if *n > snap.checkpoints {
            out.push(
                json!({"fault": "crashAfterCheckpoint", "index": i, "afterCheckpoint": n,
                            "why": format!("the run tree made {} checkpoints", snap.checkpoints)}),
            );
        }
    }
    for (i, f) in scenario.faults.crash_in_invoke.iter().enumerate() {
        if !snap.fired_invoke_faults.contains(&i) {
            out.push(json!({"fault": "crashInInvoke", "index": i, "step": f.step,
                            "attempt": f.attempt,
                            "why": "no run of the tree invoked that step with that attempt"}));
        }
    }
    if let Some(n) = scenario.cancel_after_checkpoint
        && n > snap.checkpoints
    {
        out.push(
            json!({"fault": "cancelAfterCheckpoint", "afterCheckpoint": n,
                        "why": format!("the run tree made {} checkpoints", snap.checkpoints)}),
        );
    }
    out
}

fn run_trigger(trigger: &Value) -> RunTrigger {
    match trigger.get("type").and_then(Value::as_str) {
        Some("schedule") => RunTrigger::Schedule,
        Some("webhook" | "event") => RunTrigger::Webhook,
        Some("replay") => RunTrigger::Replay,
        _ => RunTrigger::Manual,
    }
}

/// What the driver is asked to do with the run (one process life of the engine).
pub(crate) enum Mode<'a> {
    Start(RunSeed),
    Resume,
    /// CTRL-7: a fired `wait` schedule.
    ResumeToken(String),
    Replay(Option<&'a str>),
}

/// Who runs the engine for the simulator: our in-process [`Engine`], or a candidate engine
/// behind the context protocol (`crate::context_protocol`). One call is one process life:
/// it ends `Done`, `Crashed` (the simulator restarts and resumes) or `Halted`.
pub(crate) trait Driver {
    fn drive(
        &self,
        mode: &Mode<'_>,
        run_id: &str,
        host: &SimHost<'_>,
        world: &RefCell<World>,
    ) -> Exec<Result<RunResult, EngineError>>;
}

/// One engine drives several simulations (`run_crash_points`' copies).
impl<D: Driver + ?Sized> Driver for &D {
    fn drive(
        &self,
        mode: &Mode<'_>,
        run_id: &str,
        host: &SimHost<'_>,
        world: &RefCell<World>,
    ) -> Exec<Result<RunResult, EngineError>> {
        (**self).drive(mode, run_id, host, world)
    }
}

impl Driver for Engine<'_> {
    fn drive(
        &self,
        mode: &Mode<'_>,
        run_id: &str,
        host: &SimHost<'_>,
        world: &RefCell<World>,
    ) -> Exec<Result<RunResult, EngineError>> {
        match mode {
            Mode::Start(seed) => block_on(self.run(seed.clone(), host), world),
            Mode::Resume => block_on(self.resume(run_id, host), world),
            Mode::ResumeToken(token) => {
                block_on(self.resume_with(run_id, Some(token), host), world)
            }
            Mode::Replay(from) => block_on(self.replay(run_id, *from, host), world),
        }
    }
}

/// A Rust engine under test ([`EngineFactory`]) as a [`Driver`]: every process life boots a
/// fresh engine (the previous one was dropped with its future), and what the run came to is
/// read from the store the simulator keeps, never taken from the engine.
struct FactoryDriver<'a, F: EngineFactory> {
    factory: &'a F,
    workflow: &'a Workflow,
    /// The engine booted to check the run can start; used by the first life.
    booted: RefCell<Option<F::Engine<'a>>>,
}

impl<'a, F: EngineFactory> Driver for FactoryDriver<'a, F> {
    fn drive(
        &self,
        mode: &Mode<'_>,
        run_id: &str,
        host: &SimHost<'_>,
        world: &RefCell<World>,
    ) -> Exec<Result<RunResult, EngineError>> {
        let booted = self.booted.borrow_mut().take();
        let engine = match booted {
            Some(e) => e,
            None => match self.factory.boot(self.workflow) {
                Ok(e) => e,
                Err(e) => return Exec::Done(Err(e)),
            },
        };
        let exec = match mode {
            Mode::Start(seed) => block_on(engine.start(seed.clone(), host), world),
            Mode::Resume => block_on(engine.resume(run_id, None, host), world),
            Mode::ResumeToken(token) => block_on(engine.resume(run_id, Some(token), host), world),
            Mode::Replay(from) => block_on(engine.replay(run_id, *from, host), world),
        };
        drop(engine);
        match exec {
            Exec::Done(Ok(())) => {
                let state = match host.store.borrow().load(run_id) {
                    Ok(Some(s)) => s.state,
                    Ok(None) => return Exec::Done(Err(EngineError::RunNotFound(run_id.into()))),
                    Err(e) => return Exec::Done(Err(EngineError::Host(HostError::Store(e.0)))),
                };
                Exec::Done(Ok(RunResult {
                    run_id: state.run_id.clone(),
                    status: state.status,
                    output: state.output.clone(),
                    error: state.error.clone(),
                    state,
                }))
            }
            Exec::Done(Err(e)) => Exec::Done(Err(e)),
            Exec::Crashed => Exec::Crashed,
            Exec::Halted(m) => Exec::Halted(m),
            Exec::Refused(v) => Exec::Refused(v),
        }
    }
}

struct Sim<'a> {
    driver: Box<dyn Driver + 'a>,
    workflow_id: String,
    scenario: &'a Scenario,
    world: RefCell<World>,
    store: RefCell<Box<dyn Store>>,
    /// RUN-3, checked by the suite for a candidate's store: every run's state as the
    /// checkpoints the store acknowledged fold it (`None`: the simulator's own store,
    /// trusted).
    acked: RefCell<Option<Acked>>,
    forks: RefCell<Forks>,
    scrub: Rc<Scrubber>,
    options: &'a SimOptions,
    /// Issue 40: the workflow's script steps (`sim::scripts`).
    scripts: Rc<scripts::ScriptBook>,
}

impl<'a> Sim<'a> {
    /// A simulation of `workflow`, driven by `engine` when the caller already built it
    /// (`None`: built here).
    #[allow(clippy::too_many_arguments)]
    fn new(
        workflow: &'a Workflow,
        engine: Option<Box<dyn Driver + 'a>>,
        scenario: &'a Scenario,
        options: &'a SimOptions,
        snap: WorldSnapshot,
        sink: Option<Box<dyn Write>>,
        store: Box<dyn Store>,
        run_id: &str,
    ) -> Result<Self, SimError> {
        let driver = match engine {
            Some(driver) => driver,
            None => Box::new(Engine::new(workflow).map_err(SimError::Rejected)?),
        };
        if scenario::names_steps(scenario) {
            // Only faults and scripts name steps that may not exist.
            check_reachable_typed(workflow, scenario)?;
        }
        let mut snap = snap;
        // Most steps invoke once: the log is sized for that, not grown by doubling to as
        // much as twice what a long run needs (D-195).
        let expected = usize::try_from(options.limits.invocations).unwrap_or(usize::MAX);
        snap.invocations.reserve(workflow.steps.len().min(expected));
        Ok(Sim::with_driver(
            driver,
            workflow.id.clone(),
            scripts::ScriptBook::of(workflow),
            scenario,
            options,
            snap,
            sink,
            store,
            run_id,
            None,
        ))
    }

    /// A simulation of `driver`; `scrub` is the redaction sink when the caller has one
    /// holding `scenario`'s secrets (a crash-point copy goes on with the sink of the run it
    /// was copied from), else one is built from them.
    #[allow(clippy::too_many_arguments)]
    fn with_driver(
        driver: Box<dyn Driver + 'a>,
        workflow_id: String,
        scripts: scripts::ScriptBook,
        scenario: &'a Scenario,
        options: &'a SimOptions,
        snap: WorldSnapshot,
        sink: Option<Box<dyn Write>>,
        store: Box<dyn Store>,
        run_id: &str,
        scrub: Option<Rc<Scrubber>>,
    ) -> Self {
        let scrub = scrub.unwrap_or_else(|| Rc::new(Scrubber::new(scenario.secrets.values())));
        let mut world = World::new(snap);
        world.scrub = Rc::clone(&scrub);
        world.limits = options.limits;
        world.sink = sink;
        world.keep_trace = options.keep_trace;
        world.track_counts = store.keeps_world();
        if options.judge_secrets {
            world.judge = Some(Rc::new(crate::redact::leak::Detector::new(
                scenario.secrets.values(),
            )));
        }
        if let Some(lease) = store.seq_lease(run_id) {
            world.seq_lease = Some(lease);
            world.seq_ceiling = 0;
        }
        Sim {
            driver,
            workflow_id,
            scenario,
            world: RefCell::new(world),
            store: RefCell::new(store),
            acked: RefCell::new(None),
            forks: RefCell::default(),
            scrub,
            options,
            scripts: Rc::new(scripts),
        }
    }

    /// The store is a candidate's: check it against what it acknowledged.
    fn verify_durability(self) -> Self {
        *self.acked.borrow_mut() = Some(Acked::default());
        self
    }

    /// A simulated crash of the store's process: the store object is dropped (parked) and
    /// reopened, then — for a candidate's store — every run it acknowledged must load
    /// exactly as acknowledged (RUN-3).
    fn reopen_store(&self, why: &str) -> Result<(), SimError> {
        let mut store = self.store.borrow_mut();
        store.crash();
        store.restart().map_err(|e| SimError::Store(e.0))?;
        drop(store);
        let acked = self.acked.borrow();
        let Some(acked) = acked.as_ref() else {
            return Ok(());
        };
        for (run_id, (want, n)) in &acked.runs {
            let got = self
                .store
                .borrow()
                .load(run_id)
                .map_err(|e| SimError::Store(e.0))?
                .map(|s| s.state);
            let want_json = serde_json::to_value(want).unwrap_or_default();
            let got_json = serde_json::to_value(&got).unwrap_or_default();
            if !crate::json::json_eq(&want_json, &got_json) {
                let first = crate::json::json_diff(&want_json, &got_json)
                    .into_iter()
                    .next()
                    .map(|d| format!("; first difference at {:?}", d.pointer))
                    .unwrap_or_default();
                return Err(SimError::NotDurable(format!(
                    "RUN-3/RUN-4: {why}, the host's store was reopened and state.load({run_id:?}) did not return the state of the last checkpoint it acknowledged (checkpoint {n}){first}; a checkpoint must be durable before it returns"
                )));
            }
        }
        Ok(())
    }

    fn host(&self, run_id: &str, trigger: RunTrigger, attempt: u32) -> SimHost<'_> {
        SimHost {
            world: &self.world,
            scenario: self.scenario,
            store: &self.store,
            acked: &self.acked,
            forks: &self.forks,
            scrub: &self.scrub,
            options: self.options,
            info: RunInfo {
                id: run_id.to_owned(),
                workflow_id: self.workflow_id.clone(),
                trigger,
                attempt,
            },
            role: Role::Top,
            scripts: &self.scripts,
        }
    }

    /// Drive the engine until the run is terminal, resuming after every simulated crash.
    fn drive(&self, run_id: &str, mode: Mode<'_>) -> Result<(), SimError> {
        self.drive_from(run_id, mode, 0)
    }

    /// [`Sim::drive`] in a world where the process has just died (a fork, whose world
    /// already carries the crash), its `restarts`-th end: come back as after any crash,
    /// then drive on.
    fn drive_after_crash(&self, run_id: &str, restarts: u64) -> Result<(), SimError> {
        match self.recover(run_id, restarts)? {
            Some(mode) => self.drive_from(run_id, mode, restarts),
            None => Ok(()),
        }
    }

    /// [`Sim::drive`], `restarts` process lives into the run.
    fn drive_from(
        &self,
        run_id: &str,
        mut mode: Mode<'_>,
        mut restarts: u64,
    ) -> Result<(), SimError> {
        let base_trigger = match mode {
            Mode::Replay(_) => RunTrigger::Replay,
            _ => run_trigger(&self.scenario.trigger),
        };
        loop {
            self.forks.borrow_mut().restarts = restarts;
            let attempt = u32::try_from(restarts + 1).unwrap_or(u32::MAX);
            let host = self.host(run_id, base_trigger, attempt);
            let exec = self.driver.drive(&mode, run_id, &host, &self.world);
            drop(host);
            match exec {
                Exec::Done(Ok(r))
                    if r.status == RunStatus::Queued && !self.options.stop_at_suspend =>
                {
                    restarts += 1;
                    if restarts > RESTARTS_MAX {
                        return Err(SimError::Halted(format!(
                            "more than {RESTARTS_MAX} restarts and resumes"
                        )));
                    }
                    mode = Mode::ResumeToken(self.fire(&r.state)?);
                }
                Exec::Done(Ok(_)) => return Ok(()),
                Exec::Crashed | Exec::Done(Err(EngineError::Host(HostError::Crashed))) => {
                    restarts += 1;
                    match self.recover(run_id, restarts)? {
                        Some(next) => mode = next,
                        None => return Ok(()),
                    }
                }
                Exec::Halted(message) if self.world.borrow().limit_hit => {
                    return Err(SimError::LimitExceeded(message));
                }
                Exec::Halted(message) if self.world.borrow().leaked => {
                    return Err(SimError::Candidate(serde_json::json!({
                        "code": crate::redact::leak::SECRET_LEAK, "message": message})));
                }
                Exec::Halted(message) => return Err(SimError::Halted(message)),
                Exec::Refused(answer) => return Err(SimError::Candidate(answer)),
                Exec::Done(Err(EngineError::Host(HostError::Store(m)))) => {
                    return Err(SimError::Store(m));
                }
                Exec::Done(Err(e)) => {
                    return Err(match mode {
                        Mode::Start(_) => SimError::Rejected(e),
                        _ => SimError::Engine(e),
                    });
                }
            }
        }
    }

    /// The process died (its `restarts`-th end): its store object too. Back with the
    /// durable state only, checked against what was acknowledged; how the next process
    /// life goes on, or `None` when it stops at a suspension (`stop_at_suspend`).
    fn recover(&self, run_id: &str, restarts: u64) -> Result<Option<Mode<'static>>, SimError> {
        self.reopen_store("after a simulated crash")?;
        let mut w = self.world.borrow_mut();
        w.crash_pending = false;
        if restarts > RESTARTS_MAX {
            return Err(SimError::Halted(format!(
                "more than {RESTARTS_MAX} restarts"
            )));
        }
        w.event(
            "restart",
            json!({"restart": restarts,
                   "note": "a fresh engine resumes the run from the store"}),
        );
        drop(w);
        // A crash right after the run ended `queued`: the process that comes back finds a
        // run suspended by a wait, which only its schedule (the token) may resume — not
        // crash recovery.
        let stored = self
            .store
            .borrow()
            .load(run_id)
            .map_err(|e| SimError::Store(e.0))?;
        Ok(match stored {
            Some(s)
                if s.state.status == RunStatus::Queued
                    && s.state.extra.contains_key("resumeToken") =>
            {
                if self.options.stop_at_suspend {
                    return Ok(None);
                }
                Some(Mode::ResumeToken(self.fire(&s.state)?))
            }
            _ => Some(Mode::Resume),
        })
    }

    /// CTRL-7: the host's schedule fires — the clock moves to the scheduled time and the
    /// run is resumed with exactly the token its suspension reported.
    fn fire(&self, state: &RunState) -> Result<String, SimError> {
        let token = state
            .extra
            .get("resumeToken")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| SimError::Halted("a queued run reported no resume token".into()))?;
        if self.store.borrow().keeps_schedules() {
            self.fire_from_host(&state.run_id, &token)?;
        }
        let mut w = self.world.borrow_mut();
        let at_ms =
            w.snap.fire_times.get(&token).copied().ok_or_else(|| {
                SimError::Halted(format!("no schedule was made for token {token}"))
            })?;
        if at_ms > EPOCH_MS.saturating_add(w.limits.virtual_ms) {
            return Err(SimError::LimitExceeded(format!(
                "the wait fires beyond the run's virtual-time limit of {} ms",
                w.limits.virtual_ms
            )));
        }
        w.snap.clock_ms = w.snap.clock_ms.max(at_ms);
        w.event(
            "schedule_fired",
            json!({"token": token, "note": "the virtual clock reached the wait's time; resuming with its token"}),
        );
        Ok(token)
    }

    /// CTRL-7 on a candidate host (D-103): the host process is restarted while the run
    /// sleeps, then must still hold the schedule it acknowledged — same token, same time —
    /// which it then forgets as fired.
    fn fire_from_host(&self, run_id: &str, token: &str) -> Result<(), SimError> {
        self.reopen_store("while the run was suspended on a wait")?;
        let want = self.world.borrow().snap.fire_times.get(token).copied();
        let kept = self
            .store
            .borrow()
            .schedules(run_id)
            .map_err(|e| SimError::Store(e.0))?;
        let scrub = |s: String| self.scrub.line(&s);
        match kept.iter().find(|e| e.resume_token == token) {
            None => {
                return Err(SimError::NotDurable(scrub(format!(
                    "CTRL-7/RUN-3: the run is suspended on a wait whose schedule the host acknowledged \
                     (resume token {token:?}), but after a restart the host holds {} schedule(s) for \
                     run {run_id:?} and not that one; a schedule must be durable before schedule returns",
                    kept.len()
                ))));
            }
            Some(e) if Some(e.fire_at_ms) != want => {
                return Err(SimError::NotDurable(scrub(format!(
                    "CTRL-7: the host's schedule for resume token {token:?} fires at {} ms, not at the {} ms it acknowledged",
                    e.fire_at_ms,
                    want.map_or_else(|| "(unknown)".to_owned(), |w| w.to_string())
                ))));
            }
            Some(_) => {}
        }
        self.store
            .borrow_mut()
            .unschedule(run_id, token)
            .map_err(|e| SimError::Store(e.0))
    }

    fn report(self, run_id: &str) -> Result<Report, SimError> {
        if self.acked.borrow().is_some() {
            // The report reads what survives the process: a candidate's store is reopened
            // first, so a write-back cache that never reaches the medium cannot pass.
            self.reopen_store("when the run had ended")?;
        }
        let stored = self
            .store
            .borrow_mut()
            .take(run_id)
            .map_err(|e| SimError::Store(e.0))?
            .ok_or_else(|| SimError::Engine(EngineError::RunNotFound(run_id.to_owned())))?;
        let mut run = stored.state;
        // Defense in depth (SEC-1): the stored state was scrubbed patch by patch already.
        self.scrub.state(&mut run);
        let world = self.world.into_inner();
        let mut snap = world.snap;
        snap.invocations
            .iter_mut()
            .for_each(|i| i.scrub(&self.scrub));
        for list in [
            &mut snap.waits,
            &mut snap.calls,
            &mut snap.schedules,
            &mut snap.canceled,
        ] {
            list.iter_mut().for_each(|v| self.scrub.value(v));
        }
        let unfired = unfired_faults(self.scenario, &snap);
        Ok(Report {
            run,
            world: snap,
            trace: world.trace,
            unfired,
        })
    }
}

/// Run a scenario from the top (crashing and resuming as its fault plan says).
pub fn run(
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    sink: Option<Box<dyn Write>>,
) -> Result<Report, SimError> {
    run_on_store(
        workflow,
        scenario,
        options,
        open_store(&options.store, scenario, options.source.as_ref())?,
        sink,
    )
}

/// [`run`] on a store the caller supplies instead of `options.store` (a candidate host's,
/// `conformance::HostAdapter`); its crash/restart hooks are called at every simulated crash.
pub fn run_on_store(
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    store: Box<dyn Store>,
    sink: Option<Box<dyn Write>>,
) -> Result<Report, SimError> {
    let sim = Sim::new(
        workflow,
        None,
        scenario,
        options,
        WorldSnapshot::default(),
        sink,
        store,
        &scenario.run_id,
    )?;
    start(sim, scenario)
}

/// RUN-3/RUN-4 for a campaign: what [`run`] reports for `scenario`, and for each `k` in
/// `1..=min(max, its checkpoints)` what it reports with the fault plan
/// `crashAfterCheckpoint: [k]` in place of the scenario's own — without running each
/// prefix again. The crash-free run is simulated once and copied right after each
/// top-level checkpoint up to `max` (world and memory store, as the crash would leave
/// them); each copy then comes back exactly as the crashed process would. A `k` with no
/// copy (a child run's checkpoint; a store or trace that cannot be copied, or a scenario
/// with faults of its own, where nothing is copied) is run from the top.
pub fn run_crash_points(
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    max: u64,
) -> CrashPoints {
    let crash_at = |k: u64| Scenario {
        faults: scenario::Faults {
            crash_after_checkpoint: vec![k],
            crash_in_invoke: Vec::new(),
        },
        ..scenario.clone()
    };
    let copyable = scenario.faults == scenario::Faults::default()
        && options.abort_after_checkpoint.is_none()
        && matches!(options.store, StoreChoice::Memory);
    let mut forks = BTreeMap::new();
    let engine = Engine::new(workflow).ok().filter(|_| copyable);
    let plain = match &engine {
        // What `run` does on a memory store, with the copies taken on the way.
        Some(engine) => Sim::new(
            workflow,
            Some(Box::new(engine)),
            scenario,
            options,
            WorldSnapshot::default(),
            None,
            Box::new(MemoryStore::default()),
            &scenario.run_id,
        )
        .and_then(|sim| {
            sim.forks.borrow_mut().upto = max;
            let ended = start_driving(&sim, scenario);
            forks = std::mem::take(&mut sim.forks.borrow_mut().taken);
            ended?;
            sim.report(&scenario.run_id)
        }),
        None => run(workflow, scenario, options, None),
    };
    let upto = plain
        .as_ref()
        .map_or(0, |report| report.world.checkpoints.min(max));
    let mut copied = 0;
    let reports = (1..=upto)
        .map(|k| match (forks.remove(&k), &engine) {
            // The fork continues under the crash-free scenario: `resume_fork` applies the
            // crash at `k` itself, every later checkpoint is numbered above `k`, and a
            // fired fault is not reported as unfired, so a copy of the scenario with
            // `crashAfterCheckpoint: [k]` would change nothing.
            (Some(fork), Some(engine)) => {
                copied += 1;
                resume_fork(engine, workflow, scenario, options, k, fork)
            }
            _ => run(workflow, &crash_at(k), options, None),
        })
        .collect();
    CrashPoints {
        plain,
        reports,
        copied,
    }
}

/// What [`run_crash_points`] gives.
#[derive(Debug)]
pub struct CrashPoints {
    /// The crash-free run's report (or error).
    pub plain: Result<Report, SimError>,
    /// The report (or error) of the run crashing after checkpoint `k`, at index `k - 1`.
    pub reports: Vec<Result<Report, SimError>>,
    /// How many of them continued a copy (the others ran from the top).
    pub copied: usize,
}

/// The simulation `fork` (copied right after top-level checkpoint `k` of a run of the
/// fault-free `scenario`), continued as `crashAfterCheckpoint: [k]` would kill the process
/// there: the crash, a restart, a resume from the store, the report.
fn resume_fork(
    engine: &Engine<'_>,
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    k: u64,
    fork: Fork,
) -> Result<Report, SimError> {
    let run_id = scenario.run_id.as_str();
    // The copy's redaction sink, with what the run had learned by the crash.
    let sim = Sim::with_driver(
        Box::new(engine),
        workflow.id.clone(),
        scripts::ScriptBook::of(workflow),
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        fork.store,
        run_id,
        Some(Rc::clone(&fork.world.scrub)),
    );
    let restarts = fork.restarts;
    let mut world = fork.world;
    world.crash(host::crash_after_checkpoint(k));
    *sim.world.borrow_mut() = world;
    sim.drive_after_crash(run_id, restarts + 1)?;
    sim.report(run_id)
}

/// A workflow document's `id` (`""` when it has none: the engine behind the driver judges).
fn workflow_id_of(workflow: &Value) -> String {
    workflow
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// [`run_on_store`] with another engine behind `driver` (a candidate engine process,
/// `crate::context_protocol`): the simulator still owns the world, the store and the report.
pub(crate) fn run_with_driver<'a>(
    driver: Box<dyn Driver + 'a>,
    workflow: &Value,
    scenario: &'a Scenario,
    options: &'a SimOptions,
    store: Box<dyn Store>,
) -> Result<Report, SimError> {
    let sim = Sim::with_driver(
        driver,
        workflow_id_of(workflow),
        scripts::ScriptBook::of_json(workflow),
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        store,
        &scenario.run_id,
        None,
    );
    start(sim, scenario)
}

/// [`run`] on a candidate host's durable store (`conformance::HostAdapter`): the store is
/// opened from `factory`, dropped and reopened at every simulated crash and once more
/// before the report is read, and every reopened store must load exactly what the earlier
/// ones acknowledged (RUN-3; otherwise `checkpoint_not_durable`).
pub fn run_on_host_store(
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    factory: Box<dyn crate::host::StoreFactory>,
) -> Result<Report, SimError> {
    let store = hosted::HostedStore::open(factory)
        .map_err(|e| SimError::Store(format!("{}: {e}", e.code())))?;
    let sim = Sim::new(
        workflow,
        None,
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        Box::new(store),
        &scenario.run_id,
    )?
    .verify_durability();
    start(sim, scenario)
}

fn factory_sim<'a, F: EngineFactory>(
    factory: &'a F,
    workflow: &'a Workflow,
    scenario: &'a Scenario,
    options: &'a SimOptions,
    run_id: &str,
) -> Result<Sim<'a>, SimError> {
    let engine = factory.boot(workflow).map_err(SimError::Rejected)?;
    check_reachable_typed(workflow, scenario)?;
    let driver = FactoryDriver {
        factory,
        workflow,
        booted: RefCell::new(Some(engine)),
    };
    Ok(Sim::with_driver(
        Box::new(driver),
        workflow.id.clone(),
        scripts::ScriptBook::of(workflow),
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        open_store(&options.store, scenario, options.source.as_ref())?,
        run_id,
        None,
    ))
}

/// [`run`] with a Rust engine under test (`conformance::run_engine`): the simulator plays
/// the host — scripted actions, virtual clock, faults, its own store — and builds the report
/// from what it observed. At a crash the engine is dropped with its future and a fresh one
/// is booted from `factory`.
pub fn run_engine<F: EngineFactory>(
    factory: &F,
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
) -> Result<Report, SimError> {
    let sim = factory_sim(factory, workflow, scenario, options, &scenario.run_id)?;
    start(sim, scenario)
}

/// [`replay`] with a Rust engine under test (see [`run_engine`]).
pub fn replay_engine<F: EngineFactory>(
    factory: &F,
    workflow: &Workflow,
    scenario: &Scenario,
    original: &RunState,
    from: Option<&str>,
    options: &SimOptions,
) -> Result<Report, SimError> {
    let sim = factory_sim(factory, workflow, scenario, options, &original.run_id)?;
    start_replay(sim, original, from)
}

fn start(sim: Sim<'_>, scenario: &Scenario) -> Result<Report, SimError> {
    start_driving(&sim, scenario)?;
    sim.report(&scenario.run_id)
}

/// [`start`] up to the report: the run from the top until it ends.
fn start_driving(sim: &Sim<'_>, scenario: &Scenario) -> Result<(), SimError> {
    let run_id = scenario.run_id.clone();
    if sim
        .store
        .borrow()
        .load(&run_id)
        .map_err(|e| SimError::Store(e.0))?
        .is_some()
    {
        return Err(SimError::Engine(EngineError::NotResumable {
            run_id: run_id.clone(),
            action: "started",
            message: "the store already holds a run with this id (use resume, or another runId)"
                .into(),
        }));
    }
    let seed = RunSeed {
        run_id: run_id.clone(),
        trigger: scenario.trigger.clone(),
        variables: scenario.variables.clone(),
        call_depth: 0,
        secret_paths: Vec::new(),
    };
    sim.drive(&run_id, Mode::Start(seed))
}

/// Continue a run a previous process left in a disk store: after a real kill (`token`
/// `None`), or a run suspended by a `wait` (`--stop-at-suspend`) with its resume token.
pub fn resume(
    workflow: &Workflow,
    scenario: &Scenario,
    options: &SimOptions,
    run_id: &str,
    token: Option<&str>,
    sink: Option<Box<dyn Write>>,
) -> Result<Report, SimError> {
    let store = open_store(&options.store, scenario, options.source.as_ref())?;
    let stored = store
        .load(run_id)
        .map_err(|e| SimError::Store(e.0))?
        .ok_or_else(|| SimError::Engine(EngineError::RunNotFound(run_id.to_owned())))?;
    check_source(
        run_id,
        "resumed",
        stored.source.as_ref(),
        options.source.as_ref(),
    )?;
    let snap = latest_world(store.as_ref(), &stored, 0)
        .or_else(|| stored.world.clone())
        .unwrap_or_default();
    let sim = Sim::new(workflow, None, scenario, options, snap, sink, store, run_id)?;
    if let Some(token) = token {
        let mut w = sim.world.borrow_mut();
        w.event("resume", json!({"token": token}));
        // D-125: a manual resume is the schedule firing: the clock moves to the time the
        // wait was scheduled for (never backwards; an unknown token leaves it, and the
        // engine refuses the token).
        if let Some(&at_ms) = w.snap.fire_times.get(token) {
            w.snap.clock_ms = w.snap.clock_ms.max(at_ms);
            w.event(
                "schedule_fired",
                json!({"token": token, "note": "resume --token: the virtual clock moves to the wait's scheduled time"}),
            );
        }
        drop(w);
        sim.drive(run_id, Mode::ResumeToken(token.to_owned()))?;
        return sim.report(run_id);
    }
    if !stored.state.status.is_terminal() && stored.state.status != RunStatus::Queued {
        let mut w = sim.world.borrow_mut();
        w.snap.crashes += 1;
        let after = w.snap.checkpoints;
        w.event(
            "process_restart",
            json!({"note": "the previous process stopped before the run ended; resuming from its last durable checkpoint",
                   "afterCheckpoint": after}),
        );
    }
    sim.drive(run_id, Mode::Resume)?;
    sim.report(run_id)
}

/// D-260: a run continues only from the document that started it — a dialect run from
/// the same document (and the same import of it), a w6w run from a w6w workflow. Anything
/// else is refused before anything runs, never silently mixed.
pub fn check_source(
    run_id: &str,
    action: &'static str,
    recorded: Option<&Value>,
    given: Option<&Value>,
) -> Result<(), SimError> {
    let describe = |s: Option<&Value>| match s {
        None => "a w6w workflow".to_owned(),
        Some(v) => format!(
            "the {} document with sha256 {}",
            v.get("dialect").and_then(Value::as_str).unwrap_or("?"),
            v.get("documentSha256")
                .and_then(Value::as_str)
                .unwrap_or("?")
        ),
    };
    if recorded == given {
        return Ok(());
    }
    let same_document = recorded.and_then(|r| r.get("documentSha256"))
        == given.and_then(|g| g.get("documentSha256"))
        && recorded.is_some()
        && given.is_some();
    let message = if same_document {
        "it was started from this document imported with another manifest (the scenario's `manifest`); use the manifest it started with".to_owned()
    } else {
        format!(
            "it was started from {}, not {}; give the document it started with",
            describe(recorded),
            describe(given)
        )
    };
    Err(SimError::Engine(EngineError::NotResumable {
        run_id: run_id.to_owned(),
        action,
        message,
    }))
}

/// D-122: the newest world snapshot among `stored` and the child runs it dispatched
/// (a process killed inside a child last wrote the world into the child's journal).
fn latest_world(store: &dyn Store, stored: &StoredRun, depth: u32) -> Option<WorldSnapshot> {
    let mut best = stored.world.clone();
    if depth > CALL_DEPTH_MAX {
        return best;
    }
    let mut keys = vec!["reroute".to_owned()];
    dispatch_ids(
        &serde_json::to_value(&stored.state).unwrap_or_default(),
        &mut keys,
    );
    for key in keys {
        let child = host::child_run_id(&stored.state.run_id, &key);
        let Ok(Some(c)) = store.load(&child) else {
            continue;
        };
        if let Some(w) = latest_world(store, &c, depth + 1)
            && best
                .as_ref()
                .is_none_or(|b| (w.checkpoints, w.seq) > (b.checkpoints, b.seq))
        {
            best = Some(w);
        }
    }
    best
}

/// Every `dispatchId` recorded anywhere in a run state (call steps, in frames too).
fn dispatch_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(k)) = m.get("dispatchId")
                && !out.contains(k)
            {
                out.push(k.clone());
            }
            m.values().for_each(|x| dispatch_ids(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| dispatch_ids(x, out)),
        _ => {}
    }
}

/// Replay a finished run (REPLAY-*), optionally `from` a step.
pub fn replay(
    workflow: &Workflow,
    scenario: &Scenario,
    original: &RunState,
    from: Option<&str>,
    options: &SimOptions,
    sink: Option<Box<dyn Write>>,
) -> Result<Report, SimError> {
    let store = open_store(&options.store, scenario, options.source.as_ref())?;
    replay_on_store(workflow, scenario, original, from, options, store, sink)
}

/// [`replay`] on a store the caller supplies (see [`run_on_store`]).
pub fn replay_on_store(
    workflow: &Workflow,
    scenario: &Scenario,
    original: &RunState,
    from: Option<&str>,
    options: &SimOptions,
    store: Box<dyn Store>,
    sink: Option<Box<dyn Write>>,
) -> Result<Report, SimError> {
    let sim = Sim::new(
        workflow,
        None,
        scenario,
        options,
        WorldSnapshot::default(),
        sink,
        store,
        &original.run_id,
    )?;
    start_replay(sim, original, from)
}

/// [`replay_on_store`] with another engine behind `driver` (see [`run_with_driver`]).
pub(crate) fn replay_with_driver<'a>(
    driver: Box<dyn Driver + 'a>,
    workflow: &Value,
    scenario: &'a Scenario,
    original: &RunState,
    from: Option<&str>,
    options: &'a SimOptions,
    store: Box<dyn Store>,
) -> Result<Report, SimError> {
    let sim = Sim::with_driver(
        driver,
        workflow_id_of(workflow),
        scripts::ScriptBook::of_json(workflow),
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        store,
        &original.run_id,
        None,
    );
    start_replay(sim, original, from)
}

/// [`replay`] on a candidate host's durable store (see [`run_on_host_store`]).
pub fn replay_on_host_store(
    workflow: &Workflow,
    scenario: &Scenario,
    original: &RunState,
    from: Option<&str>,
    options: &SimOptions,
    factory: Box<dyn crate::host::StoreFactory>,
) -> Result<Report, SimError> {
    let store = hosted::HostedStore::open(factory)
        .map_err(|e| SimError::Store(format!("{}: {e}", e.code())))?;
    let sim = Sim::new(
        workflow,
        None,
        scenario,
        options,
        WorldSnapshot::default(),
        None,
        Box::new(store),
        &original.run_id,
    )?
    .verify_durability();
    start_replay(sim, original, from)
}

fn start_replay(sim: Sim<'_>, original: &RunState, from: Option<&str>) -> Result<Report, SimError> {
    if !scenario::run_id_ok(&original.run_id) {
        return Err(SimError::Engine(EngineError::NotResumable {
            run_id: original.run_id.clone(),
            action: "replayed",
            message: "its runId is not a safe identifier ([A-Za-z0-9_.-], at most 128)".into(),
        }));
    }
    let mut seeded = original.clone();
    // SEC-1: a `--run FILE` may carry plaintext anywhere (trigger.event, variables, …).
    sim.scrub.state(&mut seeded);
    let snap = sim.world.borrow().snap.clone();
    sim.store
        .borrow_mut()
        .put(&seeded, &snap)
        .map_err(|e| SimError::Store(e.0))?;
    if let Some(acked) = sim.acked.borrow_mut().as_mut() {
        acked.put(&seeded);
    }
    sim.drive(&original.run_id, Mode::Replay(from))?;
    sim.report(&original.run_id)
}
