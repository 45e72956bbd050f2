//! The integration tests, one crate (D-205): the CLI, the suite's process and Rust seams,
//! the engine and host protocols, crash recovery and real kills, the dialects' examples,
//! snapshots, schemas, limits and the repository's own rules (`tidy`, `package`, `docs`).
//! One crate links the library once instead of once per file, and its tests share one pool
//! of threads instead of running file after file.
//!
//! `cargo test --release --test integration MODULE::` runs one file's tests, e.g.
//! `cargo test --release --test integration kill_resume::`.
//!
//! The other test crates: `tests/properties` (the `proptest` properties and the official
//! JSONLogic suite: what `scripts/mutants.sh` runs per mutant), `heap_growth` (it installs
//! a counting global allocator), `mutants` and `no_mutants` (CI runs them in the mutant
//! build, D-100) and the conformance suite, `conformance/suite.rs`.

mod call_crash_recovery;
mod cli;
mod cli_resume_token;
mod cli_run;
mod conformance_cli;
mod context_engine;
mod context_node;
mod context_python;
mod crash_points;
mod crash_recovery;
mod dialect_cli;
mod dialect_examples;
mod docs;
mod embedded_suite;
mod examples;
mod fn_length;
mod hostile_peers;
mod html_cli;
mod inspect_cli;
mod kill_resume;
mod limits;
mod matrix_cli;
mod model_roundtrip;
mod package;
mod public_api;
mod redaction;
mod reference_snapshots;
mod rust_seams;
mod schemas;
mod seal;
mod store_safety;
mod support;
mod tidy;
