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
use std::cell::OnceCell;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::limits::MAX_NESTING_DEPTH;
use super::number::{json_number, number_value};
use super::scope::DataRoot;
use super::value::{
    Val, canonical_index, json_to_number, json_truthy, loose_eq, object_get, property, same_str,
    same_value_zero, strict_eq, string_property, to_js_string, to_number, truthy,
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

/// The operators whose answer is always a boolean, other than the numeric comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    Eq,
    Ne,
    StrictEq,
    StrictNe,
    Not,
    NotNot,
    In,
}

/// The numeric comparisons (chained over all operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Cmp {
    #[inline]
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

/// The arithmetic operators (folded over all operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl Arith {
    #[inline]
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Arith::Add => a + b,
            Arith::Sub => a - b,
            Arith::Mul => a * b,
            Arith::Div => a / b,
            // f64 `%` is fmod: the result takes the dividend's sign, like JS.
            Arith::Mod => a % b,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Test(Test),
    Cmp(Cmp),
    Arith(Arith),
    And,
    Or,
    Coalesce,
    If,
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
        "==" => Op::Test(Test::Eq),
        "!=" => Op::Test(Test::Ne),
        "===" => Op::Test(Test::StrictEq),
        "!==" => Op::Test(Test::StrictNe),
        "!" => Op::Test(Test::Not),
        "!!" => Op::Test(Test::NotNot),
        ">" => Op::Cmp(Cmp::Gt),
        ">=" => Op::Cmp(Cmp::Ge),
        "<" => Op::Cmp(Cmp::Lt),
        "<=" => Op::Cmp(Cmp::Le),
        "and" => Op::And,
        "or" => Op::Or,
        "??" => Op::Coalesce,
        "if" | "?:" => Op::If,
        "in" => Op::Test(Test::In),
        "+" => Op::Arith(Arith::Add),
        "-" => Op::Arith(Arith::Sub),
        "*" => Op::Arith(Arith::Mul),
        "/" => Op::Arith(Arith::Div),
        "%" => Op::Arith(Arith::Mod),
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

/// One segment of a `var` path known at compile time, its array index parsed once.
#[derive(Debug, Clone)]
struct Seg {
    key: Box<str>,
    /// The canonical array index the key names (`"0"`, `"17"`), if any.
    index: Option<usize>,
}

