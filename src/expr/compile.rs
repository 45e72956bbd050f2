//! Compiled with blocks: a with block is walked once at compile time (EXPR-3, EXPR-6) into
//! a tree whose leaves are already parsed — `$` paths split, `$expr` and expr parts
//! compiled, template strings parsed and root-checked — so a run, and a workflow run many
//! times, never re-parses. Resolution then walks that tree once against a scope (EXPR-7:
//! values it produces are never walked again).
//!
//! Owns: marker recognition, the ExprValue envelope (ENV-*), root-anchored string
//! resolution (TPL-*), test mode (BIND-2…5) and secret taint (SEC-1). A resolution is a
//! `Ctx`: a `Reader` over the secrets-free [`DataRoot`] — paths, JSONLogic, var and render
//! parts are its methods, so they cannot reach a secret — and the run's [`Secrets`], which
//! only the secret arm of `Ctx::render_parts` reads (EXPR-5).

use serde_json::{Map, Value};

use super::jsonlogic::{Dialect, ExprCode, ExprError, Logic, lookup_root};
use super::limits::MAX_NESTING_DEPTH;
use super::resolve::{ResolveCode, ResolveError, ResolveMode, ResolveOptions, Resolved};
use super::scope::{DataRoot, RunScope, Secrets, TaintAt};
use super::template::{Mode, Part, TemplateTooLarge, parse, root_anchor};
use super::value::{Val, template_string, write_template_string};

/// A path reference (`$`, a var part, a `{{ path }}` marker). One string per reference:
/// its segments are split when it is read, on the stack (D-186), not kept as one string
/// each — a compiled with block holds one reference per `$` of every step of a workflow.
#[derive(Debug, Clone)]
struct PathRef {
    path: String,
}

/// A dotted path's segments; no heap for paths of up to eight segments.
type Segments<'p> = smallvec::SmallVec<[&'p str; 8]>;

impl PathRef {
    fn new(path: &str) -> PathRef {
        PathRef {
            path: path.to_owned(),
        }
    }

    /// The segments (none for the empty path).
    fn segments(&self) -> Segments<'_> {
        segments_of(&self.path)
    }
}

/// `path` split on `.` (no segment for the empty path, which names nothing).
fn segments_of(path: &str) -> Segments<'_> {
    if path.is_empty() {
        Segments::new()
    } else {
        path.split('.').collect()
    }
}

/// A compiled envelope or template part.
#[derive(Debug, Clone)]
enum CPart {
    Text(String),
    /// A var part; an empty ref contributes "" and never the root (ENV-4).
    Var(PathRef),
    Secret(String),
    Expr(Logic),
    Render(String),
}

#[derive(Debug, Clone)]
enum CNode {
    /// Nothing to resolve: the original value, returned as-is (TPL-1 passthrough).
    Literal(Value),
    /// `{"$": path}` (EXPR-1, BIND-1: type-preserved).
    Path(PathRef),
    /// `{"$expr": logic}` (EXPR-2, BIND-1: type-preserved).
    Logic(Logic),
    /// An ExprValue or a root-anchored template string: always one string (ENV-1, TPL-4).
    Parts(Vec<CPart>),
    /// Fields with their JSON Pointers, computed once at compile time.
    Object(Vec<(String, String, CNode)>),
    Array(Vec<(String, CNode)>),
}

/// A with block compiled once, resolvable many times.
#[derive(Debug, Clone)]
pub struct CompiledWith {
    /// (param name, its JSON Pointer, compiled value).
    params: Vec<(String, String, CNode)>,
    dialect: Dialect,
}

fn pointer_push(pointer: &str, key: &str) -> String {
    // One exact allocation in the common case (a key with neither `~` nor `/`).
    let mut out = String::with_capacity(pointer.len() + 1 + key.len());
    out.push_str(pointer);
    out.push('/');
    if key.contains(['~', '/']) {
        out.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        out.push_str(key);
    }
    out
}

fn expr_error(e: ExprError, pointer: &str) -> ResolveError {
    let code = match e.code {
        ExprCode::UnknownOperator => ResolveCode::UnknownOperator,
        ExprCode::InvalidArguments => ResolveCode::InvalidExpression,
        ExprCode::LimitExceeded => ResolveCode::LimitExceeded,
    };
    let mut err = ResolveError::new(code, e.message, pointer);
    err.reference = e.operator;
    err
}

