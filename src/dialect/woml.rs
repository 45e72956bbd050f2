//! The WOML front-end (`woml-steps.txt`; clauses WOML-1…16).
//!
//! Owns: parsing a WOML document with roxmltree (a real XML parser: well-formedness,
//! duplicate attributes, entity bombs and a node budget are its job), checking every MUST
//! of the text with a stable code at `line:column` and an XPath-like path
//! (`/workflow/steps/step[2]/@retry`), and the import into w6w:
//! document order → implicit chain (WOML-3); each `<step>` → one app step
//! `{app: "woml", action: "script"}` whose `with` is the script's `context` binding
//! (`payload` and the outputs visible at its position, WOML-3/12/14); retry attributes →
//! a RetryPolicy with exact durations, `x-w6w-retryOn: ["script_threw"]` (WOML-11) and, for
//! an exponential cap, `x-w6w-maxDelayMs` (WOML-10); the body, display text and the literal
//! secret names (never values, WOML-16) under the step's `x-woml` extension.
//! Invariant: the walk visits only the fixed shape `workflow > steps > step > script`; the
//! other flow items WOML-2 names are valid, not looked inside, and refused at their line
//! only for running (D-238).

use indexmap::IndexSet;
use roxmltree::{Document, Node, NodeType, ParsingOptions};
use serde_json::{Map, Value, json};

use super::lines::LineIndex;
use super::script::secret_reads;
use super::{
    Binds, DURATION_MS_MAX, Dialect, Imported, NODES_MAX, Note, Pos, Problem, StepInfo, StepKind,
    parse_duration_ms,
};
use crate::engine::{EXT_MAX_DELAY_MS, EXT_RETRY_ON, WAIT_MS_MAX};
use crate::limits::WOML_CONTEXT_BYTES_MAX;

/// The app every imported script step names; its outcome is scripted by step id.
pub(crate) const SCRIPT_APP: &str = "woml";
pub(crate) const SCRIPT_ACTION: &str = "script";
/// The one failure kind WOML retries automatically (WOML-11).
pub(crate) const RETRIED_FAILURE: &str = "script_threw";

/// Direct flow items the text lists (WOML-2) whose runtime meaning it does not define:
/// valid for `validate`, refused by `validate --runnable`, `import` and `run` (D-238).
const UNSUPPORTED_FLOW_ITEMS: [&str; 5] = ["parallel", "choose", "switch", "fork", "approval"];
const STEP_ATTRIBUTES: [&str; 7] = [
    "id",
    "name",
    "description",
    "retry",
    "retry-backoff",
    "retry-delay",
    "retry-max-delay",
];
const WORKFLOW_ATTRIBUTES: [&str; 3] = ["id", "name", "description"];

struct Walk<'input> {
    lines: LineIndex<'input>,
    problems: Vec<Problem>,
    /// What the document may hold but w6w-sim cannot run (D-238): reported by `import`
    /// and `validate --runnable` only.
    unsupported: Vec<Problem>,
    notes: Vec<Note>,
}

impl<'input> Walk<'input> {
    fn pos(&self, node: Node<'_, 'input>) -> Pos {
        self.lines.pos(node.range().start)
    }

    fn attr_pos(&self, node: Node<'_, 'input>, name: &str) -> Pos {
        match node.attributes().find(|a| a.name() == name) {
            Some(a) => self.lines.pos(a.range().start),
            None => self.pos(node),
        }
    }

    fn problem(
        &mut self,
        code: &'static str,
        clause: &'static str,
        path: impl Into<String>,
        pos: Pos,
        message: impl Into<String>,
    ) {
        super::push_problem(
            &mut self.problems,
            Problem::new(code, Some(clause), path, pos, message),
        );
    }

