//! The typed fast paths of the general evaluator (`eval.rs`), kept because they pay on
//! `scripts/bench.sh resolver` (docs/bench-log.md D-340, D-341): an answer read as a
//! truth value ([`eval_bool`]), a number ([`eval_num`], [`var_number`], [`compare_var`] for
//! the [`Node::CmpVar`] node) or borrowed JSON ([`eval_out`]) without building the
//! intermediate [`Val`]; the static `var` walk ([`static_var`]) that stays in registers;
//! and the in-place string comparisons of `in` and `==` ([`in_strings`], [`eq_str`]).
//! Every one falls back to the general evaluator where it has no shortcut.
//!
//! Held equal to the general evaluator by the properties in this file's tests:
//! `jsonlogic::fast::tests::typed_paths_answer_as_the_general_evaluator` (every node of
//! generated rules, both dialects, over generated data: truthiness for `eval_bool`, JS
//! number coercion for `eval_num`, the JSON for `eval_out`, the plain `in`/`==`/comparison
//! for the shortcuts) and `jsonlogic::fast::tests::the_static_walk_answers_as_the_general_walk`.

use std::borrow::Cow;

use serde_json::Value;

use super::data::{At, Data, NULL, var};
use super::eval::{arith, compare, eval, pick_branch, test};
#[cfg(doc)]
use super::eval::{includes, loose_eq_args};
use super::node::{Node, Seg, VarCmp};
use super::ops::{Cmp, Op};
use crate::expr::number::{json_number, number_value};
use crate::expr::value::{
    Val, json_to_number, json_truthy, object_get, same_str, to_number, truthy,
};

/// The common case of a static `var`, kept apart so that it stays in registers: a walk
/// that only reads object keys and array indexes of JSON data. `Ok` is the answer (the
/// found value, else the default, else null); `Err(())` means the walk needs the general
/// path (a computed property such as `length`, a string index, a computed data value).
/// A fast path of the general walk (`data::walk`); held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
#[inline(always)]
pub(super) fn static_var<'a>(
    segs: &[Seg],
    default: Option<&'a Value>,
    data: &Data<'a, '_>,
) -> Result<&'a Value, ()> {
    let (mut cur, rest) = match data {
        Data::Json(v) => (*v, segs),
        Data::Root(r, _) => {
            let Some((first, rest)) = segs.split_first() else {
                return Err(()); // the whole root is materialised
            };
            if first.as_ref() == "steps" {
                return Err(()); // D-187: read through the layers by the general walk
            }
            r.note_read(segs); // SEC-1 taint tracking
            match r.root(first.as_ref()) {
                Some(v) => (v, rest),
                None => return Ok(default.unwrap_or(NULL)),
            }
        }
        Data::Item(Val::Ref(v)) => (*v, segs),
        Data::Item(_) => return Err(()),
    };
    for seg in rest {
        let next = match cur {
            Value::Object(map) => object_get(map, seg.as_ref()),
            Value::Array(items) => match seg.index {
                Some(i) => items.get(i),
                None => return Err(()),
            },
            Value::String(_) => return Err(()),
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        };
        match next {
            Some(v) => cur = v,
            None => return Ok(default.unwrap_or(NULL)),
        }
    }
    Ok(cur)
}

/// `truthy(&eval(node))`, without building the value where the node's shape allows.
/// A fast path of the general evaluator; held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
pub(super) fn eval_bool<'a>(node: &'a Node, data: &Data<'a, '_>) -> bool {
    match node {
        Node::Bool(b) => *b,
        Node::Var(segs, default) => match static_var(segs, default.as_deref(), data) {
            Ok(v) => json_truthy(v),
            Err(()) => var(node, data).is_some_and(|at| at.truthy()),
        },
        Node::VarDyn(..) => var(node, data).is_some_and(|at| at.truthy()),
        Node::Test(t, args) => test(*t, args, data),
        Node::Cmp(c, args) => compare(*c, args, data),
        Node::CmpVar(c, vc) => compare_var(*c, vc, data),
        Node::Arith(a, args) => truthy(&Val::Num(arith(*a, args, data))),
        // `and` answers its first falsy operand or its last: truthy iff all are (and there
        // is one); `or` answers its first truthy operand or its last.
        Node::Call(Op::And, args) => !args.is_empty() && args.iter().all(|n| eval_bool(n, data)),
        Node::Call(Op::Or, args) => args.iter().any(|n| eval_bool(n, data)),
        Node::Call(Op::If, args) => pick_branch(args, data).is_some_and(|n| eval_bool(n, data)),
        _ => truthy(&eval(node, data)),
    }
}

