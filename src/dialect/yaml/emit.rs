//! The w6w steps and edges of a checked YAML document (YML-4, YML-13; D-36, D-233..D-236).
//!
//! Owns: list order → the implicit chain when every item is one plain step; otherwise
//! explicit edges from each item's entry to the "continuation" of the items before it:
//! a plain step continues from itself; a `when`-guarded item from what came before it and
//! itself (a skipped step never skips what follows, D-36); a `stop` from nothing (every
//! later step is skipped) or, guarded, from its `unless__` twin (the run goes on exactly
//! when the guard is false, D-234); a `for_each` from its `foreach` step, whose body is a
//! sub-block ending in a `scope__` merge (D-235); a `parallel` from its join, after a
//! `fork__` step that opens one strand per branch (D-236).
//! Invariant: only edges of the main graph are written; a `for_each` body's steps run as
//! the sub-block's implicit chain (CTRL-4, PLAN-7).

use serde_json::{Map, Value, json};

use super::GUARD_PREFIX;
use crate::dialect::{Binds, StepInfo, StepKind};
use crate::plan::CONTROL_APP;

/// One checked step, ready to be emitted.
pub(super) struct Item {
    pub id: String,
    pub line: usize,
    /// The `if` condition of its `when` (YML-13, D-36).
    pub guard: Option<Value>,
    pub out: Out,
}

/// What a step becomes.
pub(super) enum Out {
    /// One w6w step (action call, run, agent, value, render, wait).
    Step {
        json: Map<String, Value>,
        kind: StepKind,
        max_attempts: u64,
        binds: Binds,
    },
    /// `stop`: an `if` whose condition is false (D-234).
    Stop { json: Map<String, Value> },
    /// `for_each`: the `foreach` step (its `body` filled here), its body's steps and the
    /// `scope__` entries (member id, the w6w path of what it binds).
    ForEach {
        json: Map<String, Value>,
        body: Vec<Item>,
        scope: Vec<(String, String)>,
    },
    /// `parallel`: each branch's name and steps; the join's entries.
    Parallel {
        json: Map<String, Value>,
        branches: Vec<(String, Vec<Item>)>,
        scope: Vec<(String, Vec<(String, String)>)>,
    },
}

type Emitted = (Vec<Value>, Option<Value>, Vec<StepInfo>);

#[derive(Default)]
struct Emit {
    steps: Vec<Value>,
    edges: Vec<Value>,
    infos: Vec<StepInfo>,
}

pub(super) fn control_step(id: &str, action: &str, with: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(id));
    m.insert("uses".into(), json!({"app": CONTROL_APP, "action": action}));
    m.insert("with".into(), with);
    m
}

/// The `if` condition that is true exactly when `cond` is false.
fn negated(cond: &Value) -> Value {
    match cond {
        Value::Bool(b) => json!(!b),
        Value::Object(m) => match m.get("$").and_then(Value::as_str) {
            Some(path) => json!({"$expr": {"!": [{"var": path}]}}),
            None => json!({"$expr": {"!": [cond]}}),
        },
        // `when` conditions are booleans or `$` markers (D-36); anything else is negated
        // by JSONLogic, as the guard's truthiness is.
        other => json!({"$expr": {"!": [other]}}),
    }
}

/// Build the workflow's steps, its edges (when the list is not a plain chain) and the
/// step infos.
pub(super) fn workflow_steps(items: Vec<Item>) -> Emitted {
    let mut e = Emit::default();
    let chain = items
        .iter()
        .all(|i| i.guard.is_none() && matches!(i.out, Out::Step { .. }));
    if chain {
        for item in items {
            e.item(item, true);
        }
        return (e.steps, None, e.infos);
    }
    let mut cont: Vec<String> = Vec::new();
    let first_guarded = items
        .first()
        .is_some_and(|i| i.guard.is_some() && !matches!(i.out, Out::Stop { .. }));
    if first_guarded {
        let start = format!("{GUARD_PREFIX}start");
        e.synthetic(control_step(&start, "if", json!({"condition": true})), 1);
        cont.push(start);
    }
    for item in items {
        cont = e.top(item, cont);
    }
    (e.steps, Some(Value::Array(e.edges)), e.infos)
}

impl Emit {
    fn edge(&mut self, from: &str, to: &str) {
        self.edges.push(json!({"from": from, "to": to}));
    }

    fn synthetic(&mut self, json: Map<String, Value>, line: usize) {
        let id = json.get("id").and_then(Value::as_str).unwrap_or_default();
        self.infos.push(StepInfo {
            id: id.to_owned(),
            kind: StepKind::Guard,
            max_attempts: 1,
            line,
            binds: Binds::Nothing,
        });
        self.steps.push(Value::Object(json));
    }

