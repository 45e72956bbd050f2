//! `benches/engine.rs`'s 10,000-step echo chain on mimalloc, the allocator the `w6w-sim`
//! binary runs on (D-181), so the engine step a CLI user gets is measured beside the one
//! the library gets on the system allocator (`chain/10000`, same workflow, same run
//! options). Allocation counts do not depend on the allocator: `benches/engine.rs` prints
//! them.

use criterion::{Criterion, criterion_group, criterion_main};
use w6w_sim::sim;

mod common;
use common::{chain, run};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let wf = sim::load_workflow(&chain(10_000)).expect("workflow");
    let mut group = c.benchmark_group("chain_mimalloc");
    group.sample_size(10);
    group.bench_function("10000", |b| b.iter(|| run(&wf)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
