//! Unit tests of `script`: bindings, determinism, the sandbox, calls, failure kinds and hostile scripts.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

/// A host that answers calls from a map of key → answer and keeps what it was told.
#[derive(Default)]
struct Book {
    answers: BTreeMap<String, Answer>,
    calls: Vec<Call>,
    lines: Vec<(String, String, u64)>,
}

impl Host for Book {
    fn call(&mut self, call: &Call) -> Answer {
        self.calls.push(call.clone());
        for key in call.keys() {
            if let Some(a) = self.answers.get(&key) {
                return a.clone();
            }
        }
        Answer::Unscripted(format!("unscripted {}", call.callee()))
    }

    fn console(&mut self, level: &str, text: &str, at_ms: u64) {
        self.lines.push((level.into(), text.into(), at_ms));
    }
}

const START: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn woml(payload: Value, steps: Value) -> Value {
    json!({
        "context": {"payload": payload, "steps": steps},
        "attempt": {"number": 2, "maxAttempts": 3, "idempotencyKey": "run_1:a"},
        "secrets": {"TOKEN": "tok-123"},
    })
}

fn run_with(body: &str, bindings: &Value, timeout_ms: Option<u64>, book: &mut Book) -> Outcome {
    let attempt = Attempt {
        body,
        style: Style::Woml,
        bindings,
        start_ms: START,
        seed: [1, 2, 3, 4],
        timeout_ms,
    };
    run(&attempt, book)
}

fn eval(body: &str) -> Outcome {
    run_with(
        body,
        &woml(json!({"n": 1}), json!({})),
        None,
        &mut Book::default(),
    )
}

fn returned(o: &Outcome) -> &Value {
    match &o.ended {
        Ended::Returned(v) => v,
        other => panic!("expected a return, got {other:?}"),
    }
}

