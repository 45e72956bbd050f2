//! Rule → node tree: the compile step, compile-time refusal and the nesting limit.

use serde_json::Value;

use super::ops::{Arith, Cmp, Op, Test, dialect_op, extended_op};
use super::{Dialect, ExprCode, ExprError};
use crate::expr::limits::MAX_NESTING_DEPTH;
use crate::expr::number::json_number;
use crate::expr::value::{Val, canonical_index, to_js_string};

/// One segment of a `var` path known at compile time, its array index parsed once.
#[derive(Debug, Clone)]
pub(super) struct Seg {
    pub(super) key: Box<str>,
    /// The canonical array index the key names (`"0"`, `"17"`), if any.
    pub(super) index: Option<usize>,
}

impl Seg {
    pub(super) fn new(key: &str) -> Seg {
        Seg {
            key: key.into(),
            index: canonical_index(key),
        }
    }
}

impl AsRef<str> for Seg {
    fn as_ref(&self) -> &str {
        &self.key
    }
}

/// A path segment as the property walk reads it: its text, and the array index it names.
pub(crate) trait Segment: AsRef<str> {
    fn index(&self) -> Option<usize>;
}

impl Segment for Seg {
    fn index(&self) -> Option<usize> {
        self.index
    }
}

impl Segment for String {
    fn index(&self) -> Option<usize> {
        canonical_index(self)
    }
}

impl Segment for &str {
    fn index(&self) -> Option<usize> {
        canonical_index(self)
    }
}

#[derive(Debug, Clone)]
pub(super) enum Node {
    /// Scalar literals, read once at compile time.
    Null,
    Bool(bool),
    Num(f64),
    /// A string literal: its text for comparisons, and the same string as JSON, built once
    /// so that an answer naming the literal borrows it ([`Logic::evaluate_ref`]).
    Str(Box<str>, Box<Value>),
    /// An array of constants, or a 0/2+-key object returned as-is without evaluating
    /// inside it.
    Lit(Box<Value>),
    Array(Box<[Node]>),
    /// `var` with a path known at compile time (no segments: the whole data root) and its
    /// default, which is never evaluated (expr-notes: `var` default).
    Var(Box<[Seg]>, Option<Box<Value>>),
    /// `var` with a computed path.
    VarDyn(Box<Node>, Option<Box<Value>>),
    Missing(Box<[Node]>),
    Test(Test, Box<[Node]>),
    Cmp(Cmp, Box<[Node]>),
    /// A two-operand comparison of a static `var` with a number literal, the commonest
    /// condition, evaluated without the general operand dispatch.
    CmpVar(Cmp, Box<VarCmp>),
    Arith(Arith, Box<[Node]>),
    /// Every other operator.
    Call(Op, Box<[Node]>),
}

#[derive(Debug, Clone)]
pub(super) struct VarCmp {
    /// Always a [`Node::Var`].
    pub(super) var: Node,
    pub(super) number: f64,
    /// Whether the `var` is the left operand.
    pub(super) var_left: bool,
}

impl Node {
    /// A comparison node, specialised when its shape allows.
    pub(super) fn compare(cmp: Cmp, args: Box<[Node]>) -> Node {
        match &*args {
            [var @ Node::Var(..), Node::Num(number)] | [Node::Num(number), var @ Node::Var(..)] => {
                let var_left = matches!(args.first(), Some(Node::Var(..)));
                Node::CmpVar(
                    cmp,
                    Box::new(VarCmp {
                        var: var.clone(),
                        number: *number,
                        var_left,
                    }),
                )
            }
            _ => Node::Cmp(cmp, args),
        }
    }

    pub(super) fn literal(v: &Value) -> Node {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Num(json_number(n)),
            Value::String(s) => Node::Str(s.as_str().into(), Box::new(v.clone())),
            other => Node::Lit(Box::new(other.clone())),
        }
    }

    /// Needs no evaluation and is not an object literal.
    pub(super) fn is_constant(&self) -> bool {
        match self {
            Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(..) => true,
            Node::Lit(v) => !v.is_object(),
            _ => false,
        }
    }
}

pub(super) fn too_deep() -> ExprError {
    ExprError {
        code: ExprCode::LimitExceeded,
        message: format!("JSONLogic nests deeper than {MAX_NESTING_DEPTH} levels"),
        operator: None,
    }
}

