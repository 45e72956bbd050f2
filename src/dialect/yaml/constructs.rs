//! The constructs with a body of steps: `for_each` (D-235) and `parallel` (D-236).
//!
//! Owns: their shapes as this implementation reads them (the text names their keys but
//! its sections that define them are not part of it, so a shape outside these is refused
//! only for running), the walk of their bodies in a scope of their own (YML-5: a body's
//! steps are read through the construct's binding from outside it), and what they bind.
//! Invariant: a body may hold only steps that run as one w6w step and take no guard;
//! anything else in it is valid but refused for running, at its line.

use serde_json::{Value, json};

use super::Ctx;
use super::bind::{Binder, Shape};
use super::emit::{Item, Out, control_step};
use super::step::{Head, Key, body_path, check_list, only_keys};
use super::values::{Use, rewrite};
use crate::dialect::yaml_tree::{N, Y};
use crate::model::pointer_token;

/// The construct keys `for_each` runs with.
const FOR_EACH_KEYS: [&str; 3] = ["as", "steps", "concurrency"];

fn key<'y>(construct_keys: &[Key<'y>], name: &str) -> Option<Key<'y>> {
    construct_keys.iter().find(|(k, _, _)| *k == name).copied()
}

/// What a body's runnable steps bind: `(id, w6w path)` for its scope (D-235, D-236).
fn scope_of(members: &[Binder]) -> Vec<(String, String)> {
    members
        .iter()
        .filter(|b| !matches!(b.shape, Shape::Unreadable))
        .filter_map(|b| Some((b.id.clone(), b.base.clone()?)))
        .collect()
}

/// Refuse, for running, a body item that is not one plain step.
fn plain_body(
    cx: &mut Ctx<'_>,
    owner: &str,
    items: Vec<Item>,
    path: &str,
    at: crate::dialect::Pos,
) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        if matches!(it.out, Out::Step { .. }) && it.guard.is_none() {
            out.push(it);
        } else {
            cx.unsupported(
                "YML-5",
                path.to_owned(),
                at,
                format!(
                    "step {:?} (line {}) in the body of {owner:?}: only action calls, run, \
                     agent, value, render and wait can run inside a body",
                    it.id, it.line
                ),
            );
        }
    }
    out
}

/// D-235: `for_each: <list or {{ path }}>`, `as: <name>`, `steps: [...]`,
/// `concurrency: <n>` → a `foreach` whose body is the steps and a `scope__` merge.
pub(super) fn for_each(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
) -> (Option<Out>, Shape) {
    only_keys(cx, h, construct_keys, &FOR_EACH_KEYS);
    let bpath = body_path(h);
    let items = rewrite(cx, h.body, &bpath, h.id, Use::Value);
    let runnable_items = matches!(&items, Value::Array(_))
        || matches!(&items, Value::Object(m) if m.len() == 1 && m.contains_key("$"));
    if !runnable_items {
        cx.unsupported(
            "YML-5",
            bpath,
            h.body.pos,
            format!(
                "for_each at line {}: only a list or a single {{{{ path }}}} to one can run, \
                 not {}",
                h.body.pos.line,
                h.body.kind()
            ),
        );
    }
    let item_name = item_name(cx, h, construct_keys);
    let parallelism = match key(construct_keys, "concurrency") {
        None => None,
        Some((_, _, v)) => match &v.node {
            N::Number(n) if n.as_u64().is_some_and(|n| n >= 1) => Some(v.to_json()),
            _ => {
                cx.unsupported(
                    "YML-9",
                    format!("{}/concurrency", h.path),
                    v.pos,
                    format!("concurrency is a positive integer, not {}", v.kind()),
                );
                None
            }
        },
    };
    let (body, members) = body_steps(cx, h, key(construct_keys, "steps"), h.id, item_name);
    let shape = Shape::Indexed(Some(members.clone()));
    let Some(body) = body else {
        return (None, shape);
    };
    let mut with = serde_json::Map::new();
    with.insert("items".into(), items);
    if let Some(p) = parallelism {
        with.insert("parallelism".into(), p);
    }
    let json = control_step(h.id, "foreach", Value::Object(with));
    let out = Out::ForEach {
        json,
        body,
        scope: scope_of(&members),
    };
    (Some(out), shape)
}

