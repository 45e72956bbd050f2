//! Crash at every checkpoint, under strands and inside sub-blocks (RUN-4, FAN-5, CTRL-4/6/7).
//!
//! For each workflow below: run it crash-free, then once per checkpoint k (1 ..= the
//! crash-free count) with `crashAfterCheckpoint: [k]`. Every crashed run must end in the
//! crash-free RunState (semantic fields: everything but timestamps; attempt counts
//! included), and no invocation that completed before the crash may be repeated. A step in
//! its backoff wait while another strand checkpoints is the hard case: its failed attempt
//! is durable before the wait begins (D-111), so the resumed run finishes the wait and runs
//! the attempt it scheduled — never the failed one again.

use serde_json::{Map, Value, json};
use w6w_sim::sim::{self, Report};

fn app(id: &str) -> Value {
    json!({"id": id, "uses": {"app": "demo", "action": id}})
}

fn with(mut step: Value, with: Value) -> Value {
    step["with"] = with;
    step
}

fn echo(latencies: &[u64]) -> Value {
    let outcomes: Vec<Value> = latencies
        .iter()
        .map(|l| json!({"echo": true, "latencyMs": l}))
        .collect();
    json!({"outcomes": outcomes})
}

/// A parallel root → three branches finishing out of plan order → an aggregate join → a
/// step reading it; one branch retries once after a 50 ms backoff.
fn fan_out_fan_in() -> (Value, Value, Option<&'static str>) {
    let wf = json!({"manifestVersion": "2", "id": "fan", "name": "fan", "steps": [
        {"id": "root", "uses": {"app": "demo", "action": "root"}, "fanOut": "parallel"},
        with(app("a"), json!({"from": "a"})),
        with(app("b"), json!({"from": "b"})),
        {"id": "r", "uses": {"app": "demo", "action": "r"}, "with": {"from": "r"},
         "retry": {"maxAttempts": 2, "backoff": "fixed", "delayMs": 50}},
        {"id": "join", "uses": {"app": "@w6w/control", "action": "aggregate"}, "with": {"mode": "array"}},
        with(app("after"), json!({"all": {"$": "steps.join.output.result"}}))],
      "edges": [
        {"from": "root", "to": "a"}, {"from": "root", "to": "b"}, {"from": "root", "to": "r"},
        {"from": "a", "to": "join"}, {"from": "b", "to": "join"}, {"from": "r", "to": "join"},
        {"from": "join", "to": "after"}]});
    let sc = json!({"actions": {
        "a": echo(&[30]), "b": echo(&[10]), "after": echo(&[0]),
        "r": {"idempotent": true, "outcomes": [
            {"error": {"code": "flaky", "message": "flaky", "phase": "execute"}, "latencyMs": 5},
            {"echo": true, "latencyMs": 5}]}}});
    (wf, sc, Some("r"))
}

/// A foreach over 5 items whose two-step body finishes out of index order.
fn foreach(parallelism: u64) -> (Value, Value, Option<&'static str>) {
    let wf = json!({"manifestVersion": "2", "id": "loop", "name": "loop", "steps": [
        {"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
         "with": {"items": [10, 20, 30, 40, 50], "body": ["f", "g"], "parallelism": parallelism}},
        with(app("f"), json!({"item": {"$": "foreach.item"}, "i": {"$": "foreach.index"}})),
        with(app("g"), json!({"v": {"$": "steps.f.output.item"}})),
        with(app("after"), json!({"items": {"$": "steps.loop.output.items"}}))],
      "edges": [{"from": "loop", "to": "after"}]});
    let sc = json!({"actions": {"f": echo(&[40, 10, 30, 0, 20]), "g": echo(&[5, 25, 0, 15, 10]),
                                "after": echo(&[0])}});
    (wf, sc, None)
}

