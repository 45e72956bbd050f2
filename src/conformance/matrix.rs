//! The results matrix: several candidates, one suite, one per-clause × implementation
//! table (Markdown and JSON), in the spirit of Bowtie's report.
//!
//! Owns: [`CandidateSpec`] (how a candidate is named on the command line, `NAME=KIND[:ARG]`)
//! and [`Matrix`] (the reports side by side, rendered). A new kind of candidate plugs in as
//! one [`CandidateKind`] variant, one arm in [`CandidateKind::parse`] and one in
//! `cli/matrix.rs`'s `open`, the one place above both the suite and the process seams
//! (`context_protocol`), which sit above this module (ARCHITECTURE.md#layers). Every cell counts passed, failed and not applicable (outside
//! that candidate's capability profile) separately; not applicable is never a pass.

use std::fmt::Write as _;

use serde_json::{Value, json};

#[cfg(w6w_mutants)]
use super::mutants::AnyMutant;
use super::{Capabilities, SuiteReport};

/// What kind of implementation a candidate is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CandidateKind {
    /// `reference`: the built-in reference, in process.
    Reference,
    /// `reference-engine`: this crate's engine through the Rust engine seam.
    ReferenceEngine,
    /// `adapter:CMD`: a process speaking the adapter protocol.
    Adapter(String),
    /// `mutant:NAME`: a built-in deliberately broken engine or host (mutant build only).
    #[cfg(w6w_mutants)]
    Mutant(String),
    /// `engine:CMD`: an engine process behind the context protocol (docs/context-protocol.md).
    Engine(String),
    /// `host:CMD`: a host process behind the context protocol, under our engine.
    Host(String),
}

impl CandidateKind {
    /// Parse `KIND[:ARG]`.
    pub(crate) fn parse(spec: &str) -> Result<Self, String> {
        let (kind, arg) = match spec.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (spec, None),
        };
        match (kind, arg) {
            ("reference", None) => Ok(CandidateKind::Reference),
            ("reference-engine", None) => Ok(CandidateKind::ReferenceEngine),
            ("adapter", Some(cmd)) if !cmd.trim().is_empty() => {
                Ok(CandidateKind::Adapter(cmd.to_owned()))
            }
            #[cfg(w6w_mutants)]
            ("mutant", Some(name)) if AnyMutant::by_name(name).is_some() => {
                Ok(CandidateKind::Mutant(name.to_owned()))
            }
            #[cfg(w6w_mutants)]
            ("mutant", Some(name)) => Err(format!("no mutant named {name:?}")),
            ("engine", Some(cmd)) if !cmd.trim().is_empty() => {
                Ok(CandidateKind::Engine(cmd.to_owned()))
            }
            ("host", Some(cmd)) if !cmd.trim().is_empty() => {
                Ok(CandidateKind::Host(cmd.to_owned()))
            }
            _ => Err(format!(
                "{spec:?} is not a candidate (reference, reference-engine, adapter:'CMD', engine:'CMD', host:'CMD'{})",
                if cfg!(w6w_mutants) {
                    ", mutant:NAME"
                } else {
                    ""
                }
            )),
        }
    }
}

/// One column of the matrix: `NAME=KIND[:ARG]`, optionally with a declared profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CandidateSpec {
    pub name: String,
    pub kind: CandidateKind,
    /// Overrides whatever the candidate declares itself.
    pub capabilities: Option<Capabilities>,
}

impl CandidateSpec {
    /// Parse `NAME=KIND[:ARG]`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let Some((name, spec)) = text.split_once('=') else {
            return Err(format!("{text:?}: a candidate is NAME=KIND[:ARG]"));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("{text:?}: the candidate needs a name before '='"));
        }
        Ok(CandidateSpec {
            name: name.to_owned(),
            kind: CandidateKind::parse(spec.trim())?,
            capabilities: None,
        })
    }
}

/// Every candidate's report, side by side.
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    /// (column name, that candidate's report), in command-line order.
    pub columns: Vec<(String, SuiteReport)>,
}

/// One cell: a candidate's tally for one clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Cell {
    pub passed: usize,
    pub failed: usize,
    pub not_applicable: usize,
}

impl Cell {
    fn text(self) -> String {
        let mut parts = Vec::new();
        if self.failed > 0 {
            parts.push(format!("✗ {}", self.failed));
        }
        if self.passed > 0 {
            parts.push(format!("✓ {}", self.passed));
        }
        if self.not_applicable > 0 {
            parts.push(format!("n/a {}", self.not_applicable));
        }
        if parts.is_empty() {
            "·".into()
        } else {
            parts.join(" ")
        }
    }
}

impl Matrix {
    /// Clause rows: every clause some candidate's report lists, in catalogue order, with
    /// one cell per column.
    pub(crate) fn rows(&self) -> Vec<(String, String, Vec<Cell>)> {
        let Some((_, first)) = self.columns.first() else {
            return Vec::new();
        };
        first
            .clauses
            .iter()
            .filter(|r| r.in_suite > 0)
            .map(|r| {
                let cells = self
                    .columns
                    .iter()
                    .map(|(_, rep)| {
                        rep.clauses
                            .iter()
                            .find(|c| c.clause == r.clause)
                            .map(|c| Cell {
                                passed: c.passed,
                                failed: c.failed,
                                not_applicable: c.not_applicable,
                            })
                            .unwrap_or_default()
                    })
                    .collect();
                (r.clause.clone(), r.text.clone(), cells)
            })
            .collect()
    }

    /// Each column's totals over cases (not clauses: a case naming two clauses counts once).
    pub(crate) fn totals(&self) -> Vec<Cell> {
        self.columns
            .iter()
            .map(|(_, r)| Cell {
                passed: r.passed(),
                failed: r.failed(),
                not_applicable: r.not_applicable(),
            })
            .collect()
    }

