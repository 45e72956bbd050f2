//! Durable stores for the simulated host: the `Store` trait, in memory, and the legacy
//! whole-file disk format (RUN-3). The simulator's disk store is the append-only journal
//! in `journal.rs`.
//!
//! Owns: folding checkpoint patches into a RunState and keeping it. Invariant: a
//! checkpoint returns only once the new state is durable; the legacy disk store writes one
//! file per run as temp file + fsync + rename (+ fsync of the directory), so a `kill -9` at
//! any instant leaves either the previous or the new state, never a torn one — at O(state)
//! bytes per checkpoint, which is why the journal replaced it.

use std::collections::BTreeMap;
#[cfg(test)]
use std::io::Write;
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(test)]
use super::scenario::run_id_ok;
use super::world::{SeqLease, WorldSnapshot};
use crate::model::{RunState, RunStatePatch};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Open a file of a store directory without following a symbolic link in its last
/// component (`O_NOFOLLOW`), so a link planted in a shared store directory is refused and
/// never leads a write (or a truncation) to a file outside it (D-212). A link found is the
/// error [`is_link_refusal`] recognises.
pub(crate) fn open_no_follow(
    options: &mut std::fs::OpenOptions,
    path: &Path,
) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other("a symbolic link"));
    }
    options.open(path)
}

/// Whether an error of [`open_no_follow`] (or of an exclusive create) means `path` is a
/// symbolic link: `ELOOP` from `O_NOFOLLOW`, or a link found where a file was expected.
pub(crate) fn is_link_refusal(path: &Path, e: &std::io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    let _ = e;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Create a store's temp file exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`): a stale temp
/// file a killed writer left is a regular file and is removed first (the caller holds the
/// run, so nobody else is writing it); a symbolic link there is refused, never followed
/// (D-212).
pub(crate) fn create_temp(path: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(std::io::Error::other("a symbolic link"));
        }
        Ok(_) => std::fs::remove_file(path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    open_no_follow(
        std::fs::OpenOptions::new().write(true).create_new(true),
        path,
    )
}

/// The message for a store file that could not be opened: a symbolic link is named as one.
#[cfg(test)]
pub(crate) fn open_error(path: &Path, e: &std::io::Error) -> String {
    if is_link_refusal(path, e) {
        format!(
            "{}: is a symbolic link; the store never follows a link in its directory (remove it)",
            path.display()
        )
    } else {
        format!("{}: {e}", path.display())
    }
}

/// One stored run: its state, and (disk only) the world that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    pub format: String,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<WorldSnapshot>,
    /// D-260: the dialect document a run was started from (a journal header's `source`);
    /// `None` for a w6w run and in every store that does not record one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

/// The disk file's format tag.
pub(crate) const STORE_FORMAT: &str = "w6w-sim/run-1";

/// What a simulated host persists to.
pub trait Store {
    /// Fold `patch` into the run's state and make it durable.
    fn checkpoint(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
    ) -> Result<(), StoreError>;
    /// [`Store::checkpoint`], told which `world.invocation_counts` keys changed since the
    /// previous call (an append-only store writes just those).
    fn checkpoint_changes(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
        changed_counts: &[String],
    ) -> Result<(), StoreError> {
        let _ = changed_counts;
        self.checkpoint(patch, world)
    }
    /// Replace a run's state outright (seeding a replay with its original run).
    fn put(&mut self, state: &RunState, world: &WorldSnapshot) -> Result<(), StoreError>;
    fn load(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError>;
    /// [`Store::load`] for the last time: the simulator is done with the store and takes
    /// the run for its report (a store that holds it in memory may move it out instead of
    /// copying it).
    fn take(&mut self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        self.load(run_id)
    }
    /// Whether `checkpoint` persists the world snapshot (callers skip building one when
    /// not: copying the world per checkpoint would make a long run quadratic).
    fn keeps_world(&self) -> bool {
        true
    }
    /// A copy of everything this store holds, to continue a simulation from this moment
    /// twice (`sim::Simulation::crash_points`); `None` when the store cannot be copied (a file, a
    /// candidate's store), and then the caller runs each continuation from the top.
    fn fork(&self) -> Option<Box<dyn Store>> {
        None
    }
    /// The process died (a scenario's crash fault): drop everything that is not durable.
    /// The simulator's stores keep nothing volatile, so by default there is nothing to do.
    fn crash(&mut self) {}
    /// The process came back: from here on `load` must return exactly the durable state.
    fn restart(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// CTRL-7: whether `wait` schedules are kept by this store (a candidate host's, D-103)
    /// rather than by the simulator's world.
    fn keeps_schedules(&self) -> bool {
        false
    }
    /// Keep a schedule durably (only called when [`Store::keeps_schedules`]).
    fn schedule(&mut self, entry: &crate::host::ScheduleEntry) -> Result<(), StoreError> {
        let _ = entry;
        Ok(())
    }
    /// The schedules kept for a run that have not fired.
    fn schedules(&self, run_id: &str) -> Result<Vec<crate::host::ScheduleEntry>, StoreError> {
        let _ = run_id;
        Ok(Vec::new())
    }
    /// A schedule fired: forget it.
    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        let _ = (run_id, resume_token);
        Ok(())
    }
    /// A durable lease on the run's trace sequence numbers, for stores that outlive the
    /// process (so `seq` stays monotonic across real kills). `None`: no lease needed.
    fn seq_lease(&self, run_id: &str) -> Option<Box<dyn SeqLease>> {
        let _ = run_id;
        None
    }
}

/// In-memory store: the state survives a simulated crash (the world lives on).
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    runs: BTreeMap<String, RunState>,
}

impl Store for MemoryStore {
    fn checkpoint(&mut self, patch: &RunStatePatch, _: &WorldSnapshot) -> Result<(), StoreError> {
        // Looked up before inserting: the run id is copied once per run, not per checkpoint.
        if let Some(state) = self.runs.get_mut(&patch.run_id) {
            state.apply(patch);
            return Ok(());
        }
        let mut state = RunState::new(
            &patch.run_id,
            patch.workflow_id.as_deref().unwrap_or_default(),
        );
        state.apply(patch);
        self.runs.insert(patch.run_id.clone(), state);
        Ok(())
    }

    fn put(&mut self, state: &RunState, _: &WorldSnapshot) -> Result<(), StoreError> {
        self.runs.insert(state.run_id.clone(), state.clone());
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.runs.get(run_id).map(|s| StoredRun {
            format: STORE_FORMAT.into(),
            state: s.clone(),
            world: None,
            source: None,
        }))
    }

    fn take(&mut self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.runs.remove(run_id).map(|state| StoredRun {
            format: STORE_FORMAT.into(),
            state,
            world: None,
            source: None,
        }))
    }

    fn keeps_world(&self) -> bool {
        false
    }

    fn fork(&self) -> Option<Box<dyn Store>> {
        Some(Box::new(self.clone()))
    }
}

