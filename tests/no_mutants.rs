//! Nothing test-only ships (issue 11 item 2): the default build's binary holds no mutant
//! name and has no `--mutant` / `--mutants` flag, so no hook a test could switch on is
//! reachable in what users install. The mutant build (`W6W_MUTANTS=1`) is checked the
//! other way round — the same scan must find every name there — which proves the scan
//! can see a name when one is present.
//!
//! Mutant names are read from the sources that define them (`src/mutants.rs`,
//! `src/conformance/mutants.rs`), so a new mutant is covered without editing this file.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

/// Every mutant's stable name: the `Mutant::X => "kebab-name"` arms of the `name` fns.
fn mutant_names() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = Vec::new();
    for file in ["src/mutants.rs", "src/conformance/mutants.rs"] {
        let text = std::fs::read_to_string(root.join(file)).expect("source readable");
        for line in text.lines() {
            let Some((lhs, rhs)) = line.trim().split_once(" => \"") else {
                continue;
            };
            let name = rhs.trim_end_matches(',').trim_end_matches('"');
            let kebab = name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if lhs.contains("Mutant::") && kebab && name.contains('-') {
                names.push(name.to_owned());
            }
        }
    }
    names
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|w| w[0] == needle[0] && *w == needle)
        .count()
}

/// The texts `build.rs` embeds in the binary verbatim (case files and examples): a case id
/// may contain a mutant's name as data (`…-with-continue-record-not-recorded`), which is
/// not mutant code.
fn embedded_texts() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for dir in ["conformance/cases", "examples"] {
        for entry in std::fs::read_dir(root.join(dir))
            .expect("readable")
            .flatten()
        {
            if entry.path().is_file() {
                texts.push(std::fs::read(entry.path()).expect("readable"));
            }
        }
    }
    texts
}

/// Whether the binary holds `name` more often than the embedded data accounts for.
fn in_code(binary: &[u8], embedded: &[Vec<u8>], name: &str) -> bool {
    let as_data: usize = embedded.iter().map(|t| count(t, name.as_bytes())).sum();
    count(binary, name.as_bytes()) > as_data
}

#[test]
fn the_names_are_found_in_the_sources() {
    let names = mutant_names();
    assert!(names.len() >= 20, "{names:?}");
    assert!(
        names.iter().any(|n| n == "secrets-on-data-root"),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n == "host-checkpoint-returns-before-durable"),
        "{names:?}"
    );
}

#[test]
fn the_binary_holds_a_mutant_name_only_in_the_mutant_build() {
    let binary = std::fs::read(BIN).expect("the binary is readable");
    let embedded = embedded_texts();
    let present: Vec<String> = mutant_names()
        .into_iter()
        .filter(|n| in_code(&binary, &embedded, n))
        .collect();
    if cfg!(w6w_mutants) {
        assert_eq!(present, mutant_names(), "the mutant build has every mutant");
    } else {
        assert!(present.is_empty(), "the shipped binary holds {present:?}");
    }
}

#[test]
fn the_mutant_flags_exist_only_in_the_mutant_build() {
    let help = Command::new(BIN)
        .args(["conformance", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert_eq!(help.contains("--mutant"), cfg!(w6w_mutants), "{help}");
    let out = Command::new(BIN)
        .args([
            "conformance",
            "--mutant",
            "retry-auth-errors",
            "--case",
            "retry-auth",
        ])
        .output()
        .expect("runs");
    if cfg!(w6w_mutants) {
        assert_eq!(out.status.code(), Some(1), "the mutant fails its case");
    } else {
        assert_eq!(
            out.status.code(),
            Some(2),
            "an unknown flag is a usage error"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unexpected argument '--mutant'"), "{err}");
    }
}