    /// One top-level item after the continuation `cont`; returns the new continuation.
    fn top(&mut self, item: Item, cont: Vec<String>) -> Vec<String> {
        let id = item.id.clone();
        let line = item.line;
        let stop = matches!(item.out, Out::Stop { .. });
        let Some(cond) = item.guard.clone() else {
            let (entry, exit) = self.core(item);
            for from in &cont {
                self.edge(from, &entry);
            }
            return vec![exit];
        };
        let g = format!("{GUARD_PREFIX}{id}");
        self.synthetic(control_step(&g, "if", json!({"condition": cond})), line);
        for from in &cont {
            self.edge(from, &g);
        }
        let (entry, exit) = self.core(item);
        self.edge(&g, &entry);
        if stop {
            // D-234: the run goes on from `unless__X`, which matches exactly when the
            // guard does not; the stop itself lets nothing through.
            let u = format!("unless__{id}");
            self.synthetic(
                control_step(&u, "if", json!({"condition": negated(&cond)})),
                line,
            );
            for from in &cont {
                self.edge(from, &u);
            }
            return vec![u];
        }
        let mut next = cont;
        next.push(exit);
        next
    }

    /// The item's own steps: `(entry, exit)`.
    fn core(&mut self, item: Item) -> (String, String) {
        let Item { id, line, out, .. } = item;
        match out {
            Out::Step { .. } => {
                self.item(
                    Item {
                        id: id.clone(),
                        line,
                        guard: None,
                        out,
                    },
                    true,
                );
                (id.clone(), id)
            }
            Out::Stop { json } => {
                // Later steps hang off the stop, whose unmatched `if` skips them (CTRL-2).
                self.push(json, StepKind::Stop, line, Binds::Nothing);
                (id.clone(), id)
            }
            Out::ForEach { json, body, scope } => {
                self.for_each(&id, line, json, body, scope);
                (id.clone(), id)
            }
            Out::Parallel {
                json,
                branches,
                scope,
            } => {
                let fork = format!("fork__{id}");
                let mut f = control_step(&fork, "if", json!({"condition": true}));
                f.insert("fanOut".into(), json!("parallel"));
                self.synthetic(f, line);
                for (_, steps) in branches {
                    let mut prev = fork.clone();
                    for s in steps {
                        let sid = s.id.clone();
                        self.item(s, false);
                        self.edge(&prev, &sid);
                        prev = sid;
                    }
                    self.edge(&prev, &id);
                }
                let mut join = json;
                join.insert(
                    "with".into(),
                    json!({"mode": "object", "entries": scope.into_iter().map(|(b, members)| {
                        json!({"key": b, "value": scope_map(members)})
                    }).collect::<Vec<_>>()}),
                );
                self.push(join, StepKind::Parallel, line, Binds::Result);
                (fork, id)
            }
        }
    }

    fn for_each(
        &mut self,
        id: &str,
        line: usize,
        mut json: Map<String, Value>,
        body: Vec<Item>,
        scope: Vec<(String, String)>,
    ) {
        let scope_id = format!("scope__{id}");
        let mut ids: Vec<Value> = body.iter().map(|s| json!(s.id)).collect();
        ids.push(json!(scope_id));
        if let Some(Value::Object(with)) = json.get_mut("with") {
            with.insert("body".into(), Value::Array(ids));
        }
        self.push(json, StepKind::ForEach, line, Binds::IterationScopes);
        for s in body {
            self.item(s, false);
        }
        // D-235: the iteration's scope, one entry per step that binds something.
        let entries: Vec<Value> = scope
            .into_iter()
            .map(|(m, path)| json!({"key": m, "value": {"$": path}}))
            .collect();
        self.synthetic(
            control_step(
                &scope_id,
                "merge",
                json!({"mode": "object", "entries": entries}),
            ),
            line,
        );
    }

    fn push(&mut self, json: Map<String, Value>, kind: StepKind, line: usize, binds: Binds) {
        let id = json.get("id").and_then(Value::as_str).unwrap_or_default();
        self.infos.push(StepInfo {
            id: id.to_owned(),
            kind,
            max_attempts: 1,
            line,
            binds,
        });
        self.steps.push(Value::Object(json));
    }

    /// A one-step item (no guard); `top`: whether its binding is listed in the report.
    fn item(&mut self, item: Item, top: bool) {
        let Out::Step {
            json,
            kind,
            max_attempts,
            binds,
        } = item.out
        else {
            return;
        };
        self.infos.push(StepInfo {
            id: item.id,
            kind,
            max_attempts,
            line: item.line,
            binds: if top { binds } else { Binds::Nothing },
        });
        self.steps.push(Value::Object(json));
    }
}

/// `{id: {"$": path}}` for each member of a scope (D-235, D-236).
fn scope_map(members: Vec<(String, String)>) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(id, path)| (id, json!({"$": path})))
            .collect(),
    )
}
