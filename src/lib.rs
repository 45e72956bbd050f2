//! # w6w-sim
//!
//! Reference engine, deterministic simulated host and conformance suite for the w6w
//! Workflow specification (manifestVersion "2").
//!
//! The public API is this page: five modules, each with a runnable example, and the
//! shortcuts below at the crate root. The modules are what a user touches — [`model`]
//! (the documents and run records), [`host`] (the seam a host implements), [`engine`] (the
//! seam an engine implements, and ours), [`sim`] (the simulator) and [`conformance`] (the
//! suite) — and every type a public trait or function mentions is nameable from one of
//! them (D-310). Everything else is `pub(crate)`; `__internals` is not API (D-311).
//!
//! The shortcuts at the root:
//!
//! - **Documents:** [`validate_workflow`] (save-time checks, every problem a
//!   [`ValidationError`] with a stable code and a JSON Pointer) gives a [`Workflow`];
//!   [`plan()`] gives its deterministic execution order ([`Plan`]).
//! - **The simulator:** a [`Simulation`] runs, replays or resumes a workflow against a
//!   [`Scenario`] on a virtual clock with injected faults and crashes, under [`SimOptions`]
//!   and its [`Limits`]; the [`Report`] holds the final [`RunState`], the world and the
//!   trace; every failure is a [`SimError`].
//! - **The host contract:** [`WorkflowContext`] is the engine's only door to the world; a
//!   host supplies durability through [`RunStore`] / [`StoreFactory`], an engine implements
//!   [`WorkflowEngine`] / [`EngineFactory`].
//! - **The conformance suite:** [`run_host`] judges a host's store under our engine,
//!   [`run_engine`] judges an engine against the simulator, [`run_adapter`] judges any
//!   [`Adapter`] (the built-in [`Reference`], or a process in any language); each returns a
//!   [`SuiteReport`] under [`RunOptions`].
//!
//! ```
//! use serde_json::json;
//!
//! let doc = json!({
//!     "manifestVersion": "2", "id": "wf_demo", "name": "demo",
//!     "steps": [
//!         {"id": "fetch", "uses": {"app": "crm", "action": "get"},
//!          "retry": {"maxAttempts": 3, "backoff": "exponential", "delayMs": 1000}},
//!         {"id": "log", "uses": {"app": "audit", "action": "write"},
//!          "with": {"id": {"$": "steps.fetch.output.id"}}}
//!     ]
//! });
//! let workflow = w6w_sim::load_workflow(&doc).expect("a runnable workflow");
//! let order: Vec<&str> = w6w_sim::plan(&workflow)
//!     .expect("no cycle")
//!     .order
//!     .iter()
//!     .map(|&i| workflow.steps[i].id.as_str())
//!     .collect();
//! assert_eq!(order, ["fetch", "log"]);
//!
//! // The first attempt fails with a retryable error (an idempotent action's execute-phase
//! // error); the retry succeeds 1000 ms later.
//! let scenario = w6w_sim::load_scenario(&json!({"actions": {"fetch": {"idempotent": true, "outcomes": [
//!     {"error": {"code": "network_error", "message": "reset", "phase": "execute"}},
//!     {"output": {"id": "acc_42"}}
//! ]}}}))
//! .expect("a valid scenario");
//! let report = w6w_sim::Simulation::new(&workflow, &scenario).run().expect("runs");
//! assert_eq!(report.run.status, w6w_sim::RunStatus::Succeeded);
//! assert_eq!(report.run.steps["fetch"].attempt, 2);
//! ```
//!
//! ARCHITECTURE.md maps the private modules behind these (`mutants` exists only in the
//! dedicated mutant build, `W6W_MUTANTS=1`).
//!
//! Errors vs panics: everything the spec rejects or a user can cause is an `Err` value with
//! a stable machine code; a panic means a bug (an invariant only a bug can break).

#![warn(unreachable_pub)]
// The private modules' docs are for maintainers (`cargo doc --document-private-items`) and
// link the private items they describe; the public modules link only public items.
#![allow(rustdoc::private_intra_doc_links)]

// ---------------------------------------------------------------------------------------
// The private modules, in layer order (ARCHITECTURE.md#layers). Each one is `pub(crate)`
// or private; the five with a public module of the same name below are loaded as
// `*_impl`, and that public module re-exports the API by hand and the rest of the private
// module to the crate with a glob, so `crate::sim::…` means the same inside the crate as
// before (D-310). The layer order binds the `*_impl` files like any other.

#[path = "model/mod.rs"]
mod model_impl;

mod json;
pub(crate) mod limits;
#[cfg(w6w_mutants)]
pub(crate) mod mutants;
mod plan;
mod validate;

