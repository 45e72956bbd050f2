//! Properties of the expression layer: the secrets barrier (EXPR-5, ENV-6, CHAIN-3), the
//! parse/serialize round trip (CHAIN-4), byte-identical passthrough (TPL-1…3), and the
//! named limits (SEC-2).
//!
//! Round-trip class, precisely: for every text T and mode M, let P = parse(T, M). When no
//! `expr` part of P holds `null` or a string that is itself valid JSON text, then
//! parse(serialize(P), M) == P. The excluded parts are the two documented fidelity losses
//! of the reference serializer: a null expr is written `{{ ="" }}` (comes back as the
//! string ""), and a string expr is written raw, so `{{ ="1" }}` (the string "1") comes
//! back as the number 1. Raw-fallback exprs (`{{ =a + b }}`) are inside the class.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use w6w_sim::__internals::expr::{
    CompiledWith, MAX_NESTING_DEPTH, MAX_TEMPLATE_BYTES, Mode, Part, ResolveCode, ResolveMode,
    RunScope, parse_root_anchored, parse_template, resolve_with, serialize_template,
};

const TOKENS: &[&str] = &[
    "{{",
    "}}",
    "{{ ",
    " }}",
    " ",
    "vars.a",
    "vars.b.c",
    "secrets.K",
    "secrets.",
    "nope.x",
    "||",
    "??",
    "|",
    "?",
    "\"x\"",
    "\"",
    "=",
    "{\"var\":\"vars.a\"}",
    "{\"var\":\"secrets.K\"}",
    "{\"or\":[{\"var\":\"nope.a\"},1]}",
    "text",
    "{",
    "}",
    "[",
    "]",
    "\\",
    "\u{FEFF}",
    "é",
    "😀",
    "1",
    "null",
    "true",
    "documents.d",
    "steps.s1.output",
    "\n",
    "a}}b",
    "\"a||b\"",
    "-0",
    "01",
];

fn template_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..10).prop_map(|t| t.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![template_text(), any::<String>(), "[{}|?\"=a-z. \\\\]{0,40}"]
}

const PATHS: &[&str] = &[
    "vars.a",
    "vars.b.c",
    "vars.list.0",
    "vars.list.length",
    "vars",
    "steps.s1.output",
    "steps.s1.output.x",
    "steps.s2.meta.app",
    "documents.d",
    "documents.n",
    "trigger.type",
    "secrets.K",
    "secrets",
    "nope.x",
    "",
];

fn path() -> impl Strategy<Value = String> {
    prop::sample::select(PATHS).prop_map(str::to_owned)
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..50).prop_map(Value::from),
        Just(json!(0.5)),
        template_text().prop_map(Value::String),
    ]
}

fn data() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn scope_json() -> impl Strategy<Value = Value> {
    (data(), data(), data(), template_text(), data(), data()).prop_map(|(a, b, s1, d, n, k)| {
        json!({
            "vars": {"a": a, "b": {"c": b}, "list": [1, "two"]},
            "steps": {"s1": {"output": s1}, "s2": {"output": null, "meta": {"app": "x"}}},
            "trigger": {"type": "manual"},
            "documents": {"d": d, "n": n},
            "secrets": {"K": k, "M": "plain-secret"},
        })
    })
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        template_text().prop_map(|t| json!({"kind": "text", "value": t})),
        path().prop_map(|p| json!({"kind": "var", "ref": p})),
        path().prop_map(|p| json!({"kind": "expr", "expr": {"var": p}})),
        path().prop_map(|p| json!({"kind": "render", "ref": p})),
        Just(json!({"kind": "other", "ref": "vars.a"})),
    ]
}

fn with_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        leaf(),
        path().prop_map(|p| json!({"$": p})),
        path().prop_map(|p| json!({"$expr": {"var": p}})),
        path().prop_map(|p| json!({"$expr": {"??": [{"var": p}, "d"]}})),
        template_text().prop_map(Value::String),
        prop::collection::vec(part(), 0..4).prop_map(|p| json!({"type": "expr", "parts": p})),
        (path(), template_text()).prop_map(|(p, t)| json!({"nested": [{"$": p}, t]})),
    ]
}

fn with_block() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-d]", with_value(), 1..5).prop_map(|m| m.into_iter().collect())
}

