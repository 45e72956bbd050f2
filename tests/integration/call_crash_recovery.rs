//! Crash anywhere in a run tree (issue 14 items 2 and 5; RUN-3, RUN-4, CALL-1, CTRL-7).
//!
//! Each workflow below calls child runs (`@w6w/call`, `wait: true`) whose steps include a
//! `wait`, so the caller blocks on the virtual clock while a child is suspended. One
//! global checkpoint numbering covers every run of the tree (D-121), so
//! `crashAfterCheckpoint: [k]` for every k of the crash-free run crashes the host inside
//! the parent, inside a child, and while a child is suspended; `crashInInvoke` names every
//! invoked step of every run, and the call steps themselves. Every crashed run must end in
//! the crash-free RunState — timestamps included, since a crash takes no virtual time —
//! at the same virtual time, and no completed invocation of any run may be repeated: a
//! re-dispatched call continues the child it started (D-120) instead of starting another.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use w6w_sim::sim::{self, Report};

fn app(id: &str, with: Value) -> Value {
    json!({"id": id, "uses": {"app": "demo", "action": id}, "with": with})
}

fn call(id: &str, workflow: &str, input: Value) -> Value {
    json!({"id": id, "uses": {"app": "@w6w/call", "action": "call"},
           "with": {"target": {"kind": "workflow", "workflow": workflow}, "input": input,
                    "wait": true}})
}

fn wait(id: &str, duration: &str) -> Value {
    json!({"id": id, "uses": {"app": "@w6w/control", "action": "wait"},
           "with": {"duration": duration}})
}

fn workflow(id: &str, steps: Vec<Value>) -> Value {
    json!({"manifestVersion": "2", "id": id, "name": id, "steps": steps})
}

/// A child that works, waits an hour, and works again.
fn waiting_child() -> Value {
    workflow(
        "child",
        vec![
            app("c1", json!({"n": {"$": "vars.n"}})),
            wait("w", "PT1H"),
            app("c2", json!({"m": {"$": "steps.c1.output.n"}})),
        ],
    )
}

/// parent: a → call(child) → b.
fn sequential_call() -> (Value, Value) {
    let wf = workflow(
        "wf",
        vec![
            app("a", json!({})),
            call("call", "child", json!({"n": 3})),
            app("b", json!({"got": {"$": "steps.call.output"}})),
        ],
    );
    (wf, json!({"workflows": {"child": waiting_child()}}))
}

/// A foreach of two iterations, each calling the waiting child (one dispatch key each).
fn call_in_foreach() -> (Value, Value) {
    let wf = workflow(
        "wf",
        vec![
            json!({"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
                   "with": {"items": [1, 2], "body": ["each"]}}),
            call("each", "child", json!({"n": {"$": "foreach.item"}})),
            app("after", json!({"all": {"$": "steps.loop.output.items"}})),
        ],
    );
    let mut wf = wf;
    wf["edges"] = json!([{"from": "loop", "to": "after"}]);
    (wf, json!({"workflows": {"child": waiting_child()}}))
}

/// parent → middle → grandchild (which waits): a suspended grandchild blocks two callers.
fn nested_calls() -> (Value, Value) {
    let wf = workflow(
        "wf",
        vec![
            call("top", "middle", json!({"n": 5})),
            app("b", json!({"got": {"$": "steps.top.output"}})),
        ],
    );
    let middle = workflow(
        "middle",
        vec![
            app("m1", json!({"n": {"$": "vars.n"}})),
            call("down", "child", json!({"n": {"$": "steps.m1.output.n"}})),
        ],
    );
    (
        wf,
        json!({"workflows": {"middle": middle, "child": waiting_child()}}),
    )
}

/// A run whose only step fails; its run-level reroute target waits ten minutes and
/// answers (RUNERR-7; D-110: a crash-resumed run still reroutes).
fn reroute_that_waits() -> (Value, Value) {
    let mut wf = workflow("wf", vec![app("x", json!({}))]);
    wf["reroute"] = json!({"target": {"kind": "workflow", "workflow": "handler"},
                           "with": {"code": {"$": "error.code"}}});
    let handler = workflow(
        "handler",
        vec![
            app("h1", json!({"code": {"$": "vars.code"}})),
            wait("hw", "PT1H"),
            app("h2", json!({"seen": {"$": "steps.h1.output.code"}})),
        ],
    );
    let sc = json!({"workflows": {"handler": handler},
                    "actions": {"x": {"outcomes": [{"error": {"code": "down", "phase": "execute"}}]}}});
    (wf, sc)
}

fn simulate(wf: &Value, sc: &Value) -> Report {
    let wf = sim::load_workflow(wf).expect("workflow is valid");
    let sc = sim::load_scenario(sc).expect("scenario is valid");
    sim::Simulation::new(&wf, &sc)
        .run()
        .expect("the simulator produces a report")
}

/// Completed invocations per (run, step).
fn invocations(r: &Report) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for i in &r.world.invocations {
        let run = i.run_id.as_deref().unwrap_or("top");
        *out.entry((run.to_owned(), i.step_id.to_string()))
            .or_insert(0) += 1;
    }
    out
}