    /// Stray text (not whitespace) directly inside a structural element is an error.
    fn no_text(&mut self, node: Node<'_, 'input>, path: &str, clause: &'static str) {
        for child in node.children() {
            if child.is_text() && child.text().is_some_and(|t| !t.trim().is_empty()) {
                let pos = self.pos(child);
                self.problem(
                    "unexpected_text",
                    clause,
                    path.to_owned(),
                    pos,
                    format!("<{}> holds elements only, not text", node.tag_name().name()),
                );
            }
        }
    }
}

/// Check a WOML document against woml-steps.txt alone (`validate`, D-237): every flow
/// item WOML-2 names is valid; `Ok(notes)` or every problem.
pub(crate) fn validate(text: &str) -> Result<Vec<Note>, Vec<Problem>> {
    let (w, _) = walk(text)?;
    if w.problems.is_empty() {
        Ok(w.notes)
    } else {
        Err(w.problems)
    }
}

/// Parse, check and import a WOML document: the document's problems, then what cannot
/// run (`unsupported_construct`, D-238).
pub(crate) fn import(text: &str) -> Result<Imported, Vec<Problem>> {
    let (mut w, parts) = walk(text)?;
    if !w.problems.is_empty() || !w.unsupported.is_empty() {
        for p in std::mem::take(&mut w.unsupported) {
            super::push_problem(&mut w.problems, p);
        }
        return Err(w.problems);
    }
    Ok(build(w, parts))
}

/// What the walk keeps for the import.
struct Parts {
    meta: Map<String, Value>,
    config: Option<Value>,
    steps: Vec<ImportedStep>,
}

/// Parse and check: `Err` when there are no steps to walk; otherwise the walk, with the
/// document's problems and what cannot run in two lists.
fn walk(text: &str) -> Result<(Walk<'_>, Parts), Vec<Problem>> {
    let lines = LineIndex::new(text);
    prescan::check(text, |offset| lines.pos(offset)).map_err(|p| vec![p])?;
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: u32::try_from(NODES_MAX).unwrap_or(u32::MAX),
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, options).map_err(|e| vec![xml_problem(&e)])?;
    let mut w = Walk {
        lines,
        problems: Vec::new(),
        unsupported: Vec::new(),
        notes: Vec::new(),
    };
    let root = doc.root_element();
    if root.tag_name().name() != "workflow" || root.tag_name().namespace().is_some() {
        let pos = w.pos(root);
        w.problem(
            "invalid_root",
            "WOML-1",
            format!("/{}", root.tag_name().name()),
            pos,
            format!(
                "a WOML document's root is <workflow> (holding <steps> and optionally <config>), not <{}>",
                root.tag_name().name()
            ),
        );
        return Err(w.problems);
    }
    let meta = workflow_meta(&mut w, root);
    w.no_text(root, "/workflow", "WOML-1");
    let (steps_el, config) = workflow_children(&mut w, root);
    let Some(steps_el) = steps_el else {
        let pos = w.pos(root);
        w.problem(
            "missing_steps",
            "WOML-1",
            "/workflow/steps",
            pos,
            "<steps> is required",
        );
        return Err(w.problems);
    };
    let config_json = config.map(|c| config_value(&mut w, c));
    let steps = walk_steps(&mut w, steps_el);
    Ok((
        w,
        Parts {
            meta,
            config: config_json,
            steps,
        },
    ))
}

/// A document roxmltree refuses: not well-formed (WOML-1), or over the node bound (SEC-2).
fn xml_problem(e: &roxmltree::Error) -> Problem {
    let p = e.pos();
    let code = match e {
        roxmltree::Error::NodesLimitReached => "limit_exceeded",
        _ => "syntax_error",
    };
    Problem::new(
        code,
        Some(if code == "limit_exceeded" {
            "SEC-2"
        } else {
            "WOML-1"
        }),
        "",
        Pos {
            line: p.row as usize,
            column: p.col as usize,
        },
        format!("not well-formed XML: {e}"),
    )
}

