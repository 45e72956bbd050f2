//! Who runs the engine for the simulator: the [`Driver`] seam (one call is one process
//! life), with this crate's [`Engine`] and any [`EngineFactory`] as drivers. A candidate
//! engine behind the context protocol is a third (`crate::context_protocol::suite`).

use std::cell::RefCell;
use std::io::Write;

use serde_json::Value;

use super::drive::Parts;
use super::errors::check_reachable_typed;
use super::exec::{Exec, block_on};
use super::host::SimHost;
use super::scripts::ScriptBook;
use super::world::World;
use super::{EngineFactory, Scenario, SimError, SimOptions, WorkflowEngine, scenario};
use crate::engine::{Engine, EngineError, RunResult, RunSeed};
use crate::host::HostError;
use crate::model::Workflow;

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

/// One engine drives several simulations (a crash-point campaign's copies).
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

/// An [`EngineFactory`] as a simulation keeps it (object-safe, so the builder needs no
/// type parameter for it): boots the first engine — a run it cannot boot for is refused
/// before it starts — and drives every process life with a fresh one.
pub(super) trait BootDriver {
    fn boot_driver<'a>(
        &'a self,
        workflow: &'a Workflow,
    ) -> Result<Box<dyn Driver + 'a>, EngineError>;
}

impl<F: EngineFactory> BootDriver for F {
    fn boot_driver<'a>(
        &'a self,
        workflow: &'a Workflow,
    ) -> Result<Box<dyn Driver + 'a>, EngineError> {
        let engine = self.boot(workflow)?;
        Ok(Box::new(FactoryDriver {
            factory: self,
            workflow,
            booted: RefCell::new(Some(engine)),
        }))
    }
}

/// The engine a simulation runs, with the workflow it is given: what
/// [`super::Simulation`]'s constructors choose. Copied, not consumed: a crash-point
/// campaign runs one per crash.
#[derive(Clone, Copy)]
pub(super) enum Runner<'a> {
    /// This crate's [`Engine`], built for the (validated) workflow.
    Reference(&'a Workflow),
    /// This crate's engine built once by the caller, shared by several simulations (the
    /// copies of a crash-point campaign).
    Built(&'a Engine<'a>),
    /// A Rust engine under test, booted afresh for every process life.
    Factory(&'a dyn BootDriver, &'a Workflow),
    /// A candidate engine behind the context protocol, given the workflow document as is
    /// (its engine judges it; the simulator checks no reachability).
    Remote(&'a dyn Driver, &'a Value),
}

impl<'a> Runner<'a> {
    /// The simulation's parts for a run of `scenario` under `options`: the scenario's
    /// faults and scripts are checked against the workflow tree first (D-121), then the
    /// engine is built (or booted) — a refusal is [`SimError::Rejected`].
    pub(super) fn parts(
        self,
        scenario: &'a Scenario,
        options: &'a SimOptions,
        sink: Option<Box<dyn Write>>,
    ) -> Result<Parts<'a>, SimError> {
        // D-121 first: a scenario no run of the workflow tree can carry out is refused
        // before any engine is built, so the refusal is the simulator's own whichever
        // engine would have run (D-379: no engine under test is judged on it).
        let typed = match self {
            Runner::Reference(workflow) | Runner::Factory(_, workflow) => Some(workflow),
            Runner::Built(engine) => Some(engine.workflow),
            Runner::Remote(..) => None,
        };
        if let Some(workflow) = typed
            && scenario::names_steps(scenario)
        {
            // Only faults and scripts name steps that may not exist.
            check_reachable_typed(workflow, scenario)?;
        }
        let (driver, workflow): (Box<dyn Driver + 'a>, _) = match self {
            Runner::Reference(workflow) => (
                Box::new(Engine::new(workflow).map_err(SimError::Rejected)?),
                workflow,
            ),
            Runner::Built(engine) => (Box::new(engine), engine.workflow),
            Runner::Factory(factory, workflow) => (
                factory.boot_driver(workflow).map_err(SimError::Rejected)?,
                workflow,
            ),
            Runner::Remote(driver, workflow) => {
                return Ok(Parts {
                    driver: Box::new(driver),
                    workflow_id: workflow_id_of(workflow),
                    scripts: ScriptBook::of_json(workflow),
                    steps: 0,
                    scenario,
                    options,
                    sink,
                    scrub: None,
                });
            }
        };
        Ok(Parts {
            driver,
            workflow_id: workflow.id.clone(),
            scripts: ScriptBook::of(workflow),
            steps: workflow.steps.len(),
            scenario,
            options,
            sink,
            scrub: None,
        })
    }
}

/// A workflow document's `id` (`""` when it has none: the engine behind the driver judges).
fn workflow_id_of(workflow: &Value) -> String {
    workflow
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
