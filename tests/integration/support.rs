//! Helpers the integration tests share now that they are one crate (D-205): the binary
//! under test, the repository's examples, a successful run's JSON report, and whether
//! `python3` is there.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// The `w6w-sim` binary cargo built for these tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_w6w-sim"))
}

/// `examples/NAME` in the repository.
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// The JSON report on `out`'s stdout, after asserting the process succeeded (its stderr
/// in the failure message).
pub fn report(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

/// Whether `python3` is on PATH for a test that runs a Python candidate: a missing one fails
/// the test rather than passing it vacuously, unless `W6W_SKIP_PYTHON=1` says to skip
/// (then `false`, saying so).
pub fn python3(what: &str) -> bool {
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("W6W_SKIP_PYTHON").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED: `python3` is not on PATH and W6W_SKIP_PYTHON=1");
        return false;
    }
    panic!(
        "`python3` is not on PATH: {what} needs Python 3 (set W6W_SKIP_PYTHON=1 to skip it \
         deliberately)"
    );
}
