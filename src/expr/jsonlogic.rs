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

use std::borrow::Cow;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::limits::MAX_NESTING_DEPTH;
use super::scope::DataRoot;
use super::value::{
    Val, Walk, json_property, loose_eq, object_get, property, same_value_zero, strict_eq,
    to_js_string, to_number, truthy,
};

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
    /// The rule nests deeper than [`MAX_NESTING_DEPTH`].
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    StrictEq,
    StrictNe,
    Not,
    NotNot,
    Gt,
    Ge,
    Lt,
    Le,
    And,
    Or,
    Coalesce,
    If,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    // Extended only.
    Cat,
    Substr,
    Merge,
    Max,
    Min,
    Map,
    Filter,
    Reduce,
    All,
    None,
    Some,
    MissingSome,
    Log,
    Join,
}

fn dialect_op(name: &str) -> Option<Op> {
    Some(match name {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "===" => Op::StrictEq,
        "!==" => Op::StrictNe,
        "!" => Op::Not,
        "!!" => Op::NotNot,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        "and" => Op::And,
        "or" => Op::Or,
        "??" => Op::Coalesce,
        "if" | "?:" => Op::If,
        "in" => Op::In,
        "+" => Op::Add,
        "-" => Op::Sub,
        "*" => Op::Mul,
        "/" => Op::Div,
        "%" => Op::Mod,
        _ => return None,
    })
}

fn extended_op(name: &str) -> Option<Op> {
    Some(match name {
        "cat" => Op::Cat,
        "substr" => Op::Substr,
        "merge" => Op::Merge,
        "max" => Op::Max,
        "min" => Op::Min,
        "map" => Op::Map,
        "filter" => Op::Filter,
        "reduce" => Op::Reduce,
        "all" => Op::All,
        "none" => Op::None,
        "some" => Op::Some,
        "missing_some" => Op::MissingSome,
        "log" => Op::Log,
        "join" => Op::Join,
        _ => return None,
    })
}

/// A `var` path known at compile time.
#[derive(Debug, Clone)]
enum StaticPath {
    /// `""`, null or absent: the whole data root.
    Whole,
    Segments(Vec<String>),
}

#[derive(Debug, Clone)]
enum Node {
    /// A scalar, or a 0/2+-key object returned as-is without evaluating inside it.
    Lit(Value),
    Array(Vec<Node>),
    Var {
        path: Result<StaticPath, Box<Node>>,
        /// Never evaluated (expr-notes: `var` default).
        default: Option<Value>,
    },
    Missing(Vec<Node>),
    Call(Op, Vec<Node>),
}

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

    /// Evaluate against a JSON data value (the `logic` op; `evaluate(rule, data)`).
    pub fn evaluate(&self, data: &Value) -> Value {
        eval(&self.root, &Data::Json(data)).to_json()
    }

    /// Evaluate against a run scope's secrets-free data root (EXPR-2, EXPR-5).
    pub(crate) fn eval_root<'a>(&'a self, root: DataRoot<'a>) -> Val<'a> {
        eval(&self.root, &Data::Root(root))
    }
}

/// Compile and evaluate in one go.
pub fn apply(rule: &Value, data: &Value, dialect: Dialect) -> Result<Value, ExprError> {
    Ok(Logic::compile(rule, dialect)?.evaluate(data))
}

fn too_deep() -> ExprError {
    ExprError {
        code: ExprCode::LimitExceeded,
        message: format!("JSONLogic nests deeper than {MAX_NESTING_DEPTH} levels"),
        operator: None,
    }
}

fn compile(rule: &Value, dialect: Dialect, depth: usize) -> Result<Node, ExprError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(too_deep());
    }
    match rule {
        Value::Array(items) => {
            let nodes: Vec<Node> = items
                .iter()
                .map(|i| compile(i, dialect, depth + 1))
                .collect::<Result<_, _>>()?;
            // An array of constants needs no evaluation: hand out the rule's own array.
            // (A fresh JS array differs only in identity, and no rule can compare one
            // literal node with itself.)
            if nodes
                .iter()
                .all(|n| matches!(n, Node::Lit(v) if !v.is_object()))
            {
                Ok(Node::Lit(rule.clone()))
            } else {
                Ok(Node::Array(nodes))
            }
        }
        Value::Object(map) if map.len() == 1 => {
            let Some((name, args)) = map.iter().next() else {
                return Ok(Node::Lit(rule.clone()));
            };
            compile_call(name, args, dialect, depth)
        }
        other => Ok(Node::Lit(other.clone())),
    }
}

