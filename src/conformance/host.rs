//! The host-contract adapter seam: a Rust host plugs in its durable store and save-time
//! validation, and the suite runs *our* engine on them.
//!
//! Owns: the [`HostAdapter`] trait, the reference [`SimulatedHost`] (with [`MemoryDisk`],
//! an in-memory medium that outlives the store objects opened on it), [`EngineOnHost`]
//! (which turns any `HostAdapter` into an op-level [`Adapter`]) and [`run_host`], the one
//! line a host crate's `#[test]` calls. Refuses to know how a host stores things: the
//! contract is [`crate::host::RunStore`] (fold a `RunStatePatch` durably, load a
//! `RunState`) opened from a [`StoreFactory`].
//!
//! What the suite still owns when a `HostAdapter` is under test: the scripted actions
//! (invocations answer as the case's scenario says), the virtual clock, the fault plan and
//! its own world state (counters — never written to the host's store). A `wait`'s schedule
//! is the host's (`RunStore::schedule`, CTRL-7): the suite restarts the host while the run
//! sleeps and fires only what the fresh store still holds (D-103). A crash
//! fault drops the host's store object — its destructor does not run before the run is
//! over, like a killed process — and opens a fresh one from the factory; the suite then
//! checks that the fresh store loads exactly the state of the last acknowledged
//! checkpoint (RUN-3) before the engine resumes from it (RUN-4). The report of every run
//! is read from a store reopened once more after the run ended.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use super::{Adapter, AdapterError, LoadError, RunOptions, SuiteReport};
use crate::host::{RunStore, ScheduleEntry, StoreError, StoreFactory};
use crate::model::{RunState, RunStatePatch, ValidationError};
use crate::service::{bad_request, ok};
use crate::validate::{ValidateOptions, validate_save};

/// What a host must provide for the suite to run the reference engine on it.
///
/// ```no_run
/// use w6w_sim::conformance::{self, HostAdapter, MemoryDisk, RunOptions};
/// use w6w_sim::host::{StoreError, StoreFactory};
///
/// struct MyHost;
/// impl HostAdapter for MyHost {
///     fn name(&self) -> String { "my-host 0.1".into() }
///     fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
///         Ok(MemoryDisk::new().factory()) // a fresh medium; your durable store here
///     }
/// }
///
/// // In a `#[test]` of the host crate:
/// conformance::run_host(MyHost, &RunOptions::default())
///     .expect("the suite loads")
///     .assert_all_passed();
/// ```
pub trait HostAdapter {
    /// A human-readable name for reports, e.g. `my-host 1.4.0`.
    fn name(&self) -> String;

    /// A fresh, empty durable medium for one `run` or `replay` request (each case gets its
    /// own, so cases never see each other's runs), as a factory that opens a store on it.
    /// The suite opens one store when the run starts and a fresh one after every simulated
    /// crash (the old object is dropped unflushed); each must load what the earlier ones
    /// acknowledged. A store's `checkpoint` must return only once the folded state is
    /// durable (RUN-3).
    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError>;

    /// What this host supports ([`super::Capabilities`]); cases needing anything else are
    /// not applicable. A store that keeps no schedules (the default of
    /// [`RunStore::schedule`]) should leave out `schedule`. Default: everything.
    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities::all()
    }

    /// Whether this host brings its own [`HostAdapter::validate`]: then the `validate`
    /// cases judge it. Default `false`: the default validator is this crate's, and its
    /// passes are not the host's (D-208).
    fn validates(&self) -> bool {
        false
    }

    /// Save-time validation (the `validate` op, MODEL-*/PLAN-*): `previous` is the stored
    /// document a save replaces. Default: this crate's validator.
    fn validate(
        &mut self,
        doc: &Value,
        previous: Option<&Value>,
        options: ValidateOptions,
    ) -> Result<(), Vec<ValidationError>> {
        validate_save(doc, previous, options).map(|_| ())
    }
}

