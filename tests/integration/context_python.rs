//! The second independent engine at the engine seam: `examples/engines/mini-engine-py/`
//! (Python 3, standard library only) runs the whole suite and must fail nothing in the
//! profile it declares (`["signal", "meta"]` on top of the sequential core). `python3`
//! missing is a failure, not a silent pass, unless `W6W_SKIP_PYTHON=1` says to skip.

use std::path::PathBuf;

use w6w_sim::conformance::{self, RunOptions};
use w6w_sim::conformance::{EngineOptions, EngineProcess};

/// A floor under what the Python engine passes (every case of its profile — the sequential
/// core, one signal case (RUN-7) and the META cases; 132 when this was written): the
/// assertion that matters is 0 failed, this one that the profile is not quietly emptied.
const PASSED_AT_LEAST: usize = 125;
const GENERATED: usize = 20;

fn python3() -> bool {
    crate::support::python3("the Python mini-engine's conformance test")
}

#[test]
fn the_mini_python_engine_passes_every_case_of_its_profile() {
    if !python3() {
        return;
    }
    let shim =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/engines/mini-engine-py/shim.py");
    let cmd = format!("python3 '{}'", shim.display());
    let mut engine = EngineProcess::start(&cmd, EngineOptions::default()).expect("starts");
    let options = RunOptions {
        generate: GENERATED,
        ..RunOptions::default()
    };
    let report = conformance::run(&mut engine, &options).expect("suite loads");
    let text = report.to_text();
    assert_eq!(report.failed(), 0, "{text}");
    assert_eq!(report.generated_failed(), 0, "{text}");
    assert!(
        report.passed() >= PASSED_AT_LEAST,
        "passed {} < {PASSED_AT_LEAST}: {text}",
        report.passed()
    );
    let generated = report.generated.as_ref().expect("generated workflows ran");
    assert_eq!(generated.passed(), GENERATED, "{text}");
    // SEC-1 is judged on the candidate's own bytes (D-207): generated workflows feed the
    // scenario's secret through a variable into params that actions echo back, so the
    // generated passes above mean the shim scrubbed by value whatever it wrote.
    let sec = report
        .cases
        .iter()
        .filter(|c| c.outcome.clauses.iter().any(|k| k.as_str() == "SEC-1") && !c.not_applicable())
        .collect::<Vec<_>>();
    assert!(!sec.is_empty() && sec.iter().all(|c| c.passed()), "{text}");
    // Controls, strands and pure ops are outside its profile: not applicable — a separate
    // column, never counted as passed.
    assert!(report.not_applicable() > 0, "{text}");
    assert!(
        report
            .cases
            .iter()
            .all(|c| !(c.not_applicable() && c.passed()))
    );
    let traffic = engine.traffic();
    assert!(traffic.kills > 0, "crash cases killed python3: {traffic:?}");
}
