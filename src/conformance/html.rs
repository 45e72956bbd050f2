//! The per-clause table as a page (issue 41 item 4; D-295): `conformance --html FILE` and
//! `matrix --html FILE` write one self-contained HTML page — per clause and candidate the
//! cases passed, failed and not applicable, and each failure's messages and the command
//! that runs it again.
//!
//! Owns: the table page's model ([`matrix_model`]). The candidates and clause rows are
//! [`Matrix::to_json`]'s (so [`Matrix::rows`] and [`Matrix::totals`]), the commands
//! [`super::rerun_case`] and [`super::regenerate`], as the text report's: nothing here counts or
//! judges a case again. The page shell is the run page's (`sim::html::page`: data as
//! escaped JSON, drawn with `textContent`, a CSP that lets only its own script run).
//!
//! Invariant: built only from what the text and JSON reports print — case ids,
//! descriptions, clauses, failure messages and commands, never a candidate's response —
//! so it shows nothing the report does not (SEC-1; issue 41 item 5).

use serde_json::{Value, json};

use super::matrix::Matrix;
use super::{SuiteReport, regenerate, rerun_case};
use crate::sim::html::page;

/// The table page's script.
const MATRIX_JS: &str = include_str!("html/matrix.js");

/// How to run one column's candidate again: the command a case id is appended to
/// (`w6w-sim conformance --adapter '…'`, `w6w-sim matrix --candidate 'a=…'`), and the
/// command a generated seed is appended to, where the command line has one.
#[derive(Debug, Clone)]
pub(crate) struct Rerun {
    pub case: String,
    pub seed: Option<String>,
}

impl Rerun {
    /// A `conformance` run's own commands ([`SuiteReport::command`]).
    pub(crate) fn of(report: &SuiteReport) -> Rerun {
        Rerun {
            case: report.command(),
            seed: Some(report.command()),
        }
    }
}

/// The page's model: [`Matrix::to_json`] (candidates with their totals, clause rows with
/// each candidate's counts) plus every failure with its messages and rerun command.
pub(crate) fn matrix_model(title: &str, matrix: &Matrix, reruns: &[Rerun]) -> Value {
    let mut model = matrix.to_json();
    let mut failures = Vec::new();
    let mut generated = Vec::new();
    for (i, (_, r)) in matrix.columns.iter().enumerate() {
        let rerun = reruns.get(i);
        for c in r.cases.iter().filter(|c| c.failed()) {
            failures.push(json!({
                "candidate": i, "id": c.outcome.id, "file": format!("{}.json", c.file),
                "clauses": c.outcome.clauses, "description": c.description,
                "messages": c.outcome.failures, "adapterFailed": c.adapter_failed,
                "rerun": rerun.map(|r| rerun_case(&r.case, &c.outcome.id)),
            }));
        }
        for f in r.generated.iter().flat_map(|g| &g.failures) {
            generated.push(json!({
                "candidate": i, "seed": f.seed, "property": f.violation.property,
                "message": f.violation.message,
                "rerun": rerun.and_then(|r| r.seed.as_ref())
                    .map(|c| regenerate(c, f.seed)),
            }));
        }
    }
    if let Some(m) = model.as_object_mut() {
        m.insert("page".into(), json!("matrix"));
        m.insert("title".into(), json!(title));
        m.insert("failures".into(), Value::Array(failures));
        m.insert("generatedFailures".into(), Value::Array(generated));
    }
    model
}

/// The page of `matrix` (one column per candidate; `reruns` in column order).
pub(crate) fn matrix_page(title: &str, matrix: &Matrix, reruns: &[Rerun]) -> String {
    page(&matrix_model(title, matrix, reruns), MATRIX_JS)
}

/// The page of one `conformance` run: its report as a one-column matrix.
pub(crate) fn suite_page(report: &SuiteReport) -> String {
    let matrix = Matrix {
        columns: vec![(report.implementation.clone(), report.clone())],
    };
    let title = format!("w6w conformance: {}", report.implementation);
    matrix_page(&title, &matrix, &[Rerun::of(report)])
}
