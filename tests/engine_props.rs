//! Property tests over generated DAGs, checked against an independent, simple model.
//!
//! Generated: 1–6 steps, random edges (success and error lanes) over a random topological
//! order or no edges at all (implicit chain), random onError, retry policies, idempotency,
//! scripted outcomes (outputs, echoes, errors in every phase, latencies) and a secret that
//! flows through variables into params and echoed outputs.
//!
//! Properties:
//! (a) a crash right after any checkpoint k, then resume, ends in the same RunState as the
//!     crash-free run;
//! (b) replaying the finished run yields the same terminal status and outputs, with zero
//!     invocations of originally succeeded steps;
//! (c) each step's invocations, attempts and status equal what the model — the retry
//!     classification, onError and edge routing written out naively below — allows;
//! (d) no secret plaintext appears in any checkpoint, trace event or report.
//!
//! A failure prints the generated workflow and scenario as JSON: save them as files and
//! `w6w-sim run WORKFLOW --scenario SCENARIO` reproduces the run exactly.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::model::RunState;
use w6w_sim::sim::{self, Report, SimOptions};

const SECRET: &str = "S3CRET-prop-7f3a9c";

#[derive(Debug, Clone)]
struct GenOutcome {
    kind: u8, // 0 output, 1 echo, 2 error
    phase: u8,
    retryable: bool,
    latency_ms: u64,
}

#[derive(Debug, Clone)]
struct GenStep {
    on_error: u8,
    max_attempts: u64,
    exponential: bool,
    delay_ms: u64,
    idempotent: bool,
    outcomes: Vec<GenOutcome>,
    uses_secret: bool,
    reads: Option<usize>,
}

#[derive(Debug, Clone)]
struct Gen {
    steps: Vec<GenStep>,
    /// (from, to, error?) by step index; empty → implicit chain.
    edges: Vec<(usize, usize, bool)>,
    crash_pick: prop::sample::Index,
    from_pick: prop::sample::Index,
}

const ON_ERROR: [&str; 3] = ["fail", "continue", "continue-record"];
const PHASES: [&str; 4] = ["resolution", "auth", "execute", "output"];

fn outcome() -> impl Strategy<Value = GenOutcome> {
    (0u8..3, 0u8..4, any::<bool>(), 0u64..4).prop_map(|(kind, phase, retryable, latency_ms)| {
        GenOutcome {
            kind,
            phase,
            retryable,
            latency_ms,
        }
    })
}

fn gen_step(n: usize) -> impl Strategy<Value = GenStep> {
    (
        0u8..3,
        1u64..4,
        any::<bool>(),
        0u64..3000,
        any::<bool>(),
        prop::collection::vec(outcome(), 1..4),
        any::<bool>(),
        prop::option::of(0..n),
    )
        .prop_map(
            |(
                on_error,
                max_attempts,
                exponential,
                delay_ms,
                idempotent,
                outcomes,
                uses_secret,
                reads,
            )| {
                GenStep {
                    on_error,
                    max_attempts,
                    exponential,
                    delay_ms,
                    idempotent,
                    outcomes,
                    uses_secret,
                    reads,
                }
            },
        )
}

fn workflows() -> impl Strategy<Value = Gen> {
    (1usize..7).prop_flat_map(|n| {
        (
            prop::collection::vec(gen_step(n), n),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec((0..n, 0..n, prop::bool::weighted(0.3)), 0..(2 * n)),
            prop::bool::weighted(0.2),
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(steps, perm, raw, implicit, crash_pick, from_pick)| {
                let mut edges = BTreeSet::new();
                if !implicit {
                    for (x, y, err) in raw {
                        if x == y {
                            continue;
                        }
                        // Orient every edge along a random topological order: a DAG whose
                        // plan order differs from the declared order.
                        let (f, t) = if perm[x] < perm[y] { (x, y) } else { (y, x) };
                        edges.insert((f, t, err));
                    }
                }
                Gen {
                    steps,
                    edges: edges.into_iter().collect(),
                    crash_pick,
                    from_pick,
                }
            })
    })
}

fn sid(i: usize) -> String {
    format!("s{i}")
}

