//! The general evaluator: any node to a [`Val`], the one plain definition of each
//! operator of the dialect. The typed paths in `fast.rs` are fast paths of it.

use std::borrow::Cow;

use super::data::{At, Data, is_missing, var};
use super::extended::extended;
use super::fast::{compare_var, eq_str, eval_bool, eval_num, in_strings, static_var};
use super::node::Node;
use super::ops::{Arith, Cmp, Op, Test};
use crate::expr::value::{Val, loose_eq, same_value_zero, strict_eq, to_js_string, truthy};

/// The general evaluator: any node to a value.
pub(super) fn eval<'a>(node: &'a Node, data: &Data<'a, '_>) -> Val<'a> {
    match node {
        Node::Null => Val::Null,
        Node::Bool(b) => Val::Bool(*b),
        Node::Num(x) => Val::Num(*x),
        Node::Str(s, _) => Val::Str(Cow::Borrowed(s)),
        Node::Lit(v) => Val::from_json(v),
        Node::Array(items) => Val::Arr(items.iter().map(|i| eval(i, data)).collect()),
        Node::Var(segs, default) => match static_var(segs, default.as_deref(), data) {
            Ok(v) => Val::from_json(v),
            Err(()) => var(node, data).map_or(Val::Undefined, At::into_val),
        },
        Node::VarDyn(..) => var(node, data).map_or(Val::Undefined, At::into_val),
        Node::Missing(args) => {
            let mut missing = Vec::new();
            for a in args {
                let key = eval(a, data);
                if is_missing(&key, data) {
                    missing.push(key);
                }
            }
            Val::Arr(missing)
        }
        Node::Test(t, args) => Val::Bool(test(*t, args, data)),
        Node::Cmp(c, args) => Val::Bool(compare(*c, args, data)),
        Node::CmpVar(c, vc) => Val::Bool(compare_var(*c, vc, data)),
        Node::Arith(a, args) => Val::Num(arith(*a, args, data)),
        Node::Call(op, args) => call(*op, args, data),
    }
}

pub(super) fn arg<'a>(args: &'a [Node], i: usize, data: &Data<'a, '_>) -> Val<'a> {
    args.get(i).map_or(Val::Undefined, |n| eval(n, data))
}

/// `if`/`?:`: the branch the conditions pick, `None` for no branch (null).
pub(super) fn pick_branch<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Option<&'a Node> {
    let mut rest = args;
    while let [cond, then, tail @ ..] = rest {
        if eval_bool(cond, data) {
            return Some(then);
        }
        rest = tail;
    }
    rest.first()
}

/// Pairwise over all operands: a<b, b<c, … (every operand is evaluated, as the reference
/// maps them all before comparing).
pub(super) fn compare<'a>(cmp: Cmp, args: &'a [Node], data: &Data<'a, '_>) -> bool {
    if let [a, b] = args {
        return cmp.holds(eval_num(a, data), eval_num(b, data));
    }
    let mut holds = true;
    let mut prev: Option<f64> = None;
    for n in args {
        let x = eval_num(n, data);
        if let Some(p) = prev {
            holds &= cmp.holds(p, x);
        }
        prev = Some(x);
    }
    holds
}

/// Folded over all operands, left to right; a lone `-` negates.
pub(super) fn arith<'a>(op: Arith, args: &'a [Node], data: &Data<'a, '_>) -> f64 {
    match args {
        [only] if op == Arith::Sub => -eval_num(only, data),
        [first, rest @ ..] => rest.iter().fold(eval_num(first, data), |acc, n| {
            op.apply(acc, eval_num(n, data))
        }),
        [] => f64::NAN,
    }
}

pub(super) fn test<'a>(t: Test, args: &'a [Node], data: &Data<'a, '_>) -> bool {
    match t {
        Test::Eq => loose_eq_args(args, data),
        Test::Ne => !loose_eq_args(args, data),
        Test::StrictEq => strict_eq(&arg(args, 0, data), &arg(args, 1, data)),
        Test::StrictNe => !strict_eq(&arg(args, 0, data), &arg(args, 1, data)),
        Test::Not => !args.first().is_some_and(|n| eval_bool(n, data)),
        Test::NotNot => args.first().is_some_and(|n| eval_bool(n, data)),
        Test::In => in_strings(args, data).unwrap_or_else(|| includes(args, data)),
    }
}

/// `in`: a substring of a string, else an item (SameValueZero) of an array.
pub(super) fn includes<'a>(args: &'a [Node], data: &Data<'a, '_>) -> bool {
    let needle = arg(args, 0, data);
    let hay = arg(args, 1, data);
    match &hay {
        Val::Str(s) => s.contains(to_js_string(&needle).as_str()),
        other => other
            .any_item(|i| same_value_zero(i, &needle))
            .unwrap_or(false),
    }
}

/// `==` of the first two operands.
pub(super) fn loose_eq_args<'a>(args: &'a [Node], data: &Data<'a, '_>) -> bool {
    eq_str(args, data).unwrap_or_else(|| loose_eq(&arg(args, 0, data), &arg(args, 1, data)))
}

pub(super) fn call<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    match op {
        Op::Test(t) => Val::Bool(test(t, args, data)),
        Op::Cmp(c) => Val::Bool(compare(c, args, data)),
        Op::Arith(a) => Val::Num(arith(a, args, data)),
        Op::And => {
            let mut last = Val::Undefined;
            for n in args {
                last = eval(n, data);
                if !truthy(&last) {
                    break;
                }
            }
            last
        }
        Op::Or => {
            let mut last = Val::Undefined;
            for n in args {
                last = eval(n, data);
                if truthy(&last) {
                    break;
                }
            }
            last
        }
        Op::Coalesce => {
            let mut last = Val::Undefined;
            for n in args {
                last = eval(n, data);
                if !last.is_nullish() {
                    break;
                }
            }
            last
        }
        Op::If => pick_branch(args, data).map_or(Val::Null, |n| eval(n, data)),
        _ => extended(op, args, data),
    }
}
