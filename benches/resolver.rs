//! Expression-layer throughput (issue 3 item 12).
//!
//! - `jsonlogic/*`: raw JSONLogic evaluation, ours (`Logic`, compiled once) next to
//!   datalogic-rs called directly (compiled once, data pre-parsed into its arena form, one
//!   arena per evaluation), on rules where both agree. What each side returns:
//!   - `ours/<rule>`: `Logic::evaluate_ref`, a `Cow<Value>` that borrows a string or
//!     container the answer names from the compiled rule (a literal) or the data (a
//!     `var`), and owns computed answers (booleans, numbers, built strings and arrays). It
//!     is the evaluator the engine's resolver runs for every `$expr` (`eval_root_ref`,
//!     which copies the answer once into the params it hands the action).
//!   - `datalogic/<rule>`: `Engine::evaluate`, a `&DataValue` borrowed from the arena
//!     (created and dropped per evaluation).
//!   - `owned/<rule>`: `Logic::evaluate`, the same answer as an owned `Value` (the `logic`
//!     op), for reference; no ratio row reads it.
//! - `with/*`: a realistic with block (path lookups, templates, an envelope, JSONLogic, a
//!   secret, a vendor placeholder) resolved compiled-once vs compiled on every call.
//! - `layer/*`: one `$expr` resolved through a compiled with block vs the same rule
//!   evaluated raw, so the cost of the marker layer is visible.
//! - `template/*`: one root-anchored string with ten path markers ([`TEN_MARKERS`]),
//!   compiled once and resolved as a one-param with block (issue 42 item 3):
//!   `template/ten-markers` reads no secret; `template/ten-markers-secret` is the same
//!   string with an eleventh marker, `{{ secrets.TOKEN }}`, so the cost of secret taint is
//!   visible beside it. `template/minijinja` renders the same string, compiled once, with
//!   minijinja (a pinned dev-dependency) against the same scope as JSON: the peer the
//!   issue names; both answers are checked equal before timing.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use datalogic_rs::bumpalo::Bump;
use datalogic_rs::{DataValue, Engine};
use serde_json::{Map, Value, json};
use w6w_sim::__internals::expr::{
    CompiledWith, Dialect, Logic, ResolveMode, RunScope, resolve_with,
};

fn rules() -> Vec<(&'static str, Value)> {
    vec![
        (
            "compare",
            json!({"and": [
                {">=": [{"var": "user.age"}, 18]},
                {"==": [{"var": "user.country"}, "NL"]},
                {"in": [{"var": "user.tier"}, ["gold", "silver"]]}
            ]}),
        ),
        (
            "arith",
            json!({"+": [{"*": [{"var": "order.qty"}, {"var": "order.price"}]}, {"var": "order.shipping"}]}),
        ),
        (
            "if",
            json!({"if": [{"<": [{"var": "temp"}, 0]}, "freezing", {"<": [{"var": "temp"}, 20]}, "mild", "hot"]}),
        ),
    ]
}

fn data() -> Value {
    json!({"user": {"age": 30, "country": "NL", "tier": "gold"},
           "order": {"qty": 3, "price": 9.5, "shipping": 4}, "temp": 15})
}

fn jsonlogic(c: &mut Criterion) {
    let data = data();
    let data_text = data.to_string();
    let engine = Engine::new();
    let parse_arena = Bump::new();
    let dl_data = DataValue::from_str(&data_text, &parse_arena).expect("valid JSON");
    let mut group = c.benchmark_group("jsonlogic");
    for (name, rule) in rules() {
        let ours = Logic::compile(&rule, Dialect::W6w).expect("dialect rule");
        let theirs = engine
            .compile(rule.to_string().as_str())
            .expect("valid rule");
        // Both must agree on the benchmarked rules, or the comparison means nothing.
        let dl_answer = engine
            .eval_str(rule.to_string().as_str(), data_text.as_str())
            .expect("evaluates");
        let dl_answer: Value = serde_json::from_str(&dl_answer).expect("JSON");
        assert_eq!(
            ours.evaluate(&data)
                .as_f64()
                .map_or(ours.evaluate(&data), |x| json!(x)),
            dl_answer.as_f64().map_or(dl_answer.clone(), |x| json!(x)),
            "{name}"
        );
        assert_eq!(ours.evaluate_ref(&data).into_owned(), ours.evaluate(&data));
        group.bench_function(format!("ours/{name}"), |b| {
            b.iter(|| black_box(ours.evaluate_ref(black_box(&data)).is_null()))
        });
        group.bench_function(format!("owned/{name}"), |b| {
            b.iter(|| black_box(ours.evaluate(black_box(&data))))
        });
        group.bench_function(format!("datalogic/{name}"), |b| {
            b.iter(|| {
                let arena = Bump::new();
                let out = engine
                    .evaluate(&theirs, black_box(&dl_data), &arena)
                    .map(|v| v.is_null());
                black_box(out)
            })
        });
    }
    group.finish();
}

fn scope() -> RunScope {
    let items: Vec<Value> = (0..20)
        .map(|i| json!({"title": format!("issue {i}"), "id": i}))
        .collect();
    RunScope::from_json(&json!({
        "vars": {"channel": "#ops", "env": "prod", "owner": null},
        "steps": {"fetch": {"output": {"count": 20, "items": items},
                            "meta": {"app": "linear", "version": "1.0.0", "action": "search-issues", "connectionId": null}}},
        "trigger": {"type": "schedule", "event": {"since": "2026-07-02"}},
        "documents": {},
        "secrets": {"API_KEY": "sk-live-123"}
    }))
}

