//! Dialect front-ends (issue 10): WOML (`woml-steps.txt`, XML steps and scripts) and the
//! YAML step/action dialect (`yaml-steps.txt`), each validated with exact positions and
//! imported into a w6w workflow (manifestVersion "2") that the one engine runs.
//!
//! Owns: decoding (UTF-8, size), the shared problem type (`{status, code, clause, path,
//! line, column, message}` — the w6w validation shape plus a position and the clause),
//! dialect detection, the manifest of action input schemas (YML-3) and the dialect run
//! (`run.rs`: scenario checks for WOML script failures, the WOML-13 result and WOML-15
//! attempt bindings in the report).
//! Invariant: a front-end never executes a script, `run` or `agent` body — it is carried
//! (the simulated host runs script and JavaScript `run` bodies, `sim/scripts.rs`, unless
//! the scenario scripts the step's outcome by id like any action); `validate` judges a document
//! against its text ([`Check::Document`]), and a construct whose runtime meaning the texts
//! do not define is refused with `unsupported_construct` only when it is to run
//! ([`Check::Runnable`], `import`, `run`; D-237), never dropped.
//! No input makes a front-end panic or recurse without bound.
//! Does not know: how anything runs (that is the engine's, through the imported workflow).

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

mod lines;
mod manifest;
mod run;
mod script;
pub(crate) mod woml;
pub(crate) mod yaml;
mod yaml_tree;

pub use manifest::Manifest;
#[cfg(feature = "cli")]
pub(crate) use run::source_identity;
pub(crate) use run::{decorate_report, prepare_scenario};
pub use run::{run, script_failure_kinds, split_manifest};

/// The most problems one document reports (D-221).
pub(crate) use crate::limits::DIALECT_PROBLEMS_MAX;
/// The deepest nesting a YAML document may have (the same bound as w6w JSON documents).
pub(crate) use crate::limits::MAX_NESTING_DEPTH as DEPTH_MAX;
/// The most nodes a document may hold, alias expansion included (SEC-2).
pub(crate) use crate::limits::NODES_MAX;
/// The largest source document a front-end reads (SEC-2): 8 MiB.
pub(crate) use crate::limits::SOURCE_BYTES_MAX;

/// Which language a workflow document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// A w6w workflow (JSON).
    W6w,
    /// WOML: XML `<workflow><steps><step><script>`.
    Woml,
    /// The YAML step/action dialect.
    Yaml,
}

impl Dialect {
    /// `w6w`, `woml` or `yaml` (also `xml`, `yml`, `json`).
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name.to_ascii_lowercase().as_str() {
            "w6w" | "json" => Some(Dialect::W6w),
            "woml" | "xml" => Some(Dialect::Woml),
            "yaml" | "yml" => Some(Dialect::Yaml),
            _ => None,
        }
    }

    /// By file extension: `.xml`/`.woml` → WOML, `.yaml`/`.yml` → YAML, anything else w6w.
    pub fn from_path(path: &Path) -> Dialect {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("xml" | "woml") => Dialect::Woml,
            Some("yaml" | "yml") => Dialect::Yaml,
            _ => Dialect::W6w,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::W6w => "w6w",
            Dialect::Woml => "woml",
            Dialect::Yaml => "yaml",
        }
    }
}

/// One problem with a dialect document: the w6w validation shape (`status`, `code`, `path`,
/// `message`) plus where (`line`, `column`, both 1-based) and the clause it enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub status: u16,
    pub code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clause: Option<&'static str>,
    /// WOML: an XPath-like path (`/workflow/steps/step[2]/@retry`); YAML: a JSON Pointer.
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Problem {
    pub(crate) fn new(
        code: &'static str,
        clause: Option<&'static str>,
        path: impl Into<String>,
        pos: Pos,
        message: impl Into<String>,
    ) -> Self {
        Problem {
            status: 400,
            code,
            clause,
            path: path.into(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    /// The wire shape (never fails).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "status": self.status, "code": self.code, "path": self.path,
            "line": self.line, "column": self.column, "message": self.message,
        });
        if let (Some(clause), Value::Object(m)) = (self.clause, &mut v) {
            m.insert("clause".into(), json!(clause));
        }
        v
    }

    /// `line:column: message (code)` for terminals.
    pub fn display(&self) -> String {
        let at = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        format!(
            "{}:{}: {at}: {} ({})",
            self.line, self.column, self.message, self.code
        )
    }
}

