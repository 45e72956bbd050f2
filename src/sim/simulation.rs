//! [`Simulation`]: the one way to ask the simulator for a run. A constructor chooses the
//! engine (this crate's, an [`EngineFactory`]'s, a candidate's behind the context
//! protocol), optional setters give the options, a trace sink and the store, and one
//! terminal says what to simulate: [`Simulation::run`], [`Simulation::replay`],
//! [`Simulation::resume`] or [`Simulation::crash_points`].

use std::io::Write;
use std::marker::PhantomData;

use serde_json::Value;

use super::drive::Sim;
use super::driver::{Driver, Mode, Runner};
use super::hosted::HostedStore;
use super::options::DEFAULT_OPTIONS;
use super::{
    CrashPoints, EngineFactory, JournalStore, MemoryStore, Report, Scenario, SimError, SimOptions,
    Store, StoreChoice, WorldSnapshot, scenario,
};
use crate::engine::{EngineError, RunSeed};
use crate::host::StoreFactory;
use crate::model::{RunState, Workflow};

/// A simulation being set up (the builder type parameter `S` says where its store comes
/// from: [`StoreFromOptions`] until [`Simulation::store`] or [`Simulation::host_store`]
/// gives one, then [`StoreGiven`]).
///
/// Every combination it can express runs: a store is given at most once, and only a
/// simulation whose store its options name can run a crash-point campaign (each crash
/// needs a fresh store). What a run can refuse (an invalid variable, a store that does not
/// open, an unreachable fault…) is a [`SimError`] with a stable code.
///
/// ```
/// use serde_json::json;
/// use w6w_sim::{Simulation, SimOptions, load_scenario, load_workflow};
///
/// let workflow = load_workflow(&json!({
///     "manifestVersion": "2", "id": "hello", "name": "hello",
///     "steps": [{"id": "greet", "uses": {"app": "hello", "action": "greet"}}]
/// }))
/// .expect("a valid workflow");
/// let scenario = load_scenario(&json!({"actions": {"greet": {"outcomes": [
///     {"output": {"text": "hi"}}
/// ]}}}))
/// .expect("a valid scenario");
///
/// // From the top, on the default options (a memory store, the trace kept).
/// let report = Simulation::new(&workflow, &scenario).run().expect("a report");
/// assert_eq!(report.run.status, w6w_sim::RunStatus::Succeeded);
///
/// // Replayed from that run, with options of one's own.
/// let options = SimOptions { keep_trace: false, ..SimOptions::default() };
/// let replayed = Simulation::new(&workflow, &scenario)
///     .options(&options)
///     .replay(&report.run, None)
///     .expect("a replay");
/// assert_eq!(replayed.run.output, report.run.output);
/// assert!(replayed.trace.is_empty());
/// ```
pub struct Simulation<'a, S = StoreFromOptions> {
    runner: Runner<'a>,
    scenario: &'a Scenario,
    options: &'a SimOptions,
    sink: Option<Box<dyn Write>>,
    store: StoreSource,
    given: PhantomData<S>,
}

/// The store of a [`Simulation`] is the one its options name ([`SimOptions::store`]).
#[derive(Debug)]
pub struct StoreFromOptions;

/// The store of a [`Simulation`] was given ([`Simulation::store`],
/// [`Simulation::host_store`]).
#[derive(Debug)]
pub struct StoreGiven;

/// Where the store comes from, opened when the simulation starts.
enum StoreSource {
    /// `options.store`.
    Options,
    /// A store the caller supplies, used as is.
    Given(Box<dyn Store>),
    /// A candidate host's durable store, checked against what it acknowledged (RUN-3).
    Host(Box<dyn StoreFactory>),
}

impl<'a> Simulation<'a> {
    /// A simulation of `workflow` (validated, [`super::load_workflow`]) under `scenario`,
    /// run by this crate's engine.
    pub fn new(workflow: &'a Workflow, scenario: &'a Scenario) -> Self {
        Simulation::of(Runner::Reference(workflow), scenario)
    }

    /// A simulation run by a Rust engine under test (`conformance::run_engine`): the
    /// simulator plays the host — scripted actions, virtual clock, faults, its own store —
    /// and builds the report from what it observed. At a crash the engine is dropped with
    /// its future and a fresh one is booted from `factory`.
    pub fn with_engine<F: EngineFactory>(
        factory: &'a F,
        workflow: &'a Workflow,
        scenario: &'a Scenario,
    ) -> Self {
        Simulation::of(Runner::Factory(factory, workflow), scenario)
    }

    pub(super) fn of(runner: Runner<'a>, scenario: &'a Scenario) -> Self {
        Simulation {
            runner,
            scenario,
            options: &DEFAULT_OPTIONS,
            sink: None,
            store: StoreSource::Options,
            given: PhantomData,
        }
    }

    /// Run on `store` instead of the one `options.store` names (a candidate host's,
    /// `conformance::HostAdapter`; a memory store of the caller's): its crash/restart hooks
    /// are called at every simulated crash.
    pub fn store(self, store: Box<dyn Store>) -> Simulation<'a, StoreGiven> {
        self.given(StoreSource::Given(store))
    }

    /// Run on a candidate host's durable store (`conformance::HostAdapter`): it is opened
    /// from `factory`, dropped and reopened at every simulated crash and once more before
    /// the report is read, and every reopened store must load exactly what the earlier ones
    /// acknowledged (RUN-3; otherwise `checkpoint_not_durable`).
    pub fn host_store(self, factory: Box<dyn StoreFactory>) -> Simulation<'a, StoreGiven> {
        self.given(StoreSource::Host(factory))
    }

    fn given(self, store: StoreSource) -> Simulation<'a, StoreGiven> {
        Simulation {
            runner: self.runner,
            scenario: self.scenario,
            options: self.options,
            sink: self.sink,
            store,
            given: PhantomData,
        }
    }

    /// RUN-3/RUN-4 for a campaign: what [`Simulation::run`] reports, and for each `k` in
    /// `1..=min(max, its checkpoints)` what it reports with the fault plan
    /// `crashAfterCheckpoint: [k]` in place of the scenario's own — without running each
    /// prefix again where it can (see [`CrashPoints`]). A trace sink receives the
    /// crash-free run's trace (and then every crash runs from the top).
    pub fn crash_points(self, max: u64) -> CrashPoints {
        super::crash_points::campaign(self.runner, self.scenario, self.options, self.sink, max)
    }
}

