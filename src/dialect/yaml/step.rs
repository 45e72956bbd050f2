//! One step of a YAML document: its shape (YML-1, YML-2), its modifiers (YML-7…13) and
//! its body, by kind (YML-5; D-232..D-236), checked against the text and built for w6w.
//!
//! Owns: the order of a step's checks and what each body kind becomes. A problem of the
//! document goes to `Ctx::problem`; a form the text allows but w6w-sim cannot run to
//! `Ctx::unsupported` (D-237). Every step, even a broken one, is made visible to the
//! steps after it, so one mistake is reported once.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::bind::{Binder, Shape, Site};
use super::emit::{Item, Out};
use super::values::{Use, rewrite};
use super::{
    BODY_APP, CONSTRUCT_KEYS, CONSTRUCTS, Ctx, RESERVED_PREFIXES, attempts_of, check_action,
    describe, is_duration_or_expression, permitted, retry_policy,
};
use crate::dialect::yaml_tree::{N, Y};
use crate::dialect::{Binds, Pos, StepKind};
use crate::model::pointer_token;

/// Construct keys each runnable body may carry; any other is refused for running (the
/// sections that define the constructs' keys are not part of the text).
const RUN_KEYS: [&str; 2] = ["code", "network"];
const AGENT_KEYS: [&str; 5] = ["goal", "tools", "returns", "budget", "on_exhausted"];

/// A step's shape: its id, its keys and which one is the body.
pub(super) struct Head<'y> {
    pub id: &'y str,
    pub id_pos: Pos,
    pub path: String,
    pub keys: &'y [(String, Pos, Y)],
    pub body_key: &'y str,
    pub body_pos: Pos,
    pub body: &'y Y,
    pub kind: &'static str,
    /// Inside a `for_each` or `parallel` body.
    pub nested: bool,
}

pub(super) type Key<'y> = (&'y str, Pos, &'y Y);

/// The body key of a step body map: a construct keyword or `connector.action`.
fn body_kind(k: &str) -> Option<&'static str> {
    CONSTRUCTS
        .iter()
        .find(|c| **c == k)
        .copied()
        .or_else(|| k.contains('.').then_some("action"))
}

/// `(id, kind, body map)` of a step element, however broken the rest of it is.
/// A map's entries in document order, as `yaml_tree` keeps them.
type Entries = [(String, Pos, Y)];

fn identity(item: &Y) -> Option<(&str, &'static str, &Entries)> {
    let N::Map(entries) = &item.node else {
        return None;
    };
    let [(id, _, body)] = entries.as_slice() else {
        return None;
    };
    let N::Map(keys) = &body.node else {
        return None;
    };
    let kind = keys.iter().find_map(|(k, _, _)| body_kind(k))?;
    Some((id, kind, keys))
}

fn key<'y>(keys: &'y [(String, Pos, Y)], name: &str) -> Option<&'y Y> {
    keys.iter().find(|(k, _, _)| k == name).map(|(_, _, v)| v)
}

