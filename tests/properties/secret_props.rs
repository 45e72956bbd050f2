//! SEC-1, proved by property (issue 12 item 3): a random secret — quotes, backslashes,
//! control characters, unicode, a number, very short or very long — flowing through a random
//! workflow (templates, expressions over secret-derived outputs, a foreach over derived
//! items, calls with a derived target and input, a document looked up by it, a wait,
//! scripted failures quoting it, retries, crashes after checkpoints and inside invocations,
//! then a replay of the finished run) never reaches a recorded byte: the report, the trace
//! file, the disk store's files, an error message.
//!
//! "Never reaches" means: for a secret of 8 or more characters, no 8-character piece of it,
//! in any encoding (raw, JSON-escaped, `{:?}`-escaped), occurs in those bytes, nor in any
//! decoded JSON string or key. A shorter secret is checked whole against every decoded
//! string and key (its characters are drawn from outside the simulator's own vocabulary, so
//! a hit is a leak and not a coincidence). Case count: `PROPTEST_CASES` (default 64).

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::sim::{self, SimOptions, StoreChoice};

/// A trace sink the test can read back.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Secret {
    Text(String),
    Number(f64),
}

impl Secret {
    fn json(&self) -> Value {
        match self {
            Secret::Text(s) => json!(s),
            Secret::Number(n) => json!(n),
        }
    }
    /// How the secret reads once rendered into text.
    fn text(&self) -> String {
        match self {
            Secret::Text(s) => s.clone(),
            Secret::Number(n) => Value::from(*n).to_string(),
        }
    }
}

/// Characters that never occur in the simulator's own output, for short secrets.
const RARE: &[char] = &['ж', '☃', '€', 'ǅ', '\u{7}', '\u{1F600}', 'ß', '\u{2028}'];

fn secret() -> impl Strategy<Value = Secret> {
    let long_char = prop_oneof![
        4 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('A', 'Z'),
        1 => Just('"'),
        1 => Just('\\'),
        1 => proptest::char::range('\u{1}', '\u{1f}'),
        1 => proptest::char::range('\u{a0}', '\u{2ff}'),
        1 => Just('\u{1F511}'),
        1 => Just('/'),
        1 => Just(' '),
    ];
    prop_oneof![
        // Short (1..8), from characters the simulator never writes itself.
        2 => proptest::collection::vec(proptest::sample::select(RARE), 1..8)
            .prop_map(|c| Secret::Text(c.into_iter().collect())),
        // Ordinary to long, with quotes, backslashes, control characters and unicode.
        5 => proptest::collection::vec(long_char.clone(), 8..40)
            .prop_map(|c| Secret::Text(format!("Sk{}", c.into_iter().collect::<String>()))),
        1 => proptest::collection::vec(long_char, 2000..2100)
            .prop_map(|c| Secret::Text(format!("Lg{}", c.into_iter().collect::<String>()))),
        // A number no recorded counter or clock can spell: negative, with a fraction.
        1 => (10_000_000u64..99_999_999).prop_map(|n| Secret::Number(-(n as f64) - 0.25)),
    ]
}

#[derive(Debug, Clone)]
enum Kind {
    /// echo `{"v": "pre-{{ secrets.S }}"}`
    Template,
    /// echo an expression over the previous step's output (substr / cat).
    Derived,
    /// scripted failures whose message quotes the secret; retried, then recorded.
    Failing,
    /// `@w6w/call` with a secret target (the scenario has that workflow) and input.
    Call { target_secret: bool },
    /// `@w6w/document` get with the secret as key (missing: fails, continue-record).
    Document,
    /// `wait` of one second.
    Wait,
    /// a foreach over items derived from the previous output, body echoes the item.
    Foreach,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Template),
        3 => Just(Kind::Derived),
        2 => Just(Kind::Failing),
        1 => any::<bool>().prop_map(|t| Kind::Call { target_secret: t }),
        1 => Just(Kind::Document),
        1 => Just(Kind::Wait),
        1 => Just(Kind::Foreach),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    secret: Secret,
    kinds: Vec<Kind>,
    crash_after: Vec<u64>,
    crash_in: Option<(usize, u32)>,
    replay: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        secret(),
        proptest::collection::vec(kind(), 1..7),
        proptest::collection::vec(1u64..30, 0..3),
        proptest::option::of((0usize..7, 1u32..3)),
        any::<bool>(),
    )
        .prop_map(|(secret, kinds, crash_after, crash_in, replay)| Case {
            secret,
            kinds,
            crash_after,
            crash_in,
            replay,
        })
}

