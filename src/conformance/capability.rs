//! Capability profiles: what a candidate supports, and what each case needs.
//!
//! Owns: the capability names ([`CAPABILITIES`], the one place they are defined),
//! [`Capabilities`] (a candidate's profile, serde as a JSON array of names) and
//! [`required`] (a case's needs, derived from its content plus its explicit `requires`).
//! A case whose needs a profile lacks is *not applicable* to that candidate: reported in
//! a third column, never counted as passed.
//!
//! Derivation works on any case file, including ones added later: the request's `op`
//! (`op.<name>`), every workflow in the request (controls, `fanOut: "parallel"`,
//! `@w6w/call`, `@w6w/document`, run-level `reroute`, `x-w6w-dialect`), the scenario
//! (documents, call targets, meta reports, cancellation) and the expectations: an
//! assertion on an error `code` the spec does not define, or on message text, that does
//! not merely echo something the request itself contains, needs `reference-vocabulary`.

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::Case;

/// Every capability name with its meaning. `op.<name>` names exist for every op a case
/// can send (the list below names today's; a case with a new op needs `op.<that op>`).
pub const CAPABILITIES: &[(&str, &str)] = &[
    (
        "op.validate",
        "the `validate` op: save-time validation (MODEL-*, PLAN-*)",
    ),
    ("op.plan", "the `plan` op: the execution order (PLAN-*)"),
    (
        "op.saves",
        "the `saves` op: store-side save rules (MODEL-5, MODEL-6)",
    ),
    ("op.logic", "the `logic` op: @w6w/expr evaluation"),
    (
        "op.resolve",
        "the `resolve` op: resolving a with block against a scope",
    ),
    ("op.parse", "the `parse` op: template text to parts"),
    ("op.serialize", "the `serialize` op: template parts to text"),
    (
        "op.run",
        "the `run` op: running a workflow on the suite's host",
    ),
    (
        "op.replay",
        "the `replay` op: replaying a finished run (REPLAY-*)",
    ),
    (
        "schedule",
        "WorkflowContext.schedule: `wait` steps suspend and resume (CTRL-7)",
    ),
    (
        "strands",
        "`fanOut: \"parallel\"`: concurrent strands, the RFC's queue member (FAN-*)",
    ),
    ("control.if", "the canonical `@w6w/control` `if` (CTRL-2)"),
    (
        "control.foreach",
        "the canonical `@w6w/control` `foreach` (CTRL-4, CTRL-5)",
    ),
    (
        "control.parallel",
        "the canonical `@w6w/control` `parallel` (CTRL-6)",
    ),
    (
        "control.wait",
        "the canonical `@w6w/control` `wait` (CTRL-7)",
    ),
    (
        "control.aggregate",
        "the canonical `@w6w/control` `aggregate` (CTRL-8)",
    ),
    (
        "control.merge",
        "the canonical `@w6w/control` `merge` (CTRL-8)",
    ),
    (
        "call",
        "composition: `@w6w/call` steps and the run-level `reroute` (CALL-*, RUNERR-7)",
    ),
    (
        "documents",
        "`@w6w/document` steps and the scenario's `documents` (CALL-4, ENV-8)",
    ),
    (
        "dialect.extended",
        "the `\"x-w6w-dialect\": \"extended\"` JSONLogic opt-in",
    ),
    (
        "meta",
        "step execution metadata through onExecuted, optional in the RFC (META-*)",
    ),
    (
        "signal",
        "cooperative cancellation through the abort signal (RUN-7)",
    ),
    (
        "templates",
        "root-anchored `{{ }}` template strings in `with` values (amendment 2026-08-14, TPL-*)",
    ),
    (
        "chains",
        "`||` / `??` fallback chains inside a `{{ }}` marker (CHAIN-*)",
    ),
    (
        "envelope",
        "the multipart ExprValue envelope `{type: \"expr\", parts}` (amendment 2026-08-11, ENV-*)",
    ),
    (
        "workflow.retry",
        "the run-level `Workflow.retry` ladder (amendment 2026-08-21, RUNERR-*)",
    ),
    (
        "workflow.onError",
        "the run-level `Workflow.onError` handler (amendment 2026-08-21, RUNERR-*)",
    ),
    (
        "ext.retryOn",
        "this project's `x-w6w-retryOn` RetryPolicy extension: retry only listed codes (D-32, WOML-11)",
    ),
    (
        "ext.maxDelayMs",
        "this project's `x-w6w-maxDelayMs` RetryPolicy extension: cap each wait (D-32, WOML-10)",
    ),
    (
        "ext.sensitiveOutput",
        "this project's catalog flag `sensitiveOutput` (scenario action; context protocol `host.sensitiveSteps`): the action's whole output is secret-derived (D-275)",
    ),
    (
        "reference-vocabulary",
        "error codes and message text of this reference that the spec does not define",
    ),
];

