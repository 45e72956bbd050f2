//! The deterministic simulated host: the reference `WorkflowContext`.
//!
//! Owns: all nondeterminism of a simulated run — the virtual clock, scripted actions, the
//! fault plan, the durable stores (memory, atomic on-disk) and the trace/report.

pub(crate) mod ops;
