//! The report of a suite run as JUnit XML (`--format junit`).

use std::fmt::Write as _;

use super::{CaseResult, SuiteReport};
use crate::conformance::diff;
use crate::conformance::generate::GeneratedReport;

impl SuiteReport {
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
            write_file_suite(&mut out, file, &group);
        }
        if let Some(g) = &self.generated {
            self.write_generated_junit(&mut out, g);
        }
        out.push_str("</testsuites>\n");
        out
    }

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
                    xml_escape(crate::conformance::SELF_REPORTED)
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

/// One case file's `<testsuite>`: a `<testcase>` per case.
fn write_file_suite(out: &mut String, file: &str, group: &[&CaseResult]) {
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
        write_case(out, c);
    }
    out.push_str("  </testsuite>\n");
}

/// One case's `<testcase>`: its clauses as properties, then skipped or failure.
fn write_case(out: &mut String, c: &CaseResult) {
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

/// Escape text for an XML 1.0 attribute or element. Characters XML 1.0 cannot carry at
/// all (most C0 controls) become `\u{…}` text rather than an ill-formed document.
pub(crate) fn xml_escape(s: &str) -> String {
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
