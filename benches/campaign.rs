//! Generated-workflow campaigns (issue 13 item 5): how many generated workflows the suite
//! checks per second against the in-process reference, on one core.
//!
//! Each workflow is what `w6w-sim conformance --generate N` does for one seed
//! (`generate::check`): a plain run against the independent model, a crash right after each
//! checkpoint, a replay, the secret scan of every answer.
//!
//! - `campaign/reference`: the reference adapter, which answers the crash points from one
//!   simulation copied at each checkpoint (D-180);
//! - `campaign/point_by_point`: the same op service asked once per request, as any other
//!   adapter is — the peer the copies are measured against, in the same run.
//!
//! Both run on the allocator the `w6w-sim` binary ships with (mimalloc, D-181): the rate is
//! what `w6w-sim conformance --generate N` gets.
//!
//! `cargo bench --bench campaign`; `-- --test` runs each once; `scripts/bench.sh campaign`
//! prints workflows per second and the ratio.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use w6w_sim::__internals::conformance::generate::{Generated, check};
use w6w_sim::conformance::{FnAdapter, Reference};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Workflows per measured batch: seeds 1..=BATCH of the default campaign's generator.
const BATCH: u64 = 50;

fn bench(c: &mut Criterion) {
    let batch: Vec<Generated> = (1..=BATCH).map(Generated::from_seed).collect();
    let mut point_by_point = FnAdapter::new("handle", |r: &Value| {
        w6w_sim::__internals::service::handle(r)
    });
    // Both must pass every property, or the timing compares unequal work.
    for g in &batch {
        check(&mut Reference, g).expect("the reference passes");
        check(&mut point_by_point, g).expect("the op service passes");
    }
    let mut group = c.benchmark_group("campaign");
    group.sample_size(20);
    group.bench_function("reference", |b| {
        b.iter(|| {
            w6w_sim::__internals::sim::with_stack(|| {
                for g in &batch {
                    black_box(check(&mut Reference, g).is_ok());
                }
            })
        })
    });
    group.bench_function("point_by_point", |b| {
        b.iter(|| {
            w6w_sim::__internals::sim::with_stack(|| {
                for g in &batch {
                    black_box(check(&mut point_by_point, g).is_ok());
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