/// The `<workflow>` attributes a workflow keeps (WOML-1); any other is a problem.
fn workflow_meta<'i>(w: &mut Walk<'i>, root: Node<'_, 'i>) -> Map<String, Value> {
    let mut meta = Map::new();
    for a in root.attributes() {
        if WORKFLOW_ATTRIBUTES.contains(&a.name()) && a.namespace().is_none() {
            meta.insert(a.name().to_owned(), json!(a.value()));
        } else {
            let pos = w.lines.pos(a.range().start);
            w.problem(
                "unknown_attribute",
                "WOML-1",
                format!("/workflow/@{}", a.name()),
                pos,
                format!(
                    "<workflow> takes only {}; {:?} would be dropped",
                    WORKFLOW_ATTRIBUTES.join(", "),
                    a.name()
                ),
            );
        }
    }
    meta
}

/// `<workflow>`'s `<steps>` and `<config>` (each at most once; nothing else).
fn workflow_children<'a, 'i>(
    w: &mut Walk<'i>,
    root: Node<'a, 'i>,
) -> (Option<Node<'a, 'i>>, Option<Node<'a, 'i>>) {
    let mut steps_el = None;
    let mut config = None;
    for child in root.children().filter(Node::is_element) {
        let name = child.tag_name().name();
        let pos = w.pos(child);
        match name {
            "steps" if steps_el.is_none() => steps_el = Some(child),
            "config" if config.is_none() => config = Some(child),
            "steps" | "config" => w.problem(
                "duplicate_element",
                "WOML-1",
                format!("/workflow/{name}"),
                pos,
                format!("<workflow> holds at most one <{name}>"),
            ),
            other => w.problem(
                "unknown_element",
                "WOML-1",
                format!("/workflow/{other}"),
                pos,
                format!("<workflow> holds <steps> and optionally <config>, not <{other}>"),
            ),
        }
    }
    (steps_el, config)
}

/// The w6w workflow of a checked, runnable document.
fn build(w: Walk<'_>, parts: Parts) -> Imported {
    let Parts {
        meta,
        config: config_json,
        steps,
    } = parts;
    let id = meta
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("woml_workflow")
        .to_owned();
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("woml-workflow")
        .to_owned();
    // The steps move into the workflow: D-220, no second copy of the import.
    let (steps, infos): (Vec<Value>, Vec<StepInfo>) =
        steps.into_iter().map(|s| (s.json, s.info)).unzip();
    let mut m = Map::new();
    m.insert("manifestVersion".into(), json!("2"));
    m.insert("id".into(), json!(id));
    m.insert("name".into(), json!(name));
    m.insert("steps".into(), Value::Array(steps));
    m.insert("x-w6w-source".into(), json!({"dialect": "woml"}));
    if let Some(d) = meta.get("description") {
        m.insert("description".into(), d.clone());
    }
    if let Some(c) = config_json {
        m.insert("x-woml-config".into(), c);
    }
    let workflow = Value::Object(m);
    Imported {
        dialect: Dialect::Woml,
        workflow,
        notes: w.notes,
        steps: infos,
    }
}

/// `<config>` is carried under `x-woml-config` (its contents as text). Its `<timeout>`,
/// when it is a duration, is also there as `timeoutMs`: the simulator bounds each script
/// attempt by it on the virtual clock (issue 40, D-283); a note says what happens to it.
fn config_value<'i>(w: &mut Walk<'i>, config: Node<'_, 'i>) -> Value {
    let mut out = Map::new();
    for a in config.attributes() {
        out.insert(format!("@{}", a.name()), json!(a.value()));
    }
    for child in config.children().filter(Node::is_element) {
        let text: String = child
            .descendants()
            .filter(Node::is_text)
            .filter_map(|t| t.text())
            .collect();
        out.insert(child.tag_name().name().to_owned(), json!(text.trim()));
    }
    let timeout = out
        .get("timeout")
        .and_then(Value::as_str)
        .map(|t| (t.to_owned(), parse_duration_ms(t)));
    if let Some((_, Some(ms))) = &timeout {
        out.insert("timeoutMs".into(), json!(ms));
    }
    if !out.is_empty() {
        let pos = w.pos(config);
        let message = match timeout {
            Some((_, Some(ms))) => format!(
                "<config> is carried as x-woml-config; its timeout bounds every script attempt \
                 at {ms} ms of virtual time (a slower script fails with `timeout`)"
            ),
            Some((text, None)) => format!(
                "<config> is carried as x-woml-config; its timeout {text:?} is not a duration, \
                 so no script attempt is bounded by it"
            ),
            None => "<config> is carried as x-woml-config; without a <timeout> a script attempt \
                     is bounded only by the simulator's CPU budget"
                .to_owned(),
        };
        w.notes.push(Note::new("/workflow/config", pos, message));
    }
    Value::Object(out)
}

