//! The report of a suite run: per case, per clause of the whole catalogue (zero-case
//! clauses included), totals and timing, and the commands that reproduce a failure.
//!
//! Owns: [`SuiteReport`] and its rows. Its three renderings live next door, one file each:
//! `report/text.rs` (the human report), `report/json.rs`, `report/junit.rs`. Running a
//! suite is `super::runner`. Refuses to know how an adapter is reached.

use std::path::PathBuf;
use std::time::Duration;

use super::CaseOutcome;
use super::generate::GeneratedReport;
use super::load::{Selection, Suite};
use crate::json::DiffEntry;

mod json;
mod junit;
mod text;

#[cfg(test)]
pub(crate) use junit::xml_escape;

/// The result of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// The case file's stem (`retry` for `retry.json`).
    pub file: String,
    /// The case file's `family`.
    pub family: String,
    pub description: String,
    pub outcome: CaseOutcome,
    /// Whether the adapter failed to answer (then `outcome.response` is null).
    pub adapter_failed: bool,
    pub elapsed: Duration,
    /// With `diff_reference`, for a failing case the adapter answered: reference vs
    /// candidate, field by field (empty: they agree, so the case disagrees with both).
    pub reference_diff: Option<Vec<DiffEntry>>,
    /// What the case needs ([`super::capability::required`]).
    pub requires: Vec<String>,
    /// The needs the candidate's profile lacks: non-empty means *not applicable* — the
    /// case did not run and counts neither as passed nor as failed.
    pub missing: Vec<String>,
}

impl CaseResult {
    /// Not applicable to the candidate's profile.
    pub fn not_applicable(&self) -> bool {
        !self.missing.is_empty()
    }

    /// Ran and passed.
    pub fn passed(&self) -> bool {
        !self.not_applicable() && self.outcome.passed()
    }

    /// Ran and failed.
    pub fn failed(&self) -> bool {
        !self.not_applicable() && !self.outcome.passed()
    }

    /// `passed`, `failed` or `notApplicable`.
    pub fn status(&self) -> &'static str {
        if self.not_applicable() {
            "notApplicable"
        } else if self.outcome.passed() {
            "passed"
        } else {
            "failed"
        }
    }
}

/// One row of the per-clause table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClauseRow {
    pub clause: String,
    pub text: String,
    /// Cases that ran and name this clause.
    pub cases: usize,
    pub passed: usize,
    pub failed: usize,
    /// Selected cases naming this clause that the candidate's profile excludes.
    pub not_applicable: usize,
    /// Cases in the loaded suite naming this clause, selected or not.
    pub in_suite: usize,
}

/// What a run selected, over all shards: `w6w-sim merge` checks that N shard reports are
/// parts of one selection and that together they hold every selected case exactly once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectionSummary {
    /// The `--clause` filters, upper-cased (empty: every clause).
    pub clauses: Vec<String>,
    /// The `--case` text, if any.
    pub case: Option<String>,
    /// How many cases the filters select in the loaded suite, in every shard together.
    pub cases: usize,
    /// FNV-1a (64-bit, hex) over those cases' ids, sorted, each followed by a newline:
    /// the same suite and filters give the same digest on any machine.
    pub digest: String,
}

impl SelectionSummary {
    /// The summary of `selection` over `suite`, whatever shard `selection` is limited to.
    pub fn of(suite: &Suite, selection: &Selection) -> SelectionSummary {
        let mut ids: Vec<&str> = suite
            .cases()
            .filter(|(_, c)| selection.selects_in_any_shard(c))
            .map(|(_, c)| c.id.as_str())
            .collect();
        let (clauses, case) = selection.filters();
        SelectionSummary {
            clauses: clauses.to_vec(),
            case: case.map(str::to_owned),
            cases: ids.len(),
            digest: Self::digest(&mut ids),
        }
    }

    /// The digest of a set of case ids (sorted here).
    pub fn digest(ids: &mut [&str]) -> String {
        use super::shard::{FNV_OFFSET, fnv1a};
        ids.sort_unstable();
        let h = ids
            .iter()
            .fold(FNV_OFFSET, |h, id| fnv1a(fnv1a(h, id.as_bytes()), b"\n"));
        format!("{h:016x}")
    }
}

/// Everything one suite run found.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteReport {
    pub implementation: String,
    /// The candidate's capability profile.
    pub capabilities: super::Capabilities,
    pub cases: Vec<CaseResult>,
    /// One row per catalogue clause in scope of the `--clause` filters, catalogue order.
    pub clauses: Vec<ClauseRow>,
    /// Generated workflows checked after the cases (`None`: none were asked for).
    pub generated: Option<GeneratedReport>,
    /// Cases and generated workflows together.
    pub elapsed: Duration,
    /// The candidate flag of a repro command (` --adapter '…'`, empty for the reference),
    /// so every printed command names what was tested.
    pub candidate_args: String,
    /// Where generated failures' files were written (`--out`).
    pub failure_dir: Option<PathBuf>,
    /// Why no generated workflows ran, when that is worth saying (`--clause`/`--case`).
    pub generated_note: Option<String>,
    /// `K/N` when only shard K of N of the cases ran (`--shard`); `w6w-sim merge` joins
    /// the N shards' JSON reports into one.
    pub shard: Option<String>,
    /// What the run selected, over all shards (`None` in a report read back from a JSON
    /// that does not say).
    pub selection: Option<SelectionSummary>,
}