fn template_error(e: TemplateTooLarge, pointer: &str) -> ResolveError {
    ResolveError::new(ResolveCode::LimitExceeded, e.message, pointer)
}

fn raw_expr_error(raw: &str, pointer: &str) -> ResolveError {
    // The parser's own reason, so that a payload JSON's grammar accepts but a Rust value
    // cannot hold (a number beyond f64 such as `1e400`, D-241; a lone-surrogate escape,
    // D-244) says so rather than only "not valid JSON".
    let why = serde_json::from_str::<Value>(raw)
        .err()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    ResolveError::new(
        ResolveCode::InvalidExpression,
        format!("the {{{{ = }}}} marker's payload is not valid JSON{why}: {raw:?}"),
        pointer,
    )
    .with_ref(raw)
}

impl CompiledWith {
    /// Compile under the default [`Dialect::W6w`].
    pub fn compile(with: &Map<String, Value>) -> Result<CompiledWith, ResolveError> {
        CompiledWith::compile_with(with, Dialect::W6w)
    }

    /// Compile under a dialect. Static problems (an unknown operator, an `=` marker that is
    /// not JSON, a limit) are reported here, the first in document order.
    pub fn compile_with(
        with: &Map<String, Value>,
        dialect: Dialect,
    ) -> Result<CompiledWith, ResolveError> {
        let mut params = Vec::with_capacity(with.len());
        for (k, v) in with {
            let pointer = pointer_push("", k);
            let node = compile_value(v, dialect, &pointer, 1)?;
            params.push((k.clone(), pointer, node));
        }
        Ok(CompiledWith { params, dialect })
    }

    /// Companion §1.10 single-reference rule (CTRL-8, D-71), applied by the engine to a
    /// `merge` step's with block: an `entries[k].value` that is a template string made of
    /// exactly one rooted var marker and nothing else (`"{{ steps.a.output.n }}"`) is one
    /// reference and keeps the referenced value's type, exactly as `{"$": ref}` does.
    /// Any other string — text around the marker, two markers, a secret, `=` or chain
    /// marker, an unrooted or unterminated one — resolves as an ordinary with value.
    pub fn with_single_reference_entries(mut self, with: &Map<String, Value>) -> Self {
        let Some(Value::Array(sources)) = with.get("entries") else {
            return self;
        };
        for (name, _, node) in &mut self.params {
            let CNode::Array(items) = node else {
                continue;
            };
            if name != "entries" {
                continue;
            }
            for ((_, item), source) in items.iter_mut().zip(sources) {
                let (CNode::Object(fields), Some(Value::String(text))) =
                    (item, source.get("value"))
                else {
                    continue;
                };
                let Some(path) = single_var_marker(text) else {
                    continue;
                };
                if let Some((_, _, value)) = fields.iter_mut().find(|(k, _, _)| k == "value") {
                    *value = CNode::Path(path);
                }
            }
        }
        self
    }

    /// Resolve against a scope in a mode.
    pub fn resolve(&self, scope: &RunScope, mode: ResolveMode) -> Result<Resolved, ResolveError> {
        self.resolve_with_options(
            scope,
            &ResolveOptions {
                mode,
                tested_step: None,
                dialect: self.dialect,
            },
        )
    }

    /// Resolve for a single-step test of `tested_step` (BIND-2…5).
    pub fn resolve_test(
        &self,
        scope: &RunScope,
        tested_step: &str,
    ) -> Result<Resolved, ResolveError> {
        self.resolve_with_options(
            scope,
            &ResolveOptions {
                mode: ResolveMode::Test,
                tested_step: Some(tested_step),
                dialect: self.dialect,
            },
        )
    }

