//! Running a suite against an adapter: load, select, judge each case, assemble the
//! [`SuiteReport`].
//!
//! Owns: [`run`] / [`run_suite`], [`RunOptions`], how one case is judged ([`Judge`]:
//! not applicable, self-reported, or asked and checked) and the per-clause tally. Refuses
//! to know how an adapter is reached or how a report is rendered (`super::report`).

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use super::generate::{DEFAULT_GENERATE, DEFAULT_SEED, run_generated};
use super::load::{LoadError, Selection, Suite};
use super::report::{CaseResult, ClauseRow, SelectionSummary, SuiteReport};
use super::{Adapter, Case, CaseOutcome, check_expectations, clause_catalogue};
use crate::json::json_diff;

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
pub(crate) fn run_suite(
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
    /// The pure ops generated seeds are judged on at this seam (D-382, D-383).
    pure: super::generate::PureChecks,
}

impl Judge {
    /// Whether the candidate's runs are observed by the suite (not self-reported, D-102).
    pub(crate) fn observed(&self) -> bool {
        self.observed
    }

    /// The pure ops generated seeds are judged on at this seam (D-382, D-383).
    pub(crate) fn pure(&self) -> super::generate::PureChecks {
        self.pure
    }

    pub(crate) fn of(adapter: &dyn Adapter, diff_reference: bool) -> Judge {
        let profile = adapter.capabilities();
        Judge {
            pure: super::generate::PureChecks::for_seam(adapter, &profile),
            profile,
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
pub(crate) fn check_with(case: &Case, adapter: &mut dyn Adapter) -> (CaseOutcome, bool) {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::report::xml_escape;
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

    /// [`two_cases`] run against an adapter named `name` that answers with [`answer_x`].
    fn two_cases_answered_by_x(name: &str) -> SuiteReport {
        let mut adapter = FnAdapter::new(name, answer_x);
        run_suite(
            &mut adapter,
            &two_cases(),
            &Selection::all(),
            false,
            &mut |_, _, _| {},
        )
    }

    #[test]
    fn the_report_counts_cases_per_clause_and_lists_every_clause() {
        let report = two_cases_answered_by_x("fake");
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

    /// D-376: a run that judged nothing is not a pass. With a profile that leaves every
    /// case out, `all_passed` is false, the text says so above the closing line and
    /// `assert_all_passed` panics naming it; one judged case, or a shard's report, is
    /// judged by its failures as before.
    #[test]
    fn a_run_that_judges_nothing_is_not_a_pass() {
        let run = |profile: Capabilities| {
            let mut adapter = WithCapabilities::new(FnAdapter::new("narrow", answer_x), profile);
            let good = Selection::new(&[], Some("good")).expect("a valid selection");
            run_suite(&mut adapter, &two_cases(), &good, false, &mut |_, _, _| {})
        };
        let nothing = run(Capabilities::none());
        assert_eq!(
            (nothing.passed(), nothing.failed(), nothing.not_applicable()),
            (0, 0, 1)
        );
        assert!(nothing.judged_nothing() && !nothing.all_passed());
        let text = nothing.to_text();
        assert!(
            text.contains("Nothing was judged: every selected case and generated workflow was outside the profile (none)"),
            "{text}"
        );
        assert_eq!(
            text.lines().last(),
            Some("0 passed, 0 failed, 1 not applicable")
        );
        let panicked = std::panic::catch_unwind(|| nothing.assert_all_passed());
        let message = panicked
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(
            message.starts_with("nothing was judged against narrow"),
            "{message}"
        );

        let judged = run(Capabilities::all());
        assert_eq!((judged.passed(), judged.judged()), (1, 1));
        assert!(judged.all_passed() && !judged.to_text().contains("Nothing was judged"));

        let shard = SuiteReport {
            shard: Some("2/3".into()),
            ..nothing
        };
        assert!(!shard.judged_nothing() && shard.all_passed());
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
        // Its generated seeds are judged on what its pure ops answer of them (D-382).
        let generated = crate::conformance::generate::run_generated(&mut honest, 3, 7);
        assert_eq!(
            (
                generated.passed(),
                generated.not_applicable,
                generated.pure_only
            ),
            (3, 0, 3)
        );
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
        let report = two_cases_answered_by_x("fa\"ke");
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