/// An operator's arguments: an array is the argument list; anything else is one argument.
fn arg_values(args: &Value) -> Vec<&Value> {
    match args {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

fn compile_call(
    name: &str,
    args: &Value,
    dialect: Dialect,
    depth: usize,
) -> Result<Node, ExprError> {
    let raw = arg_values(args);
    let compile_all = |raw: &[&Value]| -> Result<Vec<Node>, ExprError> {
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
            let default = raw.get(1).map(|v| (*v).clone());
            let path = match raw.first() {
                None | Some(Value::Null) => Ok(StaticPath::Whole),
                Some(Value::String(s)) if s.is_empty() => Ok(StaticPath::Whole),
                Some(Value::String(s)) => Ok(StaticPath::Segments(split_path(s))),
                Some(Value::Number(n)) => Ok(StaticPath::Segments(split_path(&to_js_string(
                    &Val::Num(n.as_f64().unwrap_or(f64::NAN)),
                )))),
                Some(other) => Err(Box::new(compile(other, dialect, depth + 1)?)),
            };
            Ok(Node::Var { path, default })
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
            if matches!(op, Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod) && raw.is_empty() {
                // The reference throws a TypeError (reduce of an empty array) here.
                return Err(ExprError {
                    code: ExprCode::InvalidArguments,
                    message: format!("operator {} needs at least one operand", Value::from(name)),
                    operator: Some(name.to_owned()),
                });
            }
            Ok(Node::Call(op, compile_all(&raw)?))
        }
    }
}

fn split_path(s: &str) -> Vec<String> {
    s.split('.').map(str::to_owned).collect()
}

/// What `var` reads from.
enum Data<'a, 'b> {
    Json(&'a Value),
    Root(DataRoot<'a>),
    Item(&'b Val<'a>),
}

impl<'a> Data<'a, '_> {
    fn whole(&self) -> Val<'a> {
        match self {
            Data::Json(v) => Val::from_json(v),
            Data::Root(r) => Val::Owned(Rc::new(r.to_value())),
            Data::Item(v) => (*v).clone(),
        }
    }
}

/// Where a walk stands: on a borrowed JSON value (the fast, common case) or on a value
/// JS computed (`length`, a string index, an item of a fresh array).
enum At<'a> {
    Json(&'a Value),
    Computed(Val<'a>),
}

impl<'a> At<'a> {
    fn from_val(v: Val<'a>) -> At<'a> {
        match v {
            Val::Ref(r) => At::Json(r),
            other => At::Computed(other),
        }
    }

    /// One property read; `None` when it names nothing.
    fn step(self, seg: &str) -> Option<At<'a>> {
        match self {
            At::Json(Value::Object(map)) => object_get(map, seg).map(At::Json),
            At::Json(other) => json_property(other, seg).map(At::from_val),
            At::Computed(v) => property(&v, seg).map(At::from_val),
        }
    }

    fn is_nullish(&self) -> bool {
        match self {
            At::Json(v) => v.is_null(),
            At::Computed(v) => v.is_nullish(),
        }
    }
}

/// Walk a dotted path with JS property semantics (expr-notes § var).
fn walk<'a, S: AsRef<str>>(data: &Data<'a, '_>, segments: &[S]) -> Walk<'a> {
    let Some((first, rest)) = segments.split_first() else {
        return Walk::Found(data.whole());
    };
    let first = first.as_ref();
    let start = match data {
        Data::Json(v) => At::Json(v).step(first),
        Data::Root(r) => {
            r.note_read(segments); // SEC-1 taint tracking
            r.root(first).map(At::Json)
        }
        Data::Item(v) => property(v, first).map(At::from_val),
    };
    let Some(mut current) = start else {
        return Walk::Missing;
    };
    for seg in rest {
        if current.is_nullish() {
            return Walk::Missing;
        }
        current = match current.step(seg.as_ref()) {
            Some(next) => next,
            None => return Walk::Missing,
        };
    }
    Walk::Found(match current {
        At::Json(v) => Val::from_json(v),
        At::Computed(v) => v,
    })
}

/// A dotted-path lookup on the data root with the same JS property walk `var` uses
/// (EXPR-1): `None` when the path names nothing. An empty segment list names nothing too:
/// an empty path never exposes the root (ENV-4).
pub(crate) fn lookup_root<'a, S: AsRef<str>>(
    root: DataRoot<'a>,
    segments: &[S],
) -> Option<Val<'a>> {
    if segments.is_empty() {
        return None;
    }
    match walk(&Data::Root(root), segments) {
        Walk::Found(Val::Undefined) | Walk::Missing => None,
        Walk::Found(v) => Some(v),
    }
}

