//! `benches/engine.rs`'s 10,000-step echo chain on mimalloc, the allocator the `w6w-sim`
//! binary runs on (D-181), so the engine step a CLI user gets is measured beside the one
//! the library gets on the system allocator (`chain/10000`, same workflow, same run
//! options). Allocation counts do not depend on the allocator: `benches/engine.rs` prints
//! them.

use criterion::{Criterion, criterion_group, criterion_main};

mod common;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    common::bench_chain(c, "chain_mimalloc");
}

criterion_group!(benches, bench);
criterion_main!(benches);
