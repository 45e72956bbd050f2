//! RUN-3 / RUN-4 / CTRL-7 for a candidate host's store (`conformance::HostAdapter`): the
//! simulator folds every checkpoint the store acknowledged ([`Acked`]), and after every
//! simulated crash, every suspension and once before the report it reopens the store and
//! requires exactly that back (`checkpoint_not_durable` otherwise). The simulator's own
//! stores are trusted and skip the check.

use std::collections::BTreeMap;

use super::SimError;
use super::drive::Sim;
use crate::model::RunState;

/// What a candidate's store acknowledged, folded by the simulator itself: run id → (state,
/// the checkpoint number that acknowledged it).
#[derive(Debug, Default)]
pub(crate) struct Acked {
    pub(super) runs: BTreeMap<String, (RunState, u64)>,
}

impl Acked {
    pub(crate) fn checkpoint(&mut self, patch: &crate::model::RunStatePatch, n: u64) {
        let entry = self.runs.entry(patch.run_id.clone()).or_insert_with(|| {
            (
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                ),
                0,
            )
        });
        entry.0.apply(patch);
        entry.1 = n;
    }

    pub(crate) fn put(&mut self, state: &RunState) {
        self.runs.insert(state.run_id.clone(), (state.clone(), 0));
    }
}

impl Sim<'_> {
    /// The store is a candidate's: check it against what it acknowledged.
    pub(super) fn verify_durability(self) -> Self {
        *self.acked.borrow_mut() = Some(Acked::default());
        self
    }

    /// A simulated crash of the store's process: the store object is dropped (parked) and
    /// reopened, then — for a candidate's store — every run it acknowledged must load
    /// exactly as acknowledged (RUN-3).
    pub(super) fn reopen_store(&self, why: &str) -> Result<(), SimError> {
        let mut store = self.store.borrow_mut();
        store.crash();
        store.restart().map_err(|e| SimError::Store(e.0))?;
        drop(store);
        let acked = self.acked.borrow();
        let Some(acked) = acked.as_ref() else {
            return Ok(());
        };
        for (run_id, (want, n)) in &acked.runs {
            let got = self
                .store
                .borrow()
                .load(run_id)
                .map_err(|e| SimError::Store(e.0))?
                .map(|s| s.state);
            let want_json = serde_json::to_value(want).unwrap_or_default();
            let got_json = serde_json::to_value(&got).unwrap_or_default();
            if !crate::json::json_eq(&want_json, &got_json) {
                let first = crate::json::json_diff(&want_json, &got_json)
                    .into_iter()
                    .next()
                    .map(|d| format!("; first difference at {:?}", d.pointer))
                    .unwrap_or_default();
                return Err(SimError::NotDurable(format!(
                    "RUN-3/RUN-4: {why}, the host's store was reopened and state.load({run_id:?}) did not return the state of the last checkpoint it acknowledged (checkpoint {n}){first}; a checkpoint must be durable before it returns"
                )));
            }
        }
        Ok(())
    }

    /// CTRL-7 on a candidate host (D-103): the host process is restarted while the run
    /// sleeps, then must still hold the schedule it acknowledged — same token, same time —
    /// which it then forgets as fired.
    pub(super) fn fire_from_host(&self, run_id: &str, token: &str) -> Result<(), SimError> {
        self.reopen_store("while the run was suspended on a wait")?;
        let want = self.world.borrow().snap.fire_times.get(token).copied();
        let kept = self
            .store
            .borrow()
            .schedules(run_id)
            .map_err(|e| SimError::Store(e.0))?;
        let scrub = |s: String| self.scrub.line(&s);
        match kept.iter().find(|e| e.resume_token == token) {
            None => {
                return Err(SimError::NotDurable(scrub(format!(
                    "CTRL-7/RUN-3: the run is suspended on a wait whose schedule the host acknowledged \
                     (resume token {token:?}), but after a restart the host holds {} schedule(s) for \
                     run {run_id:?} and not that one; a schedule must be durable before schedule returns",
                    kept.len()
                ))));
            }
            Some(e) if Some(e.fire_at_ms) != want => {
                return Err(SimError::NotDurable(scrub(format!(
                    "CTRL-7: the host's schedule for resume token {token:?} fires at {} ms, not at the {} ms it acknowledged",
                    e.fire_at_ms,
                    want.map_or_else(|| "(unknown)".to_owned(), |w| w.to_string())
                ))));
            }
            Some(_) => {}
        }
        self.store
            .borrow_mut()
            .unschedule(run_id, token)
            .map_err(|e| SimError::Store(e.0))
    }
}
