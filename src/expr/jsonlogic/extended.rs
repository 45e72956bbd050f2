//! json-logic-js semantics for the operators outside the dialect (`Dialect::Extended`):
//! one function per operator family.

use std::borrow::Cow;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::data::{Data, is_missing};
use super::eval::{arg, eval};
use super::node::Node;
use super::ops::Op;
use crate::expr::value::{Val, detach, to_js_string, to_number, truthy};

/// json-logic-js semantics for the operators outside the dialect ([`Dialect::Extended`]).
///
/// [`Dialect::Extended`]: super::Dialect::Extended
pub(super) fn extended<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    match op {
        Op::Cat => Val::Str(Cow::Owned(
            all(args, data).iter().map(to_js_string).collect(),
        )),
        Op::Join => join(args, data),
        Op::Substr => substr(args, data),
        Op::Merge => merge(args, data),
        Op::Max | Op::Min => max_min(op, args, data),
        Op::Map | Op::Filter | Op::All | Op::None | Op::Some => over_items(op, args, data),
        Op::Reduce => reduce(args, data),
        Op::MissingSome => missing_some(args, data),
        Op::Log => arg(args, 0, data),
        _ => Val::Undefined,
    }
}

/// Every operand, evaluated left to right.
fn all<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Vec<Val<'a>> {
    args.iter().map(|n| eval(n, data)).collect()
}

/// `join`: the items of a list joined by a separator (`,` by default), nullish items empty.
fn join<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let sep = arg(args, 0, data);
    let sep = if sep.is_nullish() {
        ",".to_owned()
    } else {
        to_js_string(&sep)
    };
    let list = arg(args, 1, data);
    let text = match list.array_items() {
        Some(items) => items
            .iter()
            .map(|i| {
                if i.is_nullish() {
                    String::new()
                } else {
                    to_js_string(i)
                }
            })
            .collect::<Vec<_>>()
            .join(&sep),
        None if list.is_nullish() => String::new(),
        None => to_js_string(&list),
    };
    Val::Str(Cow::Owned(text))
}

/// `substr`: JS `String.prototype.substr` over characters, negative start and length
/// counting from the end.
fn substr<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let source: Vec<char> = to_js_string(&arg(args, 0, data)).chars().collect();
    let len = source.len() as f64;
    let start = to_number(&arg(args, 1, data));
    let start = if start.is_nan() { 0.0 } else { start.trunc() };
    let start = if start < 0.0 {
        (len + start).max(0.0)
    } else {
        start.min(len)
    };
    let end = arg(args, 2, data);
    let count = if end.is_nullish() {
        len - start
    } else {
        let e = to_number(&end);
        let e = if e.is_nan() { 0.0 } else { e.trunc() };
        if e < 0.0 {
            (len - start + e).max(0.0)
        } else {
            e.min(len - start)
        }
    };
    let (s, c) = (start as usize, count.max(0.0) as usize);
    Val::Str(Cow::Owned(source.iter().skip(s).take(c).collect()))
}

/// `merge`: operands flattened one level into one array.
fn merge<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let mut out = Vec::new();
    for v in all(args, data) {
        match v.array_items() {
            Some(items) => out.extend(items.into_iter().map(|i| detach(&i))),
            None => out.push(v),
        }
    }
    Val::Arr(out)
}

/// `max`/`min` of the operands as numbers; NaN if any is.
fn max_min<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let nums: Vec<f64> = all(args, data).iter().map(to_number).collect();
    let pick = if nums.iter().any(|x| x.is_nan()) {
        f64::NAN
    } else if op == Op::Max {
        nums.into_iter().fold(f64::NEG_INFINITY, f64::max)
    } else {
        nums.into_iter().fold(f64::INFINITY, f64::min)
    };
    Val::Num(pick)
}

/// `map`, `filter`, `all`, `none`, `some`: the body evaluated with each item as the data.
fn over_items<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let items = arg(args, 0, data)
        .array_items()
        .map(|v| v.iter().map(detach).collect::<Vec<Val<'a>>>());
    let Some(items) = items else {
        return if op == Op::Map || op == Op::Filter {
            Val::Arr(Vec::new())
        } else {
            Val::Bool(op == Op::None)
        };
    };
    let Some(body) = args.get(1) else {
        return Val::Arr(Vec::new());
    };
    let holds = |i: &Val<'a>| truthy(&eval(body, &Data::Item(i)));
    match op {
        Op::Map => Val::Arr(items.iter().map(|i| eval(body, &Data::Item(i))).collect()),
        Op::Filter => Val::Arr(items.into_iter().filter(|i| holds(i)).collect()),
        Op::All => Val::Bool(!items.is_empty() && items.iter().all(holds)),
        Op::None => Val::Bool(!items.iter().any(holds)),
        _ => Val::Bool(items.iter().any(holds)),
    }
}

/// `reduce`: the body folded over the items with `{current, accumulator}` as the data.
fn reduce<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let initial = arg(args, 2, data);
    let initial = if matches!(initial, Val::Undefined) {
        Val::Null
    } else {
        initial
    };
    let Some(items) = arg(args, 0, data)
        .array_items()
        .map(|v| v.iter().map(detach).collect::<Vec<_>>())
    else {
        return initial;
    };
    let Some(body) = args.get(1) else {
        return initial;
    };
    let mut acc = detach(&initial);
    for item in items {
        let mut ctx = Map::new();
        ctx.insert("current".into(), item.to_json());
        ctx.insert("accumulator".into(), acc.to_json());
        let ctx = Val::Owned(Rc::new(Value::Object(ctx)));
        acc = detach(&eval(body, &Data::Item(&ctx)));
    }
    acc
}

/// `missing_some`: the missing keys, or none when at least `need` of them are present.
fn missing_some<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let need = to_number(&arg(args, 0, data));
    let keys = arg(args, 1, data)
        .array_items()
        .map(|v| v.iter().map(detach).collect::<Vec<_>>())
        .unwrap_or_default();
    let missing: Vec<Val<'a>> = keys
        .iter()
        .filter(|k| is_missing(k, data))
        .cloned()
        .collect();
    if (keys.len() - missing.len()) as f64 >= need {
        Val::Arr(Vec::new())
    } else {
        Val::Arr(missing)
    }
}
