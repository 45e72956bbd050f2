//! The YAML step/action front-end (`yaml-steps.txt`; clauses YML-1…13).
//!
//! Owns: checking a YAML document (parsed by `yaml_tree`, positions kept) against every
//! MUST of the text with a stable code at `line:column` and a JSON Pointer, and the import
//! into w6w: list order → implicit chain (YML-4); `connector.action` → `uses` with the
//! arguments as `with` (checked against the manifest's input schema, YML-3); `run` /
//! `agent` → a carried body whose outcome is scripted by step id; `optional` →
//! `onError: "continue-record"` (YML-11); `retry` → the step's RetryPolicy, else the
//! manifest's default (YML-12); `connection` → `uses.connection`; `when` → a synthetic
//! `@w6w/control` `if` guard that skips the step (YML-13, docs/decisions.md D-36).
//! Constructs and modifiers whose runtime meaning the text does not define are refused
//! with `unsupported_construct` at their line.
//! Invariant: only the fixed shape `steps[i].<id>.<body>` is walked; nothing recurses into
//! user data except the bounded conversions of `yaml_tree`.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use super::manifest::Manifest;
use super::yaml_tree::{self, N, Y};
use super::{Dialect, Imported, Note, Pos, Problem, StepInfo, StepKind, parse_duration_ms};
use crate::model::pointer_token;

/// The app carried `run` and `agent` bodies name; their outcomes are scripted by step id.
pub const BODY_APP: &str = "yaml";
/// Prefix of the synthetic guard steps (YML-13).
pub const GUARD_PREFIX: &str = "when__";

const CONSTRUCTS: [&str; 13] = [
    "value", "render", "run", "agent", "call", "route", "choose", "for_each", "repeat", "parallel",
    "wait_for", "wait", "stop",
];
const CONSTRUCT_KEYS: [&str; 20] = [
    "with",
    "match",
    "code",
    "network",
    "cases",
    "else",
    "then",
    "steps",
    "as",
    "max",
    "concurrency",
    "on_error",
    "for",
    "until",
    "every",
    "goal",
    "tools",
    "returns",
    "budget",
    "on_exhausted",
];
/// Construct keys each imported body may carry (the rest belong to constructs the text
/// does not define here).
const RUN_KEYS: [&str; 2] = ["code", "network"];
const AGENT_KEYS: [&str; 5] = ["goal", "tools", "returns", "budget", "on_exhausted"];

const FULL: [&str; 9] = [
    "action", "run", "agent", "call", "route", "choose", "for_each", "parallel", "repeat",
];

/// YML-7: the modifier table — which body kinds each modifier is permitted on.
fn permitted(modifier: &str) -> Option<&'static [&'static str]> {
    Some(match modifier {
        "when" => &[
            "action", "value", "render", "run", "agent", "call", "route", "choose", "for_each",
            "repeat", "parallel", "wait_for", "wait", "stop",
        ],
        "timeout" => &[
            "action", "run", "agent", "call", "for_each", "parallel", "repeat",
        ],
        "retry" => &["action", "run"],
        "idempotency_key" | "undo" | "on_unknown" | "reconcile" | "connection" => &["action"],
        "must_succeed" | "optional" => &FULL,
        "recovery" => &["route", "choose", "for_each", "parallel", "repeat"],
        _ => return None,
    })
}

struct Ctx<'m> {
    manifest: Option<&'m Manifest>,
    problems: Vec<Problem>,
    notes: Vec<Note>,
}

impl Ctx<'_> {
    fn problem(
        &mut self,
        code: &'static str,
        clause: &'static str,
        path: impl Into<String>,
        pos: Pos,
        message: impl Into<String>,
    ) {
        super::push_problem(
            &mut self.problems,
            Problem::new(code, Some(clause), path, pos, message),
        );
    }
}

/// The steps so far, as YML-6 names them: `(id, body kind)` in list order (a duplicate
/// too), and by id, so that each lookup is a hash probe rather than a scan (D-218).
#[derive(Default)]
struct Ids {
    all: Vec<(String, &'static str)>,
    /// Each id, and whether any step of that id was imported.
    by_id: HashMap<String, bool>,
}

impl Ids {
    fn push(&mut self, id: String, kind: &'static str) {
        let imported = self.by_id.entry(id.clone()).or_insert(false);
        *imported |= kind == "imported";
        self.all.push((id, kind));
    }