fn failure(o: &Outcome) -> (&'static str, String) {
    match &o.ended {
        Ended::Failed(f) => (f.kind.code(), f.message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn the_body_is_an_async_function_over_the_woml_bindings() {
    let bindings = woml(
        json!({"orderId": "o-1"}),
        json!({"validate": {"total": 42}}),
    );
    let o = run_with(
        "await null;\n\
         return {id: context.payload.orderId, alias: context.trigger === context.payload,\n\
           total: context.steps.validate.total, n: attempt.number, max: attempt.maxAttempts,\n\
           key: attempt.idempotencyKey, token: secrets.TOKEN,\n\
           run: typeof context.run, env: typeof context.env,\n\
           keys: Object.keys(context)};",
        &bindings,
        None,
        &mut Book::default(),
    );
    assert_eq!(
        returned(&o),
        &json!({"id": "o-1", "alias": true, "total": 42, "n": 2, "max": 3, "key": "run_1:a",
            "token": "tok-123", "run": "undefined", "env": "undefined",
            "keys": ["payload", "steps"]})
    );
}

#[test]
fn context_is_a_read_only_projection() {
    let o = eval(
        "'use strict';\n\
         const tries = [];\n\
         for (const f of [() => { context.payload.n = 9; }, () => { context.steps.x = 1; },\n\
                          () => { context.payload = 1; }, () => { attempt.number = 7; }]) {\n\
           try { f(); tries.push('wrote'); } catch (e) { tries.push(e.name); }\n\
         }\n\
         return {tries, n: context.payload.n, n2: attempt.number};",
    );
    assert_eq!(
        returned(&o),
        &json!({"tries": ["TypeError", "TypeError", "TypeError", "TypeError"], "n": 1, "n2": 2})
    );
}

#[test]
fn no_return_is_null_and_failure_kinds_are_classified() {
    assert_eq!(returned(&eval("const x = 1;")), &Value::Null);
    let (code, message) = failure(&eval("throw new TypeError('nope')"));
    assert_eq!(
        (code, message.as_str()),
        ("script_threw", "TypeError: nope")
    );
    assert_eq!(failure(&eval("throw 'plain'")).0, "script_threw");
    assert_eq!(
        failure(&eval("return (")).0,
        "script_threw",
        "a syntax error throws"
    );
    for body in [
        "return () => 1",
        "return 10n",
        "const a = {}; a.a = a; return a;",
        "return Symbol('s')",
    ] {
        assert_eq!(failure(&eval(body)).0, "invalid_json", "{body}");
    }
    let (code, message) = failure(&eval("return 'x'.repeat(2 * 1024 * 1024)"));
    assert_eq!(code, "size");
    assert!(message.contains("bytes"), "{message}");
    assert_eq!(
        failure(&eval(
            "let v = 1; for (let i = 0; i < 200; i++) v = [v]; return v;"
        ))
        .0,
        "size"
    );
}

#[test]
fn time_and_randomness_are_the_virtual_clock_and_the_seed() {
    let body = "const t0 = Date.now(); await new Promise(r => setTimeout(r, 250));\n\
                return {t0, t1: Date.now(), iso: new Date().toISOString(), s: Date(),\n\
                  h: new Date().getHours(), tz: new Date().getTimezoneOffset(),\n\
                  r: [Math.random(), Math.random()], perf: typeof performance,\n\
                  ctor: new (new Date().constructor)().getTime()};";
    let a = eval(body);
    let b = eval(body);
    assert_eq!(a, b, "same attempt, same outcome");
    let v = returned(&a);
    assert_eq!(v["t0"], json!(START));
    assert_eq!(v["t1"], json!(START + 250));
    assert_eq!(v["iso"], "2026-01-01T00:00:00.250Z");
    assert_eq!(v["s"], "2026-01-01T00:00:00.250Z");
    assert_eq!((v["h"].clone(), v["tz"].clone()), (json!(0), json!(0)));
    assert_eq!(v["perf"], "undefined");
    assert_eq!(v["ctor"], json!(START + 250));
    assert_eq!(a.elapsed_ms, 250);
    let other = run(
        &Attempt {
            body,
            style: Style::Woml,
            bindings: &woml(json!({}), json!({})),
            start_ms: START,
            seed: [9, 9, 9, 9],
            timeout_ms: None,
        },
        &mut Book::default(),
    );
    assert_ne!(returned(&other)["r"], v["r"], "another seed, other draws");
}

#[test]
fn the_sandbox_has_no_files_network_process_or_modules() {
    let o = eval(
        "const seen = {};\n\
         for (const n of ['require', 'process', 'Deno', 'Bun', 'std', 'os', 'XMLHttpRequest',\n\
                          'WebSocket', 'performance', 'WeakRef', 'scriptArgs', 'print']) {\n\
           seen[n] = typeof globalThis[n];\n\
         }\n\
         let imported;\n\
         try { await import('fs'); imported = 'loaded'; } catch (e) { imported = e.name; }\n\
         return {seen, imported};",
    );
    let v = returned(&o);
    for (name, kind) in v["seen"].as_object().expect("object") {
        assert_eq!(kind, "undefined", "{name} is reachable");
    }
    assert_ne!(v["imported"], "loaded");
}

#[test]
fn calls_are_answered_by_the_host_on_the_virtual_clock() {
    let mut book = Book::default();
    book.answers.insert(
        "create-order".into(),
        Answer::Output {
            output: json!({"data": {"orderId": "o-9"}}),
            latency_ms: 40,
        },
    );
    book.answers.insert(
        "GET https://x.test/a".into(),
        Answer::Output {
            output: json!({"status": 404, "body": {"missing": true}}),
            latency_ms: 10,
        },
    );
    book.answers.insert(
        "payments.charge".into(),
        Answer::Error {
            error: json!({"code": "declined", "message": "card declined"}),
            latency_ms: 5,
        },
    );
    let o = run_with(
        "const r = await services.http.request({url: 'https://x.test/o', method: 'post'}, {name: 'create-order'});\n\
         const [f, g] = await Promise.all([fetch('https://x.test/a'), fetch('https://x.test/a')]);\n\
         let err;\n\
         try { await services.payments.charge({amount: 1}); } catch (e) { err = [e.code, e.message]; }\n\
         console.log('done', {id: r.data.orderId});\n\
         return {id: r.data.orderId, ok: f.ok, status: f.status, body: await g.json(), err, t: Date.now() - 1767225600000};",
        &woml(json!({}), json!({})),
        None,
        &mut book,
    );
    assert_eq!(
        returned(&o),
        &json!({"id": "o-9", "ok": false, "status": 404, "body": {"missing": true},
            "err": ["declined", "card declined"], "t": 55})
    );
    assert_eq!(o.elapsed_ms, 55, "40, then two concurrent 10s, then 5");
    assert_eq!(
        book.calls[0].keys(),
        ["create-order", "POST https://x.test/o", "http.request"]
    );
    assert_eq!(book.calls[1].keys(), ["GET https://x.test/a"]);
    assert_eq!(
        book.calls
            .iter()
            .map(|c| c.at_ms - START)
            .collect::<Vec<_>>(),
        [0, 40, 40, 50]
    );
    assert_eq!(
        book.lines,
        [("info".into(), "done {\"id\":\"o-9\"}".into(), START + 55)]
    );
}

#[test]
fn an_unscripted_call_fails_the_attempt_and_the_script_cannot_catch_it() {
    let (code, message) = failure(&eval(
        "try { await services.crm.lookup({}, {name: 'who'}); } catch (e) { return 'caught'; }",
    ));
    assert_eq!(code, "script_threw");
    assert_eq!(message, "unscripted services.crm.lookup");
}

#[test]
fn timeouts_are_on_the_virtual_clock() {
    let bindings = woml(json!({}), json!({}));
    let o = run_with(
        "await new Promise(r => setTimeout(r, 5000)); return 1;",
        &bindings,
        Some(1000),
        &mut Book::default(),
    );
    assert_eq!(failure(&o).0, "timeout");
    assert_eq!(o.elapsed_ms, 1000);
    let o = run_with(
        "await new Promise(r => setTimeout(r, 999)); return 1;",
        &bindings,
        Some(1000),
        &mut Book::default(),
    );
    assert_eq!(returned(&o), &json!(1));
    let (code, message) = failure(&eval("await new Promise(() => {});"));
    assert_eq!(code, "timeout");
    assert!(message.contains("never settles"), "{message}");
    assert_eq!(
        failure(&eval(
            "setInterval(() => {}, 1); await new Promise(() => {});"
        ))
        .0,
        "timeout"
    );
}

/// A hostile script fails its attempt in bounded wall time and memory, never the tool.
#[test]
fn hostile_scripts_end_their_attempt() {
    for (body, kind) in [
        ("for (;;) {}", "timeout"),
        (
            "while (true) { try { for (;;) {} } catch (e) {} }",
            "timeout",
        ),
        ("await null; for (;;) {}", "timeout"),
        (
            "const a = []; for (;;) a.push('x'.repeat(1024));",
            "script_threw",
        ),
        ("let s = 'x'; for (;;) s = s + s;", "script_threw"),
        ("const f = () => f(); f();", "script_threw"),
        ("/(a+)+$/.test('a'.repeat(40) + 'b');", "timeout"),
        ("for (;;) console.log('spam');", "timeout"),
        (
            "const f = () => Promise.resolve().then(f); f(); await new Promise(() => {});",
            "timeout",
        ),
    ] {
        #[allow(clippy::disallowed_methods)] // real time: the bound this test asserts
        let started = Instant::now();
        let o = eval(body);
        assert_eq!(failure(&o).0, kind, "{body}: {o:?}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{body} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn too_many_calls_stop_the_run() {
    let o = eval("for (;;) services.a.b();");
    assert!(matches!(o.ended, Ended::OverBudget(_)), "{o:?}");
}

#[test]
fn yaml_bodies_see_earlier_steps_by_id() {
    let bindings = json!({
        "message": {"subject": "refund please"},
        "steps": {"ticket": {"id": 7}, "class": 1, "close-loop": 2},
        "attempt": {"number": 1},
    });
    let o = run(
        &Attempt {
            body: "return {id: ticket.id, via: steps.ticket.id, m: message.subject,\n\
                   dashed: steps['close-loop'], reserved: steps.class,\n\
                   ctx: typeof context, s: typeof secrets};",
            style: Style::Yaml,
            bindings: &bindings,
            start_ms: START,
            seed: [0; 4],
            timeout_ms: None,
        },
        &mut Book::default(),
    );
    assert_eq!(
        returned(&o),
        &json!({"id": 7, "via": 7, "m": "refund please", "dashed": 2, "reserved": 1,
            "ctx": "undefined", "s": "undefined"})
    );
}
