//! Engine overhead on the simulator (issue 13 item 2).
//!
//! - `chain/10000`: a 10,000-step chain of echo actions (each step reads the previous
//!   step's output): total time / 10,000 is the engine + simulator overhead per step.
//! - checkpoint bytes per step at 100, 1,000 and 10,000 steps, printed once: patches make
//!   the total linear in the run's length (bytes/step stays flat).
//! - heap use, printed once (stderr) by a counting allocator that counts only around the
//!   measured call (it is one relaxed load per allocation otherwise): allocations and bytes
//!   allocated per step of the 10,000-step chain, and a 100,000-step chain's peak live heap
//!   against its final RunState's JSON (10,000 steps in test mode, to keep CI short), with
//!   the floor under it (D-190): what the typed RunState alone holds when read back from
//!   that JSON, and what the returned report holds.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use w6w_sim::model::{RunState, Workflow};
use w6w_sim::sim::{self, Limits, SimOptions};

mod common;
mod heap;
use common::{chain, run};
use heap::{Counting, counted};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// [`run`] with budgets sized for `steps` (the defaults stop a run at 20,000 invocations).
fn run_long(workflow: &Workflow, steps: u64) -> sim::Report {
    let options = SimOptions {
        keep_trace: false,
        limits: Limits {
            invocations: steps.saturating_mul(2),
            recorded_bytes: steps.saturating_mul(4096),
            ..Limits::DEFAULT
        },
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

fn bench(c: &mut Criterion) {
    for n in [100usize, 1_000, 10_000] {
        let wf = sim::load_workflow(&chain(n)).expect("workflow");
        let r = run(&wf);
        assert_eq!(r.run.status.as_str(), "succeeded");
        eprintln!(
            "checkpoint bytes: {n} steps → {} checkpoints, {} bytes, {:.1} bytes/step",
            r.world.checkpoints,
            r.world.checkpoint_bytes,
            r.world.checkpoint_bytes as f64 / n as f64
        );
    }
    // Criterion benchmarks only when given `--bench` (`cargo bench`); `cargo test
    // --benches` and `-- --test` run each bench once, as a test.
    let test_mode = !std::env::args().any(|a| a == "--bench");
    for n in [10_000usize, if test_mode { 10_000 } else { 100_000 }] {
        let wf = sim::load_workflow(&chain(n)).expect("workflow");
        let (r, heap) = counted(|| run_long(&wf, n as u64));
        let state_json = serde_json::to_vec(&r.run).unwrap_or_default();
        let json_len = state_json.len().max(1) as f64;
        drop(r);
        // The floor under the peak (D-190): the final RunState alone, read back from its
        // JSON into the typed model, and the report the run returns.
        let (typed, floor) = counted(|| serde_json::from_slice::<RunState>(&state_json));
        assert!(typed.is_ok(), "the final RunState reads back");
        drop(typed);
        eprintln!(
            "engine heap: {n}-step chain → {:.1} allocations/step, {:.0} B allocated/step, peak live {:.1} MB = {:.2}× the final RunState JSON ({:.1} MB); the typed RunState alone holds {:.2}×, the report {:.2}×",
            heap.allocations as f64 / n as f64,
            heap.allocated as f64 / n as f64,
            heap.peak as f64 / 1e6,
            heap.peak as f64 / json_len,
            json_len / 1e6,
            floor.held as f64 / json_len,
            heap.held as f64 / json_len,
        );
    }
    common::bench_chain(c, "chain");
}

criterion_group!(benches, bench);
criterion_main!(benches);