impl Gen {
    fn workflow(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut with = serde_json::Map::new();
                with.insert("i".into(), json!(i));
                if s.uses_secret {
                    with.insert("sec".into(), json!({"$": "vars.s"}));
                }
                if let Some(j) = s.reads {
                    with.insert(
                        "up".into(),
                        json!({"$": format!("steps.{}.output", sid(j))}),
                    );
                }
                json!({
                    "id": sid(i),
                    "uses": {"app": "app", "action": "act"},
                    "with": with,
                    "retry": {"maxAttempts": s.max_attempts,
                              "backoff": if s.exponential { "exponential" } else { "fixed" },
                              "delayMs": s.delay_ms},
                    "onError": ON_ERROR[s.on_error as usize],
                })
            })
            .collect();
        let mut wf = json!({"manifestVersion": "2", "id": "wf_prop", "name": "prop",
                            "variables": [{"key": "s", "type": "string"}], "steps": steps});
        if !self.edges.is_empty() {
            wf["edges"] = self
                .edges
                .iter()
                .map(|&(f, t, e)| {
                    if e {
                        json!({"from": sid(f), "to": sid(t), "when": "error"})
                    } else {
                        json!({"from": sid(f), "to": sid(t)})
                    }
                })
                .collect();
        }
        wf
    }

    fn scenario(&self, faults: Value) -> Value {
        let actions: serde_json::Map<String, Value> = self
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
                                                  "message": format!("failure {k} of {} carrying {SECRET}", sid(i)),
                                                  "phase": PHASES[o.phase as usize],
                                                  "retryable": o.retryable}}),
                        };
                        v["latencyMs"] = json!(o.latency_ms);
                        v
                    })
                    .collect();
                (
                    sid(i),
                    json!({"idempotent": s.idempotent, "outcomes": outcomes,
                           "meta": {"app": "app", "version": format!("v{i}"), "action": "act"}}),
                )
            })
            .collect();
        json!({"variables": {"s": SECRET}, "secrets": {"S": SECRET},
               "actions": actions, "faults": faults})
    }
}

/// The model's prediction for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelStep {
    status: &'static str,
    attempt: u64,
    invocations: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Model {
    status: &'static str,
    steps: BTreeMap<String, ModelStep>,
    error_step: Option<String>,
    step_errors: Vec<String>,
}

/// The semantics, written out as plainly as possible and independently of the engine.
fn model(g: &Gen) -> Model {
    let n = g.steps.len();
    // Plan: Kahn's algorithm, always taking the lowest declared index that is ready.
    let order: Vec<usize> = if g.edges.is_empty() {
        (0..n).collect()
    } else {
        let mut done = vec![false; n];
        let mut order = Vec::new();
        while order.len() < n {
            let next = (0..n)
                .find(|&i| !done[i] && g.edges.iter().all(|&(f, t, _)| t != i || done[f]))
                .expect("generated graphs are acyclic");
            done[next] = true;
            order.push(next);
        }
        order
    };
    let mut skipped: BTreeSet<(usize, usize, bool)> = BTreeSet::new();
    let mut m = Model {
        status: "succeeded",
        steps: BTreeMap::new(),
        error_step: None,
        step_errors: Vec::new(),
    };
    for &i in &order {
        let inbound: Vec<_> = g.edges.iter().filter(|e| e.1 == i).collect();
        let out: Vec<_> = g.edges.iter().filter(|e| e.0 == i).copied().collect();
        if !inbound.is_empty() && inbound.iter().all(|e| skipped.contains(e)) {
            m.steps.insert(
                sid(i),
                ModelStep {
                    status: "skipped",
                    attempt: 0,
                    invocations: 0,
                },
            );
            skipped.extend(out);
            continue;
        }
        let s = &g.steps[i];
        let mut attempt = 0;
        let succeeded = loop {
            attempt += 1;
            let o = &s.outcomes[((attempt - 1) as usize).min(s.outcomes.len() - 1)];
            if o.kind != 2 {
                break true;
            }
            let retryable = PHASES[o.phase as usize] == "execute" && (s.idempotent || o.retryable);
            if !(retryable && attempt < s.max_attempts) {
                break false;
            }
        };
        m.steps.insert(
            sid(i),
            ModelStep {
                status: if succeeded { "succeeded" } else { "failed" },
                attempt,
                invocations: attempt,
            },
        );
        let has_error_edge = out.iter().any(|e| e.2);
        if succeeded {
            skipped.extend(out.iter().filter(|e| e.2));
        } else if has_error_edge {
            skipped.extend(out.iter().filter(|e| !e.2));
        } else if s.on_error == 0 {
            m.status = "failed";
            m.error_step = Some(sid(i));
            break;
        } else if s.on_error == 2 {
            m.step_errors.push(sid(i));
        }
    }
    m
}

fn simulate(g: &Gen, faults: Value) -> Report {
    let wf = sim::load_workflow(&g.workflow()).expect("generated workflow is valid");
    let sc = sim::load_scenario(&g.scenario(faults)).expect("generated scenario is valid");
    sim::run(&wf, &sc, &SimOptions::default(), None).expect("the simulator produces a report")
}

fn invocations(r: &Report, step: &str) -> u64 {
    r.world
        .invocations
        .iter()
        .filter(|i| i["stepId"] == step)
        .count() as u64
}

fn repro(g: &Gen, faults: Value) -> String {
    format!(
        "\nworkflow: {}\nscenario: {}",
        g.workflow(),
        g.scenario(faults)
    )
}

