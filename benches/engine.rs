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
//! - `tainted/1000` and `tainted/4000`: SEC-1 bookkeeping on a large secret-bearing output
//!   (D-373) — a step handed a secret returns n copies of it and n texts holding it, and the
//!   next step reads that output whole; `scripts/bench.sh` prints the time per leaf at
//!   4,000 against 1,000 (1× is linear; the list-based bookkeeping D-373 replaced was
//!   quadratic, 4× here).

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
    let mut group = c.benchmark_group("tainted");
    group.sample_size(10);
    for n in [1_000usize, 4_000] {
        let (wf, scenario) = tainted_output(n);
        group.bench_function(n.to_string(), |b| {
            b.iter(|| {
                let r = sim::Simulation::new(&wf, &scenario).run().expect("report");
                assert_eq!(r.run.status.as_str(), "succeeded");
                r.run.steps.len()
            })
        });
    }
    group.finish();
}

/// Two steps: `e`, handed a secret, returns `n` copies of it and `n` texts holding it; `f`
/// reads `e`'s output whole, so every one of those leaves is a taint mark, a needle and a
/// tainted place (D-373).
fn tainted_output(n: usize) -> (Workflow, sim::Scenario) {
    let secret = "sk_live_bench_taint_77";
    let workflow = json!({"manifestVersion": "2", "id": "wf_taint", "name": "taint",
        "steps": [
            {"id": "e", "uses": {"app": "app", "action": "mint"},
             "with": {"token": "{{ secrets.API }}"}},
            {"id": "f", "uses": {"app": "app", "action": "use"},
             "with": {"all": {"$": "steps.e.output"}}}],
        "edges": [{"from": "e", "to": "f"}]});
    let texts: Vec<String> = (0..n).map(|i| format!("Bearer {secret} {i}")).collect();
    let scenario = json!({"secrets": {"API": secret},
        "actions": {"e": {"outcomes": [{"output": {"list": vec![secret; n], "x": texts}}]}}});
    (
        sim::load_workflow(&workflow).expect("workflow"),
        sim::load_scenario(&scenario).expect("scenario"),
    )
}

criterion_group!(benches, bench);
criterion_main!(benches);