/// `to_number(&eval(node))`, without building the value where the node's shape allows.
/// A fast path of the general evaluator; held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
pub(super) fn eval_num<'a>(node: &'a Node, data: &Data<'a, '_>) -> f64 {
    match node {
        Node::Num(x) => *x,
        Node::Var(segs, default) => var_number(node, segs, default.as_deref(), data),
        Node::VarDyn(..) => var(node, data).map_or(f64::NAN, |at| at.number()),
        Node::Arith(a, args) => arith(*a, args, data),
        Node::Cmp(c, args) => f64::from(u8::from(compare(*c, args, data))),
        Node::CmpVar(c, vc) => f64::from(u8::from(compare_var(*c, vc, data))),
        Node::Test(t, args) => f64::from(u8::from(test(*t, args, data))),
        _ => to_number(&eval(node, data)),
    }
}

/// `to_number` of a static `var` node's answer.
/// A fast path of the general evaluator; held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
#[inline(always)]
pub(super) fn var_number<'a>(
    node: &'a Node,
    segs: &[Seg],
    default: Option<&'a Value>,
    data: &Data<'a, '_>,
) -> f64 {
    match static_var(segs, default, data) {
        Ok(v) => json_to_number(v),
        Err(()) => var(node, data).map_or(f64::NAN, |at| at.number()),
    }
}

/// [`compare`] of a static `var` and a number literal (the `CmpVar` node).
/// A fast path of the general evaluator; held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
pub(super) fn compare_var<'a>(cmp: Cmp, vc: &'a VarCmp, data: &Data<'a, '_>) -> bool {
    let x = match &vc.var {
        Node::Var(segs, default) => var_number(&vc.var, segs, default.as_deref(), data),
        other => eval_num(other, data),
    };
    if vc.var_left {
        cmp.holds(x, vc.number)
    } else {
        cmp.holds(vc.number, x)
    }
}

/// `Val::from_json(v).to_json()`, borrowing `v` where that copy would be identical: every
/// value but a number (whose JSON spelling [`number_value`] normalises, and which owns no
/// heap anyway).
#[inline]
pub(super) fn json_out(v: &Value) -> Cow<'_, Value> {
    match v {
        Value::Number(n) => Cow::Owned(number_value(json_number(n))),
        other => Cow::Borrowed(other),
    }
}

/// `v.to_json()`, borrowing a borrowed container (which [`Val::to_json`] copies as is).
#[inline]
pub(super) fn val_out(v: Val<'_>) -> Cow<'_, Value> {
    match v {
        Val::Ref(r) => Cow::Borrowed(r),
        other => Cow::Owned(other.to_json()),
    }
}

/// `eval(node).to_json()`, without building the intermediate value where the node's shape
/// allows, and borrowing what the answer names from the rule or the data: the top of
/// [`Logic::evaluate_ref`](super::Logic::evaluate_ref) and of the resolver's `$expr`. `into_owned()` of the answer is
/// always exactly `eval(node).to_json()`.
/// A fast path of the general evaluator; held equal to it by
/// `tests::typed_paths_answer_as_the_general_evaluator`.
pub(super) fn eval_out<'a>(node: &'a Node, data: &Data<'a, '_>) -> Cow<'a, Value> {
    match node {
        Node::Null => Cow::Owned(Value::Null),
        Node::Bool(b) => Cow::Owned(Value::Bool(*b)),
        Node::Num(x) => Cow::Owned(number_value(*x)),
        Node::Str(_, v) => Cow::Borrowed(v),
        Node::Lit(v) => json_out(v),
        Node::Var(segs, default) => match static_var(segs, default.as_deref(), data) {
            Ok(v) => json_out(v),
            Err(()) => var(node, data).map_or(Cow::Owned(Value::Null), At::into_out),
        },
        Node::VarDyn(..) => var(node, data).map_or(Cow::Owned(Value::Null), At::into_out),
        Node::Test(t, args) => Cow::Owned(Value::Bool(test(*t, args, data))),
        Node::Cmp(c, args) => Cow::Owned(Value::Bool(compare(*c, args, data))),
        Node::CmpVar(c, vc) => Cow::Owned(Value::Bool(compare_var(*c, vc, data))),
        Node::Arith(a, args) => Cow::Owned(number_value(arith(*a, args, data))),
        Node::Call(Op::If, args) => {
            pick_branch(args, data).map_or(Cow::Owned(Value::Null), |n| eval_out(n, data))
        }
        Node::Call(op @ (Op::And | Op::Or), args) => {
            let Some((last, init)) = args.split_last() else {
                return Cow::Owned(Value::Null);
            };
            // `and` stops at a falsy operand, `or` at a truthy one.
            let stop = *op == Op::Or;
            for n in init {
                if let Node::Test(..) | Node::Cmp(..) | Node::CmpVar(..) = n {
                    let b = eval_bool(n, data);
                    if b == stop {
                        return Cow::Owned(Value::Bool(b));
                    }
                } else {
                    let v = eval(n, data);
                    if truthy(&v) == stop {
                        return val_out(v);
                    }
                }
            }
            eval_out(last, data)
        }
        _ => val_out(eval(node, data)),
    }
}

