//! The run scope (EXPR-4, TPL-7) and its secrets-free generic data root (EXPR-5).
//!
//! `RunScope` holds the eight closed roots. Expressions never see a `RunScope`: they see a
//! [`DataRoot`], a view that has no field for `secrets` at all, so no expression path can
//! reach a secret by construction. Only [`RunScope::secret`] reads secrets, and only a
//! secret part / `{{ secrets.X }}` marker calls it.

use std::cell::Cell;

use serde_json::{Map, Value};

/// The eight closed run-scope root names (TPL-7), in the RFC's order.
pub const ROOTS: [&str; 8] = [
    "vars",
    "steps",
    "trigger",
    "secrets",
    "documents",
    "inputs",
    "output",
    "foreach",
];

/// Whether `name` is one of the eight closed roots (TPL-7).
pub fn is_root(name: &str) -> bool {
    ROOTS.contains(&name)
}

/// The run scope every evaluation of a run sees.
#[derive(Debug, Clone, PartialEq)]
pub struct RunScope {
    /// `vars.<key>`: the run's resolved variables (a JSON object).
    pub vars: Value,
    /// `steps.<id>` = `{ output, meta? }` for steps that published into scope (an object).
    pub steps: Value,
    /// `{ type, event? }`.
    pub trigger: Value,
    /// Host-injected plaintext by secret name. Never on the generic data root.
    secrets: Map<String, Value>,
    /// `documents.<key>` (an object).
    pub documents: Value,
    /// Callable inputs (function/reroute passes); absent in an ordinary run.
    pub inputs: Option<Value>,
    /// A bound action's raw output (outputMap passes).
    pub output: Option<Value>,
    /// `{ item, index }` inside a foreach body.
    pub foreach: Option<Value>,
    /// Host-populated keys beyond the eight roots: reachable by `$`/`$expr` paths, but
    /// never roots for template anchoring (TPL-7).
    pub extra: Map<String, Value>,
    /// SEC-1 taint: dotted paths of the generic data root whose values are secret-derived
    /// (a step output computed from a secret, a foreach item drawn from one). A read that
    /// touches one — the path itself, inside it, or a prefix of it — marks `touched`.
    tainted: Vec<Vec<String>>,
    /// Set by any read of a tainted path since the last [`RunScope::take_touched`].
    touched: Cell<bool>,
}

impl RunScope {
    /// An empty scope: empty `vars`/`steps`/`documents`, `trigger` null, no secrets.
    pub fn new() -> RunScope {
        RunScope {
            vars: Value::Object(Map::new()),
            steps: Value::Object(Map::new()),
            trigger: Value::Null,
            secrets: Map::new(),
            documents: Value::Object(Map::new()),
            inputs: None,
            output: None,
            foreach: None,
            extra: Map::new(),
            tainted: Vec::new(),
            touched: Cell::new(false),
        }
    }

    /// SEC-1: mark the value at dotted `path` (e.g. `["steps", "a"]`) secret-derived.
    pub fn taint(&mut self, path: &[&str]) {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        if !self.tainted.contains(&path) {
            self.tainted.push(path);
        }
    }

    /// Whether the value at `path` (or anything inside or around it) is secret-derived.
    pub fn is_tainted<S: AsRef<str>>(&self, path: &[S]) -> bool {
        self.tainted.iter().any(|t| {
            t.iter()
                .zip(path.iter())
                .all(|(a, b)| a.as_str() == b.as_ref())
        })
    }

    /// Whether any read since the last call touched a secret-derived value; resets.
    pub fn take_touched(&self) -> bool {
        self.touched.replace(false)
    }

    fn note_read<S: AsRef<str>>(&self, path: &[S]) {
        if !self.tainted.is_empty() && (path.is_empty() || self.is_tainted(path)) {
            self.touched.set(true);
        }
    }

    /// Publish a step's scope entry `steps.<id> = { output, meta? }` (META-4: callers
    /// pass `meta` only for succeeded app steps).
    pub fn publish_step(&mut self, step_id: &str, output: Value, meta: Option<Value>) {
        let mut entry = Map::new();
        entry.insert("output".into(), output);
        if let Some(meta) = meta {
            entry.insert("meta".into(), meta);
        }
        if !self.steps.is_object() {
            self.steps = Value::Object(Map::new());
        }
        if let Value::Object(steps) = &mut self.steps {
            steps.insert(step_id.to_owned(), Value::Object(entry));
        }
    }

    /// Remove a step's scope entry (a run-level retry starts the graph again).
    pub fn unpublish_step(&mut self, step_id: &str) {
        if let Value::Object(steps) = &mut self.steps {
            steps.shift_remove(step_id);
        }
        self.tainted
            .retain(|t| !(t.len() == 2 && t[0] == "steps" && t[1] == step_id));
    }