/// YML-9: a `for_each`'s `as`, the item's name (a string without dots).
fn item_name<'y>(cx: &mut Ctx<'_>, h: &Head<'_>, construct_keys: &[Key<'y>]) -> Option<&'y str> {
    match key(construct_keys, "as") {
        None => None,
        Some((_, _, v)) => match v.as_str() {
            Some(s) if !s.is_empty() && !s.contains('.') => Some(s),
            _ => {
                cx.unsupported(
                    "YML-9",
                    format!("{}/as", h.path),
                    v.pos,
                    format!(
                        "as names the item (a string without dots), not {}",
                        v.kind()
                    ),
                );
                None
            }
        },
    }
}

/// A `for_each`'s `steps`: checked in the body's scope; `None` when it cannot run.
fn body_steps(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    steps: Option<Key<'_>>,
    within: &str,
    item: Option<&str>,
) -> (Option<Vec<Item>>, Vec<Binder>) {
    let Some((_, spos, list)) = steps else {
        cx.unsupported(
            "YML-5",
            body_path(h),
            h.body_pos,
            format!(
                "for_each at line {} has no steps: there is nothing to run per item",
                h.body_pos.line
            ),
        );
        return (None, Vec::new());
    };
    let spath = format!("{}/steps", h.path);
    let N::Seq(list) = &list.node else {
        cx.unsupported(
            "YML-5",
            spath,
            list.pos,
            format!("steps is a list of steps, not {}", list.kind()),
        );
        return (None, Vec::new());
    };
    if list.is_empty() {
        cx.unsupported("YML-5", spath, spos, "steps holds at least one step to run");
        return (None, Vec::new());
    }
    cx.scope.enter(within, item);
    let items = check_list(cx, &spath, list, Some(within));
    let members = cx.scope.leave();
    let items = plain_body(cx, h.id, items, &spath, spos);
    (Some(items), members)
}

/// D-236: `parallel: {<branch>: [steps], …}` → a `fork__` step opening one strand per
/// branch (FAN-3), each branch's steps chained on it, and a `merge` join (the step's own
/// id) whose output holds the branch scopes by name.
pub(super) fn parallel(
    cx: &mut Ctx<'_>,
    h: &Head<'_>,
    construct_keys: &[Key<'_>],
) -> (Option<Out>, Shape) {
    only_keys(cx, h, construct_keys, &[]);
    let bpath = body_path(h);
    let branches = match &h.body.node {
        N::Map(b) if !b.is_empty() && b.iter().all(|(_, _, v)| is_step_list(v)) => b,
        _ => {
            cx.unsupported(
                "YML-5",
                bpath,
                h.body.pos,
                format!(
                    "parallel at line {}: only a map of branch name to a non-empty list of \
                     steps can run, not {}",
                    h.body.pos.line,
                    h.body.kind()
                ),
            );
            return (None, Shape::Free);
        }
    };
    let mut out_branches = Vec::new();
    let mut shape = Vec::new();
    let mut scope = Vec::new();
    for (b, bpos, list) in branches {
        let N::Seq(list) = &list.node else {
            continue;
        };
        let within = format!("{}.{b}", h.id);
        let lpath = format!("{bpath}/{}", pointer_token(b));
        cx.scope.enter(&within, None);
        let items = check_list(cx, &lpath, list, Some(&within));
        let members = cx.scope.leave();
        let items = plain_body(cx, h.id, items, &lpath, *bpos);
        scope.push((b.clone(), scope_of(&members)));
        shape.push((b.clone(), members));
        out_branches.push((b.clone(), items));
    }
    let json = control_step(h.id, "merge", json!({"mode": "object"}));
    let out = Out::Parallel {
        json,
        branches: out_branches,
        scope,
    };
    (Some(out), Shape::Branches(shape))
}

fn is_step_list(v: &Y) -> bool {
    matches!(&v.node, N::Seq(items) if !items.is_empty())
}