    /// Resolve with explicit options (the dialect is the one compiled with).
    pub fn resolve_with_options(
        &self,
        scope: &RunScope,
        options: &ResolveOptions<'_>,
    ) -> Result<Resolved, ResolveError> {
        let mut ctx = Ctx {
            read: Reader {
                root: scope.data_root(),
                mode: options.mode,
                tested_step: options.tested_step,
                dialect: self.dialect,
            },
            secrets: scope.secrets(),
            secret_paths: Vec::new(),
        };
        let mut params = Map::with_capacity(self.params.len());
        for (k, pointer, node) in &self.params {
            let v = ctx.resolve(node, pointer)?;
            // SEC-2 / issue 12 item 5: params are recorded as input; they must fit what
            // the store reads back (the params object adds one level).
            if crate::limits::nests_deeper_than(&v, MAX_NESTING_DEPTH - 1) {
                return Err(ResolveError::new(
                    ResolveCode::LimitExceeded,
                    format!(
                        "param {k:?} resolved to a value nested deeper than {} levels",
                        MAX_NESTING_DEPTH - 1
                    ),
                    pointer,
                ));
            }
            params.insert(k.clone(), v);
        }
        Ok(Resolved {
            params,
            secret_paths: ctx.secret_paths,
        })
    }
}

fn compile_value(
    v: &Value,
    dialect: Dialect,
    pointer: &str,
    depth: usize,
) -> Result<CNode, ResolveError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(ResolveError::new(
            ResolveCode::LimitExceeded,
            format!("the with block nests deeper than {MAX_NESTING_DEPTH} levels"),
            pointer,
        ));
    }
    match v {
        Value::String(s) => compile_string(s, dialect, pointer),
        Value::Array(items) => {
            let mut nodes = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let here = pointer_push(pointer, &i.to_string());
                let node = compile_value(item, dialect, &here, depth + 1)?;
                nodes.push((here, node));
            }
            Ok(
                if nodes.iter().all(|(_, n)| matches!(n, CNode::Literal(_))) {
                    CNode::Literal(v.clone())
                } else {
                    CNode::Array(nodes)
                },
            )
        }
        Value::Object(map) => {
            // EXPR-6: a single-key `$` / `$expr` object is a marker, wherever it is.
            if map.len() == 1 {
                if let Some(path) = map.get("$") {
                    return compile_path_marker(path, pointer);
                }
                if let Some(rule) = map.get("$expr") {
                    return Logic::compile(rule, dialect)
                        .map(CNode::Logic)
                        .map_err(|e| expr_error(e, pointer));
                }
            }
            if map.get("type").and_then(Value::as_str) == Some("expr")
                && let Some(Value::Array(parts)) = map.get("parts")
            {
                return compile_envelope(parts, dialect, pointer);
            }
            let mut fields = Vec::with_capacity(map.len());
            for (k, item) in map {
                let here = pointer_push(pointer, k);
                let node = compile_value(item, dialect, &here, depth + 1)?;
                fields.push((k.clone(), here, node));
            }
            Ok(
                if fields
                    .iter()
                    .all(|(_, _, n)| matches!(n, CNode::Literal(_)))
                {
                    CNode::Literal(v.clone())
                } else {
                    CNode::Object(fields)
                },
            )
        }
        other => Ok(CNode::Literal(other.clone())),
    }
}

fn compile_path_marker(path: &Value, pointer: &str) -> Result<CNode, ResolveError> {
    match path {
        Value::String(s) => Ok(CNode::Path(PathRef::new(s))),
        Value::Number(n) => Ok(CNode::Path(PathRef::new(&n.to_string()))),
        other => Err(ResolveError::new(
            ResolveCode::InvalidExpression,
            format!(
                "a {{\"$\": …}} marker needs a string path, found {}",
                json_type_name(other)
            ),
            pointer,
        )),
    }
}

