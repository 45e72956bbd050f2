//! The deterministic simulated host: the reference `WorkflowContext`.
//!
//! Owns: all nondeterminism of a simulated run — the virtual clock, scripted actions, the
//! fault plan, the durable stores (memory, an on-disk journal), the trace and the report — and
//! the executor that drives the engine. Invariant: the same workflow and scenario always
//! give the same report and trace, byte for byte; nothing reads a real clock.
//!
//! Where to start: [`Simulation`] (`simulation.rs`), the one way to ask for a run — from the
//! top (crashing and resuming as the fault plan says), replayed, resumed from a store a real
//! process left, or as a crash-point campaign (`crash_points.rs`). One simulation is driven by
//! the loop in `drive.rs` through a [`driver`] (this crate's engine, an [`EngineFactory`]'s,
//! a candidate's); `durable.rs` checks a candidate host's store (RUN-3), `resume.rs` picks a
//! stored run up again; `options.rs`, `errors.rs`, `report.rs` hold what goes in and out.
//!
//! The executor ([`exec`]) runs in virtual time: action latencies and backoff waits are
//! timers, and when every strand is blocked the clock jumps to the earliest one (ties by
//! creation order), so concurrency is deterministic. A future pending with no timer left is
//! either a simulated crash (the run is dropped, exactly like a dead process, and a fresh
//! engine resumes from the store) or a bug (reported as `sim_stalled`, never a hang). A run
//! a `wait` suspends is resumed by firing its schedule: the clock moves to the scheduled
//! time and the engine resumes with the token (unless `stop_at_suspend`).

mod crash_points;
mod drive;
pub(crate) mod driver;
mod durable;
mod engine_seam;
mod errors;
pub(crate) mod exec;
pub(crate) mod host;
mod hosted;
#[cfg(feature = "cli")]
pub(crate) mod html;
#[cfg(feature = "cli")]
pub(crate) mod inspect;
pub(crate) mod journal;
mod options;
mod report;
mod resume;
pub(crate) mod scenario;
mod scripts;
mod simulation;
pub(crate) mod store;
pub(crate) mod world;

pub(crate) use crate::redact::Scrubber;
pub use crash_points::CrashPoints;
pub(crate) use crash_points::{Fork, Forks};
pub(crate) use driver::{Driver, Mode};
pub(crate) use durable::Acked;
pub use engine_seam::{EngineFactory, ReferenceEngine, WorkflowEngine};
pub(crate) use errors::check_reachable;
pub use errors::{SimError, load_scenario, load_workflow};
pub use journal::JournalStore;
pub use options::{Limits, SimOptions, StoreChoice};
pub use report::Report;
pub use resume::check_source;
pub use scenario::{Scenario, ScenarioError, parse_scenario};
pub use simulation::{Simulation, StoreFromOptions, StoreGiven};
#[cfg(test)]
pub(crate) use store::DiskStore;
pub use store::{MemoryStore, Store};
pub(crate) use store::{STORE_FORMAT, StoreError, StoredRun};
pub use world::{EPOCH_MS, WorldSnapshot};

/// The stack a simulation runs on when its caller's is short: engine futures of an
/// unoptimised build are large, and a `cargo test` thread has only 2 MiB. Reserved, not
/// committed: only the pages touched are memory.
pub(crate) use crate::limits::SIM_STACK_BYTES;

use crate::limits::STACK_RED_ZONE;

/// Run `f` with at least [`STACK_RED_ZONE`] bytes of stack, on a fresh stack segment of this
/// thread when the caller's is shorter (no thread, so nothing needs to be `Send`).
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, SIM_STACK_BYTES, f)
}
