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
}

impl StoreError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io(_) => "store_io",
            StoreError::Corrupt(_) => "store_corrupt",
            StoreError::InvalidRunId(_) => "invalid_run_id",
            StoreError::Unavailable(_) => "store_unavailable",
        }
    }
}

/// A host's durable run store: what `WorkflowContext.state` persists to.
pub trait RunStore {
    /// Fold `patch` into its run's state (a run seen for the first time starts as
    /// `RunState::new(patch.run_id, patch.workflow_id)`, see [`RunState::apply`]) and make
    /// the result durable before returning `Ok` (RUN-3).
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError>;

    /// Replace a run's state outright, durably (the suite seeds a replay with this).
    fn put(&mut self, state: &RunState) -> Result<(), StoreError>;

    /// The run's durable state, or `None` for a run never checkpointed. Idempotent.
    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError>;
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
