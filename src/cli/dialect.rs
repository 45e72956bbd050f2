//! `w6w-sim import`, and the dialect halves of `validate` and `run` (issue 10): WOML
//! (`.xml`, `.woml`) and YAML (`.yaml`, `.yml`) documents, or any file with `--dialect`.
//!
//! Invariant: parsing and printing only; every command is one call into
//! [`crate::dialect`]. Exit codes as everywhere: 0 success, 1 invalid input, 2 usage/I/O.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::input::display_name;
use crate::dialect::{self, Dialect, Manifest, Problem};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DialectCommand {
    /// Print the w6w workflow (manifestVersion "2") equivalent to a WOML or YAML document;
    /// what the move changes is printed as notes on stderr. Exit 1 with every problem
    /// (line:column, path, code; the first 100, then `too_many_problems`) when the
    /// document is invalid or cannot be imported.
    Import(ImportArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct ImportArgs {
    /// The WOML (.xml, .woml) or YAML (.yaml, .yml) document. `-` reads standard input.
    file: PathBuf,
    /// Force the dialect (`woml` or `yaml`) instead of going by the file extension.
    #[arg(long, value_parser = parse_dialect)]
    dialect: Option<Dialect>,
    /// Action declarations for YML-3: `{"actions": {"connector.action": {"input": SCHEMA}}}`.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Print `{dialect, workflow, notes}` instead of the bare workflow.
    #[arg(long)]
    json: bool,
}

pub(crate) fn parse_dialect(s: &str) -> Result<Dialect, String> {
    Dialect::from_name(s).ok_or_else(|| format!("{s:?} is not a dialect: w6w, woml or yaml"))
}

pub(crate) fn main(cmd: DialectCommand) -> ExitCode {
    match cmd {
        DialectCommand::Import(a) => import(&a),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The manifest from `--manifest FILE` (exit-2 message on failure).
pub(crate) fn load_manifest(path: Option<&Path>) -> Result<Option<Manifest>, (String, u8)> {
    let Some(path) = path else {
        return Ok(None);
    };
    let bytes = read(path).map_err(|m| (m, 2))?;
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
        (
            format!(
                "manifest {} is not JSON (line {}, column {}): {e}",
                path.display(),
                e.line(),
                e.column()
            ),
            2,
        )
    })?;
    Manifest::from_json(&doc).map(Some).map_err(|p| {
        (
            format!("invalid manifest {}:\n  {}", path.display(), p.join("\n  ")),
            1,
        )
    })
}

pub(crate) fn problems_text(file: &str, problems: &[Problem]) -> String {
    let count = match problems.len() {
        1 => "1 problem".to_owned(),
        n => format!("{n} problems"),
    };
    let mut out = format!("{file}: invalid ({count})");
    for p in problems {
        let clause = p.clause.map(|c| format!(" {c}")).unwrap_or_default();
        out.push_str(&format!(
            "\n  {file}:{}:{}: {}  [{}{clause}]\n    {}",
            p.line,
            p.column,
            if p.path.is_empty() { "/" } else { &p.path },
            p.code,
            p.message
        ));
    }
    out
}

fn import(a: &ImportArgs) -> ExitCode {
    let file = display_name(&a.file);
    let dialect = a.dialect.unwrap_or_else(|| Dialect::from_path(&a.file));
    let fail = |m: String, code: u8| {
        eprintln!("w6w-sim import: {m}");
        ExitCode::from(code)
    };
    if dialect == Dialect::W6w {
        return fail(
            format!(
                "{file}: not a WOML (.xml, .woml) or YAML (.yaml, .yml) document; use --dialect"
            ),
            2,
        );
    }
    let manifest = match load_manifest(a.manifest.as_deref()) {
        Ok(m) => m,
        Err((m, code)) => return fail(m, code),
    };
    let bytes = match read(&a.file) {
        Ok(b) => b,
        Err(m) => return fail(m, 2),
    };
    match dialect::import(dialect, &bytes, manifest.as_ref()) {
        Ok(imported) => {
            for n in &imported.notes {
                eprintln!("{file}:{}:{}: note: {}", n.line, n.column, n.message);
            }
            let out = if a.json {
                imported.to_json()
            } else {
                imported.workflow.clone()
            };
            let text = serde_json::to_string_pretty(&out).unwrap_or_default();
            if writeln!(std::io::stdout().lock(), "{text}").is_err() {
                return ExitCode::from(2);
            }
            ExitCode::SUCCESS
        }
        Err(problems) => {
            if a.json {
                let out = json!({"file": file, "ok": false,
                    "errors": problems.iter().map(Problem::to_json).collect::<Vec<_>>()});
                let _ = writeln!(std::io::stdout().lock(), "{out}");
            } else {
                eprintln!("{}", problems_text(&file, &problems));
            }
            ExitCode::from(1)
        }
    }
}

/// What `validate` prints for one dialect file, and how it counts.
pub(crate) enum Checked {
    Valid(String),
    Invalid(String),
    Unreadable(String),
}

/// `validate` for one WOML/YAML file: the same `{file, ok, errors}` JSON line as for w6w
/// documents (errors carry `line`, `column` and `clause` besides `status`, `code`, `path`,
/// `message`), plus `dialect` and `notes`. `check` is the document alone, or (with
/// `--runnable`) also whether it can run (D-237).
pub(crate) fn validate_file(
    path: &Path,
    dialect: Dialect,
    manifest: Option<&Manifest>,
    as_json: bool,
    check: dialect::Check,
) -> Checked {
    let file = display_name(path);
    let bytes = match read(path) {
        Ok(b) => b,
        Err(m) => {
            return Checked::Unreadable(if as_json {
                json!({"file": file, "ok": false, "errors": [],
                    "error": {"code": "io_error", "message": m}})
                .to_string()
            } else {
                m
            });
        }
    };
    match dialect::validate(dialect, &bytes, manifest, check) {
        Ok(notes) => Checked::Valid(if as_json {
            json!({"file": file, "ok": true, "errors": [], "dialect": dialect,
                "notes": notes.iter().map(dialect::Note::to_json).collect::<Vec<_>>()})
            .to_string()
        } else {
            let mut s = format!("{file}: valid ({})", dialect.as_str());
            for n in &notes {
                s.push_str(&format!(
                    "\n  {file}:{}:{}: note: {}",
                    n.line, n.column, n.message
                ));
            }
            s
        }),
        Err(problems) => Checked::Invalid(if as_json {
            json!({"file": file, "ok": false, "dialect": dialect,
                "errors": problems.iter().map(Problem::to_json).collect::<Vec<_>>()})
            .to_string()
        } else {
            problems_text(&file, &problems)
        }),
    }
}
