//! The expression properties of a generated seed: a JSONLogic expression over a small data
//! object for the `logic` op, a `with` block of markers and templates over a run scope for
//! the `resolve` op, and a template text for `parse` whose parts `serialize` is asked to
//! write back, each drawn from the seed (D-383).
//!
//! Owns: the draws ([`logic_request`], [`resolve_request`], [`parse_request`],
//! [`serialize_request`]) and [`check_expr`], which
//! holds the candidate's answer to the reference's: the dialect is the reference library's
//! behaviour (expr-notes), which the in-process reference implements and the published
//! `logic` and `resolve` cases pin, so it is the oracle here. Two answers agree when both
//! are values equal as JSON (numbers by value: `1` and `1.0` agree) or both are errors
//! (whatever their codes). Every draw is fresh, so a candidate answering from a recording
//! of the published cases meets expressions it holds no answer for.

use serde_json::{Map, Value, json};

use super::{PureChecks, SplitMix64, Violation, cap, violation};
use crate::conformance::Adapter;

/// Salt of the expression draws, so they never shift the workflow's own.
const EXPR_STREAM: u64 = 0xe59e_c7ed_0000_0002;

/// The operators of the dialect (expr-notes § Evaluator) the draw combines, with the
/// number of operands each takes (`0`: one to three).
const OPERATORS: &[(&str, usize)] = &[
    ("==", 2),
    ("!=", 2),
    ("===", 2),
    ("!==", 2),
    ("<", 2),
    (">", 2),
    ("<=", 2),
    (">=", 2),
    ("+", 0),
    ("-", 2),
    ("*", 0),
    ("/", 2),
    ("%", 2),
    ("and", 0),
    ("or", 0),
    ("??", 2),
    ("!", 1),
    ("!!", 1),
    ("if", 3),
    ("in", 2),
];

/// The data a drawn `logic` expression reads (`var`), and the keys it names.
fn data() -> Value {
    json!({"n": 7, "neg": -2, "half": 0.5, "zero": 0, "s": "ab", "digits": "10", "empty": "",
           "yes": true, "no": false, "nul": null, "list": [1, "b", 3], "obj": {"k": 2, "t": "x"}})
}

const PATHS: &[&str] = &[
    "n",
    "neg",
    "half",
    "zero",
    "s",
    "digits",
    "empty",
    "yes",
    "no",
    "nul",
    "list",
    "obj",
    "obj.k",
    "obj.t",
    "list.1",
    "absent",
    "obj.absent",
];

/// A literal operand.
fn literal(rng: &mut SplitMix64) -> Value {
    match rng.below(9) {
        0 => json!(rng.below(12) as i64 - 3),
        1 => json!([0.5, 1.5, -2.25, 10.0][rng.below(4) as usize]),
        2 => json!(["", "a", "ab", "10", "2", "x y"][rng.below(6) as usize]),
        3 => json!(rng.chance(50)),
        4 => Value::Null,
        5 => json!([1, "a"]),
        _ => json!({"var": PATHS[rng.below(PATHS.len() as u64) as usize]}),
    }
}

/// An expression at most `depth` operators deep, its `var`s reading under `root` (`""`
/// for the data itself, `"vars."` in a run scope).
fn expression(rng: &mut SplitMix64, depth: u32, root: &str) -> Value {
    if depth == 0 || rng.chance(30) {
        let mut leaf = literal(rng);
        if let Some(path) = leaf.get("var").and_then(Value::as_str) {
            leaf = json!({"var": format!("{root}{path}")});
        }
        return leaf;
    }
    let (op, arity) = OPERATORS[rng.below(OPERATORS.len() as u64) as usize];
    let n = if arity == 0 {
        1 + rng.below(3) as usize
    } else {
        arity
    };
    let operands: Vec<Value> = (0..n).map(|_| expression(rng, depth - 1, root)).collect();
    let mut m = Map::new();
    m.insert(op.to_owned(), Value::Array(operands));
    Value::Object(m)
}

/// The `logic` request of `seed`: an expression up to three operators deep over [`data`].
pub(crate) fn logic_request(seed: u64) -> Value {
    let mut rng = SplitMix64::new(seed ^ EXPR_STREAM);
    json!({"op": "logic", "logic": expression(&mut rng, 3, ""), "data": data()})
}

