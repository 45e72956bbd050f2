//! # w6w-sim
//!
//! Reference engine, deterministic simulated host and conformance suite for the w6w
//! Workflow specification (manifestVersion "2"). Where to start reading:
//!
//! - [`model`] — the RFC's types (Workflow, Step, RunState, …) and save-time validation.
//! - [`plan`] — the DAG and its deterministic order (PLAN-*).
//! - [`expr`] — run scope, markers, the @w6w/expr dialect, templates, resolveWith.
//! - [`host`] — the `WorkflowContext` host contract: the engine's only door to the world.
//! - [`engine`] — run / resume / replay, retry, routing, checkpoints.
//! - [`sim`] — the deterministic simulated host (virtual clock, faults, stores, trace).
//! - [`dialect`] — WOML and YAML front-ends: validated with positions, imported into w6w.
//! - [`conformance`] — case format, checker, clause coverage.
//! - [`context_protocol`] — the engine and host seams across a process boundary.
//! - `mutants` — deliberately broken behaviours the conformance suite must catch; only in
//!   the dedicated mutant build (`W6W_MUTANTS=1`, see `build.rs`), never in what ships.
//! - [`service`] — the JSON-lines op service behind `w6w-sim eval` and the cases.
//! - [`cli`] — argument parsing and printing.
//!
//! Errors vs panics: everything the spec rejects or a user can cause is an `Err` value with
//! a stable machine code; a panic means a bug (an invariant only a bug can break).

#![warn(unreachable_pub)]

pub mod cli;
pub mod conformance;
pub mod context_protocol;
pub mod dialect;
pub mod engine;
pub mod expr;
pub mod host;
pub mod json;
pub mod limits;
pub mod model;
#[cfg(w6w_mutants)]
pub mod mutants;
pub mod plan;
pub mod redact;
pub mod service;
pub mod sim;
pub mod validate;
