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
//! (c) each step's invocations, attempts and status equal what the model allows — the
//!     retry classification, onError and edge routing written out naively in
//!     `w6w_sim::__internals::conformance::generate` (shared with `w6w-sim conformance --generate`, which
//!     checks the same model through op responses; this test also sees traces);
//! (d) no secret plaintext appears in any checkpoint, trace event or report;
//! (e) secret-echoing actions (D-112): a crash after any checkpoint, a replay and a replay
//!     from a step end where the crash-free run does, gates on the echoed value included.
//!
//! A failure prints the generated workflow and scenario as JSON: save them as files and
//! `w6w-sim run WORKFLOW --scenario SCENARIO` reproduces the run exactly.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::__internals::conformance::generate::{GenOutcome, GenStep, Generated, Model, SECRET};
use w6w_sim::model::RunState;
use w6w_sim::sim::{self, Report, SimOptions};

/// A generated workflow (the library's shapes, so one model serves both this test and the
/// CLI's `--generate`) plus this test's own picks of a crash point and a replay start.
#[derive(Debug, Clone)]
struct Gen {
    g: Generated,
    crash_pick: prop::sample::Index,
    from_pick: prop::sample::Index,
}

impl Gen {
    fn workflow(&self) -> Value {
        self.g.workflow()
    }

    fn scenario(&self, faults: Value) -> Value {
        self.g.scenario(faults)
    }
}

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
                        let (f, t) = if perm[x] < perm[y] { (x, y) } else { (y, x) };
                        edges.insert((f, t, err));
                    }
                }
                Gen {
                    g: Generated {
                        seed: 0,
                        steps,
                        edges: edges.into_iter().collect(),
                        meta: true,
                    },
                    crash_pick,
                    from_pick,
                }
            })
    })
}

fn sid(i: usize) -> String {
    format!("s{i}")
}

fn simulate(g: &Gen, faults: Value) -> Report {
    let wf = sim::load_workflow(&g.workflow()).expect("generated workflow is valid");
    let sc = sim::load_scenario(&g.scenario(faults)).expect("generated scenario is valid");
    sim::Simulation::new(&wf, &sc)
        .run()
        .expect("the simulator produces a report")
}

fn invocations(r: &Report, step: &str) -> u64 {
    r.world
        .invocations
        .iter()
        .filter(|i| &*i.step_id == step)
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
        .map(|(k, r)| (k.clone(), r.output.as_ref().map(|t| t.to_value())))
        .collect()
}

proptest! {
    #[test]
    fn crash_resume_replay_retry_and_secrets(g in workflows()) {
        let plain = simulate(&g, json!({}));
        let m = g.g.model();
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
        let replayed = sim::Simulation::new(&wf, &sc).replay(&plain.run, None)
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
        let from = g.from_pick.index(g.g.steps.len());
        let from_id = sid(from);
        let replayed_from = sim::Simulation::new(&wf, &sc).replay(&plain.run, Some(&from_id))
            .expect("replay-from report");
        let mut desc = BTreeSet::from([from]);
        if g.g.edges.is_empty() {
            desc.extend(from..g.g.steps.len());
        } else {
            let mut changed = true;
            while changed {
                changed = false;
                for &(f, t, _) in &g.g.edges {
                    if desc.contains(&f) && desc.insert(t) {
                        changed = true;
                    }
                }
            }
        }
        for i in 0..g.g.steps.len() {
            if !desc.contains(&i) {
                prop_assert_eq!(invocations(&replayed_from, &sid(i)), 0, "replay from {} re-invoked {}", from_id, sid(i));
            }
        }
        assert_no_secret(&replayed_from, "replay from");
    }
}

// (e) D-112: secret-echoing actions. Producers whose output carries the run's secret — a
// secret-derived echo, an untainted action returning it whole and inside text — or not, each
// followed by a gate on `output.tok == <secret>` and a step reading it; an aggregate over every
// producer and a gate on its first entry. A crash right after any checkpoint, a replay, and a
// replay from the first gate all end where the crash-free run does: the recorded references
// are re-materialised inside the engine, so no gate routes differently after a restart, and
// no byte of the secret (nor an 8-character piece) is recorded. Kind 3 (D-170) is a
// secret-derived producer whose output is computed (the secret inside text, a length): it is
// recorded "[redacted]" wholly and sealed with the key the host derives from the run's
// secrets (a second, long secret `L` makes sure there is enough material for one).

