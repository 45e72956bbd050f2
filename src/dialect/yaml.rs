//! The YAML step/action front-end (`yaml-steps.txt`; clauses YML-1…13).
//!
//! Owns: checking a YAML document (parsed by `yaml_tree`, positions kept) against every
//! rule of the text with a stable code at `line:column` and a JSON Pointer, and the import
//! into w6w. Two judgements from one walk (D-237): the document's problems (`validate`:
//! every body kind the text names is accepted and every YML rule applied to it), and what
//! w6w-sim cannot run (`unsupported_construct`, added by `validate --runnable`, `import`
//! and `run`).
//! Submodules: `step` checks one step (header, modifiers, each body kind); `bind` is
//! YML-5/YML-6 — what a `{{ … }}` marker may root at and the w6w path it reads (D-230,
//! D-231); `values` walks a value and rewrites its markers; `emit` builds the w6w steps
//! and edges (list order → chain, YML-4; `when` guards, `stop`, `for_each`, `parallel`).
//! Invariant: only the fixed shape `steps[i].<id>.<body>` (and the step lists of
//! `for_each` and `parallel` bodies) is walked; user values are walked only to the depth
//! `yaml_tree` bounds. A reference is resolved or refused, never passed through as text.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::manifest::Manifest;
use super::yaml_tree::{self, N, Y};
use super::{Dialect, Imported, Note, Pos, Problem, parse_duration_ms};
use crate::model::pointer_token;

mod bind;
mod constructs;
mod emit;
mod step;
mod values;

/// The app carried `run` and `agent` bodies name; their outcomes are scripted by step id.
pub(crate) const BODY_APP: &str = "yaml";
/// Prefix of the synthetic guard steps (YML-13).
pub(crate) const GUARD_PREFIX: &str = "when__";
/// Prefixes of the other synthetic steps (D-234..D-236); ids starting with any of these
/// are refused by the import (the workflow could not name both).
pub(crate) const RESERVED_PREFIXES: [&str; 4] = [GUARD_PREFIX, "unless__", "fork__", "scope__"];

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
    /// What the document itself gets wrong (`validate`).
    problems: Vec<Problem>,
    /// What the document may say but w6w-sim cannot run (D-237).
    unsupported: Vec<Problem>,
    notes: Vec<Note>,
    /// The names a marker may read at the current point of the walk (D-230).
    scope: bind::Scope,
    /// Every step id so far, at any depth: ids name steps in the run record (D-230).
    seen: HashSet<String>,
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

    /// D-237: refused only when the document is to run.
    fn unsupported(
        &mut self,
        clause: &'static str,
        path: impl Into<String>,
        pos: Pos,
        message: impl Into<String>,
    ) {
        self.refuse("unsupported_construct", clause, path, pos, message);
    }

    fn refuse(
        &mut self,
        code: &'static str,
        clause: &'static str,
        path: impl Into<String>,
        pos: Pos,
        message: impl Into<String>,
    ) {
        super::push_problem(
            &mut self.unsupported,
            Problem::new(code, Some(clause), path, pos, message),
        );
    }

    fn full(&self) -> bool {
        super::problems_full(&self.problems)
    }
}

/// A checked document: its metadata and top-level items.
struct Checked {
    meta: Map<String, Value>,
    items: Vec<emit::Item>,
    steps_pos: Pos,
}

/// Check a YAML document against yaml-steps.txt alone (D-237): `Ok(notes)` or every
/// problem of the document.
pub(crate) fn validate(text: &str, manifest: Option<&Manifest>) -> Result<Vec<Note>, Vec<Problem>> {
    let (cx, _) = check(text, manifest)?;
    if cx.problems.is_empty() {
        Ok(cx.notes)
    } else {
        Err(cx.problems)
    }
}