struct ImportedStep {
    json: Value,
    info: StepInfo,
}

/// The flow items of the root `<steps>`: its child elements (it takes no attributes and
/// no text, and holds at least one).
fn flow_items<'a, 'i>(w: &mut Walk<'i>, steps: Node<'a, 'i>) -> Vec<Node<'a, 'i>> {
    for a in steps.attributes() {
        let pos = w.lines.pos(a.range().start);
        w.problem(
            "unknown_attribute",
            "WOML-1",
            format!("/workflow/steps/@{}", a.name()),
            pos,
            format!("<steps> accepts no attributes ({:?})", a.name()),
        );
    }
    w.no_text(steps, "/workflow/steps", "WOML-2");
    let items: Vec<Node<'a, 'i>> = steps.children().filter(Node::is_element).collect();
    if items.is_empty() {
        let pos = w.pos(steps);
        w.problem(
            "empty_steps",
            "WOML-1",
            "/workflow/steps",
            pos,
            "<steps> holds one or more flow items; an empty root <steps> is invalid",
        );
    }
    items
}

fn walk_steps<'i>(w: &mut Walk<'i>, steps: Node<'_, 'i>) -> Vec<ImportedStep> {
    let items = flow_items(w, steps);
    let mut out: Vec<ImportedStep> = Vec::new();
    // Every id so far, in document order: the duplicate check is a hash probe (D-218).
    let mut seen: IndexSet<String> = IndexSet::new();
    let mut ordinal = std::collections::BTreeMap::<&str, usize>::new();
    let mut context = ContextBudget::default();
    for item in items {
        let name = item.tag_name().name();
        let n = ordinal.entry(name).or_insert(0);
        *n += 1;
        let path = format!("/workflow/steps/{name}[{n}]");
        let pos = w.pos(item);
        if name == "step" && item.tag_name().namespace().is_none() {
            if let Some(step) = walk_step(w, item, &path, &seen, &mut context) {
                seen.insert(step.info.id.clone());
                out.push(step);
            }
            if context.exceeded {
                break;
            }
        } else if UNSUPPORTED_FLOW_ITEMS.contains(&name) {
            // D-238: WOML-2 makes it a valid flow item; the text gives no runtime meaning,
            // so only running it is refused.
            super::push_problem(
                &mut w.unsupported,
                Problem::new(
                    "unsupported_construct",
                    Some("WOML-2"),
                    path,
                    pos,
                    format!(
                        "<{name}> at line {}: a valid flow item (WOML-2), but woml-steps.txt does \
                         not define how it runs, so it cannot be imported or run (nothing is \
                         dropped silently)",
                        pos.line
                    ),
                ),
            );
        } else {
            w.problem(
                "invalid_flow_item",
                "WOML-2",
                path,
                pos,
                format!(
                    "<{name}> is not a flow item; <steps> holds <step>, <parallel>, <choose>, \
                     <switch>, <fork> and <approval>"
                ),
            );
        }
    }
    out
}

/// D-220: what the `context.steps` bindings built so far cost, charged before each is built
/// (so a refused document never builds the quadratic part): per step, the bytes of its
/// binding's entries (`"<id>": {"$": "steps.<id>.output"}`, estimated as twice the id plus
/// [`CONTEXT_ENTRY_BYTES`]), summed over the steps.
#[derive(Default)]
struct ContextBudget {
    /// What one more step's binding costs: the entries of every step so far.
    next: usize,
    /// What the bindings built so far cost.
    total: usize,
    exceeded: bool,
}

