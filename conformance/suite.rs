//! The conformance suite as a `cargo test` target: every case in `conformance/cases/`
//! against the built-in reference host, plus tidy checks on the case files themselves.

use std::path::PathBuf;

use w6w_sim::conformance::{CaseFile, check_case, clause_catalogue};

fn case_files() -> Vec<(PathBuf, CaseFile)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let file: CaseFile = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not a valid case file: {e}", p.display()));
            (p, file)
        })
        .collect()
}

#[test]
fn every_case_passes_against_the_reference_host() {
    let mut failed = Vec::new();
    let mut total = 0;
    for (path, file) in case_files() {
        for case in &file.cases {
            total += 1;
            let outcome = check_case(case, &w6w_sim::service::handle);
            if !outcome.passed() {
                failed.push(format!(
                    "{} [{}] ({}):\n    {}\n    response: {}",
                    case.id,
                    case.clauses.join(", "),
                    path.file_name()
                        .map(|f| f.to_string_lossy())
                        .unwrap_or_default(),
                    outcome.failures.join("\n    "),
                    outcome.response
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {total} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn every_case_is_tagged_with_known_clauses_and_unique_ids() {
    let known: Vec<String> = clause_catalogue().into_iter().map(|(id, _)| id).collect();
    let mut seen = std::collections::HashSet::new();
    for (path, file) in case_files() {
        for case in &file.cases {
            assert!(
                !case.clauses.is_empty(),
                "{}: case {} names no clause",
                path.display(),
                case.id
            );
            for c in &case.clauses {
                assert!(
                    known.contains(c),
                    "{}: case {} names unknown clause {c}",
                    path.display(),
                    case.id
                );
            }
            assert!(
                seen.insert(case.id.clone()),
                "duplicate case id {}",
                case.id
            );
        }
    }
}