/// Coarse names (the context protocol's `ready` message, docs/context-protocol.md) and the
/// capabilities each stands for.
pub(crate) const ALIASES: &[(&str, &[&str])] = &[
    (
        "ops",
        &[
            "op.validate",
            "op.plan",
            "op.saves",
            "op.logic",
            "op.resolve",
            "op.parse",
            "op.serialize",
        ],
    ),
    (
        "controls",
        &[
            "control.if",
            "control.foreach",
            "control.parallel",
            "control.wait",
            "control.aggregate",
            "control.merge",
        ],
    ),
    ("extended-dialect", &["dialect.extended"]),
];

fn expand(name: &str) -> Vec<&str> {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or_else(|| vec![name], |(_, names)| names.to_vec())
}

/// The error codes the spec itself names (workflow-rfc.txt, companion-notes.md,
/// expr-notes.md). Asserting any other code is reference vocabulary, unless the code is
/// in the request (a scripted action error the engine must carry through).
pub(crate) const SPEC_CODES: &[&str] = &[
    "call_depth_exceeded",
    "connection_broken",
    "connection_pending",
    "connection_revoked",
    "file_expired",
    "invalid_trigger",
    "invalid_variables",
    "needs_refresh",
    "network_error",
    "param_invalid",
    "plan_error",
    "render_ref_not_a_string",
    "render_ref_unresolved",
    "script_threw",
    "unknown_action",
    "unknown_app",
    "unknown_connection",
    "unknown_control",
    "unknown_file",
    "unsupported_strategy",
    "unsupported_wait",
];

/// The name of the capability for assertions on the reference's own codes and messages.
pub(crate) const REFERENCE_VOCABULARY: &str = "reference-vocabulary";

/// The name a case's `missing` carries when the host seam does not judge it (never a
/// capability a candidate declares): see [`SEAM_HOST_MEANS`].
pub(crate) const SEAM_HOST: &str = "seam.host";

/// What [`SEAM_HOST`] means, as the report says it.
pub(crate) const SEAM_HOST_MEANS: &str = "the host seam judges only runs and replays that reach a \
report, and `validate` when the host brings its own validator; pure ops and refusals are \
answered by the suite's own engine and never touch the host";

/// The name a case's `missing` carries when the engine seam does not judge it: see
/// [`SEAM_ENGINE_MEANS`] (D-379).
pub(crate) const SEAM_ENGINE: &str = "seam.engine";

/// What [`SEAM_ENGINE`] means, as the report says it.
pub(crate) const SEAM_ENGINE_MEANS: &str = "the engine seam judges what reaches the engine; \
a run or replay the suite refuses before the engine starts (its scenario, an unreachable \
fault, a dialect document the import refuses, a missing workflow or run, and at the Rust seam \
an invalid workflow, which the suite validates before booting the engine) is the suite's own \
answer";

/// Whether a `missing` entry names a seam that does not judge the case, not a capability.
pub(crate) fn is_seam(name: &str) -> bool {
    name.starts_with("seam.")
}