/// A `parallel` control (strategy all) with a two-step and a one-step branch.
fn parallel_control() -> (Value, Value, Option<&'static str>) {
    let wf = json!({"manifestVersion": "2", "id": "par", "name": "par", "steps": [
        {"id": "par", "uses": {"app": "@w6w/control", "action": "parallel"},
         "with": {"branches": [["p1", "p2"], ["q1"]]}},
        with(app("p1"), json!({"n": 1})),
        with(app("p2"), json!({"up": {"$": "steps.p1.output.n"}})),
        with(app("q1"), json!({"n": 2})),
        with(app("after"), json!({"b": {"$": "steps.par.output.branches"}}))],
      "edges": [{"from": "par", "to": "after"}]});
    let sc = json!({"actions": {"p1": echo(&[20]), "p2": echo(&[20]), "q1": echo(&[30]),
                                "after": echo(&[0])}});
    (wf, sc, None)
}

/// A wait on one strand while another strand works; the join after both.
fn wait_on_a_strand() -> (Value, Value, Option<&'static str>) {
    let wf = json!({"manifestVersion": "2", "id": "w", "name": "w", "steps": [
        {"id": "root", "uses": {"app": "demo", "action": "root"}, "fanOut": "parallel"},
        {"id": "pause", "uses": {"app": "@w6w/control", "action": "wait"}, "with": {"duration": "PT1M"}},
        with(app("x"), json!({"n": 1})),
        with(app("after"), json!({"x": {"$": "steps.x.output"}}))],
      "edges": [{"from": "root", "to": "pause"}, {"from": "root", "to": "x"},
                {"from": "pause", "to": "after"}, {"from": "x", "to": "after"}]});
    let sc = json!({"actions": {"x": echo(&[10]), "after": echo(&[0])}});
    (wf, sc, None)
}

/// Two strands retrying with long backoffs while a third keeps checkpointing, and a
/// foreach whose body step retries inside its iteration frames (D-111). Failed attempts
/// take no virtual time, so a crash can interrupt a retrying step only in its backoff —
/// an attempt in flight at the crash runs again by design (RUN-4) and, against this
/// scripted world, would get the next answer.
fn backoffs_under_strands() -> (Value, Value, Option<&'static str>) {
    let flaky = |n: usize| {
        let mut outcomes: Vec<Value> = (0..n)
            .map(|k| json!({"error": {"code": "flaky", "message": format!("try {k}"), "phase": "execute"}}))
            .collect();
        outcomes.push(json!({"echo": true, "latencyMs": 5}));
        json!({"idempotent": true, "outcomes": outcomes})
    };
    let wf = json!({"manifestVersion": "2", "id": "bk", "name": "bk", "steps": [
        {"id": "root", "uses": {"app": "demo", "action": "root"}, "fanOut": "parallel"},
        {"id": "p", "uses": {"app": "demo", "action": "p"}, "with": {"n": 1},
         "retry": {"maxAttempts": 4, "backoff": "exponential", "delayMs": 40}},
        {"id": "q", "uses": {"app": "demo", "action": "q"}, "with": {"n": 2},
         "retry": {"maxAttempts": 3, "backoff": "fixed", "delayMs": 70}},
        with(app("busy1"), json!({"n": 3})),
        with(app("busy2"), json!({"up": {"$": "steps.busy1.output"}})),
        {"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
         "with": {"items": [1, 2], "body": ["f"], "parallelism": 2}},
        {"id": "f", "uses": {"app": "demo", "action": "f"}, "with": {"item": {"$": "foreach.item"}},
         "retry": {"maxAttempts": 2, "backoff": "fixed", "delayMs": 25}},
        {"id": "join", "uses": {"app": "@w6w/control", "action": "aggregate"}, "with": {"mode": "array"}}],
      "edges": [
        {"from": "root", "to": "p"}, {"from": "root", "to": "q"}, {"from": "root", "to": "busy1"},
        {"from": "root", "to": "loop"}, {"from": "busy1", "to": "busy2"},
        {"from": "p", "to": "join"}, {"from": "q", "to": "join"}, {"from": "busy2", "to": "join"},
        {"from": "loop", "to": "join"}]});
    let sc = json!({"actions": {
        "p": flaky(3), "q": flaky(2), "busy1": echo(&[30]), "busy2": echo(&[30]),
        "f": {"idempotent": true, "outcomes": [
            {"error": {"code": "flaky", "phase": "execute"}},
            {"echo": true, "latencyMs": 10}, {"echo": true, "latencyMs": 15}]}}});
    (wf, sc, Some("q"))
}

