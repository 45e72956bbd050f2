//! Properties of the dialect front-ends (issue 10).
//!
//! - No input — arbitrary bytes, or token soup shaped like each dialect — makes a front-end
//!   panic: every document is imported or refused with positioned problems (SEC-2).
//! - Item 6: a generated sequential workflow that WOML can express, rendered as WOML,
//!   imported and run, ends in the same RunState as the w6w workflow written directly
//!   (up to the recorded `input`, which carries the WOML `context` binding), with the same
//!   waits and invocation counts — with crashes injected after a checkpoint and inside an
//!   invocation.
//!
//! Case count from PROPTEST_CASES (default 64).

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::__internals::dialect::{self, Dialect, script_failure_kinds};
use w6w_sim::sim::{self, SimOptions};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn soup(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(tokens), 0..60).prop_map(|t| t.concat())
}

const XML_TOKENS: &[&str] = &[
    "<workflow>",
    "</workflow>",
    "<steps>",
    "</steps>",
    "<step id=\"a\">",
    "<step",
    " id=\"b\"",
    " retry=\"3\"",
    " retry-backoff=\"exponential\"",
    " retry-delay=\"5s\"",
    ">",
    "</step>",
    "<script>",
    "</script>",
    "return secrets[x];",
    "secrets.A",
    "<![CDATA[",
    "]]>",
    "<choose/>",
    "<config>",
    "</config>",
    "&amp;",
    "&bogus;",
    "\n",
    " ",
    "<",
    "\"",
    "'",
    "=",
    "é",
    "<!--",
    "-->",
];
const YAML_TOKENS: &[&str] = &[
    "steps:",
    "\n",
    "  ",
    "- ",
    "a:",
    "b:",
    "x.y:",
    "run:",
    "when:",
    " true",
    " '{{ a.b }}'",
    "optional: true",
    "must_succeed: true",
    "timeout: 5s",
    "retry: 3",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a ",
    "*a",
    "---",
    "? ",
    ": ",
    "\"",
    "'",
    "#",
    "wait: 1s",
    "é",
    "\t",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for d in [Dialect::Woml, Dialect::Yaml] {
            if let Err(problems) = dialect::import(d, &bytes, None) {
                prop_assert!(!problems.is_empty());
                for p in problems {
                    prop_assert!(p.line >= 1 && p.column >= 1, "{p:?}");
                }
            }
        }
    }

    #[test]
    fn dialect_shaped_soup_never_panics(xml in soup(XML_TOKENS), yaml in soup(YAML_TOKENS)) {
        for (d, text) in [(Dialect::Woml, xml), (Dialect::Yaml, yaml)] {
            match dialect::import(d, text.as_bytes(), None) {
                // Whatever imports is a runnable w6w workflow.
                Ok(i) => prop_assert!(sim::load_workflow(&i.workflow).is_ok()),
                Err(problems) => prop_assert!(problems.iter().all(|p| p.line >= 1)),
            }
        }
    }
}

/// One generated WOML step.
#[derive(Debug, Clone)]
struct GenStep {
    attempts: u64,
    backoff: Option<&'static str>,
    delay: Option<(u64, &'static str)>,
    max_delay: Option<(u64, &'static str)>,
    /// `Ok(n)` → output `{"n": n}`; `Err(code)` → a WOML failure.
    outcomes: Vec<Result<u64, &'static str>>,
}

fn unit_ms(unit: &str) -> u64 {
    match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        _ => 3_600_000,
    }
}

fn duration() -> impl Strategy<Value = (u64, &'static str)> {
    prop_oneof![
        (1u64..5000, Just("ms")),
        (1u64..400, Just("s")),
        (1u64..10, Just("m")),
        (1u64..3, Just("h")),
    ]
}

fn gen_step() -> impl Strategy<Value = GenStep> {
    let outcome = prop_oneof![
        (0u64..100).prop_map(Ok),
        prop::sample::select(script_failure_kinds()).prop_map(Err),
        Just(Err("script_threw")),
    ];
    (
        1u64..6,
        prop::option::of(prop::sample::select(&["fixed", "exponential"][..])),
        prop::option::of(duration()),
        prop::option::of(duration()),
        prop::collection::vec(outcome, 1..6),
    )
        .prop_map(|(attempts, backoff, delay, max_delay, outcomes)| {
            let backoff = backoff.filter(|_| attempts > 1);
            let max_delay = max_delay.filter(|_| backoff == Some("exponential"));
            GenStep {
                attempts,
                backoff,
                delay,
                max_delay,
                outcomes,
            }
        })
}

fn render_woml(steps: &[GenStep]) -> String {
    let mut s = String::from("<workflow id=\"wf\" name=\"wf\">\n  <steps>\n");
    for (i, st) in steps.iter().enumerate() {
        s.push_str(&format!("    <step id=\"s{i}\""));
        if st.attempts > 1 || st.backoff.is_some() {
            s.push_str(&format!(" retry=\"{}\"", st.attempts));
        }
        if let Some(b) = st.backoff {
            s.push_str(&format!(" retry-backoff=\"{b}\""));
        }
        if let Some((n, u)) = st.delay {
            s.push_str(&format!(" retry-delay=\"{n}{u}\""));
        }
        if let Some((n, u)) = st.max_delay {
            s.push_str(&format!(" retry-max-delay=\"{n}{u}\""));
        }
        s.push_str("><script>return await step();</script></step>\n");
    }
    s.push_str("  </steps>\n</workflow>\n");
    s
}

/// The same workflow written directly in w6w: retry classification comes from the
/// scenario's errors (execute phase, `retryable` only for `script_threw`), the cap is the
/// RetryPolicy extension `x-w6w-maxDelayMs`.
fn w6w_workflow(steps: &[GenStep]) -> Value {
    let steps: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let mut s = json!({"id": format!("s{i}"), "uses": {"app": "app", "action": "act"}});
            if st.attempts > 1 || st.backoff.is_some() {
                let mut p = json!({
                    "maxAttempts": st.attempts,
                    "backoff": st.backoff.unwrap_or("fixed"),
                    "delayMs": st.delay.map_or(1000, |(n, u)| n * unit_ms(u)),
                });
                if let Some((n, u)) = st.max_delay {
                    p["x-w6w-maxDelayMs"] = json!(n * unit_ms(u));
                }
                s["retry"] = p;
            }
            s
        })
        .collect();
    json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": steps})
}

