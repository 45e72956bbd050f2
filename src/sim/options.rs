//! How a simulation is set up: [`SimOptions`] (the store, the trace, the hooks) and the
//! run's budgets ([`Limits`]). Plain data, read by the drive loop and the simulated host.

use std::path::PathBuf;

use serde_json::Value;

/// Where the simulated host keeps run state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    Memory,
    /// One append-only journal per run in this directory ([`JournalStore`](super::JournalStore)).
    Dir(PathBuf),
}

/// A run's budgets (issue 12 item 4, SEC-2). Each one, when exceeded, stops the run with
/// `limit_exceeded` — through `run`, `eval`, `--store` alike — so no input runs for
/// minutes or fills the memory or the disk. Documented with their defaults in README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Action invocations, top-level and composed, across restarts.
    pub invocations: u64,
    /// Virtual time the run may span, from the epoch (2026-01-01T00:00:00Z), in ms.
    pub virtual_ms: u64,
    /// Bytes of checkpoint patches written (what the store records).
    pub recorded_bytes: u64,
    /// Bytes of trace events (kept in memory or streamed to `--trace`).
    pub trace_bytes: u64,
}

impl Limits {
    /// The defaults: room for every bench and suite run by orders of magnitude, small enough
    /// that `retry.maxAttempts: 1e9` on an always-failing action ends within seconds.
    pub const DEFAULT: Limits = Limits {
        invocations: crate::limits::DEFAULT_INVOCATIONS_MAX,
        virtual_ms: crate::limits::DEFAULT_VIRTUAL_MS_MAX,
        recorded_bytes: crate::limits::DEFAULT_RECORDED_BYTES_MAX,
        trace_bytes: crate::limits::DEFAULT_TRACE_BYTES_MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// How to run the simulator.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub store: StoreChoice,
    /// Testing hook: `std::process::abort()` right after this checkpoint (1-based, counted
    /// across restarts) is durable — a real process death for crash-recovery tests.
    pub abort_after_checkpoint: Option<u64>,
    /// Keep the trace in memory (the bench turns it off for a 10,000-step chain).
    pub keep_trace: bool,
    /// CTRL-7: stop when a `wait` suspends the run (report the queued state and token)
    /// instead of firing the schedule and resuming.
    pub stop_at_suspend: bool,
    /// The run's budgets.
    pub limits: Limits,
    /// SEC-1 judged on what the engine wrote (docs/decisions.md D-207): every checkpoint
    /// and log line of the top-level run is looked through for the scenario's secrets, in
    /// every form, before the redaction sink touches it; a hit stops the run with
    /// [`crate::redact::leak::SECRET_LEAK`]. The engine seams set it for the engine under
    /// test.
    pub judge_secrets: bool,
    /// D-260: the dialect document this run is started or continued from
    /// (`{dialect, documentSha256, workflowSha256}`, written by the CLI with `source_identity`);
    /// `None` for a w6w workflow. A disk store records it in a new run's journal, and
    /// `resume` refuses a run whose journal records another (or none).
    pub source: Option<Value>,
    /// Issue 40: run the script steps of an imported WOML / YAML workflow that the scenario
    /// does not script by id (`--no-scripts` turns it off: carried, not executed).
    pub run_scripts: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions::DEFAULT
    }
}

impl SimOptions {
    /// [`SimOptions::default`], as a value a [`super::Simulation`] borrows when the caller
    /// gives no options of its own.
    pub(crate) const DEFAULT: SimOptions = SimOptions {
        store: StoreChoice::Memory,
        abort_after_checkpoint: None,
        keep_trace: true,
        stop_at_suspend: false,
        limits: Limits::DEFAULT,
        judge_secrets: false,
        source: None,
        run_scripts: true,
    };
}

/// The options a simulation runs with when its caller gives none.
pub(crate) static DEFAULT_OPTIONS: SimOptions = SimOptions::DEFAULT;
