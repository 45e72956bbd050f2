//! The JSONLogic unit tests and the generators (`rule`, `data`) the fast path's property
//! shares: refusals, dialect divergences, borrowing, the data root, extended operators.

use super::*;
use proptest::prelude::*;
use serde_json::{Map, json};

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

pub(super) fn data() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[abc]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

pub(super) fn rule() -> impl Strategy<Value = Value> {
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

/// Generated data with the members the generated rules read by name: `xs` (generated),
/// a string `s`, an integer `n` and a float `f` (shared by the properties here and in
/// `fast.rs`).
pub(super) fn with_fixed_members(mut d: Value, xs: Value) -> Value {
    if let Value::Object(m) = &mut d {
        m.insert("xs".into(), xs);
        m.insert("s".into(), json!("str"));
        m.insert("n".into(), json!(3));
        m.insert("f".into(), json!(3.0));
    }
    d
}

proptest! {
    // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
    #![proptest_config(ProptestConfig::default())]

    /// The borrowing evaluator answers exactly what the owned one and the general
    /// evaluator (`eval(..).to_json()`) answer, on JSON data and on a run scope's data
    /// root, in both dialects.
    #[test]
    fn borrowed_and_owned_answers_agree(rule in rule(), d in data(), xs in data()) {
        let d = with_fixed_members(d, xs);
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
    let mut scope = RunScope::from_json(&json!({"vars": {"a": 1}, "steps": {"s": {"output": 1}}}));
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