fn with_block() -> Map<String, Value> {
    let v = json!({
        "channelId": {"$": "vars.channel"},
        "text": "Found {{ steps.fetch.output.count }} issues since {{ trigger.event.since }}",
        "auth": "Bearer {{ secrets.API_KEY }}",
        "summary": {"type": "expr", "parts": [{"kind": "text", "value": "Top: "}, {"kind": "var", "ref": "steps.fetch.output.items.0.title"}]},
        "urgent": {"$expr": {"and": [{">": [{"var": "steps.fetch.output.count"}, 10]}, {"==": [{"var": "vars.env"}, "prod"]}]}},
        "fallback": "{{ vars.owner ?? \"nobody\" }}",
        "vendor": "Hi {{name}}, see {{ link }}",
        "payload": {"first": {"$": "steps.fetch.output.items.0"}, "limit": 50, "tags": ["a", "b"]}
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn with(c: &mut Criterion) {
    let scope = scope();
    let block = with_block();
    let compiled = CompiledWith::compile(&block).expect("compiles");
    let mut group = c.benchmark_group("with");
    group.bench_function("compiled", |b| {
        b.iter(|| black_box(compiled.resolve(black_box(&scope), ResolveMode::Run)))
    });
    group.bench_function("uncompiled", |b| {
        b.iter(|| black_box(resolve_with(black_box(&block), black_box(&scope))))
    });
    group.finish();
}

fn layer(c: &mut Criterion) {
    let (_, rule) = rules().remove(0);
    let scope = RunScope::from_json(&json!({"vars": data()}));
    let scoped_rule: Value =
        serde_json::from_str(&rule.to_string().replace("\"user.", "\"vars.user.")).expect("JSON");
    let mut block = Map::new();
    block.insert("x".into(), json!({"$expr": scoped_rule}));
    let scoped = CompiledWith::compile(&block).expect("compiles");
    let raw = Logic::compile(&rule, Dialect::W6w).expect("compiles");
    let data = data();
    let mut group = c.benchmark_group("layer");
    group.bench_function("raw-logic", |b| {
        b.iter(|| black_box(raw.evaluate(black_box(&data))))
    });
    group.bench_function("with-$expr", |b| {
        b.iter(|| black_box(scoped.resolve(black_box(&scope), ResolveMode::Run)))
    });
    group.finish();
}

/// Ten root-anchored path markers in one string (issue 42 item 3).
const TEN_MARKERS: &str = "Hi {{ vars.name }}, order {{ steps.order.output.id }} of \
{{ steps.order.output.total }} {{ vars.currency }} ships to {{ steps.customer.output.address.city }} \
({{ steps.customer.output.address.zip }}) on {{ steps.ship.output.date }} by \
{{ steps.ship.output.carrier }}; ref {{ trigger.event.id }}, {{ vars.count }} items.";

/// The scope [`TEN_MARKERS`] reads.
fn ten_marker_scope() -> Value {
    json!({
        "vars": {"name": "Ada", "currency": "EUR", "count": 3, "env": "prod"},
        "steps": {
            "order": {"output": {"id": "A-1042", "total": 99.5, "lines": [1, 2, 3]}},
            "customer": {"output": {"address": {"city": "Utrecht", "zip": "3511 AB", "street": "Oudegracht"}}},
            "ship": {"output": {"date": "2026-08-14", "carrier": "PostNL"}}
        },
        "trigger": {"type": "webhook", "event": {"id": "evt_9"}},
        "documents": {}
    })
}

fn template(c: &mut Criterion) {
    let mut scope = RunScope::from_json(&ten_marker_scope());
    let mut secrets = Map::new();
    secrets.insert("TOKEN".into(), json!("sk-live-123"));
    scope.set_secrets(secrets);
    let one = |text: String| {
        let mut block = Map::new();
        block.insert("s".into(), Value::String(text));
        CompiledWith::compile(&block).expect("compiles")
    };
    let plain = one(TEN_MARKERS.to_owned());
    let secret = one(format!("{TEN_MARKERS} {{{{ secrets.TOKEN }}}}"));
    let answer = plain.resolve(&scope, ResolveMode::Run).expect("resolves");
    assert_eq!(
        answer.params.get("s").and_then(Value::as_str),
        Some(
            "Hi Ada, order A-1042 of 99.5 EUR ships to Utrecht (3511 AB) on 2026-08-14 by \
             PostNL; ref evt_9, 3 items."
        )
    );
    assert!(answer.secret_paths.is_empty());
    let tainted = secret.resolve(&scope, ResolveMode::Run).expect("resolves");
    assert_eq!(tainted.secret_paths, vec!["/s".to_owned()]);
    let mut env = minijinja::Environment::new();
    env.add_template("t", TEN_MARKERS).expect("valid minijinja");
    let peer = env.get_template("t").expect("added");
    // Converted once, as our side's scope is built once; a clone is a reference count.
    let context = minijinja::Value::from(minijinja::value::Serde(ten_marker_scope()));
    assert_eq!(
        peer.render(context.clone()).expect("renders"),
        answer
            .params
            .get("s")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        "the peer renders what we resolve"
    );
    let mut group = c.benchmark_group("template");
    group.bench_function("minijinja", |b| {
        b.iter(|| black_box(peer.render(black_box(context.clone()))))
    });
    group.bench_function("ten-markers", |b| {
        b.iter(|| black_box(plain.resolve(black_box(&scope), ResolveMode::Run)))
    });
    group.bench_function("ten-markers-secret", |b| {
        b.iter(|| black_box(secret.resolve(black_box(&scope), ResolveMode::Run)))
    });
    group.finish();
}

criterion_group!(benches, jsonlogic, with, layer, template);
criterion_main!(benches);