/// The bytes of one context entry beside its id's two copies (`"":{"$":"steps..output"},`).
const CONTEXT_ENTRY_BYTES: usize = 26;

/// The parsed retry attributes of one step.
struct Retry {
    attempts: u64,
    backoff: Option<&'static str>,
    delay_ms: Option<u64>,
    max_delay_ms: Option<u64>,
}

/// One `<step>` (a script step): its attributes, id, retry policy and script body checked,
/// its context charged to the document's budget; `None` when it has a problem.
fn walk_step<'i>(
    w: &mut Walk<'i>,
    step: Node<'_, 'i>,
    path: &str,
    seen: &IndexSet<String>,
    context: &mut ContextBudget,
) -> Option<ImportedStep> {
    let before = w.problems.len();
    let pos = w.pos(step);
    known_step_attributes(w, step, path);
    let id = step_id(w, step, path, seen);
    let retry = retry_attributes(w, step, path);
    let body = script_body(w, step, path);
    if w.problems.len() > before {
        return None;
    }
    let (id, retry, (body, body_offset)) = (id?, retry?, body?);
    let (secrets, refused) = secret_reads(&body);
    for r in refused {
        let at = w.lines.pos(body_offset + r.offset.min(body.len()));
        w.problem(
            "dynamic_secret",
            "WOML-16",
            format!("{path}/script"),
            at,
            r.message,
        );
    }
    if !w.problems.is_empty() && w.problems.len() > before {
        return None;
    }
    retry_wait_notes(w, step, path, &retry);
    if !charge_context(w, context, path, pos, seen.len(), &id) {
        return None;
    }
    let s = script_step(step, &id, &body, &secrets, pos, seen, &retry);
    Some(ImportedStep {
        json: s,
        info: StepInfo {
            id,
            kind: StepKind::Script,
            max_attempts: retry.attempts,
            line: pos.line,
            binds: Binds::Output,
        },
    })
}

/// Every attribute of a `<step>` is one it takes (WOML-4).
fn known_step_attributes<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str) {
    for a in step.attributes() {
        if !STEP_ATTRIBUTES.contains(&a.name()) || a.namespace().is_some() {
            let apos = w.lines.pos(a.range().start);
            w.problem(
                "unknown_attribute",
                "WOML-4",
                format!("{path}/@{}", a.name()),
                apos,
                format!(
                    "<step> takes {}; {:?} is not one of them",
                    STEP_ATTRIBUTES.join(", "),
                    a.name()
                ),
            );
        }
    }
}

/// A `<step>`'s id: present, addressable as `context.steps.<id>`, and not used before.
fn step_id<'i>(
    w: &mut Walk<'i>,
    step: Node<'_, 'i>,
    path: &str,
    seen: &IndexSet<String>,
) -> Option<String> {
    let pos = w.pos(step);
    match step.attribute("id") {
        None => {
            w.problem(
                "missing_id",
                "WOML-4",
                format!("{path}/@id"),
                pos,
                "<step> requires id: its DAG node and context.steps.<id> identity",
            );
            None
        }
        Some(id) if id.trim().is_empty() || id.contains('.') || id != id.trim() => {
            let apos = w.attr_pos(step, "id");
            w.problem(
                "invalid_id",
                "WOML-4",
                format!("{path}/@id"),
                apos,
                format!(
                    "step id {id:?} cannot be addressed as context.steps.<id>: it must be \
                     non-empty, without dots or surrounding spaces"
                ),
            );
            None
        }
        Some(id) if seen.contains(id) => {
            let apos = w.attr_pos(step, "id");
            w.problem(
                "duplicate_id",
                "WOML-4",
                format!("{path}/@id"),
                apos,
                format!("step id {id:?} is already used: context.steps.<id> must name one step"),
            );
            None
        }
        Some(id) => Some(id.to_owned()),
    }
}

