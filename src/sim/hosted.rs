//! A candidate host's [`RunStore`] behind the simulator's store seam.
//!
//! Owns: the crash of a candidate's store. A simulated crash parks the live store object
//! (its destructor does not run until the run is over — a killed process flushes nothing)
//! and the next access opens a fresh one from the host's [`StoreFactory`]. Whether the
//! fresh store returns the last acknowledged state is checked by the simulator itself
//! (`Sim`'s acknowledged-state shadow), never asked of the store. The simulator's own
//! world (clock, counters, schedules) never reaches a candidate's store.

use super::store::{Store, StoreError as SimStoreError, StoredRun};
use super::world::WorldSnapshot;
use crate::host::{RunStore, StoreError, StoreFactory};
use crate::model::{RunState, RunStatePatch};

pub(crate) struct HostedStore {
    factory: Box<dyn StoreFactory>,
    live: Option<Box<dyn RunStore>>,
    /// Store objects of "killed processes": dropped only with this (after the report).
    graveyard: Vec<Box<dyn RunStore>>,
    /// Why the last (re)open failed.
    open_error: Option<StoreError>,
}

fn sim_error(e: &StoreError) -> SimStoreError {
    SimStoreError(format!("{}: {e}", e.code()))
}

impl HostedStore {
    /// Open the first store of a run.
    pub(crate) fn open(mut factory: Box<dyn StoreFactory>) -> Result<Self, StoreError> {
        let live = factory.open()?;
        Ok(HostedStore {
            factory,
            live: Some(live),
            graveyard: Vec::new(),
            open_error: None,
        })
    }

    fn live(&self) -> Result<&dyn RunStore, SimStoreError> {
        match (&self.live, &self.open_error) {
            (Some(s), _) => Ok(s.as_ref()),
            (None, Some(e)) => Err(sim_error(e)),
            (None, None) => Err(SimStoreError("store_unavailable: no store is open".into())),
        }
    }

    fn live_mut(&mut self) -> Result<&mut Box<dyn RunStore>, SimStoreError> {
        match (&mut self.live, &self.open_error) {
            (Some(s), _) => Ok(s),
            (None, Some(e)) => Err(sim_error(e)),
            (None, None) => Err(SimStoreError("store_unavailable: no store is open".into())),
        }
    }
}

impl Store for HostedStore {
    fn checkpoint(
        &mut self,
        patch: &RunStatePatch,
        _: &WorldSnapshot,
    ) -> Result<(), SimStoreError> {
        self.live_mut()?
            .checkpoint(patch)
            .map_err(|e| sim_error(&e))
    }

    fn put(&mut self, state: &RunState, _: &WorldSnapshot) -> Result<(), SimStoreError> {
        self.live_mut()?.put(state).map_err(|e| sim_error(&e))
    }

    fn load(&self, run_id: &str) -> Result<Option<StoredRun>, SimStoreError> {
        let state = self.live()?.load(run_id).map_err(|e| sim_error(&e))?;
        Ok(state.map(|state| StoredRun {
            format: super::STORE_FORMAT.into(),
            state,
            world: None,
            source: None,
        }))
    }

    fn keeps_world(&self) -> bool {
        false
    }

    fn keeps_schedules(&self) -> bool {
        true
    }

    fn schedule(&mut self, entry: &crate::host::ScheduleEntry) -> Result<(), SimStoreError> {
        self.live_mut()?.schedule(entry).map_err(|e| sim_error(&e))
    }

    fn schedules(&self, run_id: &str) -> Result<Vec<crate::host::ScheduleEntry>, SimStoreError> {
        self.live()?.schedules(run_id).map_err(|e| sim_error(&e))
    }

    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), SimStoreError> {
        self.live_mut()?
            .unschedule(run_id, resume_token)
            .map_err(|e| sim_error(&e))
    }

    fn crash(&mut self) {
        if let Some(dead) = self.live.take() {
            self.graveyard.push(dead);
        }
    }

    fn restart(&mut self) -> Result<(), SimStoreError> {
        self.crash();
        match self.factory.open() {
            Ok(s) => {
                self.live = Some(s);
                self.open_error = None;
                Ok(())
            }
            Err(e) => {
                let err = sim_error(&e);
                self.open_error = Some(e);
                Err(err)
            }
        }
    }
}
