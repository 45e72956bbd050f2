//! The storage rules of a workflow document: every problem, each with a JSON Pointer.
//!
//! Owns: the per-field rules (types, required fields, enums, retry well-formedness, the
//! key grammar, dotted ids) and the runnability gate (PLAN-9), walked over the raw
//! `serde_json::Value` collecting *all* problems, and the nesting bound checked before
//! anything recursive runs. The graph rules (PLAN-1/2/3, the plan-time control checks)
//! are `plan`'s; `crate::validate` runs both, sorts the problems into document order and
//! deserializes only a clean document into the typed [`Workflow`](super::Workflow), so
//! typed code never sees a malformed document.
//!
//! Refuses to know: how anything runs. The declarative fields `settings`, `position`,
//! `notes` and `ports` are never inspected (MODEL-2, CTRL-10): execution is identical with
//! them present, absent or arbitrary, so no value there can make a workflow invalid.
//!
//! Null policy: a present `null` is accepted only where the RFC gives it a meaning
//! (`key`, `retry`, `uses.connection`, `variables[].default`) or where the field is
//! opaque (`trigger` excepted, see below). Everywhere else `null` is refused with
//! `invalid_type`, which is what makes every accepted document round-trip byte-for-value
//! through the typed model (see `docs/decisions.md (Foundation: model, validation, planner, CLI)`).

use serde::Deserialize;
use serde::de::value::MapDeserializer;
use serde_json::{Map, Number, Value};

use super::{Edge, Step, Workflow};
mod plain;
use plain::{clean_step, plain_edge, plain_step};

use super::{ValidationCode as Code, ValidationError, pointer_token};
use super::{json_kind, show_value};
use crate::json::{Pointer, ROOT};

/// Deepest container nesting a document may have: the crate's one depth limit
/// (`crate::limits`), so every with value fits what the store can read back.
pub(crate) use crate::limits::MAX_NESTING_DEPTH;

/// Whether the MODEL-5 key grammar applies to this save (see `model::key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyGate {
    /// The key is being assigned for the first time: check the grammar.
    Check,
    /// A key is already stored: never re-check it.
    Skip,
}

/// Every storage-rule problem of `doc`, in the order the walk finds them, or the one
/// SEC-2 depth problem ([`nesting_problem`]'s) when the document nests deeper than
/// [`MAX_NESTING_DEPTH`]. `runnable` applies the PLAN-9 gate.
///
/// The depth bound is checked as the walk goes (D-196): the root's members before any of
/// them is walked, and each step and edge just before its own checks, while its members
/// are in cache. The walk never reads a value it has not checked, and on the first
/// value too deep it stops; the problem then comes from [`nesting_problem`], so its path
/// is the first too-deep place in document order, exactly as a separate pass reports it.
#[cfg(test)] // the engine's test workflows; validation uses `storage_checked_workflow`
pub(crate) fn storage_problems(
    doc: &Value,
    gate: KeyGate,
    runnable: bool,
) -> Result<Vec<ValidationError>, ValidationError> {
    checked(doc, gate, runnable, false).map(|(errors, _)| errors)
}

/// What [`storage_checked_workflow`] found.
pub(crate) enum StorageChecked {
    /// The storage-rule problems (never empty).
    Problems(Vec<ValidationError>),
    /// No problem: the typed workflow, or serde's error if the typed model refuses the
    /// document after all (a bug: the walk checks every field the typed model reads).
    Typed(Box<Result<Workflow, serde_json::Error>>),
}

/// Every storage-rule problem of `doc` (the storage walk, with SEC-2's depth problem
/// alone as the `Err`), and for a document that has none, the typed
/// [`Workflow`] it reads as (D-197): each step and edge is deserialized right after the walk checked it,
/// while its members are still in cache, instead of in a second pass over the whole
/// document.
pub(crate) fn storage_checked_workflow(
    doc: &Value,
    gate: KeyGate,
    runnable: bool,
) -> Result<StorageChecked, ValidationError> {
    let (errors, parts) = checked(doc, gate, runnable, true)?;
    if !errors.is_empty() {
        return Ok(StorageChecked::Problems(errors));
    }
    Ok(StorageChecked::Typed(Box::new(match parts {
        Some(parts) => parts.assemble(doc),
        // The parts were abandoned on a value the typed model refused: the whole
        // document then reports serde's own error.
        None => Workflow::deserialize(doc),
    })))
}

fn checked(
    doc: &Value,
    gate: KeyGate,
    runnable: bool,
    typed: bool,
) -> Result<(Vec<ValidationError>, Option<Parts>), ValidationError> {
    let mut walk = Walk {
        errors: Vec::new(),
        gate,
        runnable,
        too_deep: false,
        parts: typed.then(Parts::default),
    };
    walk.workflow(doc);
    if walk.too_deep {
        // `nests_within` and `nesting_problem` measure the same levels: a `None` here is a
        // bug, still reported as the document's depth problem, never as success.
        return Err(nesting_problem(doc).unwrap_or_else(|| too_deep(String::new())));
    }
    let parts = walk.parts.filter(|_| walk.errors.is_empty());
    Ok((walk.errors, parts))
}

/// The typed steps and edges of a document so far without problems, deserialized as the
/// walk checks them (D-197).
#[derive(Default)]
struct Parts {
    steps: Vec<Step>,
    edges: Vec<Edge>,
}

/// An empty array: what the rest of the root reads in place of the steps and edges
/// [`Parts`] already holds.
static NO_ELEMENTS: Value = Value::Array(Vec::new());