    fn contains(&self, id: &str) -> bool {
        #[cfg(test)]
        super::work::add(1);
        self.by_id.contains_key(id)
    }

    /// Whether a step of this id was imported (a `when` may read its value).
    fn imported(&self, id: &str) -> bool {
        #[cfg(test)]
        super::work::add(1);
        self.by_id.get(id).copied().unwrap_or(false)
    }
}

/// A checked step, ready to be emitted.
struct Checked {
    id: String,
    pos: Pos,
    kind: StepKind,
    json: Map<String, Value>,
    guard: Option<Value>,
    max_attempts: u64,
}

/// Parse, check and import a YAML document.
pub fn import(text: &str, manifest: Option<&Manifest>) -> Result<Imported, Vec<Problem>> {
    let root = yaml_tree::parse(text).map_err(|p| vec![p])?;
    let mut cx = Ctx {
        manifest,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    let N::Map(top) = &root.node else {
        return Err(vec![Problem::new(
            "invalid_document",
            Some("YML-1"),
            "",
            root.pos,
            format!(
                "a YAML workflow is a map whose steps key holds the ordered list, not {}",
                root.kind()
            ),
        )]);
    };
    let mut meta = Map::new();
    let mut steps = None;
    for (k, kpos, v) in top {
        match k.as_str() {
            "steps" => steps = Some(v),
            "id" | "name" | "description" => match v.as_str() {
                Some(s) => {
                    meta.insert(k.clone(), json!(s));
                }
                None => cx.problem(
                    "invalid_value",
                    "YML-1",
                    format!("/{}", pointer_token(k)),
                    v.pos,
                    format!("{k} must be a string, not {}", v.kind()),
                ),
            },
            other => cx.problem(
                "unsupported_construct",
                "YML-1",
                format!("/{}", pointer_token(other)),
                *kpos,
                format!(
                    "top-level key {other:?} at line {}: yaml-steps.txt does not define it, so it \
                     cannot be carried to w6w (nothing is dropped silently)",
                    kpos.line
                ),
            ),
        }
    }
    let Some(steps) = steps else {
        cx.problem(
            "missing_steps",
            "YML-1",
            "/steps",
            root.pos,
            "a YAML workflow needs a steps key holding the ordered list of steps",
        );
        return Err(cx.problems);
    };
    let N::Seq(items) = &steps.node else {
        cx.problem(
            "invalid_steps",
            "YML-1",
            "/steps",
            steps.pos,
            format!("steps is an ordered list, not {}", steps.kind()),
        );
        return Err(cx.problems);
    };
    if items.is_empty() {
        cx.problem(
            "invalid_steps",
            "YML-1",
            "/steps",
            steps.pos,
            "steps holds at least one step",
        );
    }
    let mut checked: Vec<Checked> = Vec::new();
    let mut ids = Ids::default();
    for (i, item) in items.iter().enumerate() {
        if let Some(c) = check_step(&mut cx, i, item, &ids) {
            ids.push(c.id.clone(), "imported");
            checked.push(c);
        } else if let Some((id, kind)) = step_identity(item) {
            ids.push(id, kind);
        }
    }
    unreadable_paths(&mut cx, items, &ids.all);
    if !cx.problems.is_empty() {
        return Err(cx.problems);
    }
    let (workflow_steps, edges, infos) = emit(&mut cx, checked)?;
    let mut workflow = json!({
        "manifestVersion": "2",
        "id": meta.get("id").and_then(Value::as_str).unwrap_or("yaml_workflow"),
        "name": meta.get("name").and_then(Value::as_str).unwrap_or("yaml-workflow"),
        "steps": workflow_steps,
        "x-w6w-source": {"dialect": "yaml"},
    });
    if let Value::Object(m) = &mut workflow {
        if let Some(d) = meta.get("description") {
            m.insert("description".into(), d.clone());
        }
        if let Some(e) = edges {
            m.insert("edges".into(), e);
        }
    }
    if cx.manifest.is_none() && infos.iter().any(|s| s.kind == StepKind::Action) {
        cx.notes.push(Note::new(
            "/steps",
            steps.pos,
            "no manifest given (--manifest FILE or the scenario's manifest key): action \
             arguments were not checked against input schemas (YML-3)",
        ));
    }
    Ok(Imported {
        dialect: Dialect::Yaml,
        workflow,
        notes: cx.notes,
        steps: infos,
    })
}

/// `(id, body kind)` of a step element, for YML-6 even when the step is not importable.
fn step_identity(item: &Y) -> Option<(String, &'static str)> {
    let N::Map(entries) = &item.node else {
        return None;
    };
    let [(id, _, body)] = entries.as_slice() else {
        return None;
    };
    let N::Map(keys) = &body.node else {
        return None;
    };
    let kind = keys.iter().find_map(|(k, _, _)| {
        CONSTRUCTS
            .iter()
            .find(|c| **c == k.as_str())
            .copied()
            .or_else(|| k.contains('.').then_some("action"))
    })?;
    Some((id.clone(), kind))
}

fn check_step(cx: &mut Ctx<'_>, i: usize, item: &Y, earlier: &Ids) -> Option<Checked> {
    let before = cx.problems.len();
    let path = format!("/steps/{i}");
    let N::Map(entries) = &item.node else {
        cx.problem(
            "invalid_step",
            "YML-1",
            path,
            item.pos,
            format!(
                "a step is a map with exactly one key, the step's id; not {}",
                item.kind()
            ),
        );
        return None;
    };
    let [(id, id_pos, body)] = entries.as_slice() else {
        cx.problem(
            "invalid_step",
            "YML-1",
            path,
            item.pos,
            format!(
                "a step is a map with exactly one key, the step's id; this one has {} keys",
                entries.len()
            ),
        );
        return None;
    };
    let path = format!("{path}/{}", pointer_token(id));
    if id.is_empty() || id.contains('.') || id.trim() != id {
        cx.problem(
            "invalid_id",
            "YML-1",
            path.clone(),
            *id_pos,
            format!("step id {id:?} must be non-empty, without dots or surrounding spaces"),
        );
    } else if id.starts_with(GUARD_PREFIX) {
        cx.problem(
            "invalid_id",
            "YML-1",
            path.clone(),
            *id_pos,
            format!(
                "step ids starting with {GUARD_PREFIX:?} are reserved for imported when guards"
            ),
        );
    } else if earlier.contains(id) {
        cx.problem(
            "duplicate_id",
            "YML-1",
            path.clone(),
            *id_pos,
            format!("step id {id:?} is already used; each step's id names it in the run record"),
        );
    }
    let N::Map(keys) = &body.node else {
        cx.problem(
            "invalid_body",
            "YML-1",
            path,
            body.pos,
            format!(
                "a step body is a map (an action call or a construct, with modifiers), not {}",
                body.kind()
            ),
        );
        return None;
    };
    // The body key: a construct keyword or connector.action.
    let bodies: Vec<&(String, Pos, Y)> = keys
        .iter()
        .filter(|(k, _, _)| CONSTRUCTS.contains(&k.as_str()) || k.contains('.'))
        .collect();
    let (body_key, body_pos, body_value) = match bodies.as_slice() {
        [one] => (one.0.as_str(), one.1, &one.2),
        [] => {
            cx.problem(
                "invalid_body",
                "YML-2",
                path,
                body.pos,
                "the step has no body: name connector.action or a construct (value, render, run, \
                 agent, call, route, choose, for_each, repeat, parallel, wait_for, wait, stop)",
            );
            return None;
        }
        [_, second, ..] => {
            cx.problem(
                "invalid_body",
                "YML-2",
                format!("{path}/{}", pointer_token(&second.0)),
                second.1,
                format!(
                    "a step has exactly one body; {:?} is a second one",
                    second.0
                ),
            );
            return None;
        }
    };
    let kind = if CONSTRUCTS.contains(&body_key) {
        body_key
    } else {
        "action"
    };
    let body_path = format!("{path}/{}", pointer_token(body_key));
    // Modifiers (YML-7, YML-8, YML-10) and construct keys (YML-9).
    let mut modifiers: Vec<(&str, Pos, &Y)> = Vec::new();
    let mut construct_keys: Vec<(&str, Pos, &Y)> = Vec::new();
    for (k, kpos, v) in keys {
        if k == body_key {
            continue;
        }
        // Built only for a problem: a long step id is not copied once per key.
        let kpath = || format!("{path}/{}", pointer_token(k));
        if let Some(allowed) = permitted(k) {
            if allowed.contains(&kind) {
                modifiers.push((k, *kpos, v));
            } else if k == "timeout" && matches!(kind, "wait" | "wait_for") {
                cx.problem(
                    "modifier_not_permitted",
                    "YML-10",
                    kpath(),
                    *kpos,
                    format!("{kind} does not accept the timeout modifier (timeout is a key of the wait_for construct itself)"),
                );
            } else {
                cx.problem(
                    "modifier_not_permitted",
                    "YML-7",
                    kpath(),
                    *kpos,
                    format!(
                        "the modifier {k} is permitted on {} — not on {}",
                        allowed.join(", "),
                        describe(kind)
                    ),
                );
            }
        } else if CONSTRUCT_KEYS.contains(&k.as_str()) {
            construct_keys.push((k, *kpos, v));
        } else {
            cx.problem(
                "unknown_key",
                "YML-9",
                kpath(),
                *kpos,
                format!("{k:?} is neither a body, a modifier nor a construct key"),
            );
        }
    }
    let has = |m: &str| modifiers.iter().find(|(k, _, _)| *k == m).copied();
    if let (Some(_), Some((_, pos, _))) = (has("optional"), has("must_succeed")) {
        cx.problem(
            "optional_and_must_succeed",
            "YML-8",
            format!("{path}/must_succeed"),
            pos,
            "a step cannot declare both optional and must_succeed",
        );
    }
    for (m, mpos, v) in &modifiers {
        let mpath = format!("{path}/{}", pointer_token(m));
        match *m {
            "optional" | "must_succeed" if !matches!(v.node, N::Bool(_)) => cx.problem(
                "invalid_modifier",
                "YML-11",
                mpath,
                v.pos,
                format!("{m} is a boolean, not {}", v.kind()),
            ),
            "timeout" if !is_duration_or_expression(v) => cx.problem(
                "invalid_modifier",
                "YML-10",
                mpath,
                v.pos,
                "timeout takes a literal duration (an integer with ms, s, m or h) or an expression ({{ … }})",
            ),
            "connection" if v.as_str().is_none_or(str::is_empty) => cx.problem(
                "invalid_modifier",
                "YML-12",
                mpath,
                v.pos,
                format!("connection names a connection (a non-empty string), not {}", v.kind()),
            ),
            "undo" | "on_unknown" | "reconcile" | "recovery" => cx.problem(
                "unsupported_construct",
                "YML-7",
                mpath,
                *mpos,
                format!(
                    "the modifier {m} at line {}: yaml-steps.txt does not define its runtime \
                     meaning, so it cannot be imported or run",
                    mpos.line
                ),
            ),
            _ => {}
        }
    }
    // The body itself.
    let step_kind = match kind {
        "action" => {
            check_action(cx, body_key, body_pos, body_value, &body_path);
            for (k, kpos, _) in &construct_keys {
                cx.problem(
                    "unsupported_construct",
                    "YML-9",
                    format!("{path}/{}", pointer_token(k)),
                    *kpos,
                    format!("the construct key {k} does not belong to an action call"),
                );
            }
            StepKind::Action
        }
        "run" | "agent" => {
            let allowed: &[&str] = if kind == "run" {
                &RUN_KEYS
            } else {
                &AGENT_KEYS
            };
            for (k, kpos, _) in &construct_keys {
                if !allowed.contains(k) {
                    cx.problem(
                        "unsupported_construct",
                        "YML-9",
                        format!("{path}/{}", pointer_token(k)),
                        *kpos,
                        format!("the construct key {k} does not belong to {kind}"),
                    );
                }
            }
            if kind == "run" {
                StepKind::Run
            } else {
                StepKind::Agent
            }
        }
        other => {
            cx.problem(
                "unsupported_construct",
                "YML-5",
                body_path.clone(),
                body_pos,
                format!(
                    "{other} at line {}: yaml-steps.txt says what it binds but not how it runs, \
                     so it cannot be imported or run (nothing is dropped silently)",
                    body_pos.line
                ),
            );
            return None;
        }
    };
    let retry = has("retry").and_then(|(_, _, v)| retry_policy(cx, v, &format!("{path}/retry")));
    if cx.problems.len() > before {
        return None;
    }
    // Build the w6w step.
    let mut s = Map::new();
    s.insert("id".into(), json!(id));
    let mut x = Map::new();
    x.insert("line".into(), json!(id_pos.line));
    let max_attempts;
    match step_kind {
        StepKind::Action => {
            let (connector, action) = body_key.split_once('.').unwrap_or((body_key, ""));
            let mut uses = json!({"app": connector, "action": action});
            if let (Some((_, _, c)), Value::Object(u)) = (has("connection"), &mut uses) {
                u.insert("connection".into(), c.to_json());
            }
            s.insert("uses".into(), uses);
            let args = match &body_value.node {
                N::Null => Value::Object(Map::new()),
                _ => body_value.to_json(),
            };
            if contains_template(&args) {
                cx.notes.push(Note::new(
                    body_path.clone(),
                    body_pos,
                    "an argument holds {{ … }}: w6w resolves it only when every marker names a w6w \
                     scope root (vars, steps, trigger, secrets, documents); otherwise it reaches the \
                     action as text",
                ));
            }
            s.insert("with".into(), args);
            let policy = retry.or_else(|| {
                cx.manifest
                    .and_then(|m| m.action(body_key))
                    .and_then(|a| a.retry.clone())
            });
            max_attempts = attempts_of(policy.as_ref());
            if let Some(p) = policy {
                s.insert("retry".into(), p);
            }
        }
        _ => {
            let action = if step_kind == StepKind::Run {
                "run"
            } else {
                "agent"
            };
            s.insert("uses".into(), json!({"app": BODY_APP, "action": action}));
            x.insert(action.into(), body_value.to_json());
            for (k, _, v) in &construct_keys {
                x.insert((*k).to_owned(), v.to_json());
            }
            max_attempts = attempts_of(retry.as_ref());
            if let Some(p) = retry {
                s.insert("retry".into(), p);
            }
        }
    }
    if let Some((_, _, v)) = has("optional")
        && v.node == N::Bool(true)
    {
        s.insert("onError".into(), json!("continue-record"));
    }
    for (m, mpos, v) in &modifiers {
        match *m {
            "must_succeed" | "optional" | "when" => {
                x.insert((*m).to_owned(), v.to_json());
            }
            "timeout" | "idempotency_key" => {
                x.insert((*m).to_owned(), v.to_json());
                cx.notes.push(Note::new(
                    format!("{path}/{m}"),
                    *mpos,
                    format!(
                        "{m} is carried in x-yaml but the simulator does not enforce it: step \
                         outcomes are scripted by step id (script a timeout as an error outcome)"
                    ),
                ));
            }
            _ => {}
        }
    }
    s.insert("x-yaml".into(), Value::Object(x));
    let guard = match has("when") {
        None => None,
        Some((_, wpos, v)) => match guard_condition(v, earlier) {
            Ok(c) => Some(c),
            Err(message) => {
                cx.problem(
                    "unsupported_construct",
                    "YML-13",
                    format!("{path}/when"),
                    wpos,
                    message,
                );
                return None;
            }
        },
    };
    Some(Checked {
        id: id.clone(),
        pos: *id_pos,
        kind: step_kind,
        json: s,
        guard,
        max_attempts,
    })
}

/// D-36: the `if` condition a `when` becomes. yaml-steps.txt does not define its
/// expression language, so only what keeps its meaning imports: a boolean literal, or a
/// single `{{ path }}` into an earlier step's value (`steps.<id>.output…`), `vars` or
/// `trigger` — as a type-preserving `$` marker, never as rendered text ("false" would be
/// truthy). Anything else is refused rather than guessed.
fn guard_condition(v: &Y, earlier: &Ids) -> Result<Value, String> {
    if let N::Bool(b) = v.node {
        return Ok(json!(b));
    }
    let refuse = || {
        format!(
            "when at line {}: only true, false or a single {{{{ path }}}} into an earlier step, vars \
             or trigger can be imported (yaml-steps.txt does not define the expression language)",
            v.pos.line
        )
    };
    let text = v.as_str().ok_or_else(refuse)?.trim();
    let inner = text
        .strip_prefix("{{")
        .and_then(|t| t.strip_suffix("}}"))
        .map(str::trim)
        .ok_or_else(refuse)?;
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if inner.is_empty() || !inner.chars().all(ok_char) || inner.contains("..") {
        return Err(refuse());
    }
    let (root, rest) = inner.split_once('.').unwrap_or((inner, ""));
    let path = if matches!(root, "vars" | "trigger") {
        inner.to_owned()
    } else if earlier.imported(root) {
        if rest.is_empty() {
            format!("steps.{root}.output")
        } else {
            format!("steps.{root}.output.{rest}")
        }
    } else {
        return Err(refuse());
    };
    Ok(json!({"$": path}))
}

fn describe(kind: &str) -> String {
    if kind == "action" {
        "an action call".into()
    } else {
        kind.to_owned()
    }
}

fn attempts_of(policy: Option<&Value>) -> u64 {
    policy
        .and_then(|p| p.get("maxAttempts"))
        .and_then(Value::as_u64)
        .unwrap_or(1)
}

fn is_duration_or_expression(v: &Y) -> bool {
    v.as_str()
        .is_some_and(|s| s.contains("{{") || parse_duration_ms(s).is_some_and(|ms| ms > 0))
}

fn contains_template(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains("{{") => return true,
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    false
}

/// YML-2 and YML-3 for one action call.
fn check_action(cx: &mut Ctx<'_>, key: &str, key_pos: Pos, args: &Y, path: &str) {
    let well_formed = key.split_once('.').is_some_and(|(c, a)| {
        let part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
        };
        part(c) && part(a)
    });
    if !well_formed {
        cx.problem(
            "invalid_action",
            "YML-2",
            path,
            key_pos,
            format!(
                "an action call names connector.action (two names joined by one dot), not {key:?}"
            ),
        );
        return;
    }
    if !matches!(args.node, N::Map(_) | N::Null) {
        cx.problem(
            "invalid_arguments",
            "YML-2",
            path,
            args.pos,
            format!(
                "an action call supplies its arguments as a map, not {}",
                args.kind()
            ),
        );
        return;
    }
    let Some(manifest) = cx.manifest else {
        return;
    };
    let Some(decl) = manifest.action(key) else {
        cx.problem(
            "unknown_action",
            "YML-3",
            path,
            key_pos,
            format!(
                "the manifest declares no action {key:?}, so its arguments cannot be validated"
            ),
        );
        return;
    };
    let value = match args.node {
        N::Null => Value::Object(Map::new()),
        _ => args.to_json(),
    };
    for (at, message) in decl.check(&value) {
        if super::problems_full(&cx.problems) {
            break; // D-221: `locate` scans a map per error
        }
        let (node_pos, full) = locate(args, &at);
        cx.problem(
            "param_invalid",
            "YML-3",
            format!("{path}{full}"),
            node_pos,
            format!(
                "argument {}: {message}",
                if at.is_empty() { "/" } else { &at }
            ),
        );
    }
}

/// The position of the node at JSON Pointer `pointer` under `root` (the deepest existing).
fn locate(root: &Y, pointer: &str) -> (Pos, String) {
    let mut node = root;
    let mut walked = String::new();
    for raw in pointer.split('/').skip(1) {
        let token = raw.replace("~1", "/").replace("~0", "~");
        let next = match &node.node {
            N::Map(entries) => entries
                .iter()
                .find(|(k, _, _)| *k == token)
                .map(|(_, _, v)| v),
            N::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(n) => {
                node = n;
                walked.push('/');
                walked.push_str(raw);
            }
            None => break,
        }
    }
    (node.pos, walked)
}

/// YML-12: `retry` → a w6w RetryPolicy: an integer N is `{maxAttempts: N}`; a map is a
/// RetryPolicy checked by the w6w rules (MODEL-4).
fn retry_policy(cx: &mut Ctx<'_>, v: &Y, path: &str) -> Option<Value> {
    let policy = match &v.node {
        N::Number(n) if n.as_u64().is_some_and(|n| n >= 1) => json!({"maxAttempts": n}),
        N::Map(_) => v.to_json(),
        _ => {
            cx.problem(
                "invalid_modifier",
                "YML-12",
                path,
                v.pos,
                format!(
                    "retry is a number of attempts (>= 1) or a retry policy {{maxAttempts, backoff?, delayMs?}}, not {}",
                    v.kind()
                ),
            );
            return None;
        }
    };
    let probe = json!({"manifestVersion": "2", "id": "p", "name": "p",
        "steps": [{"id": "s", "uses": {"app": "a", "action": "b"}, "retry": policy}]});
    match crate::validate::validate_workflow(&probe, Default::default()) {
        Ok(_) => {
            if let Value::Object(m) = &policy {
                for k in m.keys() {
                    if !matches!(k.as_str(), "maxAttempts" | "backoff" | "delayMs") {
                        cx.problem(
                            "invalid_modifier",
                            "YML-12",
                            format!("{path}/{}", pointer_token(k)),
                            v.pos,
                            format!(
                                "a retry policy has maxAttempts, backoff and delayMs, not {k:?}"
                            ),
                        );
                        return None;
                    }
                }
            }
            Some(policy)
        }
        Err(errors) => {
            for e in errors {
                let field = e.path.trim_start_matches("/steps/0/retry");
                let (at, _) = locate(v, field);
                cx.problem(
                    "invalid_modifier",
                    "YML-12",
                    format!("{path}{field}"),
                    at,
                    e.message,
                );
            }
            None
        }
    }
}

/// YML-6: an expression path into a `wait` or `stop` step's id is a validation error.
/// Paths are the roots of `{{ … }}` expressions (`{{ ID.x }}` or `{{ steps.ID… }}`) in any
/// string of any step body.
fn unreadable_paths(cx: &mut Ctx<'_>, items: &[Y], ids: &[(String, &'static str)]) {
    let unreadable: BTreeSet<&str> = ids
        .iter()
        .filter(|(_, k)| matches!(*k, "wait" | "stop"))
        .map(|(id, _)| id.as_str())
        .collect();
    if unreadable.is_empty() {
        return;
    }
    // One path buffer for the whole walk: a node's path is its parent's (a prefix the
    // walk has not yet cut, since every node popped in between lies under that parent)
    // plus its own token, so no node copies the path above it (a long key over many
    // items was quadratic).
    enum Token<'y> {
        Index(usize),
        Key(&'y str),
    }
    let mut path = String::new();
    for (i, item) in items.iter().enumerate() {
        path.clear();
        path.push_str("/steps");
        let mut stack: Vec<(&Y, usize, Token<'_>)> = vec![(item, path.len(), Token::Index(i))];
        while let Some((y, parent, token)) = stack.pop() {
            if super::problems_full(&cx.problems) {
                return;
            }
            path.truncate(parent);
            path.push('/');
            match token {
                Token::Index(j) => path.push_str(itoa::Buffer::new().format(j)),
                Token::Key(k) => path.push_str(&pointer_token(k)),
            }
            let here = path.len();
            match &y.node {
                N::Str(s) => {
                    for root in expression_roots(s) {
                        if unreadable.contains(root.as_str()) {
                            cx.problem(
                                "unreadable_step",
                                "YML-6",
                                path.clone(),
                                y.pos,
                                format!("{root:?} is a wait or stop step: it binds nothing readable, so a path into it is invalid"),
                            );
                        }
                    }
                }
                N::Seq(v) => {
                    for (j, c) in v.iter().enumerate() {
                        stack.push((c, here, Token::Index(j)));
                    }
                }
                N::Map(e) => {
                    for (k, _, c) in e {
                        stack.push((c, here, Token::Key(k)));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The step ids the `{{ … }}` expressions of `s` read: each path's first segment, or the
/// second after a leading `steps.`.
fn expression_roots(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            break;
        };
        let expr = &after[..close];
        let bytes = expr.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'-' | b'.'))
                {
                    i += 1;
                }
                let member = start > 0 && bytes[start - 1] == b'.';
                if !member {
                    let path = &expr[start..i];
                    let mut parts = path.split('.');
                    let first = parts.next().unwrap_or_default();
                    let root = if first == "steps" {
                        parts.next().unwrap_or_default()
                    } else {
                        first
                    };
                    if !root.is_empty() {
                        out.push(root.to_owned());
                    }
                }
            } else if c == b'\'' || c == b'"' {
                i += 1;
                while i < bytes.len() && bytes[i] != c {
                    i += 1;
                }
                i += 1;
            } else {
                i += 1;
            }
        }
        rest = &after[close + 2..];
    }
    out
}

type Emitted = (Vec<Value>, Option<Value>, Vec<StepInfo>);

/// The w6w steps (and, when a `when` guard exists, explicit edges; D-36).
fn emit(cx: &mut Ctx<'_>, checked: Vec<Checked>) -> Result<Emitted, Vec<Problem>> {
    let mut steps = Vec::new();
    let mut infos = Vec::new();
    let guarded = checked.iter().any(|c| c.guard.is_some());
    if !guarded {
        for c in checked {
            infos.push(StepInfo {
                id: c.id.clone(),
                kind: c.kind,
                max_attempts: c.max_attempts,
                line: c.pos.line,
            });
            steps.push(Value::Object(c.json));
        }
        return Ok((steps, None, infos));
    }
    // D-36: a guarded step X gets `when__X` (@w6w/control if) in front of it. Every entry
    // node depends on the last unguarded step before it (or the `when__start` anchor when
    // there is none) and on every guarded step since, so a skipped step never skips what
    // follows it, and list order is kept (YML-4).
    let mut edges = Vec::new();
    let mut anchor: Option<String> = None;
    let mut since: Vec<String> = Vec::new();
    let first_guarded = checked.first().is_some_and(|c| c.guard.is_some());
    if first_guarded {
        let start = format!("{GUARD_PREFIX}start");
        steps.push(
            json!({"id": start, "uses": {"app": crate::plan::CONTROL_APP, "action": "if"},
            "with": {"condition": true}}),
        );
        infos.push(StepInfo {
            id: start.clone(),
            kind: StepKind::Guard,
            max_attempts: 1,
            line: 1,
        });
        anchor = Some(start);
    }
    for c in checked {
        let entry = match &c.guard {
            Some(cond) => {
                let g = format!("{GUARD_PREFIX}{}", c.id);
                steps.push(
                    json!({"id": g, "uses": {"app": crate::plan::CONTROL_APP, "action": "if"},
                    "with": {"condition": cond}}),
                );
                infos.push(StepInfo {
                    id: g.clone(),
                    kind: StepKind::Guard,
                    max_attempts: 1,
                    line: c.pos.line,
                });
                edges.push(json!({"from": g, "to": c.id}));
                g
            }
            None => c.id.clone(),
        };
        for from in anchor.iter().chain(since.iter()) {
            edges.push(json!({"from": from, "to": entry}));
        }
        if c.guard.is_some() {
            since.push(c.id.clone());
        } else {
            anchor = Some(c.id.clone());
            since.clear();
        }
        infos.push(StepInfo {
            id: c.id.clone(),
            kind: c.kind,
            max_attempts: c.max_attempts,
            line: c.pos.line,
        });
        steps.push(Value::Object(c.json));
    }
    let _ = cx;
    Ok((steps, Some(Value::Array(edges)), infos))
}

#[cfg(test)]
mod tests;