/// Every step id of a list and of the `for_each`/`parallel` bodies in it, with where it
/// is (D-230). The first of two equal ids is kept; the second is a `duplicate_id`.
pub(super) fn record_sites(
    sites: &mut HashMap<String, Site>,
    list: &[Y],
    within: Option<(&str, &str)>,
) {
    for item in list {
        let Some((id, kind, keys)) = identity(item) else {
            continue;
        };
        sites.entry(id.to_owned()).or_insert_with(|| Site {
            line: item.pos.line,
            within: within.map(|(w, _)| w.to_owned()),
            through: within.map(|(_, t)| format!("{t}.{id}")),
        });
        match kind {
            "for_each" => {
                if let Some(N::Seq(body)) = key(keys, "steps").map(|y| &y.node) {
                    record_sites(sites, body, Some((id, &format!("{id}.<index>"))));
                }
            }
            "parallel" => {
                if let Some(N::Map(branches)) = key(keys, "parallel").map(|y| &y.node) {
                    for (b, _, list) in branches {
                        if let N::Seq(body) = &list.node {
                            let w = format!("{id}.{b}");
                            record_sites(sites, body, Some((&w, &w)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether any top-level step is an action call (for the no-manifest note).
pub(super) fn has_action(list: &[Y]) -> bool {
    list.iter()
        .any(|i| identity(i).is_some_and(|(_, k, _)| k == "action"))
}

/// Check a list of steps at `base` (`/steps`, or a body's list); the runnable items.
pub(super) fn check_list(
    cx: &mut Ctx<'_>,
    base: &str,
    list: &[Y],
    nested: Option<&str>,
) -> Vec<Item> {
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        if cx.full() {
            break;
        }
        let path = format!("{base}/{i}");
        if let Some(it) = check_step(cx, path, item, nested.is_some()) {
            out.push(it);
        }
    }
    out
}

fn check_step(cx: &mut Ctx<'_>, path: String, item: &Y, nested: bool) -> Option<Item> {
    let before = (cx.problems.len(), cx.unsupported.len());
    let head = head(cx, path, item, nested)?;
    let (modifiers, construct_keys) = split_keys(cx, &head);
    check_modifiers(cx, &head, &modifiers);
    let (out, shape) = body(cx, &head, &construct_keys, &modifiers);
    let base = match head.kind {
        "action" | "run" | "agent" => Some(format!("steps.{}.output", head.id)),
        "value" | "render" => Some(format!("steps.{}.output.result.value", head.id)),
        "for_each" => Some(format!("steps.{}.output.items", head.id)),
        "parallel" => Some(format!("steps.{}.output.result", head.id)),
        _ => None,
    };
    let guard = guard(cx, &head, &modifiers);
    cx.scope.add(Binder::new(head.id, head.kind, shape, base));
    if (cx.problems.len(), cx.unsupported.len()) != before {
        return None;
    }
    let out = finish(cx, &head, &modifiers, out?);
    Some(Item {
        id: head.id.to_owned(),
        line: head.id_pos.line,
        guard: guard?,
        out,
    })
}

/// YML-1: a map with exactly one key, the id; its value a map with one body key.
fn head<'y>(cx: &mut Ctx<'_>, path: String, item: &'y Y, nested: bool) -> Option<Head<'y>> {
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
    check_id(cx, id, *id_pos, &path);
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
    let (body_key, body_pos, body_value) = the_body(cx, &path, keys, body.pos)?;
    Some(Head {
        id,
        id_pos: *id_pos,
        path,
        keys,
        body_key,
        body_pos,
        body: body_value,
        kind: body_kind(body_key).unwrap_or("action"),
        nested,
    })
}

/// YML-2: exactly one key of a step body is the body (a construct or `connector.action`).
fn the_body<'y>(
    cx: &mut Ctx<'_>,
    path: &str,
    keys: &'y [(String, Pos, Y)],
    at: Pos,
) -> Option<(&'y str, Pos, &'y Y)> {
    let bodies: Vec<&(String, Pos, Y)> = keys
        .iter()
        .filter(|(k, _, _)| body_kind(k).is_some())
        .collect();
    match bodies.as_slice() {
        [one] => Some((one.0.as_str(), one.1, &one.2)),
        [] => {
            cx.problem(
                "invalid_body",
                "YML-2",
                path,
                at,
                "the step has no body: name connector.action or a construct (value, render, run, \
                 agent, call, route, choose, for_each, repeat, parallel, wait_for, wait, stop)",
            );
            None
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
            None
        }
    }
}

/// YML-1 and YML-6's "names the step in the run record": a usable, unique id.
fn check_id(cx: &mut Ctx<'_>, id: &str, at: Pos, path: &str) {
    #[cfg(test)]
    crate::dialect::work::add(1);
    if id.is_empty() || id.contains('.') || id.trim() != id {
        cx.problem(
            "invalid_id",
            "YML-1",
            path,
            at,
            format!("step id {id:?} must be non-empty, without dots or surrounding spaces"),
        );
    } else if !cx.seen.insert(id.to_owned()) {
        cx.problem(
            "duplicate_id",
            "YML-1",
            path,
            at,
            format!(
                "step id {id:?} is already used; each step's id names it in the run record, \
                 at any depth"
            ),
        );
    } else if let Some(p) = RESERVED_PREFIXES.iter().find(|p| id.starts_with(**p)) {
        cx.refuse(
            "invalid_id",
            "YML-1",
            path,
            at,
            format!("step ids starting with {p:?} are reserved for the steps the import adds"),
        );
    }
}

/// YML-7, YML-9, YML-10: each key beside the body is a permitted modifier or a construct key.
fn split_keys<'y>(cx: &mut Ctx<'_>, h: &Head<'y>) -> (Vec<Key<'y>>, Vec<Key<'y>>) {
    let mut modifiers = Vec::new();
    let mut construct_keys = Vec::new();
    for (k, kpos, v) in h.keys {
        if k == h.body_key {
            continue;
        }
        let kpath = || format!("{}/{}", h.path, pointer_token(k));
        if let Some(allowed) = permitted(k) {
            if allowed.contains(&h.kind) {
                modifiers.push((k.as_str(), *kpos, v));
            } else if k == "timeout" && matches!(h.kind, "wait" | "wait_for") {
                cx.problem(
                    "modifier_not_permitted",
                    "YML-10",
                    kpath(),
                    *kpos,
                    format!(
                        "{} does not accept the timeout modifier (timeout is a key of the \
                         wait_for construct itself)",
                        h.kind
                    ),
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
                        describe(h.kind)
                    ),
                );
            }
        } else if CONSTRUCT_KEYS.contains(&k.as_str()) {
            if h.kind == "action" {
                cx.problem(
                    "construct_key_not_permitted",
                    "YML-9",
                    kpath(),
                    *kpos,
                    format!(
                        "{k} is a construct key: it belongs to a construct's body, and an \
                         action call is not a construct"
                    ),
                );
            } else {
                construct_keys.push((k.as_str(), *kpos, v));
            }
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
    (modifiers, construct_keys)
}

fn has<'y>(modifiers: &[Key<'y>], name: &str) -> Option<Key<'y>> {
    modifiers.iter().find(|(k, _, _)| *k == name).copied()
}

/// YML-8, YML-10, YML-11, YML-12: the modifiers' own values; the references in `timeout`
/// and `idempotency_key`.
fn check_modifiers(cx: &mut Ctx<'_>, h: &Head<'_>, modifiers: &[Key<'_>]) {
    if let (Some(_), Some((_, pos, _))) =
        (has(modifiers, "optional"), has(modifiers, "must_succeed"))
    {
        cx.problem(
            "optional_and_must_succeed",
            "YML-8",
            format!("{}/must_succeed", h.path),
            pos,
            "a step cannot declare both optional and must_succeed",
        );
    }
    for (m, mpos, v) in modifiers {
        let mpath = format!("{}/{}", h.path, pointer_token(m));
        match *m {
            "optional" | "must_succeed" if !matches!(v.node, N::Bool(_)) => cx.problem(
                "invalid_modifier",
                "YML-11",
                mpath,
                v.pos,
                format!("{m} is a boolean, not {}", v.kind()),
            ),
            "optional" if matches!(h.kind, "for_each" | "parallel") => cx.unsupported(
                "YML-11",
                mpath,
                *mpos,
                format!(
                    "optional on {} at line {}: which failures inside its body the run goes on \
                     from is not mapped to w6w yet",
                    h.kind, mpos.line
                ),
            ),
            "timeout" if !is_duration_or_expression(v) => cx.problem(
                "invalid_modifier",
                "YML-10",
                mpath,
                v.pos,
                "timeout takes a literal duration (an integer with ms, s, m or h) or an expression ({{ … }})",
            ),
            "timeout" | "idempotency_key" => {
                rewrite(cx, v, &mpath, h.id, Use::Value);
            }
            "connection" if v.as_str().is_none_or(str::is_empty) => cx.problem(
                "invalid_modifier",
                "YML-12",
                mpath,
                v.pos,
                format!("connection names a connection (a non-empty string), not {}", v.kind()),
            ),
            "undo" | "on_unknown" | "reconcile" | "recovery" => cx.unsupported(
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
}

/// YML-13 / D-36: the `if` condition of a `when` — `Some(None)` when there is none,
/// `None` when it cannot run.
fn guard(cx: &mut Ctx<'_>, h: &Head<'_>, modifiers: &[Key<'_>]) -> Option<Option<Value>> {
    let Some((_, wpos, v)) = has(modifiers, "when") else {
        return Some(None);
    };
    let path = format!("{}/when", h.path);
    let cond = match &v.node {
        N::Bool(b) => Some(json!(b)),
        N::Str(_) => match rewrite(cx, v, &path, h.id, Use::Value) {
            c @ Value::Object(_) => Some(c),
            _ => None,
        },
        _ => None,
    };
    let refuse = |cx: &mut Ctx<'_>, why: &str| {
        cx.unsupported(
            "YML-13",
            path.clone(),
            wpos,
            format!("when at line {}: {why}", wpos.line),
        );
    };
    match cond {
        None => {
            refuse(
                cx,
                "only true, false or a single {{ path }} into an earlier step or message can be \
                 imported (yaml-steps.txt does not define the expression language)",
            );
            None
        }
        Some(_) if h.nested => {
            refuse(
                cx,
                "a guard inside a for_each or parallel body is not mapped to w6w yet (a \
                 sub-block takes no main-graph edges, PLAN-7)",
            );
            None
        }
        Some(c) => Some(Some(c)),
    }
}

/// The body by kind: what it becomes (`None` when it cannot run) and what it binds.
fn body(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
    modifiers: &[Key<'_>],
) -> (Option<Out>, Shape) {
    match h.kind {
        "action" => (action(cx, h, modifiers), Shape::Free),
        "run" | "agent" => (carried(cx, h, construct_keys, modifiers), Shape::Free),
        "value" | "render" => value_or_render(cx, h, construct_keys),
        "wait" => (wait(cx, h, construct_keys), Shape::Unreadable),
        "stop" => (stop(cx, h, construct_keys), Shape::Unreadable),
        "for_each" => super::constructs::for_each(cx, h, construct_keys),
        "parallel" => super::constructs::parallel(cx, h, construct_keys),
        other => {
            cx.unsupported(
                "YML-5",
                format!("{}/{}", h.path, pointer_token(h.body_key)),
                h.body_pos,
                format!(
                    "{other} at line {}: yaml-steps.txt says what it binds but not how it runs, \
                     so it cannot be imported or run (nothing is dropped silently)",
                    h.body_pos.line
                ),
            );
            let shape = match other {
                "repeat" => Shape::Indexed(None),
                "wait_for" => Shape::StatusEvent,
                _ => Shape::Free,
            };
            (None, shape)
        }
    }
}

pub(super) fn body_path(h: &Head<'_>) -> String {
    format!("{}/{}", h.path, pointer_token(h.body_key))
}

/// Refuse, for running, every construct key not in `allowed`.
pub(super) fn only_keys(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
    allowed: &[&str],
) {
    for (k, kpos, _) in construct_keys {
        if !allowed.contains(k) {
            cx.unsupported(
                "YML-9",
                format!("{}/{}", h.path, pointer_token(k)),
                *kpos,
                format!(
                    "the construct key {k} beside {} at line {}: the text does not say what it \
                     means there, so it cannot run",
                    h.kind, kpos.line
                ),
            );
        }
    }
}

/// YML-2, YML-3, YML-12: an action call → `uses` + `with` (markers rewritten, D-231).
fn action(cx: &mut Ctx<'_>, h: &Head<'_>, modifiers: &[Key<'_>]) -> Option<Out> {
    let bpath = body_path(h);
    check_action(cx, h.body_key, h.body_pos, h.body, &bpath);
    let args = match &h.body.node {
        N::Null => Value::Object(Map::new()),
        _ => rewrite(cx, h.body, &bpath, h.id, Use::Value),
    };
    let (connector, action) = h.body_key.split_once('.').unwrap_or((h.body_key, ""));
    let mut uses = json!({"app": connector, "action": action});
    if let (Some((_, _, c)), Value::Object(u)) = (has(modifiers, "connection"), &mut uses) {
        u.insert("connection".into(), c.to_json());
    }
    let retry = has(modifiers, "retry")
        .and_then(|(_, _, v)| retry_policy(cx, v, &format!("{}/retry", h.path)));
    let policy = retry.or_else(|| {
        cx.manifest
            .and_then(|m| m.action(h.body_key))
            .and_then(|a| a.retry.clone())
    });
    let mut s = step_json(h.id);
    s.insert("uses".into(), uses);
    s.insert("with".into(), args);
    let max_attempts = attempts_of(policy.as_ref());
    if let Some(p) = policy {
        s.insert("retry".into(), p);
    }
    Some(Out::Step {
        json: s,
        kind: StepKind::Action,
        max_attempts,
        binds: Binds::Output,
    })
}

fn step_json(id: &str) -> Map<String, Value> {
    let mut s = Map::new();
    s.insert("id".into(), json!(id));
    s
}

/// `run` / `agent`: carried, not executed; the outcome is scripted by step id (D-35).
fn carried(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
    modifiers: &[Key<'_>],
) -> Option<Out> {
    let (allowed, action, kind): (&[&str], _, _) = if h.kind == "run" {
        (&RUN_KEYS, "run", StepKind::Run)
    } else {
        (&AGENT_KEYS, "agent", StepKind::Agent)
    };
    only_keys(cx, h, construct_keys, allowed);
    if h.kind == "agent" {
        // The agent's goal and the like may read earlier steps: judged like any value.
        rewrite(cx, h.body, &body_path(h), h.id, Use::Text);
        for (k, _, v) in construct_keys {
            rewrite(
                cx,
                v,
                &format!("{}/{}", h.path, pointer_token(k)),
                h.id,
                Use::Text,
            );
        }
    }
    let retry = has(modifiers, "retry")
        .and_then(|(_, _, v)| retry_policy(cx, v, &format!("{}/retry", h.path)));
    let mut s = step_json(h.id);
    s.insert("uses".into(), json!({"app": BODY_APP, "action": action}));
    if h.kind == "run" {
        // Issue 40: what the simulator hands a JavaScript body — the trigger's payload as
        // `message` and each earlier step's binding by its id (YML-5, D-231's paths).
        let steps: Map<String, Value> = cx
            .scope
            .readable()
            .into_iter()
            .map(|(id, path)| (id, json!({"$": path})))
            .collect();
        s.insert(
            "with".into(),
            json!({"message": {"$": "trigger.event"}, "steps": steps}),
        );
    }
    let mut x = Map::new();
    x.insert(action.into(), h.body.to_json());
    for (k, _, v) in construct_keys {
        x.insert((*k).to_owned(), v.to_json());
    }
    s.insert("x-yaml".into(), Value::Object(x));
    let max_attempts = attempts_of(retry.as_ref());
    if let Some(p) = retry {
        s.insert("retry".into(), p);
    }
    Some(Out::Step {
        json: s,
        kind,
        max_attempts,
        binds: Binds::Output,
    })
}

/// D-232: `value` binds the evaluated structure, `render` the rendered string or parts;
/// both become a `merge` whose one entry `value` holds it (`output.result.value`).
fn value_or_render(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
) -> (Option<Out>, Shape) {
    only_keys(cx, h, construct_keys, &[]);
    let bpath = body_path(h);
    let (use_, shape) = if h.kind == "value" {
        (Use::Value, Shape::Free)
    } else {
        match &h.body.node {
            N::Str(_) => (Use::Text, Shape::Text),
            N::Map(parts) if parts.iter().all(|(_, _, v)| v.as_str().is_some()) => (
                Use::Text,
                Shape::Parts(parts.iter().map(|(k, _, _)| k.clone()).collect()),
            ),
            _ => {
                cx.unsupported(
                    "YML-5",
                    bpath.clone(),
                    h.body.pos,
                    format!(
                        "render at line {}: it binds a rendered string or a map of part name to \
                         rendered string, so only a string or a map of strings can run, not {}",
                        h.body.pos.line,
                        h.body.kind()
                    ),
                );
                (Use::Text, Shape::Free)
            }
        }
    };
    let v = rewrite(cx, h.body, &bpath, h.id, use_);
    let s = super::emit::control_step(
        h.id,
        "merge",
        json!({"mode": "object", "entries": [{"key": "value", "value": v}]}),
    );
    let out = Out::Step {
        json: s,
        kind: StepKind::Value,
        max_attempts: 1,
        binds: Binds::ResultValue,
    };
    (Some(out), shape)
}

/// D-233: `wait: <duration>` → `@w6w/control` `wait` with the ISO-8601 duration, on the
/// virtual clock.
fn wait(cx: &mut Ctx<'_>, h: &Head<'_>, construct_keys: &[Key<'_>]) -> Option<Out> {
    only_keys(cx, h, construct_keys, &[]);
    let bpath = body_path(h);
    rewrite(cx, h.body, &bpath, h.id, Use::Value);
    let ms = h
        .body
        .as_str()
        .and_then(crate::dialect::parse_duration_ms)
        .filter(|ms| *ms > 0);
    let Some(ms) = ms else {
        cx.unsupported(
            "YML-5",
            bpath,
            h.body.pos,
            format!(
                "wait at line {}: only a literal duration (an integer with ms, s, m or h, such \
                 as 5m) can run",
                h.body.pos.line
            ),
        );
        return None;
    };
    let duration = if ms % 1000 == 0 {
        format!("PT{}S", ms / 1000)
    } else {
        format!("PT{}.{:03}S", ms / 1000, ms % 1000)
    };
    let s = super::emit::control_step(h.id, "wait", json!({"duration": duration}));
    Some(Out::Step {
        json: s,
        kind: StepKind::Wait,
        max_attempts: 1,
        binds: Binds::Nothing,
    })
}

/// D-234: `stop` ends the run: an `if` whose condition is false skips every later step.
fn stop(cx: &mut Ctx<'_>, h: &Head<'_>, construct_keys: &[Key<'_>]) -> Option<Out> {
    only_keys(cx, h, construct_keys, &[]);
    rewrite(cx, h.body, &body_path(h), h.id, Use::Text);
    if h.nested {
        cx.unsupported(
            "YML-5",
            body_path(h),
            h.body_pos,
            format!(
                "stop at line {} inside a for_each or parallel body: ending the run from a \
                 sub-block is not mapped to w6w",
                h.body_pos.line
            ),
        );
        return None;
    }
    let mut s = super::emit::control_step(h.id, "if", json!({"condition": false}));
    s.insert("x-yaml".into(), json!({"stop": h.body.to_json()}));
    Some(Out::Stop { json: s })
}

/// The modifiers every built step carries: `optional` → `continue-record` (YML-11), the
/// rest under `x-yaml` (with a note for what the simulator does not enforce).
fn finish(cx: &mut Ctx<'_>, h: &Head<'_>, modifiers: &[Key<'_>], mut out: Out) -> Out {
    let json = match &mut out {
        Out::Step { json, .. }
        | Out::Stop { json }
        | Out::ForEach { json, .. }
        | Out::Parallel { json, .. } => json,
    };
    if let Some((_, _, v)) = has(modifiers, "optional")
        && v.node == N::Bool(true)
    {
        json.insert("onError".into(), json!("continue-record"));
    }
    let mut x = match json.remove("x-yaml") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    x.insert("line".into(), json!(h.id_pos.line));
    for (m, mpos, v) in modifiers {
        match *m {
            "must_succeed" | "optional" | "when" => {
                x.insert((*m).to_owned(), v.to_json());
            }
            "timeout" | "idempotency_key" => {
                x.insert((*m).to_owned(), v.to_json());
                cx.notes.push(crate::dialect::Note::new(
                    format!("{}/{m}", h.path),
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
    // `line` first, then the body and modifiers, as before this change.
    let mut ordered = Map::new();
    if let Some(l) = x.remove("line") {
        ordered.insert("line".into(), l);
    }
    ordered.extend(x);
    json.insert("x-yaml".into(), Value::Object(ordered));
    out
}
