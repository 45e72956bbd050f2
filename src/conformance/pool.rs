//! `--jobs N`: the selected cases and generated workflows judged on N candidates at once.
//!
//! Owns: [`run_pool`]. Each worker thread makes its own candidate with the caller's
//! factory (a candidate is never shared or moved between threads), then takes the next
//! unjudged case — or, once the cases are gone, the next generated workflow — from one
//! shared cursor, and judges it exactly as the sequential runner does (the same
//! [`Judge`](super::runner::Judge)). Results are put back in selection and seed order
//! before the report is assembled, so the report does not depend on `N` or on which
//! worker ran what: what a candidate is sent depends only on the session seed and the
//! request (D-222). Only the wall-clock numbers (elapsed, cases per second) differ.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use super::generate::{SeedOutcome, seed_indices};
use super::load::LoadedFile;
use super::report::CaseResult;
use super::runner::{Judge, assemble, selected};
use super::shard::Shard;
use super::{Adapter, Case, Selection, Suite, SuiteReport};

/// Makes one candidate for worker `job` (0-based): a fresh process, say. Called once per
/// worker, on that worker's thread.
pub(crate) type Factory<'a> = dyn Fn(usize) -> Result<Box<dyn Adapter>, String> + Sync + 'a;

/// What a pool run covers besides the cases: `generate` workflows from `seed` (the seeds
/// `shard` takes), and whether a failing case is diffed against the reference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolPlan {
    pub jobs: usize,
    pub diff_reference: bool,
    pub generate: usize,
    pub seed: u64,
    pub shard: Option<Shard>,
}

enum Done {
    /// A worker's candidate is up: its name and what the judge learned of it.
    Ready(usize, String, Box<Judge>),
    Case(usize, Box<CaseResult>),
    Seed(usize, SeedOutcome),
    /// A worker whose candidate could not be made.
    Failed(usize, String),
}

/// Judge `suite`'s selected cases and `plan`'s generated workflows on `plan.jobs`
/// candidates at once. `progress(done, total, label)` is called after each case and each
/// generated workflow. `Err` only when no worker's candidate could be made.
pub(crate) fn run_pool(
    make: &Factory<'_>,
    suite: &Suite,
    selection: &Selection,
    plan: PoolPlan,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<SuiteReport, String> {
    #[allow(clippy::disallowed_methods)] // real time: the report states the suite's speed
    let started = Instant::now();
    let cases = selected(suite, selection);
    let seeds: Vec<usize> = seed_indices(plan.generate, plan.shard).collect();
    let total = cases.len() + seeds.len();
    let cursor = AtomicUsize::new(0);
    let jobs = plan.jobs.clamp(1, total.max(1));
    let (tx, rx) = mpsc::channel::<Done>();
    let mut collected = Collected::new(cases.len(), seeds.len());
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let tx = tx.clone();
            let tasks = Tasks {
                cases: &cases,
                seeds: &seeds,
                cursor: &cursor,
            };
            let work = move || crate::sim::with_stack(|| worker(job, make, plan, tasks, &tx));
            // The worker's stack is grown on demand by `with_stack`; the thread's own only
            // needs to reach it.
            let spawned = std::thread::Builder::new()
                .name(format!("w6w-job-{job}"))
                .spawn_scoped(scope, work);
            if let Err(e) = spawned {
                collected
                    .errors
                    .push(format!("job {job}: cannot start a thread: {e}"));
            }
        }
        drop(tx);
        for done in rx {
            collected.take(done, progress);
        }
    });
    collected.into_report(suite, selection, plan, started)
}

/// The work every worker shares: the selected cases, then the generated seed indices,
/// taken one at a time from one cursor.
#[derive(Clone, Copy)]
struct Tasks<'t, 's> {
    cases: &'t [(&'s LoadedFile, &'s Case)],
    seeds: &'t [usize],
    cursor: &'t AtomicUsize,
}

