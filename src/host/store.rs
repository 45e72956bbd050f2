//! The durable half of the host contract (RFC: `state.checkpoint` / `state.load`) as a
//! Rust trait a host crate implements, with no simulator type in any signature.
//!
//! Owns: [`RunStore`] (fold a `RunStatePatch` durably, replace a run, load it), its typed
//! [`StoreError`], and [`StoreFactory`] — how the suite reopens a store after a crash.
//!
//! Invariant (RUN-3): `checkpoint` returns `Ok` only once the folded state is durable. The
//! suite never asks a store whether it is durable and never calls a "crash" hook on it: a
//! simulated crash *drops* the store object without running its destructor-time work
//! (the object is parked until the run is over, like a dead process's memory) and opens a
//! fresh one from the [`StoreFactory`]; that fresh object's `load` must return exactly
//! the state of the last acknowledged checkpoint. A store that keeps acknowledged writes in
//! a volatile cache fails, naming RUN-3.

use serde::{Deserialize, Serialize};

use crate::model::{RunState, RunStatePatch};

/// Why a store could not do what was asked. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The storage medium failed (`store_io`).
    #[error("storage I/O failed: {0}")]
    Io(String),
    /// What the medium holds cannot be read back as a run (`store_corrupt`).
    #[error("stored run is corrupt: {0}")]
    Corrupt(String),
    /// The run id cannot be stored by this host (`invalid_run_id`).
    #[error("run id {0:?} cannot be stored")]
    InvalidRunId(String),
    /// The store is not available at all, e.g. it could not be opened (`store_unavailable`).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// This host does not keep what was asked, e.g. `schedule` (`store_unsupported`).
    #[error("this host does not support {0}")]
    Unsupported(&'static str),
}

impl StoreError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io(_) => "store_io",
            StoreError::Corrupt(_) => "store_corrupt",
            StoreError::InvalidRunId(_) => "invalid_run_id",
            StoreError::Unavailable(_) => "store_unavailable",
            StoreError::Unsupported(_) => "store_unsupported",
        }
    }
}

/// One durable timer (CTRL-7): the host's half of `WorkflowContext.schedule` for a `wait`.
/// When the clock reaches `fire_at_ms` the host resumes run `run_id` with exactly
/// `resume_token`. Under the suite the clock is the suite's virtual clock (ms since the
/// Unix epoch), so the suite fires the schedule — after restarting the host and reading the
/// entry back from it (D-103).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleEntry {
    pub run_id: String,
    pub resume_token: String,
    pub fire_at_ms: u64,
}

/// A host's durable run store: what `WorkflowContext.state` persists to, and (optionally)
/// the timers `WorkflowContext.schedule` sets.
pub trait RunStore {
    /// Fold `patch` into its run's state (a run seen for the first time starts as
    /// `RunState::new(patch.run_id, patch.workflow_id)`, see [`RunState::apply`]) and make
    /// the result durable before returning `Ok` (RUN-3).
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError>;

    /// Replace a run's state outright, durably (the suite seeds a replay with this).
    fn put(&mut self, state: &RunState) -> Result<(), StoreError>;

    /// The run's durable state, or `None` for a run never checkpointed. Idempotent.
    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError>;

    /// CTRL-7: keep a `wait`'s schedule, durably before returning `Ok` — a restarted
    /// process must still fire it (D-103). Default: this host keeps no schedules
    /// ([`StoreError::Unsupported`]); declare a profile without `schedule` then, and the
    /// suite reports the `wait` cases not applicable.
    fn schedule(&mut self, entry: &ScheduleEntry) -> Result<(), StoreError> {
        let _ = entry;
        Err(StoreError::Unsupported("schedule"))
    }

    /// The schedules kept for `run_id` that have not fired, in any order.
    fn schedules(&self, run_id: &str) -> Result<Vec<ScheduleEntry>, StoreError> {
        let _ = run_id;
        Ok(Vec::new())
    }

    /// The schedule with `resume_token` fired: forget it, durably.
    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        let _ = (run_id, resume_token);
        Ok(())
    }
}

impl<S: RunStore + ?Sized> RunStore for Box<S> {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
        (**self).checkpoint(patch)
    }
    fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
        (**self).put(state)
    }
    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        (**self).load(run_id)
    }
    fn schedule(&mut self, entry: &ScheduleEntry) -> Result<(), StoreError> {
        (**self).schedule(entry)
    }
    fn schedules(&self, run_id: &str) -> Result<Vec<ScheduleEntry>, StoreError> {
        (**self).schedules(run_id)
    }
    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        (**self).unschedule(run_id, resume_token)
    }
}

/// Opens a store on one durable medium (a directory, a database schema, …). The suite
/// calls [`StoreFactory::open`] once when a run starts and again after every simulated
/// crash, exactly as a restarted process would reopen its storage; every store it opens
/// must see what the earlier ones made durable. Any `FnMut() -> Result<Box<dyn RunStore>,
/// StoreError>` closure is a factory.
pub trait StoreFactory {
    fn open(&mut self) -> Result<Box<dyn RunStore>, StoreError>;
}

impl<F: FnMut() -> Result<Box<dyn RunStore>, StoreError>> StoreFactory for F {
    fn open(&mut self) -> Result<Box<dyn RunStore>, StoreError> {
        self()
    }
}
