//! The run scope (EXPR-4, TPL-7), split in two so the secrets barrier (EXPR-5) holds by
//! construction.
//!
//! A [`RunScope`] is two values side by side: a [`DataScope`] (the seven data roots, host
//! extras and the SEC-1 taint marks) and the run's [`Secrets`]. Expressions never see a
//! `RunScope`: JSONLogic, `$` paths, var parts and render parts read a [`DataRoot`], which
//! holds a reference to the `DataScope` and nothing else, and a `DataScope` has no field,
//! method or reference from which a secret can be reached. Only the secret arm of the
//! resolver (`compile.rs`, a secret part or `{{ secrets.X }}`) is handed the `Secrets`.
//!
//! The compiler checks the barrier: with a run scope the secret read compiles,
//! ```
//! use w6w_sim::__internals::expr::RunScope;
//! fn read<'a>(scope: &'a RunScope) -> Option<&'a serde_json::Value> {
//!     scope.secrets().get("K")
//! }
//! ```
//! and the same read from a data root — what every expression receives — does not
//! (`E0599`: no method `secrets` on `DataRoot`),
//! ```compile_fail,E0599
//! use w6w_sim::__internals::expr::DataRoot;
//! fn read<'a>(root: DataRoot<'a>) -> Option<&'a serde_json::Value> {
//!     root.secrets().get("K")
//! }
//! ```
//! nor from the data scope behind it (`E0609`: no field `secrets` on `DataScope`).
//! ```compile_fail,E0609
//! use w6w_sim::__internals::expr::{DataScope, Secrets};
//! fn read(data: &DataScope) -> &Secrets {
//!     &data.secrets
//! }
//! ```
//! The property `tests/properties/secret_props.rs::no_expression_over_the_data_root_yields_a_secret`
//! checks the same barrier by running random expressions against random secrets.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::steps::{StepsLayer, entry_value};
use super::taints::Taints;
use crate::json::JsonText;

/// The eight closed run-scope root names (TPL-7), in the RFC's order.
pub(crate) const ROOTS: [&str; 8] = [
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
pub(crate) fn is_root(name: &str) -> bool {
    ROOTS.contains(&name)
}

/// The run's named secrets (ENV-3, TPL-6): host-injected plaintext by name. Held by a
/// [`RunScope`] beside its [`DataScope`], never inside it. `Debug` shows names only.
#[derive(Clone, Default, PartialEq)]
pub struct Secrets {
    by_name: Map<String, Value>,
}

impl Secrets {
    /// Secrets from a name → plaintext map.
    pub fn new(by_name: Map<String, Value>) -> Secrets {
        Secrets { by_name }
    }

    /// The plaintext of the secret `name`; `None` when the run has no such secret.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name)
    }

    /// Whether there are no secrets.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Every plaintext, for scrubbing (SEC-1). Not an expression surface.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.by_name.values()
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.by_name.keys()).finish()
    }
}

/// Everything of the run scope except `secrets`: the data roots, host extras and the SEC-1
/// taint marks. What a [`DataRoot`] reads.
#[derive(Debug, Clone, PartialEq)]
pub struct DataScope {
    /// `vars.<key>`: the run's resolved variables (a JSON object).
    ///
    /// The four roots that grow with a run or its inputs are shared (`Arc`), so a copy
    /// of the scope — each strand's snapshot, each foreach iteration's and parallel
    /// branch's child scope — costs four reference counts, not the run's data (D-186).
    /// Writing one (`Arc::make_mut`, as [`DataScope::publish_step`] does) copies it only
    /// while another scope still shares it.
    pub vars: Arc<Value>,
    /// `steps.<id>` = `{ output, meta? }` for steps that published into scope: this
    /// walk's own entries. The engine starts a sub-walk's scope (a foreach iteration, a
    /// parallel branch) with an empty layer of its own over its parent's, so publishing
    /// there never copies the enclosing run's entries (D-187). An entry the engine
    /// published from a step record keeps that record's texts and is parsed only while in
    /// use (D-195). Read entries with [`DataScope::step_entry`] and the whole root with
    /// [`DataScope::steps_value`]; both see every layer.
    steps: Arc<StepsLayer>,
    /// The enclosing walks' `steps` layers, outermost first (empty outside a sub-walk).
    /// Inline up to two: a foreach iteration's scope nests one, and would otherwise
    /// allocate a vector per iteration for it.
    outer_steps: smallvec::SmallVec<[Arc<StepsLayer>; 2]>,
    /// `{ type, event? }`.
    pub trigger: Arc<Value>,
    /// `documents.<key>` (an object).
    pub documents: Arc<Value>,
    /// Callable inputs (function/reroute passes); absent in an ordinary run.
    pub inputs: Option<Value>,
    /// A bound action's raw output (outputMap passes).
    pub output: Option<Value>,
    /// `{ item, index }` inside a foreach body.
    pub foreach: Option<Value>,
    /// Host-populated keys beyond the eight roots: reachable by `$`/`$expr` paths, but
    /// never roots for template anchoring (TPL-7). A key named `secrets` is never read.
    pub extra: Map<String, Value>,
    /// SEC-1 taint: dotted paths of the generic data root whose values are secret-derived
    /// (a step output computed from a secret, a foreach item drawn from one). A read that
    /// touches one — the path itself, inside it, or a prefix of it — marks `touched`.
    tainted: Taints,
    /// Set by any read of a tainted path since the last [`DataScope::take_touched`].
    touched: Cell<bool>,
    /// The EXPR-5 mutant's copy of the secrets: this field exists only in the mutant build
    /// (`cfg(w6w_mutants)`, which neither a release nor a dependent crate can set).
    #[cfg(w6w_mutants)]
    mutant_secrets: Map<String, Value>,
}

