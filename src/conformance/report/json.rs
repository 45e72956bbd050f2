//! The report of a suite run as one JSON document (`--format json`), the form
//! `w6w-sim merge` reads back.

use serde_json::{Value, json};

use super::{CaseResult, SelectionSummary, SuiteReport};
use crate::conformance::generate::GeneratedReport;
use crate::json::DiffEntry;

impl SelectionSummary {
    fn to_json(&self) -> Value {
        json!({"clauses": self.clauses, "case": self.case, "cases": self.cases,
               "digest": self.digest})
    }
}

impl SuiteReport {
    /// The same report as one JSON document.
    pub fn to_json(&self) -> Value {
        let cases: Vec<Value> = self.cases.iter().map(case_json).collect();
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
            // The verdict `w6w-sim conformance` exits with, and how much it rests on:
            // cases and generated workflows passed or failed (D-376: none judged, no pass).
            "judged": self.judged(),
            "allPassed": self.all_passed(),
            "generated": self.generated.as_ref().map(generated_json),
            "elapsedMs": self.elapsed.as_secs_f64() * 1000.0,
            "casesPerSecond": self.cases_per_second(),
            "shard": self.shard,
            "selection": self.selection.as_ref().map(SelectionSummary::to_json),
            "candidateArgs": self.candidate_args,
        })
    }
}

/// One case: what it is and how it went; a failure keeps the response and the diff.
fn case_json(c: &CaseResult) -> Value {
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
}

/// The generated batch and each shrunk failure.
fn generated_json(g: &GeneratedReport) -> Value {
    json!({
        "seed": g.seed,
        "count": g.count,
        "span": g.span,
        "shard": g.shard,
        "passed": g.passed(),
        "failed": g.failed(),
        "selfReported": g.self_reported,
        "pureOpsOnly": g.pure_only,
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
    })
}
