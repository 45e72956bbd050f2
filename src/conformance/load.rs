//! Loading case files from a directory, linting them, and selecting cases.
//!
//! Owns: the rules a case file must satisfy before any case runs (every problem reported
//! with its file and the JSON Pointer of the offending field), and the `--clause` /
//! `--case` selection. Refuses to know how a case is run or checked.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Case, CaseFile, clause_catalogue};
use crate::model::json_kind;

/// The largest case file read, in bytes: a limit, so a stray multi-gigabyte file in the
/// cases directory is an error rather than an out-of-memory abort.
pub(crate) use crate::limits::MAX_CASE_FILE_BYTES;

/// The expectation kinds [`super::check_expectations`] understands.
pub(crate) const EXPECTATION_KINDS: &[&str] = &[
    "response",
    "ok",
    "error",
    "match",
    "includes",
    "absent",
    "contains",
    "count",
    "notContainsText",
];

/// The source tree's case directory, `conformance/cases` of this crate. The suite itself
/// reads the copy embedded in the binary ([`Suite::load_default`]); this path is for tools
/// that want the files on disk.
pub fn default_cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/cases")
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));
}

/// Where the embedded case files appear to live (their `path` in reports and problems).
pub(crate) const EMBEDDED_CASES_DIR: &str = "conformance/cases";

/// Where case files are read from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Disk,
    /// The files embedded at build time (`build.rs`), by path relative to the crate root.
    Embedded,
}

impl Source {
    fn len(self, path: &Path) -> std::io::Result<u64> {
        match self {
            Source::Disk => std::fs::metadata(path).map(|m| m.len()),
            Source::Embedded => Self::embedded(path).map(|t| t.len() as u64),
        }
    }

    fn read(self, path: &Path) -> std::io::Result<String> {
        match self {
            Source::Disk => std::fs::read_to_string(path),
            Source::Embedded => Self::embedded(path).map(str::to_owned),
        }
    }

    fn embedded(path: &Path) -> std::io::Result<&'static str> {
        // Lexical normalisation: `conformance/cases/../../examples/x.json`.
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for c in path.components() {
            match c {
                std::path::Component::Normal(p) => parts.push(p),
                std::path::Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        let key: Vec<String> = parts
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let key = key.join("/");
        embedded::EMBEDDED
            .iter()
            .find(|(p, _)| *p == key)
            .map(|(_, text)| *text)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{key} is not among the files embedded in w6w-sim"),
                )
            })
    }
}

/// One problem that stops the suite from starting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// Stable machine code: `io`, `json_syntax`, `invalid_case_file`, `unknown_clause`,
    /// `duplicate_case_id`, `no_case_files`, `unknown_clause_filter`, `include` (a
    /// request field `{"$file": …}` that cannot be read).
    pub code: &'static str,
    /// The case file at fault, if any.
    pub file: Option<PathBuf>,
    /// JSON Pointer (RFC 6901) into the file, if the problem is inside it.
    pub pointer: Option<String>,
    pub message: String,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        match self.pointer.as_deref() {
            Some("") => write!(f, "at the document root: ")?,
            Some(p) => write!(f, "at {p}: ")?,
            None => {}
        }
        f.write_str(&self.message)
    }
}

/// Every problem found while loading a suite or resolving a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub problems: Vec<LoadProblem>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    fn one(code: &'static str, file: Option<PathBuf>, message: String) -> Self {
        LoadError {
            problems: vec![LoadProblem {
                code,
                file,
                pointer: None,
                message,
            }],
        }
    }
}

/// A loaded case file.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    pub path: PathBuf,
    pub file: CaseFile,
}

impl LoadedFile {
    /// The file's stem (`retry` for `cases/retry.json`): the JUnit class and report label.
    pub fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Every case file of a directory, linted, in file-name order.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    pub files: Vec<LoadedFile>,
}

