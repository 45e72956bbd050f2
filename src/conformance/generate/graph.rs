//! The graph properties of a generated workflow: what a candidate's `plan` and `validate`
//! answer of it, checked against the generator's own model (D-382).
//!
//! Owns: the model's plan order ([`Generated::model_order`], PLAN-4/5 written out naively: the
//! declared order without edges, else the earliest-declared ready step first over every
//! edge, error edges included, ERR-13), the one defect a seed plants in a copy of its
//! workflow ([`Defect`]: a dangling edge, a duplicate id, a dotted id or a self-loop,
//! PLAN-1/2/3/8) and [`check_graph`]. Every generated workflow is a fresh draw, so a
//! candidate that answers the pure ops from a recording of the published cases passes
//! none of these.

use serde_json::{Value, json};

use super::{Generated, PureChecks, SplitMix64, Violation, cap, sid, violation};
use crate::conformance::Adapter;

/// The one problem a seed plants in a copy of its workflow for the `validate` property,
/// always appended, so every path before it is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Defect {
    /// PLAN-2: an edge from step `k` to a step no one declares.
    DanglingEdge(usize),
    /// PLAN-1: a second step declaring step `k`'s id.
    DuplicateId(usize),
    /// PLAN-8: a step whose id is step `k`'s with `.x` after it.
    DottedId(usize),
    /// PLAN-3: an edge from step `k` to itself.
    SelfLoop(usize),
}

/// Salt of the defect's draw, so it never shifts the workflow's own draws.
const DEFECT_STREAM: u64 = 0x5eed_defe_c7ed_0001;

impl Generated {
    /// PLAN-4/5 as the model reads them: without edges the declared order (the implicit
    /// chain); with edges, repeatedly the earliest-declared step whose every predecessor
    /// is placed — over success and error edges alike (ERR-13).
    pub(crate) fn model_order(&self) -> Vec<String> {
        let n = self.steps.len();
        if self.edges.is_empty() {
            return (0..n).map(sid).collect();
        }
        let mut placed = vec![false; n];
        let mut order = Vec::with_capacity(n);
        while order.len() < n {
            let ready = (0..n)
                .find(|&i| !placed[i] && self.edges.iter().all(|&(f, t, _)| t != i || placed[f]));
            // The generator draws only forward edges of a random order: always acyclic.
            let Some(i) = ready else { break };
            placed[i] = true;
            order.push(sid(i));
        }
        order
    }

    /// The defect this workflow's seed plants (drawn from the seed and the step count,
    /// so a shrunk workflow plants the same kind at a step it still has).
    pub(crate) fn defect(&self) -> Defect {
        let mut rng = SplitMix64::new(self.seed ^ DEFECT_STREAM);
        let kind = rng.below(4);
        let k = rng.below(self.steps.len().max(1) as u64) as usize;
        match kind {
            0 => Defect::DanglingEdge(k),
            1 => Defect::DuplicateId(k),
            2 => Defect::DottedId(k),
            _ => Defect::SelfLoop(k),
        }
    }

