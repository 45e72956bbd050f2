//! Replay (REPLAY-1…5): re-execute a finished run without re-invoking what succeeded.
//!
//! Owns: deciding which recorded StepExecutions a replay carries over verbatim. Invariant:
//! the replay's first checkpoint resets the run and re-inserts exactly the carried records,
//! so from then on replay is the ordinary walk — and a crash mid-replay resumes correctly
//! with no replay-specific state.

use indexmap::IndexMap;
use serde_json::json;

use super::journal::Journal;
use super::routing::descendants;
use super::run::Engine;
use super::{EngineError, RunResult};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{
    PatchField, RunState, RunStatePatch, RunStatus, StepError, StepExecution, StepStatus,
};

/// Records a replay reuses verbatim on every pass of its ladder.
#[derive(Debug, Clone, Default)]
pub(crate) struct Carried {
    pub(crate) records: IndexMap<String, std::sync::Arc<StepExecution>>,
    pub(crate) step_errors: Vec<StepError>,
}

impl Engine<'_> {
    /// Replay run `run_id` (loaded through the host). Without `from`: every originally
    /// succeeded step's record (output and meta) is reused; failed, skipped and never-run
    /// steps run fresh (REPLAY-1, REPLAY-2, REPLAY-5). With `from`: that step and all its
    /// graph descendants run fresh; every other step's terminal record is reused as it was
    /// (REPLAY-4). The run-level ladder applies, as for any run.
    pub async fn replay<C: WorkflowContext>(
        &self,
        run_id: &str,
        from: Option<&str>,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        // SEC-1 (D-207): what the engine writes is scrubbed by the engine, not its host.
        self.replay_run(run_id, from, &super::sink::Sunk::new(ctx))
            .await
    }

    async fn replay_run<C: WorkflowContext>(
        &self,
        run_id: &str,
        from: Option<&str>,
        ctx: &C,
    ) -> Result<RunResult, EngineError> {
        let original = ctx
            .load(run_id)
            .await?
            .ok_or_else(|| EngineError::RunNotFound(run_id.to_owned()))?;
        self.check_replayable(run_id, &original)?;
        let carried = self.carried(&original, from)?;
        ctx.log(
            LogLevel::Info,
            &format!(
                "replay of run {run_id}{}: reusing {} recorded step(s)",
                from.map(|f| format!(" from {f}")).unwrap_or_default(),
                carried.records.len()
            ),
            None,
        );
        let journal = Journal::new(original.clone());
        let start = self.replay_start(&journal, &original, from, &carried);
        journal.commit(ctx, start).await?;
        self.ladder(ctx, journal, &carried, 0).await
    }

    /// Only a finished run of this workflow is replayed.
    fn check_replayable(&self, run_id: &str, original: &RunState) -> Result<(), EngineError> {
        let refuse = |message| {
            Err(EngineError::NotResumable {
                run_id: run_id.to_owned(),
                action: "replayed",
                message,
            })
        };
        if original.workflow_id != self.workflow.id {
            return refuse(format!(
                "it belongs to workflow {:?}, not {:?}",
                original.workflow_id, self.workflow.id
            ));
        }
        if !original.status.is_terminal() {
            return refuse(format!(
                "it is {} (replay re-executes a finished run; resume continues an unfinished one)",
                original.status.as_str()
            ));
        }
        Ok(())
    }

    /// Per step index: whether a replay `from` that step runs it fresh (REPLAY-4).
    fn fresh_steps(&self, from: Option<&str>) -> Result<Vec<bool>, EngineError> {
        let Some(id) = from else {
            return Ok(vec![false; self.workflow.steps.len()]);
        };
        let index = self
            .workflow
            .steps
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| EngineError::UnknownStep(id.to_owned()))?;
        // REPLAY-4 inside a sub-block: re-run the main-graph control that owns it (its
        // sub-blocks re-run whole) and that control's descendants.
        let mut top = index;
        for _ in 0..=crate::plan::MAX_CONTROL_NESTING {
            match self.plan.controls.owner.get(top).copied().flatten() {
                Some(owner) => top = owner,
                None => break,
            }
        }
        Ok(descendants(&self.plan, top))
    }

    /// The records (and their kept step errors) a replay reuses.
    fn carried(&self, original: &RunState, from: Option<&str>) -> Result<Carried, EngineError> {
        let fresh = self.fresh_steps(from)?;
        let mut carried = Carried::default();
        for &i in &self.plan.order {
            let id = &self.workflow.steps[i].id;
            let Some(record) = original.steps.get(id.as_str()) else {
                continue;
            };
            let reuse = if fresh[i] {
                false
            } else if from.is_some() {
                record.status.is_terminal()
            } else {
                record.status == StepStatus::Succeeded
            };
            #[cfg(w6w_mutants)] // REPLAY-1 / REPLAY-2 mutants (mutant build only)
            let reuse = match record.status {
                StepStatus::Succeeded
                    if from.is_none()
                        && crate::mutants::active(
                            crate::mutants::Mutant::ReplayReinvokesSucceeded,
                        ) =>
                {
                    false
                }
                StepStatus::Failed
                    if from.is_none()
                        && crate::mutants::active(crate::mutants::Mutant::ReplayReusesFailed) =>
                {
                    true
                }
                _ => reuse,
            };
            if reuse {
                carried
                    .records
                    .insert(String::from(id.as_str()), record.clone());
            }
        }
        carried.step_errors = original
            .step_errors
            .iter()
            .filter(|e| {
                e.step_id.as_ref().is_some_and(|s| {
                    carried
                        .records
                        .get(s)
                        .is_some_and(|r| r.status == StepStatus::Failed)
                })
            })
            .cloned()
            .collect();
        Ok(carried)
    }

    /// The replay's first checkpoint: reset the run, re-insert exactly the carried records.
    fn replay_start(
        &self,
        journal: &Journal,
        original: &RunState,
        from: Option<&str>,
        carried: &Carried,
    ) -> RunStatePatch {
        let mut start = journal.patch();
        start.reset_steps = true;
        start.clear = vec![
            PatchField::Output,
            PatchField::Error,
            PatchField::StepErrors,
        ];
        start.workflow_id = Some(self.workflow.id.clone());
        start.status = Some(RunStatus::Running);
        start.variables = Some(original.variables.clone());
        start.steps = carried.records.clone();
        start.step_errors = carried.step_errors.clone();
        start.extra.insert("runAttempt".into(), json!(1));
        start
            .extra
            .insert("rerouteError".into(), serde_json::Value::Null);
        // `carried`: the original records this replay starts from. Each is used only where
        // the replay's own routing reaches its step (walk.rs `reusable`, REPLAY-2/ERR-6).
        start.extra.insert(
            "replay".into(),
            json!({"from": from, "carried": carried.records.keys().collect::<Vec<_>>()}),
        );
        start
    }
}