/// The run scope a drawn `with` block resolves against.
fn scope() -> Value {
    json!({"vars": data(), "steps": {"fetch": {"output": {"n": 3, "items": ["a", "b"]}}},
           "trigger": {"event": {"id": "e1"}}})
}

/// A rooted reference into [`scope`], present or absent.
fn reference(rng: &mut SplitMix64) -> String {
    match rng.below(5) {
        0 => "steps.fetch.output.n".into(),
        1 => "trigger.event.id".into(),
        _ => format!("vars.{}", PATHS[rng.below(PATHS.len() as u64) as usize]),
    }
}

/// One with-value: a `$` or `$expr` marker, or a string of text and `{{ }}` markers
/// (a path, a `??` or `||` chain, a literal arm).
fn with_value(rng: &mut SplitMix64) -> Value {
    match rng.below(4) {
        0 => json!({"$": reference(rng)}),
        1 => json!({"$expr": expression(rng, 2, "vars.")}),
        _ => {
            let mut text = String::new();
            for _ in 0..1 + rng.below(3) {
                text.push_str(["", "n=", " and ", "x"][rng.below(4) as usize]);
                let inner = match rng.below(4) {
                    0 => format!("{} ?? {}", reference(rng), reference(rng)),
                    1 => format!("{} || \"none\"", reference(rng)),
                    _ => reference(rng),
                };
                text.push_str(&format!("{{{{ {inner} }}}}"));
            }
            Value::String(text)
        }
    }
}

/// The `resolve` request of `seed`: a `with` block of one to four values over [`scope`].
pub(crate) fn resolve_request(seed: u64) -> Value {
    let mut rng = SplitMix64::new(seed ^ EXPR_STREAM ^ 1);
    let with: Map<String, Value> = (0..1 + rng.below(4))
        .map(|i| (format!("p{i}"), with_value(&mut rng)))
        .collect();
    json!({"op": "resolve", "with": with, "scope": scope()})
}

/// One piece of a drawn template text: plain text, each marker arm of expr-notes'
/// grammar (a path, a secret, an `=` payload as JSON and as raw text, `||` and `??`
/// chains, an empty marker), and the text the scan must keep as it is (an unterminated
/// `{{`, a stray `}}`, NBSP and U+FEFF around a path).
fn template_piece(rng: &mut SplitMix64) -> String {
    match rng.below(12) {
        0 => "plain ".into(),
        1 => format!("{{{{ {} }}}}", reference(rng)),
        2 => "{{ secrets.K }}".into(),
        3 => format!("{{{{ ={} }}}}", expression(rng, 1, "vars.")),
        4 => format!("{{{{ {} || \"x\" }}}}", reference(rng)),
        5 => format!("{{{{{}??0}}}}", reference(rng)),
        6 => "{{ =a + b }}".into(),
        7 => "{{ unterminated".into(),
        8 => "x}} y".into(),
        9 => "{{}}".into(),
        10 => "{{ vars.a ||| b }}".into(),
        _ => "\u{a0}{{\u{feff}vars.n\u{feff}}}".into(),
    }
}

/// The text and mode of `seed`'s template: one to four pieces.
fn template(seed: u64) -> (String, &'static str) {
    let mut rng = SplitMix64::new(seed ^ EXPR_STREAM ^ 2);
    let text = (0..1 + rng.below(4))
        .map(|_| template_piece(&mut rng))
        .collect();
    (text, if rng.chance(70) { "editor" } else { "render" })
}

/// The `parse` request of `seed`: its template text, in editor or render mode.
pub(crate) fn parse_request(seed: u64) -> Value {
    let (text, mode) = template(seed);
    json!({"op": "parse", "text": text, "mode": mode})
}

/// The `serialize` request of `seed`: the parts of its template text, as the dialect
/// parses them.
pub(crate) fn serialize_request(seed: u64) -> Value {
    let parsed = crate::service::handle(&parse_request(seed));
    let parts = parsed.get("ok").cloned().unwrap_or_else(|| json!([]));
    json!({"op": "serialize", "parts": parts})
}

