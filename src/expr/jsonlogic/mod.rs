//! The @w6w/expr JSONLogic dialect (EXPR-2, CHAIN-6): a compile step that turns a rule into
//! a node tree once, and an evaluator that runs it many times.
//!
//! Owns: the operator set, its JS coercion (via [`super::value`]) and the opt-in
//! [`Dialect::Extended`]. Knows nothing of templates, with blocks or secrets: it evaluates
//! against a JSON value or a secrets-free [`DataRoot`], and nothing else.
//!
//! Compile-time refusal: an operator outside the dialect is refused wherever it appears
//! in an evaluated position (a lazy branch included), so a typo fails the first run rather
//! than the rare run that takes that branch. Positions that are never evaluated (a `var`
//! default, the inside of a 0- or 2+-key literal object) are data and are not inspected.
//!
//! Where things are: `ops.rs` (the operator names per dialect), `node.rs` (rule → node
//! tree, compile-time refusal), `data.rs` (what `var` reads and the property walk),
//! `eval.rs` (the general evaluator: the one plain definition of each operator),
//! `extended.rs` (json-logic-js operators of the extended dialect), `fast.rs` (the typed
//! fast paths of the general evaluator, held equal to it by their own properties),
//! `tests.rs`.

use std::borrow::Cow;

use serde_json::Value;

use super::scope::DataRoot;
use super::value::Val;

mod data;
mod eval;
mod extended;
mod fast;
mod node;
mod ops;
#[cfg(test)]
mod tests;

pub(crate) use data::lookup_root;
use data::{Data, RootCache};
use eval::eval;
use fast::eval_out;
use node::{Node, compile};

/// Which operator set a rule may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// The normative @w6w/expr dialect: exactly its 23 operators (the default, always).
    #[default]
    W6w,
    /// Opt-in: the dialect's operators with the dialect's semantics, plus the rest of
    /// standard JSONLogic (json-logic-js semantics) and `join`. Never implied.
    Extended,
}

impl Dialect {
    /// Parse the op/API spelling: `"w6w"` (or absent) or `"extended"`.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "w6w" => Some(Dialect::W6w),
            "extended" => Some(Dialect::Extended),
            _ => None,
        }
    }
}

/// Why a rule cannot be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprCode {
    /// A one-key object whose key is not an operator of the dialect.
    UnknownOperator,
    /// Well-known operator, impossible arguments (an empty `+ - * / %`).
    InvalidArguments,
    /// The rule nests deeper than [`MAX_NESTING_DEPTH`](crate::limits::MAX_NESTING_DEPTH).
    LimitExceeded,
}

impl ExprCode {
    /// The stable machine code.
    pub fn as_str(self) -> &'static str {
        match self {
            ExprCode::UnknownOperator => "unknown_operator",
            ExprCode::InvalidArguments => "invalid_expression",
            ExprCode::LimitExceeded => "limit_exceeded",
        }
    }
}

/// A rule the dialect refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub code: ExprCode,
    pub message: String,
    /// The operator concerned, when there is one.
    pub operator: Option<String>,
}

impl std::fmt::Display for ExprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ExprError {}

/// A compiled rule: parse once, evaluate many times.
#[derive(Debug, Clone)]
pub struct Logic {
    root: Node,
}

impl Logic {
    /// Compile a rule under a dialect. Refuses unknown operators (naming them), empty
    /// arithmetic and rules nested deeper than [`MAX_NESTING_DEPTH`].
    pub fn compile(rule: &Value, dialect: Dialect) -> Result<Logic, ExprError> {
        Ok(Logic {
            root: compile(rule, dialect, 0)?,
        })
    }

    /// Evaluate against a JSON data value (the `logic` op; `evaluate(rule, data)`): an
    /// owned answer, always equal to [`Logic::evaluate_ref`]'s.
    pub fn evaluate(&self, data: &Value) -> Value {
        self.evaluate_ref(data).into_owned()
    }

    /// Evaluate against a JSON data value without copying what the answer names: a string
    /// or container the rule writes as a literal is borrowed from the compiled rule, one
    /// the data holds (a `var` answer) from the data; only computed answers (booleans,
    /// numbers, built arrays and strings) are owned. `into_owned()` is [`Logic::evaluate`].
    pub fn evaluate_ref<'a>(&'a self, data: &'a Value) -> Cow<'a, Value> {
        eval_out(&self.root, &Data::Json(data))
    }

    /// Evaluate against a run scope's secrets-free data root (EXPR-2, EXPR-5).
    pub(crate) fn eval_root<'a>(&'a self, root: DataRoot<'a>) -> Val<'a> {
        eval(&self.root, &Data::Root(root, &RootCache::default()))
    }

    /// [`Logic::eval_root`] as JSON, borrowing as [`Logic::evaluate_ref`] does: the
    /// resolver's `$expr` answer, owned only where the params need it.
    pub(crate) fn eval_root_ref<'a>(&'a self, root: DataRoot<'a>) -> Cow<'a, Value> {
        eval_out(&self.root, &Data::Root(root, &RootCache::default()))
    }
}

/// Compile and evaluate in one go (the unit tests' shorthand).
#[cfg(test)]
fn apply(rule: &Value, data: &Value, dialect: Dialect) -> Result<Value, ExprError> {
    Ok(Logic::compile(rule, dialect)?.evaluate(data))
}