impl Seg {
    fn new(key: &str) -> Seg {
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
enum Node {
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
struct VarCmp {
    /// Always a [`Node::Var`].
    var: Node,
    number: f64,
    /// Whether the `var` is the left operand.
    var_left: bool,
}

impl Node {
    /// A comparison node, specialised when its shape allows.
    fn compare(cmp: Cmp, args: Box<[Node]>) -> Node {
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

    fn literal(v: &Value) -> Node {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Num(json_number(n)),
            Value::String(s) => Node::Str(s.as_str().into(), Box::new(v.clone())),
            other => Node::Lit(Box::new(other.clone())),
        }
    }

    /// Needs no evaluation and is not an object literal.
    fn is_constant(&self) -> bool {
        match self {
            Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(..) => true,
            Node::Lit(v) => !v.is_object(),
            _ => false,
        }
    }
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

fn split_path(s: &str) -> Box<[Seg]> {
    s.split('.').map(Seg::new).collect()
}

/// What `var` reads from.
enum Data<'a, 'b> {
    Json(&'a Value),
    /// A run scope's data root, and the values one evaluation builds from it.
    Root(DataRoot<'a>, &'b RootCache),
    Item(&'b Val<'a>),
}

/// The data root is not one JSON value: `{"var": ""}` (and `{"var": "steps"}` over a
/// layered `steps`, D-187) build one. They are built at most once per evaluation and
/// shared, so the root is one object during a resolution, as the reference's data is:
/// `{"===": [{"var": ""}, {"var": ""}]}` is true there and here (D-242).
#[derive(Default)]
struct RootCache {
    whole: OnceCell<Rc<Value>>,
    steps: OnceCell<Rc<Value>>,
}

impl<'a> Data<'a, '_> {
    fn whole(&self) -> At<'a> {
        match self {
            Data::Json(v) => At::Json(v),
            Data::Root(r, cache) => {
                // SEC-1: `to_value` notes the read of the whole root; a later read in the
                // same evaluation shares the value and the taint mark is already set.
                let whole = cache.whole.get_or_init(|| Rc::new(r.to_value()));
                At::Computed(Val::Owned(Rc::clone(whole)))
            }
            Data::Item(v) => At::from_val((*v).clone()),
        }
    }
}

/// What `var` answers when its path names nothing and it has no default.
const NULL: &Value = &Value::Null;

/// Where a walk stands: on a borrowed JSON value (the fast, common case) or on a value
/// JS computed (`length`, a string index, an item of a fresh array). A borrowed scalar
/// means exactly what [`Val::from_json`] makes of it.
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

    /// One property read; `None` when it names nothing (expr-notes § var).
    fn step<S: Segment>(self, seg: &S) -> Option<At<'a>> {
        match self {
            At::Json(Value::Object(map)) => object_get(map, seg.as_ref()).map(At::Json),
            At::Json(Value::Array(items)) => {
                if seg.as_ref() == "length" {
                    Some(At::Computed(Val::Num(items.len() as f64)))
                } else {
                    seg.index().and_then(|i| items.get(i)).map(At::Json)
                }
            }
            At::Json(Value::String(s)) => string_property(s, seg.as_ref()).map(At::Computed),
            At::Json(_) => None,
            At::Computed(v) => property(&v, seg.as_ref()).map(At::from_val),
        }
    }

    fn is_nullish(&self) -> bool {
        match self {
            At::Json(v) => v.is_null(),
            At::Computed(v) => v.is_nullish(),
        }
    }

    fn into_val(self) -> Val<'a> {
        match self {
            At::Json(v) => Val::from_json(v),
            At::Computed(v) => v,
        }
    }

    /// [`truthy`] without building a value.
    fn truthy(&self) -> bool {
        match self {
            At::Json(v) => truthy(&Val::from_json(v)),
            At::Computed(v) => truthy(v),
        }
    }

    /// [`to_number`] without building a value.
    fn number(&self) -> f64 {
        match self {
            At::Json(v) => to_number(&Val::from_json(v)),
            At::Computed(v) => to_number(v),
        }
    }

    /// [`Val::to_json`] straight from the data, borrowing what the data holds.
    fn into_out(self) -> Cow<'a, Value> {
        match self {
            At::Json(v) => json_out(v),
            At::Computed(v) => val_out(v),
        }
    }
}

/// Walk a dotted path with JS property semantics (expr-notes § var); `None` when the path
/// names nothing or steps through null/undefined.
fn walk<'a, S: Segment>(data: &Data<'a, '_>, segments: &[S]) -> Option<At<'a>> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(data.whole());
    };
    let mut rest = rest;
    let mut current = match data {
        Data::Json(v) => At::Json(v).step(first)?,
        Data::Root(r, cache) if first.as_ref() == "steps" => {
            // D-187, D-195: an entry is read through every layer of `steps`; the whole
            // root is built (one layer's once per write, layers merged per read).
            r.note_read(segments); // SEC-1 taint tracking
            match rest.split_first() {
                Some((id, after)) => {
                    rest = after;
                    At::Json(r.step_entry(id.as_ref())?)
                }
                None => {
                    // A layered `steps` is built once per evaluation, like the whole
                    // root (D-242).
                    if let Some(whole) = cache.steps.get() {
                        return Some(At::Computed(Val::Owned(Rc::clone(whole))));
                    }
                    match r.steps_value() {
                        std::borrow::Cow::Borrowed(whole) => At::Json(whole),
                        std::borrow::Cow::Owned(whole) => {
                            let whole = cache.steps.get_or_init(|| Rc::new(whole));
                            return Some(At::Computed(Val::Owned(Rc::clone(whole))));
                        }
                    }
                }
            }
        }
        Data::Root(r, _) => {
            r.note_read(segments); // SEC-1 taint tracking
            At::Json(r.root(first.as_ref())?)
        }
        Data::Item(v) => At::from_val(property(v, first.as_ref())?),
    };
    for seg in rest {
        if current.is_nullish() {
            return None;
        }
        current = current.step(seg)?;
    }
    Some(current)
}