mod expr;
mod redact;
mod script;

#[path = "host/mod.rs"]
mod host_impl;

#[path = "engine/mod.rs"]
mod engine_impl;

#[path = "sim/mod.rs"]
mod sim_impl;

mod dialect;
mod service;

mod process;

#[path = "conformance/mod.rs"]
mod conformance_impl;

mod context_protocol;

#[cfg(feature = "cli")]
mod cli;

// ---------------------------------------------------------------------------------------
// The public API (D-310). An item is public when it is named here; the `unreachable_pub`
// lint turns every other `pub` into a warning.

pub use conformance::{
    Adapter, EngineAdapter, HostAdapter, LoadError, Reference, RunOptions, SuiteReport,
    run as run_adapter, run_engine, run_host,
};
pub use engine::{EngineError, EngineFactory, WorkflowEngine};
pub use host::{HostError, RunStore, StoreFactory, WorkflowContext};
pub use model::{
    RunState, RunStatus, StepExecution, StepStatus, ValidationCode, ValidationError, Workflow,
};
pub use plan::{Plan, plan};
pub use sim::{
    Limits, Report, Scenario, SimError, SimOptions, Simulation, StoreChoice, load_scenario,
    load_workflow,
};
pub use validate::{ValidateOptions, validate_workflow};

pub mod model {
    //! The RFC's documents and run records: a [`Workflow`] and its steps, a run's
    //! [`RunState`], the [`RunStatePatch`] a checkpoint carries, and validation problems.
    //!
    //! Every type the [`host`](crate::host) and [`engine`](crate::engine) seams mention is
    //! here. A document is plain serde
    //! (unknown fields are kept in each type's `extra`); [`crate::validate_workflow`] is the
    //! save-time gate that gives one with every problem named.
    //!
    //! ```
    //! use w6w_sim::model::{RunState, RunStatus, Workflow};
    //!
    //! let workflow: Workflow = serde_json::from_value(serde_json::json!({
    //!     "manifestVersion": "2", "id": "wf_demo", "name": "demo",
    //!     "steps": [{"id": "fetch", "uses": {"app": "crm", "action": "get"}}]
    //! }))
    //! .expect("a well-formed document");
    //! assert_eq!(workflow.steps[0].id.as_str(), "fetch");
    //!
    //! let state = RunState::new("run_1", &workflow.id);
    //! assert_eq!(state.status, RunStatus::Queued);
    //! ```

    pub use crate::json::JsonText;
    #[allow(unused_imports)]
    pub(crate) use crate::model_impl::*;
    pub use crate::model_impl::{
        Backoff, BlockKind, Blocks, CallableOnError, Edge, ErrorReroute, Extra, FanOut,
        FrameRecords, Frames, Id, OnError, PatchField, PatchFrames, Phase, RetryPolicy, RunState,
        RunStatePatch, RunStatus, Step, StepError, StepExecution, StepMeta, StepStatus, Uses,
        ValidationCode, ValidationError, When, Workflow, WorkflowVariable,
    };
}

pub mod host {
    //! The host seam: what a host implements so an engine can run on it.
    //!
    //! [`WorkflowContext`] is the engine's only door to the world (RUN-8): invoking actions,
    //! logging, durable checkpoints, loading state, the clock, sleeping, scheduling. A host
    //! that embeds this crate's engine supplies only durability: a [`RunStore`] opened by a
    //! [`StoreFactory`], judged by [`crate::conformance::run_host`]. [`SealingKey`] seals
    //! secrets at rest.
    //!
    //! ```
    //! use std::collections::HashMap;
    //! use w6w_sim::host::{RunStore, StoreError};
    //! use w6w_sim::model::{RunState, RunStatePatch};
    //!
    //! #[derive(Default)]
    //! struct InMemory(HashMap<String, RunState>);
    //!
    //! impl RunStore for InMemory {
    //!     fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
    //!         let state = self.0.entry(patch.run_id.clone()).or_insert_with(|| {
    //!             RunState::new(&patch.run_id, patch.workflow_id.as_deref().unwrap_or(""))
    //!         });
    //!         state.apply(patch);
    //!         Ok(())
    //!     }
    //!     fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
    //!         self.0.insert(state.run_id.clone(), state.clone());
    //!         Ok(())
    //!     }
    //!     fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
    //!         Ok(self.0.get(run_id).cloned())
    //!     }
    //! }
    //!
    //! let mut store = InMemory::default();
    //! store.put(&RunState::new("run_1", "wf_demo")).expect("in memory");
    //! assert!(store.load("run_1").expect("in memory").is_some());
    //! ```