/// The legacy on-disk store (`w6w-sim/run-1`): `DIR/<runId>.json`, the whole run rewritten
/// per checkpoint (O(run) each). The simulator uses [`super::JournalStore`], which still
/// reads (and migrates) these files; this type remains only to write them in the journal's
/// migration tests (D-311).
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct DiskStore {
    dir: PathBuf,
    cache: BTreeMap<String, RunState>,
}

#[cfg(test)]
impl DiskStore {
    /// Open (creating if needed) a store directory.
    pub(crate) fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError(format!("cannot create store {}: {e}", dir.display())))?;
        Ok(DiskStore {
            dir: dir.to_owned(),
            cache: BTreeMap::new(),
        })
    }

    /// The file a run is kept in.
    pub(crate) fn path_of(&self, run_id: &str) -> Result<PathBuf, StoreError> {
        if !run_id_ok(run_id) {
            return Err(StoreError(format!(
                "run id {run_id:?} is not a safe file name"
            )));
        }
        Ok(self.dir.join(format!("{run_id}.json")))
    }

    fn write(&self, state: &RunState, world: &WorldSnapshot) -> Result<(), StoreError> {
        let path = self.path_of(&state.run_id)?;
        let stored = StoredRun {
            format: STORE_FORMAT.into(),
            state: state.clone(),
            world: Some(world.clone()),
            source: None,
        };
        let bytes = serde_json::to_vec(&stored)
            .map_err(|e| StoreError(format!("cannot serialize run: {e}")))?;
        let tmp = self.dir.join(format!(".{}.json.tmp", state.run_id));
        let io = |e: std::io::Error| StoreError(format!("{}: {e}", path.display()));
        {
            let mut f = create_temp(&tmp).map_err(|e| StoreError(open_error(&tmp, &e)))?;
            f.write_all(&bytes).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &path).map_err(io)?;
        // The rename itself must be durable too.
        #[cfg(unix)]
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        Ok(())
    }

    fn read(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let path = self.path_of(run_id)?;
        let read =
            open_no_follow(std::fs::OpenOptions::new().read(true), &path).and_then(|mut f| {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
            });
        let text = match read {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError(open_error(&path, &e))),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| StoreError(format!("{} is not a stored run: {e}", path.display())))
    }
}

#[cfg(test)]
impl Store for DiskStore {
    fn checkpoint(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
    ) -> Result<(), StoreError> {
        let mut state = match self.cache.get(&patch.run_id) {
            Some(s) => s.clone(),
            None => match self.read(&patch.run_id)? {
                Some(stored) => stored.state,
                None => RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                ),
            },
        };
        state.apply(patch);
        self.write(&state, world)?;
        self.cache.insert(patch.run_id.clone(), state);
        Ok(())
    }

    fn put(&mut self, state: &RunState, world: &WorldSnapshot) -> Result<(), StoreError> {
        self.write(state, world)?;
        self.cache.insert(state.run_id.clone(), state.clone());
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        self.read(run_id)
    }
}
