//! Expressions: the run scope, markers, the @w6w/expr dialect, `{{ }}` templates,
//! the ExprValue envelope and resolveWith.
//!
//! Owns: everything that turns a `with` value into params. Invariant: knows nothing of
//! runs or steps beyond the [`RunScope`]; a run scope is a [`DataScope`] and [`Secrets`]
//! side by side, and expressions read a [`DataRoot`] over the data scope alone, so no
//! expression can reach a secret (EXPR-5); only the resolver's secret arm reads [`Secrets`].
//!
//! Where to start reading:
//! - [`scope`](RunScope) — the eight closed roots, split into [`DataScope`] and [`Secrets`],
//!   and the secrets-free [`DataRoot`].
//! - `jsonlogic` — the dialect: [`Logic::compile`] once, evaluate many times.
//! - `template` — `{{ }}` text ⇄ [`Part`]s, chains, root anchoring.
//! - `compile` — [`CompiledWith`]: a with block parsed once, resolved per step run.
//! - `resolve` — the pinned entry points, [`ResolveError`] codes and [`Resolved`] taint.
//! - `value` / `number` — JS coercion and formatting the dialect inherits.

mod compile;
mod jsonlogic;
mod limits;
pub(crate) mod number;
mod resolve;
mod scope;
mod steps;
mod taints;
mod template;
mod value;

pub use compile::CompiledWith;
pub(crate) use compile::json_type_name;
pub use jsonlogic::{Dialect, ExprCode, Logic};
pub use limits::{MAX_NESTING_DEPTH, MAX_TEMPLATE_BYTES};
pub use resolve::{
    REDACTED, ResolveCode, ResolveError, ResolveMode, ResolveOptions, Resolved, resolve_with,
};
pub(crate) use resolve::{check_required, redact_params};
pub use scope::{DataRoot, DataScope, RunScope, Secrets};
pub use template::{
    Mode, Part, parse as parse_template, parse_root_anchored, serialize as serialize_template,
};
pub(crate) use template::{parse_coalesce_chain, root_anchor};
