//! `w6w-sim merge`: the N shards of one campaign (`--shard K/N --json`) back into one report.
//!
//! Owns: reading a suite report back from its JSON ([`report_from_json`]) and [`merge`].
//! Invariant: a merge never hides anything — every shard 1..N of one `N` must be there
//! exactly once, all from the same candidate, profile and generated-seed range; a case id
//! seen in two shards, a missing shard or a report that is not a suite report is an error
//! naming the file, never a smaller green report.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::generate::{GeneratedFailure, GeneratedReport, Violation};
use super::report::{CaseResult, ClauseRow, SelectionSummary, SuiteReport};
use super::{CaseOutcome, shard::Shard};
use crate::json::DiffEntry;

/// Why shard reports cannot be merged. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MergeError {
    /// A file is not a suite report written by `--json` (`not_a_report`).
    #[error("{file}: not a w6w-sim conformance --json report: {why}")]
    NotAReport { file: String, why: String },
    /// The reports are not shards of one campaign (`not_one_campaign`).
    #[error("{0}")]
    NotOneCampaign(String),
}

impl MergeError {
    /// The stable machine code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            MergeError::NotAReport { .. } => "not_a_report",
            MergeError::NotOneCampaign(_) => "not_one_campaign",
        }
    }
}

fn str_of<'v>(v: &'v Value, key: &str) -> Result<&'v str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no string {key:?}"))
}

fn usize_of(v: &Value, key: &str) -> Result<usize, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("no count {key:?}"))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn millis(v: &Value, key: &str) -> Duration {
    Duration::from_secs_f64(
        v.get(key)
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .unwrap_or(0.0)
            / 1000.0,
    )
}

/// A generated property's name as the report keeps it (`&'static str`).
fn property(name: &str) -> &'static str {
    [
        "model",
        "crash",
        "replay",
        "secrets",
        "plan",
        "validate",
        "logic",
        "resolve",
        "parse",
        "serialize",
        "adapter",
    ]
    .into_iter()
    .find(|p| *p == name)
    .unwrap_or("unknown")
}

fn case_from_json(c: &Value) -> Result<CaseResult, String> {
    let id = str_of(c, "id")?.to_owned();
    let reference_diff = c.get("referenceDiff").and_then(Value::as_array).map(|d| {
        d.iter()
            .map(|e| DiffEntry {
                pointer: e["pointer"].as_str().unwrap_or_default().to_owned(),
                expected: e.get("reference").filter(|v| !v.is_null()).cloned(),
                actual: e.get("candidate").filter(|v| !v.is_null()).cloned(),
            })
            .collect()
    });
    let mut failures = strings(c, "failures");
    let status = str_of(c, "status")?;
    if status == "failed" && failures.is_empty() {
        // A failed case with no failure text still fails after the merge.
        failures.push("failed (the shard's report gave no reason)".into());
    }
    let missing = match status {
        "notApplicable" => {
            let m = strings(c, "missing");
            if m.is_empty() {
                vec!["(unknown)".into()]
            } else {
                m
            }
        }
        "passed" | "failed" => Vec::new(),
        other => return Err(format!("case {id:?} has status {other:?}")),
    };
    Ok(CaseResult {
        file: str_of(c, "file")?.to_owned(),
        family: str_of(c, "family")?.to_owned(),
        description: c["description"].as_str().unwrap_or_default().to_owned(),
        outcome: CaseOutcome {
            clauses: strings(c, "clauses"),
            failures: if status == "passed" {
                Vec::new()
            } else {
                failures
            },
            response: c.get("response").cloned().unwrap_or(Value::Null),
            id,
        },
        adapter_failed: c
            .get("adapterFailed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        elapsed: millis(c, "elapsedMs"),
        reference_diff,
        requires: strings(c, "requires"),
        missing,
    })
}

fn generated_from_json(g: &Value) -> Result<GeneratedReport, String> {
    let seed = g
        .get("seed")
        .and_then(Value::as_u64)
        .ok_or("no generated seed")?;
    let span = usize_of(g, "span")?;
    let shard = g.get("shard").and_then(Value::as_str).map(str::to_owned);
    let parsed = shard.as_deref().map(Shard::parse).transpose()?;
    let seeds: Vec<u64> = (0..span as u64)
        .filter(|i| parsed.is_none_or(|s| s.takes_seed_index(*i)))
        .map(|i| seed.wrapping_add(i))
        .collect();
    let failures = g
        .get("failures")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| {
            Ok(GeneratedFailure {
                seed: f
                    .get("seed")
                    .and_then(Value::as_u64)
                    .ok_or("a failure without a seed")?,
                violation: Violation {
                    property: property(f["property"].as_str().unwrap_or_default()),
                    message: f["message"].as_str().unwrap_or_default().to_owned(),
                    faults: f
                        .pointer("/scenario/faults")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({})),
                    replay: f["replay"].as_bool().unwrap_or(false),
                },
                workflow: f.get("workflow").cloned().unwrap_or(Value::Null),
                scenario: f.get("scenario").cloned().unwrap_or(Value::Null),
                steps_before: usize_of(f, "stepsBefore").unwrap_or(0),
                steps_after: usize_of(f, "stepsAfter").unwrap_or(0),
            })
        })
        .collect::<Result<Vec<_>, &str>>()?;
    Ok(GeneratedReport {
        seed,
        count: usize_of(g, "count")?,
        span,
        shard,
        failures,
        seeds,
        not_applicable: usize_of(g, "notApplicable")?,
        not_applicable_seeds: g
            .get("notApplicableSeeds")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
        missing: g
            .get("missing")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        self_reported: usize_of(g, "selfReported").unwrap_or(0),
        pure_only: usize_of(g, "pureOpsOnly").unwrap_or(0),
        elapsed: millis(g, "elapsedMs"),
    })
}