/// `var` with a dynamic path value.
fn var_dynamic<'a>(path: &Val<'a>, data: &Data<'a, '_>) -> Walk<'a> {
    match path {
        Val::Undefined | Val::Null => Walk::Found(data.whole()),
        Val::Str(s) if s.is_empty() => Walk::Found(data.whole()),
        other => {
            let text = to_js_string(other);
            let segs: Vec<&str> = text.split('.').collect();
            walk(data, &segs)
        }
    }
}

fn or_default<'a>(found: Walk<'a>, default: Option<&'a Value>) -> Val<'a> {
    match found {
        Walk::Found(Val::Undefined) | Walk::Missing => default.map_or(Val::Null, Val::from_json),
        Walk::Found(v) => v,
    }
}

fn eval<'a>(node: &'a Node, data: &Data<'a, '_>) -> Val<'a> {
    match node {
        Node::Lit(v) => Val::from_json(v),
        Node::Array(items) => Val::Arr(items.iter().map(|i| eval(i, data)).collect()),
        Node::Var { path, default } => {
            let found = match path {
                Ok(StaticPath::Whole) => Walk::Found(data.whole()),
                Ok(StaticPath::Segments(segs)) => walk(data, segs),
                Err(dynamic) => var_dynamic(&eval(dynamic, data), data),
            };
            or_default(found, default.as_ref())
        }
        Node::Missing(args) => {
            let mut missing = Vec::new();
            for a in args {
                let key = eval(a, data);
                if or_default(var_dynamic(&key, data), None).is_nullish() {
                    missing.push(key);
                }
            }
            Val::Arr(missing)
        }
        Node::Call(op, args) => call(*op, args, data),
    }
}

fn arg<'a>(args: &'a [Node], i: usize, data: &Data<'a, '_>) -> Val<'a> {
    args.get(i).map_or(Val::Undefined, |n| eval(n, data))
}

fn fold_numbers(args: &[Node], data: &Data<'_, '_>, f: impl Fn(f64, f64) -> f64) -> f64 {
    let mut it = args.iter().map(|n| to_number(&eval(n, data)));
    let first = it.next().unwrap_or(f64::NAN);
    it.fold(first, f)
}

/// Pairwise over all operands: a<b, b<c, … (every operand is evaluated, as the reference
/// maps them all before comparing).
fn compare_chain(args: &[Node], data: &Data<'_, '_>, f: impl Fn(f64, f64) -> bool) -> bool {
    let mut holds = true;
    let mut prev: Option<f64> = None;
    for n in args {
        let x = to_number(&eval(n, data));
        if let Some(p) = prev {
            holds &= f(p, x);
        }
        prev = Some(x);
    }
    holds
}

fn call<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    match op {
        Op::Eq => Val::Bool(loose_eq(&arg(args, 0, data), &arg(args, 1, data))),
        Op::Ne => Val::Bool(!loose_eq(&arg(args, 0, data), &arg(args, 1, data))),
        Op::StrictEq => Val::Bool(strict_eq(&arg(args, 0, data), &arg(args, 1, data))),
        Op::StrictNe => Val::Bool(!strict_eq(&arg(args, 0, data), &arg(args, 1, data))),
        Op::Not => Val::Bool(!truthy(&arg(args, 0, data))),
        Op::NotNot => Val::Bool(truthy(&arg(args, 0, data))),
        Op::Gt => Val::Bool(compare_chain(args, data, |a, b| a > b)),
        Op::Ge => Val::Bool(compare_chain(args, data, |a, b| a >= b)),
        Op::Lt => Val::Bool(compare_chain(args, data, |a, b| a < b)),
        Op::Le => Val::Bool(compare_chain(args, data, |a, b| a <= b)),
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
        Op::If => {
            let mut i = 0;
            while i + 1 < args.len() {
                if truthy(&eval(&args[i], data)) {
                    return eval(&args[i + 1], data);
                }
                i += 2;
            }
            if i < args.len() {
                eval(&args[i], data)
            } else {
                Val::Null
            }
        }
        Op::In => {
            let needle = arg(args, 0, data);
            let hay = arg(args, 1, data);
            Val::Bool(match &hay {
                Val::Str(s) => s.contains(to_js_string(&needle).as_str()),
                other => other
                    .any_item(|i| same_value_zero(i, &needle))
                    .unwrap_or(false),
            })
        }
        Op::Add => Val::Num(fold_numbers(args, data, |a, b| a + b)),
        Op::Sub if args.len() == 1 => Val::Num(-to_number(&arg(args, 0, data))),
        Op::Sub => Val::Num(fold_numbers(args, data, |a, b| a - b)),
        Op::Mul => Val::Num(fold_numbers(args, data, |a, b| a * b)),
        Op::Div => Val::Num(fold_numbers(args, data, |a, b| a / b)),
        // f64 `%` is fmod: the result takes the dividend's sign, like JS.
        Op::Mod => Val::Num(fold_numbers(args, data, |a, b| a % b)),
        _ => extended(op, args, data),
    }
}