    #[allow(unused_imports)]
    pub(crate) use crate::host_impl::*;
    pub use crate::host_impl::{
        CallableRequest, HostError, InvokeError, InvokeRequest, KeyError, LogLevel, OnExecuted,
        RunInfo, RunStore, RunTrigger, SEALING_KEY_ENV, ScheduleDirective, ScheduleEntry,
        SealingKey, StoreError, StoreFactory, WorkflowContext,
    };
}

pub mod engine {
    //! The engine seam: what an engine implements so a host (the simulator, the suite) can
    //! drive it — [`WorkflowEngine`] booted by an [`EngineFactory`] — and this crate's engine,
    //! [`ReferenceEngine`] ([`Engine`] once booted).
    //!
    //! An engine talks to the world only through [`crate::host::WorkflowContext`]; a run is
    //! started from a [`RunSeed`]; anything but a run's own failure is an [`EngineError`].
    //! [`crate::conformance::run_engine`] judges an engine against the simulator.
    //!
    //! ```
    //! use w6w_sim::engine::{EngineFactory, ReferenceEngine, RunSeed};
    //!
    //! let workflow = w6w_sim::load_workflow(&serde_json::json!({
    //!     "manifestVersion": "2", "id": "wf_demo", "name": "demo",
    //!     "steps": [{"id": "fetch", "uses": {"app": "crm", "action": "get"}}]
    //! }))
    //! .expect("a runnable workflow");
    //! let _engine = ReferenceEngine.boot(&workflow).expect("boots");
    //!
    //! let scenario = Default::default();
    //! let report = w6w_sim::sim::Simulation::with_engine(&ReferenceEngine, &workflow, &scenario)
    //!     .run()
    //!     .expect("runs");
    //! assert_eq!(report.run.status, w6w_sim::model::RunStatus::Succeeded);
    //! assert_eq!(RunSeed::manual("run_1").call_depth, 0);
    //! ```

    pub use crate::engine_impl::{Engine, EngineError, RunResult, RunSeed};
    // The seam sits in `sim` (above `engine`, whose types it names); its public home is
    // here, where an engine author looks (D-310).
    #[allow(unused_imports)]
    pub(crate) use crate::engine_impl::*;
    pub use crate::sim_impl::{EngineFactory, ReferenceEngine, WorkflowEngine};
}

pub mod sim {
    //! The deterministic simulator: run a [`crate::model::Workflow`] against a [`Scenario`]
    //! (scripted action outcomes, faults, crashes) on a virtual clock.
    //!
    //! A [`Simulation`] runs, replays or resumes one: with this crate's engine
    //! ([`Simulation::new`]) or any [`crate::engine::EngineFactory`]
    //! ([`Simulation::with_engine`]), on the store [`SimOptions`] chooses or one you give
    //! ([`Simulation::store`], [`Simulation::host_store`]), and [`Simulation::crash_points`]
    //! answers "a crash right after checkpoint k" for every k. Each gives a [`Report`] (the final
    //! run state, the world, the trace) or a [`SimError`].
    //!
    //! ```
    //! use serde_json::json;
    //! use w6w_sim::sim::{self, SimOptions};
    //!
    //! let workflow = sim::load_workflow(&json!({
    //!     "manifestVersion": "2", "id": "wf_demo", "name": "demo",
    //!     "steps": [{"id": "fetch", "uses": {"app": "crm", "action": "get"}}]
    //! }))
    //! .expect("a runnable workflow");
    //! let scenario = sim::load_scenario(&json!({
    //!     "actions": {"fetch": {"outcomes": [{"output": {"id": "acc_42"}}]}}
    //! }))
    //! .expect("a valid scenario");
    //! let options = SimOptions::default();
    //! let report = sim::Simulation::new(&workflow, &scenario)
    //!     .options(&options)
    //!     .run()
    //!     .expect("runs");
    //! assert_eq!(report.run.steps["fetch"].attempt, 1);
    //! assert_eq!(report.world.invocations.len(), 1);
    //! ```

    #[allow(unused_imports)]
    pub(crate) use crate::sim_impl::*;
    pub use crate::sim_impl::{
        CrashPoints, JournalStore, Limits, MemoryStore, Report, Scenario, ScenarioError, SimError,
        SimOptions, Simulation, Store, StoreChoice, StoreFromOptions, StoreGiven, WorldSnapshot,
        load_scenario, load_workflow, parse_scenario,
    };
}

