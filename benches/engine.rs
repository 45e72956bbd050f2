//! Engine overhead on the simulator.
//!
//! - `chain/10000`: a 10,000-step chain of echo actions (each step reads the previous
//!   step's output): total time / 10,000 is the engine + simulator overhead per step.
//! - checkpoint bytes per step at 100, 1,000 and 10,000 steps, printed once: patches make
//!   the total linear in the run's length (bytes/step stays flat).

use criterion::{Criterion, criterion_group, criterion_main};
use w6w_sim::sim;

mod common;
use common::{chain, run};

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
    let wf = sim::load_workflow(&chain(10_000)).expect("workflow");
    let mut group = c.benchmark_group("chain");
    group.sample_size(10);
    group.bench_function("10000", |b| b.iter(|| run(&wf)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
