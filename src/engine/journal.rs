//! Checkpoint bookkeeping: every state change is a [`RunStatePatch`] (RUN-2).
//!
//! Owns: the engine's mirror of the durable RunState. Invariant: the mirror changes only
//! by applying a patch *after* the host's `checkpoint` returned (RUN-3), so the engine
//! never acts on a state the host could lose. This is the one place issue 5's strands must
//! serialize (FAN-5: one checkpoint in flight, in completion order).

use std::cell::RefCell;

use serde_json::Value;

use super::EngineError;
use crate::host::WorkflowContext;
use crate::model::{RunState, RunStatePatch, StepExecution};

#[derive(Debug)]
pub(crate) struct Journal {
    state: RefCell<RunState>,
}

impl Journal {
    pub(crate) fn new(state: RunState) -> Self {
        Journal {
            state: RefCell::new(state),
        }
    }

    /// A patch for this run with nothing set yet.
    pub(crate) fn patch(&self) -> RunStatePatch {
        RunStatePatch {
            run_id: self.state.borrow().run_id.clone(),
            ..RunStatePatch::default()
        }
    }

    /// A patch that upserts one step record.
    pub(crate) fn step_patch(&self, record: StepExecution) -> RunStatePatch {
        let mut patch = self.patch();
        patch.steps.insert(record.step_id.clone(), record);
        patch
    }

    /// Make `patch` durable through the host, then fold it into the mirror.
    pub(crate) async fn commit<C: WorkflowContext>(
        &self,
        ctx: &C,
        patch: RunStatePatch,
    ) -> Result<(), EngineError> {
        ctx.checkpoint(&patch).await?;
        self.state.borrow_mut().apply(&patch);
        Ok(())
    }

    pub(crate) fn step(&self, step_id: &str) -> Option<StepExecution> {
        self.state.borrow().steps.get(step_id).cloned()
    }

    pub(crate) fn variables(&self) -> Value {
        Value::Object(self.state.borrow().variables.clone())
    }

    pub(crate) fn extra(&self, key: &str) -> Option<Value> {
        self.state.borrow().extra.get(key).cloned()
    }

    pub(crate) fn snapshot(&self) -> RunState {
        self.state.borrow().clone()
    }

    pub(crate) fn into_state(self) -> RunState {
        self.state.into_inner()
    }
}
