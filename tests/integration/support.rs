//! Helpers the integration tests share now that they are one crate (D-205): the binary
//! under test, the repository's examples, and a successful run's JSON report.

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