impl Parts {
    /// Reserve room for `n` elements of `T` once, as `serde_util::sized_vec` does.
    fn reserve<T>(v: &mut Vec<T>, n: usize) {
        v.reserve_exact(super::serde_util::reserved_len::<T>(n));
    }

    /// The typed workflow: the root's other members deserialized as the derive reads them
    /// (with `steps` and `edges` as empty arrays), then these steps and edges put in their
    /// place. `edges` stays absent when the document has none.
    fn assemble(self, doc: &Value) -> Result<Workflow, serde_json::Error> {
        let Some(root) = doc.as_object() else {
            return Workflow::deserialize(doc);
        };
        let rest = root.iter().map(|(name, v)| match name.as_str() {
            "steps" | "edges" => (name.as_str(), &NO_ELEMENTS),
            _ => (name.as_str(), v),
        });
        let mut workflow =
            Workflow::deserialize(MapDeserializer::<_, serde_json::Error>::new(rest))?;
        workflow.steps = self.steps;
        if workflow.edges.is_some() {
            workflow.edges = Some(self.edges);
        }
        Ok(workflow)
    }
}

/// Whether `v` nests at most `levels` containers deep (a scalar is 0 levels, `[]` one,
/// `[[1]]` two): [`nesting_problem`]'s measure, which allows a document
/// [`MAX_NESTING_DEPTH`] levels. Recursion is bounded by `levels`.
fn nests_within(v: &Value, levels: usize) -> bool {
    // A scalar member is decided where it is met, without a call of its own: most members
    // of a step or an edge are scalars (D-199).
    let within = |x: &Value| match x {
        Value::Array(_) | Value::Object(_) => nests_within(x, levels - 1),
        _ => true,
    };
    match v {
        Value::Array(items) => levels > 0 && items.iter().all(within),
        Value::Object(members) => levels > 0 && members.values().all(within),
        _ => true,
    }
}

/// `obj[name]`. The objects walked here are small (a step or an edge has a handful of
/// members), so a scan that compares lengths first beats hashing `name` with the map's
/// SipHash; a large object still takes the map's own look-up.
fn field<'v>(obj: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    if obj.len() <= 8 {
        obj.iter()
            .find_map(|(k, v)| same_short(k.as_bytes(), name.as_bytes()).then_some(v))
    } else {
        obj.get(name)
    }
}