impl Suite {
    /// Load every `*.json` file of `dir` (not recursive). All problems of all files are
    /// reported together; a suite with any problem does not load.
    pub fn load(dir: &Path) -> Result<Suite, LoadError> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            LoadError::one(
                "io",
                Some(dir.to_path_buf()),
                format!("cannot read the case directory: {e}"),
            )
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        paths.sort();
        Suite::load_paths(Source::Disk, dir, paths)
    }

    /// The suite embedded in this build (`conformance/cases` when it was compiled, with
    /// the examples they include): needs no file at run time, from any directory.
    pub fn load_embedded() -> Result<Suite, LoadError> {
        let prefix = format!("{EMBEDDED_CASES_DIR}/");
        let paths: Vec<PathBuf> = embedded::EMBEDDED
            .iter()
            .filter(|(p, _)| {
                p.strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/'))
            })
            .map(|(p, _)| PathBuf::from(p))
            .collect();
        Suite::load_paths(Source::Embedded, Path::new(EMBEDDED_CASES_DIR), paths)
    }

    fn load_paths(source: Source, dir: &Path, paths: Vec<PathBuf>) -> Result<Suite, LoadError> {
        if paths.is_empty() {
            return Err(LoadError::one(
                "no_case_files",
                Some(dir.to_path_buf()),
                "no case files (*.json) in this directory".to_owned(),
            ));
        }
        let mut problems = Vec::new();
        let mut files = Vec::new();
        for path in paths {
            match read_json(source, &path) {
                Ok(mut value) => {
                    resolve_includes(source, &path, &mut value, &mut problems);
                    if let Some(file) = lint_file(&path, &value, &mut problems) {
                        files.push(LoadedFile { path, file });
                    }
                }
                Err(p) => problems.push(p),
            }
        }
        let suite = Suite { files };
        suite.lint_ids(&mut problems);
        if problems.is_empty() {
            Ok(suite)
        } else {
            Err(LoadError { problems })
        }
    }

    /// The bundled suite: [`Suite::load_embedded`].
    pub fn load_default() -> Result<Suite, LoadError> {
        Suite::load_embedded()
    }

    /// Every case with the file it came from, in file order then case order.
    pub fn cases(&self) -> impl Iterator<Item = (&LoadedFile, &Case)> {
        self.files
            .iter()
            .flat_map(|f| f.file.cases.iter().map(move |c| (f, c)))
    }

    /// Case ids are unique across the whole suite: reports and JUnit key on them.
    fn lint_ids(&self, problems: &mut Vec<LoadProblem>) {
        let mut seen: HashMap<&str, &Path> = HashMap::new();
        for f in &self.files {
            for (i, case) in f.file.cases.iter().enumerate() {
                if let Some(first) = seen.insert(case.id.as_str(), f.path.as_path()) {
                    problems.push(LoadProblem {
                        code: "duplicate_case_id",
                        file: Some(f.path.clone()),
                        pointer: Some(format!("/cases/{i}/id")),
                        message: format!(
                            "case id {:?} is already used in {}",
                            case.id,
                            first.display()
                        ),
                    });
                }
            }
        }
    }
}

/// Replace every top-level request field of the form `{"$file": "relative/path.json"}` with
/// the parsed contents of that file, relative to the case file's folder. Resolved at load
/// time, so an adapter (in process or over the protocol) still receives plain JSON; it lets
/// the bundled `examples/` double as cases without copying them.
fn resolve_includes(
    source: Source,
    path: &Path,
    value: &mut Value,
    problems: &mut Vec<LoadProblem>,
) {
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    let Some(cases) = value.get_mut("cases").and_then(Value::as_array_mut) else {
        return;
    };
    for (i, case) in cases.iter_mut().enumerate() {
        let Some(request) = case.get_mut("request").and_then(Value::as_object_mut) else {
            continue;
        };
        for (field, v) in request.iter_mut() {
            // `{"$text": "path"}` (issue 10): the file's text as a string — a WOML or YAML
            // example's `source`.
            let Some((as_text, target)) = v.as_object().filter(|o| o.len() == 1).and_then(|o| {
                o.get("$file")
                    .map(|t| (false, t))
                    .or_else(|| o.get("$text").map(|t| (true, t)))
            }) else {
                continue;
            };
            let pointer = format!("/cases/{i}/request/{}", escape_token(field));
            let Some(rel) = target.as_str().filter(|r| Path::new(r).is_relative()) else {
                problems.push(LoadProblem {
                    code: "include",
                    file: Some(path.to_path_buf()),
                    pointer: Some(pointer),
                    message: "\"$file\" must be a relative path to a JSON file".to_owned(),
                });
                continue;
            };
            let included = if as_text {
                read_text(source, &base.join(rel)).map(Value::String)
            } else {
                read_json(source, &base.join(rel))
            };
            match included {
                Ok(included) => *v = included,
                Err(e) => problems.push(LoadProblem {
                    code: "include",
                    file: Some(path.to_path_buf()),
                    pointer: Some(pointer),
                    message: format!("cannot include {rel:?}: {}", e.message),
                }),
            }
        }
    }
}

