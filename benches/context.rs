//! The process seam's cost (issue 9 item 8), against our own engine in the same run.
//!
//! - `context/chain-200-process`: a 200-step echo chain run by `w6w-sim engine serve`
//!   through the context protocol (about 3 context calls per step: two checkpoints and an
//!   invoke); criterion's throughput is context calls per second, so µs per call across
//!   the process boundary = 1e6 / throughput. Peer in the same run:
//!   `context/chain-200-in-process` (the same workflow on the simulator, no process).
//! - `context/suite-through-engine-serve`: the whole case suite + 200 generated workflows
//!   through the engine protocol against our engine (target: well under 60 s on 2 cores).

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use w6w_sim::conformance::{self, Adapter, RunOptions};
use w6w_sim::conformance::{EngineOptions, EngineProcess};
use w6w_sim::sim;

mod common;
use common::{chain, run};

fn engine() -> EngineProcess {
    let cmd = format!("'{}' engine serve", env!("CARGO_BIN_EXE_w6w-sim"));
    EngineProcess::start(&cmd, EngineOptions::default()).expect("engine serve starts")
}

fn bench(c: &mut Criterion) {
    let doc = chain(200);
    let request = json!({"op": "run", "workflow": doc, "scenario": {}});
    let mut candidate = engine();
    let before = candidate.traffic().calls;
    let got = candidate.handle(&request).expect("answers");
    assert_eq!(got["ok"]["run"]["status"], "succeeded");
    let calls_per_run = candidate.traffic().calls - before;

    let mut group = c.benchmark_group("context");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(calls_per_run));
    group.bench_function("chain-200-process", |b| {
        b.iter(|| candidate.handle(&request).expect("answers"));
    });
    let wf = sim::load_workflow(&doc).expect("workflow");
    group.bench_function("chain-200-in-process", |b| b.iter(|| run(&wf)));
    group.throughput(Throughput::Elements(1));
    group.bench_function("suite-through-engine-serve", |b| {
        b.iter(|| {
            let mut candidate = engine();
            let report =
                conformance::run(&mut candidate, &RunOptions::default()).expect("suite loads");
            assert!(report.all_passed(), "the suite passes through engine serve");
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
