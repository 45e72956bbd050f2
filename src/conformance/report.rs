//! Running a suite against an adapter and reporting it: text, JSON and JUnit XML.
//!
//! Owns: [`run`] / [`run_suite`], the [`SuiteReport`] (per case, per clause of the whole
//! catalogue — zero-case clauses included — totals and timing) and its three renderings.
//! Refuses to know how an adapter is reached.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::diff;
use super::generate::{DEFAULT_GENERATE, DEFAULT_SEED, GeneratedReport, run_generated};
use super::load::{LoadError, Selection, Suite};
use super::{Adapter, Case, CaseOutcome, check_expectations, clause_catalogue};
use crate::json::{DiffEntry, json_diff};

/// What to run: where the cases are, which to select, whether to diff failures against
/// the reference, and how many generated workflows to check.
///
/// `RunOptions::default()` is the whole suite: every case plus the default batch of
/// [`DEFAULT_GENERATE`] generated workflows from [`DEFAULT_SEED`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The case directory; `None` means [`super::default_cases_dir`].
    pub cases_dir: Option<PathBuf>,
    /// `--clause` filters: a family (`RETRY`) or a clause ID (`RETRY-2`).
    pub clauses: Vec<String>,
    /// `--case`: only cases whose id contains this.
    pub case_id: Option<String>,
    /// For every failing case, also ask the in-process reference and diff the responses.
    pub diff_reference: bool,
    /// How many generated workflows + scenarios to check (`--generate N`; 0 for none).
    pub generate: usize,
    /// The first generated workflow's seed (`--seed S`); workflow `i` uses `S + i`.
    pub seed: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            cases_dir: None,
            clauses: Vec::new(),
            case_id: None,
            diff_reference: false,
            generate: DEFAULT_GENERATE,
            seed: DEFAULT_SEED,
        }
    }
}

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

    fn to_json(&self) -> Value {
        json!({"clauses": self.clauses, "case": self.case, "cases": self.cases,
               "digest": self.digest})
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

/// Load the cases `options` names and run them against `adapter`: the entry point a host
/// crate's `#[test]` calls. `Err` only when the suite cannot start (a malformed case file,
/// an unknown `--clause`); failing cases are data in the report.
///
/// ```no_run
/// use w6w_sim::conformance::{self, Reference, RunOptions};
/// let report = conformance::run(&mut Reference, &RunOptions::default()).expect("suite loads");
/// report.assert_all_passed();
/// ```
pub fn run(adapter: &mut dyn Adapter, options: &RunOptions) -> Result<SuiteReport, LoadError> {
    // Whatever stack the caller has (a `cargo test` thread: 2 MiB), the suite has enough.
    crate::sim::with_stack(|| run_on_this_stack(adapter, options))
}

fn run_on_this_stack(
    adapter: &mut dyn Adapter,
    options: &RunOptions,
) -> Result<SuiteReport, LoadError> {
    let suite = match &options.cases_dir {
        Some(dir) => Suite::load(dir)?,
        None => Suite::load_default()?,
    };
    let selection = Selection::new(&options.clauses, options.case_id.as_deref())?;
    let mut report = run_suite(
        adapter,
        &suite,
        &selection,
        options.diff_reference,
        &mut |_, _, _| {},
    );
    report.add_generated(run_generated(adapter, options.generate, options.seed));
    Ok(report)
}

/// Run the selected cases of a loaded suite. `progress(done, total, case_id)` is called
/// after each case.
pub fn run_suite(
    adapter: &mut dyn Adapter,
    suite: &Suite,
    selection: &Selection,
    diff_reference: bool,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> SuiteReport {
    #[allow(clippy::disallowed_methods)] // real time: the report states the suite's speed
    let started = Instant::now();
    let selected = selected(suite, selection);
    let total = selected.len();
    let judge = Judge::of(adapter, diff_reference);
    let mut cases = Vec::with_capacity(total);
    for (done, (file, case)) in selected.into_iter().enumerate() {
        cases.push(judge.case(adapter, file, case));
        progress(done + 1, total, &case.id);
    }
    assemble(
        suite,
        selection,
        adapter.name(),
        judge.profile,
        cases,
        started.elapsed(),
    )
}

/// The cases of `suite` that `selection` selects, in suite order.
pub(crate) fn selected<'s>(
    suite: &'s Suite,
    selection: &Selection,
) -> Vec<(&'s super::load::LoadedFile, &'s super::Case)> {
    suite
        .cases()
        .filter(|(_, c)| selection.selects(c))
        .collect()
}

/// What judging a case needs to know about the candidate, learned once.
#[derive(Debug, Clone)]
pub(crate) struct Judge {
    pub(crate) profile: super::Capabilities,
    observed: bool,
    diff_reference: bool,
}

impl Judge {
    /// Whether the candidate's runs are observed by the suite (not self-reported, D-102).
    pub(crate) fn observed(&self) -> bool {
        self.observed
    }

    pub(crate) fn of(adapter: &dyn Adapter, diff_reference: bool) -> Judge {
        Judge {
            profile: adapter.capabilities(),
            observed: super::adapter::evidence_of(adapter) == super::Evidence::Observed,
            diff_reference,
        }
    }

    /// One case: not applicable, self-reported, or asked and checked.
    pub(crate) fn case(
        &self,
        adapter: &mut dyn Adapter,
        file: &super::load::LoadedFile,
        case: &super::Case,
    ) -> CaseResult {
        #[allow(clippy::disallowed_methods)] // real time: per-case duration for JUnit
        let case_started = Instant::now();
        let requires = super::capability::required(case);
        let mut missing = self.profile.missing(&requires);
        if missing.is_empty()
            && let Some(seam) = adapter.unjudged(case)
        {
            missing.push(seam.to_owned());
        }
        let self_reported = missing.is_empty() && !self.observed && effectful(&requires);
        let (outcome, adapter_failed) = if self_reported {
            // D-102: never asked; a self-written report is no evidence either way.
            (not_run(case, super::SELF_REPORTED.to_owned()), false)
        } else if missing.is_empty() {
            check_with(case, adapter)
        } else {
            // Not run: the outcome is not a pass (code reading `outcome.passed()` must not
            // count it), and the report counts it as neither passed nor failed.
            let why = super::capability::not_applicable_because(&missing);
            (not_run(case, why), false)
        };
        let elapsed = case_started.elapsed();
        let reference_diff =
            (self.diff_reference && !outcome.passed() && !adapter_failed && !self_reported).then(
                || {
                    // SEC-1: both sides through the case's redaction sink before they are compared.
                    let scrub = super::case_scrubber(&case.request);
                    let reference = scrub.scrubbed(crate::service::handle(&case.request));
                    let mut d = json_diff(&reference, &outcome.response);
                    d.iter_mut()
                        .for_each(|e| e.pointer = scrub.line(&e.pointer));
                    d
                },
            );
        CaseResult {
            file: file.stem(),
            family: file.file.family.clone(),
            description: case.description.clone(),
            outcome,
            adapter_failed,
            elapsed,
            reference_diff,
            requires: requires.into_iter().collect(),
            missing,
        }
    }
}

/// The outcome of a case that was not asked, and why.
fn not_run(case: &super::Case, why: String) -> CaseOutcome {
    CaseOutcome {
        id: case.id.clone(),
        clauses: case.clauses.clone(),
        failures: vec![why],
        response: Value::Null,
    }
}

/// The report of judged cases (in selection order): the per-clause tally and the rest.
pub(crate) fn assemble(
    suite: &Suite,
    selection: &Selection,
    implementation: String,
    profile: super::Capabilities,
    cases: Vec<CaseResult>,
    elapsed: std::time::Duration,
) -> SuiteReport {
    let mut tally: std::collections::HashMap<&str, (usize, usize, usize)> =
        std::collections::HashMap::new();
    for c in &cases {
        for clause in &c.outcome.clauses {
            let t = tally.entry(clause.as_str()).or_default();
            if c.not_applicable() {
                t.2 += 1;
            } else {
                t.0 += 1;
                t.1 += usize::from(c.passed());
            }
        }
    }
    let mut in_suite = std::collections::HashMap::<&str, usize>::new();
    for (_, case) in suite.cases() {
        for c in &case.clauses {
            *in_suite.entry(c.as_str()).or_default() += 1;
        }
    }
    let clauses = clause_catalogue()
        .into_iter()
        .filter(|(id, _)| selection.covers_clause(id))
        .map(|(clause, text)| {
            let (cases, passed, not_applicable) =
                tally.get(clause.as_str()).copied().unwrap_or_default();
            ClauseRow {
                in_suite: in_suite.get(clause.as_str()).copied().unwrap_or_default(),
                clause,
                text,
                cases,
                passed,
                failed: cases - passed,
                not_applicable,
            }
        })
        .collect();
    SuiteReport {
        implementation,
        capabilities: profile,
        cases,
        clauses,
        generated: None,
        elapsed,
        candidate_args: String::new(),
        failure_dir: None,
        generated_note: None,
        shard: None,
        selection: Some(SelectionSummary::of(suite, selection)),
    }
}

/// Whether a case with these needs is judged by what a run did: `run` or `replay`.
pub(crate) fn effectful<'a>(requires: impl IntoIterator<Item = &'a String>) -> bool {
    requires
        .into_iter()
        .any(|r| r == "op.run" || r == "op.replay")
}

