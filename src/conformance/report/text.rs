//! The human report of a suite run (`w6w-sim conformance`'s default output), and the
//! failures section a host crate's `#[test]` panics with.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::SuiteReport;
use crate::conformance::generate::GeneratedReport;
use crate::conformance::{SELF_REPORTED, capability, diff};

impl SuiteReport {
    /// The human report: per-clause table, failures, timing, and the closing line
    /// `N passed, M failed`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "w6w conformance suite against {}", self.implementation);
        let _ = writeln!(out);
        self.write_clause_table(&mut out);
        if self.failed() > 0 {
            let _ = writeln!(out, "\nFailures:");
            self.write_failures(&mut out);
        }
        if self.not_applicable() > 0 {
            self.write_not_applicable(&mut out);
        }
        if let Some(g) = &self.generated {
            self.write_generated_summary(&mut out, g);
        } else if let Some(note) = &self.generated_note {
            let _ = writeln!(out, "\n{note}");
        }
        self.write_totals(&mut out);
        out
    }

    /// The per-clause table and the line counting clauses with and without cases.
    fn write_clause_table(&self, out: &mut String) {
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
    }

    /// Why cases did not run: not judged at this seam, or a capability outside the profile.
    fn write_not_applicable(&self, out: &mut String) {
        let mut missing: BTreeMap<&str, usize> = BTreeMap::new();
        let (mut unjudged, mut seam) = (0, "");
        for c in &self.cases {
            if let Some(s) = c.missing.iter().find(|m| capability::is_seam(m)) {
                unjudged += 1;
                seam = s;
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
                capability::seam_means(seam)
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

    /// The generated batch: seeds, counts, and each failure.
    fn write_generated_summary(&self, out: &mut String, g: &GeneratedReport) {
        let na = match g.not_applicable {
            0 => String::new(),
            n if g.missing.is_empty() => format!(", {n} not applicable"),
            n => format!(
                ", {n} not applicable (they need {}, outside the profile)",
                g.missing.join(", ")
            ),
        };
        // D-382: seeds whose runs are outside the profile, judged on the pure ops.
        let na = match (g.pure_only, na.is_empty()) {
            (0, _) => na,
            (n, true) => format!(
                "{na}; {n} judged on the pure ops only (their runs need {}, outside the profile)",
                g.missing.join(", ")
            ),
            (n, false) => format!("{na}; {n} judged on the pure ops only"),
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
            let _ = writeln!(out, "  {} not run: {}", g.self_reported, SELF_REPORTED);
        }
        self.write_generated_failures(out, false);
    }

    /// Timing, then the closing line `N passed, M failed`; before them, a run that judged
    /// nothing says so (D-376).
    fn write_totals(&self, out: &mut String) {
        if self.judged_nothing() {
            let _ = writeln!(
                out,
                "\nNothing was judged: every selected case and generated workflow was outside the profile ({}) or not judged at this seam, so this run says nothing about {} and is not a pass.",
                self.profile_names(),
                self.implementation
            );
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
    pub(super) fn write_generated_failures(&self, out: &mut String, inline: bool) {
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

    pub(super) fn write_failures(&self, out: &mut String) {
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
}
