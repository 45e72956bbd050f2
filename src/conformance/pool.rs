//! `--jobs N`: the selected cases and generated workflows judged on N candidates at once.
//!
//! Owns: [`run_pool`]. Each worker thread makes its own candidate with the caller's
//! factory (a candidate is never shared or moved between threads), then takes the next
//! unjudged case — or, once the cases are gone, the next generated workflow — from one
//! shared cursor, and judges it exactly as the sequential runner does (the same
//! [`Judge`](super::report::Judge)). Results are put back in selection and seed order
//! before the report is assembled, so the report does not depend on `N` or on which
//! worker ran what: what a candidate is sent depends only on the session seed and the
//! request (D-222). Only the wall-clock numbers (elapsed, cases per second) differ.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use super::generate::{SeedOutcome, seed_indices};
use super::report::{CaseResult, Judge, assemble, selected};
use super::shard::Shard;
use super::{Adapter, Selection, Suite, SuiteReport};

/// Makes one candidate for worker `job` (0-based): a fresh process, say. Called once per
/// worker, on that worker's thread.
pub type Factory<'a> = dyn Fn(usize) -> Result<Box<dyn Adapter>, String> + Sync + 'a;

/// What a pool run covers besides the cases: `generate` workflows from `seed` (the seeds
/// `shard` takes), and whether a failing case is diffed against the reference.
#[derive(Debug, Clone, Copy)]
pub struct PoolPlan {
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
pub fn run_pool(
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
    let mut case_results: Vec<Option<CaseResult>> = (0..cases.len()).map(|_| None).collect();
    let mut seed_results: Vec<Option<SeedOutcome>> = (0..seeds.len()).map(|_| None).collect();
    let mut first: Option<(usize, String, Box<Judge>)> = None;
    let mut errors = Vec::new();
    let mut cases_done_at = None;
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let tx = tx.clone();
            let (cases, seeds, cursor) = (&cases, &seeds, &cursor);
            let work = move || {
                crate::sim::with_stack(|| {
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
                })
            };
            // The worker's stack is grown on demand by `with_stack`; the thread's own only
            // needs to reach it.
            let spawned = std::thread::Builder::new()
                .name(format!("w6w-job-{job}"))
                .spawn_scoped(scope, work);
            if let Err(e) = spawned {
                errors.push(format!("job {job}: cannot start a thread: {e}"));
            }
        }
        drop(tx);
        let (mut cases_done, mut seeds_done) = (0, 0);
        for done in rx {
            match done {
                Done::Ready(job, name, judge) => {
                    if first.as_ref().is_none_or(|(j, _, _)| job < *j) {
                        first = Some((job, name, judge));
                    }
                }
                Done::Failed(job, e) => errors.push(format!("job {job}: {e}")),
                Done::Case(i, result) => {
                    cases_done += 1;
                    progress(cases_done, cases.len(), &result.outcome.id);
                    case_results[i] = Some(*result);
                    if cases_done == cases.len() {
                        #[allow(clippy::disallowed_methods)] // real time, as above
                        let now = Instant::now();
                        cases_done_at = Some(now);
                    }
                }
                Done::Seed(i, outcome) => {
                    seeds_done += 1;
                    progress(seeds_done, seeds.len(), "generated workflows");
                    seed_results[i] = Some(outcome);
                }
            }
        }
    });
    let Some((_, name, judge)) = first else {
        return Err(errors.join("; "));
    };
    // Every task was taken by a worker whose candidate was up, and every such worker ran
    // until the cursor passed the end: a hole means a worker thread died.
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