/// A dotted-path lookup on the data root with the same JS property walk `var` uses
/// (EXPR-1): `None` when the path names nothing. An empty segment list names nothing too:
/// an empty path never exposes the root (ENV-4).
pub(crate) fn lookup_root<'a, S: Segment>(root: DataRoot<'a>, segments: &[S]) -> Option<Val<'a>> {
    if segments.is_empty() {
        return None;
    }
    match walk(&Data::Root(root, &RootCache::default()), segments)?.into_val() {
        Val::Undefined => None,
        v => Some(v),
    }
}

/// `var` with a dynamic path value; `None` when it names nothing.
fn walk_dynamic<'a>(path: &Val<'a>, data: &Data<'a, '_>) -> Option<At<'a>> {
    match path {
        Val::Undefined | Val::Null => Some(data.whole()),
        Val::Str(s) if s.is_empty() => Some(data.whole()),
        other => {
            let text = to_js_string(other);
            let segs: Vec<&str> = text.split('.').collect();
            walk(data, &segs)
        }
    }
}

/// `var`'s answer: what the walk found, else its default, else null.
fn or_default<'a>(found: Option<At<'a>>, default: Option<&'a Value>) -> At<'a> {
    match found {
        None | Some(At::Computed(Val::Undefined)) => At::Json(default.unwrap_or(NULL)),
        Some(at) => at,
    }
}

/// Whether `missing` counts a key as missing: its path reads null or nothing.
fn is_missing<'a>(key: &Val<'a>, data: &Data<'a, '_>) -> bool {
    or_default(walk_dynamic(key, data), None).is_nullish()
}

/// The common case of a static `var`, kept apart so that it stays in registers: a walk
/// that only reads object keys and array indexes of JSON data. `Ok` is the answer (the
/// found value, else the default, else null); `Err(())` means the walk needs the general
/// path (a computed property such as `length`, a string index, a computed data value).
#[inline(always)]
fn static_var<'a>(
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

/// A `var` node's answer by the general walk (see [`static_var`] for the common case).
fn var<'a>(node: &'a Node, data: &Data<'a, '_>) -> Option<At<'a>> {
    match node {
        Node::Var(segs, default) => Some(or_default(walk(data, segs), default.as_deref())),
        Node::VarDyn(path, default) => Some(or_default(
            walk_dynamic(&eval(path, data), data),
            default.as_deref(),
        )),
        _ => None,
    }
}

/// The general evaluator: any node to a value.
fn eval<'a>(node: &'a Node, data: &Data<'a, '_>) -> Val<'a> {
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

/// `truthy(&eval(node))`, without building the value where the node's shape allows.
fn eval_bool<'a>(node: &'a Node, data: &Data<'a, '_>) -> bool {
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
fn eval_num<'a>(node: &'a Node, data: &Data<'a, '_>) -> f64 {
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

/// `Val::from_json(v).to_json()`, borrowing `v` where that copy would be identical: every
/// value but a number (whose JSON spelling [`number_value`] normalises, and which owns no
/// heap anyway).
#[inline]
fn json_out(v: &Value) -> Cow<'_, Value> {
    match v {
        Value::Number(n) => Cow::Owned(number_value(json_number(n))),
        other => Cow::Borrowed(other),
    }
}

