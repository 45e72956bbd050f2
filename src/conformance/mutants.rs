//! Mutants the suite must catch, and the kill table (issue 6 item 6).
//!
//! Owns: the catalogue of every mutant — engine/expression/model mutants from
//! [`crate::mutants`] (activated on this thread by [`with_mutant`]) and host mutants
//! (broken [`HostAdapter`] stores and validators run through [`EngineOnHost`]) — an
//! [`Adapter`] for each, and [`kill_table`]. A mutant is *killed* when at least one case
//! fails against it; the table also says which failing cases name the mutant's clause,
//! because a kill only by unrelated cases means the clause itself is not pinned.

use std::collections::BTreeMap;

use serde_json::Value;

use super::MemoryDisk;
use super::load::{Selection, Suite};
use super::{Adapter, AdapterError, EngineOnHost, HostAdapter, run_suite};
use crate::host::{RunStore, StoreError, StoreFactory};
use crate::model::{RunState, RunStatePatch, ValidationError};
use crate::validate::{ValidateOptions, validate_save};

pub use crate::mutants::Mutant;

/// Run `f` with `m` active on this thread (restored afterwards, even on panic).
pub fn with_mutant<T>(m: Mutant, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Mutant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            crate::mutants::set_active(self.0);
        }
    }
    let _restore = Restore(crate::mutants::set_active(Some(m)));
    f()
}

/// A host mutant: a broken implementation of the host contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::VariantArray)]
pub enum HostMutant {
    /// RUN-3: `checkpoint` returns before the write is durable (a write-back cache); a
    /// crash loses the last checkpoint that "returned".
    CheckpointBeforeDurable,
    /// RUN-4: checkpoints live in process memory only; a crash drops every checkpoint
    /// since the process started, so the restarted host cannot resume the run.
    CheckpointsDroppedOnCrash,
    /// MODEL-5: the host's save-time validation never checks the key grammar.
    KeyNeverChecked,
}

impl HostMutant {
    /// Every host mutant, in declaration order (derived from the enum).
    pub const ALL: &'static [HostMutant] = <Self as strum::VariantArray>::VARIANTS;

    pub fn name(self) -> &'static str {
        match self {
            HostMutant::CheckpointBeforeDurable => "host-checkpoint-returns-before-durable",
            HostMutant::CheckpointsDroppedOnCrash => "host-checkpoints-dropped-on-crash",
            HostMutant::KeyNeverChecked => "host-key-never-checked",
        }
    }

    pub fn clause(self) -> &'static str {
        match self {
            HostMutant::CheckpointBeforeDurable => "RUN-3",
            HostMutant::CheckpointsDroppedOnCrash => "RUN-4",
            HostMutant::KeyNeverChecked => "MODEL-5",
        }
    }
}

/// Any mutant: engine-level or host-level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnyMutant {
    Engine(Mutant),
    Host(HostMutant),
}

impl AnyMutant {
    /// Every mutant, engine mutants first, in a stable order.
    pub fn all() -> Vec<AnyMutant> {
        Mutant::ALL
            .iter()
            .copied()
            .map(AnyMutant::Engine)
            .chain(HostMutant::ALL.iter().copied().map(AnyMutant::Host))
            .collect()
    }

    /// Find a mutant by its stable name.
    pub fn by_name(name: &str) -> Option<AnyMutant> {
        Self::all().into_iter().find(|m| m.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            AnyMutant::Engine(m) => m.name(),
            AnyMutant::Host(m) => m.name(),
        }
    }

    pub fn clause(self) -> &'static str {
        match self {
            AnyMutant::Engine(m) => m.clause(),
            AnyMutant::Host(m) => m.clause(),
        }
    }

    /// The mutant as an op-level adapter the suite can run.
    pub fn adapter(self) -> Box<dyn Adapter> {
        match self {
            AnyMutant::Engine(m) => Box::new(EngineMutantAdapter(m)),
            AnyMutant::Host(m) => Box::new(EngineOnHost::new(BrokenHost(m))),
        }
    }
}

/// The reference service with one engine mutant active for every request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineMutantAdapter(pub(crate) Mutant);

impl Adapter for EngineMutantAdapter {
    fn name(&self) -> String {
        format!("mutant {} ({})", self.0.name(), self.0.clause())
    }

    /// The suite ran the reference engine on the reference with one mutant and saw everything (D-102).
    fn evidence(
        &self,
        _: crate::conformance::adapter::sealed::Seal,
    ) -> crate::conformance::Evidence {
        crate::conformance::Evidence::Observed
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        Ok(with_mutant(self.0, || crate::service::handle(request)))
    }
}

/// A host that breaks one rule of the host contract.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrokenHost(pub(crate) HostMutant);

impl HostAdapter for BrokenHost {
    fn name(&self) -> String {
        format!("mutant {} ({})", self.0.name(), self.0.clause())
    }

    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
        let disk = MemoryDisk::new();
        let mutant = self.0;
        Ok(Box::new(
            move || -> Result<Box<dyn RunStore>, StoreError> {
                Ok(Box::new(BrokenStore {
                    mutant,
                    disk: disk.clone(),
                    pending: Vec::new(),
                }))
            },
        ))
    }

    /// The validator mutants break save-time validation: the `validate` cases judge it.
    fn validates(&self) -> bool {
        true
    }

    fn validate(
        &mut self,
        doc: &Value,
        previous: Option<&Value>,
        options: ValidateOptions,
    ) -> Result<(), Vec<ValidationError>> {
        // Pretending the key is already stored makes the key gate skip the grammar.
        let previous = match self.0 {
            HostMutant::KeyNeverChecked => Some(doc),
            _ => previous,
        };
        validate_save(doc, previous, options).map(|_| ())
    }
}