fn secret_echo_workflow(kinds: &[u8], parallel: bool, secret: &str, long: &str) -> (Value, Value) {
    let mut steps = vec![
        json!({"id": "root", "uses": {"app": "app", "action": "root"},
                                "fanOut": if parallel { "parallel" } else { "sequential" }}),
    ];
    let mut edges = Vec::new();
    let mut actions = serde_json::Map::new();
    let gate = |id: &str, var: String| {
        json!({"id": id, "uses": {"app": "@w6w/control", "action": "if"},
               "with": {"condition": {"$expr": {"==": [{"var": var}, secret]}}}})
    };
    for (i, &kind) in kinds.iter().enumerate() {
        let (p, g, c) = (format!("p{i}"), format!("g{i}"), format!("c{i}"));
        let with = match kind {
            0 | 3 => json!({"i": i, "tok": "{{ secrets.S }}"}),
            _ => json!({"i": i}),
        };
        steps.push(json!({"id": p, "uses": {"app": "app", "action": "produce"}, "with": with}));
        let outcome = match kind {
            0 => json!({"echo": true, "latencyMs": 3 * i as u64}),
            1 => json!({"output": {"tok": secret, "url": format!("https://x/{secret}/v"), "n": i},
                        "latencyMs": 2}),
            3 => json!({"output": {"tok": secret, "auth": format!("Bearer {secret}"),
                                   "len": secret.len(), "n": i}, "latencyMs": 2}),
            _ => json!({"output": {"tok": "plain", "n": i}, "latencyMs": 1}),
        };
        actions.insert(p.clone(), json!({"outcomes": [outcome]}));
        steps.push(gate(&g, format!("steps.{p}.output.tok")));
        steps.push(json!({"id": c, "uses": {"app": "app", "action": "consume"},
                          "with": {"v": {"$": format!("steps.{p}.output.tok")}}}));
        edges.push(json!({"from": "root", "to": p}));
        edges.push(json!({"from": p, "to": g}));
        edges.push(json!({"from": g, "to": c}));
        edges.push(json!({"from": p, "to": "join"}));
    }
    steps.push(
        json!({"id": "join", "uses": {"app": "@w6w/control", "action": "aggregate"},
                      "with": {"mode": "array"}}),
    );
    steps.push(gate("gj", "steps.join.output.result.0.tok".into()));
    steps.push(json!({"id": "cj", "uses": {"app": "app", "action": "consume"}}));
    edges.push(json!({"from": "join", "to": "gj"}));
    edges.push(json!({"from": "gj", "to": "cj"}));
    let wf = json!({"manifestVersion": "2", "id": "wf_echo", "name": "echo", "steps": steps,
                    "edges": edges});
    // D-250: the host's key comes from outside the store (a test key here), never from
    // the secrets; kind 3's computed output is sealed with it.
    let sc = json!({"secrets": {"S": secret, "L": long}, "actions": actions,
                    "sealingKey": "Kq93vLx0Zt7mWb2Nc8Rd5Yp1Hs6Jf4Ge"});
    (wf, sc)
}

fn run_echo(wf: &Value, sc: &Value, faults: Value) -> Report {
    let mut sc = sc.clone();
    sc["faults"] = faults;
    let wf = sim::load_workflow(wf).expect("valid workflow");
    let sc = sim::load_scenario(&sc).expect("valid scenario");
    sim::Simulation::new(&wf, &sc).run().expect("report")
}

fn untimed(s: &RunState) -> Value {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "startedAt" | "finishedAt"))
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    strip(&serde_json::to_value(s).unwrap_or_default())
}

fn statuses(s: &RunState) -> BTreeMap<String, String> {
    s.steps
        .iter()
        .map(|(k, r)| (k.clone(), r.status.as_str().to_owned()))
        .collect()
}

fn assert_no_secret_piece(r: &Report, secret: &str, what: &str) {
    let text = format!(
        "{}{}",
        r.to_json(),
        serde_json::to_string(&r.trace).unwrap_or_default()
    );
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(8) {
        let piece: String = w.iter().collect();
        assert!(
            !text.contains(&piece),
            "{what}: {piece:?} recorded:\n{text}"
        );
    }
}

