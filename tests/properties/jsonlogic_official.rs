//! The official JSONLogic test suite (tests/data/jsonlogic-tests.json, MIT, see
//! tests/data/jsonlogic-LICENSE) against the @w6w/expr dialect (EXPR-2).
//!
//! A case whose rule uses only dialect operators must give the official answer; a case
//! using any other operator must be refused with `unknown_operator` naming one of the
//! operators it uses. The classification is computed here from the rule itself, not from
//! the evaluator's answer, and the totals are pinned to what expr-notes records for the
//! reference library (196 supported, 81 refused).

use std::collections::BTreeMap;

use serde_json::Value;
use w6w_sim::__internals::expr::{Dialect, ExprCode, Logic};

/// expr-notes: the complete operator list of the dialect.
const DIALECT_OPS: [&str; 23] = [
    "var", "missing", "==", "!=", "===", "!==", "!", "!!", ">", ">=", "<", "<=", "and", "or", "??",
    "if", "?:", "in", "+", "-", "*", "/", "%",
];

fn cases() -> Vec<(Value, Value, Value)> {
    let text = include_str!("../data/jsonlogic-tests.json");
    let all: Vec<Value> = serde_json::from_str(text).expect("the vendored suite is JSON");
    all.into_iter()
        .filter_map(|c| match c {
            Value::Array(mut t) if t.len() == 3 => {
                let expected = t.pop()?;
                let data = t.pop()?;
                let rule = t.pop()?;
                Some((rule, data, expected))
            }
            _ => None,
        })
        .collect()
}

/// Every name in an operator position: one-key objects, except a `var` default, which the
/// dialect never evaluates.
fn operators(rule: &Value, out: &mut Vec<String>) {
    match rule {
        Value::Array(items) => items.iter().for_each(|i| operators(i, out)),
        Value::Object(map) if map.len() == 1 => {
            for (op, args) in map {
                out.push(op.clone());
                match (op.as_str(), args) {
                    ("var", Value::Array(a)) => {
                        if let Some(path) = a.first() {
                            operators(path, out);
                        }
                    }
                    _ => operators(args, out),
                }
            }
        }
        _ => {}
    }
}

/// Numbers compare by value (the suite writes `1` where f64 evaluation gives `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn supported_cases_pass_and_others_are_refused() {
    let cases = cases();
    assert_eq!(cases.len(), 277, "the vendored suite has 277 cases");
    let (mut supported, mut refused) = (0, 0);
    let mut refused_by_op: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (rule, data, expected) in &cases {
        let mut ops = Vec::new();
        operators(rule, &mut ops);
        let foreign: Vec<&String> = ops
            .iter()
            .filter(|o| !DIALECT_OPS.contains(&o.as_str()))
            .collect();
        match Logic::compile(rule, Dialect::W6w) {
            Ok(logic) if foreign.is_empty() => {
                supported += 1;
                let got = logic.evaluate(data);
                if !same(&got, expected) {
                    failures.push(format!("{rule} on {data}: expected {expected}, got {got}"));
                }
            }
            Err(e) if !foreign.is_empty() => {
                refused += 1;
                let op = e.operator.clone().unwrap_or_default();
                if e.code != ExprCode::UnknownOperator || !foreign.contains(&&op) {
                    failures.push(format!("{rule}: refused with {e}, uses {foreign:?}"));
                }
                if !e.message.contains(&format!("\"{op}\"")) {
                    failures.push(format!(
                        "{rule}: message {:?} does not name {op}",
                        e.message
                    ));
                }
                *refused_by_op.entry(op).or_default() += 1;
            }
            Ok(_) => failures.push(format!("{rule}: uses {foreign:?} but was accepted")),
            Err(e) => failures.push(format!("{rule}: only dialect operators but refused: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!((supported, refused), (196, 81));
    let expected: BTreeMap<String, usize> = [
        ("merge", 12),
        ("missing_some", 9),
        ("cat", 8),
        ("substr", 8),
        ("all", 8),
        ("none", 8),
        ("some", 8),
        ("reduce", 5),
        ("max", 4),
        ("min", 4),
        ("filter", 4),
        ("map", 3),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(refused_by_op, expected);
}

/// The opt-in extended dialect accepts every official case. The dialect's own operators
/// keep dialect semantics there, so the cases that rely on json-logic-js's `missing`
/// flattening (`missing` over `merge`) still differ; everything else gives the official
/// answer.
#[test]
fn extended_dialect_on_the_official_suite() {
    let (mut pass, mut differ) = (0, Vec::new());
    for (rule, data, expected) in cases() {
        let logic = Logic::compile(&rule, Dialect::Extended)
            .unwrap_or_else(|e| panic!("{rule} refused under the extended dialect: {e}"));
        let got = logic.evaluate(&data);
        if same(&got, &expected) {
            pass += 1;
        } else {
            differ.push(format!("{rule} on {data}: expected {expected}, got {got}"));
        }
    }
    let unexplained: Vec<&String> = differ
        .iter()
        .filter(|d| !(d.contains("\"missing\"") && d.contains("\"merge\"")))
        .collect();
    assert!(unexplained.is_empty(), "{unexplained:#?}");
    assert_eq!((pass, differ.len()), (275, 2), "{differ:#?}");
}
