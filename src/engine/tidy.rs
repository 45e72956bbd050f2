//! Checks on the engine's own source (test builds only): what review would otherwise have
//! to remember.

use std::path::{Path, PathBuf};

/// A function longer than this needs a reason written next to it: a comment containing
/// `long:` in the comments or attributes right above its signature.
const FN_LINES_MAX: usize = 70;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` (trimmed) opens a function item.
fn is_fn_signature(line: &str) -> bool {
    let mut rest = line;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest.starts_with("fn ")
}

/// `(first line, length, name)` of every function in `source` longer than `max` lines
/// with no `long:` reason above it. Relies on rustfmt's layout: a body ends at the first
/// line that is its signature's indentation followed by `}`.
fn long_functions(source: &str, max: usize) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !is_fn_signature(trimmed) || trimmed.ends_with(';') || trimmed.ends_with('}') {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        let close = format!("{indent}}}");
        let Some(end) = (n + 1..lines.len()).find(|&k| lines[k] == close) else {
            continue;
        };
        let length = end - n + 1;
        let reason = lines[..n]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .take_while(|l| l.starts_with("//") || l.starts_with("#["))
            .any(|l| l.contains("long:"));
        if length > max && !reason {
            found.push((n + 1, length, trimmed.to_owned()));
        }
    }
    found
}

#[test]
fn no_engine_function_is_long_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 10, "found only {files:?} under {root:?}");
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap_or_default();
        for (line, length, signature) in long_functions(&source, FN_LINES_MAX) {
            problems.push(format!(
                "{}:{line}: {length} lines: {signature}",
                file.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "functions over {FN_LINES_MAX} lines without a `long:` reason above them:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_length_check_counts_bodies_and_honours_reasons() {
    let body = |name: &str, lines: usize| {
        let inner: String = (0..lines).map(|_| "    let x = 1;\n").collect();
        format!("fn {name}() {{\n{inner}}}\n")
    };
    let source = format!(
        "{}{}// long: one match over every variant\n{}    pub(crate) async fn f() {{}}\n",
        body("short", 3),
        body("long", 5),
        body("excused", 9)
    );
    let found = long_functions(&source, 6);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, 7);
    assert_eq!(found[0].2, "fn long() {");
    assert!(is_fn_signature("pub(crate) async fn walk(self)"));
    assert!(!is_fn_signature("let fn_name = 1;"));
}