/// One worker: make its candidate, say it is up, then judge the next task until none is
/// left (or nobody listens).
fn worker(
    job: usize,
    make: &Factory<'_>,
    plan: PoolPlan,
    tasks: Tasks<'_, '_>,
    tx: &mpsc::Sender<Done>,
) {
    let mut adapter = match make(job) {
        Ok(a) => a,
        Err(e) => {
            let _ = tx.send(Done::Failed(job, e));
            return;
        }
    };
    let judge = Judge::of(adapter.as_ref(), plan.diff_reference);
    let name = adapter.name();
    if tx
        .send(Done::Ready(job, name, Box::new(judge.clone())))
        .is_err()
    {
        return;
    }
    let Tasks {
        cases,
        seeds,
        cursor,
    } = tasks;
    loop {
        let i = cursor.fetch_add(1, Ordering::Relaxed);
        let done = if let Some((file, case)) = cases.get(i) {
            Done::Case(i, Box::new(judge.case(adapter.as_mut(), file, case)))
        } else if let Some(&k) = seeds.get(i - cases.len()) {
            let s = plan.seed.wrapping_add(k as u64);
            Done::Seed(i - cases.len(), judge.seed(adapter.as_mut(), s))
        } else {
            return;
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

/// What the workers sent, put back in selection and seed order.
struct Collected {
    cases: Vec<Option<CaseResult>>,
    seeds: Vec<Option<SeedOutcome>>,
    /// The lowest-numbered worker whose candidate came up: its name and judge.
    first: Option<(usize, String, Box<Judge>)>,
    errors: Vec<String>,
    cases_done: usize,
    seeds_done: usize,
    /// When the last case was judged (the generated workflows' time starts there).
    cases_done_at: Option<Instant>,
}

impl Collected {
    fn new(cases: usize, seeds: usize) -> Self {
        Collected {
            cases: (0..cases).map(|_| None).collect(),
            seeds: (0..seeds).map(|_| None).collect(),
            first: None,
            errors: Vec::new(),
            cases_done: 0,
            seeds_done: 0,
            cases_done_at: None,
        }
    }

    /// The report, once every worker is done; `Err` when no candidate came up or a
    /// worker stopped early.
    fn into_report(
        self,
        suite: &Suite,
        selection: &Selection,
        plan: PoolPlan,
        started: Instant,
    ) -> Result<SuiteReport, String> {
        let Collected {
            cases: case_results,
            seeds: seed_results,
            first,
            errors,
            cases_done_at,
            ..
        } = self;
        let Some((_, name, judge)) = first else {
            return Err(errors.join("; "));
        };
        // Every task was taken by a worker whose candidate was up, and every such worker
        // ran until the cursor passed the end: a hole means a worker thread died.
        let cases: Option<Vec<CaseResult>> = case_results.into_iter().collect();
        let outcomes: Option<Vec<SeedOutcome>> = seed_results.into_iter().collect();
        let (Some(cases), Some(outcomes)) = (cases, outcomes) else {
            return Err(format!(
                "a worker stopped before its work was done{}",
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(": {}", errors.join("; "))
                }
            ));
        };
        let cases_elapsed = cases_done_at.map_or_else(|| started.elapsed(), |t| t - started);
        let mut report = assemble(suite, selection, name, judge.profile, cases, cases_elapsed);
        let generated_elapsed = started.elapsed().saturating_sub(cases_elapsed);
        report.add_generated(super::generate::assemble(
            outcomes,
            plan.generate,
            plan.seed,
            plan.shard,
            generated_elapsed,
        ));
        Ok(report)
    }

    fn take(&mut self, done: Done, progress: &mut dyn FnMut(usize, usize, &str)) {
        match done {
            Done::Ready(job, name, judge) => {
                if self.first.as_ref().is_none_or(|(j, _, _)| job < *j) {
                    self.first = Some((job, name, judge));
                }
            }
            Done::Failed(job, e) => self.errors.push(format!("job {job}: {e}")),
            Done::Case(i, result) => {
                self.cases_done += 1;
                progress(self.cases_done, self.cases.len(), &result.outcome.id);
                self.cases[i] = Some(*result);
                if self.cases_done == self.cases.len() {
                    #[allow(clippy::disallowed_methods)] // real time, as in `run_pool`
                    let now = Instant::now();
                    self.cases_done_at = Some(now);
                }
            }
            Done::Seed(i, outcome) => {
                self.seeds_done += 1;
                progress(self.seeds_done, self.seeds.len(), "generated workflows");
                self.seeds[i] = Some(outcome);
            }
        }
    }
}