    /// The Markdown table: one row per clause, one column per candidate.
    pub(crate) fn to_markdown(&self) -> String {
        let mut out = String::from("# w6w conformance matrix\n\n");
        out.push_str(
            "Each cell counts the clause's cases: ✓ passed, ✗ failed, n/a outside the \
             candidate's capability profile (never counted as passed), · no case selected.\n\n",
        );
        for (name, r) in &self.columns {
            let _ = writeln!(
                out,
                "- **{}**: {} (capabilities: `{}`)",
                md_escape(name),
                md_escape(&r.implementation),
                r.capabilities
            );
        }
        out.push_str("\n| clause |");
        for (name, _) in &self.columns {
            let _ = write!(out, " {} |", md_escape(name));
        }
        out.push_str("\n|---|");
        for _ in &self.columns {
            out.push_str("---|");
        }
        out.push('\n');
        for (clause, text, cells) in self.rows() {
            let _ = write!(out, "| {clause} <sub>{}</sub> |", md_escape(&text));
            for c in cells {
                let _ = write!(out, " {} |", c.text());
            }
            out.push('\n');
        }
        out.push_str("| **cases** |");
        for t in self.totals() {
            let _ = write!(
                out,
                " **{} passed, {} failed, {} n/a** |",
                t.passed, t.failed, t.not_applicable
            );
        }
        out.push('\n');
        out
    }

    /// The same as JSON: candidates with their totals, and clause rows keyed by name.
    pub(crate) fn to_json(&self) -> Value {
        let candidates: Vec<Value> = self
            .columns
            .iter()
            .zip(self.totals())
            .map(|((name, r), t)| {
                json!({"name": name, "implementation": r.implementation,
                       "capabilities": r.capabilities,
                       "totals": {"cases": r.cases.len(), "passed": t.passed,
                                  "failed": t.failed, "notApplicable": t.not_applicable}})
            })
            .collect();
        let clauses: Vec<Value> = self
            .rows()
            .into_iter()
            .map(|(clause, text, cells)| {
                let results: serde_json::Map<String, Value> = self
                    .columns
                    .iter()
                    .zip(cells)
                    .map(|((name, _), c)| {
                        (
                            name.clone(),
                            json!({"passed": c.passed, "failed": c.failed,
                                   "notApplicable": c.not_applicable}),
                        )
                    })
                    .collect();
                json!({"clause": clause, "text": text, "results": results})
            })
            .collect();
        json!({"candidates": candidates, "clauses": clauses})
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{Adapter, Reference, Selection, Suite, WithCapabilities, run_suite};

    #[test]
    fn specs_parse_and_refuse() {
        let s = CandidateSpec::parse("mine=adapter:./x --y").expect("valid");
        assert_eq!(s.kind, CandidateKind::Adapter("./x --y".into()));
        let e = CandidateSpec::parse("js=engine:node shim.js").expect("valid");
        assert_eq!(e.kind, CandidateKind::Engine("node shim.js".into()));
        assert!(CandidateSpec::parse("ref=reference").is_ok());
        for bad in [
            "reference",
            "=reference",
            "x=warp",
            "x=adapter:",
            "x=mutant:nope",
        ] {
            assert!(CandidateSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cells_count_each_state_per_candidate() {
        let suite = Suite::load_default().expect("loads");
        let selection = Selection::new(&["RETRY".into(), "PLAN-1".into()], None).expect("ok");
        let mut columns = Vec::new();
        for (name, profile) in [("ref", None), ("core", Some(Capabilities::engine_core()))] {
            let mut a: Box<dyn Adapter> = match profile {
                Some(p) => Box::new(WithCapabilities::new(Reference, p)),
                None => Box::new(Reference),
            };
            columns.push((
                name.to_owned(),
                run_suite(a.as_mut(), &suite, &selection, false, &mut |_, _, _| {}),
            ));
        }
        // A broken candidate at the seam: it answers every request with an error.
        let mut broken = crate::conformance::FnAdapter::new(
            "broken",
            |_: &serde_json::Value| json!({"error": {"code": "broken", "message": "this candidate answers nothing"}}),
        );
        columns.push((
            "m".to_owned(),
            run_suite(&mut broken, &suite, &selection, false, &mut |_, _, _| {}),
        ));
        let m = Matrix { columns };
        let rows = m.rows();
        let row = |id: &str| rows.iter().find(|r| r.0 == id).expect(id).2.clone();
        let plan = row("PLAN-1");
        assert!(plan[0].passed > 0 && plan[0].failed == 0);
        assert_eq!(plan[1].passed, 0, "validate is outside the core profile");
        assert_eq!(plan[1].not_applicable, plan[0].passed);
        assert!(
            row("RETRY-1")[2].failed > 0,
            "the broken candidate fails RETRY-1"
        );
        let md = m.to_markdown();
        assert!(md.contains("| clause | ref | core | m |"), "{md}");
        let cell = |p, f, n| {
            Cell {
                passed: p,
                failed: f,
                not_applicable: n,
            }
            .text()
        };
        assert_eq!(cell(8, 0, 1), "✓ 8 n/a 1");
        assert_eq!(cell(0, 2, 0), "✗ 2");
        assert_eq!(cell(0, 0, 0), "·");
        let json = m.to_json();
        assert_eq!(
            json["clauses"][0]["results"]["ref"]["passed"],
            json!(plan[0].passed)
        );
        assert_eq!(
            json["candidates"][1]["capabilities"],
            json!(["op.replay", "op.run"])
        );
    }
}
