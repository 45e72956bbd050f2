//! The engine-under-test seam for Rust: a crate's engine runs against the suite's
//! `WorkflowContext`, and the suite judges it by what it observed.
//!
//! Owns: [`EngineAdapter`] (an engine crate's [`EngineFactory`] plus its name, profile and
//! optional pure ops), [`EngineOnSim`] (which turns one into an op-level [`Adapter`]) and
//! [`run_engine`], the one line an engine crate's `#[test]` calls.
//!
//! The suite plays the host: `run` and `replay` requests run the candidate engine on the
//! simulator — scripted actions, virtual clock, fault plan, the suite's own store — and
//! the report is built from what the simulator observed (invocations, checkpoints it
//! stored, waits, crashes, clock). The engine never reports its own invocations or
//! checkpoints. A crash drops the engine and its in-flight future and boots a fresh one
//! from the factory, which can recover only through `load`. Child runs of `@w6w/call` and
//! run-level reroutes are the host's to run (`invoke_callable`), on the reference engine.

use serde_json::{Value, json};

use super::{Adapter, AdapterError, Capabilities, LoadError, RunOptions, SuiteReport};
use crate::service::bad_request;
use crate::sim::SimOptions;
use crate::sim::{EngineFactory, ReferenceEngine};

/// A Rust engine under test.
///
/// ```no_run
/// use w6w_sim::conformance::{self, Capabilities, EngineAdapter, RunOptions};
/// use w6w_sim::engine::ReferenceEngine;
///
/// struct Mine;
/// impl EngineAdapter for Mine {
///     type Factory = ReferenceEngine; // your EngineFactory here
///     fn name(&self) -> String { "my-engine 0.1".into() }
///     fn factory(&self) -> &ReferenceEngine { &ReferenceEngine }
///     fn capabilities(&self) -> Capabilities { Capabilities::engine_core() }
/// }
///
/// // In a `#[test]` of the engine crate:
/// conformance::run_engine(Mine, &RunOptions::default())
///     .expect("the suite loads")
///     .assert_all_passed();
/// ```
pub trait EngineAdapter {
    type Factory: EngineFactory;

    /// A human-readable name for reports, e.g. `my-engine 1.4.0`.
    fn name(&self) -> String;

    /// Boots the engine: once per run request and after every simulated crash.
    fn factory(&self) -> &Self::Factory;

    /// What the engine supports; cases needing anything else are reported not applicable.
    fn capabilities(&self) -> Capabilities;

    /// The pure ops (`validate`, `plan`, `logic`, `resolve`, `parse`, `serialize`, `saves`)
    /// for an engine that offers them: `Some(response)` in the op service's shape. Default:
    /// none (those cases are not applicable unless the profile claims them, and then they
    /// fail with `unsupported_op`).
    fn handle_op(&mut self, request: &Value) -> Option<Value> {
        let _ = request;
        None
    }
}

/// An engine under test as an op-level [`Adapter`].
#[derive(Debug, Clone, Default)]
pub struct EngineOnSim<E> {
    engine: E,
}

impl<E: EngineAdapter> EngineOnSim<E> {
    pub fn new(engine: E) -> Self {
        EngineOnSim { engine }
    }
}

impl<E: EngineAdapter> Adapter for EngineOnSim<E> {
    fn name(&self) -> String {
        self.engine.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.engine.capabilities()
    }

    /// The engine ran against the suite's own simulated host, which saw everything (D-102).
    fn evidence(&self, _: super::adapter::sealed::Seal) -> super::Evidence {
        super::Evidence::Observed
    }