fn read_json(source: Source, path: &Path) -> Result<Value, LoadProblem> {
    let text = read_text(source, path)?;
    // Strict: a duplicate key is refused with its pointer (docs/decisions.md D-47).
    crate::json::parse(&text).map_err(|e| LoadProblem {
        code: if e.duplicate.is_some() {
            "duplicate_key"
        } else {
            "json_syntax"
        },
        file: Some(path.to_path_buf()),
        pointer: e.duplicate.clone(),
        message: match &e.duplicate {
            Some(p) => format!(
                "duplicate key at {p} (line {}, column {})",
                e.line, e.column
            ),
            None => format!("not valid JSON (line {}, column {}): {e}", e.line, e.column),
        },
    })
}

fn read_text(source: Source, path: &Path) -> Result<String, LoadProblem> {
    let problem = |code, message| LoadProblem {
        code,
        file: Some(path.to_path_buf()),
        pointer: None,
        message,
    };
    let len = source
        .len(path)
        .map_err(|e| problem("io", format!("cannot read: {e}")))?;
    if len > MAX_CASE_FILE_BYTES {
        return Err(problem(
            "io",
            format!("{len} bytes is larger than the {MAX_CASE_FILE_BYTES}-byte limit"),
        ));
    }
    source
        .read(path)
        .map_err(|e| problem("io", format!("cannot read: {e}")))
}

/// Collects problems for one file, each with its pointer.
struct Linter<'a> {
    path: &'a Path,
    problems: &'a mut Vec<LoadProblem>,
    before: usize,
}

impl Linter<'_> {
    fn push(&mut self, code: &'static str, pointer: String, message: String) {
        self.problems.push(LoadProblem {
            code,
            file: Some(self.path.to_path_buf()),
            pointer: Some(pointer),
            message,
        });
    }

    fn bad(&mut self, pointer: String, message: impl Into<String>) {
        self.push("invalid_case_file", pointer, message.into());
    }

    fn clean(&self) -> bool {
        self.problems.len() == self.before
    }
}

/// Escape one reference token of a JSON Pointer (RFC 6901).
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Whether `p` is a syntactically valid JSON Pointer (RFC 6901).
pub(crate) fn is_pointer(p: &str) -> bool {
    (p.is_empty() || p.starts_with('/')) && {
        let mut chars = p.chars();
        let mut ok = true;
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                ok = false;
                break;
            }
        }
        ok
    }
}

fn lint_file(path: &Path, value: &Value, problems: &mut Vec<LoadProblem>) -> Option<CaseFile> {
    let before = problems.len();
    let mut l = Linter {
        path,
        problems,
        before,
    };
    let Some(root) = value.as_object() else {
        l.bad(
            String::new(),
            format!(
                "a case file is an object {{\"family\", \"cases\"}}, not {}",
                json_kind(value)
            ),
        );
        return None;
    };
    for key in root.keys() {
        if !matches!(key.as_str(), "family" | "description" | "cases") && !key.starts_with('$') {
            l.bad(
                format!("/{}", escape_token(key)),
                format!(
                    "unknown field {key:?} (a case file has family, description, cases; \
                     annotations start with \"$\")"
                ),
            );
        }
    }
    lint_family_and_description(&mut l, root);
    match root.get("cases") {
        Some(Value::Array(cases)) => {
            let known: Vec<String> = clause_catalogue().into_iter().map(|(id, _)| id).collect();
            for (i, case) in cases.iter().enumerate() {
                lint_case(&mut l, &format!("/cases/{i}"), case, &known);
            }
        }
        Some(v) => l.bad(
            "/cases".into(),
            format!("cases must be an array, not {}", json_kind(v)),
        ),
        None => l.bad(String::new(), "missing field \"cases\""),
    }
    if !l.clean() {
        return None;
    }
    match serde_json::from_value::<CaseFile>(value.clone()) {
        Ok(file) => Some(file),
        Err(e) => {
            // The lint above mirrors CaseFile; reaching this means they drifted apart.
            l.bad(
                String::new(),
                format!("does not match the case format: {e}"),
            );
            None
        }
    }
}

