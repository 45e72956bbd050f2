//! The scenario file: everything that drives one simulated run (issue 4 item 5).
//!
//! Owns: parsing and checking a scenario, every problem reported with a JSON Pointer.
//! Invariant: the shape is stable — later tools (conformance adapters, generators) depend
//! on it. Additions are optional keys only; unknown keys are refused so a typo in a fault
//! name can never silently turn a crash test into a plain run.
//!
//! ```text
//! { "runId": "run_1", "variables": {…}, "trigger": {"type": "manual", "event": …},
//!   "secrets": {…}, "documents": {…},
//!   "actions": { "<stepId>": { "idempotent": false, "sensitiveOutput": false,
//!                               "outcomes": [OUTCOME, …], "meta": {…} } },
//!   "faults": { "crashAfterCheckpoint": [3, 7], "crashInInvoke": [{"step": "s", "attempt": 1}] },
//!   "cancelAfterCheckpoint": 5, "workflows": { "<workflowId>": WORKFLOW }, "seed": 0 }
//! OUTCOME := {"output": V} | {"echo": true} | {"error": {"code", "message", "phase", "retryable"}}
//!            each optionally with "latencyMs": N and "meta": REPORT | [REPORT, …] | null
//! ```
//! Additions beyond the issue's shape (all optional): `seed` (the simulated host's
//! randomness: a run's seal id, D-251), `sealingKey` (a test key the simulated host holds
//! outside its store, at least 32 bytes of key material, D-250), an outcome-level `meta` (overrides the
//! action's for that invocation; `null` = no report), and `meta` as an array (the host
//! calls `onExecuted` once per element, in order — META-3's "first report wins").
//!
//! Issue 40 adds `scripts` (optional): `{"run": false}` keeps a dialect's script steps
//! carried, not executed (today's echo), and `"calls": {KEY: {"outcomes": [OUTCOME, …]}}`
//! answers a script's `services`/`fetch` calls, KEY being the call's name, `METHOD URL`
//! or `service.method` (`sim::scripts`).

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::host::SealingKey;
use crate::model::{Phase, StepError, Workflow, pointer_token};

/// A scenario problem: where (JSON Pointer into the scenario) and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

/// What one invocation of an action does.
#[derive(Debug, Clone, PartialEq)]
pub enum OutcomeKind {
    Output(Value),
    /// Returns the resolved params.
    Echo,
    Error(StepError),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub kind: OutcomeKind,
    /// Virtual time the invocation takes.
    pub latency_ms: u64,
    /// `Some(reports)` overrides the action's meta for this invocation (empty: no call).
    pub meta: Option<Vec<Value>>,
}

impl Outcome {
    pub fn echo() -> Self {
        Outcome {
            kind: OutcomeKind::Echo,
            latency_ms: 0,
            meta: None,
        }
    }
}

/// The scripted action behind one step id.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionScript {
    pub idempotent: bool,
    /// SEC-1 (D-275): the action's output is sensitive (a minted token): the engine treats
    /// it as secret-derived wholly.
    pub sensitive_output: bool,
    /// One per invocation, in order; the last repeats. Never empty.
    pub outcomes: Vec<Outcome>,
    /// The scenario gave `outcomes` (else the default echo): a script step's outcome is
    /// scripted by id, so its body does not run (issue 40 item 5).
    pub scripted: bool,
    /// Raw reports passed to `onExecuted` on every invocation (empty: never called).
    pub meta: Vec<Value>,
}

impl Default for ActionScript {
    fn default() -> Self {
        ActionScript {
            idempotent: false,
            sensitive_output: false,
            outcomes: vec![Outcome::echo()],
            scripted: false,
            meta: Vec::new(),
        }
    }
}

/// `crashInInvoke`: the action ran, the host dies before its result is checkpointed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvokeCrash {
    pub step: String,
    pub attempt: u32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// 1-based checkpoint numbers, counted across restarts.
    pub crash_after_checkpoint: Vec<u64>,
    pub crash_in_invoke: Vec<InvokeCrash>,
}