/// What the seam `name` does not judge, as the report says it.
pub(crate) fn seam_means(name: &str) -> &'static str {
    if name == SEAM_ENGINE {
        SEAM_ENGINE_MEANS
    } else {
        SEAM_HOST_MEANS
    }
}

/// The failure text of a case that was not run.
pub(crate) fn not_applicable_because(missing: &[String]) -> String {
    if let Some(seam) = missing.iter().find(|m| is_seam(m)) {
        format!("not judged at this seam: {}", seam_means(seam))
    } else {
        format!("not applicable: needs {}", missing.join(", "))
    }
}

/// Whether a case's expectations are about a refusal (an `error` answer) rather than a
/// report.
pub(crate) fn expects_refusal(case: &Case) -> bool {
    case.expect.contains_key("error")
        || ["match", "includes", "contains"].iter().any(|k| {
            case.expect
                .get(*k)
                .and_then(Value::as_object)
                .is_some_and(|m| m.keys().any(|p| p.starts_with("/error")))
        })
}

/// Whether `name` is a capability name (`op.<anything>` included).
pub(crate) fn is_capability(name: &str) -> bool {
    CAPABILITIES.iter().any(|(n, _)| *n == name)
        || ALIASES.iter().any(|(n, _)| *n == name)
        || name.strip_prefix("op.").is_some_and(|op| {
            !op.is_empty()
                && op
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// A name that is not a capability.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a capability (known: op.<op>, {known})", known = CAPABILITIES.iter().map(|(n, _)| *n).filter(|n| !n.starts_with("op.")).collect::<Vec<_>>().join(", "))]
pub struct UnknownCapability(pub String);

/// A candidate's profile: everything (`"*"`), or a set of names; `"-name"` after `"*"`
/// removes one. Serialized as a JSON array of strings, e.g. `["*", "-reference-vocabulary"]`
/// or `["op.run", "op.replay", "strands"]` — the form an engine's hello carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    all: bool,
    /// With `all`: the exclusions; otherwise the members.
    names: BTreeSet<String>,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities::all()
    }
}

impl Capabilities {
    /// Everything (the reference's profile, and any candidate that declares none).
    pub fn all() -> Self {
        Capabilities {
            all: true,
            names: BTreeSet::new(),
        }
    }

    /// Nothing.
    pub fn none() -> Self {
        Capabilities {
            all: false,
            names: BTreeSet::new(),
        }
    }

    /// The sequential core of an engine: `run` and `replay` of plain app-step workflows.
    pub fn engine_core() -> Self {
        Capabilities {
            all: false,
            names: ["op.run", "op.replay"].map(String::from).into(),
        }
    }

    /// Parse a list of names: `"*"` (all), `"-name"` (all but), or names.
    pub fn from_names<S: AsRef<str>>(
        names: impl IntoIterator<Item = S>,
    ) -> Result<Self, UnknownCapability> {
        let mut out = Capabilities::none();
        for name in names {
            let name = name.as_ref().trim();
            if name == "*" {
                out.all = true;
                out.names.clear();
            } else if let Some(minus) = name.strip_prefix('-') {
                if !is_capability(minus) {
                    return Err(UnknownCapability(minus.to_owned()));
                }
                for n in expand(minus) {
                    out = out.without(n);
                }
            } else if !name.is_empty() {
                if !is_capability(name) {
                    return Err(UnknownCapability(name.to_owned()));
                }
                for n in expand(name) {
                    out = out.with(n);
                }
            }
        }
        Ok(out)
    }

    /// This profile plus `name`.
    pub fn with(mut self, name: &str) -> Self {
        if self.all {
            self.names.remove(name);
        } else {
            self.names.insert(name.to_owned());
        }
        self
    }

    /// This profile less `name`.
    pub fn without(mut self, name: &str) -> Self {
        if self.all {
            self.names.insert(name.to_owned());
        } else {
            self.names.remove(name);
        }
        self
    }

    pub fn supports(&self, name: &str) -> bool {
        self.all != self.names.contains(name)
    }

    /// Whether this is the full profile.
    pub fn is_all(&self) -> bool {
        self.all && self.names.is_empty()
    }

    /// The needs this profile lacks, in name order.
    pub fn missing(&self, required: &BTreeSet<String>) -> Vec<String> {
        required
            .iter()
            .filter(|r| !self.supports(r))
            .cloned()
            .collect()
    }

    /// The profile as names (`"*"` first when it is everything-but).
    pub fn to_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.all {
            out.push("*".to_owned());
            out.extend(self.names.iter().map(|n| format!("-{n}")));
        } else {
            out.extend(self.names.iter().cloned());
        }
        out
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_names().join(","))
    }
}