pub mod conformance {
    //! The conformance suite: judge a candidate against the spec's cases and get a
    //! [`SuiteReport`].
    //!
    //! Three ways in: [`run_host`] (a [`HostAdapter`]: your store under our engine),
    //! [`run_engine`] (an [`EngineAdapter`]: your engine under our simulator) and [`run`] (any
    //! [`Adapter`] answering op requests: the in-process [`Reference`], a [`ProcessAdapter`]
    //! speaking JSON lines, an [`EngineProcess`] or [`HostProcess`] speaking the context
    //! protocol). [`RunOptions`] selects cases; a [`Capabilities`] profile marks what a
    //! candidate leaves out as not applicable.
    //!
    //! ```
    //! use w6w_sim::conformance::{self, Reference, RunOptions};
    //!
    //! let options = RunOptions { clauses: vec!["PLAN-1".into()], ..Default::default() };
    //! let report = conformance::run(&mut Reference, &options).expect("the suite loads");
    //! assert!(report.passed() > 0);
    //! report.assert_all_passed();
    //! ```

    #[allow(unused_imports)]
    pub(crate) use crate::conformance_impl::*;
    pub use crate::conformance_impl::{
        Adapter, AdapterError, CAPABILITIES, Capabilities, Case, CaseResult, ClauseRow,
        DEFAULT_DEADLINE, EngineAdapter, EngineOnHost, EngineOnSim, Evidence, FnAdapter,
        HostAdapter, LoadError, LoadProblem, MemoryDisk, ProcessAdapter, ProcessOptions, Reference,
        ReferenceEngineAdapter, RunAndCrashes, RunOptions, Selection, SelectionSummary,
        SimulatedHost, Suite, SuiteReport, UnknownCapability, WithCapabilities, run, run_engine,
        run_host,
    };
    pub use crate::context_protocol::host_seam::HostProcess;
    pub use crate::context_protocol::{EngineOptions, EngineProcess};
}

#[doc(hidden)]
pub mod __internals {
    //! Not API: what the crate's benches, fuzz targets, the binary and the integration tests
    //! that exercise an internal need, named by its private path. May change in any release
    //! (D-311); the compile test `tests/integration/public_api.rs` never names it.

    #[cfg(feature = "cli")]
    pub use crate::cli::main as cli_main;

    /// Not API (D-311).
    pub mod conformance {
        pub use crate::conformance_impl::{clause_catalogue, default_cases_dir, split_command};
        /// Not API (D-311): the seeded workflow generator and its model.
        pub mod generate {
            pub use crate::conformance_impl::generate::{
                GenOutcome, GenStep, Generated, Model, SECRET, check,
            };
        }
        /// Not API (D-311): the mutant build's catalogue (`W6W_MUTANTS=1`).
        #[cfg(w6w_mutants)]
        pub mod mutants {
            pub use crate::conformance_impl::mutants::{
                AnyMutant, Mutant, kill_table, kill_table_text, with_mutant,
            };
        }
    }

    /// Not API (D-311).
    pub mod context_protocol {
        pub use crate::context_protocol::serve::serve_engine;
    }

    /// Not API (D-311).
    pub mod dialect {
        pub use crate::dialect::{
            Dialect, Manifest, import, run, script_failure_kinds, split_manifest,
        };
    }

    /// Not API (D-311): the expression layer, for its properties, benches and fuzz targets.
    pub mod expr {
        pub use crate::expr::{
            CompiledWith, DataRoot, DataScope, Dialect, ExprCode, Logic, MAX_NESTING_DEPTH,
            MAX_TEMPLATE_BYTES, Mode, Part, REDACTED, ResolveCode, ResolveError, ResolveMode,
            ResolveOptions, Resolved, RunScope, Secrets, parse_root_anchored, parse_template,
            resolve_with, serialize_template,
        };
    }

    /// Not API (D-311).
    pub mod json {
        pub use crate::json::{json_diff, json_eq, parse_bytes};
    }

    /// Not API (D-311).
    pub mod limits {
        pub use crate::limits::MAX_NESTING_DEPTH;
    }

    /// Not API (D-311).
    pub mod plan {
        pub use crate::plan::Edges;
    }

    /// Not API (D-311).
    pub mod redact {
        pub use crate::redact::leak::Detector;
    }

    /// Not API (D-311): the op service `w6w-sim eval` speaks.
    pub mod service {
        pub use crate::service::{handle, handle_bytes, handle_line};
    }

    /// Not API (D-311): the simulator's stores, journal and page.
    pub mod sim {
        #[cfg(feature = "cli")]
        pub use crate::sim_impl::html::page;
        pub use crate::sim_impl::journal::{MAGIC, read_journal, read_run_file};
        pub use crate::sim_impl::scenario::Faults;
        pub use crate::sim_impl::world::Invocation;
        pub use crate::sim_impl::{EPOCH_MS, check_source, with_stack};
    }
}