impl DataScope {
    /// An empty data scope: empty `vars`/`steps`/`documents`, `trigger` null.
    pub fn new() -> DataScope {
        DataScope {
            vars: Arc::new(Value::Object(Map::new())),
            steps: Arc::new(StepsLayer::default()),
            trigger: Arc::new(Value::Null),
            documents: Arc::new(Value::Object(Map::new())),
            outer_steps: smallvec::SmallVec::new(),
            inputs: None,
            output: None,
            foreach: None,
            extra: Map::new(),
            tainted: Taints::default(),
            touched: Cell::new(false),
            #[cfg(w6w_mutants)]
            mutant_secrets: Map::new(),
        }
    }

    /// Build the data roots from a JSON object with any of the eight roots (other keys are
    /// kept as `extra`; `secrets` is not data and is skipped). Non-object input yields an
    /// empty scope.
    pub fn from_json(value: &Value) -> DataScope {
        let mut scope = DataScope::new();
        let Some(obj) = value.as_object() else {
            return scope;
        };
        for (k, v) in obj {
            match k.as_str() {
                "vars" => scope.vars = Arc::new(object_or_empty(v)),
                "steps" => {
                    let empty = Map::new();
                    let object = v.as_object().unwrap_or(&empty);
                    scope.steps = Arc::new(StepsLayer::from_object(object));
                }
                "trigger" => scope.trigger = Arc::new(v.clone()),
                "secrets" => {}
                "documents" => scope.documents = Arc::new(object_or_empty(v)),
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

    /// SEC-1: mark the value at dotted `path` (e.g. `["steps", "a"]`) secret-derived.
    pub fn taint(&mut self, path: &[&str]) {
        self.tainted.mark(path);
    }

    /// Whether the value at `path` (or anything inside or around it) is secret-derived.
    pub fn is_tainted<S: AsRef<str>>(&self, path: &[S]) -> bool {
        self.tainted.touches(path)
    }

    /// SEC-1 (D-274): which parts of the value at dotted `path` are secret-derived — all of
    /// it (a taint mark at the path or around it), some places inside it (marks below it,
    /// as relative segment lists), or none. A `{"$": …}` read keeps the places, so a param
    /// bound to a whole output is tainted only where that output is.
    pub fn taint_at<S: AsRef<str>>(&self, path: &[S]) -> TaintAt {
        self.tainted.at(path)
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
        Arc::make_mut(&mut self.steps).insert_value(step_id, entry_value(output, meta));
    }

    /// D-195: publish `steps.<id> = { output, meta? }` from the compact JSON texts a step
    /// record holds; `output`, when given, is the value the output text was written from
    /// (else the text is parsed when first read). The scope keeps the texts and drops the
    /// parsed value when it is no longer in use.
    pub(crate) fn publish_step_texts(
        &mut self,
        step_id: &str,
        output: Option<Value>,
        output_text: JsonText,
        meta: Option<JsonText>,
    ) {
        let live = output.map(|o| entry_value(o, meta.as_ref().map(JsonText::to_value)));
        Arc::make_mut(&mut self.steps).insert_texts(step_id, output_text, meta, live);
    }

    /// Room for `n` entries in this walk's `steps` layer (a run publishes one per step).
    pub(crate) fn reserve_steps(&mut self, n: usize) {
        if self.steps.is_empty() {
            self.steps = Arc::new(StepsLayer::with_capacity(n));
        }
    }

    /// D-187: start a sub-walk's own `steps` layer over this scope's, so that what the
    /// sub-walk publishes never copies the enclosing walk's entries (a foreach after a long
    /// run once copied the whole run's outputs per iteration).
    pub(crate) fn nest_steps(&mut self) {
        if !self.steps.is_empty() {
            let own = std::mem::replace(&mut self.steps, Arc::new(StepsLayer::default()));
            self.outer_steps.push(own);
        }
    }

    /// The entry `steps.<id>`, read through every layer, innermost first.
    pub fn step_entry(&self, id: &str) -> Option<&Value> {
        std::iter::once(&self.steps)
            .chain(self.outer_steps.iter().rev())
            .find_map(|layer| layer.get(id))
    }

    /// The whole `steps` root: the one layer as it is, or every layer merged — outer
    /// entries first in their order, an inner entry replacing an outer one in place, as
    /// publishing into a copy of the outer entries would have placed it. O(scope).
    pub fn steps_value(&self) -> std::borrow::Cow<'_, Value> {
        if self.outer_steps.is_empty() {
            return std::borrow::Cow::Borrowed(self.steps.whole());
        }
        let mut merged = Map::new();
        for layer in self.outer_steps.iter().chain(std::iter::once(&self.steps)) {
            for (k, v) in layer.to_entries() {
                merged.insert(k.to_owned(), v);
            }
        }
        std::borrow::Cow::Owned(Value::Object(merged))
    }

    /// Whether `steps` has layers beyond this walk's own (a sub-walk's scope).
    pub(crate) fn steps_layered(&self) -> bool {
        !self.outer_steps.is_empty()
    }

    /// Remove a step's scope entry (a run-level retry starts the graph again).
    pub fn unpublish_step(&mut self, step_id: &str) {
        if self.outer_steps.iter().any(|l| l.contains(step_id)) {
            // An enclosing layer holds it: one layer again, then remove it there.
            let layers = self.outer_steps.iter().chain(std::iter::once(&self.steps));
            self.steps = Arc::new(StepsLayer::merged(layers.map(|l| &**l)));
            self.outer_steps.clear();
        }
        if self.steps.contains(step_id) {
            Arc::make_mut(&mut self.steps).remove(step_id);
        }
        self.tainted.unmark(&["steps", step_id]);
    }

    /// EXPR-5: the generic data root over this scope.
    pub fn data_root(&self) -> DataRoot<'_> {
        DataRoot { data: self }
    }
}

impl Default for DataScope {
    fn default() -> Self {
        DataScope::new()
    }
}

/// The run scope every evaluation of a run sees: its [`DataScope`] and, beside it, its
/// [`Secrets`]. It dereferences to the data scope, so roots and taint marks read and
/// write as fields and methods of the run scope; the secrets only through
/// [`RunScope::secrets`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunScope {
    data: DataScope,
    secrets: Secrets,
}