impl Serialize for Capabilities {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_names().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Capabilities {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        Capabilities::from_names(&names).map_err(serde::de::Error::custom)
    }
}

/// What `case` needs: its explicit `requires`, plus what its content shows.
pub(crate) fn required(case: &Case) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = case.requires.iter().cloned().collect();
    out.extend(required_by_request(&case.request));
    if asserts_reference_vocabulary(&case.expect, &case.request) {
        out.insert(REFERENCE_VOCABULARY.to_owned());
    }
    out
}

/// What a request needs, from its content alone (also used for generated workflows).
pub(crate) fn required_by_request(request: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let op = request.get("op").and_then(Value::as_str);
    if let Some(op) = op {
        out.insert(format!("op.{op}"));
    }
    for key in ["workflow", "previous"] {
        if let Some(w) = request.get(key) {
            workflow_needs(w, &mut out);
        }
    }
    for save in request
        .get("saves")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(w) = save.get("workflow") {
            workflow_needs(w, &mut out);
        }
    }
    if op == Some("resolve")
        && let Some(with) = request.get("with")
    {
        with_needs(with, &mut out);
    }
    // A dialect document reaches an engine as the w6w workflow it imports to: it needs
    // what that workflow needs (an import that fails needs nothing more).
    if op == Some("run")
        && let Some(plain) = crate::service::dialect::plain_request(request)
    {
        out.extend(required_by_request(&plain));
    }
    if op == Some("logic") && request.get("dialect").and_then(Value::as_str) == Some("extended") {
        out.insert("dialect.extended".into());
    }
    if let Some(scenario) = request.get("scenario").and_then(Value::as_object) {
        scenario_needs(scenario, &mut out);
    }
    out
}

fn workflow_needs(workflow: &Value, out: &mut BTreeSet<String>) {
    let Some(w) = workflow.as_object() else {
        return;
    };
    if w.get("x-w6w-dialect").and_then(Value::as_str) == Some("extended") {
        out.insert("dialect.extended".into());
    }
    if w.get("reroute").is_some_and(|r| !r.is_null()) {
        out.insert("call".into());
    }
    if let Some(policy) = w.get("retry").filter(|r| !r.is_null()) {
        out.insert("workflow.retry".into());
        policy_needs(policy, out);
    }
    if w.get("onError").is_some_and(|r| !r.is_null()) {
        out.insert("workflow.onError".into());
    }
    for step in w
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if step.get("fanOut").and_then(Value::as_str) == Some("parallel") {
            out.insert("strands".into());
        }
        if let Some(policy) = step.get("retry") {
            policy_needs(policy, out);
        }
        if let Some(with) = step.get("with") {
            with_needs(with, out);
        }
        let uses = step.get("uses");
        let app = uses.and_then(|u| u.get("app")).and_then(Value::as_str);
        let action = uses.and_then(|u| u.get("action")).and_then(Value::as_str);
        match (app, action) {
            (Some("@w6w/control"), Some(action)) => {
                out.insert(format!("control.{action}"));
                if action == "wait" {
                    out.insert("schedule".into());
                }
            }
            (Some("@w6w/call"), _) => {
                out.insert("call".into());
            }
            (Some("@w6w/document"), _) => {
                out.insert("documents".into());
            }
            _ => {}
        }
    }
    // `control.<unknown>` is not a capability: an unknown control is a validation case
    // (CTRL-1), which any engine must reject.
    out.retain(|n| !n.starts_with("control.") || is_capability(n));
}

