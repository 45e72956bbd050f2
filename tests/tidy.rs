//! Tidy checks run as a test, so CI is just `cargo test`: every source file documents
//! itself, no debugging leftovers, no unfinished code on a reachable path.

use std::path::{Path, PathBuf};

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

fn sources() -> Vec<(PathBuf, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

#[test]
fn every_source_file_starts_with_a_module_doc() {
    for (path, text) in sources() {
        assert!(
            text.trim_start().starts_with("//!"),
            "{} must start with a `//!` comment saying what the module owns",
            path.display()
        );
    }
}

#[test]
fn no_debugging_or_unfinished_code_in_src() {
    let banned = ["dbg!(", "todo!(", "unimplemented!(", "println!(\"DEBUG"];
    for (path, text) in sources() {
        for (n, line) in text.lines().enumerate() {
            for b in banned {
                assert!(
                    !line.contains(b),
                    "{}:{}: contains {b}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn every_case_file_names_clauses() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    for entry in std::fs::read_dir(&dir).expect("cases dir").flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("readable");
        assert!(
            text.contains("\"clauses\""),
            "{} has no clause tags",
            entry.path().display()
        );
    }
}