impl<'a> Simulation<'a, StoreGiven> {
    /// A simulation run by another engine behind `driver` (a candidate engine process,
    /// `crate::context_protocol`) on `store`, of the workflow document as the candidate
    /// gets it: the simulator still owns the world, the store and the report.
    pub(crate) fn remote(
        driver: &'a dyn Driver,
        workflow: &'a Value,
        scenario: &'a Scenario,
        store: Box<dyn Store>,
    ) -> Self {
        Simulation::of(Runner::Remote(driver, workflow), scenario).store(store)
    }
}

impl<'a, S> Simulation<'a, S> {
    /// Run under `options` (default: [`SimOptions::default`]).
    pub fn options(mut self, options: &'a SimOptions) -> Self {
        self.options = options;
        self
    }

    /// Stream every trace event to `sink` as it happens (`None`: none streamed; the report
    /// keeps the trace when `options.keep_trace` says so).
    pub fn trace_sink(mut self, sink: Option<Box<dyn Write>>) -> Self {
        self.sink = sink;
        self
    }

    /// Run the scenario from the top, crashing and resuming as its fault plan says.
    pub fn run(self) -> Result<Report, SimError> {
        let scenario = self.scenario;
        let sim = self.open(&scenario.run_id, WorldSnapshot::default())?;
        start_driving(&sim, scenario)?;
        sim.report(&scenario.run_id)
    }

    /// Replay `original`, a finished run (REPLAY-*), optionally `from` a step.
    pub fn replay(self, original: &RunState, from: Option<&str>) -> Result<Report, SimError> {
        let sim = self.open(&original.run_id, WorldSnapshot::default())?;
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
        // D-380: what the replay itself writes, apart from the recording it starts on.
        sim.world.borrow_mut().written_steps = Some(std::collections::BTreeSet::new());
        sim.drive(&original.run_id, Mode::Replay(from))?;
        sim.report(&original.run_id)
    }

    /// Continue run `run_id`, which a previous process left in the store: after a real kill
    /// (`token` `None`), or a run suspended by a `wait` (`--stop-at-suspend`) with its
    /// resume token. A run started from another document is refused (D-260,
    /// [`super::check_source`]).
    pub fn resume(self, run_id: &str, token: Option<&str>) -> Result<Report, SimError> {
        let (store, verify) = self.store.open(self.scenario, self.options)?;
        let (stored, snap) = super::resume::recorded(store.as_ref(), run_id, self.options)?;
        let parts = self.runner.parts(self.scenario, self.options, self.sink)?;
        let sim = on_store(Sim::assemble(parts, store, snap, run_id), verify);
        super::resume::continue_run(&sim, &stored, run_id, token)?;
        sim.report(run_id)
    }

    /// The simulation of run `run_id`, its store opened, its world starting from `snap`.
    pub(super) fn open(self, run_id: &str, snap: WorldSnapshot) -> Result<Sim<'a>, SimError> {
        let (store, verify) = self.store.open(self.scenario, self.options)?;
        let parts = self.runner.parts(self.scenario, self.options, self.sink)?;
        Ok(on_store(Sim::assemble(parts, store, snap, run_id), verify))
    }
}

/// `sim`, checking its store against what it acknowledged when `verify` (a candidate's).
fn on_store(sim: Sim<'_>, verify: bool) -> Sim<'_> {
    if verify { sim.verify_durability() } else { sim }
}

impl StoreSource {
    /// The store, and whether it is a candidate's (checked against what it acknowledged).
    /// A journal store authenticates its records with the scenario's sealing key, if it
    /// holds one (D-251), and records the run's source document (D-260).
    fn open(
        self,
        scenario: &Scenario,
        options: &SimOptions,
    ) -> Result<(Box<dyn Store>, bool), SimError> {
        Ok(match self {
            StoreSource::Options => (open_store(&options.store, scenario, options)?, false),
            StoreSource::Given(store) => (store, false),
            StoreSource::Host(factory) => {
                let store = HostedStore::open(factory)
                    .map_err(|e| SimError::Store(format!("{}: {e}", e.code())))?;
                (Box::new(store), true)
            }
        })
    }
}

/// The store `choice` names.
fn open_store(
    choice: &StoreChoice,
    scenario: &Scenario,
    options: &SimOptions,
) -> Result<Box<dyn Store>, SimError> {
    Ok(match choice {
        StoreChoice::Memory => Box::new(MemoryStore::default()),
        StoreChoice::Dir(dir) => Box::new(
            JournalStore::open_keyed(dir, scenario.sealing_key.clone())
                .map_err(|e| SimError::Store(e.0))?
                .with_source(options.source.clone()),
        ),
    })
}

/// The run of `scenario` from the top until it ends (refused when the store already holds
/// a run with its id).
pub(super) fn start_driving(sim: &Sim<'_>, scenario: &Scenario) -> Result<(), SimError> {
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