/// A parsed scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub run_id: String,
    pub variables: Map<String, Value>,
    pub trigger: Value,
    pub secrets: Map<String, Value>,
    pub documents: Map<String, Value>,
    pub actions: IndexMap<String, ActionScript>,
    pub faults: Faults,
    pub cancel_after_checkpoint: Option<u64>,
    pub workflows: IndexMap<String, Value>,
    /// D-126: `{kind: "function"}` call targets, one script per function id.
    pub functions: IndexMap<String, ActionScript>,
    pub seed: u64,
    /// D-250: the key the simulated host holds outside its store — a test key a scenario
    /// carries (`"sealingKey"`, material held to the same floor as a key file), or the
    /// operator's (`--key-file`, `W6W_SEALING_KEY`), which the CLI puts here.
    pub sealing_key: Option<SealingKey>,
    /// Issue 40: whether script steps run, and what answers their calls.
    pub scripts: ScriptSettings,
    /// D-251: mixed into the simulated host's randomness with `seed` (never in a scenario
    /// file: the CLI draws it fresh when the operator's key seals a real store, so two runs
    /// never share a seal id).
    pub entropy: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            run_id: "run_1".into(),
            variables: Map::new(),
            trigger: json!({"type": "manual"}),
            secrets: Map::new(),
            documents: Map::new(),
            actions: IndexMap::new(),
            faults: Faults::default(),
            cancel_after_checkpoint: None,
            workflows: IndexMap::new(),
            functions: IndexMap::new(),
            seed: 0,
            sealing_key: None,
            entropy: 0,
            scripts: ScriptSettings::default(),
        }
    }
}

/// The scenario's `scripts` (issue 40).
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSettings {
    /// `false`: script steps are carried, not executed (`--no-scripts` does the same).
    pub run: bool,
    /// What answers a script's call, by call name, `METHOD URL` or `service.method`.
    pub calls: IndexMap<String, ActionScript>,
}

impl Default for ScriptSettings {
    fn default() -> Self {
        ScriptSettings {
            run: true,
            calls: IndexMap::new(),
        }
    }
}

/// Run ids become file names in the disk store: keep them to a safe alphabet.
pub(crate) use crate::limits::RUN_ID_CHARS_MAX;

/// Whether `id` is a run id the stores accept: `[A-Za-z0-9_-][A-Za-z0-9_.-]*`, ≤ 128.
pub(crate) fn run_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= RUN_ID_CHARS_MAX
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

struct Checker {
    errors: Vec<ScenarioError>,
}

impl Checker {
    fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(ScenarioError {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    fn object<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        let o = v.as_object();
        if o.is_none() {
            self.err(path, "must be an object");
        }
        o
    }

    fn known_keys(&mut self, obj: &Map<String, Value>, path: &str, known: &[&str]) {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                self.err(
                    &format!("{path}/{}", pointer_token(k)),
                    format!("unknown key {k:?}; expected one of: {}", known.join(", ")),
                );
            }
        }
    }

    fn count(&mut self, v: &Value, path: &str) -> Option<u64> {
        let n = v.as_u64();
        if n.is_none() {
            self.err(path, "must be a non-negative integer");
        }
        n
    }

    /// An integer in 1..=u32::MAX (an attempt number); out of range is an error, never
    /// a value silently dropped.
    fn positive_u32(&mut self, v: &Value, path: &str) -> Option<u32> {
        match v.as_u64().map(u32::try_from) {
            Some(Ok(n)) if n >= 1 => Some(n),
            _ => {
                self.err(path, format!("must be an integer from 1 to {}", u32::MAX));
                None
            }
        }
    }

    fn positive(&mut self, v: &Value, path: &str) -> Option<u64> {
        match v.as_u64() {
            Some(n) if n >= 1 => Some(n),
            _ => {
                self.err(path, "must be an integer >= 1");
                None
            }
        }
    }
}

