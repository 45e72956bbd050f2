//! The engine seam, seen from the host: what the simulator (or any host) drives.
//!
//! Owns: [`WorkflowEngine`] (start / resume / replay a run against a
//! [`WorkflowContext`]) and [`EngineFactory`] (boot an engine for one workflow), with
//! [`ReferenceEngine`] booting this crate's engine. A Rust engine under test implements
//! these two traits; the conformance suite hands it the simulator's `WorkflowContext` and
//! observes every effect itself. They name the engine's own types (`RunSeed`,
//! `EngineError`), so they sit above `engine` — here, in the simulator that drives them,
//! not in `host`, which the engine itself imports (ARCHITECTURE.md#layers).
//!
//! Invariant: an engine reports nothing about a run but errors of the run as a whole — the
//! run's state is what its checkpoints made durable, read back by the host. A simulated crash drops the engine
//! (and its in-flight future) and boots a fresh one from the factory, which can recover
//! only through `WorkflowContext::load`.

// Like `WorkflowContext`: `async fn`, not object-safe on purpose — a simulated run polls
// one engine future on one thread, which keeps it deterministic.
#![allow(async_fn_in_trait)]

use crate::engine::{Engine, EngineError, RunSeed};
use crate::host::WorkflowContext;
use crate::model::Workflow;

/// A workflow engine, booted for one workflow.
pub trait WorkflowEngine {
    /// Start a run from `seed` (RUN-*): checkpoint as it goes; `Ok` once the run is
    /// terminal or suspended (a `wait`, CTRL-7). A run that *fails* is `Ok` — its state
    /// says so. `Err` only when the run could not be taken anywhere (rejected variables,
    /// an unrunnable workflow, a host error such as [`crate::host::HostError::Crashed`]).
    async fn start<C: WorkflowContext>(&self, seed: RunSeed, ctx: &C) -> Result<(), EngineError>;

    /// Continue a run from its durable state (`ctx.load`): after a crash (`token` `None`,
    /// RUN-4), or a run a `wait` suspended, with that wait's resume token (CTRL-7).
    async fn resume<C: WorkflowContext>(
        &self,
        run_id: &str,
        token: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError>;

    /// Replay a finished run the host holds (REPLAY-*), optionally `from` a step.
    async fn replay<C: WorkflowContext>(
        &self,
        run_id: &str,
        from: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError>;
}

/// Boots engines: once per run request, and again after every simulated crash (a fresh
/// process), so an engine keeps nothing across a crash but what it checkpointed.
pub trait EngineFactory {
    /// The engine booted for one workflow.
    type Engine<'w>: WorkflowEngine
    where
        Self: 'w;

    /// A fresh engine for `workflow` (already validated as runnable). `Err` rejects the
    /// run before it starts (e.g. a step kind this engine cannot run).
    fn boot<'w>(&'w self, workflow: &'w Workflow) -> Result<Self::Engine<'w>, EngineError>;
}

impl WorkflowEngine for Engine<'_> {
    async fn start<C: WorkflowContext>(&self, seed: RunSeed, ctx: &C) -> Result<(), EngineError> {
        self.run(seed, ctx).await.map(drop)
    }

    async fn resume<C: WorkflowContext>(
        &self,
        run_id: &str,
        token: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError> {
        self.resume_with(run_id, token, ctx).await.map(drop)
    }

    async fn replay<C: WorkflowContext>(
        &self,
        run_id: &str,
        from: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError> {
        Engine::replay(self, run_id, from, ctx).await.map(drop)
    }
}

/// This crate's engine as an [`EngineFactory`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ReferenceEngine;

impl EngineFactory for ReferenceEngine {
    type Engine<'w> = Engine<'w>;

    fn boot<'w>(&'w self, workflow: &'w Workflow) -> Result<Engine<'w>, EngineError> {
        Engine::new(workflow)
    }
}
