//! The engine: run / resume / replay over the host contract.
//!
//! Owns: one step's life (resolve → invoke → classify → retry → outcome), edge routing and
//! the skip set, checkpoints as patches, the run-level handler. Invariant: talks to the
//! world only through [`crate::host::WorkflowContext`]; never reads a clock or the disk.
