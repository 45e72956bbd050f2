//! Unit tests of the WOML front-end: every MUST with its code, clause and position; the
//! import of ids, retry attributes, context bindings and secret names.

use serde_json::json;

use super::import;
use crate::dialect::{DIALECT_PROBLEMS_MAX, Problem, TOO_MANY_PROBLEMS};

fn doc(steps: &str) -> String {
    format!("<workflow>\n  <steps>\n{steps}\n  </steps>\n</workflow>\n")
}

fn step(attrs: &str) -> String {
    format!("    <step id=\"s\" {attrs}><script>return 1;</script></step>")
}

fn problems(text: &str) -> Vec<Problem> {
    import(text).expect_err("invalid")
}

fn codes(text: &str) -> Vec<(&'static str, Option<&'static str>)> {
    problems(text).iter().map(|p| (p.code, p.clause)).collect()
}

#[test]
fn a_valid_document_imports_as_an_implicit_chain_with_context_bindings() {
    let text = doc(
        "    <step id=\"a\" name=\"A\"><script>return 1;</script></step>\n    <step id=\"b\"><script>return context.steps.a;</script></step>",
    );
    let i = import(&text).expect("valid");
    let steps = i.workflow["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2);
    assert!(
        i.workflow.get("edges").is_none(),
        "WOML-3: document order is the chain"
    );
    assert_eq!(steps[0]["uses"], json!({"app": "woml", "action": "script"}));
    assert_eq!(steps[0]["with"]["context"]["steps"], json!({}));
    assert_eq!(
        steps[1]["with"]["context"]["steps"],
        json!({"a": {"$": "steps.a.output"}}),
        "WOML-12: context.steps holds exactly the earlier outputs"
    );
    assert_eq!(steps[0]["x-woml"]["name"], "A");
    assert_eq!(steps[1]["x-woml"]["line"], 4);
    assert!(
        steps[0].get("retry").is_none(),
        "WOML-5: absent retry is one attempt"
    );
}

#[test]
fn retry_attributes_become_an_exact_policy() {
    let i = import(&doc(&step(
        "retry=\"4\" retry-backoff=\"exponential\" retry-delay=\"250ms\" retry-max-delay=\"2s\"",
    )))
    .expect("valid");
    assert_eq!(
        i.workflow["steps"][0]["retry"],
        json!({"maxAttempts": 4, "backoff": "exponential", "delayMs": 250,
               "x-w6w-retryOn": ["script_threw"], "x-w6w-maxDelayMs": 2000})
    );
    let fixed = import(&doc(&step("retry=\"3\""))).expect("valid");
    assert_eq!(
        fixed.workflow["steps"][0]["retry"],
        json!({"maxAttempts": 3, "backoff": "fixed", "delayMs": 1000,
               "x-w6w-retryOn": ["script_threw"]}),
        "WOML-7: retry-delay defaults to 1s"
    );
    assert_eq!(i.steps[0].max_attempts, 4);
}

// long: one table of (document, code, clause) rows, a row per MUST of WOML; split, the
// rows would no longer be read as one list against the spec.
#[test]
fn every_must_has_its_code_clause_and_position() {
    let cases: Vec<(String, &str, &str)> = vec![
        ("<workflow/>".into(), "missing_steps", "WOML-1"),
        (doc(""), "empty_steps", "WOML-1"),
        (
            "<workflow><steps x=\"1\"><step id=\"a\"><script>1</script></step></steps></workflow>"
                .into(),
            "unknown_attribute",
            "WOML-1",
        ),
        (doc("    <loop/>"), "invalid_flow_item", "WOML-2"),
        (doc("    <choose/>"), "unsupported_construct", "WOML-2"),
        (
            doc("    <step><script>1</script></step>"),
            "missing_id",
            "WOML-4",
        ),
        (doc(&step("retry=\"11\"")), "invalid_retry", "WOML-5"),
        (doc(&step("retry=\"0\"")), "invalid_retry", "WOML-5"),
        (doc(&step("retry=\"2.5\"")), "invalid_retry", "WOML-5"),
        (
            doc(&step("retry=\"3\" retry-backoff=\"linear\"")),
            "invalid_backoff",
            "WOML-6",
        ),
        (
            doc(&step("retry-backoff=\"fixed\"")),
            "backoff_requires_retry",
            "WOML-6",
        ),
        (
            doc(&step("retry=\"1\" retry-backoff=\"fixed\"")),
            "backoff_requires_retry",
            "WOML-6",
        ),
        (
            doc(&step("retry=\"2\" retry-delay=\"0ms\"")),
            "invalid_duration",
            "WOML-7",
        ),
        (
            doc(&step("retry=\"2\" retry-delay=\"25h\"")),
            "invalid_duration",
            "WOML-7",
        ),
        (
            doc(&step("retry=\"2\" retry-delay=\"1.5s\"")),
            "invalid_duration",
            "WOML-7",
        ),
        (
            doc(&step(
                "retry=\"2\" retry-backoff=\"exponential\" retry-max-delay=\"2d\"",
            )),
            "invalid_duration",
            "WOML-8",
        ),
        (
            doc(&step(
                "retry=\"2\" retry-backoff=\"fixed\" retry-max-delay=\"2s\"",
            )),
            "max_delay_requires_exponential",
            "WOML-8",
        ),
        (
            doc(&step("retry=\"2\" retry-max-delay=\"2s\"")),
            "max_delay_requires_exponential",
            "WOML-8",
        ),
        (doc("    <step id=\"s\"></step>"), "script_count", "WOML-9"),
        (
            doc("    <step id=\"s\"><script>1</script><script>2</script></step>"),
            "script_count",
            "WOML-9",
        ),
        (
            doc("    <step id=\"s\"><script timeout=\"5s\">1</script></step>"),
            "script_attribute",
            "WOML-9",
        ),
        (
            doc("    <step id=\"s\"><script>const k = 'A';\n return secrets[k];</script></step>"),
            "dynamic_secret",
            "WOML-16",
        ),
    ];
    for (text, code, clause) in cases {
        let got = codes(&text);
        assert!(
            got.contains(&(code, Some(clause))),
            "{text}\n expected {code} ({clause}), got {got:?}"
        );
    }
}

#[test]
fn positions_point_at_the_offending_attribute_or_element() {
    let text = doc(
        "    <step id=\"a\"><script>1</script></step>\n    <step id=\"b\" retry=\"99\"><script>1</script></step>\n    <fork/>",
    );
    let ps = problems(&text);
    let retry = ps
        .iter()
        .find(|p| p.code == "invalid_retry")
        .expect("retry");
    assert_eq!((retry.line, retry.column), (4, 18));
    assert_eq!(retry.path, "/workflow/steps/step[2]/@retry");
    let fork = ps
        .iter()
        .find(|p| p.code == "unsupported_construct")
        .expect("fork");
    assert_eq!((fork.line, fork.column), (5, 5));
    assert!(fork.message.contains("<fork>") && fork.message.contains("line 5"));
    let secret = problems(&doc(
        "    <step id=\"s\"><script>\n  let x = 1;\n  return secrets[x];</script></step>",
    ));
    assert_eq!((secret[0].line, secret[0].column), (5, 10));
}

#[test]
fn literal_secrets_are_stored_by_name() {
    let i = import(&doc(
        "    <step id=\"s\"><script>return fetch(u, {h: secrets.API_TOKEN});</script></step>",
    ))
    .expect("valid");
    assert_eq!(
        i.workflow["steps"][0]["x-woml"]["secrets"],
        json!(["API_TOKEN"])
    );
}

#[test]
fn duplicate_and_dotted_ids_are_refused() {
    let dup = doc(
        "    <step id=\"a\"><script>1</script></step>\n    <step id=\"a\"><script>1</script></step>",
    );
    assert!(codes(&dup).contains(&("duplicate_id", Some("WOML-4"))));
    assert!(
        codes(&doc("    <step id=\"a.b\"><script>1</script></step>"))
            .contains(&("invalid_id", Some("WOML-4")))
    );
}

#[test]
fn malformed_xml_and_the_wrong_root_get_clear_errors() {
    let p = problems("<workflow>\n  <steps>\n</workflow>");
    assert_eq!(p[0].code, "syntax_error");
    assert_eq!(p[0].line, 3);
    let dup_attr = problems(
        "<workflow><steps><step id=\"a\" id=\"b\"><script>1</script></step></steps></workflow>",
    );
    assert_eq!(dup_attr[0].code, "syntax_error");
    assert_eq!(problems("<steps/>")[0].code, "invalid_root");
    let dtd = problems("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><workflow/>");
    assert_eq!(dtd[0].code, "syntax_error");
    let deep = format!(
        "<workflow>{}{}</workflow>",
        "<a>".repeat(50_000),
        "</a>".repeat(50_000)
    );
    assert!(!problems(&deep).is_empty());
}

#[test]
fn a_long_retry_delay_is_noted_against_the_five_minute_ceiling() {
    let i = import(&doc(&step("retry=\"2\" retry-delay=\"1h\""))).expect("valid");
    assert_eq!(i.workflow["steps"][0]["retry"]["delayMs"], 3_600_000);
    assert!(
        i.notes.iter().any(|n| n.message.contains("300000")),
        "{:?}",
        i.notes
    );
}

/// A chain of `n` steps with ids `s0…`, one per line or all on one line.
fn chain(n: usize, id: impl Fn(usize) -> String, sep: &str) -> String {
    let steps: String = (0..n)
        .map(|i| {
            format!(
                "<step id=\"{}\"><script>return {i};</script></step>{sep}",
                id(i)
            )
        })
        .collect();
    format!("<workflow><steps>{sep}{steps}</steps></workflow>\n")
}

/// D-218: every duplicate id is found with a hash probe and every position in bounded work,
/// so 10× the steps (each a duplicate) is at most ~10× the work — on many lines or one.
#[test]
fn duplicate_ids_and_positions_cost_linear_work() {
    for sep in ["\n", ""] {
        let work = |n: usize| {
            let text = chain(n, |_| "s".into(), sep);
            let (result, units) = crate::dialect::work::of(|| import(&text));
            let problems = result.expect_err("duplicates");
            // Every duplicate is checked; the first DIALECT_PROBLEMS_MAX are reported (D-221).
            let (last, reported) = problems.split_last().expect("problems");
            assert_eq!(reported.len(), DIALECT_PROBLEMS_MAX);
            assert!(reported.iter().all(|p| p.code == "duplicate_id"));
            assert_eq!(last.code, TOO_MANY_PROBLEMS);
            units
        };
        let (small, big) = (work(1_000), work(10_000));
        assert!(big <= 20 * small, "{sep:?}: {small} → {big} units");
    }
}

/// D-220: the context bindings are charged before they are built. Under the budget a chain
/// imports with every earlier step in each context, its bindings within the budget; 10× the
/// steps past it is refused at the step that passes it, in work linear in the document.
#[test]
fn the_context_bindings_are_bounded_and_a_chain_past_them_is_refused_in_linear_work() {
    use crate::limits::WOML_CONTEXT_BYTES_MAX;
    let id = |i: usize| format!("s{i}");
    let bindings = |text: &str| -> usize {
        let i = import(text).expect("under the budget");
        let steps = i.workflow["steps"].as_array().expect("steps").clone();
        let last = &steps[steps.len() - 1]["with"]["context"]["steps"];
        assert_eq!(last.as_object().map(|m| m.len()), Some(steps.len() - 1));
        assert_eq!(last["s0"], json!({"$": "steps.s0.output"}));
        steps
            .iter()
            .map(|s| s["with"]["context"]["steps"].to_string().len())
            .sum()
    };
    assert!(bindings(&chain(400, id, "\n")) <= WOML_CONTEXT_BYTES_MAX);
    let counted = |n: usize| crate::dialect::work::of(|| import(&chain(n, id, "\n")));
    let (under, under_units) = counted(450);
    assert!(under.is_ok());
    let (past, past_units) = counted(4_500);
    let problems = past.expect_err("past the budget");
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!((p.code, p.clause), ("limit_exceeded", Some("SEC-2")));
    assert!(p.path.starts_with("/workflow/steps/step["), "{}", p.path);
    let step: usize = p.path["/workflow/steps/step[".len()..]
        .trim_end_matches(']')
        .parse()
        .expect("an ordinal");
    assert!((450..600).contains(&step), "refused at step {step}");
    assert_eq!(p.line, step + 1, "one step per line after the first");
    assert!(
        past_units <= 20 * under_units,
        "{under_units} → {past_units} units"
    );
    // Long ids reach the budget with fewer steps: 60 steps of 6,000-byte ids.
    let long = chain(60, |i| format!("{}{i}", "x".repeat(6_000)), "\n");
    assert_eq!(problems_of(&long), vec!["limit_exceeded"]);
}

fn problems_of(text: &str) -> Vec<&'static str> {
    problems(text).iter().map(|p| p.code).collect()
}