/// `v.to_json()`, borrowing a borrowed container (which [`Val::to_json`] copies as is).
#[inline]
fn val_out(v: Val<'_>) -> Cow<'_, Value> {
    match v {
        Val::Ref(r) => Cow::Borrowed(r),
        other => Cow::Owned(other.to_json()),
    }
}

/// `eval(node).to_json()`, without building the intermediate value where the node's shape
/// allows, and borrowing what the answer names from the rule or the data: the top of
/// [`Logic::evaluate_ref`] and of the resolver's `$expr`. `into_owned()` of the answer is
/// always exactly `eval(node).to_json()`.
fn eval_out<'a>(node: &'a Node, data: &Data<'a, '_>) -> Cow<'a, Value> {
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

fn arg<'a>(args: &'a [Node], i: usize, data: &Data<'a, '_>) -> Val<'a> {
    args.get(i).map_or(Val::Undefined, |n| eval(n, data))
}

/// `if`/`?:`: the branch the conditions pick, `None` for no branch (null).
fn pick_branch<'a>(args: &'a [Node], data: &Data<'a, '_>) -> Option<&'a Node> {
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
fn compare<'a>(cmp: Cmp, args: &'a [Node], data: &Data<'a, '_>) -> bool {
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

/// [`compare`] of a static `var` and a number literal.
fn compare_var<'a>(cmp: Cmp, vc: &'a VarCmp, data: &Data<'a, '_>) -> bool {
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

/// `to_number` of a static `var` node's answer.
#[inline(always)]
fn var_number<'a>(
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

/// Folded over all operands, left to right; a lone `-` negates.
fn arith<'a>(op: Arith, args: &'a [Node], data: &Data<'a, '_>) -> f64 {
    match args {
        [only] if op == Arith::Sub => -eval_num(only, data),
        [first, rest @ ..] => rest.iter().fold(eval_num(first, data), |acc, n| {
            op.apply(acc, eval_num(n, data))
        }),
        [] => f64::NAN,
    }
}

fn test<'a>(t: Test, args: &'a [Node], data: &Data<'a, '_>) -> bool {
    match t {
        Test::Eq => loose_eq_args(args, data),
        Test::Ne => !loose_eq_args(args, data),
        Test::StrictEq => strict_eq(&arg(args, 0, data), &arg(args, 1, data)),
        Test::StrictNe => !strict_eq(&arg(args, 0, data), &arg(args, 1, data)),
        Test::Not => !args.first().is_some_and(|n| eval_bool(n, data)),
        Test::NotNot => args.first().is_some_and(|n| eval_bool(n, data)),
        Test::In => {
            // A static var looked up in a literal list of strings: compare in place.
            if let [Node::Var(segs, default), Node::Lit(hay)] = args
                && let Value::Array(items) = &**hay
                && let Ok(Value::String(needle)) = static_var(segs, default.as_deref(), data)
            {
                // SameValueZero: a string equals only an equal string.
                return items
                    .iter()
                    .any(|i| matches!(i, Value::String(s) if same_str(s, needle)));
            }
            let needle = arg(args, 0, data);
            let hay = arg(args, 1, data);
            match &hay {
                Val::Str(s) => s.contains(to_js_string(&needle).as_str()),
                other => other
                    .any_item(|i| same_value_zero(i, &needle))
                    .unwrap_or(false),
            }
        }
    }
}

/// `==` of the first two operands; a static var against a string literal (either way
/// round) compares in place when the var reads a string.
fn loose_eq_args<'a>(args: &'a [Node], data: &Data<'a, '_>) -> bool {
    match args {
        [Node::Var(segs, default), Node::Str(lit, _)]
        | [Node::Str(lit, _), Node::Var(segs, default)] => {
            if let Ok(Value::String(s)) = static_var(segs, default.as_deref(), data) {
                return same_str(s, lit);
            }
        }
        _ => {}
    }
    loose_eq(&arg(args, 0, data), &arg(args, 1, data))
}

