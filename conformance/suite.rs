//! The conformance suite as a `cargo test` target: every case in `conformance/cases/`
//! against the built-in reference host, in process and through the adapter protocol (one
//! suite, two hosts), plus tidy checks on the case files themselves.
//!
//! This file is also the template for a host crate: `conformance::run(&mut adapter,
//! &RunOptions::default())?.assert_all_passed()` in one `#[test]`.

use w6w_sim::conformance::{
    self, Adapter, ProcessAdapter, ProcessOptions, Reference, RunOptions, Suite,
};

#[test]
fn case_files_load_without_problems() {
    // The loader is the tidy check: known clause IDs, unique case ids, no unknown fields,
    // at least one well-formed expectation per case. Every problem is listed.
    if let Err(e) = Suite::load_default() {
        panic!("the case files have problems:\n{e}");
    }
}

#[test]
fn every_case_passes_against_the_reference_host() {
    let report = conformance::run(&mut Reference, &RunOptions::default())
        .unwrap_or_else(|e| panic!("the suite does not load:\n{e}"));
    assert!(!report.cases.is_empty(), "no cases ran");
    report.assert_all_passed();
}

#[test]
fn every_case_passes_through_the_process_adapter() {
    let command = format!("'{}' adapter serve", env!("CARGO_BIN_EXE_w6w-sim"));
    let mut adapter = ProcessAdapter::start(&command, ProcessOptions::default())
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(
        adapter.name(),
        Reference.name(),
        "the ack names the reference"
    );
    let report = conformance::run(&mut adapter, &RunOptions::default())
        .unwrap_or_else(|e| panic!("the suite does not load:\n{e}"));
    report.assert_all_passed();
}