impl RunScope {
    /// An empty scope: empty `vars`/`steps`/`documents`, `trigger` null, no secrets.
    pub fn new() -> RunScope {
        RunScope::default()
    }

    /// Build a scope from a JSON object with any of the eight roots (and other keys, kept
    /// as `extra`). Non-object input yields an empty scope.
    pub fn from_json(value: &Value) -> RunScope {
        let secrets = value
            .get("secrets")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        RunScope {
            data: DataScope::from_json(value),
            secrets: Secrets::default(),
        }
        .with_secrets(secrets)
    }

    /// Replace the secrets (host-injected from its vault before the run).
    pub fn with_secrets(mut self, secrets: Map<String, Value>) -> Self {
        self.set_secrets(secrets);
        self
    }

    /// Set the secrets in place.
    pub fn set_secrets(&mut self, secrets: Map<String, Value>) {
        #[cfg(w6w_mutants)]
        {
            self.data.mutant_secrets = secrets.clone();
        }
        self.secrets = Secrets::new(secrets);
    }

    /// The run's secrets: for the secret arm of the resolver and for scrubbing only.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// ENV-3 / TPL-6: the plaintext of one secret. `None` when no such secret.
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

    /// The data half of the scope (what [`RunScope`] dereferences to).
    pub fn data(&self) -> &DataScope {
        &self.data
    }
}

impl Deref for RunScope {
    type Target = DataScope;

    fn deref(&self) -> &DataScope {
        &self.data
    }
}

impl DerefMut for RunScope {
    fn deref_mut(&mut self) -> &mut DataScope {
        &mut self.data
    }
}

/// Which parts of a value read from the scope are secret-derived ([`DataScope::taint_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintAt {
    /// None of it.
    Clean,
    /// All of it.
    Whole,
    /// The values at these places inside it (segment lists relative to the value).
    Below(Vec<Vec<String>>),
}