/// ENV-2: the five kinds; anything else contributes "" (ENV-9).
fn compile_envelope(
    parts: &[Value],
    dialect: Dialect,
    pointer: &str,
) -> Result<CNode, ResolveError> {
    let mut out = Vec::with_capacity(parts.len());
    for (i, raw) in parts.iter().enumerate() {
        let here = pointer_push(&pointer_push(pointer, "parts"), &i.to_string());
        // Expressions §11: a `ref` that is not a string is an empty ref here (the
        // serializer's reading of it, `Part::from_json`, is the reference's `String()`).
        let reference = || string_ref(raw).to_owned();
        match Part::from_json(raw) {
            Part::Text(_) => out.push(CPart::Text(text_value(raw).unwrap_or_else(|| {
                let text = raw.get("value").and_then(Value::as_str);
                text.unwrap_or_default().to_owned()
            }))),
            Part::Var(_) => out.push(CPart::Var(PathRef::new(&reference()))),
            Part::Secret(_) => out.push(CPart::Secret(reference())),
            Part::Expr { expr, .. } => out.push(CPart::Expr(
                Logic::compile(&expr, dialect).map_err(|e| expr_error(e, &here))?,
            )),
            Part::Render(_) => out.push(CPart::Render(reference())),
            Part::Unknown(_) => {}
        }
    }
    Ok(CNode::Parts(out))
}

/// A part's `ref` when it is a string, else "".
fn string_ref(raw: &Value) -> &str {
    raw.get("ref").and_then(Value::as_str).unwrap_or_default()
}

/// A text part's `value` when it is not a string: its string form (null reads as "").
fn text_value(raw: &Value) -> Option<String> {
    match raw.get("value")? {
        Value::String(_) | Value::Null => None,
        other => template_string(&Val::from_json(other)),
    }
}

/// A root-anchored template whose only part is one non-empty var marker.
fn single_var_marker(text: &str) -> Option<PathRef> {
    match root_anchor(text).ok()??.as_slice() {
        [Part::Var(r)] if !r.is_empty() => Some(PathRef::new(r)),
        _ => None,
    }
}

/// TPL-1…8: a string resolves iff [`root_anchor`] says so (≥1 marker, no unterminated
/// `{{`, every marker rooted — the same decision the `parse` op's `rootAnchored` path
/// uses); otherwise it is the original string, byte-identical.
fn compile_string(s: &str, dialect: Dialect, pointer: &str) -> Result<CNode, ResolveError> {
    let Some(parts) = root_anchor(s).map_err(|e| template_error(e, pointer))? else {
        return Ok(CNode::Literal(Value::String(s.to_owned())));
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(match part {
            Part::Text(t) => CPart::Text(t),
            Part::Var(r) => CPart::Var(PathRef::new(&r)),
            Part::Secret(r) => CPart::Secret(r),
            Part::Expr { expr, raw: true } => {
                return Err(raw_expr_error(expr.as_str().unwrap_or_default(), pointer));
            }
            Part::Expr { expr, raw: false } => {
                CPart::Expr(Logic::compile(&expr, dialect).map_err(|e| expr_error(e, pointer))?)
            }
            // The parser never yields these; an anchored string cannot hold them.
            Part::Render(_) | Part::Unknown(_) => continue,
        });
    }
    Ok(CNode::Parts(out))
}