pub(super) fn compile(rule: &Value, dialect: Dialect, depth: usize) -> Result<Node, ExprError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(too_deep());
    }
    match rule {
        Value::Array(items) => {
            let nodes: Box<[Node]> = items
                .iter()
                .map(|i| compile(i, dialect, depth + 1))
                .collect::<Result<_, _>>()?;
            // An array of constants needs no evaluation: hand out the rule's own array.
            // (A fresh JS array differs only in identity, and no rule can compare one
            // literal node with itself.)
            if nodes.iter().all(Node::is_constant) {
                Ok(Node::Lit(Box::new(rule.clone())))
            } else {
                Ok(Node::Array(nodes))
            }
        }
        Value::Object(map) if map.len() == 1 => {
            let Some((name, args)) = map.iter().next() else {
                return Ok(Node::literal(rule));
            };
            compile_call(name, args, dialect, depth)
        }
        other => Ok(Node::literal(other)),
    }
}

/// An operator's arguments: an array is the argument list; anything else is one argument.
pub(super) fn arg_values(args: &Value) -> Vec<&Value> {
    match args {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

pub(super) fn compile_call(
    name: &str,
    args: &Value,
    dialect: Dialect,
    depth: usize,
) -> Result<Node, ExprError> {
    let raw = arg_values(args);
    let compile_all = |raw: &[&Value]| -> Result<Box<[Node]>, ExprError> {
        raw.iter().map(|a| compile(a, dialect, depth + 1)).collect()
    };
    // The extended dialect reads a `{"$": path}` marker nested inside JSONLogic as a path
    // lookup (the RFC's own example writes `{"cat": ["…", {"$": "trigger.event.since"}]}`).
    // The @w6w/expr dialect refuses it as an unknown operator, as the reference library does.
    let name = if name == "$" && dialect == Dialect::Extended {
        "var"
    } else {
        name
    };
    match name {
        "var" => {
            let default = raw.get(1).map(|v| Box::new((*v).clone()));
            Ok(match raw.first() {
                None | Some(Value::Null) => Node::Var(Box::new([]), default),
                Some(Value::String(s)) if s.is_empty() => Node::Var(Box::new([]), default),
                Some(Value::String(s)) => Node::Var(split_path(s), default),
                Some(Value::Number(n)) => Node::Var(
                    split_path(&to_js_string(&Val::Num(json_number(n)))),
                    default,
                ),
                Some(other) => Node::VarDyn(Box::new(compile(other, dialect, depth + 1)?), default),
            })
        }
        "missing" => Ok(Node::Missing(compile_all(&raw)?)),
        _ => {
            let op = dialect_op(name)
                .or_else(|| (dialect == Dialect::Extended).then(|| extended_op(name))?)
                .ok_or_else(|| ExprError {
                    code: ExprCode::UnknownOperator,
                    message: format!("Unknown JSONLogic operator: {}", Value::from(name)),
                    operator: Some(name.to_owned()),
                })?;
            if matches!(op, Op::Arith(_)) && raw.is_empty() {
                // The reference throws a TypeError (reduce of an empty array) here.
                return Err(ExprError {
                    code: ExprCode::InvalidArguments,
                    message: format!("operator {} needs at least one operand", Value::from(name)),
                    operator: Some(name.to_owned()),
                });
            }
            // D-243: operands an operator never reads are data, as a `var` default is:
            // `==`/`!=`/`===`/`!==`/`in` read two, `!`/`!!` one (the reference evaluates
            // `args[0]`, `args[1]` and no further), so nothing beyond is inspected.
            let read = match op {
                Op::Test(Test::Not | Test::NotNot) => 1,
                Op::Test(_) => 2,
                _ => raw.len(),
            };
            let args = compile_all(raw.get(..read).unwrap_or(&raw))?;
            Ok(match op {
                Op::Test(t) => Node::Test(t, args),
                Op::Cmp(c) => Node::compare(c, args),
                Op::Arith(a) => Node::Arith(a, args),
                other => Node::Call(other, args),
            })
        }
    }
}

pub(super) fn split_path(s: &str) -> Box<[Seg]> {
    s.split('.').map(Seg::new).collect()
}
