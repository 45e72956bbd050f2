//! Reading JSON documents named on the command line (`-` is stdin).
//!
//! Owns: the distinction between "cannot read" and "not JSON" (both exit 2), with the
//! line and column of a syntax error. Knows nothing about workflows.

use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

/// Why a document could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// The file could not be read (missing, unreadable, not UTF-8).
    Io { message: String },
    /// The text is not JSON; `line` and `column` are 1-based.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// An object repeats a key (`path` is the JSON Pointer of the second occurrence).
    Duplicate {
        path: String,
        line: usize,
        column: usize,
    },
}

impl LoadError {
    /// One sentence for a person, prefixed with the file (and position).
    pub(crate) fn describe(&self, file: &str) -> String {
        match self {
            LoadError::Io { message } => format!("{file}: cannot read: {message}"),
            LoadError::Syntax {
                line,
                column,
                message,
            } => format!("{file}:{line}:{column}: not valid JSON: {message}"),
            LoadError::Duplicate { path, line, column } => {
                format!("{file}:{line}:{column}: duplicate key at {path}")
            }
        }
    }

    /// The machine shape used by `--json` output.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            LoadError::Io { message } => json!({"code": "io_error", "message": message}),
            LoadError::Syntax {
                line,
                column,
                message,
            } => json!({"code": "json_syntax", "message": message, "line": line, "column": column}),
            LoadError::Duplicate { path, line, column } => json!({
                "code": "duplicate_key", "path": path, "line": line, "column": column,
                "message": format!("duplicate key at {path}")}),
        }
    }
}

/// The display name of a path argument.
pub(crate) fn display_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Read and parse one JSON document.
pub(crate) fn load_json(path: &Path) -> Result<Value, LoadError> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| LoadError::Io {
                message: e.to_string(),
            })?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| LoadError::Io {
            message: e.to_string(),
        })?
    };
    parse_json(&text)
}

/// Parse JSON text, keeping the position of a syntax error.
pub(crate) fn parse_json(text: &str) -> Result<Value, LoadError> {
    crate::json::parse(text).map_err(|e| {
        let (line, column) = (e.line, e.column);
        if let Some(path) = e.duplicate {
            return LoadError::Duplicate { path, line, column };
        }
        let message = e.message;
        LoadError::Syntax {
            line,
            column,
            message,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let err = parse_json("{\n  \"a\": 1,\n  oops\n}").expect_err("invalid");
        let LoadError::Syntax { line, column, .. } = &err else {
            panic!("expected a syntax error, got {err:?}");
        };
        assert_eq!((*line, *column), (3, 3));
        assert!(
            err.describe("f.json")
                .starts_with("f.json:3:3: not valid JSON: ")
        );
        assert!(!err.describe("f.json").contains("at line"));
    }

    #[test]
    fn missing_files_are_io_errors() {
        let err = load_json(Path::new("/definitely/not/here.json")).expect_err("missing");
        assert!(matches!(err, LoadError::Io { .. }));
        assert_eq!(err.to_json()["code"], "io_error");
    }
}