/// At most this many bytes of one response are kept for the report (JSON, JUnit).
pub(crate) use crate::limits::RESPONSE_KEEP_MAX;

/// A response as the report keeps it: whole when its JSON text fits in
/// [`RESPONSE_KEEP_MAX`] bytes, else `{"truncated": true, "bytes": N, "prefix": "…"}`.
pub(crate) fn bounded_response(response: Value) -> Value {
    let text = response.to_string();
    if text.len() <= RESPONSE_KEEP_MAX {
        return response;
    }
    let mut end = RESPONSE_KEEP_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({"truncated": true, "bytes": text.len(), "prefix": &text[..end]})
}

/// Run one case through an adapter; the flag says the adapter gave no response.
pub fn check_with(case: &Case, adapter: &mut dyn Adapter) -> (CaseOutcome, bool) {
    // SEC-1: the report keeps nothing the case's secrets could reach unredacted, and at
    // most a bounded prefix of what an adapter answered (a huge answer is not kept whole).
    // A failure text scrubs what it quotes, not the suite's own words (issue 38 item 8).
    let scrub = super::case_scrubber(&case.request);
    let (response, failures, adapter_failed) = match adapter.handle(&case.request) {
        Ok(response) => {
            let mut failures = check_expectations(&case.expect, &response, &scrub);
            // An unexpected error answer: say what it was, not only what is missing.
            if !failures.is_empty()
                && !case.expect.contains_key("error")
                && !case.expect.contains_key("response")
                && let Some(error) = response.get("error")
            {
                let error = scrub.scrubbed(error.clone());
                failures.push(format!("the answer was an error: {error}"));
            }
            (response, failures, false)
        }
        // An adapter's message mixes its words with what it quotes from the candidate.
        Err(e) => (Value::Null, vec![scrub.prose(&e.to_string())], true),
    };
    let response = bounded_response(scrub.scrubbed(response));
    let outcome = CaseOutcome {
        id: case.id.clone(),
        clauses: case.clauses.clone(),
        failures,
        response,
    };
    (outcome, adapter_failed)
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

    /// No case and no generated workflow failed (the exit-status rule of
    /// `w6w-sim conformance`).
    pub fn all_passed(&self) -> bool {
        self.failed() == 0 && self.generated_failed() == 0
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

    /// The human report: per-clause table, failures, timing, and the closing line
    /// `N passed, M failed`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "w6w conformance suite against {}", self.implementation);
        let _ = writeln!(out);
        let width = self
            .clauses
            .iter()
            .map(|r| r.clause.len())
            .max()
            .unwrap_or(6)
            .max(6);
        // The third column exists only for a candidate with a profile: the reference's
        // table stays as it was.
        let profiled = !self.capabilities.is_all();
        if profiled {
            let _ = writeln!(out, "capabilities: {}\n", self.capabilities);
        }
        let na_head = if profiled { "     n/a" } else { "" };
        let _ = writeln!(
            out,
            "{:<width$}  {:>5}  {:>6}  {:>6}{na_head}",
            "clause", "cases", "passed", "failed"
        );
        for r in &self.clauses {
            let note = if r.in_suite == 0 {
                "  no cases"
            } else if r.cases == 0 && r.not_applicable > 0 {
                "  not applicable"
            } else if r.cases == 0 {
                "  none selected"
            } else if r.failed > 0 {
                "  FAILED"
            } else {
                ""
            };
            let na = if profiled {
                format!("  {:>6}", r.not_applicable)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{:<width$}  {:>5}  {:>6}  {:>6}{na}{note}",
                r.clause, r.cases, r.passed, r.failed
            );
        }
        let uncovered = self.clauses.iter().filter(|r| r.in_suite == 0).count();
        let _ = writeln!(
            out,
            "\n{} clauses: {} with cases, {uncovered} with no cases",
            self.clauses.len(),
            self.clauses.len() - uncovered
        );
        if self.failed() > 0 {
            let _ = writeln!(out, "\nFailures:");
            self.write_failures(&mut out);
        }
        if self.not_applicable() > 0 {
            let mut missing: BTreeMap<&str, usize> = BTreeMap::new();
            let mut unjudged = 0;
            for c in &self.cases {
                if c.missing.iter().any(|m| super::capability::is_seam(m)) {
                    unjudged += 1;
                    continue;
                }
                for m in &c.missing {
                    *missing.entry(m.as_str()).or_default() += 1;
                }
            }
            if unjudged > 0 {
                let _ = writeln!(
                    out,
                    "\nNot judged at this seam: {unjudged} cases ({}); not run, not counted",
                    super::capability::SEAM_HOST_MEANS
                );
            }
            if !missing.is_empty() {
                let list: Vec<String> = missing.iter().map(|(m, n)| format!("{m} ({n})")).collect();
                let _ = writeln!(
                    out,
                    "\nNot applicable: {} cases need a capability outside the profile: {}",
                    self.not_applicable() - unjudged,
                    list.join(", ")
                );
            }
        }
        if let Some(g) = &self.generated {
            let na = match g.not_applicable {
                0 => String::new(),
                n if g.missing.is_empty() => format!(", {n} not applicable"),
                n => format!(
                    ", {n} not applicable (they need {}, outside the profile)",
                    g.missing.join(", ")
                ),
            };
            let shard = g
                .shard
                .as_ref()
                .map(|s| format!(", shard {s}: every seed index i with i mod N = K-1"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\nGenerated workflows (seeds {}..{}{shard}): {} passed, {} failed{na}",
                g.seed,
                g.seed.wrapping_add(g.span as u64),
                g.passed(),
                g.failed()
            );
            if g.self_reported > 0 {
                let _ = writeln!(
                    out,
                    "  {} not run: {}",
                    g.self_reported,
                    super::SELF_REPORTED
                );
            }
            self.write_generated_failures(&mut out, false);
        } else if let Some(note) = &self.generated_note {
            let _ = writeln!(out, "\n{note}");
        }
        let generated = match self.generated_count() {
            0 => String::new(),
            n => format!(" + {n} generated workflows"),
        };
        let _ = writeln!(
            out,
            "\n{} cases{generated} in {:.3} s, {:.0} cases/s",
            self.cases.len(),
            self.elapsed.as_secs_f64(),
            self.cases_per_second()
        );
        let generated_passed = self.generated.as_ref().map_or(0, GeneratedReport::passed);
        let not_applicable = self.not_applicable() + self.generated_not_applicable();
        let na = match not_applicable {
            0 => String::new(),
            n => format!(", {n} not applicable"),
        };
        let _ = writeln!(
            out,
            "{} passed, {} failed{na}",
            self.passed() + generated_passed,
            self.failed() + self.generated_failed()
        );
        out
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

    /// Where a generated failure's files are (in [`SuiteReport::failure_dir`]), as printed.
    fn failure_paths(&self, seed: u64) -> (String, String) {
        let (w, s) = Self::failure_files(seed);
        match &self.failure_dir {
            Some(dir) => (
                dir.join(w).display().to_string(),
                dir.join(s).display().to_string(),
            ),
            None => (w, s),
        }
    }

    /// Each generated failure: seed, property, message, and how to reproduce it — with
    /// `inline`, the shrunk workflow and scenario as JSON (a `#[test]` writes no files).
    fn write_generated_failures(&self, out: &mut String, inline: bool) {
        let Some(g) = &self.generated else {
            return;
        };
        for f in &g.failures {
            let v = &f.violation;
            let _ = writeln!(
                out,
                "  seed {} [{}] {} (shrunk from {} to {} steps)",
                f.seed, v.property, v.message, f.steps_before, f.steps_after
            );
            let _ = writeln!(out, "    regenerate: {}", self.regenerate_command(f.seed));
            if inline {
                let _ = writeln!(
                    out,
                    "    workflow: {}\n    scenario: {}",
                    f.workflow, f.scenario
                );
                continue;
            }
            let (w, s) = self.failure_paths(f.seed);
            let _ = writeln!(out, "    shrunk workflow and scenario: {w} {s}");
            if v.replay {
                let _ = writeln!(
                    out,
                    "    the reference on them: w6w-sim run {w} --scenario {s} > w6w-failure-{seed}.report.json && w6w-sim replay {w} --run w6w-failure-{seed}.report.json --scenario {s}",
                    seed = f.seed
                );
            } else {
                let _ = writeln!(
                    out,
                    "    the reference on them: w6w-sim run {w} --scenario {s}"
                );
            }
        }
    }

    fn write_failures(&self, out: &mut String) {
        for c in self.cases.iter().filter(|c| c.failed()) {
            let _ = writeln!(
                out,
                "  {} [{}] ({}.json)",
                c.outcome.id,
                c.outcome.clauses.join(", "),
                c.file
            );
            if !c.description.is_empty() {
                let _ = writeln!(out, "    {}", c.description);
            }
            for f in &c.outcome.failures {
                let _ = writeln!(out, "    - {f}");
            }
            let _ = writeln!(out, "    rerun: {}", self.rerun_command(&c.outcome.id));
            match &c.reference_diff {
                Some(d) if d.is_empty() => {
                    let _ = writeln!(
                        out,
                        "    the reference gives the same response: the case disagrees with the reference too"
                    );
                }
                Some(d) => {
                    let _ = writeln!(
                        out,
                        "    diff against the reference (- reference  + candidate):"
                    );
                    for line in diff::render(d) {
                        let _ = writeln!(out, "      {line}");
                    }
                }
                None => {}
            }
        }
    }

    /// The same report as one JSON document.
    pub fn to_json(&self) -> Value {
        let cases: Vec<Value> = self
            .cases
            .iter()
            .map(|c| {
                let mut v = json!({
                    "id": c.outcome.id,
                    "file": c.file,
                    "family": c.family,
                    "description": c.description,
                    "clauses": c.outcome.clauses,
                    "status": c.status(),
                    "passed": c.passed(),
                    "failures": c.outcome.failures,
                    "requires": c.requires,
                    "elapsedMs": c.elapsed.as_secs_f64() * 1000.0,
                });
                if c.not_applicable()
                    && let Some(obj) = v.as_object_mut()
                {
                    obj.insert("missing".into(), json!(c.missing));
                }
                if c.failed()
                    && let Some(obj) = v.as_object_mut()
                {
                    obj.insert("adapterFailed".into(), c.adapter_failed.into());
                    obj.insert("response".into(), c.outcome.response.clone());
                    if let Some(d) = &c.reference_diff {
                        let d: Vec<Value> = d.iter().map(DiffEntry::to_json).collect();
                        obj.insert("referenceDiff".into(), d.into());
                    }
                }
                v
            })
            .collect();
        let clauses: Vec<Value> = self
            .clauses
            .iter()
            .map(|r| {
                json!({"clause": r.clause, "text": r.text, "cases": r.cases, "passed": r.passed,
                       "failed": r.failed, "notApplicable": r.not_applicable,
                       "casesInSuite": r.in_suite})
            })
            .collect();
        let uncovered: Vec<&str> = self
            .clauses
            .iter()
            .filter(|r| r.in_suite == 0)
            .map(|r| r.clause.as_str())
            .collect();
        json!({
            "implementation": self.implementation,
            "capabilities": self.capabilities,
            "cases": cases,
            "clauses": clauses,
            "clausesWithoutCases": uncovered,
            "totals": {"cases": self.cases.len(), "passed": self.passed(), "failed": self.failed(),
                       "notApplicable": self.not_applicable()},
            "generated": self.generated.as_ref().map(|g| json!({
                "seed": g.seed,
                "count": g.count,
                "span": g.span,
                "shard": g.shard,
                "passed": g.passed(),
                "failed": g.failed(),
                "selfReported": g.self_reported,
                "notApplicable": g.not_applicable,
                "notApplicableSeeds": g.not_applicable_seeds,
                "missing": g.missing,
                "elapsedMs": g.elapsed.as_secs_f64() * 1000.0,
                "failures": g.failures.iter().map(|f| json!({
                    "seed": f.seed,
                    "property": f.violation.property,
                    "message": f.violation.message,
                    "replay": f.violation.replay,
                    "stepsBefore": f.steps_before,
                    "stepsAfter": f.steps_after,
                    "workflow": f.workflow,
                    "scenario": f.scenario,
                })).collect::<Vec<_>>(),
            })),
            "elapsedMs": self.elapsed.as_secs_f64() * 1000.0,
            "casesPerSecond": self.cases_per_second(),
            "shard": self.shard,
            "selection": self.selection.as_ref().map(SelectionSummary::to_json),
            "candidateArgs": self.candidate_args,
        })
    }

    /// JUnit XML: one `<testsuite>` per case file, one `<testcase>` per case named by its
    /// id, classname `w6w.conformance.<file>`, clauses as `<property name="clause">`.
    pub fn to_junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
            xml_escape(&format!("w6w conformance: {}", self.implementation)),
            self.cases.len() + self.generated_count(),
            self.failed() + self.generated_failed(),
            self.not_applicable() + self.generated_not_applicable(),
            self.elapsed.as_secs_f64()
        );
        let mut files: Vec<&str> = Vec::new();
        for c in &self.cases {
            if !files.contains(&c.file.as_str()) {
                files.push(&c.file);
            }
        }
        for file in files {
            let group: Vec<&CaseResult> = self.cases.iter().filter(|c| c.file == file).collect();
            let failures = group.iter().filter(|c| c.failed()).count();
            let skipped = group.iter().filter(|c| c.not_applicable()).count();
            let time: f64 = group.iter().map(|c| c.elapsed.as_secs_f64()).sum();
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
                xml_escape(file),
                group.len()
            );
            for c in group {
                let _ = writeln!(
                    out,
                    "    <testcase name=\"{}\" classname=\"w6w.conformance.{}\" time=\"{:.6}\">",
                    xml_escape(&c.outcome.id),
                    xml_escape(&c.file),
                    c.elapsed.as_secs_f64()
                );
                out.push_str("      <properties>\n");
                for clause in &c.outcome.clauses {
                    let _ = writeln!(
                        out,
                        "        <property name=\"clause\" value=\"{}\"/>",
                        xml_escape(clause)
                    );
                }
                out.push_str("      </properties>\n");
                if c.not_applicable() {
                    let _ = writeln!(
                        out,
                        "      <skipped message=\"not applicable: needs {}\"/>",
                        xml_escape(&c.missing.join(", "))
                    );
                }
                if c.failed() {
                    let mut body = format!("clauses: {}\n", c.outcome.clauses.join(", "));
                    for f in &c.outcome.failures {
                        let _ = writeln!(body, "- {f}");
                    }
                    if let Some(d) = &c.reference_diff {
                        let _ = writeln!(
                            body,
                            "diff against the reference (- reference  + candidate):"
                        );
                        for line in diff::render(d) {
                            let _ = writeln!(body, "  {line}");
                        }
                    }
                    let _ = writeln!(
                        out,
                        "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                        xml_escape(c.outcome.failures.first().map_or("", String::as_str)),
                        if c.adapter_failed {
                            "adapter"
                        } else {
                            "expectation"
                        },
                        xml_escape(&body)
                    );
                }
                out.push_str("    </testcase>\n");
            }
            out.push_str("  </testsuite>\n");
        }
        if let Some(g) = &self.generated {
            self.write_generated_junit(&mut out, g);
        }
        out.push_str("</testsuites>\n");
        out
    }
}