fn selection_from_json(v: &Value) -> Result<SelectionSummary, String> {
    let digest = str_of(v, "digest")?;
    if digest.len() != 16 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("digest {digest:?} is not 16 hex digits"));
    }
    Ok(SelectionSummary {
        clauses: strings(v, "clauses"),
        case: v.get("case").and_then(Value::as_str).map(str::to_owned),
        cases: usize_of(v, "cases")?,
        digest: digest.to_owned(),
    })
}

/// A suite report read back from what [`SuiteReport::to_json`] wrote.
pub(crate) fn report_from_json(v: &Value) -> Result<SuiteReport, String> {
    let cases = v
        .get("cases")
        .and_then(Value::as_array)
        .ok_or("no \"cases\" list")?
        .iter()
        .map(case_from_json)
        .collect::<Result<Vec<_>, _>>()?;
    let clauses = v
        .get("clauses")
        .and_then(Value::as_array)
        .ok_or("no \"clauses\" list")?
        .iter()
        .map(|r| {
            Ok(ClauseRow {
                clause: str_of(r, "clause")?.to_owned(),
                text: str_of(r, "text")?.to_owned(),
                cases: usize_of(r, "cases")?,
                passed: usize_of(r, "passed")?,
                failed: usize_of(r, "failed")?,
                not_applicable: usize_of(r, "notApplicable")?,
                in_suite: usize_of(r, "casesInSuite")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let capabilities =
        serde_json::from_value(v.get("capabilities").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("\"capabilities\": {e}"))?;
    let generated = match v.get("generated") {
        None | Some(Value::Null) => None,
        Some(g) => Some(generated_from_json(g).map_err(|e| format!("\"generated\": {e}"))?),
    };
    Ok(SuiteReport {
        implementation: str_of(v, "implementation")?.to_owned(),
        capabilities,
        cases,
        clauses,
        generated,
        elapsed: millis(v, "elapsedMs"),
        candidate_args: v["candidateArgs"].as_str().unwrap_or_default().to_owned(),
        failure_dir: None,
        generated_note: None,
        shard: v.get("shard").and_then(Value::as_str).map(str::to_owned),
        selection: match v.get("selection") {
            None | Some(Value::Null) => None,
            Some(s) => Some(selection_from_json(s).map_err(|e| format!("\"selection\": {e}"))?),
        },
    })
}

/// Join the reports of shards 1..N of one campaign (`(file name, report JSON)` each) into
/// the report one unsharded run would have printed (timing: the sum of the shards').
pub(crate) fn merge(parts: &[(String, Value)]) -> Result<SuiteReport, MergeError> {
    let mut reports = Vec::with_capacity(parts.len());
    for (file, v) in parts {
        let r = report_from_json(v).map_err(|why| MergeError::NotAReport {
            file: file.clone(),
            why,
        })?;
        reports.push((file.as_str(), r));
    }
    let Some((first_file, first)) = reports.first() else {
        return Err(MergeError::NotOneCampaign("no reports to merge".into()));
    };
    let shards = every_shard_once(&reports, first_file)?;
    // One candidate and profile; D-203: one selection of one suite, every case in the
    // shard its id hashes to.
    let selection = selection_of(first_file, first)?;
    for ((file, r), shard) in reports.iter().zip(&shards) {
        check_part(file, r, shard, (first_file, first), &selection)?;
    }
    let mut merged = joined(&reports, first)?;
    // Together the shards hold exactly the selected cases (each once: checked above).
    let mut ids: Vec<&str> = merged.cases.iter().map(|c| c.outcome.id.as_str()).collect();
    let (count, digest) = (ids.len(), SelectionSummary::digest(&mut ids));
    if (count, digest.as_str()) != (selection.cases, selection.digest.as_str()) {
        return Err(campaign(format!(
            "the shards hold {count} cases (digest {digest}) but selected {} (digest {}): a shard lost or gained cases, so the merge would not be the campaign's report",
            selection.cases, selection.digest
        )));
    }
    // The order one unsharded run prints: the embedded suite's, then any other case.
    let order: BTreeMap<String, usize> = super::Suite::load_default()
        .map(|suite| {
            suite
                .cases()
                .enumerate()
                .map(|(i, (_, c))| (c.id.clone(), i))
                .collect()
        })
        .unwrap_or_default();
    merged.cases.sort_by_key(|c| {
        (
            order.get(&c.outcome.id).copied().unwrap_or(usize::MAX),
            c.file.clone(),
            c.outcome.id.clone(),
        )
    });
    Ok(merged)
}

fn campaign(why: String) -> MergeError {
    MergeError::NotOneCampaign(why)
}

/// Each report's shard, checked: every shard 1..N of one N exactly once.
fn every_shard_once(
    reports: &[(&str, SuiteReport)],
    first_file: &str,
) -> Result<Vec<Shard>, MergeError> {
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    let mut n_of_all = None;
    let mut shards = Vec::with_capacity(reports.len());
    for (file, r) in reports {
        let shard = r.shard.as_deref().ok_or_else(|| {
            campaign(format!("{file}: not a shard (run with --shard K/N --json)"))
        })?;
        let parsed = Shard::parse(shard).map_err(|_| {
            campaign(format!(
                "{file}: shard {shard:?} is not K/N with 1 <= K <= N"
            ))
        })?;
        shards.push(parsed);
        let (k, n) = (parsed.number(), parsed.count());
        if *n_of_all.get_or_insert(n) != n {
            return Err(campaign(format!(
                "{file}: shard {shard} is of {n} shards, {first_file} of {}",
                n_of_all.unwrap_or(n)
            )));
        }
        if let Some(other) = seen.insert(k, file) {
            return Err(campaign(format!(
                "shard {shard} is both {other} and {file}"
            )));
        }
    }
    let n = n_of_all.unwrap_or(0);
    let missing: Vec<String> = (1..=n)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(campaign(format!(
            "shard(s) {} missing: a merge of part of a campaign would look smaller than it is",
            missing.join(", ")
        )));
    }
    Ok(shards)
}

/// What a shard's report says it selected (over every shard).
fn selection_of(file: &str, r: &SuiteReport) -> Result<SelectionSummary, MergeError> {
    r.selection.clone().ok_or_else(|| {
        campaign(format!(
            "{file}: the report does not say what it selected (written by an older w6w-sim?); run the shards again with this version"
        ))
    })
}

/// One shard's report against the first: the same candidate, profile and selection, and
/// only cases and generated seeds of its own shard.
fn check_part(
    file: &str,
    r: &SuiteReport,
    shard: &Shard,
    (first_file, first): (&str, &SuiteReport),
    selection: &SelectionSummary,
) -> Result<(), MergeError> {
    if r.implementation != first.implementation || r.capabilities != first.capabilities {
        return Err(campaign(format!(
            "{file} checked {:?} with profile {}, {first_file} {:?} with {}",
            r.implementation, r.capabilities, first.implementation, first.capabilities
        )));
    }
    let s = selection_of(file, r)?;
    if s != *selection {
        return Err(campaign(format!(
            "{file} selected {}, {first_file} {}: shards of one campaign run the same --clause/--case over the same cases",
            describe(&s),
            describe(selection)
        )));
    }
    if let Some(c) = r.cases.iter().find(|c| !shard.takes_case(&c.outcome.id)) {
        return Err(campaign(format!(
            "{file}: case {:?} does not belong to shard {shard}: not a shard of this campaign",
            c.outcome.id
        )));
    }
    if let Some(g) = &r.generated {
        let of_shard = |s: &u64| shard.takes_seed_index(s.wrapping_sub(g.seed));
        let stray = g
            .failures
            .iter()
            .map(|f| f.seed)
            .chain(g.not_applicable_seeds.iter().copied())
            .find(|s| !of_shard(s));
        if let Some(seed) = stray {
            return Err(campaign(format!(
                "{file}: generated seed {seed} does not belong to shard {shard}: not a shard of this campaign"
            )));
        }
        if g.count != g.seeds.len() {
            return Err(campaign(format!(
                "{file}: shard {shard} of {} generated workflows from seed {} should run {}, the report says {}",
                g.span,
                g.seed,
                g.seeds.len(),
                g.count
            )));
        }
    }
    Ok(())
}

/// The shards' cases (each once), clause rows, generated batches and times added up into
/// the first report's frame.
fn joined(reports: &[(&str, SuiteReport)], first: &SuiteReport) -> Result<SuiteReport, MergeError> {
    let mut merged = first.clone();
    merged.shard = None;
    merged.cases.clear();
    merged.generated = None;
    merged.elapsed = Duration::ZERO;
    let mut ids = BTreeSet::new();
    let mut rows: BTreeMap<String, ClauseRow> = BTreeMap::new();
    for (file, r) in reports {
        for c in &r.cases {
            if !ids.insert(c.outcome.id.clone()) {
                return Err(campaign(format!(
                    "case {:?} is in two shards (again in {file}): not shards of one campaign",
                    c.outcome.id
                )));
            }
        }
        merged.cases.extend(r.cases.iter().cloned());
        merged.elapsed += r.elapsed;
        for row in &r.clauses {
            let m = rows.entry(row.clause.clone()).or_insert_with(|| ClauseRow {
                cases: 0,
                passed: 0,
                failed: 0,
                not_applicable: 0,
                ..row.clone()
            });
            m.cases += row.cases;
            m.passed += row.passed;
            m.failed += row.failed;
            m.not_applicable += row.not_applicable;
        }
        merged.generated = merge_generated(merged.generated.take(), r.generated.as_ref(), file)?;
    }
    for row in &mut merged.clauses {
        if let Some(m) = rows.remove(&row.clause) {
            *row = m;
        }
    }
    Ok(merged)
}

/// A selection as a person reads it in an error.
fn describe(s: &SelectionSummary) -> String {
    let mut filters: Vec<String> = s.clauses.iter().map(|c| format!("--clause {c}")).collect();
    filters.extend(s.case.iter().map(|c| format!("--case {c:?}")));
    let filters = if filters.is_empty() {
        "every case".to_owned()
    } else {
        filters.join(" ")
    };
    format!("{filters} ({} cases, digest {})", s.cases, s.digest)
}

fn merge_generated(
    acc: Option<GeneratedReport>,
    next: Option<&GeneratedReport>,
    file: &str,
) -> Result<Option<GeneratedReport>, MergeError> {
    let (acc, next) = match (acc, next) {
        (None, None) => return Ok(None),
        (None, Some(g)) => {
            let mut g = g.clone();
            g.shard = None;
            return Ok(Some(g));
        }
        (Some(_), None) => {
            return Err(MergeError::NotOneCampaign(format!(
                "{file} ran no generated workflows, the other shards did"
            )));
        }
        (Some(a), Some(g)) => (a, g),
    };
    if (acc.seed, acc.span) != (next.seed, next.span) {
        return Err(MergeError::NotOneCampaign(format!(
            "{file} generated seeds {}..{}, the other shards {}..{}: give every shard the same --generate and --seed",
            next.seed,
            next.seed.wrapping_add(next.span as u64),
            acc.seed,
            acc.seed.wrapping_add(acc.span as u64)
        )));
    }
    let mut m = acc;
    m.count += next.count;
    m.not_applicable += next.not_applicable;
    m.self_reported += next.self_reported;
    m.elapsed += next.elapsed;
    m.failures.extend(next.failures.iter().cloned());
    m.failures.sort_by_key(|f| f.seed);
    m.seeds.extend(&next.seeds);
    m.seeds.sort_unstable();
    m.not_applicable_seeds.extend(&next.not_applicable_seeds);
    m.not_applicable_seeds.sort_unstable();
    m.missing.extend(next.missing.iter().cloned());
    m.missing.sort_unstable();
    m.missing.dedup();
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::generate::run_generated_shard;
    use crate::conformance::{FnAdapter, Reference, Selection, Suite, run_suite};

    /// Run the selection as shard k of n, the way `conformance --shard k/n --json` does.
    fn shard_json(adapter: &mut dyn crate::conformance::Adapter, k: u64, n: u64) -> Value {
        shard_of(adapter, &["RETRY", "PLAN"], None, k, n)
    }

    /// Shard k of n of the cases of these `--clause` filters and `--case` text.
    fn shard_of(
        adapter: &mut dyn crate::conformance::Adapter,
        clauses: &[&str],
        case: Option<&str>,
        k: u64,
        n: u64,
    ) -> Value {
        let suite = Suite::load_default().expect("cases");
        let shard = Shard::parse(&format!("{k}/{n}")).expect("shard");
        let clauses: Vec<String> = clauses.iter().map(|c| (*c).to_owned()).collect();
        let sel = Selection::new(&clauses, case)
            .expect("selection")
            .with_shard(shard);
        let mut r = run_suite(adapter, &suite, &sel, false, &mut |_, _, _| {});
        r.add_generated(run_generated_shard(adapter, 12, 40, Some(shard)));
        r.shard = Some(shard.to_string());
        r.to_json()
    }

    fn unsharded(adapter: &mut dyn crate::conformance::Adapter) -> SuiteReport {
        let suite = Suite::load_default().expect("cases");
        let sel = Selection::new(&["RETRY".into(), "PLAN".into()], None).expect("selection");
        let mut r = run_suite(adapter, &suite, &sel, false, &mut |_, _, _| {});
        r.add_generated(crate::conformance::generate::run_generated(adapter, 12, 40));
        r
    }

    /// The text a report prints, without its timing line.
    fn table(r: &SuiteReport) -> Vec<String> {
        r.to_text()
            .lines()
            .filter(|l| !l.contains(" cases/s"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn three_shards_merge_into_the_unsharded_report() {
        let parts: Vec<(String, Value)> = (1..=3)
            .map(|k| (format!("s{k}.json"), shard_json(&mut Reference, k, 3)))
            .collect();
        let merged = merge(&parts).expect("merges");
        let whole = unsharded(&mut Reference);
        assert_eq!(table(&merged), table(&whole));
        assert_eq!(merged.to_json()["totals"], whole.to_json()["totals"]);
        assert_eq!(merged.generated_count(), 12);
        assert!(merged.to_junit().matches("<testcase").count() >= whole.cases.len() + 12);

        // A failing candidate: its failures survive the merge, case by case.
        let mut wrong = FnAdapter::new("wrong", |_: &Value| serde_json::json!({"ok": "wrong"}));
        let parts: Vec<(String, Value)> = (1..=2)
            .map(|k| (format!("w{k}.json"), shard_json(&mut wrong, k, 2)))
            .collect();
        let merged = merge(&parts).expect("merges");
        let whole = unsharded(&mut wrong);
        assert!(merged.failed() > 0);
        assert_eq!(merged.failed(), whole.failed());
        assert_eq!(merged.generated_failed(), whole.generated_failed());
        assert_eq!(table(&merged), table(&whole));
    }

    #[test]
    fn a_partial_or_mixed_campaign_is_refused() {
        let s1 = shard_json(&mut Reference, 1, 3);
        let s2 = shard_json(&mut Reference, 2, 3);
        let missing = merge(&[("a".into(), s1.clone()), ("b".into(), s2.clone())])
            .expect_err("shard 3 is missing");
        assert_eq!(missing.code(), "not_one_campaign");
        assert!(missing.to_string().contains("3/3"), "{missing}");
        let twice = merge(&[("a".into(), s1.clone()), ("b".into(), s1.clone())])
            .expect_err("shard 1 twice");
        assert!(twice.to_string().contains("both a and b"), "{twice}");
        let other_n = shard_json(&mut Reference, 2, 2);
        assert!(merge(&[("a".into(), s1.clone()), ("b".into(), other_n)]).is_err());
        let not =
            merge(&[("x.json".into(), serde_json::json!({"cases": 3}))]).expect_err("not a report");
        assert_eq!(not.code(), "not_a_report");
        assert!(not.to_string().starts_with("x.json: "), "{not}");
        let mut unsharded = s1;
        unsharded["shard"] = Value::Null;
        assert!(merge(&[("u".into(), unsharded)]).is_err());
    }

    /// Merge two shards of 2, returning the error text.
    fn refused(s1: Value, s2: Value) -> String {
        let e = merge(&[("a.json".into(), s1), ("b.json".into(), s2)]).expect_err("refused");
        assert_eq!(e.code(), "not_one_campaign", "{e}");
        e.to_string()
    }

    #[test]
    fn shards_of_different_selections_or_with_moved_or_lost_cases_are_refused() {
        // D-203. Different --clause filters: each shard is a real shard of its own selection.
        let e = refused(
            shard_of(&mut Reference, &["RETRY"], None, 1, 2),
            shard_of(&mut Reference, &["PLAN"], None, 2, 2),
        );
        assert!(e.contains("b.json selected --clause PLAN"), "{e}");
        assert!(e.contains("a.json --clause RETRY"), "{e}");
        // The same filters but a --case text in one.
        let e = refused(
            shard_of(&mut Reference, &["RETRY"], None, 1, 2),
            shard_of(&mut Reference, &["RETRY"], Some("retry"), 2, 2),
        );
        assert!(e.contains("--case \"retry\""), "{e}");

        let (s1, s2) = (
            shard_json(&mut Reference, 1, 2),
            shard_json(&mut Reference, 2, 2),
        );
        assert!(merge(&[("a".into(), s1.clone()), ("b".into(), s2.clone())]).is_ok());
        // A case moved from shard 2's report to shard 1's: the totals would not change.
        let (mut a, mut b) = (s1.clone(), s2.clone());
        let moved = b["cases"].as_array_mut().expect("cases").remove(0);
        let id = moved["id"].as_str().expect("id").to_owned();
        a["cases"].as_array_mut().expect("cases").push(moved);
        let e = refused(a, b);
        assert!(
            e.contains(&format!("a.json: case {id:?} does not belong to shard 1/2")),
            "{e}"
        );
        // A case lost from a shard (say, a runner that filtered its cases).
        let mut b = s2.clone();
        b["cases"].as_array_mut().expect("cases").pop();
        let e = refused(s1.clone(), b);
        assert!(e.contains("a shard lost or gained cases"), "{e}");
        // A shard whose selection claims fewer cases than the others.
        let mut b = s2.clone();
        b["selection"]["cases"] = serde_json::json!(3);
        assert!(refused(s1.clone(), b).contains("b.json selected"));
        // A report that does not say what it selected.
        let mut b = s2.clone();
        b["selection"] = Value::Null;
        assert!(refused(s1.clone(), b).contains("does not say what it selected"));
        let mut b = s2.clone();
        b["selection"]["digest"] = serde_json::json!("zz");
        let e = merge(&[("a".into(), s1.clone()), ("b".into(), b)]).expect_err("bad digest");
        assert_eq!(e.code(), "not_a_report");
        // Generated workflows: a failure or a count that is not this shard's.
        let mut b = s2.clone();
        b["generated"]["count"] = serde_json::json!(12);
        assert!(refused(s1.clone(), b).contains("should run 6, the report says 12"));
        let mut b = s2.clone();
        b["generated"]["failures"] = serde_json::json!([{"seed": 40, "property": "model",
            "message": "m", "replay": false}]);
        let e = refused(s1.clone(), b);
        assert!(
            e.contains("generated seed 40 does not belong to shard 2/2"),
            "{e}"
        );
    }
}