fn build(c: &Case) -> (Value, Value) {
    let secret = c.secret.json();
    let child = json!({"manifestVersion": "2", "id": "child", "name": "child",
        "variables": [{"key": "x"}],
        "steps": [{"id": "c1", "uses": {"app": "app", "action": "act"},
                   "with": {"got": {"$": "vars.x"}, "more": "c-{{ secrets.S }}"}}]});
    let mut steps = Vec::new();
    let mut edges = Vec::new();
    let mut actions = serde_json::Map::new();
    let mut prev: Option<String> = None;
    // s0 is always a template step: the source the derived steps cut pieces from.
    let kinds: Vec<Kind> = std::iter::once(Kind::Template)
        .chain(c.kinds.iter().cloned())
        .collect();
    for (i, k) in kinds.iter().enumerate() {
        let id = format!("s{i}");
        let from_prev = |path: &str| match &prev {
            Some(p) => json!({"var": format!("steps.{p}.output.{path}")}),
            None => json!({"var": "vars.none"}),
        };
        let step = match k {
            Kind::Template => json!({"id": id, "uses": {"app": "app", "action": "act"},
                "with": {"v": "pre-{{ secrets.S }}-post", "plain": "keep"}}),
            // A piece of the secret (not all of it, so only taint can catch it), and
            // values built from the previous output.
            Kind::Derived => json!({"id": id, "uses": {"app": "app", "action": "act"},
                "with": {"v": {"$expr": {"substr": [{"var": "steps.s0.output.v"}, 5, 12]}},
                         "w": {"$expr": {"cat": ["x", from_prev("v")]}},
                         "n": {"$expr": {"+": [from_prev("v"), 1]}}}}),
            Kind::Failing => {
                actions.insert(
                    id.clone(),
                    json!({"idempotent": true, "outcomes": [
                    {"error": {"code": "boom", "phase": "execute", "retryable": true,
                               "message": format!("bad secret {} here", c.secret.text())}}]}),
                );
                json!({"id": id, "uses": {"app": "app", "action": "act"},
                       "with": {"v": "{{ secrets.S }}"}, "onError": "continue-record",
                       "retry": {"maxAttempts": 2, "backoff": "fixed", "delayMs": 10}})
            }
            Kind::Call { target_secret } => {
                let target = if *target_secret {
                    json!({"kind": "workflow", "workflow": "{{ secrets.S }}"})
                } else {
                    json!({"kind": "workflow", "workflow": "child"})
                };
                json!({"id": id, "uses": {"app": "@w6w/call", "action": "call"},
                       "with": {"target": target, "input": {"x": "in-{{ secrets.S }}"}},
                       "onError": "continue-record"})
            }
            Kind::Document => json!({"id": id, "uses": {"app": "@w6w/document", "action": "get"},
                "with": {"key": "{{ secrets.S }}"}, "onError": "continue-record"}),
            Kind::Wait => json!({"id": id, "uses": {"app": "@w6w/control", "action": "wait"},
                "with": {"duration": "PT1S"}}),
            Kind::Foreach => {
                let body = format!("{id}b");
                steps.push(json!({"id": id, "uses": {"app": "@w6w/control", "action": "foreach"},
                    "with": {"items": [{"$expr": {"substr": [{"var": "steps.s0.output.v"}, 4, 9]}}, "fixed"],
                             "body": [body.clone()]}}));
                steps.push(json!({"id": body, "uses": {"app": "app", "action": "act"},
                    "with": {"item": {"$": "foreach.item"}}}));
                if let Some(p) = &prev {
                    edges.push(json!({"from": p, "to": id}));
                }
                prev = Some(id);
                continue;
            }
        };
        steps.push(step);
        if let Some(p) = &prev {
            edges.push(json!({"from": p, "to": id}));
        }
        prev = Some(id);
    }
    let mut workflows = serde_json::Map::new();
    workflows.insert("child".into(), child.clone());
    if let Secret::Text(s) = &c.secret {
        workflows.insert(s.clone(), child);
    }
    let wf = json!({"manifestVersion": "2", "id": "wf", "name": "wf",
                    "x-w6w-dialect": "extended", "steps": steps, "edges": edges});
    let mut faults = json!({"crashAfterCheckpoint": c.crash_after});
    if let Some((i, attempt)) = c.crash_in {
        // A fault some run can reach (one that never can is refused, D-121): a control's
        // invoked body step, and attempt 2 only of the retried (failing) step.
        let i = i.min(c.kinds.len());
        let reachable = match &kinds[i] {
            Kind::Wait => None,
            Kind::Foreach => Some((format!("s{i}b"), 1)),
            Kind::Failing => Some((format!("s{i}"), attempt)),
            _ => Some((format!("s{i}"), 1)),
        };
        if let Some((step, attempt)) = reachable {
            faults["crashInInvoke"] = json!([{"step": step, "attempt": attempt}]);
        }
    }
    let sc = json!({"secrets": {"S": secret}, "actions": actions, "faults": faults,
                    "workflows": workflows, "documents": {"other": "doc"}});
    (wf, sc)
}

