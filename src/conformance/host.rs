//! The host-contract adapter seam: a Rust host plugs in its durable store and save-time
//! validation, and the suite runs *our* engine on them.
//!
//! Owns: the [`HostAdapter`] trait, the reference [`SimulatedHost`], [`EngineOnHost`]
//! (which turns any `HostAdapter` into an op-level [`Adapter`]) and [`run_host`], the one
//! line a host crate's `#[test]` calls. Refuses to know how a host stores things: the
//! contract is the simulator's [`Store`] trait (fold a `RunStatePatch` durably, load a
//! `RunState`, and the `crash`/`restart` hooks).
//!
//! What the suite still owns when a `HostAdapter` is under test: the scripted actions
//! (invocations answer as the case's scenario says), the virtual clock and the fault plan.
//! A crash fault calls the store's `crash` then `restart`; from then on `load` must return
//! exactly the state of the last `checkpoint` that returned (RUN-3), and the engine resumes
//! from it (RUN-4).

use serde_json::{Value, json};

use super::{Adapter, AdapterError, LoadError, RunOptions, SuiteReport};
use crate::model::{ValidateOptions, ValidationError, errors_to_json, validate_save};
use crate::service::{bad_request, ok};
use crate::sim::{MemoryStore, Store, StoreError};

/// What a host must provide for the suite to run the reference engine on it.
///
/// ```no_run
/// use w6w_sim::conformance::{self, HostAdapter, RunOptions};
/// use w6w_sim::sim::{MemoryStore, Store, StoreError};
///
/// struct MyHost;
/// impl HostAdapter for MyHost {
///     fn name(&self) -> String { "my-host 0.1".into() }
///     fn open_store(&mut self) -> Result<Box<dyn Store>, StoreError> {
///         Ok(Box::new(MemoryStore::default())) // your durable store here
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

    /// A fresh, empty durable store for one `run` or `replay` request (each case gets its
    /// own, so cases never see each other's runs). The store's `checkpoint` must return
    /// only once the folded state is durable; its `crash` hook must drop whatever is not,
    /// and `restart` must come back with exactly the durable state (RUN-3).
    fn open_store(&mut self) -> Result<Box<dyn Store>, StoreError>;

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

/// The reference host: the simulator's in-memory store, this crate's validator.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulatedHost;

impl HostAdapter for SimulatedHost {
    fn name(&self) -> String {
        format!("w6w-sim simulated host {}", env!("CARGO_PKG_VERSION"))
    }

    fn open_store(&mut self) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(MemoryStore::default()))
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
            Err(errors) => json!({"error": {"code": "invalid_workflow",
                                             "errors": errors_to_json(&errors)}}),
        }
    }
}

impl<H: HostAdapter> Adapter for EngineOnHost<H> {
    fn name(&self) -> String {
        format!("w6w-sim engine on {}", self.host.name())
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        let op = request.get("op").and_then(Value::as_str);
        // Issue 10: a WOML / YAML run is imported, then run on the host's store like any.
        if op == Some("run") && request.get("dialect").is_some() {
            return Ok(match self.host.open_store() {
                Ok(store) => crate::dialect::ops::run_on(request, store),
                Err(e) => json!({"error": {"code": "store_error",
                                           "message": format!("the host could not open a store: {e}")}}),
            });
        }
        Ok(match op {
            Some("validate") if request.get("dialect").is_some() => crate::service::handle(request),
            Some("run" | "replay") => match self.host.open_store() {
                Ok(store) if op == Some("run") => crate::sim::ops::run_on(request, store),
                Ok(store) => crate::sim::ops::replay_on(request, store),
                Err(e) => json!({"error": {"code": "store_error",
                                           "message": format!("the host could not open a store: {e}")}}),
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
        fn open_store(&mut self) -> Result<Box<dyn Store>, StoreError> {
            Err(StoreError("disk on fire".into()))
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