/// An in-memory durable medium: what a [`MemoryDisk`] store writes survives the store
/// object (a crash drops the object, not the medium). Every store opened from
/// [`MemoryDisk::factory`] writes through at once, so it is durable by construction; it is
/// the reference host's medium and a template for a host crate's tests.
#[derive(Debug, Clone, Default)]
pub struct MemoryDisk {
    runs: Rc<RefCell<BTreeMap<String, RunState>>>,
    /// CTRL-7 timers: (run id, resume token) → entry.
    schedules: Rc<RefCell<BTreeMap<(String, String), ScheduleEntry>>>,
}

impl MemoryDisk {
    pub fn new() -> Self {
        MemoryDisk::default()
    }

    /// A factory opening write-through stores on this medium.
    pub fn factory(&self) -> Box<dyn StoreFactory> {
        let disk = self.clone();
        Box::new(move || -> Result<Box<dyn RunStore>, StoreError> {
            Ok(Box::new(MemoryDiskStore { disk: disk.clone() }))
        })
    }

    /// What the medium holds for a run.
    pub fn get(&self, run_id: &str) -> Option<RunState> {
        self.runs.borrow().get(run_id).cloned()
    }

    /// Write a run's state to the medium.
    pub fn set(&self, state: RunState) {
        self.runs.borrow_mut().insert(state.run_id.clone(), state);
    }
}

/// A write-through store on a [`MemoryDisk`].
struct MemoryDiskStore {
    disk: MemoryDisk,
}

impl RunStore for MemoryDiskStore {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
        let mut state = self.disk.get(&patch.run_id).unwrap_or_else(|| {
            RunState::new(
                &patch.run_id,
                patch.workflow_id.as_deref().unwrap_or_default(),
            )
        });
        state.apply(patch);
        self.disk.set(state);
        Ok(())
    }

    fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
        self.disk.set(state.clone());
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        Ok(self.disk.get(run_id))
    }

    fn schedule(&mut self, entry: &ScheduleEntry) -> Result<(), StoreError> {
        self.disk.schedules.borrow_mut().insert(
            (entry.run_id.clone(), entry.resume_token.clone()),
            entry.clone(),
        );
        Ok(())
    }

    fn schedules(&self, run_id: &str) -> Result<Vec<ScheduleEntry>, StoreError> {
        Ok(self
            .disk
            .schedules
            .borrow()
            .values()
            .filter(|e| e.run_id == run_id)
            .cloned()
            .collect())
    }

    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        self.disk
            .schedules
            .borrow_mut()
            .remove(&(run_id.to_owned(), resume_token.to_owned()));
        Ok(())
    }
}

/// The reference host: a [`MemoryDisk`] per run, this crate's validator.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulatedHost;

impl HostAdapter for SimulatedHost {
    fn name(&self) -> String {
        format!("w6w-sim simulated host {}", env!("CARGO_PKG_VERSION"))
    }

    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
        Ok(MemoryDisk::new().factory())
    }
}

/// The reference engine on a candidate host: an op-level [`Adapter`]. `run` and `replay`
/// run our engine with the suite's scripted actions on the host's store; `validate` goes
/// through the host's validator; every other op is answered by the reference service.
#[derive(Debug, Clone, Default)]
pub struct EngineOnHost<H> {
    host: H,
}

impl<H: HostAdapter> EngineOnHost<H> {
    pub fn new(host: H) -> Self {
        EngineOnHost { host }
    }

    /// The host under test.
    pub fn host(&self) -> &H {
        &self.host
    }

    fn validate(&mut self, request: &Value) -> Value {
        let Some(doc) = request.get("workflow") else {
            return crate::service::handle(request);
        };
        let runnable = match request.get("runnable") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            // Malformed requests are the reference's business, answered identically.
            Some(_) => return crate::service::handle(request),
        };
        let previous = match request.get("previous") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p),
            Some(_) => return crate::service::handle(request),
        };
        match self
            .host
            .validate(doc, previous, ValidateOptions { runnable })
        {
            Ok(()) => ok(Value::Bool(true)),
            Err(errors) => crate::service::model::invalid(&errors),
        }
    }
}

impl<H: HostAdapter> Adapter for EngineOnHost<H> {
    fn name(&self) -> String {
        format!("w6w-sim engine on {}", self.host.name())
    }

    fn capabilities(&self) -> super::Capabilities {
        self.host.capabilities()
    }

