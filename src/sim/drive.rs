//! The drive loop: one simulation ([`Sim`]) of one top-level run — its world, its store,
//! its engine ([`super::driver::Driver`]) — driven process life after process life until
//! the run ends: a simulated crash is followed by a restart and a resume from the store,
//! a `wait` by its schedule firing (CTRL-7), and the report is read from what the store
//! finally holds. How a simulation is asked for is [`super::Simulation`]'s business.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use serde_json::{Value, json};

use super::crash_points::Forks;
use super::driver::{Driver, Mode};
use super::durable::Acked;
use super::exec::Exec;
use super::host::{Role, SimHost};
use super::report::{Report, unfired_faults};
use super::scripts::ScriptBook;
use super::world::{EPOCH_MS, World, WorldSnapshot};
use super::{Scenario, Scrubber, SimError, SimOptions, Store};
use crate::engine::EngineError;
use crate::host::{HostError, RunInfo, RunTrigger};
use crate::limits::RESTARTS_MAX;
use crate::model::{RunState, RunStatus};

/// Everything a simulation is made of but its store and its world: what
/// [`super::driver::Runner::parts`] builds for a run request.
pub(super) struct Parts<'a> {
    pub(super) driver: Box<dyn Driver + 'a>,
    pub(super) workflow_id: String,
    /// Issue 40: the workflow's script steps.
    pub(super) scripts: ScriptBook,
    /// How many steps the workflow has: the invocation log is sized for it (0: unsized).
    pub(super) steps: usize,
    pub(super) scenario: &'a Scenario,
    pub(super) options: &'a SimOptions,
    pub(super) sink: Option<Box<dyn Write>>,
    /// The redaction sink when the caller has one holding the scenario's secrets (a
    /// crash-point copy goes on with the sink of the run it was copied from); `None`: one is
    /// built from them.
    pub(super) scrub: Option<Rc<Scrubber>>,
}

pub(super) struct Sim<'a> {
    driver: Box<dyn Driver + 'a>,
    workflow_id: String,
    pub(super) scenario: &'a Scenario,
    pub(super) world: RefCell<World>,
    pub(super) store: RefCell<Box<dyn Store>>,
    /// RUN-3, checked by the suite for a candidate's store: every run's state as the
    /// checkpoints the store acknowledged fold it (`None`: the simulator's own store,
    /// trusted).
    pub(super) acked: RefCell<Option<Acked>>,
    pub(super) forks: RefCell<Forks>,
    pub(super) scrub: Rc<Scrubber>,
    options: &'a SimOptions,
    /// Issue 40: the workflow's script steps (`sim::scripts`).
    scripts: Rc<ScriptBook>,
}

impl<'a> Sim<'a> {
    /// A simulation of `parts` on `store`, starting from `snap`, for the run `run_id`.
    pub(super) fn assemble(
        parts: Parts<'a>,
        store: Box<dyn Store>,
        snap: WorldSnapshot,
        run_id: &str,
    ) -> Self {
        let Parts {
            driver,
            workflow_id,
            scripts,
            steps,
            scenario,
            options,
            sink,
            scrub,
        } = parts;
        let mut snap = snap;
        // Most steps invoke once: the log is sized for that, not grown by doubling to as
        // much as twice what a long run needs (D-195).
        let expected = usize::try_from(options.limits.invocations).unwrap_or(usize::MAX);
        snap.invocations.reserve(steps.min(expected));
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
    pub(super) fn drive(&self, run_id: &str, mode: Mode<'_>) -> Result<(), SimError> {
        self.drive_from(run_id, mode, 0)
    }

    /// [`Sim::drive`] in a world where the process has just died (a fork, whose world
    /// already carries the crash), its `restarts`-th end: come back as after any crash,
    /// then drive on.
    pub(super) fn drive_after_crash(&self, run_id: &str, restarts: u64) -> Result<(), SimError> {
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

    /// The report: the run as the store finally holds it, the world, the trace, every
    /// recorded value scrubbed once more (SEC-1).
    pub(super) fn report(self, run_id: &str) -> Result<Report, SimError> {
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
        let unwritten_steps = match &world.written_steps {
            Some(written) => run
                .steps
                .keys()
                .filter(|id| !written.contains(*id))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
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
            unwritten_steps,
        })
    }
}

/// The trigger the engine sees for `trigger` (the scenario's).
fn run_trigger(trigger: &Value) -> RunTrigger {
    match trigger.get("type").and_then(Value::as_str) {
        Some("schedule") => RunTrigger::Schedule,
        Some("webhook" | "event") => RunTrigger::Webhook,
        Some("replay") => RunTrigger::Replay,
        _ => RunTrigger::Manual,
    }
}