    /// `wf`, this workflow's document, with `defect` planted, and the `(code, path)` of
    /// the problem `validate` must name.
    pub(crate) fn with_defect(
        &self,
        mut wf: Value,
        defect: Defect,
    ) -> (Value, (&'static str, String)) {
        let steps = wf["steps"].as_array().map_or(0, Vec::len);
        let edges = wf["edges"].as_array().map_or(0, Vec::len);
        let step = |id: String| json!({"id": id, "uses": {"app": "app", "action": "act"}});
        let (element, expected) = match defect {
            Defect::DanglingEdge(k) => (
                ("edges", json!({"from": sid(k), "to": "ghost"})),
                ("dangling_edge", format!("/edges/{edges}/to")),
            ),
            Defect::SelfLoop(k) => (
                ("edges", json!({"from": sid(k), "to": sid(k)})),
                ("cycle", "/edges".to_owned()),
            ),
            Defect::DuplicateId(k) => (
                ("steps", step(sid(k))),
                ("duplicate_step_id", format!("/steps/{steps}/id")),
            ),
            Defect::DottedId(k) => (
                ("steps", step(format!("{}.x", sid(k)))),
                ("dotted_step_id", format!("/steps/{steps}/id")),
            ),
        };
        let (member, value) = element;
        match wf.get_mut(member).and_then(Value::as_array_mut) {
            Some(items) => items.push(value),
            None => wf[member] = json!([value]),
        }
        (wf, expected)
    }
}

/// The candidate's answer to `request`, whatever it is; no answer is the adapter's
/// violation.
fn reply(adapter: &mut dyn Adapter, request: &Value) -> Result<Value, Violation> {
    adapter
        .handle(request)
        .map_err(|e| violation("adapter", e.to_string()))
}

/// The graph properties `checks` names, of `g`, against `adapter`.
pub(crate) fn check_graph(
    adapter: &mut dyn Adapter,
    g: &Generated,
    checks: PureChecks,
) -> Result<(), Violation> {
    if !(checks.plan || checks.validate) {
        return Ok(());
    }
    // Built once: each request carries a copy, the defect's request the original.
    let workflow = g.workflow();
    if checks.plan {
        let answer = reply(
            adapter,
            &json!({"op": "plan", "workflow": workflow.clone()}),
        )?;
        let expected = g.model_order();
        if answer.get("ok") != Some(&json!(expected)) {
            return Err(violation(
                "plan",
                format!(
                    "plan answered {}, the model's order (PLAN-4/5) is {}",
                    cap(&answer.to_string()),
                    json!(expected)
                ),
            ));
        }
    }
    if checks.validate {
        let answer = reply(
            adapter,
            &json!({"op": "validate", "workflow": workflow.clone()}),
        )?;
        if answer.get("ok") != Some(&json!(true)) {
            return Err(violation(
                "validate",
                format!(
                    "validate refused a valid workflow: {}",
                    cap(&answer.to_string())
                ),
            ));
        }
        let defect = g.defect();
        let (workflow, (code, path)) = g.with_defect(workflow, defect);
        let answer = reply(adapter, &json!({"op": "validate", "workflow": workflow}))?;
        let named = answer
            .pointer("/error/errors")
            .and_then(Value::as_array)
            .is_some_and(|errors| {
                errors
                    .iter()
                    .any(|e| e["code"] == code && e["path"] == path.as_str())
            });
        if !named {
            return Err(violation(
                "validate",
                format!(
                    "with {defect:?} planted, validate must name {code} at {path}; it answered {}",
                    cap(&answer.to_string())
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::conformance::generate::{SeedOutcome, run_generated};
    use crate::conformance::{AdapterError, Capabilities, EngineOnHost, Reference, SimulatedHost};

    /// The reference's pure ops under a profile without runs, with `tamper` applied to
    /// every answer: the seam a pure-op candidate is judged at.
    struct PureOps<F>(F);

    impl<F: FnMut(&Value, Value) -> Value> Adapter for PureOps<F> {
        fn name(&self) -> String {
            "pure ops".into()
        }
        fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
            let answer = crate::service::handle(request);
            Ok((self.0)(request, answer))
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities::all().without("op.run").without("op.replay")
        }
    }

    /// The failed properties of seeds `1..=count` against `adapter`.
    fn failed(adapter: &mut dyn Adapter, count: usize) -> Vec<&'static str> {
        let report = run_generated(adapter, count, 1);
        assert_eq!(
            report.pure_only, count,
            "every seed is judged on its pure ops"
        );
        for f in &report.failures {
            // A draw's failure does not depend on the workflow: it is not shrunk.
            if super::super::expr::DRAWN.contains(&f.violation.property) {
                assert_eq!(f.steps_after, f.steps_before, "{f:?}");
            }
        }
        report
            .failures
            .iter()
            .map(|f| f.violation.property)
            .collect()
    }

    #[test]
    fn the_reference_passes_its_graph_on_every_seed_and_each_defect_is_drawn() {
        let mut adapter = PureOps(|_: &Value, answer| answer);
        assert_eq!(failed(&mut adapter, 400), Vec::<&str>::new());
        let drawn: std::collections::HashSet<_> = (1..=400u64)
            .map(|s| std::mem::discriminant(&Generated::from_seed(s).defect()))
            .collect();
        assert_eq!(drawn.len(), 4, "all four defects are drawn");
    }

    /// A candidate that answers the pure ops from a recording of the reference's answers
    /// to every published case passes each of those cases, and no generated workflow.
    #[test]
    fn a_recording_of_the_published_answers_fails_every_generated_workflow() {
        let suite = crate::conformance::Suite::load_default().expect("the suite loads");
        let recorded: HashMap<String, Value> = suite
            .cases()
            .map(|(_, c)| (c.request.to_string(), crate::service::handle(&c.request)))
            .collect();
        let mut recording = PureOps(move |request: &Value, _| {
            recorded
                .get(&request.to_string())
                .cloned()
                .unwrap_or_else(|| json!({"ok": true}))
        });
        let report = crate::conformance::run(
            &mut recording,
            &crate::conformance::RunOptions {
                generate: 0,
                ..Default::default()
            },
        )
        .expect("the suite runs");
        assert_eq!(
            report.failed(),
            0,
            "the recording passes every published case"
        );
        let failures = failed(&mut recording, 30);
        assert_eq!(failures.len(), 30, "{failures:?}");
    }

    /// Each property can fail: a planner that answers the declared order, and a validator
    /// that never names a dotted id.
    #[test]
    fn a_wrong_planner_or_validator_fails_its_property() {
        let mut declared = PureOps(|request: &Value, answer: Value| {
            if request["op"] != "plan" {
                return answer;
            }
            let ids: Vec<Value> = request["workflow"]["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["id"].clone())
                .collect();
            json!({"ok": ids})
        });
        assert!(failed(&mut declared, 60).contains(&"plan"));
        let mut lax = PureOps(|request: &Value, answer: Value| {
            let dotted = request["workflow"]["steps"].as_array().is_some_and(|s| {
                s.iter()
                    .any(|s| s["id"].as_str().is_some_and(|id| id.contains('.')))
            });
            if request["op"] == "validate" && dotted {
                json!({"ok": true})
            } else {
                answer
            }
        });
        let failures = failed(&mut lax, 60);
        assert!(
            !failures.is_empty() && failures.iter().all(|p| *p == "validate"),
            "{failures:?}"
        );
    }

    /// A dialect that negates a boolean result fails `logic`; a resolver that appends
    /// to a string fails `resolve` (D-383).
    #[test]
    fn a_wrong_evaluator_or_resolver_fails_its_property() {
        let mut negating = PureOps(|request: &Value, answer: Value| match answer.get("ok") {
            Some(Value::Bool(b)) if request["op"] == "logic" => json!({"ok": !b}),
            _ => answer,
        });
        let failures = failed(&mut negating, 40);
        assert!(
            !failures.is_empty() && failures.iter().all(|p| *p == "logic"),
            "{failures:?}"
        );
        let mut appending = PureOps(|request: &Value, mut answer: Value| {
            if request["op"] == "resolve"
                && let Some(Value::Object(with)) = answer.get_mut("ok")
            {
                for v in with.values_mut() {
                    if let Value::String(s) = v {
                        s.push('!');
                    }
                }
            }
            answer
        });
        let failures = failed(&mut appending, 40);
        assert!(
            !failures.is_empty() && failures.iter().all(|p| *p == "resolve"),
            "{failures:?}"
        );
        // A parser that drops text parts fails `parse`; a serializer that trims, `serialize`.
        let mut textless = PureOps(|request: &Value, mut answer: Value| {
            if request["op"] == "parse"
                && let Some(Value::Array(parts)) = answer.get_mut("ok")
            {
                parts.retain(|p| p["kind"] != "text");
            }
            answer
        });
        let failures = failed(&mut textless, 40);
        assert!(
            !failures.is_empty() && failures.iter().all(|p| *p == "parse"),
            "{failures:?}"
        );
        let mut trimming = PureOps(|request: &Value, answer: Value| match answer.get("ok") {
            Some(Value::String(s)) if request["op"] == "serialize" => json!({"ok": s.trim()}),
            _ => answer,
        });
        let failures = failed(&mut trimming, 60);
        assert!(
            !failures.is_empty() && failures.iter().all(|p| *p == "serialize"),
            "{failures:?}"
        );
    }

    /// The host seam answers `plan` with our engine (D-208): not the host's to be judged
    /// on; the reference in process is judged on both.
    #[test]
    fn a_seam_is_judged_only_on_the_ops_that_reach_its_candidate() {
        let host = EngineOnHost::new(SimulatedHost);
        let at_host = PureChecks::for_seam(&host, &host.capabilities());
        assert!(
            !at_host.plan && !at_host.logic && !at_host.resolve,
            "{at_host:?}"
        );
        let reference = PureChecks::for_seam(&Reference, &Capabilities::all());
        assert_eq!(
            reference,
            PureChecks {
                plan: true,
                validate: true,
                logic: true,
                resolve: true,
                parse: true,
                serialize: true,
            }
        );
        let none = PureChecks::for_seam(&Reference, &Capabilities::engine_core());
        assert!(!none.any());
        // A seed of a pure-op profile is judged on its graph alone.
        let judge = super::super::super::runner::Judge::of(&PureOps(|_: &Value, a| a), false);
        assert!(matches!(
            judge.seed(&mut PureOps(|_: &Value, a| a), 5),
            SeedOutcome::PureOnly(5, _, None)
        ));
    }
}