    /// D-208: the host seam judges what reaches the host — runs and replays whose outcome
    /// is a report (read back from the host's store), and `validate` when the host brings
    /// its own validator. Pure ops and refusals are answered by our engine alone: a host
    /// that keeps nothing would pass them, so they are not the host's to count.
    fn unjudged(&self, case: &super::Case) -> Option<&'static str> {
        let judged = match case.request.get("op").and_then(Value::as_str) {
            Some("run" | "replay") => !super::capability::expects_refusal(case),
            Some("validate") => self.host.validates() && case.request.get("dialect").is_none(),
            _ => false,
        };
        (!judged).then_some(super::capability::SEAM_HOST)
    }

    /// D-225: the host seam runs our engine, whose recovery from every position the
    /// reference already answers for; what it judges is the host's store across kills, and
    /// each crash point here costs two host restarts.
    fn crash_sample(&self) -> u64 {
        super::generate::CRASH_POINTS_HOST_SAMPLED
    }

    /// The suite ran the reference engine on this host and saw everything (D-102).
    fn evidence(&self, _: super::adapter::sealed::Seal) -> super::Evidence {
        super::Evidence::Observed
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        let op = request.get("op").and_then(Value::as_str);
        // Issue 10: a WOML / YAML run is imported, then run on the host's store like any.
        if op == Some("run") && request.get("dialect").is_some() {
            return Ok(match self.host.storage() {
                Ok(factory) => crate::service::dialect::run_on(request, factory),
                Err(e) => json!({"error": {"code": "store_error",
                                           "message": format!("the host could not provide a store: {}: {e}", e.code())}}),
            });
        }
        Ok(match op {
            Some("validate") if request.get("dialect").is_some() => crate::service::handle(request),
            Some("run" | "replay") => match self.host.storage() {
                Ok(factory) if op == Some("run") => {
                    crate::service::sim::run_on_host(request, factory)
                }
                Ok(factory) => crate::service::sim::replay_on_host(request, factory),
                Err(e) => json!({"error": {"code": "store_error",
                                           "message": format!("the host could not provide a store: {}: {e}", e.code())}}),
            },
            Some("validate") => self.validate(request),
            Some(_) => crate::service::handle(request),
            None => bad_request("a request needs a string \"op\" field"),
        })
    }
}

/// Run the suite (cases and generated workflows, as `options` says) with the reference
/// engine on `host`: the one call a host crate's `#[test]` makes.
pub fn run_host<H: HostAdapter>(host: H, options: &RunOptions) -> Result<SuiteReport, LoadError> {
    super::run(&mut EngineOnHost::new(host), options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_host_answers_like_the_reference() {
        let mut host = EngineOnHost::new(SimulatedHost);
        let run = json!({"op": "run",
            "workflow": {"manifestVersion": "2", "id": "w", "name": "w",
                         "steps": [{"id": "a", "uses": {"app": "x", "action": "y"}}]},
            "scenario": {"faults": {"crashAfterCheckpoint": [2]}}});
        for request in [
            run,
            json!({"op": "validate", "workflow": {"id": 5}}),
            json!({"op": "validate", "workflow": {}, "runnable": 3}),
            json!({"op": "logic", "logic": {"+": [1, 2]}}),
            json!({"nope": 1}),
        ] {
            let got = host.handle(&request).expect("in process");
            assert_eq!(got, crate::service::handle(&request), "{request}");
        }
    }

    struct Broken;
    impl HostAdapter for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
            Err(StoreError::Io("disk on fire".into()))
        }
        fn validate(
            &mut self,
            _: &Value,
            _: Option<&Value>,
            _: ValidateOptions,
        ) -> Result<(), Vec<ValidationError>> {
            Ok(())
        }
    }

    #[test]
    fn a_host_store_or_validator_is_what_answers() {
        let mut host = EngineOnHost::new(Broken);
        let run = json!({"op": "run", "workflow": {}, "scenario": {}});
        let got = host.handle(&run).expect("in process");
        assert_eq!(got["error"]["code"], "store_error");
        let got = host
            .handle(&json!({"op": "validate", "workflow": {"id": 5}}))
            .expect("in process");
        assert_eq!(got, json!({"ok": true}), "the host's validator answered");
    }
}
