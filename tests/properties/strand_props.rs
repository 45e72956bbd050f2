//! Properties of the strand scheduler (FAN-1…7) over generated DAGs.
//!
//! Generated: 2–8 app steps, random edges (success and error lanes) oriented along a random
//! topological order, a random `fanOut` per step, random onError, retry policies and
//! deterministic scripted outcomes (outputs, echoes, errors) with random virtual latencies,
//! so completion order routinely differs from plan order. A step reads the outputs of its
//! direct sources and may read one of its other *ancestors* (reading a non-ancestor is a race the author wrote: under strands
//! it sees whatever finished before it launched).
//!
//! Properties:
//! (a) strands change timing, never results: when the sequential run (every `fanOut`
//!     removed) succeeds, the parallel run ends in the same RunState — statuses, attempts,
//!     inputs, outputs, errors, meta, run output and stepErrors (as a multiset: they are
//!     appended in checkpoint order, which is completion order, FAN-5). When it fails, the
//!     parallel run fails too, every step both runs reached has the same record, and the
//!     reported error is the first fatal failure by plan order (FAN-7);
//! (b) the same scenario twice gives byte-identical reports and traces.
//!
//! A failure prints both workflows and the scenario as JSON: save them as files and
//! `w6w-sim run WORKFLOW --scenario SCENARIO` reproduces the run exactly.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use w6w_sim::model::RunState;
use w6w_sim::sim::{self, Report};

#[derive(Debug, Clone)]
struct GenOutcome {
    kind: u8, // 0 output, 1 echo, 2 error
    retryable: bool,
    latency_ms: u64,
}

#[derive(Debug, Clone)]
struct GenStep {
    parallel: bool,
    on_error: u8,
    max_attempts: u64,
    delay_ms: u64,
    outcomes: Vec<GenOutcome>,
    reads: Option<usize>,
}

#[derive(Debug, Clone)]
struct Gen {
    steps: Vec<GenStep>,
    /// (from, to, error?) by step index; empty → implicit chain.
    edges: Vec<(usize, usize, bool)>,
}

const ON_ERROR: [&str; 3] = ["fail", "continue", "continue-record"];

fn outcome() -> impl Strategy<Value = GenOutcome> {
    // Errors are rarer than successes so that most runs get past their first failure.
    (
        prop_oneof![3 => Just(0u8), 3 => Just(1u8), 3 => Just(2u8)],
        any::<bool>(),
        0u64..6,
    )
        .prop_map(|(kind, retryable, l)| GenOutcome {
            kind,
            retryable,
            // Multiples of 10 ms: ties at one virtual instant are common on purpose.
            latency_ms: l * 10,
        })
}

fn gen_step(n: usize) -> impl Strategy<Value = GenStep> {
    (
        prop::bool::weighted(0.7),
        0u8..3,
        1u64..3,
        0u64..40,
        prop::collection::vec(outcome(), 1..4),
        prop::option::of(0..n),
    )
        .prop_map(
            |(parallel, on_error, max_attempts, delay_ms, outcomes, reads)| GenStep {
                parallel,
                on_error,
                max_attempts,
                delay_ms,
                outcomes,
                reads,
            },
        )
}

fn workflows() -> impl Strategy<Value = Gen> {
    (2usize..9).prop_flat_map(|n| {
        (
            prop::collection::vec(gen_step(n), n),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec((0..n, 0..n, prop::bool::weighted(0.3)), 0..(2 * n + 1)),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(steps, perm, raw, implicit)| {
                let mut edges = BTreeSet::new();
                if !implicit {
                    for (x, y, err) in raw {
                        if x == y {
                            continue;
                        }
                        let (f, t) = if perm[x] < perm[y] { (x, y) } else { (y, x) };
                        edges.insert((f, t, err));
                    }
                }
                let mut g = Gen {
                    steps,
                    edges: edges.into_iter().collect(),
                };
                // Reads only from ancestors (see the module docs).
                for i in 0..g.steps.len() {
                    if let Some(j) = g.steps[i].reads
                        && !g.ancestors(i).contains(&j)
                    {
                        g.steps[i].reads = None;
                    }
                }
                g
            })
    })
}

fn sid(i: usize) -> String {
    format!("s{i}")
}

impl Gen {
    fn ancestors(&self, i: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        if self.edges.is_empty() {
            out.extend(0..i);
            return out;
        }
        let mut stack = vec![i];
        while let Some(k) = stack.pop() {
            for &(f, t, _) in &self.edges {
                if t == k && out.insert(f) {
                    stack.push(f);
                }
            }
        }
        out
    }

    /// PLAN-5: Kahn's algorithm, lowest declared index first.
    fn order(&self) -> Vec<usize> {
        let n = self.steps.len();
        if self.edges.is_empty() {
            return (0..n).collect();
        }
        let mut done = vec![false; n];
        let mut order = Vec::new();
        while let Some(next) =
            (0..n).find(|&i| !done[i] && self.edges.iter().all(|&(f, t, _)| t != i || done[f]))
        {
            done[next] = true;
            order.push(next);
        }
        order
    }