/// The JSON type of a value (`"string"`, `"object"`, …): what an error message may
/// say about a resolved value without quoting it (SEC-1).
pub(crate) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn val_type_name(v: &Val<'_>) -> &'static str {
    match v {
        Val::Undefined | Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::Str(_) => "string",
        Val::Arr(_) => "array",
        Val::Ref(r) => json_type_name(r),
        Val::Owned(r) => json_type_name(r),
    }
}

/// One resolution: the data side and, beside it, the secrets for the secret arm.
struct Ctx<'a, 'o> {
    read: Reader<'a, 'o>,
    /// Read by the secret arm of [`Ctx::render_parts`] and nowhere else (ENV-3, TPL-6).
    secrets: &'a Secrets,
    secret_paths: Vec<String>,
}

/// What a resolution reads besides secrets: the data root and the options. Paths,
/// JSONLogic, var parts and render parts are resolved here, with no way to a secret.
#[derive(Clone, Copy)]
struct Reader<'a, 'o> {
    root: DataRoot<'a>,
    mode: ResolveMode,
    tested_step: Option<&'o str>,
    dialect: Dialect,
}

impl<'a> Ctx<'a, '_> {
    fn resolve(&mut self, node: &'a CNode, pointer: &str) -> Result<Value, ResolveError> {
        match node {
            CNode::Literal(v) => Ok(v.clone()),
            CNode::Path(p) => {
                self.read.check_test_binding(p, pointer)?;
                let segments = p.segments();
                let v = lookup_root(self.read.root, &segments).map_or(Value::Null, |v| v.to_json());
                // D-274: a path read keeps where its value is tainted, so a param bound to
                // a whole output is redacted only where that output holds secret material.
                self.read.root.take_touched();
                match self.read.root.taint_at(&segments) {
                    TaintAt::Clean => {}
                    TaintAt::Whole => self.secret_paths.push(pointer.to_owned()),
                    TaintAt::Below(places) => {
                        for place in places {
                            let mut at = pointer.to_owned();
                            for segment in &place {
                                at.push('/');
                                at.push_str(&crate::model::pointer_token(segment));
                            }
                            if v.pointer(&at[pointer.len()..]).is_some() {
                                self.secret_paths.push(at);
                            }
                        }
                    }
                }
                Ok(v)
            }
            CNode::Logic(logic) => {
                self.read.root.take_touched();
                // The params own their values: borrow while evaluating, copy once here.
                let v = logic.eval_root_ref(self.read.root).into_owned();
                self.taint_if_touched(pointer);
                Ok(v)
            }
            CNode::Parts(parts) => {
                self.read.root.take_touched();
                let (text, tainted) = self.render_parts(parts, pointer)?;
                if tainted {
                    self.secret_paths.push(pointer.to_owned());
                } else {
                    self.taint_if_touched(pointer);
                }
                Ok(Value::String(text))
            }
            CNode::Object(fields) => {
                let mut out = Map::with_capacity(fields.len());
                for (k, here, n) in fields {
                    out.insert(k.clone(), self.resolve(n, here)?);
                }
                Ok(Value::Object(out))
            }
            CNode::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (here, n) in items {
                    out.push(self.resolve(n, here)?);
                }
                Ok(Value::Array(out))
            }
        }
    }

    /// SEC-1 taint: a value computed from a secret-derived scope value (any operator,
    /// template or path) is secret-derived wholly.
    fn taint_if_touched(&mut self, pointer: &str) {
        if self.read.root.take_touched() {
            self.secret_paths.push(pointer.to_owned());
        }
    }

    /// ENV-1: concatenate the parts into one string; the bool says a secret was read.
    fn render_parts(
        &self,
        parts: &'a [CPart],
        pointer: &str,
    ) -> Result<(String, bool), ResolveError> {
        // One buffer, sized for the literal text and a short value per marker.
        let hint = parts.iter().fold(0, |n, p| match p {
            CPart::Text(t) => n + t.len(),
            _ => n + 16,
        });
        let mut out = String::with_capacity(hint);
        let mut tainted = false;
        for part in parts {
            match part {
                CPart::Text(t) => out.push_str(t),
                CPart::Var(p) if p.path.is_empty() => {
                    // ENV-4: an empty ref contributes nothing.
                    #[cfg(w6w_mutants)] // ENV-4 mutant (mutant build only): the whole root
                    if crate::mutants::active(crate::mutants::Mutant::EmptyVarRefExposesScope) {
                        out.push_str(&self.read.root.to_value().to_string());
                    }
                }
                CPart::Var(p) => {
                    self.read.check_test_binding(p, pointer)?;
                    if let Some(v) = lookup_root(self.read.root, &p.segments()) {
                        self.read.stringify(&v, &mut out, pointer)?;
                    }
                }
                // ENV-3 / TPL-6: the one read of secret plaintext; a missing one fails.
                CPart::Secret(name) => match self.secrets.get(name) {
                    Some(v) => {
                        tainted = true;
                        self.read.stringify(&Val::from_json(v), &mut out, pointer)?;
                    }
                    None => {
                        return Err(ResolveError::new(
                            ResolveCode::SecretNotFound,
                            format!("secret {name:?} is not available to this run"),
                            pointer,
                        )
                        .with_ref(name));
                    }
                },
                CPart::Expr(logic) => {
                    let v = logic.eval_root(self.read.root);
                    self.read.stringify(&v, &mut out, pointer)?;
                }
                CPart::Render(r) => out.push_str(&self.read.render(r, pointer)?),
            }
        }
        Ok((out, tainted))
    }
}