/// A store that lies about durability. `pending` is what the process holds but the disk
/// does not: reads in the same process see it (like a page cache); a crash drops the
/// object, and with it everything pending.
struct BrokenStore {
    mutant: HostMutant,
    disk: MemoryDisk,
    pending: Vec<RunStatePatch>,
}

impl BrokenStore {
    fn fold(state: Option<RunState>, patch: &RunStatePatch) -> RunState {
        let mut state = state.unwrap_or_else(|| {
            RunState::new(
                &patch.run_id,
                patch.workflow_id.as_deref().unwrap_or_default(),
            )
        });
        state.apply(patch);
        state
    }

    fn flush(&mut self) {
        for patch in std::mem::take(&mut self.pending) {
            let state = Self::fold(self.disk.get(&patch.run_id), &patch);
            self.disk.set(state);
        }
    }
}

impl RunStore for BrokenStore {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
        match self.mutant {
            // Write-back: the previous write lands now, this one "later".
            HostMutant::CheckpointBeforeDurable => self.flush(),
            // Memory only: nothing lands before a clean shutdown.
            HostMutant::CheckpointsDroppedOnCrash => {}
            HostMutant::KeyNeverChecked => {
                let state = Self::fold(self.disk.get(&patch.run_id), patch);
                self.disk.set(state);
                return Ok(());
            }
        }
        self.pending.push(patch.clone());
        Ok(())
    }

    fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
        self.flush();
        self.disk.set(state.clone());
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        let mut state = self.disk.get(run_id);
        for patch in self.pending.iter().filter(|p| p.run_id == run_id) {
            state = Some(Self::fold(state, patch));
        }
        Ok(state)
    }

    // Schedules are kept correctly (on the medium): each mutant breaks one rule only.
    fn schedule(&mut self, entry: &crate::host::ScheduleEntry) -> Result<(), StoreError> {
        self.disk.factory().open()?.schedule(entry)
    }

    fn schedules(&self, run_id: &str) -> Result<Vec<crate::host::ScheduleEntry>, StoreError> {
        self.disk.factory().open()?.schedules(run_id)
    }

    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        self.disk.factory().open()?.unschedule(run_id, resume_token)
    }
}

/// One row of the kill table.
#[derive(Debug, Clone, PartialEq)]
pub struct KillRow {
    pub mutant: AnyMutant,
    /// Ids of failing cases that name the mutant's clause.
    pub killed_by: Vec<String>,
    /// How many cases failed in all.
    pub failed: usize,
    pub cases: usize,
}

impl KillRow {
    pub fn killed(&self) -> bool {
        self.failed > 0
    }
}

/// Run the selected cases against every mutant (`mutants`) and tabulate the kills.
pub fn kill_table(suite: &Suite, selection: &Selection, mutants: &[AnyMutant]) -> Vec<KillRow> {
    mutants
        .iter()
        .map(|&m| {
            let mut adapter = m.adapter();
            let report = run_suite(adapter.as_mut(), suite, selection, false, &mut |_, _, _| {});
            let killed_by = report
                .cases
                .iter()
                .filter(|c| {
                    !c.outcome.passed() && c.outcome.clauses.iter().any(|x| x == m.clause())
                })
                .map(|c| c.outcome.id.clone())
                .collect();
            KillRow {
                mutant: m,
                killed_by,
                failed: report.failed(),
                cases: report.cases.len(),
            }
        })
        .collect()
}

/// The kill table as text: one line per mutant, then `kill rate: K/N`.
pub fn kill_table_text(rows: &[KillRow]) -> String {
    let mut by_clause: BTreeMap<&str, usize> = BTreeMap::new();
    let width = rows
        .iter()
        .map(|r| r.mutant.name().len())
        .max()
        .unwrap_or(6);
    let mut out = format!(
        "{:<width$}  {:<9}  {:<6}  killed by (cases naming the clause)\n",
        "mutant", "clause", "result"
    );
    for r in rows {
        *by_clause.entry(r.mutant.clause()).or_default() += 1;
        let shown: Vec<&str> = r.killed_by.iter().take(3).map(String::as_str).collect();
        let more = r.killed_by.len().saturating_sub(shown.len());
        let by = if r.killed_by.is_empty() {
            format!(
                "(none naming {}; {} other failing)",
                r.mutant.clause(),
                r.failed
            )
        } else if more > 0 {
            format!(
                "{} +{more} more; {} failing in all",
                shown.join(", "),
                r.failed
            )
        } else {
            format!("{}; {} failing in all", shown.join(", "), r.failed)
        };
        let result = if r.killed() { "KILLED" } else { "ALIVE" };
        out.push_str(&format!(
            "{:<width$}  {:<9}  {result:<6}  {by}\n",
            r.mutant.name(),
            r.mutant.clause()
        ));
    }
    let killed = rows.iter().filter(|r| r.killed()).count();
    out.push_str(&format!(
        "kill rate: {killed}/{} mutants killed\n",
        rows.len()
    ));
    out
}
