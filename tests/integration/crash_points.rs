//! `Simulation::crash_points` (RUN-3/RUN-4 campaigns): the crash after each checkpoint
//! answered from one simulation copied at every checkpoint must be, report and trace
//! alike, what running each fault plan from the top gives. Checked on the workflow and
//! scenario of every `run` case of the conformance suite (strands, foreach, calls, waits,
//! retries, run-level errors), the crash-free run included.

use std::path::Path;

use serde_json::Value;
use w6w_sim::__internals::sim::Faults;
use w6w_sim::sim::{self, Report, Scenario, SimError, SimOptions};

fn observed(r: &Result<Report, SimError>) -> (Value, Vec<Value>) {
    match r {
        Ok(report) => (report.to_json(), report.trace.clone()),
        Err(e) => (e.to_json(), Vec::new()),
    }
}

#[test]
fn crash_points_from_one_simulation_match_each_run_from_the_top() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let options = SimOptions::default();
    assert!(options.keep_trace, "the trace is compared too");
    let (mut workflows, mut points, mut from_copies) = (0, 0, 0);
    for file in files {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
        for case in doc["cases"].as_array().into_iter().flatten() {
            let request = &case["request"];
            if request["op"] != "run" || request.get("dialect").is_some() {
                continue;
            }
            let Ok(workflow) = sim::load_workflow(&request["workflow"]) else {
                continue;
            };
            let empty = serde_json::json!({});
            let Ok(mut scenario) = sim::load_scenario(request.get("scenario").unwrap_or(&empty))
            else {
                continue;
            };
            scenario.faults = Faults::default();
            let Ok(plain) = sim::Simulation::new(&workflow, &scenario)
                .options(&options)
                .run()
            else {
                continue;
            };
            let points_of = sim::Simulation::new(&workflow, &scenario)
                .options(&options)
                .crash_points(40);
            let (got, want) = (observed(&points_of.plain), observed(&Ok(plain.clone())));
            assert!(
                got == want,
                "case {}: the crash-free run differs",
                case["id"]
            );
            let upto = plain.world.checkpoints.min(40);
            let copied = points_of.reports;
            assert_eq!(copied.len() as u64, upto, "{}", case["id"]);
            from_copies += points_of.copied;
            for (k, got) in (1..=upto).zip(&copied) {
                let alone = Scenario {
                    faults: Faults {
                        crash_after_checkpoint: vec![k],
                        crash_in_invoke: Vec::new(),
                    },
                    ..scenario.clone()
                };
                let want = sim::Simulation::new(&workflow, &alone)
                    .options(&options)
                    .run();
                let (got, want) = (observed(got), observed(&want));
                assert!(
                    got == want,
                    "case {} crash after checkpoint {k}: the copied simulation differs\n  copied: {}\n  alone:  {}",
                    case["id"],
                    serde_json::to_string(&got).unwrap_or_default(),
                    serde_json::to_string(&want).unwrap_or_default()
                );
                points += 1;
            }
            workflows += 1;
        }
    }
    assert!(
        workflows > 100 && points > 500,
        "{workflows} workflows, {points} points"
    );
    // Most points must come from copies, or the comparison checks nothing: the rest are
    // checkpoints of child runs (calls), run from the top.
    assert!(
        from_copies * 20 >= points * 17,
        "only {from_copies} of {points} points continued a copy"
    );
    eprintln!("{workflows} workflows, {points} crash points compared, {from_copies} from copies");
}

/// A campaign of an engine under test (an [`sim::EngineFactory`], booted afresh at every
/// crash) copies nothing: each crash runs from the top, exactly as that engine's own run of
/// the fault plan `crashAfterCheckpoint: [k]` does.
#[test]
fn an_engine_factorys_crash_points_are_each_run_from_the_top() {
    let workflow = sim::load_workflow(&serde_json::json!({
        "manifestVersion": "2", "id": "chain", "name": "chain",
        "steps": [
            {"id": "a", "uses": {"app": "x", "action": "a"}},
            {"id": "b", "uses": {"app": "x", "action": "b"}},
            {"id": "c", "uses": {"app": "x", "action": "c"}}
        ],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]
    }))
    .expect("workflow");
    let scenario = sim::load_scenario(&serde_json::json!({})).expect("scenario");
    let factory = w6w_sim::engine::ReferenceEngine;
    let points = sim::Simulation::with_engine(&factory, &workflow, &scenario).crash_points(40);
    let plain = points.plain.as_ref().expect("the crash-free run");
    assert!(plain.world.checkpoints >= 3, "{}", plain.world.checkpoints);
    assert_eq!(points.copied, 0, "an engine factory's runs are not copied");
    assert_eq!(points.reports.len() as u64, plain.world.checkpoints.min(40));
    for (k, got) in (1..).zip(&points.reports) {
        let alone = Scenario {
            faults: Faults {
                crash_after_checkpoint: vec![k],
                crash_in_invoke: Vec::new(),
            },
            ..scenario.clone()
        };
        let want = sim::Simulation::with_engine(&factory, &workflow, &alone).run();
        assert!(
            observed(got) == observed(&want),
            "crash after checkpoint {k} differs"
        );
        let crashes = got.as_ref().map_or(0, |r| r.world.crashes);
        assert_eq!(crashes, 1, "crash after checkpoint {k} crashed once");
    }
}