/// The project's RetryPolicy extension keys (D-32) a policy uses.
fn policy_needs(policy: &Value, out: &mut BTreeSet<String>) {
    use crate::model::{EXT_MAX_DELAY_MS, EXT_RETRY_ON};
    for (key, name) in [
        (EXT_RETRY_ON, "ext.retryOn"),
        (EXT_MAX_DELAY_MS, "ext.maxDelayMs"),
    ] {
        if policy.get(key).is_some_and(|v| !v.is_null()) {
            out.insert(name.into());
        }
    }
}

/// What a `with` value needs: a string the root-anchoring rule resolves (`templates`, plus
/// `chains` when a marker is a fallback chain) and the multipart envelope (`envelope`).
/// The rule is the engine's own ([`crate::expr::template::root_anchor`]): a string that
/// stays literal needs nothing, because an engine without templates passes it through.
fn with_needs(with: &Value, out: &mut BTreeSet<String>) {
    use crate::expr::{Part, parse_coalesce_chain, root_anchor};
    match with {
        Value::String(s) => {
            // Past the template size limit the string is refused, not literal: an engine
            // must implement templates to refuse it.
            let parts = match root_anchor(s) {
                Ok(Some(parts)) => parts,
                Ok(None) => return,
                Err(_) => {
                    out.insert("templates".into());
                    return;
                }
            };
            out.insert("templates".into());
            let chain = parts.iter().any(|p| match p {
                Part::Expr { expr, .. } => parse_coalesce_chain(expr).is_some(),
                _ => false,
            });
            if chain {
                out.insert("chains".into());
            }
        }
        Value::Array(items) => items.iter().for_each(|v| with_needs(v, out)),
        Value::Object(m) => {
            // A marker is resolved whole; its strings are paths or JSONLogic, not templates.
            if m.contains_key("$") || m.contains_key("$expr") {
                return;
            }
            if m.get("type").and_then(Value::as_str) == Some("expr") && m.contains_key("parts") {
                out.insert("envelope".into());
                return;
            }
            m.values().for_each(|v| with_needs(v, out));
        }
        _ => {}
    }
}