/// A case file's `family` (required) and `description` (optional): strings.
fn lint_family_and_description(l: &mut Linter<'_>, root: &Map<String, Value>) {
    match root.get("family") {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(v) => l.bad(
            "/family".into(),
            format!("family must be a non-empty string, not {}", json_kind(v)),
        ),
        None => l.bad(String::new(), "missing field \"family\" (e.g. \"RETRY\")"),
    }
    if let Some(v) = root.get("description")
        && !v.is_string()
    {
        l.bad(
            "/description".into(),
            format!("description must be a string, not {}", json_kind(v)),
        );
    }
}

fn lint_case(l: &mut Linter<'_>, at: &str, case: &Value, known: &[String]) {
    let Some(obj) = case.as_object() else {
        l.bad(
            at.to_owned(),
            format!("a case is an object, not {}", json_kind(case)),
        );
        return;
    };
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "id" | "clauses" | "description" | "request" | "expect" | "requires"
        ) && !key.starts_with('$')
        {
            l.bad(
                format!("{at}/{}", escape_token(key)),
                format!(
                    "unknown field {key:?} (a case has id, clauses, description, request, \
                     expect, requires; annotations start with \"$\")"
                ),
            );
        }
    }
    match obj.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(v) => l.bad(
            format!("{at}/id"),
            format!("id must be a non-empty string, not {}", json_kind(v)),
        ),
        None => l.bad(at.to_owned(), "missing field \"id\""),
    }
    if let Some(v) = obj.get("description")
        && !v.is_string()
    {
        l.bad(
            format!("{at}/description"),
            format!("description must be a string, not {}", json_kind(v)),
        );
    }
    lint_clauses(l, at, obj.get("clauses"), known);
    lint_requires(l, at, obj.get("requires"));
    if !obj.contains_key("request") {
        l.bad(at.to_owned(), "missing field \"request\"");
    }
    match obj.get("expect") {
        Some(Value::Object(expect)) if expect.is_empty() => l.bad(
            format!("{at}/expect"),
            "a case needs at least one expectation, or it could never fail",
        ),
        Some(Value::Object(expect)) => lint_expect(l, &format!("{at}/expect"), expect),
        Some(v) => l.bad(
            format!("{at}/expect"),
            format!("expect must be an object, not {}", json_kind(v)),
        ),
        None => l.bad(
            at.to_owned(),
            "missing field \"expect\": a case needs at least one expectation",
        ),
    }
}

/// A case's `clauses`: a non-empty array of clause IDs of the catalogue.
fn lint_clauses(l: &mut Linter<'_>, at: &str, clauses: Option<&Value>, known: &[String]) {
    match clauses {
        Some(Value::Array(list)) if list.is_empty() => l.bad(
            format!("{at}/clauses"),
            "a case names at least one clause ID of clauses.md",
        ),
        Some(Value::Array(list)) => {
            for (j, c) in list.iter().enumerate() {
                match c.as_str() {
                    Some(id) if known.iter().any(|k| k == id) => {}
                    Some(id) => l.push(
                        "unknown_clause",
                        format!("{at}/clauses/{j}"),
                        format!("{id:?} is not a clause ID of clauses.md"),
                    ),
                    None => l.bad(
                        format!("{at}/clauses/{j}"),
                        format!("a clause ID is a string, not {}", json_kind(c)),
                    ),
                }
            }
        }
        Some(v) => l.bad(
            format!("{at}/clauses"),
            format!(
                "clauses must be an array of clause IDs, not {}",
                json_kind(v)
            ),
        ),
        None => l.bad(at.to_owned(), "missing field \"clauses\""),
    }
}

/// A case's optional `requires`: an array of capability names.
fn lint_requires(l: &mut Linter<'_>, at: &str, requires: Option<&Value>) {
    match requires {
        None => {}
        Some(Value::Array(list)) => {
            for (j, c) in list.iter().enumerate() {
                match c.as_str() {
                    Some(name) if super::capability::is_capability(name) => {}
                    Some(name) => l.bad(
                        format!("{at}/requires/{j}"),
                        super::UnknownCapability(name.to_owned()).to_string(),
                    ),
                    None => l.bad(
                        format!("{at}/requires/{j}"),
                        format!("a capability is a string, not {}", json_kind(c)),
                    ),
                }
            }
        }
        Some(v) => l.bad(
            format!("{at}/requires"),
            format!(
                "requires must be an array of capability names, not {}",
                json_kind(v)
            ),
        ),
    }
}