impl Reader<'_, '_> {
    /// BIND-3: in a single-step test, a direct path binding into `steps.<id>` needs that
    /// step's output in the supplied state; a recorded null output is an output (BIND-4).
    fn check_test_binding(&self, p: &PathRef, pointer: &str) -> Result<(), ResolveError> {
        if self.mode != ResolveMode::Test {
            return Ok(());
        }
        let segments = p.segments();
        if segments.first() != Some(&"steps") {
            return Ok(());
        }
        let Some(&step) = segments.get(1) else {
            return Ok(());
        };
        let has_output = self
            .root
            .step_entry(step)
            .is_some_and(|entry| entry.get("output").is_some());
        if has_output {
            return Ok(());
        }
        let tested = self
            .tested_step
            .map_or_else(String::new, |t| format!("single-step test of step {t:?}: "));
        let mut e = ResolveError::new(
            ResolveCode::StepOutputMissing,
            format!(
                "{tested}the binding {:?} at {pointer} references step {step:?}, which has no output in the supplied state",
                p.path
            ),
            pointer,
        )
        .with_ref(&p.path);
        e.step = Some(step.to_owned());
        Err(e)
    }

    /// Append `v`'s template string form (ENV-1, TPL-4) to `out`.
    fn stringify(&self, v: &Val<'_>, out: &mut String, pointer: &str) -> Result<(), ResolveError> {
        write_template_string(v, out).ok_or_else(|| {
            ResolveError::new(
                ResolveCode::LimitExceeded,
                format!(
                    "a value nests deeper than {MAX_NESTING_DEPTH} levels and cannot be stringified"
                ),
                pointer,
            )
        })
    }

    /// ENV-5…7: a render part — resolve the ref on the data root, require a string, parse
    /// it in render mode and resolve those parts once, against the same root.
    fn render(&self, reference: &str, pointer: &str) -> Result<String, ResolveError> {
        let unresolved = |why: &str| {
            Err(ResolveError::new(
                ResolveCode::RenderRefUnresolved,
                format!("render part ref {reference:?} {why}"),
                pointer,
            )
            .with_ref(reference))
        };
        if reference.is_empty() {
            return unresolved("is empty and names nothing");
        }
        let segments = segments_of(reference);
        #[cfg(w6w_mutants)] // ENV-5 mutant (mutant build only): absent renders ""
        if crate::mutants::active(crate::mutants::Mutant::RenderUnresolvedAsEmpty)
            && lookup_root(self.root, &segments).is_none()
        {
            return Ok(String::new());
        }
        let content = match lookup_root(self.root, &segments) {
            None | Some(Val::Null | Val::Undefined) => {
                return unresolved("did not resolve (absent or null)");
            }
            Some(Val::Str(s)) => s,
            Some(other) => {
                return Err(ResolveError::new(
                    ResolveCode::RenderRefNotAString,
                    format!(
                        "render part ref {reference:?} resolved to a {}, not a string",
                        val_type_name(&other)
                    ),
                    pointer,
                )
                .with_ref(reference));
            }
        };
        let parsed = parse(&content, Mode::Render).map_err(|e| template_error(e, pointer))?;
        let mut out = String::new();
        for part in parsed.parts {
            match part {
                Part::Text(t) => out.push_str(&t),
                Part::Var(r) if r.is_empty() => {}
                Part::Var(r) => {
                    let segs: Vec<&str> = r.split('.').collect();
                    if let Some(v) = lookup_root(self.root, &segs) {
                        self.stringify(&v, &mut out, pointer)?;
                    }
                }
                Part::Expr { expr, raw: true } => {
                    return Err(raw_expr_error(expr.as_str().unwrap_or_default(), pointer));
                }
                Part::Expr { expr, raw: false } => {
                    let logic =
                        Logic::compile(&expr, self.dialect).map_err(|e| expr_error(e, pointer))?;
                    self.stringify(&logic.eval_root(self.root), &mut out, pointer)?;
                }
                // Render mode has no secret production (ENV-6), so no such part exists
                // here; and nothing in this loop reads secrets. Nested render: none.
                Part::Secret(_) | Part::Render(_) | Part::Unknown(_) => {}
            }
        }
        Ok(out)
    }
}