    /// D-379 at the Rust seam: the engine is booted with a workflow the suite already
    /// validated, so a run or replay the suite answers before booting it (an invalid
    /// workflow, scenario or budget, a fault no run reaches, a dialect document the import
    /// refuses, a replay without a usable run) is the suite's answer, never the engine's.
    /// Decided by handling the request itself with a [`Probe`] for the engine, which
    /// records whether the suite got as far as booting one and runs nothing.
    fn unjudged(&self, case: &super::Case) -> Option<&'static str> {
        if !matches!(
            case.request.get("op").and_then(Value::as_str),
            Some("run" | "replay")
        ) {
            return None;
        }
        let mut probe = EngineOnSim::new(Probe::default());
        // Whatever the probe's answer, only whether it was booted is asked.
        let _ = probe.handle(&case.request);
        (!probe.engine.booted.get()).then_some(super::capability::SEAM_ENGINE)
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        let factory = self.engine.factory();
        // The run's budgets (`"limits"`), as for the in-process `run` op.
        let mut options: SimOptions = match crate::service::sim::op_options(request) {
            Ok(o) => o,
            Err(response) => return Ok(response),
        };
        // SEC-1 is judged on what the engine wrote, before anything is redacted (D-207).
        options.judge_secrets = true;
        let run = |plain: &Value| {
            crate::service::sim::run_with(plain, |workflow, scenario| {
                crate::sim::Simulation::with_engine(factory, workflow, scenario)
                    .options(&options)
                    .run()
            })
        };
        let op = request.get("op").and_then(Value::as_str);
        let judged = |answer: Value| match answer.pointer("/error/code").and_then(Value::as_str) {
            Some(crate::redact::leak::SECRET_LEAK) => Err(AdapterError::Protocol(
                answer
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("SEC-1: the engine wrote a secret")
                    .to_owned(),
            )),
            _ => Ok(answer),
        };
        // A WOML / YAML run: the suite imports it, the engine runs the plain w6w request.
        if op == Some("run") && request.get("dialect").is_some() {
            let answer: Result<Value, std::convert::Infallible> =
                crate::service::dialect::run_with(request, |plain| Ok(run(plain)));
            return judged(match answer {
                Ok(v) => v,
                Err(never) => match never {},
            });
        }
        judged(match op {
            Some("run") => run(request),
            Some("replay") => replay(factory, request, &options)?,
            Some(op) => {
                let op = op.to_owned();
                self.engine.handle_op(request).unwrap_or_else(|| {
                    json!({"error": {"code": "unsupported_op",
                        "message": format!("engine {} does not offer the {op:?} op", self.engine.name())}})
                })
            }
            None => bad_request("a request needs a string \"op\" field"),
        })
    }
}

/// The `replay` op on `factory`'s engine. D-378, D-380: a report the engine did not write
/// is not judged as a replay (`Report::not_a_replay`), whatever its answer would be.
fn replay<F: EngineFactory>(
    factory: &F,
    request: &Value,
    options: &SimOptions,
) -> Result<Value, AdapterError> {
    let mut not_a_replay = None;
    let answer = crate::service::sim::replay_with(request, |workflow, scenario, original, from| {
        let result = crate::sim::Simulation::with_engine(factory, workflow, scenario)
            .options(options)
            .replay(original, from);
        not_a_replay = result.as_ref().ok().and_then(|r| r.not_a_replay());
        result
    });
    match not_a_replay {
        Some(why) => {
            let run = request
                .pointer("/run/runId")
                .and_then(Value::as_str)
                .unwrap_or("");
            Err(AdapterError::Protocol(format!(
                "the replay of run {run:?} {why}"
            )))
        }
        None => Ok(answer),
    }
}

/// An engine under test that boots nothing: [`EngineOnSim::unjudged`]'s probe of whether
/// a request reaches the engine at all. Its factory records the boot and refuses it.
#[derive(Debug, Default)]
struct Probe {
    booted: std::cell::Cell<bool>,
}

impl EngineFactory for Probe {
    type Engine<'w> = crate::engine::Engine<'w>;

    fn boot<'w>(
        &'w self,
        _: &'w crate::model::Workflow,
    ) -> Result<Self::Engine<'w>, crate::engine::EngineError> {
        self.booted.set(true);
        Err(crate::engine::EngineError::UnsupportedStep {
            step_id: String::new(),
            message: "the probe of whether a request reaches the engine boots none".into(),
        })
    }
}

impl EngineAdapter for Probe {
    type Factory = Probe;

    fn name(&self) -> String {
        "probe".into()
    }

    fn factory(&self) -> &Probe {
        self
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }
}

/// This crate's engine through the engine seam (every capability, the reference's pure
/// ops): proves the seam end to end.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReferenceEngineAdapter;

impl EngineAdapter for ReferenceEngineAdapter {
    type Factory = ReferenceEngine;

    fn name(&self) -> String {
        format!(
            "w6w-sim reference engine {} (engine seam)",
            env!("CARGO_PKG_VERSION")
        )
    }

    fn factory(&self) -> &ReferenceEngine {
        &ReferenceEngine
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn handle_op(&mut self, request: &Value) -> Option<Value> {
        Some(crate::service::handle(request))
    }
}

/// Run the suite (cases and generated workflows, as `options` says) against a Rust engine:
/// the one call an engine crate's `#[test]` makes.
pub fn run_engine<E: EngineAdapter>(
    engine: E,
    options: &RunOptions,
) -> Result<SuiteReport, LoadError> {
    super::run(&mut EngineOnSim::new(engine), options)
}
