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
use super::report::{CaseResult, ClauseRow, SuiteReport};
use super::{CaseOutcome, shard::Shard};
use crate::json::DiffEntry;

/// Why shard reports cannot be merged. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// A file is not a suite report written by `--json` (`not_a_report`).
    #[error("{file}: not a w6w-sim conformance --json report: {why}")]
    NotAReport { file: String, why: String },
    /// The reports are not shards of one campaign (`not_one_campaign`).
    #[error("{0}")]
    NotOneCampaign(String),
}

impl MergeError {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
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
    ["model", "crash", "replay", "secrets", "adapter"]
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
        self_reported: usize_of(g, "selfReported").unwrap_or(0),
        elapsed: millis(g, "elapsedMs"),
    })
}

/// A suite report read back from what [`SuiteReport::to_json`] wrote.
pub fn report_from_json(v: &Value) -> Result<SuiteReport, String> {
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
    })
}

/// Join the reports of shards 1..N of one campaign (`(file name, report JSON)` each) into
/// the report one unsharded run would have printed (timing: the sum of the shards').
pub fn merge(parts: &[(String, Value)]) -> Result<SuiteReport, MergeError> {
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
    let campaign = |why: String| MergeError::NotOneCampaign(why);
    // Every shard 1..N exactly once.
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    let mut n_of_all = None;
    for (file, r) in &reports {
        let shard = r.shard.as_deref().ok_or_else(|| {
            campaign(format!("{file}: not a shard (run with --shard K/N --json)"))
        })?;
        let (k, n) = shard
            .split_once('/')
            .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)))
            .ok_or_else(|| campaign(format!("{file}: shard {shard:?} is not K/N")))?;
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
    for (file, r) in &reports {
        if r.implementation != first.implementation || r.capabilities != first.capabilities {
            return Err(campaign(format!(
                "{file} checked {:?} with profile {}, {first_file} {:?} with {}",
                r.implementation, r.capabilities, first.implementation, first.capabilities
            )));
        }
    }
    let mut merged = first.clone();
    merged.shard = None;
    merged.cases.clear();
    merged.generated = None;
    merged.elapsed = Duration::ZERO;
    let mut ids = BTreeSet::new();
    let mut rows: BTreeMap<String, ClauseRow> = BTreeMap::new();
    for (file, r) in &reports {
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
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::generate::run_generated_shard;
    use crate::conformance::{FnAdapter, Reference, Selection, Suite, run_suite};

    /// Run the selection as shard k of n, the way `conformance --shard k/n --json` does.
    fn shard_json(adapter: &mut dyn crate::conformance::Adapter, k: u64, n: u64) -> Value {
        let suite = Suite::load_default().expect("cases");
        let shard = Shard::parse(&format!("{k}/{n}")).expect("shard");
        let sel = Selection::new(&["RETRY".into(), "PLAN".into()], None)
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
}