    /// Build a scope from a JSON object with any of the eight roots (and other keys, kept
    /// as `extra`). Non-object input yields an empty scope.
    pub fn from_json(value: &Value) -> RunScope {
        let mut scope = RunScope::new();
        let Some(obj) = value.as_object() else {
            return scope;
        };
        for (k, v) in obj {
            match k.as_str() {
                "vars" => scope.vars = object_or_empty(v),
                "steps" => scope.steps = object_or_empty(v),
                "trigger" => scope.trigger = v.clone(),
                "secrets" => scope.secrets = v.as_object().cloned().unwrap_or_default(),
                "documents" => scope.documents = object_or_empty(v),
                "inputs" => scope.inputs = Some(v.clone()),
                "output" => scope.output = Some(v.clone()),
                "foreach" => scope.foreach = Some(v.clone()),
                _ => {
                    scope.extra.insert(k.clone(), v.clone());
                }
            }
        }
        scope
    }

    /// Replace the secrets (host-injected from its vault before the run).
    pub fn with_secrets(mut self, secrets: Map<String, Value>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Set the secrets in place.
    pub fn set_secrets(&mut self, secrets: Map<String, Value>) {
        self.secrets = secrets;
    }

    /// ENV-3 / TPL-6: the one read of secret plaintext. `None` when no such secret.
    pub fn secret(&self, name: &str) -> Option<&Value> {
        self.secrets.get(name)
    }

    /// Whether any secrets are present (used by redaction bookkeeping).
    pub fn has_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Every secret plaintext, for scrubbing reports (SEC-1). Not an expression surface.
    pub fn secret_values(&self) -> impl Iterator<Item = &Value> {
        self.secrets.values()
    }

    /// EXPR-5: the generic data root — this scope with `secrets` removed.
    pub fn data_root(&self) -> DataRoot<'_> {
        DataRoot { scope: self }
    }
}

/// The generic data root: every root except `secrets` (EXPR-5). It holds a reference to
/// the scope but exposes no way to read `secrets`; `{"$": "secrets.X"}` is an unknown path.
#[derive(Debug, Clone, Copy)]
pub struct DataRoot<'a> {
    scope: &'a RunScope,
}

impl<'a> DataRoot<'a> {
    /// SEC-1: record that the full dotted path `segments` was read (taint tracking).
    pub fn note_read<S: AsRef<str>>(&self, segments: &[S]) {
        self.scope.note_read(segments);
    }

    /// The value of a top-level key of the data root, `None` when absent.
    pub fn root(&self, name: &str) -> Option<&'a Value> {
        let s = self.scope;
        match name {
            "vars" => Some(&s.vars),
            "steps" => Some(&s.steps),
            "trigger" => Some(&s.trigger),
            "documents" => Some(&s.documents),
            "inputs" => s.inputs.as_ref(),
            "output" => s.output.as_ref(),
            "foreach" => s.foreach.as_ref(),
            "secrets" => None,
            other => s.extra.get(other),
        }
    }

    /// Look up a dotted path (EXPR-1): dots split keys, numeric segments index arrays,
    /// anything missing is `None`. An empty path is `None` here; callers that mean "the
    /// whole root" (JSONLogic `{"var": ""}`) use [`DataRoot::to_value`].
    pub fn lookup(&self, path: &str) -> Option<&'a Value> {
        if path.is_empty() {
            return None;
        }
        self.note_read(&path.split('.').collect::<Vec<_>>());
        let mut segments = path.split('.');
        let first = segments.next()?;
        let mut current = self.root(first)?;
        for seg in segments {
            current = step_into(current, seg)?;
        }
        Some(current)
    }

    /// Materialise the whole data root as one JSON object (secrets excluded). O(scope).
    pub fn to_value(&self) -> Value {
        let s = self.scope;
        s.note_read::<&str>(&[]);
        let mut m = Map::new();
        for (k, v) in &s.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("vars".into(), s.vars.clone());
        m.insert("steps".into(), s.steps.clone());
        m.insert("trigger".into(), s.trigger.clone());
        m.insert("documents".into(), s.documents.clone());
        if let Some(v) = &s.inputs {
            m.insert("inputs".into(), v.clone());
        }
        if let Some(v) = &s.output {
            m.insert("output".into(), v.clone());
        }
        if let Some(v) = &s.foreach {
            m.insert("foreach".into(), v.clone());
        }
        // A host `extra` key named "secrets" must not smuggle data back in.
        m.remove("secrets");
        #[cfg(w6w_mutants)] // EXPR-5 mutant (mutant build only): secrets on the data root
        if crate::mutants::active(crate::mutants::Mutant::SecretsOnDataRoot) {
            m.insert("secrets".into(), Value::Object(s.secrets.clone()));
        }
        Value::Object(m)
    }
}

/// Index one level into a value by a path segment: object key, or canonical array index
/// (`"0"`, `"12"` — not `"01"` or `"+1"`, which JS reads as absent properties).
///
/// This is the plain JSON step. Expression paths (`$`, `var`, var parts) additionally read
/// `length` of arrays and strings and index strings, as the reference library does; see
/// `docs/decisions.md (Expressions)`.
pub fn step_into<'v>(value: &'v Value, segment: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => super::value::object_get(map, segment),
        Value::Array(items) => super::value::canonical_index(segment).and_then(|i| items.get(i)),
        _ => None,
    }
}

impl Default for RunScope {
    fn default() -> Self {
        RunScope::new()
    }
}

fn object_or_empty(v: &Value) -> Value {
    if v.is_object() {
        v.clone()
    } else {
        Value::Object(Map::new())
    }
}