/// Replace every string whose editor-mode parse holds a secret part: the property is about
/// with blocks that contain no secret part.
fn without_secret_parts(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let has_secret = parse_template(s, Mode::Editor)
                .map(|p| p.parts.iter().any(|p| matches!(p, Part::Secret(_))))
                .unwrap_or(false);
            if has_secret {
                Value::from("x")
            } else {
                v.clone()
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(without_secret_parts).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), without_secret_parts(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn outcome(
    r: Result<w6w_sim::__internals::expr::Resolved, w6w_sim::__internals::expr::ResolveError>,
) -> Value {
    match r {
        Ok(r) => json!({"params": r.params, "secret": r.secret_paths}),
        Err(e) => json!({"error": e.code.as_str(), "path": e.path}),
    }
}

fn in_round_trip_class(parts: &[Part]) -> bool {
    parts.iter().all(|p| match p {
        Part::Expr {
            expr: Value::Null, ..
        } => false,
        Part::Expr {
            expr: Value::String(s),
            ..
        } => serde_json::from_str::<Value>(s).is_err(),
        _ => true,
    })
}

proptest! {
    // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
    #![proptest_config(ProptestConfig::default())]

    /// EXPR-5: for every scope S and with block without secret parts,
    /// resolve(S) == resolve({...S, secrets: {}}).
    #[test]
    fn secrets_never_reach_the_generic_root(s in scope_json(), with in with_block()) {
        let with = match without_secret_parts(&Value::Object(with)) {
            Value::Object(m) => m,
            _ => unreachable!("an object maps to an object"),
        };
        let full = RunScope::from_json(&s);
        let mut stripped = s.clone();
        stripped["secrets"] = json!({});
        let empty = RunScope::from_json(&stripped);
        let a = outcome(resolve_with(&with, &full));
        let b = outcome(resolve_with(&with, &empty));
        prop_assert_eq!(&a, &b);
        prop_assert!(!a.to_string().contains("plain-secret"));
    }

    /// ENV-6 / CHAIN-3: render mode never yields a secret part, for any text.
    #[test]
    fn render_mode_has_no_secret_production(t in any_text()) {
        let parsed = parse_template(&t, Mode::Render).expect("small texts fit the limits");
        prop_assert!(!parsed.parts.iter().any(|p| matches!(p, Part::Secret(_))));
    }

    /// CHAIN-3: editor and render mode differ only in the secret production.
    #[test]
    fn modes_differ_only_in_secret_parts(t in any_text()) {
        let e = parse_template(&t, Mode::Editor).expect("fits").parts;
        let r = parse_template(&t, Mode::Render).expect("fits").parts;
        prop_assert_eq!(e.len(), r.len());
        for (e, r) in e.iter().zip(&r) {
            match e {
                Part::Secret(name) => prop_assert_eq!(r, &Part::Var(format!("secrets.{name}"))),
                other => prop_assert_eq!(r, other),
            }
        }
    }

    /// CHAIN-4: parse ∘ serialize is the identity on the round-trip class (module docs).
    #[test]
    fn parse_serialize_round_trip(t in any_text(), render in any::<bool>()) {
        let mode = if render { Mode::Render } else { Mode::Editor };
        let parts = parse_template(&t, mode).expect("fits").parts;
        prop_assume!(in_round_trip_class(&parts));
        let again = parse_template(&serialize_template(&parts), mode).expect("fits").parts;
        prop_assert_eq!(again, parts);
    }

    /// TPL-1…3: a string that does not resolve comes back byte-identical; one whose markers
    /// are all rooted (no `=`, no secrets, empty scope) comes back different.
    #[test]
    fn passthrough_is_byte_identical(t in template_text()) {
        let scope = RunScope::new();
        let mut with = Map::new();
        with.insert("v".into(), Value::String(t.clone()));
        let parsed = parse_template(&t, Mode::Editor).expect("fits");
        let anchored = parse_root_anchored(&t).expect("fits");
        let has_marker = parsed.parts.iter().any(|p| !matches!(p, Part::Text(_)));
        let resolves = has_marker && !parsed.unterminated && anchored == parsed.parts;
        match resolve_with(&with, &scope) {
            Ok(r) if !resolves => prop_assert_eq!(&r.params["v"], &Value::String(t.clone())),
            Ok(r) => {
                let plain = !parsed.parts.iter().any(|p| matches!(p, Part::Expr { .. } | Part::Secret(_)));
                if plain {
                    prop_assert_ne!(&r.params["v"], &Value::String(t.clone()));
                }
            }
            // Only resolving strings may fail (a missing secret, a non-JSON `=` payload).
            Err(e) => prop_assert!(resolves, "{t:?} failed with {e}"),
        }
    }

    /// D-70 (TPL-1…3, issue 14 item 11): the `parse` op with `rootAnchored: true` and the
    /// `resolve` op make ONE root-anchoring decision. Through the public request service,
    /// for any string T: when the anchored parse says "literal" (one text part holding T,
    /// or `[]` for ""), resolving T gives T byte-identical; when it yields parts, resolving
    /// T equals resolving the ExprValue envelope of exactly those parts (an independent
    /// rendering path), unless resolving T fails (a missing secret, a non-JSON `=`).
    #[test]
    fn anchored_parse_and_resolve_agree(t in any_text(), s in scope_json()) {
        let parsed = w6w_sim::__internals::service::handle(
            &json!({"op": "parse", "text": t, "mode": "editor", "rootAnchored": true}),
        );
        let parts = parsed["ok"].as_array().cloned().expect("small texts parse");
        let resolved = w6w_sim::__internals::service::handle(
            &json!({"op": "resolve", "with": {"v": t}, "scope": s}),
        );
        let literal = parts.is_empty()
            || (parts.len() == 1 && parts[0] == json!({"kind": "text", "value": t}));
        if literal {
            prop_assert_eq!(&resolved["ok"]["v"], &Value::String(t.clone()), "parse said literal");
        } else if resolved.get("ok").is_some() {
            let via_parts = w6w_sim::__internals::service::handle(&json!({
                "op": "resolve",
                "with": {"v": {"type": "expr", "parts": parts}},
                "scope": s,
            }));
            prop_assert_eq!(&resolved["ok"]["v"], &via_parts["ok"]["v"], "parse gave parts");
        }
    }

    /// Compiling once and resolving many times equals resolving from scratch.
    #[test]
    fn compiled_equals_uncompiled(s in scope_json(), with in with_block()) {
        let scope = RunScope::from_json(&s);
        let once = CompiledWith::compile(&with).map(|c| (c.resolve(&scope, ResolveMode::Run), c.resolve(&scope, ResolveMode::Run)));
        match once {
            Ok((a, b)) => {
                prop_assert_eq!(outcome(a.clone()), outcome(b));
                prop_assert_eq!(outcome(a), outcome(resolve_with(&with, &scope)));
            }
            Err(e) => prop_assert_eq!(outcome(Err(e)), outcome(resolve_with(&with, &scope))),
        }
    }
}

fn deep_array(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

#[test]
fn deep_with_block_is_a_limit_error() {
    let mut with = Map::new();
    with.insert("deep".into(), deep_array(5_000));
    let e = resolve_with(&with, &RunScope::new()).expect_err("too deep");
    assert_eq!(e.code, ResolveCode::LimitExceeded);
    // A 5000-deep value's recursive drop is safe on the test thread, but keep it cheap.
    std::mem::forget(with);
}

#[test]
fn deep_jsonlogic_is_a_limit_error() {
    // Built by hand: `json!` on an expression serializes it recursively.
    let mut rule = json!({"var": "vars.a"});
    for _ in 0..5_000 {
        let mut m = Map::new();
        m.insert("!".into(), Value::Array(vec![rule]));
        rule = Value::Object(m);
    }
    let mut marker = Map::new();
    marker.insert("$expr".into(), rule);
    let mut with = Map::new();
    with.insert("x".into(), Value::Object(marker));
    let e = resolve_with(&with, &RunScope::new()).expect_err("too deep");
    assert_eq!(e.code, ResolveCode::LimitExceeded);
    std::mem::forget(with);
}

#[test]
fn deep_scope_value_in_a_template_is_a_limit_error() {
    let scope = RunScope::from_json(&json!({"vars": {"deep": deep_array(MAX_NESTING_DEPTH + 50)}}));
    let mut with = Map::new();
    with.insert("t".into(), json!("{{ vars.deep }}"));
    let e = resolve_with(&with, &scope).expect_err("too deep to stringify");
    assert_eq!(e.code, ResolveCode::LimitExceeded);
}

#[test]
fn huge_templates_are_limit_errors_and_huge_literals_are_not() {
    let mut with = Map::new();
    with.insert(
        "t".into(),
        Value::String(format!(
            "{}{{{{ vars.a }}}}",
            "x".repeat(MAX_TEMPLATE_BYTES)
        )),
    );
    let e = resolve_with(&with, &RunScope::new()).expect_err("too long");
    assert_eq!(e.code, ResolveCode::LimitExceeded);
    // A string with no `{{` is never parsed, whatever its size.
    let big = "y".repeat(4 * MAX_TEMPLATE_BYTES);
    with.insert("t".into(), Value::String(big.clone()));
    let r = resolve_with(&with, &RunScope::new()).expect("passthrough");
    assert_eq!(r.params["t"], Value::String(big));
}

#[test]
fn adversarial_scanning_is_bounded() {
    // Each unclosed `=` arm rescans to the end: without the scan budget this input is
    // quadratic. The budget turns it into a clear error instead (no timing assertion: the
    // refusal itself is the bound).
    let text = "{{ =[ }}".repeat(MAX_TEMPLATE_BYTES / 8 - 1);
    let result = parse_template(&text, Mode::Editor);
    assert!(result.is_err(), "the scan budget stops quadratic work");
}

#[test]
fn odd_unicode_never_panics() {
    for t in [
        "{{\u{FEFF}vars.a\u{FEFF}}}",
        "{{ =\"\\ud800\" }}",
        "{{ vars.😀 || \"é\" }}",
        "\u{0}{{\u{2028}vars.a\u{2029}}}",
        "{{ \"\\",
        "{{ =\"\\\" }}",
    ] {
        for mode in [Mode::Editor, Mode::Render] {
            let parts = parse_template(t, mode).expect("fits").parts;
            let _ = serialize_template(&parts);
        }
        let mut with = Map::new();
        with.insert("t".into(), Value::String(t.to_owned()));
        let _ = resolve_with(&with, &RunScope::new());
    }
}