impl SuiteReport {
    /// Cases that ran and passed.
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    /// Cases that ran and failed.
    pub fn failed(&self) -> usize {
        self.cases.iter().filter(|c| c.failed()).count()
    }

    /// Cases outside the candidate's profile (not run, never counted as passed).
    pub fn not_applicable(&self) -> usize {
        self.cases.iter().filter(|c| c.not_applicable()).count()
    }

    /// Generated workflows outside the candidate's profile.
    pub fn generated_not_applicable(&self) -> usize {
        self.generated.as_ref().map_or(0, |g| g.not_applicable)
    }

    /// Generated workflows that failed a property.
    pub fn generated_failed(&self) -> usize {
        self.generated.as_ref().map_or(0, GeneratedReport::failed)
    }

    /// Generated workflows checked.
    pub fn generated_count(&self) -> usize {
        self.generated.as_ref().map_or(0, |g| g.count)
    }

    /// The profile's names as the reports print them (`none` for an empty profile).
    pub(crate) fn profile_names(&self) -> String {
        let names = self.capabilities.to_names();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }

    /// Cases and generated workflows that ran and were judged, passed or failed.
    pub fn judged(&self) -> usize {
        self.passed()
            + self.failed()
            + self
                .generated
                .as_ref()
                .map_or(0, |g| g.passed() + g.failed())
    }

    /// The run judged nothing — every selected case and generated workflow was outside
    /// the candidate's profile, or there were none — so it says nothing about the
    /// candidate (D-376). A shard's report is exempt: `w6w-sim merge` judges the campaign.
    pub fn judged_nothing(&self) -> bool {
        self.shard.is_none() && self.judged() == 0
    }

    /// No case and no generated workflow failed, and something was judged (the
    /// exit-status rule of `w6w-sim conformance`; D-376: a run that judged nothing is not
    /// a pass).
    pub fn all_passed(&self) -> bool {
        self.failed() == 0 && self.generated_failed() == 0 && !self.judged_nothing()
    }

    /// Attach a generated batch (a zero-sized batch is no batch); its time counts.
    pub fn add_generated(&mut self, generated: GeneratedReport) {
        if generated.count > 0 {
            self.elapsed += generated.elapsed;
            self.generated = Some(generated);
        }
    }

    /// Cases and generated workflows per second.
    pub fn cases_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            (self.cases.len() + self.generated_count()) as f64 / secs
        } else {
            0.0
        }
    }

    /// Panic with the failures section of the text report unless every case passed: the
    /// one line a host crate's `#[test]` ends with.
    #[track_caller]
    pub fn assert_all_passed(&self) {
        if self.judged_nothing() {
            panic!(
                "nothing was judged against {}: {} cases and {} generated workflows, every one outside its capability profile ({}) or not judged at this seam; a run that checks nothing is not a pass",
                self.implementation,
                self.cases.len(),
                self.generated_count(),
                self.profile_names()
            );
        }
        if !self.all_passed() {
            let mut text = String::new();
            self.write_failures(&mut text);
            self.write_generated_failures(&mut text, true);
            panic!(
                "{} of {} conformance cases and {} of {} generated workflows failed against {}:\n{text}",
                self.failed(),
                self.cases.len(),
                self.generated_failed(),
                self.generated_count(),
                self.implementation
            );
        }
    }

    /// `w6w-sim conformance` with the flags that name the candidate that was tested.
    pub fn command(&self) -> String {
        format!("w6w-sim conformance{}", self.candidate_args)
    }

    /// The command that runs one case again against the candidate that was tested.
    pub fn rerun_command(&self, case_id: &str) -> String {
        rerun_case(&self.command(), case_id)
    }

    /// The command that checks one generated workflow again (its seed) against the
    /// candidate that was tested.
    pub fn regenerate_command(&self, seed: u64) -> String {
        regenerate(&self.command(), seed)
    }

    /// The file names a generated failure is written to by `w6w-sim conformance`.
    pub fn failure_files(seed: u64) -> (String, String) {
        (
            format!("w6w-failure-{seed}.workflow.json"),
            format!("w6w-failure-{seed}.scenario.json"),
        )
    }
}

/// `command --case 'ID'`: one case again, its id quoted for a POSIX shell.
pub(crate) fn rerun_case(command: &str, case_id: &str) -> String {
    format!("{command} --case '{}'", case_id.replace('\'', "'\\''"))
}

/// `command --generate 1 --seed S`: one generated workflow again.
pub(crate) fn regenerate(command: &str, seed: u64) -> String {
    format!("{command} --generate 1 --seed {seed}")
}
