//! Planning must stay near-linear (issue 2): a 100,000-step / 300,000-edge workflow plans
//! well under a second in release mode. Issue 13 item 3 measures it against a peer and a
//! floor in the same run:
//!
//! - `planner/petgraph`: petgraph (pinned in Cargo.toml) building the same string-id graph
//!   from the same typed workflow (a `HashMap<&str, NodeIndex>` for the ids, one node per
//!   step, one edge per declared edge) and sorting it with `petgraph::algo::toposort`;
//! - `planner/ids_floor`: the yardstick (issue 42 item 5) — the floor that also resolves the
//!   string ids: a fast-hash (`foldhash`) `&str → u32` map of the declared steps, the edges
//!   looked up through it, then the same Kahn and min-heap as `kahn_floor`;
//! - `planner/kahn_floor`: the integer-only floor, for information — the edges already as
//!   integer pairs, one compressed adjacency, Kahn with a min-heap on declared index (the
//!   order PLAN-5 asks for);
//! - `planner/validate`: save-time validation of the same raw document (storage rules, the
//!   same graph checks over the raw JSON, then the typed model);
//! - `planner/read_floor`: the floor of any validation of that document, for information —
//!   reading each member name and each string of the `serde_json::Value` once, which any
//!   check of every member must do; `scripts/bench.sh` sets validation beside planning plus
//!   this floor (D-370).
//!
//! - `planner/validate_text` and `planner/plan_text`: from the document's text, parsing it
//!   with the tool's own parser and validating it (what `w6w-sim validate FILE` does; D-372)
//!   against parsing it into the typed
//!   model and planning it (no save-time check at all), for information.
//!
//! The same `ours`, `ids_floor`, `kahn_floor`, `validate`, `read_floor` and the two text
//! rows also run on two other shapes of
//! 100,000 steps: `planner_chain/*` (one edge from each step to the next) and `planner_fan/*`
//! (one root, every other step after it, one sink after those).
//!
//! Before timing, the bench prints (stderr) heap allocations and bytes per step for ours and
//! petgraph: allocated during the call, and still held by the result.
//!
//! `cargo bench --bench planner`; `cargo bench --bench planner -- --test` runs each once;
//! `scripts/bench.sh planner` prints the ratios.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use foldhash::fast::FixedState;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{Value, json};
use w6w_sim::__internals::json;
use w6w_sim::model::Workflow;
use w6w_sim::plan;
use w6w_sim::{ValidateOptions, validate_workflow};

mod heap;
use heap::{Counting, counted};

const STEPS: usize = 100_000;
const EDGES: usize = 300_000;

/// A deterministic DAG: edges always go from a lower to a higher index in a scrambled
/// numbering, so declared order is not the graph order and the heap does real work.
fn document(steps: usize, edges: usize) -> Value {
    // A fixed-multiplier permutation of 0..steps (the multiplier is coprime to `steps`).
    let scramble = |i: usize| (i * 7919) % steps;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift64: a fixed seed keeps the bench reproducible.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let step_docs: Vec<Value> = (0..steps)
        .map(|i| json!({"id": format!("step-{i}"), "uses": {"app": "app", "action": "act"}}))
        .collect();
    let edge_docs: Vec<Value> = (0..edges)
        .map(|_| {
            let a = (next() % steps as u64) as usize;
            let span = 1 + (next() % 64) as usize;
            let b = (a + span).min(steps - 1).max(a + 1).min(steps - 1);
            let (a, b) = if a == b { (a - 1, b) } else { (a, b) };
            json!({"from": format!("step-{}", scramble(a)), "to": format!("step-{}", scramble(b))})
        })
        .collect();
    json!({"manifestVersion": "2", "id": "wf_bench", "name": "bench", "steps": step_docs, "edges": edge_docs})
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Run `f` once and print, per step, its allocations, its peak extra heap and what its
/// result still holds. The allocator counts only inside this call: counting every
/// allocation would tax the timed runs in proportion to how much each one allocates —
/// validation allocates about a million times per run, the planner a few (D-175).
fn memory<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let (out, heap) = counted(f);
    let per = |x: usize| x as f64 / STEPS as f64;
    eprintln!(
        "planner memory {label:<9} {:>5.2} allocations/step, peak {:>6.1} B/step, result holds {:>6.1} B/step",
        per(heap.allocations),
        per(heap.peak),
        per(heap.held)
    );
    out
}