/// The generic data root: every root except `secrets` (EXPR-5). It holds a reference to a
/// [`DataScope`] — which has no secrets to reach — and exposes its roots, its paths and its
/// taint bookkeeping; `{"$": "secrets.X"}` is an unknown path.
#[derive(Debug, Clone, Copy)]
pub struct DataRoot<'a> {
    data: &'a DataScope,
}

impl<'a> DataRoot<'a> {
    /// SEC-1: record that the full dotted path `segments` was read (taint tracking).
    pub fn note_read<S: AsRef<str>>(&self, segments: &[S]) {
        self.data.note_read(segments);
    }

    /// SEC-1: whether a read since the last call touched a secret-derived value; resets.
    pub(crate) fn take_touched(&self) -> bool {
        self.data.take_touched()
    }

    /// SEC-1: which parts of the value at `segments` are secret-derived (D-274).
    pub(crate) fn taint_at<S: AsRef<str>>(&self, segments: &[S]) -> TaintAt {
        self.data.taint_at(segments)
    }

    /// The value of a top-level key of the data root, `None` when absent. For `steps` this
    /// is the walk's own layer only (a sub-walk's scope has more than one, D-187), built
    /// whole (O(layer)): read entries with [`DataRoot::step_entry`] and the whole root
    /// with [`DataRoot::to_value`] (every reader in this crate does).
    pub fn root(&self, name: &str) -> Option<&'a Value> {
        let s = self.data;
        match name {
            "vars" => Some(&*s.vars),
            "steps" => Some(s.steps.whole()),
            "trigger" => Some(&*s.trigger),
            "documents" => Some(&*s.documents),
            "inputs" => s.inputs.as_ref(),
            "output" => s.output.as_ref(),
            "foreach" => s.foreach.as_ref(),
            "secrets" => None,
            other => s.extra.get(other),
        }
    }

    /// The entry `steps.<id>` through every layer of the scope (D-187).
    pub fn step_entry(&self, id: &str) -> Option<&'a Value> {
        self.data.step_entry(id)
    }

    /// The whole `steps` root through every layer (see [`DataScope::steps_value`]).
    pub(crate) fn steps_value(&self) -> std::borrow::Cow<'a, Value> {
        self.data.steps_value()
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
        let mut current = if first == "steps" {
            // D-187: the entry through every layer; the whole layered root is no one
            // value to borrow (`to_value` materialises it).
            match segments.next() {
                Some(id) => self.step_entry(id)?,
                None if self.data.steps_layered() => return None,
                None => self.data.steps.whole(),
            }
        } else {
            self.root(first)?
        };
        for seg in segments {
            current = step_into(current, seg)?;
        }
        Some(current)
    }

    /// Materialise the whole data root as one JSON object (secrets excluded). O(scope).
    pub fn to_value(self) -> Value {
        let s = self.data;
        s.note_read::<&str>(&[]);
        let mut m = Map::new();
        for (k, v) in &s.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("vars".into(), Value::clone(&s.vars));
        m.insert("steps".into(), s.steps_value().into_owned());
        m.insert("trigger".into(), Value::clone(&s.trigger));
        m.insert("documents".into(), Value::clone(&s.documents));
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
            m.insert("secrets".into(), Value::Object(s.mutant_secrets.clone()));
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
pub(crate) fn step_into<'v>(value: &'v Value, segment: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => super::value::object_get(map, segment),
        Value::Array(items) => super::value::canonical_index(segment).and_then(|i| items.get(i)),
        _ => None,
    }
}