/// A note for each retry wait above RETRY-5's cap: after the move it waits less.
fn retry_wait_notes<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str, retry: &Retry) {
    for (attr, ms) in [
        ("retry-delay", retry.delay_ms),
        ("retry-max-delay", retry.max_delay_ms),
    ] {
        if let Some(ms) = ms
            && ms > WAIT_MS_MAX
            && retry.attempts > 1
        {
            let apos = w.attr_pos(step, attr);
            w.notes.push(Note::new(
                format!("{path}/@{attr}"),
                apos,
                format!(
                    "{attr} is {ms} ms; w6w caps every wait between two attempts at {WAIT_MS_MAX} ms \
                     (RETRY-5), so waits above 5 minutes become 5 minutes after the move"
                ),
            ));
        }
    }
}

/// Charge a step's context bindings to the document's budget (SEC-2): `false`, with the
/// problem reported, when they would pass it.
fn charge_context(
    w: &mut Walk<'_>,
    context: &mut ContextBudget,
    path: &str,
    pos: Pos,
    earlier: usize,
    id: &str,
) -> bool {
    context.total = context.total.saturating_add(context.next);
    if context.total > WOML_CONTEXT_BYTES_MAX {
        context.exceeded = true;
        w.problem(
            "limit_exceeded",
            "SEC-2",
            path.to_owned(),
            pos,
            format!(
                "step {} of this document: the steps' context bindings would pass \
                 {WOML_CONTEXT_BYTES_MAX} bytes — every step's context lists each earlier step's \
                 output (WOML-12), so they grow with the square of the step count; split the \
                 workflow or shorten its step ids",
                earlier + 1
            ),
        );
        return false;
    }
    context.next = context
        .next
        .saturating_add(2 * id.len() + CONTEXT_ENTRY_BYTES);
    true
}

/// The w6w step a script step becomes: the script action, its inputs, what it was in
/// WOML under `x-woml`, and its retry policy.
fn script_step(
    step: Node<'_, '_>,
    id: &str,
    body: &str,
    secrets: &[String],
    pos: Pos,
    seen: &IndexSet<String>,
    retry: &Retry,
) -> Value {
    let mut x = Map::new();
    x.insert("script".into(), json!(body));
    x.insert("secrets".into(), json!(secrets));
    for k in ["name", "description"] {
        if let Some(v) = step.attribute(k) {
            x.insert(k.into(), json!(v));
        }
    }
    x.insert("line".into(), json!(pos.line));
    let mut s = json!({
        "id": id,
        "uses": {"app": SCRIPT_APP, "action": SCRIPT_ACTION},
        "with": script_inputs(seen, secrets),
        "x-woml": Value::Object(x),
    });
    if let Some(policy) = retry_policy(retry)
        && let Value::Object(m) = &mut s
    {
        m.insert("retry".into(), policy);
    }
    s
}

/// A script step's inputs: its `context` and, for each literal `secrets.NAME` it reads
/// (WOML-16), that secret as a `secret` part of an ExprValue under `secrets.NAME` (D-226):
/// the script is handed the secret, so the invocation is secret-derived and its output is
/// sealed and redacted exactly as a w6w step's whose params read a secret; a secret the
/// run does not have fails the step in resolution (ENV-3), never a silent `undefined`.
fn script_inputs(earlier: &IndexSet<String>, secrets: &[String]) -> Value {
    let mut with = json!({"context": context_binding(earlier)});
    if !secrets.is_empty() {
        let parts: Map<String, Value> = secrets
            .iter()
            .map(|name| {
                let part = json!({"type": "expr", "parts": [{"kind": "secret", "ref": name}]});
                (name.clone(), part)
            })
            .collect();
        with["secrets"] = Value::Object(parts);
    }
    with
}