impl SuiteReport {
    /// One `<testsuite name="generated">`, one `<testcase name="generated-SEED">` per
    /// workflow; failures carry the shrunk workflow and scenario.
    fn write_generated_junit(&self, out: &mut String, g: &GeneratedReport) {
        let _ = writeln!(
            out,
            "  <testsuite name=\"generated\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
            g.count,
            g.failed(),
            g.not_applicable,
            g.elapsed.as_secs_f64()
        );
        for &seed in &g.seeds {
            let _ = write!(
                out,
                "    <testcase name=\"generated-{seed}\" classname=\"w6w.conformance.generated\">"
            );
            if g.not_applicable_seeds.contains(&seed) {
                out.push_str(
                    "<skipped message=\"not applicable: outside the candidate's profile\"/>",
                );
            } else if g.self_reported > 0 {
                let _ = write!(
                    out,
                    "\n      <failure message=\"self_reported\" type=\"self_reported\">{}</failure>\n    ",
                    xml_escape(super::SELF_REPORTED)
                );
            } else if let Some(f) = g.failures.iter().find(|f| f.seed == seed) {
                let body = format!(
                    "{}\nregenerate: {}\nworkflow: {}\nscenario: {}",
                    f.violation.message,
                    self.regenerate_command(seed),
                    f.workflow,
                    f.scenario
                );
                let _ = write!(
                    out,
                    "\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    ",
                    xml_escape(&f.violation.message),
                    f.violation.property,
                    xml_escape(&body)
                );
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
}

/// `command --case 'ID'`: one case again, its id quoted for a POSIX shell.
pub fn rerun_case(command: &str, case_id: &str) -> String {
    format!("{command} --case '{}'", case_id.replace('\'', "'\\''"))
}

/// `command --generate 1 --seed S`: one generated workflow again.
pub fn regenerate(command: &str, seed: u64) -> String {
    format!("{command} --generate 1 --seed {seed}")
}

/// Escape text for an XML 1.0 attribute or element. Characters XML 1.0 cannot carry at
/// all (most C0 controls) become `\u{…}` text rather than an ill-formed document.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{AdapterError, FnAdapter, LoadedFile};
    use crate::conformance::{Capabilities, CaseFile, Reference, WithCapabilities};

    fn suite(cases: Value) -> Suite {
        let file: CaseFile =
            serde_json::from_value(json!({"family": "PLAN", "cases": cases})).expect("case file");
        Suite {
            files: vec![LoadedFile {
                path: "cases/plan.json".into(),
                file,
            }],
        }
    }

    fn two_cases() -> Suite {
        suite(json!([
            {"id": "good", "clauses": ["PLAN-1", "PLAN-2"], "request": {"op": "x"},
             "expect": {"ok": 1}},
            {"id": "bad <&>", "clauses": ["PLAN-2"], "description": "d", "request": {"op": "y"},
             "expect": {"ok": 1, "match": {"/ok": 1}}}
        ]))
    }

    fn answer_x(request: &Value) -> Value {
        if request["op"] == "x" {
            json!({"ok": 1})
        } else {
            json!({"ok": "\u{1}wrong"})
        }
    }

    #[test]
    fn the_report_counts_cases_per_clause_and_lists_every_clause() {
        let mut adapter = FnAdapter::new("fake", answer_x);
        let report = run_suite(
            &mut adapter,
            &two_cases(),
            &Selection::all(),
            false,
            &mut |_, _, _| {},
        );
        assert_eq!((report.passed(), report.failed()), (1, 1));
        assert_eq!(report.clauses.len(), clause_catalogue().len());
        let row = |id: &str| {
            report
                .clauses
                .iter()
                .find(|r| r.clause == id)
                .expect(id)
                .clone()
        };
        assert_eq!((row("PLAN-1").cases, row("PLAN-1").passed), (1, 1));
        assert_eq!((row("PLAN-2").cases, row("PLAN-2").failed), (2, 1));
        assert_eq!(row("RUN-1").in_suite, 0);
        let text = report.to_text();
        assert_eq!(text.lines().last(), Some("1 passed, 1 failed"));
        assert!(text.contains("RUN-1"), "zero-case clauses are listed");
        assert!(
            text.contains("- match /ok: expected 1, got \"\\u0001wrong\""),
            "{text}"
        );
        let v = report.to_json();
        assert_eq!(
            v["totals"],
            json!({"cases": 2, "passed": 1, "failed": 1, "notApplicable": 0})
        );
        assert_eq!(v["cases"][1]["response"], json!({"ok": "\u{1}wrong"}));
        assert!(
            v["clausesWithoutCases"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("RUN-1")))
        );
    }

    /// D-102: an adapter answering exactly what the reference answers (a cache of recorded
    /// answers is indistinguishable from this) fails every effectful case of the real suite
    /// and every generated workflow, and still passes the pure ops; with a profile that
    /// leaves runs out, those are not applicable instead. The same cases pass against the
    /// reference, so the failures are the rule's, not the cases'.
    #[test]
    fn a_self_reporting_adapter_fails_every_effectful_case() {
        let suite = Suite::load_default().expect("the suite loads");
        let selection = Selection::new(&["RETRY".into(), "PLAN".into()], None).expect("ok");
        let mut recorded = FnAdapter::new("recorded answers", crate::service::handle);
        let report = run_suite(&mut recorded, &suite, &selection, true, &mut |_, _, _| {});
        let effectful: Vec<&CaseResult> = report
            .cases
            .iter()
            .filter(|c| effectful(&c.requires))
            .collect();
        assert!(effectful.len() > 10, "{}", effectful.len());
        for c in &effectful {
            assert!(
                c.failed(),
                "{} passed through a self-reporting adapter",
                c.outcome.id
            );
            assert!(c.outcome.failures[0].starts_with("self_reported: "));
            assert!(
                c.reference_diff.is_none(),
                "nothing to diff: it was never asked"
            );
        }
        let pure = report.cases.len() - effectful.len();
        assert!(
            pure > 10 && report.passed() == pure,
            "pure ops stay request/response"
        );
        let reference = run_suite(&mut Reference, &suite, &selection, false, &mut |_, _, _| {});
        assert_eq!(reference.failed(), 0);

        let generated = crate::conformance::generate::run_generated(&mut recorded, 3, 7);
        assert_eq!((generated.failed(), generated.passed()), (3, 0));
        let mut with_report = report.clone();
        with_report.add_generated(generated);
        let text = with_report.to_text();
        assert!(text.contains("3 not run: self_reported: "), "{text}");
        assert!(with_report.to_junit().contains("type=\"self_reported\""));

        let profile = Capabilities::all().without("op.run").without("op.replay");
        let mut honest = WithCapabilities::new(recorded, profile);
        let report = run_suite(&mut honest, &suite, &selection, false, &mut |_, _, _| {});
        assert_eq!(report.failed(), 0);
        assert_eq!(report.not_applicable(), effectful.len());
        let generated = crate::conformance::generate::run_generated(&mut honest, 3, 7);
        assert_eq!((generated.failed(), generated.not_applicable), (0, 3));
    }

    #[test]
    fn filters_narrow_cases_and_clause_rows() {
        let mut adapter = FnAdapter::new("fake", answer_x);
        let sel = Selection::new(&["PLAN-1".into()], None).expect("valid");
        let report = run_suite(&mut adapter, &two_cases(), &sel, false, &mut |_, _, _| {});
        assert_eq!(report.cases.len(), 1);
        assert_eq!(report.clauses.len(), 1);
        let sel = Selection::new(&[], Some("bad")).expect("valid");
        let report = run_suite(&mut adapter, &two_cases(), &sel, false, &mut |_, _, _| {});
        assert_eq!(report.cases.len(), 1);
        let text = report.to_text();
        let line = text
            .lines()
            .find(|l| l.starts_with("PLAN-1 "))
            .expect("PLAN-1 row");
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["PLAN-1", "0", "0", "0", "none", "selected"]
        );
    }