/// Every piece of the secret a recorded byte must not hold, in every encoding.
fn needles(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    let pieces: Vec<String> = if chars.len() >= 8 {
        chars.windows(8).map(|w| w.iter().collect()).collect()
    } else {
        vec![secret.to_owned()]
    };
    let mut out = Vec::new();
    for p in pieces {
        let json = serde_json::to_string(&p).unwrap_or_default();
        let debug = format!("{p:?}");
        for e in [
            p.clone(),
            json[1..json.len() - 1].to_owned(),
            debug[1..debug.len() - 1].to_owned(),
        ] {
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    out
}

fn leaves<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|i| leaves(i, out)),
        Value::Object(m) => m.iter().for_each(|(k, i)| {
            out.push(k);
            leaves(i, out);
        }),
        _ => {}
    }
}

/// The first leak in `bytes` (one recorded artefact), described without quoting it.
fn leak(what: &str, bytes: &[u8], secret: &str) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let long = secret.chars().count() >= 8;
    if long {
        for (i, n) in needles(secret).iter().enumerate() {
            if text.contains(n.as_str()) {
                return Some(format!("{what}: raw bytes hold needle #{i}"));
            }
        }
    }
    // Decoded strings and keys of every JSON document / line in it.
    let docs: Vec<Value> = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    };
    let pieces: Vec<String> = if long {
        let c: Vec<char> = secret.chars().collect();
        c.windows(8).map(|w| w.iter().collect()).collect()
    } else {
        vec![secret.to_owned()]
    };
    for d in &docs {
        let mut l = Vec::new();
        leaves(d, &mut l);
        for s in l {
            if pieces.iter().any(|p| s.contains(p.as_str())) {
                return Some(format!(
                    "{what}: a decoded string holds a piece of the secret"
                ));
            }
        }
    }
    None
}

fn store_bytes(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p.display().to_string(), b));
            }
        }
    }
    out
}