/// Whether two answers agree: values equal by [`crate::json::json_eq`] (the expectations'
/// own equality: numbers by value), or two errors.
fn agree(candidate: &Value, reference: &Value) -> bool {
    match (candidate.get("ok"), reference.get("ok")) {
        (Some(a), Some(b)) => crate::json::json_eq(a, b),
        (None, None) => candidate.get("error").is_some() && reference.get("error").is_some(),
        _ => false,
    }
}

/// The properties of the draws, which the seed's workflow does not affect.
pub(crate) const DRAWN: [&str; 4] = ["logic", "resolve", "parse", "serialize"];

/// A seed's request for one op.
type Draw = fn(u64) -> Value;

/// The expression properties `checks` names, of `seed`, against `adapter`.
pub(crate) fn check_expr(
    adapter: &mut dyn Adapter,
    seed: u64,
    checks: PureChecks,
) -> Result<(), Violation> {
    let draws: [(bool, &'static str, Draw); 4] = [
        (checks.logic, "logic", logic_request),
        (checks.resolve, "resolve", resolve_request),
        (checks.parse, "parse", parse_request),
        (checks.serialize, "serialize", serialize_request),
    ];
    for (on, property, draw) in draws {
        if !on {
            continue;
        }
        let request = draw(seed);
        let answer = adapter
            .handle(&request)
            .map_err(|e| violation("adapter", e.to_string()))?;
        let expected = crate::service::handle(&request);
        if !agree(&answer, &expected) {
            return Err(violation(
                property,
                format!(
                    "{} answered {}; the dialect (the reference) gives {}",
                    cap(&request.to_string()),
                    cap(&answer.to_string()),
                    cap(&expected.to_string())
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of `count` draws the reference answers with a value, and the operators
    /// and with-value kinds they hold.
    fn drawn(count: u64) -> (usize, usize, std::collections::BTreeSet<String>) {
        let (mut logic_ok, mut resolve_ok) = (0, 0);
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..count {
            let logic = logic_request(seed);
            let text = logic["logic"].to_string();
            for (op, _) in OPERATORS {
                if text.contains(&format!("\"{op}\":")) {
                    seen.insert((*op).to_owned());
                }
            }
            logic_ok += usize::from(crate::service::handle(&logic).get("ok").is_some());
            for request in [parse_request(seed), serialize_request(seed)] {
                let answer = crate::service::handle(&request);
                assert!(answer.get("ok").is_some(), "{request} gives {answer}");
            }
            let resolve = resolve_request(seed);
            let text = resolve["with"].to_string();
            for kind in ["\"$\":", "\"$expr\":", "{{", "??", "||"] {
                if text.contains(kind) {
                    seen.insert(format!("with {kind}"));
                }
            }
            resolve_ok += usize::from(crate::service::handle(&resolve).get("ok").is_some());
        }
        (logic_ok, resolve_ok, seen)
    }

    #[test]
    fn the_draws_cover_the_dialect_and_mostly_evaluate() {
        let (logic_ok, resolve_ok, seen) = drawn(400);
        assert_eq!(seen.len(), OPERATORS.len() + 5, "{seen:?}");
        assert!(logic_ok >= 200, "{logic_ok} of 400 logic draws evaluate");
        assert!(resolve_ok >= 300, "{resolve_ok} of 400 with blocks resolve");
    }

    #[test]
    fn answers_agree_by_value_and_errors_by_kind() {
        assert!(agree(&json!({"ok": 1}), &json!({"ok": 1.0})));
        assert!(agree(
            &json!({"ok": {"a": [2]}}),
            &json!({"ok": {"a": [2.0]}})
        ));
        assert!(!agree(&json!({"ok": "1"}), &json!({"ok": 1})));
        assert!(!agree(
            &json!({"ok": {"a": 1, "b": 2}}),
            &json!({"ok": {"a": 1}})
        ));
        assert!(agree(
            &json!({"error": {"code": "x"}}),
            &json!({"error": {"code": "y"}})
        ));
        assert!(!agree(
            &json!({"error": {"code": "x"}}),
            &json!({"ok": null})
        ));
        assert!(!agree(
            &json!({"ok": null}),
            &json!({"error": {"code": "x"}})
        ));
    }
}