    struct Dead;
    impl Adapter for Dead {
        fn name(&self) -> String {
            "dead".into()
        }
        fn handle(&mut self, _: &Value) -> Result<Value, AdapterError> {
            Err(AdapterError::Exited("gone".into()))
        }
    }

    #[test]
    fn an_adapter_error_fails_even_a_case_it_would_pass() {
        let s = suite(json!([{"id": "e", "clauses": ["PLAN-1"], "request": {},
                              "expect": {"absent": ["/ok"]}}]));
        let report = run_suite(&mut Dead, &s, &Selection::all(), true, &mut |_, _, _| {});
        assert_eq!(report.failed(), 1);
        assert_eq!(report.cases[0].outcome.failures, ["adapter exited: gone"]);
        assert!(report.cases[0].adapter_failed);
        assert_eq!(report.cases[0].reference_diff, None);
    }

    #[test]
    fn diff_reference_shows_fields_or_says_the_reference_agrees() {
        let s = suite(
            json!([{"id": "u", "clauses": ["PLAN-1"], "request": {"op": "nope"},
                              "expect": {"ok": true}}]),
        );
        let report = run_suite(
            &mut Reference,
            &s,
            &Selection::all(),
            true,
            &mut |_, _, _| {},
        );
        assert_eq!(report.cases[0].reference_diff, Some(vec![]));
        assert!(
            report
                .to_text()
                .contains("the case disagrees with the reference too")
        );
        let mut liar = FnAdapter::new("liar", |_: &Value| json!({"error": {"code": "other"}}));
        let report = run_suite(&mut liar, &s, &Selection::all(), true, &mut |_, _, _| {});
        let d = report.cases[0].reference_diff.clone().expect("diffed");
        assert!(d.iter().any(|e| e.pointer == "/error/code"), "{d:?}");
    }

    #[test]
    fn junit_is_escaped_and_names_cases_by_id() {
        let mut adapter = FnAdapter::new("fa\"ke", answer_x);
        let report = run_suite(
            &mut adapter,
            &two_cases(),
            &Selection::all(),
            false,
            &mut |_, _, _| {},
        );
        let xml = report.to_junit();
        assert!(xml.contains("<testcase name=\"good\" classname=\"w6w.conformance.plan\""));
        assert!(xml.contains("<testcase name=\"bad &lt;&amp;&gt;\""));
        assert!(xml.contains("<property name=\"clause\" value=\"PLAN-2\"/>"));
        assert!(xml.contains("name=\"w6w conformance: fa&quot;ke\""));
        assert!(!xml.contains('\u{1}'));
        assert_eq!(xml_escape("a\u{1}b"), "a\\u{1}b");
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert_eq!(xml_escape("a'\n<"), "a&apos;&#10;&lt;");
    }
}