fn check(c: &Case) -> Result<(), String> {
    let (wf_doc, sc_doc) = build(c);
    let secret = c.secret.text();
    let workflow = sim::load_workflow(&wf_doc).map_err(|e| format!("workflow: {e:?}"))?;
    let scenario = sim::load_scenario(&sc_doc).map_err(|e| format!("scenario: {e:?}"))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let options = SimOptions {
        store: StoreChoice::Dir(dir.path().to_path_buf()),
        keep_trace: false,
        ..SimOptions::default()
    };
    let trace = Shared::default();
    let mut recorded: Vec<(String, Vec<u8>)> = Vec::new();
    let result = sim::Simulation::new(&workflow, &scenario)
        .options(&options)
        .trace_sink(Some(Box::new(trace.clone())))
        .run();
    let report = match &result {
        Ok(r) => {
            recorded.push(("report".into(), r.to_json().to_string().into_bytes()));
            Some(r.run.clone())
        }
        Err(e) => {
            recorded.push(("error".into(), e.to_json().to_string().into_bytes()));
            None
        }
    };
    // The op service's answer (what `eval` prints) for the same request.
    let answer = w6w_sim::__internals::service::handle_line(
        &json!({"op": "run", "workflow": wf_doc, "scenario": sc_doc}).to_string(),
    );
    recorded.push(("eval".into(), answer.into_bytes()));
    if let (true, Some(run)) = (c.replay, report) {
        let rdir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let ropts = SimOptions {
            store: StoreChoice::Dir(rdir.path().to_path_buf()),
            keep_trace: false,
            ..SimOptions::default()
        };
        match sim::Simulation::new(&workflow, &scenario)
            .options(&ropts)
            .trace_sink(Some(Box::new(trace.clone())))
            .replay(&run, None)
        {
            Ok(r) => recorded.push(("replay report".into(), r.to_json().to_string().into_bytes())),
            Err(e) => recorded.push(("replay error".into(), e.to_json().to_string().into_bytes())),
        }
        recorded.extend(store_bytes(rdir.path()));
    }
    recorded.push(("trace".into(), trace.0.borrow().clone()));
    recorded.extend(store_bytes(dir.path()));
    for (what, bytes) in &recorded {
        if let Some(l) = leak(what, bytes, &secret) {
            return Err(l);
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_secret_reaches_a_recorded_byte(c in case()) {
        if let Err(why) = check(&c) {
            prop_assert!(false, "{why}\n{:?}", c.kinds);
        }
    }
}

/// The property's own check finds a leak where there is one (it is not vacuous).
#[test]
fn the_leak_check_sees_every_encoding() {
    let s = "Sk\"q\\w\u{1}zé-abcdef";
    for text in [
        format!("x{s}y"),
        serde_json::to_string(&json!({"m": s})).unwrap_or_default(),
        format!("{:?}", s),
        format!("prefix {}", &s[3..]),
    ] {
        assert!(leak("t", text.as_bytes(), s).is_some(), "{text}");
    }
    assert!(leak("t", b"{\"m\": \"[redacted]\"}", s).is_none());
    assert!(leak("t", "{\"k\": \"aжb\"}".as_bytes(), "ж").is_some());
}

// ---------------------------------------------------------------------------------------
// EXPR-5, the barrier in the expression layer (issue 11 item 1): whatever an expression
// does with the generic data root — a `$` path, `$expr` with `var` (the whole root via
// `{"var": ""}`, a path built at run time, `map` items), a `{{ }}` template, an ExprValue
// envelope's text / var / expr / render parts — it cannot produce a secret: for random
// secrets beside random data, no secret (nor an 8-character piece of one, in any encoding)
// appears in the resolved params, the error, their `Debug`, the scope's `Debug` or the
// `resolve` op's answer. The type-level half is the compile-fail doc test in
// `src/expr/scope.rs`.

use w6w_sim::__internals::expr::{
    CompiledWith, Dialect, Mode, Part, ResolveMode, ResolveOptions, RunScope, parse_template,
};

const SECRET_NAMES: [&str; 3] = ["K", "S", "pw"];

/// Paths over the data root, the secrets root and beyond it.
const BARRIER_PATHS: &[&str] = &[
    "",
    "vars",
    "vars.a",
    "vars.tpl",
    "vars.list.0",
    "vars.list.length",
    "steps.s1.output",
    "documents.d",
    "trigger",
    "secrets",
    "secrets.K",
    "secrets.S.length",
    "secrets.pw.0",
    "x.secrets",
    "nope",
];

/// Template pieces: markers over data and over `secrets`, chains, expression markers.
const BARRIER_TOKENS: &[&str] = &[
    "{{ ",
    " }}",
    "vars.a",
    "vars.tpl",
    "secrets.K",
    "secrets",
    "secrets.S",
    " || ",
    " ?? ",
    "=",
    "{\"var\":\"\"}",
    "{\"var\":\"secrets.K\"}",
    "{\"cat\":[\"secr\",\"ets.K\"]}",
    "{\"var\":{\"cat\":[\"secr\",\"ets.K\"]}}",
    "\"",
    "text ",
    "steps.s1.output",
];

fn barrier_path() -> impl Strategy<Value = String> {
    prop::sample::select(BARRIER_PATHS).prop_map(str::to_owned)
}

fn barrier_template() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(BARRIER_TOKENS), 1..8).prop_map(|t| t.concat())
}

