//! RUN-3/RUN-4 campaigns ([`super::Simulation::crash_points`]): the crash after each
//! top-level checkpoint, reported as its own run, without running each prefix again. The
//! crash-free run is simulated once and copied right after each top-level checkpoint
//! ([`Fork`], taken by the simulated host); each copy then comes back exactly as the
//! crashed process would. A `k` with no copy (a child run's checkpoint; a store or trace
//! that cannot be copied, a scenario with faults of its own, an engine other than this
//! crate's, where nothing is copied) is run from the top.

use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;

use super::drive::{Parts, Sim};
use super::driver::Runner;
use super::host;
use super::scripts::ScriptBook;
use super::simulation::start_driving;
use super::world::World;
use super::{
    MemoryStore, Report, Scenario, SimError, SimOptions, Simulation, Store, StoreChoice,
    WorldSnapshot, scenario,
};
use crate::engine::Engine;

/// A simulation copied right after one of its top-level checkpoints, as a crash there
/// would leave it (`Simulation::crash_points`).
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

/// What [`super::Simulation::crash_points`] gives.
#[derive(Debug)]
pub struct CrashPoints {
    /// The crash-free run's report (or error).
    pub plain: Result<Report, SimError>,
    /// The report (or error) of the run crashing after checkpoint `k`, at index `k - 1`.
    pub reports: Vec<Result<Report, SimError>>,
    /// How many of them continued a copy (the others ran from the top).
    pub copied: usize,
}

/// The campaign of `runner` under `scenario` (see the module doc).
pub(super) fn campaign<'a>(
    runner: Runner<'a>,
    scenario: &'a Scenario,
    options: &'a SimOptions,
    sink: Option<Box<dyn Write>>,
    max: u64,
) -> CrashPoints {
    let copyable = scenario.faults == scenario::Faults::default()
        && options.abort_after_checkpoint.is_none()
        && matches!(options.store, StoreChoice::Memory);
    let engine = match runner {
        Runner::Reference(workflow) if copyable => Engine::new(workflow).ok(),
        _ => None,
    };
    let mut forks = BTreeMap::new();
    let plain = match &engine {
        // What `run` does on a memory store, with the copies taken on the way.
        Some(engine) => Simulation::of(Runner::Built(engine), scenario)
            .options(options)
            .trace_sink(sink)
            .store(Box::new(MemoryStore::default()))
            .open(&scenario.run_id, WorldSnapshot::default())
            .and_then(|sim| {
                sim.forks.borrow_mut().upto = max;
                let ended = start_driving(&sim, scenario);
                forks = std::mem::take(&mut sim.forks.borrow_mut().taken);
                ended?;
                sim.report(&scenario.run_id)
            }),
        None => Simulation::of(runner, scenario)
            .options(options)
            .trace_sink(sink)
            .run(),
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
                resume_fork(engine, scenario, options, k, fork)
            }
            _ => Simulation::of(runner, &crash_at(scenario, k))
                .options(options)
                .run(),
        })
        .collect();
    CrashPoints {
        plain,
        reports,
        copied,
    }
}

/// `scenario` with the fault plan `crashAfterCheckpoint: [k]` in place of its own.
fn crash_at(scenario: &Scenario, k: u64) -> Scenario {
    Scenario {
        faults: scenario::Faults {
            crash_after_checkpoint: vec![k],
            crash_in_invoke: Vec::new(),
        },
        ..scenario.clone()
    }
}

/// The simulation `fork` (copied right after top-level checkpoint `k` of a run of the
/// fault-free `scenario`), continued as `crashAfterCheckpoint: [k]` would kill the process
/// there: the crash, a restart, a resume from the store, the report.
fn resume_fork(
    engine: &Engine<'_>,
    scenario: &Scenario,
    options: &SimOptions,
    k: u64,
    fork: Fork,
) -> Result<Report, SimError> {
    let run_id = scenario.run_id.as_str();
    let parts = Parts {
        driver: Box::new(engine),
        workflow_id: engine.workflow.id.clone(),
        scripts: ScriptBook::of(engine.workflow),
        // The copy's world replaces the fresh one below: nothing to size.
        steps: 0,
        scenario,
        options,
        sink: None,
        // The copy's redaction sink, with what the run had learned by the crash.
        scrub: Some(Rc::clone(&fork.world.scrub)),
    };
    let sim = Sim::assemble(parts, fork.store, WorldSnapshot::default(), run_id);
    let restarts = fork.restarts;
    let mut world = fork.world;
    world.crash(host::crash_after_checkpoint(k));
    *sim.world.borrow_mut() = world;
    sim.drive_after_crash(run_id, restarts + 1)?;
    sim.report(run_id)
}
