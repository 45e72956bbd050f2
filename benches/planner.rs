//! Planning must stay near-linear (issue 2): a 100,000-step / 300,000-edge workflow plans
//! well under a second in release mode. Also benches save-time validation of the same
//! document, which runs the same graph checks over the raw JSON.
//!
//! `cargo bench --bench planner`; `cargo bench --bench planner -- --test` runs each once.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use w6w_sim::model::Workflow;
use w6w_sim::plan::plan;
use w6w_sim::validate::{ValidateOptions, validate_workflow};

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

fn bench(c: &mut Criterion) {
    let doc = document(STEPS, EDGES);
    let workflow: Workflow = serde_json::from_value(doc.clone()).expect("bench workflow parses");
    assert!(plan(&workflow).is_ok(), "the bench workflow is a DAG");
    let mut group = c.benchmark_group("planner");
    group.sample_size(10);
    group.bench_function("plan 100k steps / 300k edges", |b| {
        b.iter(|| plan(black_box(&workflow)).map(|p| p.order.len()))
    });
    group.bench_function("validate 100k steps / 300k edges", |b| {
        b.iter(|| {
            validate_workflow(black_box(&doc), ValidateOptions::default()).map(|w| w.steps.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
