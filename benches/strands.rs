//! Engine overhead per step under strands and inside foreach, against the sequential chain.
//!
//! - `strands/chain-10000`: the 10,000-step sequential chain of `benches/engine.rs`
//!   (each echo step reads the previous output), measured in the same run as the baseline;
//! - `strands/fanout-1000`: a parallel root → 1,000 echo branches → one aggregate join;
//! - `strands/foreach-10000`: a foreach over 10,000 items with a one-step echo body, at
//!   parallelism 1 and 100;
//! - `fanout-4000` and `foreach-2500-p1`: the same shapes at another size, so a per-step
//!   cost that grows with the width shows up in one run.
//!
//! Per-step overhead = time / steps executed (the fan-out runs 1,002 steps, the foreach
//! 10,001). Everything runs on the simulator (virtual time: latencies cost nothing), with
//! the trace off. `cargo bench --bench strands -- --test` runs each once (CI). Before
//! timing, each shape's allocations per executed step are printed with their ratio to the
//! chain's (a load-independent view of the same comparison).

use criterion::{Criterion, criterion_group, criterion_main};
use w6w_sim::sim;

mod common;
mod heap;
use common::{chain, fan_out, foreach, run};
use heap::{Counting, counted};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn bench(c: &mut Criterion) {
    let cases = [
        (
            "chain-10000",
            sim::load_workflow(&chain(10_000)).expect("chain"),
        ),
        (
            "fanout-1000",
            sim::load_workflow(&fan_out(1_000)).expect("fan"),
        ),
        (
            "foreach-10000-p1",
            sim::load_workflow(&foreach(10_000, 1)).expect("loop"),
        ),
        (
            "foreach-10000-p100",
            sim::load_workflow(&foreach(10_000, 100)).expect("loop"),
        ),
        (
            "foreach-2500-p1",
            sim::load_workflow(&foreach(2_500, 1)).expect("loop"),
        ),
        (
            "fanout-4000",
            sim::load_workflow(&fan_out(4_000)).expect("fan"),
        ),
    ];
    let mut chain_allocs = None;
    for (name, wf) in &cases {
        let (r, heap) = counted(|| run(wf));
        // Steps executed: every echo step is invoked once; the foreach and the join are
        // one step each on top.
        let steps = r.world.invocations.len() + usize::from(!name.starts_with("chain"));
        let per_step = heap.allocations as f64 / steps.max(1) as f64;
        let chain = *chain_allocs.get_or_insert(per_step);
        eprintln!(
            "{name}: {} invocations, {} checkpoints, {} checkpoint bytes; {per_step:.1} allocations/step ({:.2}× the chain's), {:.0} B allocated/step, peak live {:.1} MB",
            r.world.invocations.len(),
            r.world.checkpoints,
            r.world.checkpoint_bytes,
            per_step / chain,
            heap.allocated as f64 / steps.max(1) as f64,
            heap.peak as f64 / 1e6
        );
    }
    let mut group = c.benchmark_group("strands");
    group.sample_size(10);
    for (name, wf) in &cases {
        group.bench_function(*name, |b| b.iter(|| run(wf)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