/// The peer: petgraph builds the same string-id graph from the same workflow and sorts it.
fn petgraph_plan(workflow: &Workflow) -> Option<Vec<NodeIndex>> {
    let edges = workflow.edges();
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(workflow.steps.len(), edges.len());
    let mut ids: HashMap<&str, NodeIndex> = HashMap::with_capacity(workflow.steps.len());
    for step in &workflow.steps {
        let node = graph.add_node(());
        ids.entry(step.id.as_str()).or_insert(node);
    }
    for edge in edges {
        let (&from, &to) = (ids.get(edge.from.as_str())?, ids.get(edge.to.as_str())?);
        graph.add_edge(from, to, ());
    }
    petgraph::algo::toposort(&graph, None).ok()
}

/// The floor: integer edges, one compressed adjacency, Kahn with a min-heap on declared
/// index — the order PLAN-5 defines, with nothing else.
fn kahn_floor(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
    let mut start = vec![0u32; n + 1];
    let mut indegree = vec![0u32; n];
    for &(from, to) in edges {
        start[from as usize + 1] += 1;
        indegree[to as usize] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut targets = vec![0u32; edges.len()];
    for &(from, to) in edges {
        targets[fill[from as usize] as usize] = to;
        fill[from as usize] += 1;
    }
    let mut ready: BinaryHeap<Reverse<u32>> = (0..n as u32)
        .filter(|&v| indegree[v as usize] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(v)) = ready.pop() {
        order.push(v);
        let v = v as usize;
        for &w in &targets[start[v] as usize..start[v + 1] as usize] {
            indegree[w as usize] -= 1;
            if indegree[w as usize] == 0 {
                ready.push(Reverse(w));
            }
        }
    }
    order
}

/// A chain: `step-0 → step-1 → …`, declared in order.
fn chain_document(steps: usize) -> Value {
    let step_docs: Vec<Value> = (0..steps)
        .map(|i| json!({"id": format!("step-{i}"), "uses": {"app": "app", "action": "act"}}))
        .collect();
    let edge_docs: Vec<Value> = (1..steps)
        .map(|i| json!({"from": format!("step-{}", i - 1), "to": format!("step-{i}")}))
        .collect();
    json!({"manifestVersion": "2", "id": "wf_chain", "name": "chain", "steps": step_docs, "edges": edge_docs})
}

/// A fan: `step-0` before every middle step, every middle step before the last.
fn fan_document(steps: usize) -> Value {
    let step_docs: Vec<Value> = (0..steps)
        .map(|i| json!({"id": format!("step-{i}"), "uses": {"app": "app", "action": "act"}}))
        .collect();
    let last = steps - 1;
    let edge_docs: Vec<Value> = (1..last)
        .flat_map(|i| {
            [
                json!({"from": "step-0", "to": format!("step-{i}")}),
                json!({"from": format!("step-{i}"), "to": format!("step-{last}")}),
            ]
        })
        .collect();
    json!({"manifestVersion": "2", "id": "wf_fan", "name": "fan", "steps": step_docs, "edges": edge_docs})
}

/// The yardstick: the string ids resolved through a fast-hash map to their declared
/// indexes, the edges looked up through it, then [`kahn_floor`].
fn ids_floor(workflow: &Workflow) -> Vec<u32> {
    let mut index: HashMap<&str, u32, FixedState> =
        HashMap::with_capacity_and_hasher(workflow.steps.len(), FixedState::default());
    for (i, step) in workflow.steps.iter().enumerate() {
        index.insert(step.id.as_str(), i as u32);
    }
    let edges: Vec<(u32, u32)> = workflow
        .edges()
        .iter()
        .filter_map(|e| Some((*index.get(e.from.as_str())?, *index.get(e.to.as_str())?)))
        .collect();
    kahn_floor(workflow.steps.len(), &edges)
}

/// The same document from its text, as a file or a protocol line brings it: `validate_text`
/// parses it with the tool's own parser (serde_json's, refusing duplicate keys) and
/// validates it (what `w6w-sim validate FILE` does), `plan_text` parses it
/// straight into the typed model and plans it (the least any tool does to plan a document,
/// with no save-time check at all). Information beside the in-memory rows (D-370).
fn from_text(group: &mut BenchmarkGroup<'_, WallTime>, doc: &Value) {
    let text = doc.to_string();
    group.bench_function("validate_text", |b| {
        b.iter(|| {
            let doc = json::parse_bytes(black_box(text.as_bytes())).expect("the bench text parses");
            validate_workflow(&doc, ValidateOptions::default()).map(|w| w.steps.len())
        })
    });
    group.bench_function("plan_text", |b| {
        b.iter(|| {
            let workflow: Workflow =
                serde_json::from_str(black_box(&text)).expect("the bench text parses");
            plan(&workflow).map(|p| p.order.len())
        })
    });
}

/// The document read once: each member name's and each string's length and first byte, for
/// every object, array and string in it — what any walk that checks every member of the
/// document must at least read (each name and string is a heap block of its own).
fn read_floor(v: &Value) -> usize {
    let text = |s: &str| s.len() + s.as_bytes().first().map_or(0, |&b| usize::from(b));
    match v {
        Value::String(s) => text(s),
        Value::Array(items) => items.iter().map(read_floor).sum(),
        Value::Object(members) => members.iter().map(|(k, v)| text(k) + read_floor(v)).sum(),
        _ => 1,
    }
}

/// Planning, the yardstick, the integer floor, validation and the read floor on one more
/// shape.
fn shape(c: &mut Criterion, group: &str, doc: &Value) {
    let workflow: Workflow = serde_json::from_value(doc.clone()).expect("bench workflow parses");
    let ours = plan(&workflow).expect("the bench workflow is a DAG");
    assert!(
        ids_floor(&workflow)
            .iter()
            .map(|&v| v as usize)
            .eq(ours.order.iter().copied()),
        "the yardstick sorts in the planner's order"
    );
    let int_edges = integer_edges(&workflow);
    let n = workflow.steps.len();
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.bench_function("ours", |b| {
        b.iter(|| plan(black_box(&workflow)).map(|p| p.order.len()))
    });
    group.bench_function("ids_floor", |b| {
        b.iter(|| ids_floor(black_box(&workflow)).len())
    });
    group.bench_function("kahn_floor", |b| {
        b.iter(|| kahn_floor(n, black_box(&int_edges)).len())
    });
    group.bench_function("validate", |b| {
        b.iter(|| {
            validate_workflow(black_box(doc), ValidateOptions::default()).map(|w| w.steps.len())
        })
    });
    group.bench_function("read_floor", |b| b.iter(|| read_floor(black_box(doc))));
    from_text(&mut group, doc);
    group.finish();
}

/// The workflow's edges as pairs of declared indexes.
fn integer_edges(workflow: &Workflow) -> Vec<(u32, u32)> {
    let index: HashMap<&str, u32> = workflow
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i as u32))
        .collect();
    workflow
        .edges()
        .iter()
        .map(|e| (index[e.from.as_str()], index[e.to.as_str()]))
        .collect()
}