/// A JSONLogic rule over the data root: `var` by literal or computed path (incl. `""`),
/// `$` inside a rule, and operators that copy, cut or stringify what they read.
fn barrier_rule() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        barrier_path().prop_map(|p| json!({"var": p})),
        Just(json!({"var": ""})),
        Just(json!({"var": null})),
        Just(json!({"var": {"cat": ["secr", "ets.K"]}})),
        Just(json!({"var": ["secrets.K", "fallback"]})),
        barrier_path().prop_map(|p| json!({"$": p})),
        Just(json!("secrets.K")),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|a| json!({"cat": a})),
            inner.clone().prop_map(|a| json!({"substr": [a, 1]})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"??": [a, b]})),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| json!({"if": [a, b, c]})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"in": [a, b]})),
            inner.clone().prop_map(|a| json!({"var": a})),
            // Extended dialect only (refused, not evaluated, under W6w).
            inner.prop_map(|a| json!({"map": [{"var": ""}, a]})),
        ]
    })
}

/// An ExprValue envelope part — every kind except a secret part.
fn barrier_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        barrier_template().prop_map(|t| json!({"kind": "text", "value": t})),
        barrier_path().prop_map(|p| json!({"kind": "var", "ref": p})),
        barrier_rule().prop_map(|r| json!({"kind": "expr", "expr": r})),
        barrier_path().prop_map(|p| json!({"kind": "render", "ref": p})),
    ]
}

fn barrier_value() -> impl Strategy<Value = Value> {
    let one = prop_oneof![
        barrier_path().prop_map(|p| json!({"$": p})),
        barrier_rule().prop_map(|r| json!({"$expr": r})),
        barrier_template().prop_map(Value::String),
        prop::collection::vec(barrier_part(), 1..4)
            .prop_map(|p| json!({"type": "expr", "parts": p})),
    ];
    one.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(Value::Array),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"x": a, "y": b})),
        ]
    })
}