/// The crash-free report, checked to be a real run tree.
fn baseline(name: &str, wf: &Value, sc: &Value) -> Report {
    let plain = simulate(wf, sc);
    assert_eq!(plain.run.status.as_str(), "succeeded", "{name}: crash-free");
    assert_eq!(plain.world.crashes, 0, "{name}");
    assert!(
        plain
            .world
            .schedules
            .iter()
            .all(|s| s.get("runId").is_some()),
        "{name}: every wait is a child's"
    );
    assert!(
        plain.world.clock_ms >= w6w_sim::__internals::sim::EPOCH_MS + 3_600_000,
        "{name}: the caller waited for the child's wait on the virtual clock"
    );
    assert!(
        invocations(&plain).keys().any(|(run, _)| run != "top"),
        "{name}: the report lists the children's invocations"
    );
    plain
}

fn same_run(name: &str, plain: &Report, crashed: &Report, repeats: &[(&str, &str)]) {
    assert_eq!(crashed.world.crashes, 1, "{name}: the fault fired");
    assert!(
        crashed.unfired.is_empty(),
        "{name}: unfired {:?}",
        crashed.unfired
    );
    let (want, got) = (
        serde_json::to_value(&plain.run).expect("state"),
        serde_json::to_value(&crashed.run).expect("state"),
    );
    assert_eq!(
        got, want,
        "{name}: the RunState does not depend on the crash"
    );
    assert_eq!(
        crashed.world.clock_ms, plain.world.clock_ms,
        "{name}: clock"
    );
    let before = invocations(plain);
    for (key, n) in invocations(crashed) {
        let was = before.get(&key).copied().unwrap_or(0);
        let allowed = u64::from(repeats.iter().any(|(r, s)| (*r, *s) == (&key.0, &key.1)));
        assert!(
            n >= was && n - was <= allowed,
            "{name}: {key:?} invoked {n} times, {was} without the crash"
        );
    }
}

fn crash_after_every_checkpoint(name: &str, (wf, sc): (Value, Value)) {
    let plain = baseline(name, &wf, &sc);
    for k in 1..=plain.world.checkpoints {
        let mut faulted = sc.clone();
        faulted["faults"] = json!({"crashAfterCheckpoint": [k]});
        let crashed = simulate(&wf, &faulted);
        same_run(
            &format!("{name}: crash after checkpoint {k}"),
            &plain,
            &crashed,
            &[],
        );
    }
}

fn crash_in_every_invocation(name: &str, (wf, sc): (Value, Value), calls: &[&str]) {
    let plain = baseline(name, &wf, &sc);
    let mut steps: Vec<(String, String)> = invocations(&plain).into_keys().collect();
    steps.extend(calls.iter().map(|c| ("call".to_owned(), (*c).to_owned())));
    for (run, step) in steps {
        let mut faulted = sc.clone();
        faulted["faults"] = json!({"crashInInvoke": [{"step": step}]});
        let crashed = simulate(&wf, &faulted);
        // The interrupted invocation ran; its result was never recorded: it runs again
        // (RUN-4). A call step's dispatch is not an action: its child is continued.
        let again = [(run.as_str(), step.as_str())];
        same_run(
            &format!("{name}: crash in {run}/{step}"),
            &plain,
            &crashed,
            &again,
        );
    }
}

#[test]
fn a_sequential_call_recovers_from_a_crash_at_every_checkpoint_of_the_tree() {
    crash_after_every_checkpoint("sequential call", sequential_call());
}

#[test]
fn calls_in_a_foreach_recover_from_a_crash_at_every_checkpoint_of_the_tree() {
    crash_after_every_checkpoint("calls in a foreach", call_in_foreach());
}

#[test]
fn nested_calls_recover_from_a_crash_at_every_checkpoint_of_the_tree() {
    crash_after_every_checkpoint("nested calls", nested_calls());
}

#[test]
fn a_reroute_that_waits_recovers_from_a_crash_at_every_checkpoint_of_the_tree() {
    crash_after_every_checkpoint("reroute", reroute_that_waits());
}

#[test]
fn a_crash_in_any_invocation_of_the_tree_fires_and_changes_nothing() {
    crash_in_every_invocation("reroute", reroute_that_waits(), &[]);
    crash_in_every_invocation("sequential call", sequential_call(), &["call"]);
    crash_in_every_invocation("nested calls", nested_calls(), &["top", "down"]);
}

#[test]
fn a_re_dispatched_call_continues_its_child_instead_of_starting_another() {
    let (wf, mut sc) = sequential_call();
    sc["faults"] = json!({"crashInInvoke": [{"step": "call"}]});
    let r = simulate(&wf, &sc);
    let calls: Vec<(Option<&str>, bool)> = r
        .world
        .calls
        .iter()
        .map(|c| {
            (
                c.get("childRunId").and_then(Value::as_str),
                c.get("continued") == Some(&json!(true)),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [(Some("run_1.call1"), false), (Some("run_1.call1"), true)]
    );
}