/// Parse, check and import a YAML document: its problems, then what cannot run.
pub(crate) fn import(text: &str, manifest: Option<&Manifest>) -> Result<Imported, Vec<Problem>> {
    let (mut cx, checked) = check(text, manifest)?;
    if !cx.problems.is_empty() || !cx.unsupported.is_empty() {
        for p in std::mem::take(&mut cx.unsupported) {
            super::push_problem(&mut cx.problems, p);
        }
        return Err(cx.problems);
    }
    let Checked {
        meta,
        items,
        steps_pos,
    } = checked;
    let (workflow_steps, edges, infos) = emit::workflow_steps(items);
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
    let _ = steps_pos;
    Ok(Imported {
        dialect: Dialect::Yaml,
        workflow,
        notes: cx.notes,
        steps: infos,
    })
}

/// YML-1: a document whose root is not a map.
fn not_a_map(root: &Y) -> Problem {
    Problem::new(
        "invalid_document",
        Some("YML-1"),
        "",
        root.pos,
        format!(
            "a YAML workflow is a map whose steps key holds the ordered list, not {}",
            root.kind()
        ),
    )
}

/// The walk behind both judgements. `Err` only when the document has no step list to walk.
fn check<'m>(
    text: &str,
    manifest: Option<&'m Manifest>,
) -> Result<(Ctx<'m>, Checked), Vec<Problem>> {
    let root = yaml_tree::parse(text).map_err(|p| vec![p])?;
    let mut cx = Ctx {
        manifest,
        problems: Vec::new(),
        unsupported: Vec::new(),
        notes: Vec::new(),
        scope: bind::Scope::default(),
        seen: HashSet::new(),
    };
    let N::Map(top) = &root.node else {
        return Err(vec![not_a_map(&root)]);
    };
    let (meta, steps) = top_level(&mut cx, top);
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
    let N::Seq(list) = &steps.node else {
        cx.problem(
            "invalid_steps",
            "YML-1",
            "/steps",
            steps.pos,
            format!("steps is an ordered list, not {}", steps.kind()),
        );
        return Err(cx.problems);
    };
    if list.is_empty() {
        cx.problem(
            "invalid_steps",
            "YML-1",
            "/steps",
            steps.pos,
            "steps holds at least one step",
        );
    }
    step::record_sites(&mut cx.scope.sites, list, None);
    let items = step::check_list(&mut cx, "/steps", list, None);
    if cx.manifest.is_none() && step::has_action(list) {
        cx.notes.push(Note::new(
            "/steps",
            steps.pos,
            "no manifest given (--manifest FILE or the scenario's manifest key): action \
             arguments were not checked against input schemas (YML-3)",
        ));
    }
    Ok((
        cx,
        Checked {
            meta,
            items,
            steps_pos: steps.pos,
        },
    ))
}

/// The top-level keys: `id`, `name`, `description` (strings) and `steps`.
fn top_level<'y>(
    cx: &mut Ctx<'_>,
    top: &'y [(String, Pos, Y)],
) -> (Map<String, Value>, Option<&'y Y>) {
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
    (meta, steps)
}

/// Whether the node at JSON Pointer `at` under `args` is a string holding a marker.
fn at_binding(args: &Y, at: &str) -> bool {
    let (node, walked) = walk(args, at);
    walked == at && node.as_str().is_some_and(|s| bind::split(s).has_markers())
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

/// YML-2: `connector.action`, two non-empty names of `[A-Za-z0-9_-]` joined by one dot.
fn is_action_name(key: &str) -> bool {
    key.split_once('.').is_some_and(|(c, a)| {
        let part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
        };
        part(c) && part(a)
    })
}

/// YML-2 and YML-3 for one action call.
fn check_action(cx: &mut Ctx<'_>, key: &str, key_pos: Pos, args: &Y, path: &str) {
    if !is_action_name(key) {
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
        // D-231: an argument that holds a binding has its type only at run time.
        if full == at && at_binding(args, &at) {
            continue;
        }
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
    let (node, walked) = walk(root, pointer);
    (node.pos, walked)
}

/// The deepest node at or above JSON Pointer `pointer` under `root`, and the pointer to it.
fn walk<'a>(root: &'a Y, pointer: &str) -> (&'a Y, String) {
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
    (node, walked)
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

#[cfg(test)]
mod tests;