fn scenario(steps: &[GenStep], classify: bool, faults: &Value) -> Value {
    let mut actions = serde_json::Map::new();
    for (i, st) in steps.iter().enumerate() {
        let outcomes: Vec<Value> = st
            .outcomes
            .iter()
            .map(|o| match o {
                Ok(n) => json!({"output": {"n": n}}),
                Err(code) if classify => json!({"error": {"code": code, "message": "m",
                    "phase": "execute", "retryable": *code == "script_threw"}}),
                Err(code) => json!({"error": {"code": code, "message": "m"}}),
            })
            .collect();
        actions.insert(format!("s{i}"), json!({"outcomes": outcomes}));
    }
    json!({"trigger": {"type": "manual", "event": {"k": 1}}, "actions": actions, "faults": faults})
}

/// The RunState without each step's recorded `input`.
fn comparable(report: &Value) -> Value {
    let mut run = report["run"].clone();
    if let Some(steps) = run.get_mut("steps").and_then(Value::as_object_mut) {
        for rec in steps.values_mut() {
            if let Some(r) = rec.as_object_mut() {
                r.remove("input");
            }
        }
    }
    json!({
        "run": run,
        "waits": report["waits"],
        "crashes": report["crashes"],
        "clockMs": report["clockMs"],
        "invocations": report["invocations"].as_array().map(|a| {
            a.iter().map(|i| json!([i["stepId"], i["attempt"], i["atMs"]])).collect::<Vec<_>>()
        }),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn woml_imported_and_run_equals_the_w6w_run(
        steps in prop::collection::vec(gen_step(), 1..5),
        crash_after in prop::option::of(1u64..24),
        crash_in in prop::option::of((0usize..5, 1u32..4)),
    ) {
        let mut faults = json!({});
        if let Some(k) = crash_after {
            faults["crashAfterCheckpoint"] = json!([k]);
        }
        if let Some((s, attempt)) = crash_in {
            // An attempt the step makes (a fault that can never fire is refused, D-121).
            let i = s % steps.len();
            let attempt = 1 + u64::from(attempt - 1) % steps[i].attempts;
            faults["crashInInvoke"] = json!([{"step": format!("s{i}"), "attempt": attempt}]);
        }
        let woml = render_woml(&steps);
        let imported = dialect::import(Dialect::Woml, woml.as_bytes(), None)
            .map_err(|p| TestCaseError::fail(format!("{woml}\n{p:?}")))?;
        let via_woml = dialect::run(&imported, &scenario(&steps, false, &faults), &SimOptions::default(), None, None)
            .map_err(|e| TestCaseError::fail(format!("{}", e.to_json())))?;
        let workflow = sim::load_workflow(&w6w_workflow(&steps))
            .map_err(|e| TestCaseError::fail(format!("{}", e.to_json())))?;
        let sc = sim::load_scenario(&scenario(&steps, true, &faults))
            .map_err(|e| TestCaseError::fail(format!("{}", e.to_json())))?;
        let direct = sim::Simulation::new(&workflow, &sc).run()
            .map_err(|e| TestCaseError::fail(format!("{}", e.to_json())))?
            .to_json();
        prop_assert_eq!(comparable(&via_woml), comparable(&direct), "{}", woml);
        // WOML-13: the public result is the last step's output exactly when the run succeeded.
        let succeeded = direct["run"]["status"] == "succeeded";
        let last = format!("s{}", steps.len() - 1);
        let expected = if succeeded { direct["run"]["steps"][&last]["output"].clone() } else { Value::Null };
        prop_assert_eq!(&via_woml["result"], &expected);
        // WOML-15: one idempotency key per step across attempts and crash-resume.
        for inv in via_woml["invocations"].as_array().into_iter().flatten() {
            let id = inv["stepId"].as_str().unwrap_or_default();
            prop_assert_eq!(&inv["bindings"]["attempt"]["idempotencyKey"], &json!(format!("run_1:{id}")));
            prop_assert_eq!(&inv["bindings"]["attempt"]["number"], &inv["attempt"]);
        }
    }
}