    fn workflow(&self, with_fan_out: bool) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut with = Map::new();
                with.insert("i".into(), json!(i));
                if let Some(j) = s.reads {
                    with.insert(
                        "up".into(),
                        json!({"$": format!("steps.{}.output", sid(j))}),
                    );
                }
                // Every direct source's output: a step launched before all its inbound
                // edges resolved would see a different input.
                let sources: Vec<Value> = self
                    .edges
                    .iter()
                    .filter(|e| e.1 == i)
                    .map(|&(f, _, _)| json!({"$": format!("steps.{}.output", sid(f))}))
                    .collect();
                if !sources.is_empty() {
                    with.insert("in".into(), Value::Array(sources));
                }
                let mut step = json!({
                    "id": sid(i),
                    "uses": {"app": "app", "action": "act"},
                    "with": with,
                    "retry": {"maxAttempts": s.max_attempts, "backoff": "fixed", "delayMs": s.delay_ms},
                    "onError": ON_ERROR[s.on_error as usize],
                });
                if with_fan_out {
                    step["fanOut"] = json!(if s.parallel { "parallel" } else { "sequential" });
                }
                step
            })
            .collect();
        let mut wf =
            json!({"manifestVersion": "2", "id": "wf_strands", "name": "strands", "steps": steps});
        if !self.edges.is_empty() {
            wf["edges"] = self
                .edges
                .iter()
                .map(|&(f, t, e)| {
                    if e {
                        json!({"from": sid(f), "to": sid(t), "when": "error"})
                    } else {
                        json!({"from": sid(f), "to": sid(t), "when": "success"})
                    }
                })
                .collect();
        }
        wf
    }

    fn scenario(&self) -> Value {
        let actions: Map<String, Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let outcomes: Vec<Value> = s
                    .outcomes
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        let mut v = match o.kind {
                            0 => json!({"output": {"step": i, "k": k}}),
                            1 => json!({"echo": true}),
                            _ => json!({"error": {"code": format!("e{i}_{k}"),
                                                  "message": format!("failure {k} of {}", sid(i)),
                                                  "phase": "execute",
                                                  "retryable": o.retryable}}),
                        };
                        v["latencyMs"] = json!(o.latency_ms);
                        v
                    })
                    .collect();
                (sid(i), json!({"outcomes": outcomes}))
            })
            .collect();
        json!({"actions": actions})
    }

    fn repro(&self) -> String {
        format!(
            "\nparallel workflow: {}\nsequential workflow: {}\nscenario: {}",
            self.workflow(true),
            self.workflow(false),
            self.scenario()
        )
    }
}

fn simulate(wf: &Value, scenario: &Value) -> Report {
    let wf = sim::load_workflow(wf).expect("generated workflow is valid");
    let sc = sim::load_scenario(scenario).expect("generated scenario is valid");
    sim::Simulation::new(&wf, &sc)
        .run()
        .expect("the simulator produces a report")
}

/// A step record without its timestamps (they depend on timing by design).
fn record(r: &w6w_sim::model::StepExecution) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("startedAt");
        m.remove("finishedAt");
    }
    v
}

/// The semantic fields of a RunState: everything but timestamps; stepErrors as a multiset.
fn semantic(s: &RunState) -> Value {
    let steps: Map<String, Value> = s
        .steps
        .iter()
        .map(|(k, r)| (k.clone(), record(r)))
        .collect();
    let mut errors: Vec<String> = s
        .step_errors
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    errors.sort();
    json!({"status": s.status.as_str(), "output": s.output, "error": s.error,
           "steps": steps, "stepErrors": errors})
}

fn text(r: &Report) -> String {
    format!(
        "{}\n{}",
        r.to_json(),
        serde_json::to_string(&r.trace).unwrap_or_default()
    )
}

proptest! {
    #[test]
    fn strands_change_timing_never_results(g in workflows()) {
        let parallel = simulate(&g.workflow(true), &g.scenario());
        let sequential = simulate(&g.workflow(false), &g.scenario());
        let (p, s) = (&parallel.run, &sequential.run);
        if s.status.as_str() == "succeeded" {
            prop_assert_eq!(semantic(p), semantic(s), "{}", g.repro());
        } else {
            prop_assert_eq!(p.status, s.status, "{}", g.repro());
            for (id, rec) in &s.steps {
                if let Some(other) = p.steps.get(id)
                    && rec.status.is_terminal()
                    && other.status.is_terminal()
                {
                    prop_assert_eq!(record(other), record(rec), "record of {}{}", id, g.repro());
                }
            }
            // FAN-7: the first fatal failure by plan order, whatever finished first.
            let fatal = |i: usize| {
                let id = sid(i);
                p.steps.get(&id).is_some_and(|r| r.status.as_str() == "failed")
                    && g.steps[i].on_error == 0
                    && !g.edges.iter().any(|&(f, _, e)| f == i && e)
            };
            let first = g.order().into_iter().find(|&i| fatal(i)).map(sid);
            prop_assert_eq!(
                p.error.as_ref().and_then(|e| e.step_id.clone()),
                first,
                "reported error{}", g.repro()
            );
        }
        // (b) determinism under strands: byte-identical report and trace.
        let again = simulate(&g.workflow(true), &g.scenario());
        prop_assert_eq!(text(&again), text(&parallel), "{}", g.repro());
    }
}

/// Regression: two strands that finish at the same virtual instant with errors — the
/// earlier-in-plan failure is reported even though both drain.
#[test]
fn same_instant_failures_report_by_plan_order() {
    let wf = json!({"manifestVersion": "2", "id": "wf", "name": "wf",
        "steps": [
            {"id": "r", "uses": {"app": "a", "action": "b"}, "fanOut": "parallel"},
            {"id": "x", "uses": {"app": "a", "action": "b"}},
            {"id": "y", "uses": {"app": "a", "action": "b"}}],
        "edges": [{"from": "r", "to": "y"}, {"from": "r", "to": "x"}]});
    let sc = json!({"actions": {
        "x": {"outcomes": [{"error": {"code": "ex", "message": "x", "phase": "execute"}, "latencyMs": 10}]},
        "y": {"outcomes": [{"error": {"code": "ey", "message": "y", "phase": "execute"}, "latencyMs": 10}]}}});
    let r = simulate(&wf, &sc);
    assert_eq!(r.run.status.as_str(), "failed");
    assert_eq!(r.run.error.as_ref().map(|e| e.code.as_str()), Some("ex"));
}
