//! Expressions: the run scope, markers, the @w6w/expr dialect, `{{ }}` templates,
//! the ExprValue envelope and resolveWith.
//!
//! Owns: everything that turns a `with` value into params. Invariant: knows nothing of
//! runs or steps beyond the [`RunScope`]; `secrets` is reachable only through
//! [`RunScope::secret`], never through the generic data root (EXPR-5).

pub(crate) mod ops;
mod resolve;
mod scope;

pub use resolve::{
    REDACTED, ResolveCode, ResolveError, ResolveMode, Resolved, resolve_with, resolve_with_mode,
};
pub use scope::{DataRoot, ROOTS, RunScope, is_root, step_into};