fn object_or_empty(v: &Value) -> Value {
    if v.is_object() {
        v.clone()
    } else {
        Value::Object(Map::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// D-187: a nested scope reads exactly what one flat scope holding the same entries
    /// reads — entry by entry, the whole root (order included), through paths, JSONLogic
    /// and templates — and an unpublish reaches an enclosing layer's entry.
    #[test]
    fn a_nested_scope_reads_what_a_flat_one_holds() {
        use crate::expr::{CompiledWith, ResolveMode};
        let mut flat = RunScope::new();
        let mut nested = RunScope::new();
        for id in ["a", "b", "c"] {
            flat.publish_step(id, serde_json::json!({"id": id}), None);
            nested.publish_step(id, serde_json::json!({"id": id}), None);
        }
        nested.nest_steps();
        assert!(nested.steps_layered() && nested.steps.get("a").is_none());
        assert!(nested.step_entry("a").is_some(), "read through the layers");
        for (id, v) in [("d", 4), ("b", 5)] {
            flat.publish_step(id, serde_json::json!({"n": v}), None);
            nested.publish_step(id, serde_json::json!({"n": v}), None);
        }
        let mut twice = nested.clone();
        twice.nest_steps();
        twice.publish_step("e", Value::from(6), None);
        flat.publish_step("e", Value::from(6), None);
        for scope in [&nested, &twice] {
            for id in ["a", "b", "c", "d", "x"] {
                assert_eq!(scope.step_entry(id), flat.step_entry(id), "{id}");
            }
        }
        let whole = twice.data_root().to_value();
        assert_eq!(whole, flat.data_root().to_value());
        let keys: Vec<&String> = whole["steps"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e"]);
        let with = serde_json::json!({
            "path": {"$": "steps.b.output.n"},
            "outer": {"$": "steps.a.output.id"},
            "whole": {"$": "steps"},
            "logic": {"$expr": {"var": "steps.c.output.id"}},
            "missing": {"$expr": {"missing": ["steps.d.output.n", "steps.z"]}},
            "text": "{{ steps.e.output }}-{{ steps.a.output.id }}",
        });
        let compiled = CompiledWith::compile(with.as_object().expect("object")).expect("compiles");
        let want = compiled
            .resolve(&flat, ResolveMode::Run)
            .expect("resolves")
            .params;
        let got = compiled
            .resolve(&twice, ResolveMode::Run)
            .expect("resolves")
            .params;
        assert_eq!(Value::Object(got), Value::Object(want));
        assert_eq!(
            twice.data_root().lookup("steps.a.output.id"),
            Some(&Value::from("a"))
        );
        // An unpublish reaches the enclosing layer's entry.
        twice.unpublish_step("a");
        flat.unpublish_step("a");
        assert_eq!(twice.data_root().to_value(), flat.data_root().to_value());
        assert!(twice.step_entry("a").is_none());
    }

    /// D-186: a copy of the scope (a strand's snapshot, a foreach iteration's child) shares
    /// the four growing roots; a later publish or unpublish on either side copies `steps`
    /// and leaves the other side exactly as it was.
    #[test]
    fn a_copy_shares_its_roots_and_a_write_never_reaches_the_other_copy() {
        let mut scope = RunScope::from_json(&serde_json::json!({
            "vars": {"v": 1}, "trigger": {"type": "manual"}, "documents": {"d": "x"}
        }));
        scope.publish_step("a", Value::from(1), None);
        let snapshot = scope.clone();
        for (mine, theirs) in [
            (&scope.vars, &snapshot.vars),
            (&scope.trigger, &snapshot.trigger),
            (&scope.documents, &snapshot.documents),
        ] {
            assert!(
                Arc::ptr_eq(mine, theirs),
                "a copy shares every growing root"
            );
        }
        assert!(
            Arc::ptr_eq(&scope.steps, &snapshot.steps),
            "a copy shares its steps"
        );
        scope.publish_step("b", Value::from(2), None);
        assert!(
            snapshot.step_entry("b").is_none(),
            "the snapshot never sees a later step"
        );
        assert_eq!(
            scope.step_entry("b").map(|e| &e["output"]),
            Some(&Value::from(2))
        );
        let mut child = snapshot.clone();
        child.unpublish_step("a");
        assert!(snapshot.step_entry("a").is_some() && scope.step_entry("a").is_some());
        assert!(child.step_entry("a").is_none());
        // Unshared, a write goes in place: the run's own scope is not copied per step.
        let before = Arc::as_ptr(&scope.steps);
        scope.publish_step("c", Value::from(3), None);
        assert_eq!(Arc::as_ptr(&scope.steps), before);
    }

    /// SEC-1: unpublishing one step forgets only that step's taint, never another step's
    /// (a survivor of `scripts/mutants.sh`: `&&` → `||` in `unpublish_step` went unseen).
    #[test]
    fn unpublishing_a_step_keeps_other_steps_taint() {
        let mut scope = RunScope::new();
        scope.publish_step("a", Value::from("x"), None);
        scope.publish_step("b", Value::from("y"), None);
        scope.taint(&["steps", "a"]);
        scope.taint(&["steps", "b"]);
        scope.taint(&["vars", "a"]);
        scope.unpublish_step("a");
        assert!(!scope.is_tainted(&["steps", "a"]));
        assert!(
            scope.is_tainted(&["steps", "b"]),
            "b's output is still secret-derived"
        );
        assert!(
            scope.is_tainted(&["vars", "a"]),
            "only a step entry is forgotten"
        );
        assert!(scope.step_entry("a").is_none() && scope.step_entry("b").is_some());
    }
}