fn assert_no_secret(r: &Report, what: &str) {
    let text = format!(
        "{}{}",
        r.to_json(),
        serde_json::to_string(&r.trace).unwrap_or_default()
    );
    assert!(!text.contains(SECRET), "{what}: the secret leaked:\n{text}");
    let checkpoints = r
        .trace
        .iter()
        .filter(|e| e["event"] == "checkpoint")
        .count() as u64;
    assert_eq!(
        checkpoints, r.world.checkpoints,
        "{what}: every checkpoint is traced"
    );
}

fn check_model(r: &Report, m: &Model, g: &Gen) {
    let ctx = repro(g, json!({}));
    assert_eq!(r.run.status.as_str(), m.status, "run status{ctx}");
    for (id, want) in &m.steps {
        let got = r
            .run
            .steps
            .get(id)
            .unwrap_or_else(|| panic!("step {id} missing{ctx}"));
        assert_eq!(got.status.as_str(), want.status, "status of {id}{ctx}");
        assert_eq!(u64::from(got.attempt), want.attempt, "attempt of {id}{ctx}");
        assert_eq!(
            invocations(r, id),
            want.invocations,
            "invocations of {id}{ctx}"
        );
    }
    assert_eq!(
        r.run.steps.len(),
        m.steps.len(),
        "only reached steps appear{ctx}"
    );
    assert_eq!(
        r.run.error.as_ref().and_then(|e| e.step_id.clone()),
        m.error_step,
        "run error{ctx}"
    );
    let recorded: Vec<String> = r
        .run
        .step_errors
        .iter()
        .filter_map(|e| e.step_id.clone())
        .collect();
    assert_eq!(recorded, m.step_errors, "stepErrors{ctx}");
}

fn outputs(s: &RunState) -> BTreeMap<String, Option<Value>> {
    s.steps
        .iter()
        .filter(|(_, r)| r.status == w6w_sim::model::StepStatus::Succeeded)
        .map(|(k, r)| (k.clone(), r.output.clone()))
        .collect()
}

proptest! {
    #[test]
    fn crash_resume_replay_retry_and_secrets(g in workflows()) {
        let plain = simulate(&g, json!({}));
        let m = model(&g);
        // (c) invocations, attempts, statuses, routing and onError as the model allows.
        check_model(&plain, &m, &g);
        // (d) no secret anywhere.
        assert_no_secret(&plain, "crash-free run");

        // (a) crash right after checkpoint k, then resume from the store.
        let k = g.crash_pick.index(plain.world.checkpoints as usize) as u64 + 1;
        let faults = json!({"crashAfterCheckpoint": [k]});
        let crashed = simulate(&g, faults.clone());
        prop_assert_eq!(crashed.world.crashes, 1);
        prop_assert_eq!(&crashed.run, &plain.run, "crash after checkpoint {}{}", k, repro(&g, faults));
        assert_no_secret(&crashed, "crashed run");

        // (b) replay: same terminal status and outputs, no invocation of succeeded steps.
        let wf = sim::load_workflow(&g.workflow()).expect("valid");
        let sc = sim::load_scenario(&g.scenario(json!({}))).expect("valid");
        let replayed = sim::replay(&wf, &sc, &plain.run, None, &SimOptions::default(), None)
            .expect("replay report");
        prop_assert_eq!(replayed.run.status, plain.run.status, "{}", repro(&g, json!({})));
        prop_assert_eq!(outputs(&replayed.run), outputs(&plain.run));
        prop_assert_eq!(&replayed.run.output, &plain.run.output);
        for (id, rec) in &plain.run.steps {
            if rec.status == w6w_sim::model::StepStatus::Succeeded {
                prop_assert_eq!(invocations(&replayed, id), 0, "replay re-invoked {}", id);
                prop_assert_eq!(&replayed.run.steps[id].meta, &rec.meta, "replay reuses meta of {}", id);
            }
        }
        assert_no_secret(&replayed, "replay");

        // Replay from a step: that step and its descendants run again, nothing upstream.
        let from = g.from_pick.index(g.steps.len());
        let from_id = sid(from);
        let replayed_from = sim::replay(&wf, &sc, &plain.run, Some(&from_id), &SimOptions::default(), None)
            .expect("replay-from report");
        let mut desc = BTreeSet::from([from]);
        if g.edges.is_empty() {
            desc.extend(from..g.steps.len());
        } else {
            let mut changed = true;
            while changed {
                changed = false;
                for &(f, t, _) in &g.edges {
                    if desc.contains(&f) && desc.insert(t) {
                        changed = true;
                    }
                }
            }
        }
        for i in 0..g.steps.len() {
            if !desc.contains(&i) {
                prop_assert_eq!(invocations(&replayed_from, &sid(i)), 0, "replay from {} re-invoked {}", from_id, sid(i));
            }
        }
        assert_no_secret(&replayed_from, "replay from");
    }
}