/// The keys a scenario document may have.
const SCENARIO_KEYS: &[&str] = &[
    "runId",
    "variables",
    "trigger",
    "secrets",
    "documents",
    "actions",
    "faults",
    "cancelAfterCheckpoint",
    "workflows",
    "functions",
    "seed",
    "sealingKey",
    "scripts",
];

/// Issue 12 item 5: what a run records from the scenario (variables, the trigger, the
/// documents an action returns) must fit what the store reads back.
fn recorded_depth(c: &mut Checker, root: &Map<String, Value>) {
    for key in ["variables", "trigger", "documents"] {
        if let Some(v) = root.get(key)
            && crate::limits::nests_deeper_than(v, crate::limits::MAX_NESTING_DEPTH - 1)
        {
            c.err(
                &format!("/{key}"),
                format!(
                    "nests deeper than {} levels (limit_exceeded)",
                    crate::limits::MAX_NESTING_DEPTH - 1
                ),
            );
        }
    }
}

/// Parse and check a scenario; on failure every problem, each with a JSON Pointer.
pub fn parse_scenario(doc: &Value) -> Result<Scenario, Vec<ScenarioError>> {
    let mut c = Checker { errors: Vec::new() };
    let mut s = Scenario::default();
    let Some(root) = c.object(doc, "") else {
        return Err(c.errors);
    };
    c.known_keys(root, "", SCENARIO_KEYS);
    recorded_depth(&mut c, root);
    parse_settings(&mut c, root, &mut s);
    if let Some(v) = root.get("actions")
        && let Some(actions) = c.object(v, "/actions")
    {
        for (step, a) in actions {
            let path = format!("/actions/{}", pointer_token(step));
            if let Some(script) = parse_action(&mut c, a, &path) {
                s.actions.insert(step.clone(), script);
            }
        }
    }
    if let Some(v) = root.get("scripts")
        && let Some(o) = c.object(v, "/scripts")
    {
        parse_scripts(&mut c, o, &mut s.scripts);
    }
    if let Some(v) = root.get("faults")
        && let Some(f) = c.object(v, "/faults")
    {
        parse_faults(&mut c, f, &mut s.faults);
    }
    if let Some(v) = root.get("workflows")
        && let Some(w) = c.object(v, "/workflows")
    {
        for (id, wf) in w {
            if !wf.is_object() {
                c.err(
                    &format!("/workflows/{}", pointer_token(id)),
                    "must be a workflow document (an object)",
                );
            }
            s.workflows.insert(id.clone(), wf.clone());
        }
    }
    if let Some(v) = root.get("functions")
        && let Some(fns) = c.object(v, "/functions")
    {
        for (id, f) in fns {
            let path = format!("/functions/{}", pointer_token(id));
            if let Some(script) = parse_function(&mut c, f, &path) {
                s.functions.insert(id.clone(), script);
            }
        }
    }
    if c.errors.is_empty() {
        Ok(s)
    } else {
        Err(c.errors)
    }
}