/// WOML-3/12/14: `context.payload` is the workflow input (the trigger's event) and
/// `context.steps` holds exactly the outputs visible at this position — every earlier step.
fn context_binding(earlier: &IndexSet<String>) -> Value {
    let steps: Map<String, Value> = earlier
        .iter()
        .map(|id| (id.clone(), json!({"$": format!("steps.{id}.output")})))
        .collect();
    json!({"payload": {"$": "trigger.event"}, "steps": steps})
}

/// WOML-5…8 → RetryPolicy (None for a single attempt). Durations are exact: `delayMs` is
/// the attribute's value in ms (default 1s, WOML-7); the cap is `x-w6w-maxDelayMs`.
fn retry_policy(r: &Retry) -> Option<Value> {
    if r.attempts <= 1 && r.backoff.is_none() {
        return None;
    }
    let mut p = json!({
        "maxAttempts": r.attempts,
        "backoff": r.backoff.unwrap_or("fixed"),
        "delayMs": r.delay_ms.unwrap_or(1000),
        EXT_RETRY_ON: [RETRIED_FAILURE],
    });
    if let (Some(cap), Value::Object(m)) = (r.max_delay_ms, &mut p) {
        m.insert(EXT_MAX_DELAY_MS.into(), json!(cap));
    }
    Some(p)
}

/// WOML-5: `retry`, the total number of attempts (1 to 10; 1 when absent or invalid).
fn retry_count<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str) -> u64 {
    match step.attribute("retry") {
        None => 1,
        Some(v) => {
            match v.trim().parse::<u64>() {
                Ok(n) if (1..=10).contains(&n) && v.trim().bytes().all(|b| b.is_ascii_digit()) => n,
                _ => {
                    let apos = w.attr_pos(step, "retry");
                    w.problem(
                    "invalid_retry",
                    "WOML-5",
                    format!("{path}/@retry"),
                    apos,
                    format!("retry is the total number of attempts, an integer from 1 to 10, not {v:?}"),
                );
                    1
                }
            }
        }
    }
}

/// WOML-6: `retry-backoff`, `fixed` or `exponential`.
fn retry_backoff<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str) -> Option<&'static str> {
    match step.attribute("retry-backoff") {
        None => None,
        Some("fixed") => Some("fixed"),
        Some("exponential") => Some("exponential"),
        Some(v) => {
            let apos = w.attr_pos(step, "retry-backoff");
            w.problem(
                "invalid_backoff",
                "WOML-6",
                format!("{path}/@retry-backoff"),
                apos,
                format!("retry-backoff is \"fixed\" or \"exponential\", not {v:?}"),
            );
            None
        }
    }
}

fn retry_attributes<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str) -> Option<Retry> {
    let before = w.problems.len();
    let attempts = retry_count(w, step, path);
    let backoff = retry_backoff(w, step, path);
    if step.attribute("retry-backoff").is_some() && attempts <= 1 && w.problems.len() == before {
        let apos = w.attr_pos(step, "retry-backoff");
        w.problem(
            "backoff_requires_retry",
            "WOML-6",
            format!("{path}/@retry-backoff"),
            apos,
            "retry-backoff requires retry greater than one",
        );
    }
    let duration = |w: &mut Walk<'i>, attr: &str, clause: &'static str| -> Option<u64> {
        let v = step.attribute(attr)?;
        match parse_duration_ms(v) {
            Some(ms) if (1..=DURATION_MS_MAX).contains(&ms) => Some(ms),
            _ => {
                let apos = w.attr_pos(step, attr);
                w.problem(
                    "invalid_duration",
                    clause,
                    format!("{path}/@{attr}"),
                    apos,
                    format!(
                        "{attr} is a duration from 1ms through 24h (an integer with ms, s, m or h), not {v:?}"
                    ),
                );
                None
            }
        }
    };
    let delay_ms = duration(w, "retry-delay", "WOML-7");
    let max_delay_ms = duration(w, "retry-max-delay", "WOML-8");
    if step.attribute("retry-max-delay").is_some() && backoff != Some("exponential") {
        let apos = w.attr_pos(step, "retry-max-delay");
        w.problem(
            "max_delay_requires_exponential",
            "WOML-8",
            format!("{path}/@retry-max-delay"),
            apos,
            "retry-max-delay caps exponential backoff; it is invalid with fixed backoff \
             (and without retry-backoff=\"exponential\")",
        );
    }
    (w.problems.len() == before).then_some(Retry {
        attempts,
        backoff,
        delay_ms,
        max_delay_ms,
    })
}