/// D-219: the pre-scan refuses what would make roxmltree quadratic or cubic, at the
/// attribute that passes the limit, before anything is parsed.
#[test]
fn too_many_attributes_or_namespaces_are_refused_before_parsing() {
    use crate::limits::{WOML_ATTRIBUTES_MAX, WOML_NAMESPACES_MAX};
    let attrs: String = (0..=WOML_ATTRIBUTES_MAX)
        .map(|i| format!(" a{i}=\"v\""))
        .collect();
    let text = doc(&format!(
        "    <step id=\"s\"{attrs}><script>x</script></step>"
    ));
    let p = &problems(&text)[0];
    assert_eq!(
        (p.code, p.clause, p.line),
        ("limit_exceeded", Some("SEC-2"), 3)
    );
    let nested: String = (0..=WOML_NAMESPACES_MAX)
        .map(|i| format!("<e xmlns:p{i}=\"u\">"))
        .collect();
    let text = format!("<workflow>\n{nested}");
    let p = &problems(&text)[0];
    assert_eq!((p.code, p.line), ("limit_exceeded", 2));
    // Up to the limits the document is roxmltree's to judge, as before.
    let ns: String = (0..WOML_NAMESPACES_MAX)
        .map(|i| format!(" xmlns:p{i}=\"u{i}\""))
        .collect();
    let text =
        format!("<workflow{ns}><steps><step id=\"a\"><script>x</script></step></steps></workflow>");
    assert!(import(&text).is_ok());
}