/// The scenario's plain settings: `runId`, `variables`, `secrets`, `documents`,
/// `trigger`, `seed`, `sealingKey`, `cancelAfterCheckpoint`.
fn parse_settings(c: &mut Checker, root: &Map<String, Value>, s: &mut Scenario) {
    if let Some(v) = root.get("runId") {
        match v.as_str() {
            Some(id) if run_id_ok(id) => s.run_id = id.to_owned(),
            _ => c.err(
                "/runId",
                "must be a string of 1-128 characters from [A-Za-z0-9_.-], not starting with '.'",
            ),
        }
    }
    for (key, slot) in [
        ("variables", &mut s.variables),
        ("secrets", &mut s.secrets),
        ("documents", &mut s.documents),
    ] {
        if let Some(v) = root.get(key)
            && let Some(o) = c.object(v, &format!("/{key}"))
        {
            slot.clone_from(o);
        }
    }
    if let Some(v) = root.get("trigger")
        && let Some(o) = c.object(v, "/trigger")
    {
        if o.get("type").is_some_and(|t| !t.is_string()) {
            c.err("/trigger/type", "must be a string");
        }
        let mut t = o.clone();
        t.entry("type").or_insert_with(|| json!("manual"));
        s.trigger = Value::Object(t);
    }
    if let Some(v) = root.get("seed") {
        s.seed = c.count(v, "/seed").unwrap_or(0);
    }
    if let Some(v) = root.get("sealingKey") {
        // D-250: the problem is named, the material never quoted.
        match v.as_str() {
            Some(material) => match SealingKey::from_material(material.as_bytes(), &s.secrets) {
                Ok(key) => s.sealing_key = Some(key),
                Err(e) => c.err("/sealingKey", format!("{e} ({})", e.code())),
            },
            None => c.err("/sealingKey", "must be a string of key material"),
        }
    }
    if let Some(v) = root.get("cancelAfterCheckpoint") {
        s.cancel_after_checkpoint = c.positive(v, "/cancelAfterCheckpoint");
    }
}

/// `scripts`: whether script steps run, and the scripted `calls` they may make.
fn parse_scripts(c: &mut Checker, o: &Map<String, Value>, scripts: &mut ScriptSettings) {
    c.known_keys(o, "/scripts", &["run", "calls"]);
    if let Some(run) = o.get("run") {
        match run.as_bool() {
            Some(b) => scripts.run = b,
            None => c.err("/scripts/run", "must be a boolean"),
        }
    }
    if let Some(v) = o.get("calls")
        && let Some(calls) = c.object(v, "/scripts/calls")
    {
        for (key, a) in calls {
            let path = format!("/scripts/calls/{}", pointer_token(key));
            if let Some(script) = parse_function(c, a, &path) {
                scripts.calls.insert(key.clone(), script);
            }
        }
    }
}

/// `faults`: the checkpoints after which the run crashes, and the invocations it crashes
/// in.
fn parse_faults(c: &mut Checker, f: &Map<String, Value>, faults: &mut Faults) {
    c.known_keys(f, "/faults", &["crashAfterCheckpoint", "crashInInvoke"]);
    if let Some(list) = f.get("crashAfterCheckpoint") {
        match list.as_array() {
            Some(items) => {
                for (i, n) in items.iter().enumerate() {
                    if let Some(n) = c.positive(n, &format!("/faults/crashAfterCheckpoint/{i}")) {
                        faults.crash_after_checkpoint.push(n);
                    }
                }
            }
            None => c.err(
                "/faults/crashAfterCheckpoint",
                "must be an array of integers >= 1",
            ),
        }
    }
    if let Some(list) = f.get("crashInInvoke") {
        match list.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("/faults/crashInInvoke/{i}");
                    let Some(o) = c.object(item, &path) else {
                        continue;
                    };
                    c.known_keys(o, &path, &["step", "attempt"]);
                    let step = o.get("step").and_then(Value::as_str);
                    if step.is_none() {
                        c.err(&format!("{path}/step"), "must be a step id (string)");
                    }
                    let attempt = match o.get("attempt") {
                        None => Some(1),
                        Some(a) => c.positive_u32(a, &format!("{path}/attempt")),
                    };
                    if let (Some(step), Some(attempt)) = (step, attempt) {
                        faults.crash_in_invoke.push(InvokeCrash {
                            step: step.to_owned(),
                            attempt,
                        });
                    }
                }
            }
            None => c.err("/faults/crashInInvoke", "must be an array"),
        }
    }
}

/// What a scenario may know of one step of the run tree (D-121).
struct StepFacts<'v> {
    app: Option<&'v str>,
    max_attempts: u64,
}