/// WOML-9: exactly one attribute-free `<script>` and nothing else; its body text and the
/// byte offset of the body in the source (for positions inside it).
fn script_body<'i>(w: &mut Walk<'i>, step: Node<'_, 'i>, path: &str) -> Option<(String, usize)> {
    let before = w.problems.len();
    let scripts = script_elements(w, step, path);
    if scripts.len() != 1 {
        let pos = scripts.get(1).map_or_else(|| w.pos(step), |s| w.pos(*s));
        w.problem(
            "script_count",
            "WOML-9",
            format!("{path}/script"),
            pos,
            format!(
                "a fundamental step contains exactly one <script>; found {}",
                scripts.len()
            ),
        );
        return None;
    }
    let script = scripts[0];
    for a in script.attributes() {
        let apos = w.lines.pos(a.range().start);
        w.problem(
            "script_attribute",
            "WOML-9",
            format!("{path}/script/@{}", a.name()),
            apos,
            format!(
                "<script> accepts no attributes ({:?}); a timeout belongs to the workflow <config>",
                a.name()
            ),
        );
    }
    let (body, offset) = script_text(w, script, path);
    if body.trim().is_empty() {
        let pos = w.pos(script);
        w.problem(
            "empty_script",
            "WOML-9",
            format!("{path}/script"),
            pos,
            "a <script> body is the body of an async function; it is empty",
        );
    }
    let offset = offset.unwrap_or_else(|| script.range().start);
    (w.problems.len() == before).then_some((body, offset))
}

/// The `<script>` elements of a `<step>`; any other element or text in it is a problem.
fn script_elements<'a, 'i>(w: &mut Walk<'i>, step: Node<'a, 'i>, path: &str) -> Vec<Node<'a, 'i>> {
    let mut scripts = Vec::new();
    for child in step.children() {
        match child.node_type() {
            NodeType::Element if child.tag_name().name() == "script" => scripts.push(child),
            NodeType::Element => {
                let pos = w.pos(child);
                let name = child.tag_name().name();
                w.problem(
                    "unknown_element",
                    "WOML-9",
                    format!("{path}/{name}"),
                    pos,
                    format!("a fundamental <step> holds exactly one <script>, not <{name}>"),
                );
            }
            NodeType::Text if child.text().is_some_and(|t| !t.trim().is_empty()) => {
                let pos = w.pos(child);
                w.problem(
                    "unexpected_text",
                    "WOML-9",
                    path.to_owned(),
                    pos,
                    "text belongs inside <script>, not directly in <step>",
                );
            }
            _ => {}
        }
    }
    scripts
}

/// A `<script>`'s body text and where it starts; an element inside it is a problem.
fn script_text<'i>(w: &mut Walk<'i>, script: Node<'_, 'i>, path: &str) -> (String, Option<usize>) {
    let mut body = String::new();
    let mut offset = None;
    for child in script.children() {
        match child.node_type() {
            NodeType::Text => {
                offset.get_or_insert(child.range().start);
                body.push_str(child.text().unwrap_or_default());
            }
            NodeType::Element => {
                let pos = w.pos(child);
                w.problem(
                    "unknown_element",
                    "WOML-9",
                    format!("{path}/script/{}", child.tag_name().name()),
                    pos,
                    "a <script> body is text (escape < or use CDATA), not elements",
                );
            }
            _ => {}
        }
    }
    (body, offset)
}

mod prescan;
#[cfg(test)]
mod tests;