/// `absent` (JSON Pointers) and `notContainsText` (non-empty needles): arrays of strings.
fn lint_strings(l: &mut Linter<'_>, here: String, kind: &str, spec: &Value) {
    let Some(list) = spec.as_array() else {
        l.bad(
            here,
            format!(
                "{kind} expects an array of strings, not {}",
                json_kind(spec)
            ),
        );
        return;
    };
    for (j, item) in list.iter().enumerate() {
        match item.as_str() {
            Some(p) if kind == "absent" => lint_pointer(l, format!("{here}/{j}"), p),
            Some("") => l.bad(
                format!("{here}/{j}"),
                "an empty string is contained in every response",
            ),
            Some(_) => {}
            None => l.bad(
                format!("{here}/{j}"),
                format!("expected a string, not {}", json_kind(item)),
            ),
        }
    }
}

/// `count`: an array of `{pointer, where, equals}`.
fn lint_count(l: &mut Linter<'_>, here: String, spec: &Value) {
    let Some(list) = spec.as_array() else {
        l.bad(
            here,
            format!(
                "count expects an array of {{pointer, where, equals}}, not {}",
                json_kind(spec)
            ),
        );
        return;
    };
    for (j, item) in list.iter().enumerate() {
        let at_item = format!("{here}/{j}");
        let Some(obj) = item.as_object() else {
            l.bad(
                at_item,
                format!(
                    "expected {{pointer, where, equals}}, not {}",
                    json_kind(item)
                ),
            );
            continue;
        };
        for key in obj.keys() {
            if !matches!(key.as_str(), "pointer" | "where" | "equals") {
                l.bad(
                    format!("{at_item}/{}", escape_token(key)),
                    format!("unknown field {key:?} (count has pointer, where, equals)"),
                );
            }
        }
        match obj.get("pointer") {
            Some(Value::String(p)) => lint_pointer(l, format!("{at_item}/pointer"), p),
            _ => l.bad(at_item.clone(), "count needs a string \"pointer\""),
        }
        if obj.get("equals").is_none_or(|e| e.as_u64().is_none()) {
            l.bad(at_item, "count needs \"equals\": a non-negative integer");
        }
    }
}

fn lint_pointer(l: &mut Linter<'_>, at: String, p: &str) {
    if !is_pointer(p) {
        l.bad(
            at,
            format!("{p:?} is not a JSON Pointer (it must be \"\" or start with \"/\"; ~ only as ~0 or ~1)"),
        );
    }
}

fn lint_expect(l: &mut Linter<'_>, at: &str, expect: &Map<String, Value>) {
    for (kind, spec) in expect {
        let here = format!("{at}/{}", escape_token(kind));
        match kind.as_str() {
            "response" | "ok" => {}
            "error" => {
                if !spec.is_object() {
                    l.bad(
                        here,
                        format!(
                            "error expects an object of fields to include, not {}",
                            json_kind(spec)
                        ),
                    );
                }
            }
            "match" | "includes" | "contains" => {
                let Some(map) = spec.as_object() else {
                    l.bad(
                        here,
                        format!(
                            "{kind} expects an object of JSON Pointers, not {}",
                            json_kind(spec)
                        ),
                    );
                    continue;
                };
                for (ptr, want) in map {
                    let at_ptr = format!("{here}/{}", escape_token(ptr));
                    lint_pointer(l, at_ptr.clone(), ptr);
                    if kind == "contains" && !want.is_string() {
                        l.bad(
                            at_ptr,
                            format!("contains expects a string, not {}", json_kind(want)),
                        );
                    }
                }
            }
            "absent" | "notContainsText" => lint_strings(l, here, kind, spec),
            "count" => lint_count(l, here, spec),
            other => l.bad(
                here,
                format!(
                    "unknown expectation kind {other:?}; known kinds: {}",
                    EXPECTATION_KINDS.join(", ")
                ),
            ),
        }
    }
}

/// Which cases to run: `--clause` filters (any may match) and a `--case` id substring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Upper-cased filters: a family (`RETRY`, matching every `RETRY-n`) or one clause ID.
    clauses: Vec<String>,
    case_id: Option<String>,
    /// `--shard K/N`: only this shard's part of the selection.
    shard: Option<super::shard::Shard>,
}