fn scenario_needs(scenario: &Map<String, Value>, out: &mut BTreeSet<String>) {
    let non_empty = |key: &str| match scenario.get(key) {
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if non_empty("documents") {
        out.insert("documents".into());
    }
    if non_empty("functions") {
        out.insert("call".into());
    }
    if non_empty("workflows") {
        out.insert("call".into());
        for w in scenario
            .get("workflows")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.values())
        {
            workflow_needs(w, out);
        }
    }
    if scenario
        .get("cancelAfterCheckpoint")
        .is_some_and(|v| !v.is_null())
    {
        out.insert("signal".into());
    }
    // D-275: an action whose output the catalog declares sensitive.
    if scenario
        .get("actions")
        .and_then(Value::as_object)
        .is_some_and(|a| {
            a.values()
                .any(|x| x.get("sensitiveOutput") == Some(&Value::Bool(true)))
        })
    {
        out.insert("ext.sensitiveOutput".into());
    }
    let has_meta = scenario
        .get("actions")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
        .any(|a| {
            a.get("meta").is_some_and(|m| !m.is_null())
                || a.get("outcomes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|o| o.get("meta").is_some_and(|m| !m.is_null()))
        });
    if has_meta {
        out.insert("meta".into());
    }
}

/// Whether the expectations assert an error code the spec does not define, or message
/// text, that the request does not itself contain.
pub(crate) fn asserts_reference_vocabulary(expect: &Map<String, Value>, request: &Value) -> bool {
    let mut strings = HashSet::new();
    collect_strings(request, &mut strings);
    let audit = Audit { strings };
    expect.iter().any(|(kind, spec)| match kind.as_str() {
        "response" | "ok" | "error" => audit.value(spec),
        "match" | "includes" => spec.as_object().is_some_and(|m| {
            m.iter().any(|(ptr, want)| match last_token(ptr) {
                "code" => want.as_str().is_some_and(|c| audit.foreign_code(c)),
                "message" => want.as_str().is_some_and(|t| audit.foreign_text(t)),
                _ => audit.value(want),
            })
        }),
        "contains" => spec.as_object().is_some_and(|m| {
            m.iter().any(|(ptr, want)| {
                (last_token(ptr) == "message" || last_token(ptr) == "code")
                    && want.as_str().is_some_and(|t| audit.foreign_text(t))
            })
        }),
        "count" => spec.as_array().is_some_and(|items| {
            items
                .iter()
                .filter_map(|c| c.get("where"))
                .any(|w| audit.value(w))
        }),
        _ => false,
    })
}

fn last_token(ptr: &str) -> &str {
    ptr.rsplit('/').next().unwrap_or_default()
}

fn collect_strings<'a>(v: &'a Value, out: &mut HashSet<&'a str>) {
    match v {
        Value::String(s) => {
            out.insert(s);
        }
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.insert(k);
            collect_strings(x, out);
        }),
        _ => {}
    }
}

struct Audit<'a> {
    strings: HashSet<&'a str>,
}