fn call<'a>(op: Op, args: &'a [Node], data: &Data<'a, '_>) -> Val<'a> {
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
                .filter(|k| is_missing(k, data))
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
    use proptest::prelude::*;
    use serde_json::json;

    use crate::expr::RunScope;

    const OPS: &[&str] = &[
        "==",
        "!=",
        "===",
        "!==",
        "!",
        "!!",
        ">",
        ">=",
        "<",
        "<=",
        "and",
        "or",
        "??",
        "if",
        "?:",
        "in",
        "+",
        "-",
        "*",
        "/",
        "%",
        "missing",
        "var",
        "cat",
        "substr",
        "merge",
        "max",
        "min",
        "map",
        "filter",
        "reduce",
        "all",
        "none",
        "some",
        "missing_some",
        "log",
        "join",
        "$",
    ];
    const PATHS: &[&str] = &[
        "",
        "a",
        "a.b",
        "a.b.c",
        "xs",
        "xs.0",
        "xs.1",
        "xs.length",
        "s",
        "s.0",
        "s.length",
        "n",
        "f",
        "nope",
        "nope.x",
        "vars",
        "vars.a",
        "vars.a.b",
        "vars.xs.0",
        "vars.s",
        "vars.n",
        "vars.f",
        "vars.xs.length",
        "steps",
        "current",
        "accumulator",
    ];

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..25).prop_map(Value::from),
            Just(json!(0.5)),
            Just(json!(2.0)),
            Just(json!(-0.0)),
            Just(json!(1e300)),
            prop::sample::select(&["", "a", "NL", "1", "2.0", "x.y", "gold", " 7 "][..])
                .prop_map(Value::from),
        ]
    }

    fn data() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[abc]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn rule() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            3 => scalar(),
            3 => prop::sample::select(PATHS).prop_map(|p| json!({"var": p})),
            1 => (prop::sample::select(PATHS), scalar()).prop_map(|(p, d)| json!({"var": [p, d]})),
            1 => prop::collection::vec(scalar(), 0..3).prop_map(Value::Array),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                4 => (prop::sample::select(OPS), prop::collection::vec(inner.clone(), 0..4))
                    .prop_map(|(op, args)| json!({ op: args })),
                1 => (prop::sample::select(OPS), inner.clone()).prop_map(|(op, arg)| json!({ op: arg })),
                1 => prop::collection::vec(inner, 0..3).prop_map(Value::Array),
            ]
        })
    }

    proptest! {
        // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
        #![proptest_config(ProptestConfig::default())]

        /// The borrowing evaluator answers exactly what the owned one and the general
        /// evaluator (`eval(..).to_json()`) answer, on JSON data and on a run scope's data
        /// root, in both dialects.
        #[test]
        fn borrowed_and_owned_answers_agree(rule in rule(), d in data(), xs in data()) {
            let mut d = d;
            if let Value::Object(m) = &mut d {
                m.insert("xs".into(), xs);
                m.insert("s".into(), json!("str"));
                m.insert("n".into(), json!(3));
                m.insert("f".into(), json!(3.0));
            }
            let scope = RunScope::from_json(&json!({"vars": d.clone()}));
            for dialect in [Dialect::W6w, Dialect::Extended] {
                let Ok(logic) = Logic::compile(&rule, dialect) else { continue };
                let general = eval(&logic.root, &Data::Json(&d)).to_json();
                let borrowed = logic.evaluate_ref(&d);
                prop_assert_eq!(&*borrowed, &general, "{} {:?}", rule, dialect);
                prop_assert_eq!(logic.evaluate(&d), general);
                let root = scope.data_root();
                let general = logic.eval_root(root).to_json();
                prop_assert_eq!(logic.eval_root_ref(root).into_owned(), general);
            }
        }
    }

    #[test]
    fn answers_named_by_the_rule_or_the_data_are_borrowed() {
        let rule = json!({"if": [{"<": [{"var": "temp"}, 0]}, "freezing", {"var": "name"}]});
        let logic = Logic::compile(&rule, Dialect::W6w).expect("compiles");
        let cold = json!({"temp": -1, "name": "x"});
        let mild = json!({"temp": 15, "name": "x", "list": [1]});
        assert!(matches!(logic.evaluate_ref(&cold), Cow::Borrowed(v) if v == "freezing"));
        assert!(matches!(logic.evaluate_ref(&mild), Cow::Borrowed(v) if v == "x"));
        let list = Logic::compile(&json!({"var": "list"}), Dialect::W6w).expect("compiles");
        assert!(matches!(list.evaluate_ref(&mild), Cow::Borrowed(v) if v == &json!([1])));
        // Numbers are normalised (3.0 → 3), so they are computed, never borrowed.
        let n = Logic::compile(&json!({"var": "n"}), Dialect::W6w).expect("compiles");
        let float = json!({"n": 3.0});
        let three = n.evaluate_ref(&float);
        assert!(matches!(&three, Cow::Owned(v) if v == &json!(3) && v.is_u64()));
    }

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

    /// D-243: the operands `==`, `!=`, `===`, `!==`, `in`, `!` and `!!` never read are
    /// data, exactly as upstream never evaluates them; a read operand is still checked.
    #[test]
    fn unread_operands_are_data() {
        for (rule, answer) in [
            (json!({"==": [1, 1, {"cat": []}]}), json!(true)),
            (json!({"!=": [1, 1, {"+": []}]}), json!(false)),
            (json!({"===": [1, 1, {"nope": 1}]}), json!(true)),
            (json!({"!==": [1, 2, {"%": []}]}), json!(true)),
            (json!({"in": ["a", ["a"], {"cat": []}]}), json!(true)),
            (json!({"!": [0, {"cat": []}]}), json!(true)),
            (json!({"!!": [0, {"-": []}]}), json!(false)),
        ] {
            for dialect in [Dialect::W6w, Dialect::Extended] {
                assert_eq!(apply(&rule, &json!({}), dialect).ok(), Some(answer.clone()));
            }
        }
        for read in [
            json!({"==": [1, {"cat": []}]}),
            json!({"!": [{"cat": []}, 1]}),
            json!({"<": [1, 2, {"cat": []}]}),
            json!({"+": [1, 2, {"cat": []}]}),
            json!({"if": [false, 1, {"cat": []}]}),
            json!({"==": [1, {"+": []}]}),
        ] {
            assert!(Logic::compile(&read, Dialect::W6w).is_err(), "{read}");
        }
    }

    /// D-242: the data root (and a layered `steps`) is one value per evaluation.
    #[test]
    fn the_data_root_is_one_object_per_evaluation() {
        let mut scope =
            RunScope::from_json(&json!({"vars": {"a": 1}, "steps": {"s": {"output": 1}}}));
        scope.nest_steps();
        scope.publish_step("t", json!(2), None);
        assert!(scope.data().steps_layered());
        for (rule, answer) in [
            (json!({"===": [{"var": ""}, {"var": ""}]}), true),
            (json!({"==": [{"var": ""}, {"var": []}]}), true),
            (json!({"in": [{"var": ""}, [{"var": null}]]}), true),
            (json!({"===": [{"var": "steps"}, {"var": "steps"}]}), true),
            (json!({"===": [{"var": ""}, [1]]}), false),
            (json!({"==": [{"var": "steps"}, {"var": ""}]}), false),
        ] {
            let logic = Logic::compile(&rule, Dialect::W6w).expect("compiles");
            let root = scope.data_root();
            assert_eq!(
                logic.eval_root_ref(root).into_owned(),
                json!(answer),
                "{rule}"
            );
            assert_eq!(logic.eval_root(root).to_json(), json!(answer), "{rule}");
        }
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