/// json-logic-js semantics for the operators outside the dialect ([`Dialect::Extended`]).
fn extended<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
    let all =
        |data: &Data<'a, '_>| -> Vec<Val<'a>> { args.iter().map(|n| eval(n, data)).collect() };
    match op {
        Op::Cat => Val::Str(Cow::Owned(all(data).iter().map(to_js_string).collect())),
        Op::Join => {
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
        Op::Substr => {
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
        Op::Merge => {
            let mut out = Vec::new();
            for v in all(data) {
                match v.array_items() {
                    Some(items) => out.extend(items.into_iter().map(|i| detach(&i))),
                    None => out.push(v),
                }
            }
            Val::Arr(out)
        }
        Op::Max | Op::Min => {
            let nums: Vec<f64> = all(data).iter().map(to_number).collect();
            let pick = if nums.iter().any(|x| x.is_nan()) {
                f64::NAN
            } else if op == Op::Max {
                nums.into_iter().fold(f64::NEG_INFINITY, f64::max)
            } else {
                nums.into_iter().fold(f64::INFINITY, f64::min)
            };
            Val::Num(pick)
        }
        Op::Map | Op::Filter | Op::All | Op::None | Op::Some => {
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
            match op {
                Op::Map => Val::Arr(items.iter().map(|i| eval(body, &Data::Item(i))).collect()),
                Op::Filter => Val::Arr(
                    items
                        .into_iter()
                        .filter(|i| truthy(&eval(body, &Data::Item(i))))
                        .collect(),
                ),
                Op::All => Val::Bool(
                    !items.is_empty() && items.iter().all(|i| truthy(&eval(body, &Data::Item(i)))),
                ),
                Op::None => Val::Bool(!items.iter().any(|i| truthy(&eval(body, &Data::Item(i))))),
                _ => Val::Bool(items.iter().any(|i| truthy(&eval(body, &Data::Item(i))))),
            }
        }
        Op::Reduce => {
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
        Op::MissingSome => {
            let need = to_number(&arg(args, 0, data));
            let keys = arg(args, 1, data)
                .array_items()
                .map(|v| v.iter().map(detach).collect::<Vec<_>>())
                .unwrap_or_default();
            let missing: Vec<Val<'a>> = keys
                .iter()
                .filter(|k| or_default(var_dynamic(k, data), None).is_nullish())
                .cloned()
                .collect();
            if (keys.len() - missing.len()) as f64 >= need {
                Val::Arr(Vec::new())
            } else {
                Val::Arr(missing)
            }
        }
        Op::Log => arg(args, 0, data),
        _ => Val::Undefined,
    }
}

/// Copy a value out of a shorter-lived borrow (items of a fresh array).
fn detach<'a>(v: &Val<'_>) -> Val<'a> {
    match v {
        Val::Undefined => Val::Undefined,
        Val::Null => Val::Null,
        Val::Bool(b) => Val::Bool(*b),
        Val::Num(x) => Val::Num(*x),
        Val::Str(s) => Val::Str(Cow::Owned(s.to_string())),
        Val::Arr(items) => Val::Arr(items.iter().map(detach).collect()),
        Val::Ref(_) | Val::Owned(_) => Val::Owned(Rc::new(v.to_json())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rule: Value, data: Value) -> Value {
        apply(&rule, &data, Dialect::W6w).expect("compiles")
    }

    #[test]
    fn dialect_divergences_from_json_logic_js() {
        assert_eq!(run(json!({"-": [10, 2, 3]}), json!({})), json!(5));
        assert_eq!(run(json!({"/": [100, 10, 2]}), json!({})), json!(5));
        assert_eq!(run(json!({"%": [17, 10, 4]}), json!({})), json!(3));
        assert_eq!(run(json!({"+": ["3px", 1]}), json!({})), Value::Null);
        assert_eq!(run(json!({"+": [null, 1]}), json!({})), json!(1));
        assert_eq!(run(json!({"<": ["a", "b"]}), json!({})), json!(false));
        assert_eq!(run(json!({">": ["10", "9"]}), json!({})), json!(true));
        assert_eq!(run(json!({">": [3, 2, 5]}), json!({})), json!(false));
        assert_eq!(run(json!({"<": [5]}), json!({})), json!(true));
        assert_eq!(
            run(json!({"var": ["x", {"+": [1, 1]}]}), json!({})),
            json!({"+": [1, 1]})
        );
        assert_eq!(
            run(json!({"missing": [["a", "b"]]}), json!({"a": 1})),
            json!([["a", "b"]])
        );
        assert_eq!(run(json!({"missing": ["a"]}), json!({"a": ""})), json!([]));
        assert_eq!(
            run(json!({"missing": ["a"]}), json!({"a": null})),
            json!(["a"])
        );
        assert_eq!(run(json!({"==": [[1, 2], "1,2"]}), json!({})), json!(true));
        assert_eq!(run(json!({"===": [[1], [1]]}), json!({})), json!(false));
        assert_eq!(run(json!({"??": [null, 0, 1]}), json!({})), json!(0));
        assert_eq!(run(json!({"in": ["1", [1]]}), json!({})), json!(false));
        assert_eq!(run(json!({"in": [1, "a1b"]}), json!({})), json!(true));
        assert_eq!(run(json!({"/": [1, 0]}), json!({})), Value::Null);
        assert_eq!(run(json!({"%": [-7, 2]}), json!({})), json!(-1));
        assert_eq!(run(json!({"*": ["5"]}), json!({})), json!(5));
        assert_eq!(
            run(json!({"var": "items.length"}), json!({"items": [1, 2, 3]})),
            json!(3)
        );
        assert_eq!(
            run(json!({"a": 1, "b": {"var": "x"}}), json!({"x": 2})),
            json!({"a": 1, "b": {"var": "x"}})
        );
    }

    #[test]
    fn refusals_name_the_operator() {
        let e = Logic::compile(&json!({"if": [false, {"cat": ["a"]}, 1]}), Dialect::W6w)
            .expect_err("cat is refused even in an untaken branch");
        assert_eq!(e.code, ExprCode::UnknownOperator);
        assert!(e.message.contains("\"cat\""));
        let e = Logic::compile(&json!({"name": "x"}), Dialect::W6w).expect_err("1-key literal");
        assert_eq!(e.operator.as_deref(), Some("name"));
        let e = Logic::compile(&json!({"+": []}), Dialect::W6w).expect_err("empty +");
        assert_eq!(e.code, ExprCode::InvalidArguments);
        assert!(Logic::compile(&json!({"cat": ["a", 1]}), Dialect::Extended).is_ok());
        // A nested `$` marker is a path lookup only in the extended dialect.
        let rule = json!({"cat": ["x", {"$": "a.b"}]});
        assert!(Logic::compile(&rule, Dialect::W6w).is_err());
        assert_eq!(
            apply(&rule, &json!({"a": {"b": 1}}), Dialect::Extended).ok(),
            Some(json!("x1"))
        );
    }

    #[test]
    fn deep_rules_are_refused_not_overflowed() {
        // Built by hand: `json!` on an expression serializes it recursively.
        let mut rule = json!(1);
        for _ in 0..1000 {
            let mut m = Map::new();
            m.insert("!".into(), Value::Array(vec![rule]));
            rule = Value::Object(m);
        }
        let e = Logic::compile(&rule, Dialect::W6w).expect_err("too deep");
        assert_eq!(e.code, ExprCode::LimitExceeded);
        // Dropping a 1000-deep value is fine; keep it from the recursive drop anyway.
        std::mem::forget(rule);
    }

    #[test]
    fn extended_dialect_operators() {
        let x = |r: Value, d: Value| apply(&r, &d, Dialect::Extended).expect("compiles");
        assert_eq!(
            x(json!({"cat": ["a", 1, null]}), json!({})),
            json!("a1null")
        );
        assert_eq!(
            x(
                json!({"join": ["-", {"var": "xs"}]}),
                json!({"xs": [1, null, "b"]})
            ),
            json!("1--b")
        );
        assert_eq!(
            x(
                json!({"map": [{"var": "xs"}, {"*": [{"var": ""}, 2]}]}),
                json!({"xs": [1, 2]})
            ),
            json!([2, 4])
        );
        assert_eq!(
            x(
                json!({"reduce": [{"var": "xs"}, {"+": [{"var": "current"}, {"var": "accumulator"}]}, 0]}),
                json!({"xs": [1, 2, 3]})
            ),
            json!(6)
        );
        assert_eq!(
            x(json!({"substr": ["jsonlogic", -5, -2]}), json!({})),
            json!("log")
        );
    }
}