/// A fast path of [`includes`] (`in`): a static `var` looked up in a literal list of
/// strings, compared in place when the var reads a string; `None` otherwise.
pub(super) fn in_strings<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Option<bool> {
    let [Node::Var(segs, default), Node::Lit(hay)] = args else {
        return None;
    };
    let Value::Array(items) = &**hay else {
        return None;
    };
    let Ok(Value::String(needle)) = static_var(segs, default.as_deref(), data) else {
        return None;
    };
    // SameValueZero: a string equals only an equal string.
    Some(
        items
            .iter()
            .any(|i| matches!(i, Value::String(s) if same_str(s, needle))),
    )
}

/// A fast path of [`loose_eq_args`] (`==`): a static var against a string literal (either
/// way round) compares in place when the var reads a string; `None` otherwise.
pub(super) fn eq_str<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Option<bool> {
    let ([Node::Var(segs, default), Node::Str(lit, _)]
    | [Node::Str(lit, _), Node::Var(segs, default)]) = args
    else {
        return None;
    };
    match static_var(segs, default.as_deref(), data) {
        Ok(Value::String(s)) => Some(same_str(s, lit)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::super::data::{Data, RootCache, or_default, walk};
    use super::super::eval::{compare, eval, includes};
    use super::super::node::Node;
    use super::super::ops::Test;
    use super::super::tests::{data, rule, with_fixed_members};

    const PATHS: &[&str] = &["s", "n", "f", "a", "xs.0", "s.length", "vars.s", "nope"];
    const WORDS: &[&str] = &["str", "a", "", "3", "NL"];

    /// The shapes the shortcuts take (`var` against string or number literals), alone or
    /// next to a generated rule, and generated rules.
    fn shortcut_rule() -> impl Strategy<Value = Value> {
        let var = prop::sample::select(PATHS).prop_map(|p| json!({"var": p}));
        let word = prop::sample::select(WORDS).prop_map(Value::from);
        let words = prop::collection::vec(word.clone(), 0..3).prop_map(Value::Array);
        let shape = prop_oneof![
            (var.clone(), word.clone(), any::<bool>()).prop_map(|(v, w, left)| {
                let op = if left { "==" } else { "!=" };
                if left {
                    json!({op: [v, w]})
                } else {
                    json!({op: [w, v]})
                }
            }),
            (var.clone(), words).prop_map(|(v, ws)| json!({"in": [v, ws]})),
            (
                var,
                prop::sample::select(&["<", ">=", ">", "<="][..]),
                -1i64..5,
                any::<bool>()
            )
                .prop_map(|(v, op, n, left)| {
                    if left {
                        json!({op: [v, n]})
                    } else {
                        json!({op: [n, v]})
                    }
                }),
        ];
        prop_oneof![
            2 => shape.clone(),
            2 => rule(),
            1 => (shape, rule()).prop_map(|(a, b)| json!({"and": [a, b]})),
        ]
    }
    use super::super::{Dialect, Logic};
    use super::{compare_var, eq_str, eval_bool, eval_num, eval_out, in_strings, static_var};
    use crate::expr::RunScope;
    use crate::expr::value::{Val, loose_eq, to_number, truthy};

    /// The nodes a node evaluates (or may evaluate), the node itself first.
    fn nodes<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
        out.push(node);
        match node {
            Node::Array(args)
            | Node::Missing(args)
            | Node::Test(_, args)
            | Node::Cmp(_, args)
            | Node::Arith(_, args)
            | Node::Call(_, args) => args.iter().for_each(|n| nodes(n, out)),
            Node::VarDyn(path, _) => nodes(path, out),
            Node::CmpVar(_, vc) => nodes(&vc.var, out),
            Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(..) | Node::Lit(_) => {}
            Node::Var(..) => {}
        }
    }

    /// Two numbers are the same answer: both NaN, or the same bits (`-0` is not `0`).
    fn same_number(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
    }

    /// Every typed path and shortcut on `node` answers as the general evaluator (or the
    /// plain operator it shortcuts) converted the same way.
    fn agree<'a>(node: &'a Node, data: &Data<'a, '_>) -> Result<(), String> {
        let general = eval(node, data);
        let (truth, number, json) = (truthy(&general), to_number(&general), general.to_json());
        if eval_bool(node, data) != truth {
            return Err(format!("eval_bool of {node:?}: general says {truth}"));
        }
        let fast = eval_num(node, data);
        if !same_number(fast, number) {
            return Err(format!("eval_num of {node:?}: {fast}, general {number}"));
        }
        let out = eval_out(node, data).into_owned();
        if out != json {
            return Err(format!("eval_out of {node:?}: {out}, general {json}"));
        }
        shortcuts_agree(node, data)
    }

    /// The shortcuts the general evaluator itself takes agree with their plain operator.
    fn shortcuts_agree<'a>(node: &'a Node, data: &Data<'a, '_>) -> Result<(), String> {
        let (fast, plain) = match node {
            Node::Var(segs, default) => {
                let Ok(fast) = static_var(segs, default.as_deref(), data) else {
                    return Ok(());
                };
                let general = or_default(walk(data, segs), default.as_deref()).into_val();
                if let Val::Ref(g) = general
                    && !std::ptr::eq(g, fast)
                {
                    return Err(format!("static var {node:?}: {g} borrowed elsewhere"));
                }
                let (f, g) = (Val::from_json(fast).to_json(), general.to_json());
                return if f == g {
                    Ok(())
                } else {
                    Err(format!("static var {node:?}: {f}, general walk {g}"))
                };
            }
            Node::CmpVar(c, vc) => {
                let num = Node::Num(vc.number);
                let args = if vc.var_left {
                    [vc.var.clone(), num]
                } else {
                    [num, vc.var.clone()]
                };
                (Some(compare_var(*c, vc, data)), compare(*c, &args, data))
            }
            Node::Test(Test::In, args) => (in_strings(args, data), includes(args, data)),
            Node::Test(Test::Eq | Test::Ne, args) => {
                let arg = |i: usize| args.get(i).map_or(Val::Undefined, |n| eval(n, data));
                (eq_str(args, data), loose_eq(&arg(0), &arg(1)))
            }
            _ => return Ok(()),
        };
        match fast {
            Some(f) if f != plain => Err(format!("shortcut of {node:?}: {f}, plain {plain}")),
            _ => Ok(()),
        }
    }

    proptest! {
        // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
        #![proptest_config(ProptestConfig::default())]

        /// Every node of a generated rule (both dialects), over generated JSON data, an
        /// item (borrowed and computed) and a run scope's data root: `eval_bool` is the
        /// truthiness of `eval`, `eval_num` its JS number, `eval_out` its JSON; the static
        /// `var` walk, `CmpVar`, and the `in`/`==` string shortcuts answer as the plain
        /// walk or operator. A rule the compiler refuses is refused for every path alike
        /// (there is one compile step), so only compiled rules are evaluated.
        #[test]
        fn typed_paths_answer_as_the_general_evaluator(rule in shortcut_rule(), d in data(), xs in data()) {
            let d = with_fixed_members(d, xs);
            let scope = RunScope::from_json(&json!({"vars": d.clone(), "steps": {"a": {"output": d.clone()}}}));
            let borrowed = Val::from_json(&d);
            let computed = Val::Owned(Rc::new(d.clone()));
            for dialect in [Dialect::W6w, Dialect::Extended] {
                let Ok(logic) = Logic::compile(&rule, dialect) else { continue };
                let mut all = Vec::new();
                nodes(&logic.root, &mut all);
                for node in all {
                    let cache = RootCache::default();
                    for data in [
                        Data::Json(&d),
                        Data::Item(&borrowed),
                        Data::Item(&computed),
                        Data::Root(scope.data_root(), &cache),
                    ] {
                        prop_assert_eq!(agree(node, &data), Ok(()), "{} {:?}", rule, dialect);
                    }
                }
            }
        }
    }
}