impl Selection {
    /// Only shard `shard`'s part of this selection.
    pub fn with_shard(mut self, shard: super::shard::Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Every case.
    pub fn all() -> Self {
        Selection::default()
    }

    /// Build a selection, rejecting a clause filter that matches no catalogue clause (a
    /// typo would otherwise select nothing and pass).
    pub fn new(clauses: &[String], case_id: Option<&str>) -> Result<Self, LoadError> {
        let catalogue = clause_catalogue();
        let clauses: Vec<String> = clauses.iter().map(|c| c.trim().to_uppercase()).collect();
        let mut problems = Vec::new();
        for f in &clauses {
            if !catalogue.iter().any(|(id, _)| filter_matches(f, id)) {
                let mut families: Vec<&str> = catalogue
                    .iter()
                    .filter_map(|(id, _)| id.split_once('-').map(|(fam, _)| fam))
                    .collect();
                families.dedup();
                problems.push(LoadProblem {
                    code: "unknown_clause_filter",
                    file: None,
                    pointer: None,
                    message: format!(
                        "--clause {f}: no clause of the catalogue matches; give a family ({}) \
                         or a clause ID such as RETRY-2",
                        families.join(", ")
                    ),
                });
            }
        }
        if !problems.is_empty() {
            return Err(LoadError { problems });
        }
        Ok(Selection {
            clauses,
            case_id: case_id.filter(|s| !s.is_empty()).map(str::to_owned),
            shard: None,
        })
    }

    /// Whether a clause ID is in scope of the clause filters (all are, without filters).
    pub fn covers_clause(&self, clause: &str) -> bool {
        self.clauses.is_empty() || self.clauses.iter().any(|f| filter_matches(f, clause))
    }

    /// Whether a case is selected.
    pub fn selects(&self, case: &Case) -> bool {
        self.selects_in_any_shard(case) && self.shard.is_none_or(|s| s.takes_case(&case.id))
    }

    /// Whether a case is selected by the filters, whichever shard it falls in: what the N
    /// shards of this selection run together.
    pub fn selects_in_any_shard(&self, case: &Case) -> bool {
        self.case_id
            .as_deref()
            .is_none_or(|needle| case.id.contains(needle))
            && (self.clauses.is_empty() || case.clauses.iter().any(|c| self.covers_clause(c)))
    }

    /// The `--clause` filters (upper-cased) and the `--case` text.
    pub fn filters(&self) -> (&[String], Option<&str>) {
        (&self.clauses, self.case_id.as_deref())
    }
}

/// `RETRY` matches every `RETRY-n`; `RETRY-2` matches exactly `RETRY-2`.
fn filter_matches(filter: &str, clause: &str) -> bool {
    if filter.contains('-') {
        filter == clause
    } else {
        clause
            .split_once('-')
            .is_some_and(|(family, _)| family == filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lint(value: Value) -> Vec<LoadProblem> {
        let mut problems = Vec::new();
        let file = lint_file(Path::new("x.json"), &value, &mut problems);
        assert_eq!(file.is_some(), problems.is_empty());
        problems
    }

    fn pointers(problems: &[LoadProblem]) -> Vec<&str> {
        problems
            .iter()
            .map(|p| p.pointer.as_deref().unwrap_or("-"))
            .collect()
    }

    #[test]
    fn a_good_file_lints_clean() {
        let problems = lint(json!({"family": "PLAN", "$comment": "ok", "cases": [
            {"id": "a", "clauses": ["PLAN-1"], "request": {"op": "plan"}, "expect": {
                "ok": 1, "error": {}, "match": {"/a": 1}, "includes": {"": {}},
                "contains": {"/a~1b": "x"}, "absent": ["/x"], "notContainsText": ["s"],
                "count": [{"pointer": "/i", "where": {"a": 1}, "equals": 0}]}}]}));
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn every_problem_is_reported_with_its_pointer() {
        let problems = lint(json!({"family": 3, "extra": 1, "cases": [
            {"id": "", "clauses": [], "request": 1, "expect": {}},
            {"id": "b", "clauses": ["PLAN-99", 4], "expects": {"ok": 1}},
            {"id": "c", "clauses": ["PLAN-1"], "request": {}, "expect": {
                "match": {"a": 1}, "absent": "/x", "contains": {"/a": 1},
                "count": [{"pointer": "/i"}], "notContainsText": [""], "okk": 1}}]}));
        assert_eq!(
            pointers(&problems),
            [
                "/extra",
                "/family",
                "/cases/0/id",
                "/cases/0/clauses",
                "/cases/0/expect",
                "/cases/1/expects",
                "/cases/1/clauses/0",
                "/cases/1/clauses/1",
                "/cases/1",
                "/cases/1",
                "/cases/2/expect/match/a",
                "/cases/2/expect/absent",
                "/cases/2/expect/contains/~1a",
                "/cases/2/expect/count/0",
                "/cases/2/expect/notContainsText/0",
                "/cases/2/expect/okk",
            ]
        );
        assert_eq!(problems[6].code, "unknown_clause");
        assert!(
            problems[15].message.contains("known kinds: response"),
            "{}",
            problems[15]
        );
        assert_eq!(
            problems[0].to_string(),
            "x.json: at /extra: unknown field \"extra\" (a case file has family, description, \
             cases; annotations start with \"$\")"
        );
    }

    #[test]
    fn file_includes_resolve_relative_to_the_case_file_and_fail_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("w.json"), r#"{"id": "from-file"}"#).expect("write");
        let case_file = dir.path().join("cases.json");
        let mut value = json!({"cases": [
            {"request": {"op": "run", "workflow": {"$file": "w.json"}, "keep": {"$file": 1}}},
            {"request": {"op": "run", "workflow": {"$file": "missing.json"}}},
            {"request": {"op": "run", "workflow": {"$file": "/etc/passwd"}}}
        ]});
        let mut problems = Vec::new();
        resolve_includes(Source::Disk, &case_file, &mut value, &mut problems);
        assert_eq!(
            value["cases"][0]["request"]["workflow"],
            json!({"id": "from-file"})
        );
        let pointers: Vec<_> = problems
            .iter()
            .filter_map(|p| p.pointer.as_deref())
            .collect();
        assert_eq!(
            pointers,
            [
                "/cases/0/request/keep",
                "/cases/1/request/workflow",
                "/cases/2/request/workflow"
            ]
        );
        assert!(problems.iter().all(|p| p.code == "include"));
    }

    #[test]
    fn a_non_object_file_is_named_at_the_root() {
        let problems = lint(json!([1]));
        assert_eq!(pointers(&problems), [""]);
        assert!(
            problems[0]
                .to_string()
                .starts_with("x.json: at the document root: ")
        );
    }

    #[test]
    fn pointers_follow_rfc_6901() {
        for good in ["", "/", "/a/0", "/a~0b~1c"] {
            assert!(is_pointer(good), "{good}");
        }
        for bad in ["a", "/a~", "/a~2"] {
            assert!(!is_pointer(bad), "{bad}");
        }
    }

    fn case(id: &str, clauses: &[&str]) -> Case {
        Case {
            id: id.to_owned(),
            clauses: clauses.iter().map(|c| (*c).to_owned()).collect(),
            description: String::new(),
            request: Value::Null,
            expect: Map::new(),
            requires: Vec::new(),
        }
    }

    #[test]
    fn a_family_filter_matches_its_clauses_and_an_id_only_itself() {
        let retry = Selection::new(&["retry".to_owned()], None).expect("valid");
        assert!(retry.selects(&case("x", &["PLAN-1", "RETRY-2"])));
        assert!(!retry.selects(&case("x", &["PLAN-1"])));
        assert!(retry.covers_clause("RETRY-12") && !retry.covers_clause("RUN-1"));
        let exact = Selection::new(&["RETRY-2".to_owned()], None).expect("valid");
        assert!(exact.selects(&case("x", &["RETRY-2"])));
        assert!(!exact.selects(&case("x", &["RETRY-1"])));
        let by_id = Selection::new(&[], Some("dup")).expect("valid");
        assert!(by_id.selects(&case("plan-dup-ids", &["PLAN-1"])));
        assert!(!by_id.selects(&case("plan-cycle", &["PLAN-1"])));
    }

    #[test]
    fn a_filter_matching_no_clause_is_refused() {
        for typo in ["RETYR", "RETRY-999", "RETRY-"] {
            let err = Selection::new(&[typo.to_owned()], None).expect_err(typo);
            assert_eq!(err.problems[0].code, "unknown_clause_filter");
        }
    }
}