impl Audit<'_> {
    fn foreign_code(&self, code: &str) -> bool {
        !SPEC_CODES.contains(&code) && !self.strings.contains(code)
    }

    fn foreign_text(&self, text: &str) -> bool {
        !self.strings.iter().any(|s| s.contains(text))
    }

    /// Any `code` / `message` inside an expected value.
    fn value(&self, v: &Value) -> bool {
        match v {
            Value::Object(m) => m.iter().any(|(k, x)| match (k.as_str(), x) {
                ("code", Value::String(c)) => self.foreign_code(c),
                ("message", Value::String(t)) => self.foreign_text(t),
                _ => self.value(x),
            }),
            Value::Array(a) => a.iter().any(|x| self.value(x)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(request: Value, expect: Value) -> Case {
        serde_json::from_value(json!({"id": "c", "clauses": ["RUN-1"], "request": request,
                                      "expect": expect}))
        .expect("case")
    }

    #[test]
    fn needs_come_from_the_content() {
        let c = case(
            json!({"op": "run", "workflow": {"x-w6w-dialect": "extended", "steps": [
                {"id": "w", "uses": {"app": "@w6w/control", "action": "wait"}},
                {"id": "p", "uses": {"app": "a", "action": "b"}, "fanOut": "parallel"},
                {"id": "c", "uses": {"app": "@w6w/call", "action": "call"}},
                {"id": "x", "uses": {"app": "@w6w/control", "action": "nope"}}]},
                "scenario": {"documents": {"k": {}}, "cancelAfterCheckpoint": 2,
                             "actions": {"p": {"meta": [{"app": "a"}]}}}}),
            json!({"ok": true}),
        );
        let got: Vec<String> = required(&c).into_iter().collect();
        assert_eq!(
            got,
            [
                "call",
                "control.wait",
                "dialect.extended",
                "documents",
                "meta",
                "op.run",
                "schedule",
                "signal",
                "strands"
            ]
        );
    }

    #[test]
    fn expression_forms_and_run_policies_are_named() {
        let needs = |request: Value| -> Vec<String> {
            required(&case(request, json!({"ok": true})))
                .into_iter()
                .collect()
        };
        let step = |with: Value| {
            json!({"op": "run", "workflow": {"steps": [
            {"id": "a", "uses": {"app": "a", "action": "b"}, "with": with}]}})
        };
        // A rooted marker resolves; a vendor placeholder stays literal and needs nothing.
        assert_eq!(
            needs(step(json!({"h": ["Bearer {{ vars.t }}"]}))),
            ["op.run", "templates"]
        );
        assert_eq!(needs(step(json!({"h": "{{var:name}}"}))), ["op.run"]);
        assert_eq!(
            needs(step(json!({"h": "{{ vars.a || \"x\" }}"}))),
            ["chains", "op.run", "templates"]
        );
        assert_eq!(
            needs(step(json!({"h": {"type": "expr", "parts": []}}))),
            ["envelope", "op.run"]
        );
        // A marker's path is not a template.
        assert_eq!(needs(step(json!({"h": {"$": "vars.a"}}))), ["op.run"]);
        let run = json!({"op": "run", "workflow": {"retry": {"maxAttempts": 2,
            "x-w6w-maxDelayMs": 5}, "onError": "continue", "steps": [{"id": "a",
            "uses": {"app": "a", "action": "b"}, "retry": {"maxAttempts": 2,
            "x-w6w-retryOn": ["e"]}}]}});
        assert_eq!(
            needs(run),
            [
                "ext.maxDelayMs",
                "ext.retryOn",
                "op.run",
                "workflow.onError",
                "workflow.retry"
            ]
        );
        // A dialect document needs what it imports to: a YAML `when` is an `if` step.
        let yaml = json!({"op": "run", "dialect": "yaml",
            "source": "steps:\n  - a:\n      x.a: {}\n      when: true\n"});
        assert!(needs(yaml).contains(&"control.if".to_owned()));
        let broken = json!({"op": "run", "dialect": "yaml", "source": "steps: 3\n"});
        assert_eq!(needs(broken), ["op.run"]);
    }

    #[test]
    fn vocabulary_is_what_the_spec_does_not_name_and_the_request_does_not_say() {
        let req = json!({"op": "run", "scenario": {"actions": {"a": {"outcomes": [
            {"error": {"code": "rate_limited", "message": "slow down"}}]}}}});
        let echo = json!({"match": {"/ok/run/error/code": "rate_limited",
                                    "/ok/run/error/message": "slow down"}});
        let spec = json!({"error": {"code": "invalid_variables"}});
        let ours = json!({"includes": {"/error": {"errors": [{"code": "cycle"}]}}});
        let text = json!({"contains": {"/error/message": "the edges form a cycle"}});
        let expect = |v: Value| v.as_object().cloned().expect("object");
        assert!(!asserts_reference_vocabulary(&expect(echo), &req));
        assert!(!asserts_reference_vocabulary(&expect(spec), &req));
        assert!(asserts_reference_vocabulary(&expect(ours), &req));
        assert!(asserts_reference_vocabulary(&expect(text), &req));
    }

    #[test]
    fn profiles_parse_and_serialize() {
        let p = Capabilities::from_names(["*", "-reference-vocabulary"]).expect("valid");
        assert!(p.supports("strands") && !p.supports(REFERENCE_VOCABULARY));
        assert_eq!(
            serde_json::to_value(&p).expect("json"),
            json!(["*", "-reference-vocabulary"])
        );
        let q: Capabilities = serde_json::from_value(json!(["op.run", "op.woml"])).expect("ok");
        assert!(q.supports("op.woml") && !q.supports("op.plan"));
        assert!(serde_json::from_value::<Capabilities>(json!(["warp"])).is_err());
        let needs: BTreeSet<String> = ["op.run", "strands"].map(String::from).into();
        assert_eq!(q.missing(&needs), ["strands"]);
        assert!(Capabilities::all().is_all());
        let coarse = Capabilities::from_names(["ops", "controls", "extended-dialect"]).expect("ok");
        assert!(coarse.supports("op.plan") && coarse.supports("control.merge"));
        assert!(coarse.supports("dialect.extended") && !coarse.supports("strands"));
    }
}
