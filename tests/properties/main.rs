//! The properties, one test crate (D-205): random workflows, expressions, plans, strands,
//! dialect round trips and secrets checked by `proptest` (case count from `PROPTEST_CASES`,
//! default 64), and the official JSONLogic suite. Behaviour-level and in-process: this is
//! what `scripts/mutants.sh` runs against every cargo-mutants mutant, with the library's
//! unit tests and the conformance suite.
//!
//! `cargo test --release --test properties MODULE::` runs one file's properties, e.g.
//! `cargo test --release --test properties plan_props::`. A failing case is saved beside its
//! file (`MODULE.proptest-regressions`) and replayed first on the next run.

mod control_plan_props;
mod dialect_props;
mod engine_props;
mod expr_props;
mod jsonlogic_official;
mod plan_props;
mod secret_props;
mod strand_props;