/// `a == b` for a member name against a field name, as a byte loop: both are a few bytes
/// long, and `==` on slices calls `memcmp` for every pair of equal length (D-196).
fn same_short(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Where the walk is in the document: a JSON Pointer written out only when a problem
/// names it (D-330). A clean step or edge costs no path at all, and each check runs once.
type Path<'a> = Pointer<'a>;

/// The one-pass collector.
struct Walk {
    errors: Vec<ValidationError>,
    gate: KeyGate,
    runnable: bool,
    /// Some value nests deeper than the bound: the walk stopped before reading it.
    too_deep: bool,
    /// The typed steps and edges, while the walk builds them and has found no problem.
    parts: Option<Parts>,
}

impl Walk {
    fn push(&mut self, code: Code, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ValidationError::new(code, path, message));
    }

    fn missing(&mut self, parent: Path<'_>, name: &str, what: &str) {
        self.push(
            Code::MissingField,
            parent.child(name),
            format!("the required field {name:?} is missing: {what}"),
        );
    }

    /// `v` as an object, or an `invalid_type` problem at `path`.
    fn object<'v>(
        &mut self,
        v: &'v Value,
        path: Path<'_>,
        what: &str,
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(o) => Some(o),
            other => {
                self.push(
                    Code::InvalidType,
                    path.render(),
                    format!("{what} must be an object, not {}", json_kind(other)),
                );
                None
            }
        }
    }

    fn required_string<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        parent: Path<'_>,
        name: &str,
        what: &str,
    ) -> Option<&'v str> {
        match field(obj, name) {
            None => {
                self.missing(parent, name, what);
                None
            }
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.push(
                    Code::InvalidType,
                    parent.child(name),
                    format!("{name} must be a string, not {}", json_kind(other)),
                );
                None
            }
        }
    }

    fn optional_string<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        parent: Path<'_>,
        name: &str,
    ) -> Option<&'v str> {
        match field(obj, name) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.not_null_type(parent, name, "a string", other);
                None
            }
        }
    }

    fn not_null_type(&mut self, parent: Path<'_>, name: &str, want: &str, got: &Value) {
        let hint = if got.is_null() {
            "; omit the field instead of writing null"
        } else {
            ""
        };
        self.push(
            Code::InvalidType,
            parent.child(name),
            format!("{name} must be {want}, not {}{hint}", json_kind(got)),
        );
    }

    /// An optional enum-valued string field: wrong type → `invalid_type`, a string outside
    /// `allowed` → `code`.
    fn optional_enum(
        &mut self,
        obj: &Map<String, Value>,
        parent: Path<'_>,
        name: &str,
        allowed: &[&str],
        code: Code,
    ) {
        let Some(v) = field(obj, name) else { return };
        match v {
            Value::String(s) if allowed.contains(&s.as_str()) => {}
            Value::String(s) => {
                let choices: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
                self.push(
                    code,
                    parent.child(name),
                    format!("{name} must be one of {}, not {s:?}", choices.join(", ")),
                );
            }
            other => self.not_null_type(parent, name, "a string", other),
        }
    }

    fn optional_object(&mut self, obj: &Map<String, Value>, parent: Path<'_>, name: &str) {
        match field(obj, name) {
            None | Some(Value::Object(_)) => {}
            Some(other) => self.not_null_type(parent, name, "an object", other),
        }
    }

    fn workflow(&mut self, doc: &Value) {
        let Some(root) = doc.as_object() else {
            if !nests_within(doc, MAX_NESTING_DEPTH) {
                self.too_deep = true;
                return;
            }
            self.push(
                Code::InvalidType,
                "",
                format!(
                    "a workflow document must be a JSON object, not {}",
                    json_kind(doc)
                ),
            );
            return;
        };
        // SEC-2: every root member but the step and edge arrays, whose elements are each
        // checked before they are walked (the root is level 1, an array's elements level 3).
        let within = |(name, v): (&String, &Value)| match (name.as_str(), v) {
            ("steps" | "edges", Value::Array(_)) => true,
            (_, v) => nests_within(v, MAX_NESTING_DEPTH - 1),
        };
        if !root.iter().all(within) {
            self.too_deep = true;
            return;
        }
        match field(root, "manifestVersion") {
            None => self.missing(ROOT, "manifestVersion", "the workflow model version, \"2\""),
            Some(Value::String(s)) if s == "2" => {}
            Some(Value::String(s)) => self.push(
                Code::InvalidValue,
                "/manifestVersion",
                format!("manifestVersion must be \"2\" for this workflow model, not {s:?}"),
            ),
            Some(other) => self.push(
                Code::InvalidType,
                "/manifestVersion",
                format!(
                    "manifestVersion must be the string \"2\", not {}",
                    json_kind(other)
                ),
            ),
        }
        self.required_string(root, ROOT, "id", "the host-issued workflow id");
        self.required_string(root, ROOT, "name", "the workflow's machine name");
        self.key(root);
        self.optional_string(root, ROOT, "displayName");
        self.optional_string(root, ROOT, "description");
        self.optional_object(root, ROOT, "trigger");
        self.variables(root);
        self.steps(root);
        if self.too_deep {
            return;
        }
        self.edges(root);
        if self.too_deep {
            return;
        }
        // `settings` is declarative only (MODEL-1/2): never inspected.
        self.retry_field(root, ROOT);
        self.workflow_on_error(root);
        self.reroute(root);
    }

    /// MODEL-5: `key` is a string or null; its grammar is checked on first assignment.
    fn key(&mut self, root: &Map<String, Value>) {
        match field(root, "key") {
            None | Some(Value::Null) => {}
            Some(Value::String(key)) => {
                if self.gate == KeyGate::Check {
                    let problems = super::key::key_grammar_problems(key);
                    if !problems.is_empty() {
                        self.push(
                            Code::InvalidKey,
                            "/key",
                            format!(
                                "key {key:?} breaks the key grammar: it {}",
                                problems.join("; it ")
                            ),
                        );
                    }
                }
            }
            Some(other) => self.push(
                Code::InvalidType,
                "/key",
                format!("key must be a string or null, not {}", json_kind(other)),
            ),
        }
    }

    fn variables(&mut self, root: &Map<String, Value>) {
        let Some(v) = field(root, "variables") else {
            return;
        };
        let Value::Array(vars) = v else {
            self.not_null_type(ROOT, "variables", "an array of variables", v);
            return;
        };
        for (i, var) in vars.iter().enumerate() {
            let path = Path::Item(&Path::At("/variables"), i);
            let Some(obj) = self.object(var, path, "a workflow variable") else {
                continue;
            };
            self.required_string(obj, path, "key", "the variable's name, read as vars.<key>");
            self.optional_enum(
                obj,
                path,
                "type",
                &["string", "number", "boolean", "object", "array"],
                Code::InvalidValue,
            );
            match field(obj, "required") {
                None | Some(Value::Bool(_)) => {}
                Some(other) => self.not_null_type(path, "required", "a boolean", other),
            }
            // `default` may be any value, null included.
        }
    }

    fn steps(&mut self, root: &Map<String, Value>) {
        let steps = match field(root, "steps") {
            None => {
                self.missing(ROOT, "steps", "the workflow's steps (an array)");
                return;
            }
            Some(Value::Array(steps)) => steps,
            Some(other) => {
                self.not_null_type(ROOT, "steps", "an array of steps", other);
                return;
            }
        };
        if steps.is_empty() && self.runnable {
            self.push(
                Code::NoSteps,
                "/steps",
                "a runnable workflow needs at least one step; this one has none",
            );
        }
        if let Some(parts) = &mut self.parts {
            Parts::reserve(&mut parts.steps, steps.len());
        }
        for (i, s) in steps.iter().enumerate() {
            if !nests_within(s, MAX_NESTING_DEPTH - 2) {
                self.too_deep = true;
                return;
            }
            // D-371: while nothing is wrong, a step the checks would pass is kept unchecked.
            let runnable = self.runnable;
            if let Some(parts) = self.clean_parts()
                && let Some(step) = clean_step(s, runnable)
            {
                parts.steps.push(step);
                continue;
            }
            self.step(s, Path::Item(&Path::At("/steps"), i));
            self.build(s, plain_step, |parts, step| parts.steps.push(step));
        }
    }

    /// The parts being built, while the walk has found no problem (D-371).
    fn clean_parts(&mut self) -> Option<&mut Parts> {
        if self.errors.is_empty() {
            self.parts.as_mut()
        } else {
            None
        }
    }

    /// Deserialize `v`, just checked, into the parts with `keep` while no problem has been
    /// found; at the first problem (or a value the typed model refuses) stop building.
    /// `plain` builds the common shapes directly; whatever it leaves (`None`) goes through
    /// serde's derive.
    fn build<T: serde::de::DeserializeOwned>(
        &mut self,
        v: &Value,
        plain: impl FnOnce(&Value) -> Option<T>,
        keep: impl FnOnce(&mut Parts, T),
    ) {
        if !self.errors.is_empty() {
            self.parts = None;
        }
        let Some(parts) = &mut self.parts else {
            return;
        };
        match plain(v).map_or_else(|| T::deserialize(v), Ok) {
            Ok(typed) => keep(parts, typed),
            Err(_) => self.parts = None,
        }
    }

    fn step(&mut self, v: &Value, path: Path<'_>) {
        let Some(obj) = self.object(v, path, "a step") else {
            return;
        };
        let id = self.required_string(obj, path, "id", "the step's machine name");
        if let Some(id) = id {
            if id.is_empty() {
                self.push(
                    Code::InvalidValue,
                    path.child("id"),
                    "a step id must not be empty: steps.<id>.output could never address it",
                );
            } else if id.contains('.') {
                // PLAN-8
                self.push(
                    Code::DottedStepId,
                    path.child("id"),
                    format!(
                        "step id {id:?} contains '.'; expressions address outputs as steps.<id>.output and split paths on '.', so this step could never be referenced"
                    ),
                );
            }
        }
        self.uses(obj, path);
        self.optional_object(obj, path, "with");
        self.retry_field(obj, path);
        self.optional_enum(
            obj,
            path,
            "onError",
            &["fail", "continue", "continue-record"],
            Code::InvalidValue,
        );
        self.optional_enum(
            obj,
            path,
            "fanOut",
            &["sequential", "parallel"],
            Code::InvalidValue,
        );
        // `ports`, `notes`, `position`: declarative only (MODEL-2, CTRL-10), never inspected.
    }

    /// `uses`: `{ app, action, connection? }`. A stored draft may leave it, or its app and
    /// action, unset; the runnable gate (PLAN-9) requires them. `{ function }` (function.md,
    /// companion notes §4.3) is accepted as the other arm of the union.
    fn uses(&mut self, step: &Map<String, Value>, path: Path<'_>) {
        let runnable = self.runnable;
        let uses = match field(step, "uses") {
            None => {
                if runnable {
                    self.missing(
                        path,
                        "uses",
                        "a runnable step names its target as uses { app, action }",
                    );
                }
                return;
            }
            Some(Value::Object(uses)) => uses,
            Some(other) => {
                self.not_null_type(
                    path,
                    "uses",
                    "an object { app, action, connection? }",
                    other,
                );
                return;
            }
        };
        self.uses_members(uses, Path::Member(&path, "uses"));
    }

    /// The members of an object `uses` at `path`.
    fn uses_members(&mut self, uses: &Map<String, Value>, path: Path<'_>) {
        let runnable = self.runnable;
        let app = self.optional_string(uses, path, "app");
        let action = self.optional_string(uses, path, "action");
        match field(uses, "connection") {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => self.push(
                Code::InvalidType,
                path.child("connection"),
                format!(
                    "connection must be a string or null, not {}",
                    json_kind(other)
                ),
            ),
        }
        let function = match field(uses, "function") {
            None => None,
            Some(Value::String(f)) => Some(f.as_str()),
            Some(other) => {
                self.not_null_type(path, "function", "a string (a function id)", other);
                return;
            }
        };
        if !runnable {
            return;
        }
        match function {
            Some(_) if app.is_some() || action.is_some() => self.push(
                Code::InvalidValue,
                path.render(),
                "uses names both a function and an app/action; a runnable step names exactly one target",
            ),
            Some("") => self.push(
                Code::InvalidValue,
                path.child("function"),
                "a runnable step's function id must not be empty",
            ),
            Some(_) => {}
            None => {
                for (name, value, what) in [
                    ("app", app, "the app id a runnable step invokes"),
                    ("action", action, "the action key a runnable step invokes"),
                ] {
                    match value {
                        None if field(uses, name).is_none() => self.missing(path, name, what),
                        Some("") => self.push(
                            Code::InvalidValue,
                            path.child(name),
                            format!("a runnable step's uses.{name} must not be empty"),
                        ),
                        _ => {}
                    }
                }
            }
        }
    }

    /// `retry` on a step or the workflow: absent or null means no retry (MODEL-3); any
    /// other problem is `invalid_retry_policy` at the exact field (MODEL-4).
    fn retry_field(&mut self, obj: &Map<String, Value>, parent: Path<'_>) {
        let path = Path::Member(&parent, "retry");
        match field(obj, "retry") {
            None | Some(Value::Null) => {}
            Some(Value::Object(policy)) => self.retry_policy(policy, path),
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.render(),
                format!(
                    "retry must be a RetryPolicy object {{ maxAttempts, backoff?, delayMs? }} or null, not {}",
                    json_kind(other)
                ),
            ),
        }
    }

    fn retry_policy(&mut self, policy: &Map<String, Value>, path: Path<'_>) {
        match field(policy, "maxAttempts") {
            None => self.push(
                Code::InvalidRetryPolicy,
                path.child("maxAttempts"),
                "maxAttempts is required: the total number of attempts including the first (1 = no retry)",
            ),
            Some(Value::Number(n)) if is_integer_at_least_one(n) => {}
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.child("maxAttempts"),
                format!(
                    "maxAttempts must be an integer >= 1 (there is no upper bound), not {}",
                    show_value(other)
                ),
            ),
        }
        match field(policy, "backoff") {
            None => {}
            Some(Value::String(s)) if s == "fixed" || s == "exponential" => {}
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.child("backoff"),
                format!(
                    "backoff must be \"fixed\" or \"exponential\" when present, not {}",
                    show_value(other)
                ),
            ),
        }
        match field(policy, "delayMs") {
            None => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|d| d.is_finite() && d >= 0.0) => {}
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.child("delayMs"),
                format!(
                    "delayMs must be a finite number of milliseconds >= 0 when present, not {}",
                    show_value(other)
                ),
            ),
        }
        // D-32: the two retry extensions the engine honours (issue 10, WOML-10/11).
        match field(policy, super::workflow::EXT_MAX_DELAY_MS) {
            None => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|d| d.is_finite() && d >= 0.0) => {}
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.child(super::workflow::EXT_MAX_DELAY_MS),
                format!(
                    "x-w6w-maxDelayMs must be a finite number of milliseconds >= 0 when present, not {}",
                    show_value(other)
                ),
            ),
        }
        match field(policy, super::workflow::EXT_RETRY_ON) {
            None => {}
            Some(Value::Array(codes)) if codes.iter().all(Value::is_string) => {}
            Some(other) => self.push(
                Code::InvalidRetryPolicy,
                path.child(super::workflow::EXT_RETRY_ON),
                format!(
                    "x-w6w-retryOn must be an array of error codes (strings) when present, not {}",
                    show_value(other)
                ),
            ),
        }
    }

    /// RUNERR: the run-level onError is the narrower CallableOnError.
    fn workflow_on_error(&mut self, root: &Map<String, Value>) {
        if let Some(Value::String(s)) = field(root, "onError")
            && s == "continue-record"
        {
            self.push(
                Code::InvalidValue,
                "/onError",
                "a workflow's onError must be \"fail\" or \"continue\"; \"continue-record\" exists only on steps (a handled run always records its error in stepErrors)",
            );
            return;
        }
        self.optional_enum(
            root,
            ROOT,
            "onError",
            &["fail", "continue"],
            Code::InvalidValue,
        );
    }

    /// RUNERR-7: `reroute` is `{ target: Callable, with? }`.
    fn reroute(&mut self, root: &Map<String, Value>) {
        let Some(v) = field(root, "reroute") else {
            return;
        };
        let Value::Object(reroute) = v else {
            self.not_null_type(ROOT, "reroute", "an object { target, with? }", v);
            return;
        };
        let path = Path::At("/reroute");
        match field(reroute, "target") {
            None => self.missing(
                path,
                "target",
                "the callable to dispatch, { kind: \"workflow\", workflow } or { kind: \"function\", function }",
            ),
            Some(target) => {
                let target_path = Path::Member(&path, "target");
                if let Some(target) = self.object(target, target_path, "reroute.target") {
                    self.callable(target, target_path);
                }
            }
        }
        self.optional_object(reroute, path, "with");
    }

    /// `Callable = { kind: "function", function } | { kind: "workflow", workflow }`.
    fn callable(&mut self, target: &Map<String, Value>, path: Path<'_>) {
        let Some(kind_name) =
            self.required_string(target, path, "kind", "\"workflow\" or \"function\"")
        else {
            return;
        };
        match kind_name {
            "workflow" | "function" => {
                let what = format!("the id of the {kind_name} to dispatch");
                self.required_string(target, path, kind_name, &what);
            }
            other => self.push(
                Code::InvalidValue,
                path.child("kind"),
                format!("kind must be \"workflow\" or \"function\", not {other:?}"),
            ),
        }
    }

    fn edges(&mut self, root: &Map<String, Value>) {
        let Some(v) = field(root, "edges") else {
            return;
        };
        let Value::Array(edges) = v else {
            self.not_null_type(ROOT, "edges", "an array of edges", v);
            return;
        };
        if let Some(parts) = &mut self.parts {
            Parts::reserve(&mut parts.edges, edges.len());
        }
        for (i, edge) in edges.iter().enumerate() {
            if !nests_within(edge, MAX_NESTING_DEPTH - 2) {
                self.too_deep = true;
                return;
            }
            // D-371: likewise an edge `plain_edge` builds, which the edge checks pass.
            if let Some(parts) = self.clean_parts()
                && let Some(edge) = plain_edge(edge)
            {
                parts.edges.push(edge);
                continue;
            }
            self.edge(edge, Path::Item(&Path::At("/edges"), i));
            self.build(edge, plain_edge, |parts, edge| parts.edges.push(edge));
        }
    }

    fn edge(&mut self, v: &Value, path: Path<'_>) {
        let Some(obj) = self.object(v, path, "an edge") else {
            return;
        };
        self.required_string(obj, path, "from", "the id of the step the edge leaves");
        self.required_string(obj, path, "to", "the id of the step the edge enters");
        // PLAN-6: only the two-member enum; an omitted `when` means "success".
        match field(obj, "when") {
            None => {}
            Some(Value::String(s)) if s == "success" || s == "error" => {}
            Some(other) => self.push(
                Code::InvalidEdgeWhen,
                path.child("when"),
                format!(
                    "when must be \"success\" or \"error\" (omit it for \"success\"), not {}",
                    show_value(other)
                ),
            ),
        }
    }
}