/// Something the move to w6w changes or does not check, said out loud (never an error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Note {
    pub(crate) fn new(path: impl Into<String>, pos: Pos, message: impl Into<String>) -> Self {
        Note {
            path: path.into(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"path": self.path, "line": self.line, "column": self.column, "message": self.message})
    }
}

/// The code of the problem that says a document's further problems were left out.
pub(crate) const TOO_MANY_PROBLEMS: &str = "too_many_problems";

/// Add a problem to a front-end's list, keeping at most [`DIALECT_PROBLEMS_MAX`] (D-221):
/// the first one past it becomes a [`TOO_MANY_PROBLEMS`] problem at its position, and
/// later ones are dropped. Each problem repeats its path, and a path can be long, so an
/// uncapped list grew with problems × path: 2 MB of YAML gave 805 MB of problems.
pub(crate) fn push_problem(problems: &mut Vec<Problem>, problem: Problem) {
    match problems.len().cmp(&DIALECT_PROBLEMS_MAX) {
        std::cmp::Ordering::Less => problems.push(problem),
        std::cmp::Ordering::Equal => {
            let at = Pos {
                line: problem.line,
                column: problem.column,
            };
            problems.push(Problem::new(
                TOO_MANY_PROBLEMS,
                Some("SEC-2"),
                "",
                at,
                format!(
                    "more than {DIALECT_PROBLEMS_MAX} problems: the first {DIALECT_PROBLEMS_MAX} \
                     found are reported; fix them and check again"
                ),
            ));
        }
        std::cmp::Ordering::Greater => {}
    }
}

/// Whether a front-end's list is full (later problems would be dropped).
pub(crate) fn problems_full(problems: &[Problem]) -> bool {
    problems.len() > DIALECT_PROBLEMS_MAX
}

/// A 1-based source position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    pub(crate) const START: Pos = Pos { line: 1, column: 1 };
}

/// The position of byte `offset` in `text` (column counted in characters).
pub(crate) fn pos_at(text: &str, offset: usize) -> Pos {
    let offset = offset.min(text.len());
    let mut cut = offset;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let before = &text[..cut];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos {
        line,
        column: before[line_start..].chars().count() + 1,
    }
}

/// What the kind of an imported step is (decides how its scripted outcomes are read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A WOML `<script>` step: failures are WOML failure kinds (WOML-11).
    Script,
    /// A YAML `connector.action` call.
    Action,
    /// A YAML `run` body (carried, outcome scripted).
    Run,
    /// A YAML `agent` body (carried, outcome scripted).
    Agent,
    /// A synthetic step the YAML import adds: the `@w6w/control` `if` guarding a step's
    /// `when` (YML-13), a guarded `stop`'s `unless__` twin, a `parallel`'s `fork__` and a
    /// `for_each` body's `scope__` (D-232..D-236).
    Guard,
    /// A YAML `value` or `render` body (a `@w6w/control` `merge`, D-232).
    Value,
    /// A YAML `wait` (a `@w6w/control` `wait`, D-233).
    Wait,
    /// A YAML `stop` (an unmatched `@w6w/control` `if`, D-234).
    Stop,
    /// A YAML `for_each` (a `@w6w/control` `foreach`, D-235).
    ForEach,
    /// A YAML `parallel`: the join step of its strands (D-236).
    Parallel,
}

/// Where, in a step's w6w output, the value a YAML step binds (YML-5) is found, for the
/// report's `bindings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binds {
    /// Not reported: a synthetic step, `wait`/`stop` (nothing readable, YML-6), a step
    /// inside a construct's body (its construct binds it), or a WOML step.
    Nothing,
    /// The output itself (action call, run, agent).
    Output,
    /// `output.result.value` (value, render).
    ResultValue,
    /// `output.result` (parallel: the branch scopes by name).
    Result,
    /// `output.items[*].result` (for_each: the iteration scopes by position).
    IterationScopes,
}