/// Every step, by id, of `workflow` and of every workflow the scenario carries (the run
/// tree a call or reroute can reach).
fn steps_of<'v>(workflow: &'v Value, scenario: &'v Scenario) -> Vec<(&'v str, StepFacts<'v>)> {
    let mut out = Vec::new();
    for doc in std::iter::once(workflow).chain(scenario.workflows.values()) {
        push_steps_of(doc, &mut out);
    }
    out
}

/// [`steps_of`] with the top workflow already typed: the same facts, read from the typed
/// steps instead of a JSON copy of them.
fn steps_of_typed<'v>(
    workflow: &'v Workflow,
    scenario: &'v Scenario,
) -> Vec<(&'v str, StepFacts<'v>)> {
    let mut out: Vec<(&str, StepFacts<'_>)> = workflow
        .steps
        .iter()
        .map(|step| {
            let max_attempts = step
                .retry_policy()
                .and_then(|r| r.max_attempts.as_u64())
                .unwrap_or(1)
                .max(1);
            let app = step.app();
            (step.id.as_str(), StepFacts { app, max_attempts })
        })
        .collect();
    for doc in scenario.workflows.values() {
        push_steps_of(doc, &mut out);
    }
    out
}

fn push_steps_of<'v>(doc: &'v Value, out: &mut Vec<(&'v str, StepFacts<'v>)>) {
    for step in doc
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = step.get("id").and_then(Value::as_str) else {
            continue;
        };
        let app = step.pointer("/uses/app").and_then(Value::as_str);
        let max_attempts = step
            .pointer("/retry/maxAttempts")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1);
        out.push((id, StepFacts { app, max_attempts }));
    }
}

/// Whether [`unreachable_faults`] can find anything: the scenario has a `crashInInvoke`
/// fault or an action script (the only entries that name a step).
pub(crate) fn names_steps(scenario: &Scenario) -> bool {
    !scenario.faults.crash_in_invoke.is_empty() || !scenario.actions.is_empty()
}

/// D-121 / D-126: the scenario's promises no run of this workflow tree can keep — a
/// `crashInInvoke` that can never fire, an `output` scripted for a `@w6w/document` step
/// (its content comes from `documents`) — each with its JSON Pointer.
pub(crate) fn unreachable_faults(workflow: &Value, scenario: &Scenario) -> Vec<ScenarioError> {
    faults_beyond(&steps_of(workflow, scenario), scenario)
}

/// [`unreachable_faults`] of a typed (validated) workflow.
pub(crate) fn unreachable_faults_typed(
    workflow: &Workflow,
    scenario: &Scenario,
) -> Vec<ScenarioError> {
    faults_beyond(&steps_of_typed(workflow, scenario), scenario)
}

fn faults_beyond(steps: &[(&str, StepFacts<'_>)], scenario: &Scenario) -> Vec<ScenarioError> {
    let mut errors = Vec::new();
    for (i, f) in scenario.faults.crash_in_invoke.iter().enumerate() {
        let path = format!("/faults/crashInInvoke/{i}");
        let matches: Vec<&StepFacts> = steps
            .iter()
            .filter(|(id, _)| *id == f.step)
            .map(|(_, facts)| facts)
            .collect();
        let why = if matches.is_empty() {
            Some(format!(
                "step {:?} is in neither the workflow nor any workflow of the scenario's workflows",
                f.step
            ))
        } else if matches.iter().all(|m| m.app == Some("@w6w/control")) {
            Some(format!(
                "step {:?} is a @w6w/control step, which the engine interprets and never invokes",
                f.step
            ))
        } else {
            let most = matches
                .iter()
                .map(|m| match m.app {
                    Some("@w6w/call") => 1,
                    Some("@w6w/control") => 0,
                    _ => m.max_attempts,
                })
                .max()
                .unwrap_or(1);
            (u64::from(f.attempt) > most).then(|| {
                format!(
                    "step {:?} makes at most {most} attempt(s) (its retry.maxAttempts; a @w6w/call step one), so attempt {} never happens",
                    f.step, f.attempt
                )
            })
        };
        if let Some(why) = why {
            errors.push(ScenarioError {
                path,
                message: format!("this fault can never fire: {why}"),
            });
        }
    }
    for (step, script) in &scenario.actions {
        let mut same = steps.iter().filter(|(id, _)| id == step).peekable();
        let all_documents =
            same.peek().is_some() && same.all(|(_, facts)| facts.app == Some("@w6w/document"));
        if !all_documents {
            continue;
        }
        for (i, o) in script.outcomes.iter().enumerate() {
            if matches!(o.kind, OutcomeKind::Output(_)) {
                errors.push(ScenarioError {
                    path: format!("/actions/{}/outcomes/{i}/output", pointer_token(step)),
                    message: "a @w6w/document step's content comes from the scenario's documents: script an error (or echo: the host serves the document), not an output".into(),
                });
            }
        }
    }
    errors
}

fn parse_meta(c: &mut Checker, v: &Value, path: &str) -> Vec<Value> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        Value::Object(_) => vec![v.clone()],
        _ => {
            c.err(
                path,
                "must be a report object, an array of reports, or null",
            );
            Vec::new()
        }
    }
}

