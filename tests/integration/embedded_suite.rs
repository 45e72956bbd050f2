//! The suite travels inside the binary (issue 9 item 7): an installed `w6w-sim` runs the
//! whole suite from any directory, and the embedded copy is the source tree's.

use std::process::Command;

use w6w_sim::__internals::conformance::default_cases_dir;
use w6w_sim::conformance::Suite;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

#[test]
fn the_embedded_suite_is_the_source_trees() {
    let embedded = Suite::load_embedded().unwrap_or_else(|e| panic!("embedded:\n{e}"));
    let disk = Suite::load(&default_cases_dir()).unwrap_or_else(|e| panic!("disk:\n{e}"));
    let ids = |s: &Suite| -> Vec<(String, String)> {
        s.cases()
            .map(|(f, c)| (f.stem(), serde_json::to_string(c).unwrap_or_default()))
            .collect()
    };
    assert!(!ids(&embedded).is_empty());
    assert_eq!(ids(&embedded), ids(&disk));
}

#[test]
fn the_binary_runs_the_whole_suite_from_any_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["conformance", "--generate", "3"])
        .output()
        .expect("w6w-sim runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases = Suite::load_embedded().expect("loads").cases().count();
    assert_eq!(
        text.lines().last(),
        Some(format!("{} passed, 0 failed", cases + 3).as_str()),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("readable")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "the run left files behind: {left:?}");
}