/// One step of the imported workflow, as the dialect named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepInfo {
    pub id: String,
    pub kind: StepKind,
    /// The compiled total-attempt limit (WOML-15 `attempt.maxAttempts`).
    pub max_attempts: u64,
    pub line: usize,
    /// What the report's `bindings` shows for it (YAML, YML-5).
    pub binds: Binds,
}

/// A dialect document imported into w6w.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub dialect: Dialect,
    /// The equivalent w6w workflow (manifestVersion "2"); valid and runnable.
    pub workflow: Value,
    pub notes: Vec<Note>,
    pub steps: Vec<StepInfo>,
}

impl Imported {
    /// `{dialect, workflow, notes}`.
    pub fn to_json(&self) -> Value {
        json!({
            "dialect": self.dialect,
            "workflow": self.workflow,
            "notes": self.notes.iter().map(Note::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Decode a source document: size bound, UTF-8 (a bad byte is reported at its position),
/// a leading byte-order mark dropped.
pub(crate) fn decode(bytes: &[u8]) -> Result<&str, Problem> {
    if bytes.len() > SOURCE_BYTES_MAX {
        return Err(Problem::new(
            "limit_exceeded",
            Some("SEC-2"),
            "",
            Pos::START,
            format!(
                "the document is {} bytes; the limit is {SOURCE_BYTES_MAX}",
                bytes.len()
            ),
        ));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        // The prefix is valid UTF-8 by construction.
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        Problem::new(
            "invalid_utf8",
            Some("SEC-2"),
            "",
            pos_at(prefix, valid),
            format!(
                "the document is not UTF-8: invalid byte 0x{:02X} at byte {valid}",
                bytes[valid]
            ),
        )
    })
}

/// Import a dialect document. `manifest` supplies action input schemas (YML-3).
pub fn import(
    dialect: Dialect,
    bytes: &[u8],
    manifest: Option<&Manifest>,
) -> Result<Imported, Vec<Problem>> {
    let text = decode(bytes).map_err(|p| vec![p])?;
    let in_order = in_document_order;
    let imported = match dialect {
        Dialect::Woml => woml::import(text).map_err(in_order)?,
        Dialect::Yaml => yaml::import(text, manifest).map_err(in_order)?,
        Dialect::W6w => {
            return Err(vec![Problem::new(
                "bad_dialect",
                None,
                "",
                Pos::START,
                "a w6w document is already w6w: nothing to import",
            )]);
        }
    };
    // Belt and braces: the front-end builds a valid workflow by construction; if it ever
    // does not, say so instead of handing the engine something the validator refuses.
    let not_importable = |path: String, message: String| {
        Problem::new(
            "not_importable",
            None,
            path,
            Pos::START,
            format!("the imported workflow cannot run on w6w: {message}"),
        )
    };
    let workflow = crate::validate::validate_workflow(
        &imported.workflow,
        crate::validate::ValidateOptions { runnable: true },
    )
    .map_err(|errors| {
        errors
            .iter()
            .map(|e| not_importable(e.path.clone(), e.message.clone()))
            .collect::<Vec<_>>()
    })?;
    if let Err(e) = crate::engine::Engine::new(&workflow) {
        return Err(vec![not_importable(String::new(), e.to_string())]);
    }
    Ok(imported)
}

/// What `validate` judges (D-237).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The document against its text: every rule of the dialect, every construct the
    /// text names accepted (`validate`).
    Document,
    /// Also whether w6w-sim can run it: a construct or form whose runtime meaning the
    /// text does not give is `unsupported_construct` (`validate --runnable`, `import`,
    /// `run`).
    Runnable,
}

/// Validate a dialect document: `Ok(notes)` when valid, every problem otherwise.
/// [`Check::Runnable`] is exactly [`import`]'s judgement.
pub(crate) fn validate(
    dialect: Dialect,
    bytes: &[u8],
    manifest: Option<&Manifest>,
    check: Check,
) -> Result<Vec<Note>, Vec<Problem>> {
    if check == Check::Runnable {
        return import(dialect, bytes, manifest).map(|i| i.notes);
    }
    let text = decode(bytes).map_err(|p| vec![p])?;
    match dialect {
        Dialect::Woml => woml::validate(text),
        Dialect::Yaml => yaml::validate(text, manifest),
        Dialect::W6w => Err(vec![Problem::new(
            "bad_dialect",
            None,
            "",
            Pos::START,
            "a w6w document is validated by the w6w validator",
        )]),
    }
    .map_err(in_document_order)
}

/// Problems in document order (stable: same position keeps the front-end's order); the
/// note that some were left out (D-221) last.
fn in_document_order(mut problems: Vec<Problem>) -> Vec<Problem> {
    problems.sort_by_key(|p| (p.code == TOO_MANY_PROBLEMS, p.line, p.column));
    problems
}

/// Parse a duration literal `<integer><unit>` with unit `ms`, `s`, `m` or `h`, in ms.
pub(crate) fn parse_duration_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() || digits.len() > 12 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// The 24h upper bound of WOML durations (WOML-7, WOML-8).
pub(crate) const DURATION_MS_MAX: u64 = 24 * 3_600_000;

/// Work a front-end does where its cost could outgrow its input (issue 44 item 3): bytes a
/// position lookup or a pre-scan reads, probes of a duplicate check. Test builds only, per
/// thread: a test imports a document and ten times that document and bounds the growth.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local! {
        static UNITS: Cell<u64> = const { Cell::new(0) };
    }

    /// Count `n` units of work.
    pub(crate) fn add(n: usize) {
        UNITS.with(|u| u.set(u.get().saturating_add(n as u64)));
    }

    /// The units counted on this thread since the last call (and start again from zero).
    pub(crate) fn take() -> u64 {
        UNITS.with(|u| u.replace(0))
    }

    /// The work `f` does, counted.
    pub(crate) fn of<T>(f: impl FnOnce() -> T) -> (T, u64) {
        take();
        let out = f();
        (out, take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let t = "ab\ncé\n";
        assert_eq!(pos_at(t, 0), Pos { line: 1, column: 1 });
        assert_eq!(pos_at(t, 3), Pos { line: 2, column: 1 });
        assert_eq!(pos_at(t, 6), Pos { line: 2, column: 3 });
        assert_eq!(pos_at(t, 99), Pos { line: 3, column: 1 });
    }

    #[test]
    fn invalid_utf8_is_reported_at_its_byte() {
        let e = decode(b"<a>\n  x\xFFy</a>").expect_err("not UTF-8");
        assert_eq!(e.code, "invalid_utf8");
        assert_eq!((e.line, e.column), (2, 4));
        assert!(decode(b"\xEF\xBB\xBFok").is_ok_and(|t| t == "ok"));
    }

    #[test]
    fn huge_documents_are_refused_before_parsing() {
        let big = vec![b' '; SOURCE_BYTES_MAX + 1];
        for d in [Dialect::Woml, Dialect::Yaml] {
            let e = import(d, &big, None).expect_err("too big");
            assert_eq!(e[0].code, "limit_exceeded");
        }
        // Many small nodes under the byte limit hit the node budget, not memory.
        let many = format!("steps: [{}]", "1,".repeat(NODES_MAX + 1));
        let e = import(Dialect::Yaml, many.as_bytes(), None).expect_err("too many nodes");
        assert_eq!(e[0].code, "limit_exceeded");
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration_ms("1ms"), Some(1));
        assert_eq!(parse_duration_ms("2s"), Some(2000));
        assert_eq!(parse_duration_ms("3m"), Some(180_000));
        assert_eq!(parse_duration_ms("24h"), Some(DURATION_MS_MAX));
        for bad in ["", "1", "ms", "1.5s", "-1s", "1d", "1 s", "99999999999999s"] {
            assert_eq!(parse_duration_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn dialects_by_extension_and_name() {
        assert_eq!(Dialect::from_path(Path::new("a/b.XML")), Dialect::Woml);
        assert_eq!(Dialect::from_path(Path::new("b.woml")), Dialect::Woml);
        assert_eq!(Dialect::from_path(Path::new("b.yml")), Dialect::Yaml);
        assert_eq!(Dialect::from_path(Path::new("b.json")), Dialect::W6w);
        assert_eq!(Dialect::from_name("YAML"), Some(Dialect::Yaml));
        assert_eq!(Dialect::from_name("toml"), None);
    }
}
