//! What the engine and strands benches share: the sequential echo chain both measure (so
//! the strands bench's "vs the chain" ratio compares the very same workflow) and how a
//! workflow is run on the simulator (trace off, the run must succeed).

use serde_json::{Value, json};
use w6w_sim::model::Workflow;
use w6w_sim::sim::{self, SimOptions};

/// An `n`-step chain of echo actions, each reading the previous step's output.
pub fn chain(n: usize) -> Value {
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let with = if i == 0 {
                json!({"seed": 1})
            } else {
                json!({"prev": {"$": format!("steps.s{}.output.i", i - 1)}, "i": i})
            };
            json!({"id": format!("s{i}"), "uses": {"app": "echo", "action": "echo"}, "with": with})
        })
        .collect();
    json!({"manifestVersion": "2", "id": "wf_chain", "name": "chain", "steps": steps})
}

/// A parallel root → `n` echo branches (each reading the root) → one aggregate join.
#[allow(dead_code)] // the engine bench does not use it
pub fn fan_out(n: usize) -> Value {
    let mut steps = vec![
        json!({"id": "root", "uses": {"app": "echo", "action": "echo"},
                                "with": {"seed": 1}, "fanOut": "parallel"}),
    ];
    let mut edges = Vec::new();
    for i in 0..n {
        let id = format!("b{i}");
        steps.push(json!({"id": id, "uses": {"app": "echo", "action": "echo"},
                          "with": {"i": i, "seed": {"$": "steps.root.output.seed"}}}));
        edges.push(json!({"from": "root", "to": id}));
        edges.push(json!({"from": id, "to": "join"}));
    }
    steps.push(
        json!({"id": "join", "uses": {"app": "@w6w/control", "action": "aggregate"},
                      "with": {"mode": "array"}}),
    );
    json!({"manifestVersion": "2", "id": "wf_fan", "name": "fan", "steps": steps, "edges": edges})
}

/// A foreach over `n` items, `parallelism` at a time, with a one-step echo body.
#[allow(dead_code)] // the engine bench does not use it
pub fn foreach(n: usize, parallelism: u64) -> Value {
    let items: Vec<Value> = (0..n).map(|i| json!(i)).collect();
    json!({"manifestVersion": "2", "id": "wf_loop", "name": "loop", "steps": [
        {"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
         "with": {"items": items, "body": ["body"], "parallelism": parallelism}},
        {"id": "body", "uses": {"app": "echo", "action": "echo"},
         "with": {"item": {"$": "foreach.item"}}}]})
}

/// Run on the simulator with the trace off (benches measure the engine, not trace I/O).
pub fn run(workflow: &Workflow) -> sim::Report {
    let options = SimOptions {
        keep_trace: false,
        ..SimOptions::default()
    };
    let scenario = sim::load_scenario(&json!({})).expect("scenario");
    let r = sim::Simulation::new(workflow, &scenario)
        .options(&options)
        .run()
        .expect("report");
    assert_eq!(r.run.status.as_str(), "succeeded");
    r
}

/// Time one run of the 10,000-step chain as criterion group `group` (function `10000`):
/// the engine bench on the system allocator (`chain`), and on mimalloc (`chain_mimalloc`).
#[allow(dead_code)] // the strands bench shares this module but not this function
pub fn bench_chain(c: &mut criterion::Criterion, group: &str) {
    let wf = sim::load_workflow(&chain(10_000)).expect("workflow");
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.bench_function("10000", |b| b.iter(|| run(&wf)));
    group.finish();
}
