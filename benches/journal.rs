//! The on-disk journal against its physical floor, measured in the same run.
//!
//! - floor: append one checkpoint-sized record (a real chain step's patch) to a file and
//!   `fdatasync` it — what any durable checkpoint must at least cost;
//! - `JournalStore::checkpoint_changes` on a run that already holds 1,000 and 10,000
//!   steps (state and world of a real echo chain): flat in run length, and the ratio to
//!   the floor (issue 13: ≤ 2×);
//! - a whole 1,000-step chain on disk (`sim::run --store DIR`): time per checkpoint vs the
//!   floor (10,000 steps with `W6W_BENCH_LONG=1`).
//!
//! The three are interleaved sample by sample (so machine load hits them alike) and the
//! medians and ratios are printed; criterion then times each on its own.

use std::io::Write;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use w6w_sim::__internals::sim::Invocation;
use w6w_sim::model::{RunState, RunStatePatch};
use w6w_sim::sim::{self, SimOptions, StoreChoice, WorldSnapshot};
use w6w_sim::sim::{JournalStore, Store};

mod common;
use common::{chain, run};

/// A run of `n` steps held by a journal store, and the means to extend it by one step.
struct Grown {
    _dir: tempfile::TempDir,
    store: JournalStore,
    world: WorldSnapshot,
    run_id: String,
    template: RunStatePatch,
    next: usize,
}

impl Grown {
    fn new(n: usize) -> Self {
        let wf = sim::load_workflow(&chain(n)).expect("workflow");
        let r = run(&wf);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = JournalStore::open(dir.path()).expect("store");
        store.put(&r.run, &r.world).expect("snapshot");
        let mut template = RunStatePatch {
            run_id: r.run.run_id.clone(),
            ..Default::default()
        };
        let step = r.run.steps.get("s5").expect("step").clone();
        template.steps.insert("s5".into(), step);
        Grown {
            _dir: dir,
            store,
            world: r.world,
            run_id: r.run.run_id.clone(),
            template,
            next: n,
        }
    }

    /// One more step's end checkpoint, with the world moved on as the host's would be.
    fn checkpoint(&mut self) {
        let id = format!("s{}", self.next);
        self.next += 1;
        let mut patch = self.template.clone();
        if let Some((_, mut exec)) = patch.steps.pop() {
            std::sync::Arc::make_mut(&mut exec).step_id.clone_from(&id);
            patch.steps.insert(id.clone(), exec);
        }
        self.world.checkpoints += 1;
        self.world.total_invocations += 1;
        self.world.invocation_counts.insert(id.clone(), 1);
        self.world.invocations.push(Invocation {
            step_id: id.as_str().into(),
            app: "echo".into(),
            action: "echo".into(),
            connection: None,
            attempt: 1,
            params: w6w_sim::model::JsonText::new(&json!({})),
            at_ms: self.world.clock_ms,
            run_id: None,
            script: None,
        });
        self.store
            .checkpoint_changes(&patch, &self.world, std::slice::from_ref(&id))
            .expect("checkpoint");
    }

    fn patch_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.template).expect("json")
    }

    fn state(&self) -> RunState {
        self.store
            .load(&self.run_id)
            .expect("load")
            .expect("run")
            .state
    }
}

/// The floor: append `bytes` + fdatasync.
struct Floor {
    _dir: tempfile::TempDir,
    file: std::fs::File,
    bytes: Vec<u8>,
}

impl Floor {
    fn new(bytes: Vec<u8>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::create(dir.path().join("floor")).expect("file");
        Floor {
            _dir: dir,
            file,
            bytes,
        }
    }

    fn append(&mut self) {
        self.file.write_all(&self.bytes).expect("write");
        self.file.sync_data().expect("fdatasync");
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

#[allow(clippy::disallowed_methods)] // a bench measures real elapsed time
fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

#[allow(clippy::disallowed_methods)] // a bench measures real elapsed time
fn disk_run(n: usize) -> (Duration, u64) {
    let wf = sim::load_workflow(&chain(n)).expect("workflow");
    let dir = tempfile::tempdir().expect("tempdir");
    let options = SimOptions {
        store: StoreChoice::Dir(dir.path().to_owned()),
        keep_trace: false,
        ..SimOptions::default()
    };
    let scenario = sim::load_scenario(&json!({})).expect("scenario");
    let t = Instant::now();
    let r = sim::Simulation::new(&wf, &scenario)
        .options(&options)
        .run()
        .expect("report");
    assert_eq!(r.run.status.as_str(), "succeeded");
    (t.elapsed(), r.world.checkpoints)
}

fn bench(c: &mut Criterion) {
    let measuring = std::env::args().any(|a| a == "--bench");
    let samples = if measuring { 150 } else { 3 };
    let mut small = Grown::new(1_000);
    let mut large = Grown::new(10_000);
    let mut floor = Floor::new(small.patch_bytes());
    let (mut f, mut s, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        f.push(time(|| floor.append()));
        s.push(time(|| small.checkpoint()));
        l.push(time(|| large.checkpoint()));
    }
    assert_eq!(large.state().steps.len(), 10_000 + samples);
    let (f, s, l) = (median(f), median(s), median(l));
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    eprintln!(
        "journal checkpoint: floor (append {} B + fdatasync) {:.1} µs | at 1,000 steps {:.1} µs = {:.2}× floor | at 10,000 steps {:.1} µs = {:.2}× floor | 10,000 vs 1,000: {:.2}×",
        floor.bytes.len(),
        us(f),
        us(s),
        us(s) / us(f),
        us(l),
        us(l) / us(f),
        us(l) / us(s)
    );
    if measuring {
        let n = if std::env::var_os("W6W_BENCH_LONG").is_some() {
            10_000
        } else {
            1_000
        };
        let before = median((0..20).map(|_| time(|| floor.append())).collect());
        let (total, checkpoints) = disk_run(n);
        let after = median((0..20).map(|_| time(|| floor.append())).collect());
        let per = total.as_secs_f64() * 1e6 / checkpoints as f64;
        let floor_us = (us(before) + us(after)) / 2.0;
        eprintln!(
            "disk run: {n}-step chain, {checkpoints} checkpoints in {:.2} s = {per:.1} µs per checkpoint = {:.2}× the floor ({floor_us:.1} µs, measured around it)",
            total.as_secs_f64(),
            per / floor_us
        );
    }

    let mut group = c.benchmark_group("journal");
    group.sample_size(20);
    group.bench_function("floor_append_fdatasync", |b| b.iter(|| floor.append()));
    group.bench_function("checkpoint_at_1000", |b| b.iter(|| small.checkpoint()));
    group.bench_function("checkpoint_at_10000", |b| b.iter(|| large.checkpoint()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
