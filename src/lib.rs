//! # w6w-sim
//!
//! Reference engine, deterministic simulated host and conformance suite for the w6w
//! Workflow specification (manifestVersion "2").
//!
//! What a user needs is at the crate root:
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
//! The modules behind the façade stay public for the crate's own tests, benches and the
//! CLI, but are hidden from these docs and may change without notice; ARCHITECTURE.md
//! maps them (`mutants` exists only in the dedicated mutant build, `W6W_MUTANTS=1`).
//!
//! Errors vs panics: everything the spec rejects or a user can cause is an `Err` value with
//! a stable machine code; a panic means a bug (an invariant only a bug can break).

#![warn(unreachable_pub)]
// The hidden modules' docs are for maintainers (`cargo doc --document-private-items`) and
// link the private items they describe; the façade above links only public items.
#![allow(rustdoc::private_intra_doc_links)]

pub use conformance::{
    Adapter, EngineAdapter, HostAdapter, LoadError, Reference, RunOptions, SuiteReport,
    run as run_adapter, run_engine, run_host,
};
pub use engine::EngineError;
pub use host::{HostError, RunStore, StoreFactory, WorkflowContext};
pub use model::{
    RunState, RunStatus, StepExecution, StepStatus, ValidationCode, ValidationError, Workflow,
};
pub use plan::{Plan, plan};
pub use sim::{
    EngineFactory, Limits, Report, Scenario, SimError, SimOptions, Simulation, StoreChoice,
    WorkflowEngine, load_scenario, load_workflow,
};
pub use validate::{ValidateOptions, validate_workflow};

#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod conformance;
#[doc(hidden)]
pub mod context_protocol;
#[doc(hidden)]
pub mod dialect;
#[doc(hidden)]
pub mod engine;
#[doc(hidden)]
pub mod expr;
#[doc(hidden)]
pub mod host;
#[doc(hidden)]
pub mod json;
#[doc(hidden)]
pub mod limits;
#[doc(hidden)]
pub mod model;
#[cfg(w6w_mutants)]
#[doc(hidden)]
pub mod mutants;
#[doc(hidden)]
pub mod plan;
pub(crate) mod process;
#[doc(hidden)]
pub mod redact;
#[doc(hidden)]
pub mod script;
#[doc(hidden)]
pub mod service;
#[doc(hidden)]
pub mod sim;
#[doc(hidden)]
pub mod validate;