fn simulate(wf: &Value, sc: &Value) -> Report {
    let wf = sim::load_workflow(wf).expect("workflow is valid");
    let sc = sim::load_scenario(sc).expect("scenario is valid");
    sim::Simulation::new(&wf, &sc)
        .run()
        .expect("the simulator produces a report")
}

/// Drop timestamps at any depth (sub-block records sit inside the control's `extra`).
fn untimed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "startedAt" | "finishedAt" | "resumedAt"))
                .map(|(k, v)| (k.clone(), untimed(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(untimed).collect()),
        other => other.clone(),
    }
}

fn semantic(r: &Report) -> Value {
    let run = &r.run;
    let mut errors: Vec<String> = run
        .step_errors
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    errors.sort();
    untimed(
        &json!({"status": run.status.as_str(), "output": run.output, "error": run.error,
                    "steps": run.steps, "stepErrors": errors,
                    "waitSeq": run.extra.get("waitSeq")}),
    )
}

fn invocations(r: &Report) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for i in &r.world.invocations {
        let id = i.step_id.to_string();
        *out.entry(id).or_insert(0) += 1;
    }
    out
}

fn crash_everywhere(name: &str, (wf, sc, retrying): (Value, Value, Option<&str>)) {
    let plain = simulate(&wf, &sc);
    assert_eq!(
        plain.run.status.as_str(),
        "succeeded",
        "{name}: crash-free run"
    );
    let want = semantic(&plain);
    let plain_calls = invocations(&plain);
    let plain_tokens: Vec<Value> = plain
        .world
        .schedules
        .iter()
        .map(|s| s["token"].clone())
        .collect();
    assert!(plain.world.checkpoints > 3, "{name}: checkpoints");
    for k in 1..=plain.world.checkpoints {
        let mut faulted = sc.clone();
        faulted["faults"] = json!({"crashAfterCheckpoint": [k]});
        let crashed = simulate(&wf, &faulted);
        let at = format!("{name}: crash after checkpoint {k}\nscenario: {faulted}\nworkflow: {wf}");
        assert_eq!(crashed.world.crashes, 1, "{at}");
        assert_eq!(semantic(&crashed), want, "{at}");
        // RUN-4 / D-111: no attempt the engine recorded runs again, a failed one included.
        assert_eq!(invocations(&crashed), plain_calls, "{at}");
        if let Some(r) = retrying {
            // The retrying step's backoff is really crossed by a checkpoint of another
            // strand (otherwise this workflow would not test D-111).
            assert!(
                plain.world.waits.iter().any(|w| w["stepId"] == r),
                "{name}: {r} retries"
            );
        }
        // CTRL-7: every schedule carries a token of the crash-free run (never a fresh one).
        for s in &crashed.world.schedules {
            assert!(
                plain_tokens.contains(&s["token"]),
                "{at}\nstale schedule token {}",
                s["token"]
            );
        }
    }
}

#[test]
fn fan_out_fan_in_recovers_from_a_crash_at_every_checkpoint() {
    crash_everywhere("fan-out/fan-in", fan_out_fan_in());
}

#[test]
fn sequential_foreach_recovers_from_a_crash_at_every_checkpoint() {
    crash_everywhere("foreach parallelism 1", foreach(1));
}

#[test]
fn parallel_foreach_recovers_from_a_crash_at_every_checkpoint() {
    crash_everywhere("foreach parallelism 3", foreach(3));
}

#[test]
fn parallel_control_recovers_from_a_crash_at_every_checkpoint() {
    crash_everywhere("parallel all", parallel_control());
}

#[test]
fn wait_on_a_strand_recovers_from_a_crash_at_every_checkpoint() {
    crash_everywhere("wait on a strand", wait_on_a_strand());
}

#[test]
fn backoffs_under_strands_recover_from_a_crash_at_every_checkpoint() {
    crash_everywhere("backoffs under strands", backoffs_under_strands());
}