fn parse_action(c: &mut Checker, v: &Value, path: &str) -> Option<ActionScript> {
    let o = c.object(v, path)?;
    c.known_keys(
        o,
        path,
        &["idempotent", "sensitiveOutput", "outcomes", "meta"],
    );
    let mut script = ActionScript::default();
    for (key, flag) in [
        ("idempotent", &mut script.idempotent),
        ("sensitiveOutput", &mut script.sensitive_output),
    ] {
        if let Some(i) = o.get(key) {
            match i.as_bool() {
                Some(b) => *flag = b,
                None => c.err(&format!("{path}/{key}"), "must be a boolean"),
            }
        }
    }
    if let Some(m) = o.get("meta") {
        script.meta = parse_meta(c, m, &format!("{path}/meta"));
    }
    if let Some(list) = o.get("outcomes") {
        script.scripted = true;
        match list.as_array() {
            Some(items) if !items.is_empty() => {
                script.outcomes = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| parse_outcome(c, item, &format!("{path}/outcomes/{i}")))
                    .collect();
            }
            _ => c.err(
                &format!("{path}/outcomes"),
                "must be a non-empty array of outcomes",
            ),
        }
    }
    if script.outcomes.is_empty() {
        script.outcomes.push(Outcome::echo());
    }
    Some(script)
}

/// D-126: a function target's script — outcomes only: a function has no `idempotent`
/// (a call never retries) and no meta (CALL-3).
fn parse_function(c: &mut Checker, v: &Value, path: &str) -> Option<ActionScript> {
    let o = c.object(v, path)?;
    c.known_keys(o, path, &["outcomes"]);
    let script = parse_action(c, v, path)?;
    for (i, outcome) in script.outcomes.iter().enumerate() {
        if outcome.meta.is_some() {
            c.err(
                &format!("{path}/outcomes/{i}/meta"),
                "a function target carries no meta (CALL-3)",
            );
        }
    }
    Some(script)
}

fn parse_outcome(c: &mut Checker, v: &Value, path: &str) -> Option<Outcome> {
    let o = c.object(v, path)?;
    c.known_keys(o, path, &["output", "echo", "error", "latencyMs", "meta"]);
    let kinds: Vec<&str> = ["output", "echo", "error"]
        .into_iter()
        .filter(|k| o.contains_key(*k))
        .collect();
    if kinds.len() != 1 {
        c.err(
            path,
            "an outcome has exactly one of \"output\", \"echo\" or \"error\"",
        );
        return None;
    }
    let kind = match kinds[0] {
        "output" => OutcomeKind::Output(o.get("output").cloned().unwrap_or(Value::Null)),
        "echo" => {
            if o.get("echo") != Some(&Value::Bool(true)) {
                c.err(&format!("{path}/echo"), "must be true");
            }
            OutcomeKind::Echo
        }
        _ => OutcomeKind::Error(parse_error(c, o.get("error")?, &format!("{path}/error"))?),
    };
    let latency_ms = match o.get("latencyMs") {
        None => 0,
        Some(l) => c.count(l, &format!("{path}/latencyMs")).unwrap_or(0),
    };
    let meta = o
        .get("meta")
        .map(|m| parse_meta(c, m, &format!("{path}/meta")));
    Some(Outcome {
        kind,
        latency_ms,
        meta,
    })
}