proptest! {
    #[test]
    fn secret_echoes_resume_and_replay_like_the_crash_free_run(
        kinds in prop::collection::vec(0u8..4, 1..4),
        parallel in any::<bool>(),
        secret in "[A-Za-z0-9_.-]{6,10}[\"\\\\ ]?[A-Za-z0-9]{2,10}",
        long in "[a-z0-9]{16,24}",
        crash_pick in any::<prop::sample::Index>(),
    ) {
        let (wf, sc) = secret_echo_workflow(&kinds, parallel, &secret, &long);
        let ctx = format!("\nworkflow: {wf}\nscenario: {sc}");
        let plain = run_echo(&wf, &sc, json!({}));
        prop_assert_eq!(plain.run.status.as_str(), "succeeded", "{}", ctx);
        // The gates saw the secret exactly where a producer returned it.
        for (i, &kind) in kinds.iter().enumerate() {
            let want = if kind != 2 { "succeeded" } else { "skipped" };
            prop_assert_eq!(plain.run.steps[&format!("c{i}")].status.as_str(), want, "c{}{}", i, ctx);
        }
        let want_cj = if kinds[0] != 2 { "succeeded" } else { "skipped" };
        prop_assert_eq!(plain.run.steps["cj"].status.as_str(), want_cj, "{}", ctx);
        assert_no_secret_piece(&plain, &secret, "crash-free run");
        assert_no_secret_piece(&plain, &long, "crash-free run");

        let k = crash_pick.index(plain.world.checkpoints as usize) as u64 + 1;
        let crashed = run_echo(&wf, &sc, json!({"crashAfterCheckpoint": [k]}));
        prop_assert_eq!(crashed.world.crashes, 1);
        // Timestamps aside: under strands an invocation in flight at the crash really runs
        // again (RUN-4) and gets new times (D-73).
        prop_assert_eq!(untimed(&crashed.run), untimed(&plain.run), "crash after checkpoint {}{}", k, ctx);
        assert_no_secret_piece(&crashed, &secret, "crashed run");
        assert_no_secret_piece(&crashed, &long, "crashed run");

        let wfm = sim::load_workflow(&wf).expect("valid");
        let scm = sim::load_scenario(&sc).expect("valid");
        for from in [None, Some("g0")] {
            let replayed = sim::Simulation::new(&wfm, &scm).replay(&plain.run, from)
                .expect("replay report");
            prop_assert_eq!(replayed.run.status, plain.run.status, "replay from {:?}{}", from, ctx);
            prop_assert_eq!(statuses(&replayed.run), statuses(&plain.run), "replay from {:?}{}", from, ctx);
            assert_no_secret_piece(&replayed, &secret, "replay");
        }
    }
}

/// D-195: a late step reads an entry published long before it — whose parse the scope
/// dropped long ago — meta included, and the whole `steps` root, exactly as a two-step run
/// reads the same entry.
#[test]
fn a_late_step_reads_an_early_entry_as_a_short_run_does() {
    fn chain(n: usize) -> Value {
        let mut steps: Vec<Value> = (0..n - 1)
            .map(|i| {
                let with = if i == 0 {
                    json!({"seed": 1, "text": "a \"quoted\" \\ line\n", "x": 0.1})
                } else {
                    json!({"prev": {"$": format!("steps.s{}.output.i", i - 1)}, "i": i})
                };
                json!({"id": format!("s{i}"), "uses": {"app": "echo", "action": "echo"}, "with": with})
            })
            .collect();
        steps.push(
            json!({"id": "last", "uses": {"app": "echo", "action": "echo"},
            "with": {"first": {"$": "steps.s0"}, "text": "{{ steps.s0.output.text }}",
                     "whole": {"$": "steps"}}}),
        );
        json!({"manifestVersion": "2", "id": "wf_late", "name": "late", "steps": steps})
    }
    let scenario = sim::load_scenario(&json!({"actions": {"s0": {
        "meta": {"app": "echo", "version": "1.2.3", "action": "echo"}}}}))
    .expect("scenario");
    let options = SimOptions {
        keep_trace: false,
        ..SimOptions::default()
    };
    let last = |n: usize| -> Value {
        let wf = sim::load_workflow(&chain(n)).expect("workflow");
        let r = sim::Simulation::new(&wf, &scenario)
            .options(&options)
            .run()
            .expect("report");
        assert_eq!(r.run.status.as_str(), "succeeded", "{n} steps");
        r.run.steps["last"]
            .output
            .as_ref()
            .map(|t| t.to_value())
            .expect("output")
    };
    let short = last(2);
    assert!(short["first"]["meta"].is_object(), "{short}");
    for n in [300, 1_000] {
        let long = last(n);
        assert_eq!(long["first"], short["first"], "{n} steps");
        assert_eq!(long["text"], short["text"], "{n} steps");
        let whole = long["whole"].as_object().expect("the steps root");
        assert_eq!(whole.len(), n - 1);
        assert_eq!(whole["s0"], short["first"]);
        assert_eq!(whole["s150"], json!({"output": {"prev": 149, "i": 150}}));
        let order: Vec<&String> = whole.keys().take(3).collect();
        assert_eq!(order, ["s0", "s1", "s2"]);
    }
}