/// MODEL-3: an integer ≥ 1, however it is spelled (`3`, `3.0`, `1e300`).
fn is_integer_at_least_one(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        return u >= 1;
    }
    if n.is_i64() {
        return false; // negative
    }
    n.as_f64()
        .is_some_and(|f| f.is_finite() && f >= 1.0 && f.fract() == 0.0)
}

/// SEC-2's one problem: the document nests too deep at `path`.
fn too_deep(path: String) -> ValidationError {
    ValidationError::new(
        Code::NestingTooDeep,
        path,
        format!(
            "the document nests arrays/objects more than {MAX_NESTING_DEPTH} levels deep here; flatten it"
        ),
    )
}

/// SEC-2: the first place, in document order, where `doc` nests deeper than
/// [`MAX_NESTING_DEPTH`]; documents that do are refused before anything recursive (serde's
/// `from_value`, `Clone`, `Display`) touches them. Iterative. The storage walk checks
/// the same bound as it goes and calls this only for a document that breaks it.
pub(crate) fn nesting_problem(doc: &Value) -> Option<ValidationError> {
    enum Token<'a> {
        Index(usize),
        Key(&'a str),
    }
    enum Children<'a> {
        Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
        Object(serde_json::map::Iter<'a>),
    }
    fn children(v: &Value) -> Option<Children<'_>> {
        match v {
            Value::Array(a) => Some(Children::Array(a.iter().enumerate())),
            Value::Object(o) => Some(Children::Object(o.iter())),
            _ => None,
        }
    }
    // Each frame: the container's remaining children and the token of the one below it.
    let mut frames: Vec<(Children<'_>, Token<'_>)> = Vec::new();
    frames.push((children(doc)?, Token::Index(0)));
    while let Some((iter, token)) = frames.last_mut() {
        let next = match iter {
            Children::Array(it) => it.next().map(|(i, v)| (Token::Index(i), v)),
            Children::Object(it) => it.next().map(|(k, v)| (Token::Key(k.as_str()), v)),
        };
        let Some((t, v)) = next else {
            frames.pop();
            continue;
        };
        *token = t;
        if let Some(c) = children(v) {
            if frames.len() >= MAX_NESTING_DEPTH {
                let path: String = frames
                    .iter()
                    .map(|(_, t)| match t {
                        Token::Index(i) => format!("/{i}"),
                        Token::Key(k) => format!("/{}", pointer_token(k)),
                    })
                    .collect();
                return Some(too_deep(path));
            }
            frames.push((c, Token::Index(0)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// `levels` containers, alternating arrays and objects, around a scalar.
    fn nest(levels: usize) -> Value {
        let mut v = json!(1);
        for k in 0..levels {
            v = if k % 2 == 0 {
                Value::Array(vec![v])
            } else {
                json!({ "k": v })
            };
        }
        v
    }

    /// A small valid workflow with `value` placed at `place` (0..6: a root member before
    /// the steps, a step's `with`, a step member, an edge member, a root member after the
    /// edges, the whole `steps`), nested `levels` deep.
    fn doc_with(place: u8, levels: usize) -> Value {
        let mut doc = json!({
            "manifestVersion": "2", "id": "wf", "name": "wf",
            "steps": [
                {"id": "a", "uses": {"app": "x", "action": "y"}},
                {"id": "b", "uses": {"app": "x", "action": "y"}}
            ],
            "edges": [{"from": "a", "to": "b"}],
            "settings": {}
        });
        let v = nest(levels);
        match place {
            0 => doc["trigger"] = v,
            1 => doc["steps"][1]["with"] = json!({ "x": v }),
            2 => doc["steps"][0]["notes"] = v,
            3 => doc["edges"][0]["x"] = v,
            4 => doc["settings"] = json!({ "x": v }),
            _ => doc["steps"] = v,
        }
        doc
    }

    fn walk(doc: &Value) -> Result<Vec<ValidationError>, ValidationError> {
        storage_problems(doc, KeyGate::Check, false)
    }

    /// A member's name and how to make its value.
    type Member = (&'static str, fn() -> Value);

    /// One member a valid step, edge, `uses` or root may carry, or none: each optional
    /// field in the forms the typed model distinguishes (absent, null where allowed, a
    /// value), and unknown members the model keeps in `extra`.
    fn member(choices: &'static [Member]) -> impl Strategy<Value = Option<(&'static str, Value)>> {
        proptest::option::of(proptest::sample::select(choices).prop_map(|(k, v)| (k, v())))
    }

    const STEP_MEMBERS: &[Member] = &[
        ("with", || json!({"q": {"$": "vars.v"}, "n": [1, null]})),
        ("retry", || Value::Null),
        (
            "retry",
            || json!({"maxAttempts": 3, "backoff": "fixed", "x-w6w-retryOn": ["e"]}),
        ),
        ("onError", || json!("continue-record")),
        ("fanOut", || json!("parallel")),
        ("ports", || Value::Null),
        ("notes", || json!({"n": 1})),
        ("position", || json!([1, 2])),
        ("custom", || json!("kept")),
        ("x-vendor", || json!({"a": [true]})),
    ];
    const USES_MEMBERS: &[Member] = &[
        ("connection", || Value::Null),
        ("connection", || json!("c1")),
        ("z", || json!(0)),
    ];
    const EDGE_MEMBERS: &[Member] = &[
        ("when", || json!("error")),
        ("when", || json!("success")),
        ("label", || json!("kept")),
        ("x-edge", || json!({"deep": [1, {"k": null}]})),
    ];
    const ROOT_MEMBERS: &[Member] = &[
        ("key", || Value::Null),
        ("trigger", || json!({"type": "manual"})),
        ("settings", || json!("arbitrary")),
        ("retry", || json!({"maxAttempts": 2})),
        ("x-root", || json!({"keep": [1, 2.5]})),
        ("variables", || json!([{"key": "v", "default": null}])),
    ];

    /// A drawn member, if any.
    type Drawn = Option<(&'static str, Value)>;

    /// Step `i` of a drawn document: its id, an optional `uses` with one more member, two
    /// more members.
    fn step_doc((i, (a, b, uses)): (usize, (Drawn, Drawn, Option<Drawn>))) -> Value {
        let mut step = Map::new();
        step.insert("id".into(), json!(format!("s{i}")));
        if let Some(extra) = uses {
            let mut u = Map::new();
            u.insert("app".into(), json!("app"));
            u.insert("action".into(), json!("act"));
            if let Some((k, v)) = extra {
                u.insert(k.into(), v);
            }
            step.insert("uses".into(), Value::Object(u));
        }
        for (k, v) in [a, b].into_iter().flatten() {
            step.insert(k.into(), v);
        }
        Value::Object(step)
    }

    /// An edge of a drawn document over `n` steps, with its extra members before or after
    /// the ends, so their order in the built edge is checked too.
    fn edge_doc(
        n: usize,
        (from, to, first, second, ends_first): (usize, usize, Drawn, Drawn, bool),
    ) -> Value {
        let mut e = Map::new();
        let ends = [
            ("from", json!(format!("s{}", from % n))),
            ("to", json!(format!("s{}", to % n))),
        ];
        let members = [first, second].into_iter().flatten();
        if ends_first {
            e.extend(ends.into_iter().chain(members).map(|(k, v)| (k.into(), v)));
        } else {
            e.extend(members.chain(ends).map(|(k, v)| (k.into(), v)));
        }
        Value::Object(e)
    }

    /// A valid document: `n` steps with members drawn from the lists above, edges between
    /// them (or no `edges` member at all), root members before and after the arrays.
    fn valid_document() -> impl Strategy<Value = Value> {
        let step = (
            member(STEP_MEMBERS),
            member(STEP_MEMBERS),
            proptest::option::of(member(USES_MEMBERS)),
        );
        let edge = (
            0usize..4,
            0usize..4,
            member(EDGE_MEMBERS),
            member(EDGE_MEMBERS),
            any::<bool>(),
        );
        (
            proptest::collection::vec(step, 1..5),
            proptest::option::of(proptest::collection::vec(edge, 0..5)),
            member(ROOT_MEMBERS),
            member(ROOT_MEMBERS),
        )
            .prop_map(|(steps, edges, before, after)| {
                let mut root = Map::new();
                root.insert("manifestVersion".into(), json!("2"));
                if let Some((k, v)) = before {
                    root.insert(k.into(), v);
                }
                root.insert("id".into(), json!("wf"));
                root.insert("name".into(), json!("wf"));
                let n = steps.len();
                let steps = steps.into_iter().enumerate().map(step_doc).collect();
                root.insert("steps".into(), Value::Array(steps));
                if let Some(edges) = edges {
                    let edges = edges.into_iter().map(|e| edge_doc(n, e)).collect();
                    root.insert("edges".into(), Value::Array(edges));
                }
                if let Some((k, v)) = after {
                    root.insert(k.into(), v);
                }
                Value::Object(root)
            })
    }

    proptest! {
        /// D-197: the workflow built as the walk goes is the one serde's derive reads from
        /// the whole document, and it writes the document back exactly.
        #[test]
        fn the_workflow_built_as_the_walk_goes_is_the_derived_one(doc in valid_document()) {
            let built = match storage_checked_workflow(&doc, KeyGate::Check, false) {
                Ok(StorageChecked::Typed(typed)) if typed.is_ok() => (*typed).map_err(|e| TestCaseError::fail(e.to_string()))?,
                Ok(StorageChecked::Typed(typed)) => return Err(TestCaseError::fail(format!("refused: {typed:?}"))),
                Ok(StorageChecked::Problems(p)) => return Err(TestCaseError::fail(format!("problems: {p:?}"))),
                Err(e) => return Err(TestCaseError::fail(format!("too deep: {e:?}"))),
            };
            let derived: Workflow = serde_json::from_value(doc.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&built, &derived);
            prop_assert_eq!(serde_json::to_value(&built).map_err(|e| TestCaseError::fail(e.to_string()))?, doc);
            // A map compares equal in any member order; the text does not (the extra
            // members of an edge keep the document's order).
            let text = |w: &Workflow| serde_json::to_string(w).map_err(|e| TestCaseError::fail(e.to_string()));
            prop_assert_eq!(text(&built)?, text(&derived)?);
        }

        /// The walk's own depth check refuses exactly the documents the separate pass
        /// does, with that pass's problem (its first too-deep place in document order).
        #[test]
        fn the_walk_refuses_exactly_what_nesting_problem_refuses(
            place in 0u8..6,
            levels in (MAX_NESTING_DEPTH - 6)..(MAX_NESTING_DEPTH + 3),
            second in proptest::option::of((0u8..6, (MAX_NESTING_DEPTH - 3)..(MAX_NESTING_DEPTH + 3))),
        ) {
            let mut doc = doc_with(place, levels);
            if let Some((p, l)) = second {
                // Two deep places: the problem must name the first in document order.
                let other = doc_with(p, l);
                if let (Value::Object(d), Value::Object(o)) = (&mut doc, other) {
                    for (k, v) in o {
                        if !d.contains_key(&k) || k != "steps" || p == 5 {
                            d.insert(k, v);
                        }
                    }
                }
            }
            let separate = nesting_problem(&doc);
            match walk(&doc) {
                Err(problem) => prop_assert_eq!(Some(problem), separate),
                Ok(_) => prop_assert!(separate.is_none(), "walk accepted {:?}", separate),
            }
        }
    }

    /// A flaw one step or edge of a drawn document may get: a member set to a value the
    /// checks refuse (`Some`), or removed (`None`).
    type Flaw = (&'static str, Option<fn() -> Value>);

    const STEP_FLAWS: &[Flaw] = &[
        ("id", Some(|| json!(""))),
        ("id", Some(|| json!("a.b"))),
        ("id", Some(|| json!(7))),
        ("id", None),
        ("uses", Some(|| json!({"app": ""}))),
        ("uses", Some(|| json!({"app": "a"}))),
        ("uses", Some(|| json!({"app": "a", "action": ""}))),
        (
            "uses",
            Some(|| json!({"app": "a", "action": "b", "function": "f"})),
        ),
        ("uses", None),
        ("onError", Some(|| json!("nope"))),
        ("with", Some(|| json!([]))),
    ];
    const EDGE_FLAWS: &[Flaw] = &[
        ("when", Some(|| json!("maybe"))),
        ("from", Some(|| json!(1))),
        ("to", None),
        ("from", Some(|| json!("nowhere"))),
    ];

    /// `flaw` applied to element `at` (modulo its length) of the array `name` of `doc`.
    fn flawed(doc: &mut Value, name: &str, at: usize, (member, value): Flaw) {
        if let Some(Value::Array(items)) = doc.get_mut(name) {
            let n = items.len();
            if let Some(Value::Object(element)) = items.get_mut(at % n.max(1)) {
                match value {
                    Some(value) => {
                        element.insert(member.into(), value());
                    }
                    None => {
                        element.shift_remove(member);
                    }
                }
            }
        }
    }

    proptest! {
        /// D-371: keeping clean elements unchecked while nothing is wrong finds exactly the
        /// problems the walk that checks every element finds (the walk that builds no
        /// typed workflow takes no fast path), wherever a flaw sits and with none.
        #[test]
        fn the_unchecked_clean_elements_hide_no_problem(
            doc in valid_document(),
            step_flaw in proptest::option::of((any::<usize>(), proptest::sample::select(STEP_FLAWS))),
            edge_flaw in proptest::option::of((any::<usize>(), proptest::sample::select(EDGE_FLAWS))),
            runnable in any::<bool>(),
        ) {
            let mut doc = doc;
            if let Some((at, flaw)) = step_flaw {
                flawed(&mut doc, "steps", at, flaw);
            }
            if let Some((at, flaw)) = edge_flaw {
                flawed(&mut doc, "edges", at, flaw);
            }
            let problems = |typed| checked(&doc, KeyGate::Check, runnable, typed).map(|(errors, _)| errors);
            prop_assert_eq!(problems(true), problems(false));
        }
    }

    #[test]
    fn a_problem_after_the_arrays_drops_the_parts_built_before_it() {
        let mut doc = doc_with(1, 1);
        assert!(matches!(
            storage_checked_workflow(&doc, KeyGate::Check, false),
            Ok(StorageChecked::Typed(typed)) if typed.is_ok()
        ));
        // The root's retry is walked after the steps and edges were built.
        doc["retry"] = json!({"maxAttempts": 0});
        match storage_checked_workflow(&doc, KeyGate::Check, false) {
            Ok(StorageChecked::Problems(p)) => {
                assert_eq!(p.len(), 1);
                assert_eq!(p[0].path, "/retry/maxAttempts");
            }
            _ => panic!("a bad root retry is a problem"),
        }
    }

    #[test]
    fn a_root_that_is_not_an_object_is_checked_for_depth_too() {
        let deep = nest(MAX_NESTING_DEPTH + 1);
        assert_eq!(walk(&deep).err(), nesting_problem(&deep));
        assert!(walk(&deep).is_err());
        // Exactly at the bound, with an array at the root.
        let shallow = Value::Array(vec![nest(MAX_NESTING_DEPTH - 1)]);
        let problems = walk(&shallow).expect("within the bound");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].code, Code::InvalidType);
    }

    #[test]
    fn paths_and_same_short_agree_with_fmt_and_eq() {
        for index in [0, 7, 10, 99_999, usize::MAX] {
            let step = Path::Item(&Path::At("/steps"), index);
            assert_eq!(step.render(), format!("/steps/{index}"));
            let uses = Path::Member(&step, "uses");
            assert_eq!(uses.child("a/b~c"), format!("/steps/{index}/uses/a~1b~0c"));
        }
        assert_eq!(ROOT.child("id"), "/id");
        assert_eq!(
            Path::Member(&Path::At("/reroute"), "target").child("kind"),
            "/reroute/target/kind"
        );
        for (a, b) in [
            ("id", "id"),
            ("id", "in"),
            ("to", "toe"),
            ("", ""),
            ("é", "e\u{301}"),
        ] {
            assert_eq!(
                same_short(a.as_bytes(), b.as_bytes()),
                a == b,
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn nests_within_counts_containers() {
        assert!(nests_within(&json!(1), 0));
        assert!(!nests_within(&json!([]), 0));
        assert!(nests_within(&json!([]), 1));
        assert!(nests_within(&json!({"a": [1]}), 2));
        assert!(!nests_within(&json!({"a": [1]}), 1));
        assert!(!nests_within(&json!([1, {"b": {}}]), 2));
    }
}