fn parse_error(c: &mut Checker, v: &Value, path: &str) -> Option<StepError> {
    let o = c.object(v, path)?;
    c.known_keys(o, path, &["code", "message", "phase", "retryable"]);
    let Some(code) = o.get("code").and_then(Value::as_str) else {
        c.err(
            &format!("{path}/code"),
            "must be a string (the error's machine code)",
        );
        return None;
    };
    let message = match o.get("message") {
        None => code.to_owned(),
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            c.err(&format!("{path}/message"), "must be a string");
            return None;
        }
    };
    let phase = match o.get("phase").map(Value::as_str) {
        None => Phase::Execute,
        Some(Some("resolution")) => Phase::Resolution,
        Some(Some("auth")) => Phase::Auth,
        Some(Some("execute")) => Phase::Execute,
        Some(Some("output")) => Phase::Output,
        Some(_) => {
            c.err(
                &format!("{path}/phase"),
                "must be one of \"resolution\", \"auth\", \"execute\", \"output\"",
            );
            return None;
        }
    };
    let mut error = StepError::new(code, message, phase);
    match o.get("retryable") {
        None => {}
        Some(Value::Bool(b)) => error.retryable = *b,
        Some(_) => {
            c.err(&format!("{path}/retryable"), "must be a boolean");
            return None;
        }
    }
    Some(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_pointers() {
        let s = parse_scenario(&json!({})).expect("empty is valid");
        assert_eq!(s.run_id, "run_1");
        assert_eq!(s.trigger, json!({"type": "manual"}));
        let errs = parse_scenario(&json!({
            "runId": "../x",
            "actions": {"a/b": {"outcomes": [{"echo": true, "output": 1}], "retry": 1}},
            "faults": {"crashAfterCheckpont": [1], "crashAfterCheckpoint": [0]}
        }))
        .expect_err("invalid");
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"/runId"));
        assert!(paths.contains(&"/actions/a~1b/outcomes/0"));
        assert!(paths.contains(&"/actions/a~1b/retry"));
        assert!(paths.contains(&"/faults/crashAfterCheckpont"));
        assert!(paths.contains(&"/faults/crashAfterCheckpoint/0"));
    }

    /// Issue 12 item 6: a field out of range is an error, never silently dropped.
    #[test]
    fn out_of_range_fields_are_errors() {
        for attempt in [json!(4_294_967_296u64), json!(0), json!(-1), json!(1.5)] {
            let errs = parse_scenario(
                &json!({"faults": {"crashInInvoke": [{"step": "a", "attempt": attempt}]}}),
            )
            .err()
            .unwrap_or_default();
            assert_eq!(
                errs.first().map(|e| e.path.as_str()),
                Some("/faults/crashInInvoke/0/attempt"),
                "{attempt}"
            );
        }
        let ok = parse_scenario(
            &json!({"faults": {"crashInInvoke": [{"step": "a", "attempt": 4_294_967_295u64}]}}),
        );
        assert!(ok.is_ok_and(|s| s.faults.crash_in_invoke[0].attempt == u32::MAX));
    }

    /// D-126: function targets are scripted by outcomes only (no idempotent, no meta).
    #[test]
    fn functions_parse_outcomes_only() {
        let s = parse_scenario(&json!({"functions": {"fn_a": {"outcomes": [
            {"output": 1, "latencyMs": 5}, {"error": {"code": "x", "retryable": true}}]}}}))
        .expect("valid");
        assert_eq!(s.functions["fn_a"].outcomes.len(), 2);
        let errs = parse_scenario(&json!({"functions": {"fn_a": {"idempotent": true,
            "outcomes": [{"echo": true, "meta": {"app": "a"}}]}}}))
        .expect_err("no idempotent, no meta");
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"/functions/fn_a/idempotent"), "{paths:?}");
        assert!(
            paths.contains(&"/functions/fn_a/outcomes/0/meta"),
            "{paths:?}"
        );
    }

    /// D-121: a fault no run of the tree can reach is named, with its pointer and why.
    #[test]
    fn faults_that_can_never_fire_are_named() {
        let wf = json!({"steps": [
            {"id": "a", "uses": {"app": "demo", "action": "x"}, "retry": {"maxAttempts": 2}},
            {"id": "g", "uses": {"app": "@w6w/control", "action": "if"}},
            {"id": "c", "uses": {"app": "@w6w/call", "action": "call"}},
            {"id": "d", "uses": {"app": "@w6w/document", "action": "get"}},
            {"id": "n", "uses": {"app": "demo", "action": "x"}, "retry": null}]});
        let child = json!({"steps": [{"id": "k", "uses": {"app": "demo", "action": "y"}}]});
        let s = parse_scenario(&json!({
            "workflows": {"child": child},
            "actions": {"d": {"outcomes": [{"error": {"code": "down"}}, {"output": 1}]},
                        "a": {"outcomes": [{"output": 1}]}},
            "faults": {"crashInInvoke": [
                {"step": "a", "attempt": 2}, {"step": "a", "attempt": 3},
                {"step": "g"}, {"step": "c"}, {"step": "c", "attempt": 2},
                {"step": "k"}, {"step": "nope"}, {"step": "d"}, {"step": "n", "attempt": 2}]}}))
        .expect("valid");
        let errs = unreachable_faults(&wf, &s);
        // The typed workflow reads the same facts as its JSON.
        let mut doc = wf.clone();
        doc["manifestVersion"] = json!("2");
        doc["id"] = json!("wf");
        doc["name"] = json!("wf");
        let typed: Workflow = serde_json::from_value(doc).expect("a typed workflow");
        let facts = |e: &[ScenarioError]| -> Vec<(String, String)> {
            e.iter()
                .map(|e| (e.path.clone(), e.message.clone()))
                .collect()
        };
        assert_eq!(facts(&unreachable_faults_typed(&typed, &s)), facts(&errs));
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/faults/crashInInvoke/1",
                "/faults/crashInInvoke/2",
                "/faults/crashInInvoke/4",
                "/faults/crashInInvoke/6",
                "/faults/crashInInvoke/8",
                "/actions/d/outcomes/1/output"
            ]
        );
        assert!(
            errs[0].message.contains("at most 2 attempt"),
            "{}",
            errs[0].message
        );
        assert!(
            errs[1].message.contains("@w6w/control"),
            "{}",
            errs[1].message
        );
    }

    #[test]
    fn outcomes_parse() {
        let s = parse_scenario(&json!({"actions": {"f": {"idempotent": true, "outcomes": [
            {"error": {"code": "boom", "retryable": true}, "latencyMs": 5},
            {"output": {"x": 1}, "meta": null}
        ], "meta": {"app": "a"}}}}))
        .expect("valid");
        let f = &s.actions["f"];
        assert!(f.idempotent);
        assert_eq!(f.outcomes[0].latency_ms, 5);
        assert!(
            matches!(&f.outcomes[0].kind, OutcomeKind::Error(e) if e.retryable && e.phase == Phase::Execute)
        );
        assert_eq!(f.outcomes[1].meta, Some(vec![]));
        assert_eq!(f.meta, vec![json!({"app": "a"})]);
    }
}