/// The with value with every string that holds a secret production (its editor-mode parse
/// yields a secret part) replaced by `"x"`: the barrier is about blocks without one.
fn without_secret_parts(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let secret = parse_template(s, Mode::Editor)
                .map(|p| p.parts.iter().any(|p| matches!(p, Part::Secret(_))))
                .unwrap_or(false);
            if secret { json!("x") } else { v.clone() }
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

#[derive(Debug, Clone)]
struct BarrierCase {
    secrets: Vec<Secret>,
    with: Value,
    data: Value,
    taint: bool,
    extended: bool,
}

fn barrier_case() -> impl Strategy<Value = BarrierCase> {
    let data = prop_oneof![
        Just(json!(null)),
        (-5i64..50).prop_map(Value::from),
        "[a-z .{}]{0,6}".prop_map(Value::String),
        Just(json!("{{ secrets.K }}")),
        Just(json!([1, {"k": "v"}])),
    ];
    (
        prop::collection::vec(secret(), 3),
        prop::collection::btree_map("[a-c]", barrier_value(), 1..4),
        data,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(secrets, with, data, taint, extended)| BarrierCase {
            secrets,
            with: without_secret_parts(&Value::Object(with.into_iter().collect())),
            data,
            taint,
            extended,
        })
}

/// The scope of a case: data roots (a render template that names a secret among them) and
/// the case's secrets beside them.
fn barrier_scope(c: &BarrierCase) -> Value {
    let secrets: serde_json::Map<String, Value> = SECRET_NAMES
        .iter()
        .zip(&c.secrets)
        .map(|(n, s)| ((*n).to_owned(), s.json()))
        .collect();
    json!({
        "vars": {"a": c.data, "tpl": "r{{ secrets.K }}{{ vars.a }}", "list": ["l0", 2]},
        "steps": {"s1": {"output": {"o": c.data}}},
        "trigger": {"type": "manual"},
        "documents": {"d": "doc"},
        "secrets": secrets,
    })
}

/// Everything a resolution yields, as bytes that may not hold a secret.
fn barrier_bytes(c: &BarrierCase, with: &serde_json::Map<String, Value>) -> Vec<(String, Vec<u8>)> {
    let scope_doc = barrier_scope(c);
    let mut scope = RunScope::from_json(&scope_doc);
    if c.taint {
        scope.taint(&["steps", "s1"]);
    }
    let dialect = if c.extended {
        Dialect::Extended
    } else {
        Dialect::W6w
    };
    let options = ResolveOptions {
        mode: ResolveMode::Run,
        tested_step: None,
        dialect,
    };
    let result = CompiledWith::compile_with(with, dialect)
        .and_then(|compiled| compiled.resolve_with_options(&scope, &options));
    let outcome = match &result {
        Ok(r) => json!({"params": r.params, "secret": r.secret_paths, "redacted": r.redacted()}),
        Err(e) => json!({"code": e.code.as_str(), "message": e.message, "ref": e.reference,
                         "path": e.path, "step": e.step}),
    };
    let answer = w6w_sim::__internals::service::handle(&json!({
        "op": "resolve", "with": with, "scope": scope_doc,
        "dialect": if c.extended { "extended" } else { "w6w" },
    }));
    vec![
        ("outcome".into(), outcome.to_string().into_bytes()),
        ("outcome Debug".into(), format!("{result:?}").into_bytes()),
        ("scope Debug".into(), format!("{scope:?}").into_bytes()),
        (
            "data root".into(),
            scope.data_root().to_value().to_string().into_bytes(),
        ),
        ("resolve op".into(), answer.to_string().into_bytes()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// EXPR-5 / SEC-1: no expression over the data root yields a secret; and the same
    /// check does see one the moment a secret part is added (the check is not vacuous).
    #[test]
    fn no_expression_over_the_data_root_yields_a_secret(c in barrier_case()) {
        let Value::Object(with) = &c.with else { unreachable!("generated as an object") };
        let bytes = barrier_bytes(&c, with);
        for (what, bytes) in &bytes {
            for s in &c.secrets {
                let found = leak(what, bytes, &s.text());
                prop_assert!(found.is_none(), "{}", found.unwrap_or_default());
            }
        }
        // The probe: the same block (or, when it fails, nothing else) plus a secret part.
        let resolved = serde_json::from_slice::<Value>(&bytes[0].1)
            .is_ok_and(|o| o.get("params").is_some());
        let mut probe = if resolved { with.clone() } else { serde_json::Map::new() };
        probe.insert("probe".into(), json!("p={{ secrets.S }}"));
        let bytes = barrier_bytes(&c, &probe);
        prop_assert!(
            leak("probe", &bytes[0].1, &c.secrets[1].text()).is_some(),
            "a secret part's plaintext is in the params, and the check must see it"
        );
    }
}