fn shapes(c: &mut Criterion) {
    shape(c, "planner_chain", &chain_document(STEPS));
    shape(c, "planner_fan", &fan_document(STEPS));
}

fn bench(c: &mut Criterion) {
    let doc = document(STEPS, EDGES);
    let workflow: Workflow = serde_json::from_value(doc.clone()).expect("bench workflow parses");
    let ours = plan(&workflow).expect("the bench workflow is a DAG");
    let int_edges = integer_edges(&workflow);
    let floor = kahn_floor(STEPS, &int_edges);
    assert!(
        floor
            .iter()
            .map(|&v| v as usize)
            .eq(ours.order.iter().copied()),
        "the floor sorts in the planner's order"
    );
    assert_eq!(
        ids_floor(&workflow),
        floor,
        "the yardstick sorts as the floor does"
    );
    assert!(
        petgraph_plan(&workflow).is_some(),
        "petgraph sorts the bench DAG"
    );
    drop(memory("ours", || plan(&workflow)));
    drop(memory("petgraph", || petgraph_plan(&workflow)));
    drop(memory("floor", || kahn_floor(STEPS, &int_edges)));
    drop(memory("validate", || {
        validate_workflow(&doc, ValidateOptions::default())
    }));
    let mut group = c.benchmark_group("planner");
    group.sample_size(10);
    group.bench_function("ours", |b| {
        b.iter(|| plan(black_box(&workflow)).map(|p| p.order.len()))
    });
    group.bench_function("petgraph", |b| {
        b.iter(|| petgraph_plan(black_box(&workflow)).map(|o| o.len()))
    });
    group.bench_function("ids_floor", |b| {
        b.iter(|| ids_floor(black_box(&workflow)).len())
    });
    group.bench_function("kahn_floor", |b| {
        b.iter(|| kahn_floor(STEPS, black_box(&int_edges)).len())
    });
    group.bench_function("validate", |b| {
        b.iter(|| {
            validate_workflow(black_box(&doc), ValidateOptions::default()).map(|w| w.steps.len())
        })
    });
    group.bench_function("read_floor", |b| b.iter(|| read_floor(black_box(&doc))));
    from_text(&mut group, &doc);
    group.finish();
}

criterion_group!(benches, bench, shapes);
criterion_main!(benches);
