//! What a run allocates per step must not grow with the run's width or length (issue 13
//! item 2, D-186): a fan-out of N branches, a foreach of N items and an N-step chain, each
//! at two sizes, allocate the same per executed step within a margin, in bytes and in peak
//! live bytes. Counted, not timed: allocation figures are deterministic for a given build.
//!
//! A strand's snapshot of the scope once deep-copied every output published so far, so a
//! 4,000-branch fan-out peaked at 3.3 GB (quadratic in its width), and a foreach body's
//! publish copied every output of the run before it (quadratic in the run, D-187); this
//! test fails on either.

#[path = "../benches/common/mod.rs"]
mod common;
#[path = "../benches/heap/mod.rs"]
mod heap;

use common::{chain, fan_out, foreach, run};
use heap::{Counting, counted};
use serde_json::Value;
use w6w_sim::sim;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated and peak live bytes per executed step of `doc`.
fn per_step(doc: &Value) -> (f64, f64) {
    let wf = sim::load_workflow(doc).expect("a valid workflow");
    let (r, heap) = counted(|| run(&wf));
    // Every echo step is invoked once: the invocations are the steps executed, give or take
    // a shape's one foreach or join step.
    let steps = r.world.invocations.len().max(1) as f64;
    (heap.allocated as f64 / steps, heap.peak as f64 / steps)
}

/// A workflow shape of a given size.
type Shape = fn(usize) -> Value;

/// An `n`-step chain, then a foreach over `n` items: each iteration's body publishes into
/// a scope that already holds the chain's `n` outputs (D-187).
fn chain_then_foreach(n: usize) -> Value {
    let mut doc = chain(n);
    let tail = foreach(n, 1);
    if let (Some(steps), Some(more)) = (doc["steps"].as_array_mut(), tail["steps"].as_array()) {
        steps.extend(more.iter().cloned());
    }
    doc
}

/// One test (the counting allocator is process-wide, so nothing else may run beside it).
#[test]
fn allocation_per_step_is_flat_in_width_and_length() {
    let shapes: [(&str, Shape, usize); 4] = [
        ("fan-out", fan_out, 250),
        ("foreach", |n| foreach(n, 10), 500),
        ("chain", chain, 500),
        ("chain then foreach", chain_then_foreach, 250),
    ];
    for (name, shape, small) in shapes {
        let (bytes_small, peak_small) = per_step(&shape(small));
        let (bytes_big, peak_big) = per_step(&shape(small * 4));
        eprintln!(
            "{name}: {small} → {}: {bytes_small:.0} → {bytes_big:.0} B allocated/step, {peak_small:.0} → {peak_big:.0} B peak/step",
            small * 4
        );
        // Linear growth keeps the ratio near 1; a copy per step of what the run holds
        // makes it near 4 at four times the size.
        assert!(
            bytes_big <= 1.25 * bytes_small,
            "{name}: bytes allocated per step grew {:.2}× at four times the size",
            bytes_big / bytes_small
        );
        assert!(
            peak_big <= 1.25 * peak_small,
            "{name}: peak live bytes per step grew {:.2}× at four times the size",
            peak_big / peak_small
        );
    }
}
