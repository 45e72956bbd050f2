//! The redaction sink (SEC-1): the one component every recorded or printed byte of a run
//! passes through before it leaves the process — checkpoints (before any store), trace
//! events, the report, error messages, `eval` responses, conformance reports.
//!
//! Owns: the needles of one run — every secret of the scenario in every encoding it can
//! take on its way to a byte (raw, JSON-escaped, `{:?}`-escaped, JSON-escaped twice, a
//! number rendered as text) — plus the secret-derived values the engine declared to the
//! host (`WorkflowContext::secret_derived`), and the walk that replaces them with
//! `"[redacted]"`.
//!
//! Invariant: scrubbing is defense in depth behind taint tracking (`Resolved::secret_paths`,
//! `engine::journal::SECRET_DERIVED`), which redacts secret-derived values wholly where the
//! engine records them. This layer catches what taint cannot see: a secret an action or a
//! scenario echoes verbatim, or an error message that quotes one. Only data is scrubbed
//! (values, keys, texts), never structural fields such as statuses, so a scrubbed patch
//! stays a patch. Limits (docs/decisions.md D-42): a secret-derived value shorter than
//! [`DERIVED_NEEDLE_MIN`] characters is replaced where it stands as a whole value, never as a
//! substring of unrelated text.

pub(crate) mod leak;
pub(crate) mod taint;

use std::cell::RefCell;
use std::sync::Arc;

use indexmap::IndexMap;
use memchr::memmem::Finder;
use serde_json::{Map, Number, Value};

use crate::expr::REDACTED;
use crate::json::JsonText;
use crate::model::{FrameRecords, RunState, RunStatePatch, StepError, StepExecution, StepMeta};

/// A declared secret-derived string shorter than this is not scrubbed as a substring (it
/// would erase unrelated text); it is still replaced wherever it is a whole value.
pub(crate) const DERIVED_NEEDLE_MIN: usize = 4;

/// The secret values of one run, ready to scrub with.
#[derive(Debug, Default)]
pub struct Scrubber {
    /// Every encoding of every secret string leaf, longest first (so a needle that
    /// contains another is replaced whole).
    needles: Vec<String>,
    /// Numeric secrets, replaced where a number equals one.
    numbers: Vec<Number>,
    /// Values the engine declared secret-derived during the run, replaced wholly where
    /// they appear as a value; their long string leaves also become needles.
    derived: RefCell<Derived>,
}

#[derive(Debug, Default, Clone)]
struct Derived {
    values: Vec<Value>,
    needles: Vec<String>,
    /// Every needle, the scrubber's own and the derived ones.
    search: Search,
}

/// Whether a text holds any needle, each needle's searcher built once per scrubber (a
/// `str::contains` builds one per call, and most texts a run records hold no needle).
#[derive(Debug, Default, Clone)]
struct Search {
    /// The needles, longest first: the order [`Scrubber::text`] replaces them in.
    all: Vec<String>,
    /// One searcher per needle of `all`.
    finders: Vec<Finder<'static>>,
    /// No text shorter than this holds a needle.
    shortest: usize,
    /// No needle holds a character JSON escapes (`"`, `\\`, a control character): a string
    /// holding a needle then holds it verbatim in its JSON text too (D-193).
    verbatim: bool,
}

impl Search {
    fn new(all: Vec<String>) -> Search {
        let finders = all
            .iter()
            .map(|n| Finder::new(n.as_bytes()).into_owned())
            .collect();
        let shortest = all.iter().map(String::len).min().unwrap_or(0);
        let verbatim = all
            .iter()
            .all(|n| !n.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20));
        Search {
            all,
            finders,
            shortest,
            verbatim,
        }
    }

    fn hits(&self, text: &str) -> bool {
        text.len() >= self.shortest
            && self
                .finders
                .iter()
                .any(|f| f.find(text.as_bytes()).is_some())
    }
}

impl Clone for Scrubber {
    fn clone(&self) -> Self {
        Scrubber {
            needles: self.needles.clone(),
            numbers: self.numbers.clone(),
            derived: RefCell::new(self.derived.borrow().clone()),
        }
    }
}

/// Every encoding in which `s` can reach a recorded byte.
fn encodings(s: &str) -> Vec<String> {
    let mut out = vec![s.to_owned()];
    let json = serde_json::to_string(s).unwrap_or_default();
    let json_inner = json
        .get(1..json.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    let debug = format!("{s:?}");
    let debug_inner = debug
        .get(1..debug.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    // A JSON text quoted inside another JSON string (a patch in a message, a response
    // embedded in a report) escapes the escapes once more.
    let twice = serde_json::to_string(&json_inner).unwrap_or_default();
    let twice_inner = twice
        .get(1..twice.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    for e in [json_inner, debug_inner, twice_inner] {
        if !e.is_empty() && !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// `text` with each occurrence of `needle` that touches no letter or digit on either side
/// replaced by [`REDACTED`].
fn replace_standalone(text: &str, needle: &str) -> String {
    if needle.is_empty() {
        return text.to_owned();
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for (at, _) in text.match_indices(needle) {
        let end = at + needle.len();
        // The characters around it in the whole text, not in what is left of it.
        let alone = !word(text[..at].chars().next_back()) && !word(text[end..].chars().next());
        if alone {
            out.push_str(&text[done..at]);
            out.push_str(REDACTED);
            done = end;
        }
    }
    out.push_str(&text[done..]);
    out
}

fn sort_needles(needles: &mut Vec<String>) {
    needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    needles.dedup();
}

impl Scrubber {
    /// The sink of a run with `secrets`: every secret in every encoding it can take on its
    /// way to a byte (raw, JSON-escaped, `{:?}`-escaped, twice JSON-escaped, a number as
    /// text) and every encoded form the leak detector knows — base64 at every alignment,
    /// hex, percent-encoding, any 8-character piece (D-274: an undeclared action's output
    /// is recorded after this sink, so a secret it returns in any of them is removed).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Value> + Clone) -> Self {
        let mut s = Scrubber::default();
        for v in secrets.clone() {
            s.collect(v);
        }
        let mut texts = Vec::new();
        for v in secrets {
            // Strings, and numbers as text.
            string_leaves(v, &mut texts);
        }
        for t in texts {
            s.needles.extend(leak::encoded_forms(&t));
        }
        sort_needles(&mut s.needles);
        s.derived.get_mut().search = Search::new(s.needles.clone());
        s
    }

    fn collect(&mut self, v: &Value) {
        match v {
            Value::String(t) if !t.is_empty() => self.needles.extend(encodings(t)),
            Value::Number(n) => {
                self.numbers.push(n.clone());
                // A number rendered into text (`"pin={{ secrets.PIN }}"`), in JSON's and
                // in JavaScript's spelling.
                let js = crate::expr::number::number_to_string(crate::expr::number::json_number(n));
                self.needles.push(n.to_string());
                self.needles.push(js);
            }
            Value::Array(items) => items.iter().for_each(|i| self.collect(i)),
            Value::Object(m) => m.values().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.numbers.is_empty() && {
            let d = self.derived.borrow();
            d.values.is_empty() && d.needles.is_empty()
        }
    }

    /// SEC-1: the engine declared `v` secret-derived; it is redacted from now on.
    pub fn add_derived(&self, v: &Value) {
        let mut d = self.derived.borrow_mut();
        if matches!(v, Value::Null | Value::Bool(_)) || d.values.contains(v) {
            return;
        }
        d.values.push(v.clone());
        let mut leaves = Vec::new();
        string_leaves(v, &mut leaves);
        for leaf in leaves {
            if leaf.chars().count() >= DERIVED_NEEDLE_MIN {
                d.needles.extend(encodings(&leaf));
            }
        }
        sort_needles(&mut d.needles);
        // Both lists stay whole (a needle in each is replaced twice, as it always was).
        let mut all: Vec<String> = self.needles.iter().chain(&d.needles).cloned().collect();
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        d.search = Search::new(all);
    }

    /// Replace every occurrence of a secret inside `text`; `None` when there is none.
    pub fn text(&self, text: &str) -> Option<String> {
        let derived = self.derived.borrow();
        let search = &derived.search;
        if !search.hits(text) {
            return None;
        }
        let mut out = text.to_owned();
        for (n, f) in search.all.iter().zip(&search.finders) {
            if f.find(out.as_bytes()).is_some() {
                out = out.replace(n.as_str(), REDACTED);
            }
        }
        Some(out)
    }

    /// Whether [`Scrubber::value`] would rewrite anything in `v` (a key, a text, a
    /// numeric secret, a secret-derived value). Read-only: a record shared with the store
    /// is copied only when it has something to scrub.
    pub fn touches(&self, v: &Value) -> bool {
        !self.is_empty() && self.touches_value(&self.derived.borrow(), v)
    }

    /// Scrub a value held as text (D-191, D-193): read, and written anew only when there
    /// is something to scrub (a record or entry scrubbed when it was made, as a rule, has
    /// nothing left).
    pub fn json_text(&self, t: &mut JsonText) {
        if self.is_empty() {
            return;
        }
        if !self.touches_text(&self.derived.borrow(), t) {
            return;
        }
        let mut v = t.to_value();
        self.value(&mut v);
        *t = JsonText::new(&v);
    }

    fn touches_value(&self, d: &Derived, v: &Value) -> bool {
        if !d.values.is_empty() && d.values.contains(v) {
            return true;
        }
        match v {
            Value::String(t) => d.search.hits(t),
            Value::Number(n) => self.is_secret_number(n),
            Value::Array(items) => items.iter().any(|i| self.touches_value(d, i)),
            Value::Object(m) => m.iter().any(|(k, v)| {
                d.search.hits(k) || (!leak::is_clock_reading(k, v) && self.touches_value(d, v))
            }),
            _ => false,
        }
    }

    /// [`Scrubber::touches_value`] of a value held as text (D-193). Read off the text when
    /// only needles can touch it and none is in the text (no string of it can hold one);
    /// parsed otherwise.
    fn touches_text(&self, d: &Derived, t: &JsonText) -> bool {
        if d.values.is_empty()
            && self.numbers.is_empty()
            && d.search.verbatim
            && !d.search.hits(t.as_str())
        {
            return false;
        }
        self.touches_value(d, &t.to_value())
    }

    fn is_secret_number(&self, n: &Number) -> bool {
        self.numbers
            .iter()
            .any(|s| s == n || s.as_f64() == n.as_f64())
    }

    /// Whether [`Scrubber::step`] would rewrite anything in `s`.
    fn touches_step(&self, s: &StepExecution) -> bool {
        let d = self.derived.borrow();
        let text = |t: &str| d.search.hits(t);
        s.input.iter().any(|t| self.touches_text(&d, t))
            || s.output.iter().any(|t| self.touches_text(&d, t))
            || s.error.as_ref().is_some_and(|e| self.touches_error(&d, e))
            || s.meta.as_ref().is_some_and(|m| {
                text(&m.app)
                    || text(&m.version)
                    || text(&m.action)
                    || m.connection_id.as_deref().is_some_and(text)
            })
            || self.touches_map(&d, &s.extra)
            || s.blocks.as_ref().is_some_and(|b| {
                drop(d);
                b.frames.iter().any(|f| self.touches_frame(f))
            })
    }

    fn touches_error(&self, d: &Derived, e: &StepError) -> bool {
        let text = |t: &str| d.search.hits(t);
        text(&e.code) || text(&e.message) || e.step_id.as_deref().is_some_and(text)
    }

    fn touches_map(&self, d: &Derived, m: &Map<String, Value>) -> bool {
        m.iter()
            .any(|(k, v)| d.search.hits(k) || self.touches_value(d, v))
    }

    /// Whether [`Scrubber::patch`] would rewrite anything in `p`: a checkpoint without a
    /// secret reaches the store uncopied.
    pub fn touches_patch(&self, p: &RunStatePatch) -> bool {
        if self.is_empty() {
            return false;
        }
        let d = self.derived.borrow();
        p.variables
            .as_ref()
            .is_some_and(|vars| self.touches_map(&d, vars))
            || p.output.as_ref().is_some_and(|o| self.touches_value(&d, o))
            || p.error.as_ref().is_some_and(|e| self.touches_error(&d, e))
            || p.step_errors.iter().any(|e| self.touches_error(&d, e))
            || self.touches_map(&d, &p.extra)
            || p.frames.keys().any(|k| d.search.hits(k))
            || {
                drop(d);
                p.steps.values().any(|s| self.touches_step(s))
                    || p.frames.values().flatten().any(|f| self.touches_frame(f))
            }
    }

    /// Whether [`Scrubber::frame`] would rewrite anything in `f`.
    fn touches_frame(&self, f: &FrameRecords) -> bool {
        let hit = {
            let d = self.derived.borrow();
            f.keys().any(|k| d.search.hits(k))
        };
        hit || f.values().any(|s| self.touches_step(s))
    }

    /// Scrub a frame's records (and step ids) behind its `Arc`, copying only what has
    /// something to scrub.
    fn frame(&self, f: &mut Arc<FrameRecords>) {
        if !self.touches_frame(f) {
            return;
        }
        let old = Arc::unwrap_or_clone(std::mem::take(f));
        let mut scrubbed =
            FrameRecords::with_capacity_and_hasher(old.len(), crate::model::FrameHasher::default());
        for (id, mut record) in old {
            self.shared_step(&mut record);
            scrubbed.insert(self.line(&id), record);
        }
        *f = Arc::new(scrubbed);
    }

    /// Scrub a map of frames, its keys included (as `extra`'s keys are).
    fn frames<F, S: std::hash::BuildHasher + Default>(
        &self,
        frames: &mut IndexMap<String, F, S>,
        each: impl Fn(&mut F),
    ) {
        let rekey = {
            let d = self.derived.borrow();
            frames.keys().any(|k| d.search.hits(k))
        };
        if rekey {
            for (k, v) in std::mem::take(frames) {
                frames.insert(self.line(&k), v);
            }
        }
        frames.values_mut().for_each(each);
    }

    /// Scrub a step record held behind an `Arc`, copying it only when it has something
    /// to scrub (the store and the engine usually share it).
    fn shared_step(&self, s: &mut std::sync::Arc<StepExecution>) {
        if self.touches_step(s) {
            self.step(std::sync::Arc::make_mut(s));
        }
    }

    /// [`Scrubber::text`], always returning the text to use.
    pub fn line(&self, text: &str) -> String {
        self.text(text).unwrap_or_else(|| text.to_owned())
    }

    /// A message that mixes the suite's words with what it quotes (an adapter's error): a
    /// needle of [`DERIVED_NEEDLE_MIN`] or more characters is replaced wherever it is, as
    /// [`Scrubber::line`] does; a shorter one only where it stands alone — not inside a
    /// word — so a one-letter secret leaves "expected" readable (issue 38 item 8). Such a
    /// secret inside a quoted word is not scrubbed: a letter of a word tells nothing.
    pub fn prose(&self, text: &str) -> String {
        let derived = self.derived.borrow();
        let search = &derived.search;
        if !search.hits(text) {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for n in &search.all {
            if n.chars().count() >= DERIVED_NEEDLE_MIN {
                if out.contains(n.as_str()) {
                    out = out.replace(n.as_str(), REDACTED);
                }
            } else {
                out = replace_standalone(&out, n);
            }
        }
        out
    }

    fn is_derived(&self, v: &Value) -> bool {
        let d = self.derived.borrow();
        !d.values.is_empty() && d.values.contains(v)
    }

    /// Scrub a JSON value in place: string values, object keys, numeric secrets, and any
    /// declared secret-derived value (replaced wholly).
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        if self.is_derived(v) {
            *v = Value::String(REDACTED.to_owned());
            return;
        }
        match v {
            Value::String(t) => {
                if let Some(s) = self.text(t) {
                    *t = s;
                }
            }
            Value::Number(n) if self.is_secret_number(n) => {
                *v = Value::String(REDACTED.to_owned());
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(m) => self.map(m),
            _ => {}
        }
    }

    /// Scrub a value that is about to be recorded, returning it.
    pub fn scrubbed(&self, mut v: Value) -> Value {
        self.value(&mut v);
        v
    }

    pub fn map(&self, m: &mut Map<String, Value>) {
        if self.is_empty() {
            return;
        }
        // Asks the search, not `text`, which would build a scrubbed copy of the key only to
        // drop it.
        let rekey = {
            let d = self.derived.borrow();
            m.keys().any(|k| d.search.hits(k))
        };
        if rekey {
            let old = std::mem::take(m);
            for (k, v) in old {
                m.insert(self.text(&k).unwrap_or(k), v);
            }
        }
        for (k, v) in m.iter_mut() {
            // D-43: a record's clock reading is not data (the clock reaches a secret-derived
            // wait's time, and a piece of that time is no leak of it).
            if !leak::is_clock_reading(k, v) {
                self.value(v);
            }
        }
    }

    pub fn error(&self, e: &mut StepError) {
        for s in [&mut e.code, &mut e.message] {
            if let Some(t) = self.text(s) {
                *s = t;
            }
        }
        if let Some(id) = &mut e.step_id
            && let Some(t) = self.text(id)
        {
            *id = t;
        }
    }

    fn meta(&self, m: &mut StepMeta) {
        for s in [&mut m.app, &mut m.version, &mut m.action] {
            if let Some(t) = self.text(s) {
                *s = t;
            }
        }
        if let Some(c) = &mut m.connection_id
            && let Some(t) = self.text(c)
        {
            *c = t;
        }
    }

    pub fn step(&self, s: &mut StepExecution) {
        if self.is_empty() {
            return;
        }
        if let Some(t) = &mut s.input {
            self.json_text(t);
        }
        if let Some(t) = &mut s.output {
            self.json_text(t);
        }
        if let Some(e) = &mut s.error {
            self.error(e);
        }
        if let Some(m) = &mut s.meta {
            self.meta(m);
        }
        self.map(&mut s.extra);
        if let Some(b) = &mut s.blocks {
            b.frames.iter_mut().for_each(|f| self.frame(f));
        }
    }

    /// Scrub a checkpoint before it reaches any store.
    pub fn patch(&self, p: &mut RunStatePatch) {
        if self.is_empty() {
            return;
        }
        if let Some(vars) = &mut p.variables {
            self.map(vars);
        }
        if let Some(o) = &mut p.output {
            self.value(o);
        }
        if let Some(e) = &mut p.error {
            self.error(e);
        }
        p.steps.values_mut().for_each(|s| self.shared_step(s));
        p.step_errors.iter_mut().for_each(|e| self.error(e));
        self.map(&mut p.extra);
        self.frames(&mut p.frames, |f| {
            if let Some(f) = f {
                self.frame(f);
            }
        });
    }

    /// Scrub a whole run state (a replayed `--run FILE`, the final report).
    pub fn state(&self, r: &mut RunState) {
        if self.is_empty() {
            return;
        }
        self.map(&mut r.variables);
        if let Some(o) = &mut r.output {
            self.value(o);
        }
        if let Some(e) = &mut r.error {
            self.error(e);
        }
        r.steps.values_mut().for_each(|s| self.shared_step(s));
        r.step_errors.iter_mut().for_each(|e| self.error(e));
        self.map(&mut r.extra);
        self.frames(&mut r.frames, |f| self.frame(f));
    }
}

fn string_leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| string_leaves(i, out)),
        Value::Object(m) => m.values().for_each(|i| string_leaves(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Values over a small alphabet (`x`, `y`, `1`, `"`), so secrets drawn from it occur
    /// often; none of `[redacted]`'s characters, so a scrubbed text never equals its
    /// original by accident.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..4).prop_map(|n| json!(n)),
            "[xy1\"]{0,4}".prop_map(Value::String),
        ];
        crate::json::arb_tree(leaf, "[xy1]{1,2}")
    }

    /// Issue 44 item 2: what a report keeps loses the secret in every encoding the leak
    /// detector knows.
    #[test]
    fn a_report_scrubber_removes_encoded_forms_too() {
        use base64::Engine as _;
        let secret = "sk_live_5ecret/9f8e 7d";
        let s = Scrubber::new([&json!({"K": secret})]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        for text in [
            format!("token {b64}"),
            format!("hex {hex}"),
            "k=sk_live_5ecret%2F9f8e%207d".to_owned(),
            "…5ecret/9f…".to_owned(),
        ] {
            let out = s.line(&text);
            assert!(out.contains(REDACTED), "{text} -> {out}");
            assert!(!out.contains("5ecret/9f"), "{out}");
        }
        // One sink (D-274): a run's, given the bare secret, removes the encoded forms too.
        assert_eq!(
            Scrubber::new([&json!(secret)]).line(&format!("hex {hex}")),
            format!("hex {REDACTED}")
        );
    }

    #[test]
    fn prose_keeps_the_suite_words_around_a_short_secret() {
        let s = Scrubber::new([&json!("e"), &json!("hunter2-x")]);
        assert_eq!(
            s.prose("expected \"e\", got e; key hunter2-x echoed"),
            "expected \"[redacted]\", got [redacted]; key [redacted] echoed"
        );
        // What `line` does to the same text: every "e" goes.
        assert!(s.line("expected").contains(REDACTED));
        assert_eq!(s.prose("nothing to see"), "nothing to see");
        assert_eq!(s.prose("e e,e"), "[redacted] [redacted],[redacted]");
    }

    fn secret() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[xy1\"]{1,3}".prop_map(Value::String),
            (1i64..4).prop_map(|n| json!(n)),
        ]
    }

    proptest! {
        // Case count comes from PROPTEST_CASES (proptest default 256; CI sets 64).
        #![proptest_config(ProptestConfig::default())]

        /// D-193: a value held as text is touched exactly when the value is, whether the
        /// text decides it (needles JSON writes verbatim, the text searched as it is) or the
        /// value must be read: needles with quotes, backslashes and control characters,
        /// needles spanning a member's punctuation, secret numbers, derived values.
        #[test]
        fn a_text_is_touched_exactly_when_its_value_is(
            v in crate::json::arb_tree(
                prop_oneof![
                    (0i64..4).prop_map(|n| json!(n)),
                    "[xy1\",:\\\u{1}]{0,4}".prop_map(Value::String),
                ],
                "[xy1\",]{1,2}",
            ),
            secrets in prop::collection::vec(
                prop_oneof![
                    "[xy1\",:\\\u{1}]{1,3}".prop_map(Value::String),
                    (1i64..4).prop_map(|n| json!(n)),
                ],
                0..3,
            ),
            derived in prop::option::of(value()),
        ) {
            let s = Scrubber::new(secrets.iter());
            if let Some(d) = &derived {
                s.add_derived(d);
            }
            let text = JsonText::new(&v);
            let d = s.derived.borrow();
            prop_assert_eq!(s.touches_text(&d, &text), s.touches_value(&d, &v), "{}", v);
            drop(d);
            let mut scrubbed = text.clone();
            s.json_text(&mut scrubbed);
            prop_assert_eq!(scrubbed.to_value(), s.scrubbed(v.clone()));
        }

        /// The read-only predicate is exact: a value is touched if and only if scrubbing
        /// changes it — so a shared record is copied exactly when it must be, and one
        /// holding a secret is never left unscrubbed. The same for a step record behind an
        /// `Arc`: the one-pass search finds what `contains` finds.
        #[test]
        fn touches_is_exactly_whether_scrubbing_changes_the_value(
            v in value(),
            secrets in prop::collection::vec(secret(), 0..3),
            derived in prop::option::of(value()),
            t in prop::array::uniform8("[xy1\"]{1,3}"),
        ) {
            let s = Scrubber::new(secrets.iter());
            if let Some(d) = &derived {
                s.add_derived(d);
            }
            let scrubbed = s.scrubbed(v.clone());
            prop_assert_eq!(s.touches(&v), scrubbed != v, "{} -> {}", v, scrubbed);
            let all: Vec<String> = s.derived.borrow().search.all.clone();
            if let Value::String(t) = &v {
                let naive = all.iter().any(|n| t.contains(n.as_str()));
                prop_assert_eq!(s.text(t).is_some(), naive);
            }
            let record = record_with(Some(v.clone()), &t);
            let mut expected = record.clone();
            s.step(&mut expected);
            let mut state = RunState::new("r", "w");
            state.steps.insert("a".into(), Arc::new(record.clone()));
            let shared = Arc::clone(&state.steps["a"]);
            s.state(&mut state);
            prop_assert_eq!(&*state.steps["a"], &expected);
            // Copied only when scrubbing changed it.
            prop_assert_eq!(Arc::ptr_eq(&shared, &state.steps["a"]), expected == record);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::default())]

        /// The same for a checkpoint: `touches_patch` is exactly whether scrubbing changes
        /// it, whichever of its parts holds the secret.
        #[test]
        fn touches_patch_is_exactly_whether_scrubbing_changes_the_patch(
            parts in prop::collection::vec(value(), 6),
            secrets in prop::collection::vec(secret(), 1..3),
            t in prop::array::uniform8("[xy1\"]{1,3}"),
            which in 0usize..12,
        ) {
            let s = Scrubber::new(secrets.iter());
            let clean: [String; 8] = std::array::from_fn(|i| format!("c{i}"));
            // Only one part carries generated data, so no part's hit hides another's miss.
            let mut p = RunStatePatch::default();
            match which {
                0 => p.variables = Some(Map::from_iter([(t[0].clone(), parts[0].clone())])),
                1 => p.output = Some(parts[1].clone()),
                2 => p.error = Some(StepError::new(t[1].clone(), t[2].clone(), crate::model::Phase::Auth)),
                3 => p.step_errors.push(StepError::new("E", t[3].clone(), crate::model::Phase::Auth)),
                4 => { p.extra.insert(t[4].clone(), parts[2].clone()); }
                5 => { p.steps.insert("a".into(), Arc::new(record_with(Some(parts[3].clone()), &clean))); }
                6 => { p.steps.insert("a".into(), Arc::new(record_with(None, &t))); }
                7 => p.variables = Some(Map::from_iter([("v".to_owned(), parts[4].clone())])),
                // A frame's record, a frame's key, a record's key in its frame (D-188).
                8 => { p.frames.insert("frame:/l.iterations[0]".into(), Some(Arc::new(
                    FrameRecords::from_iter([("a".to_owned(), Arc::new(record_with(Some(parts[5].clone()), &clean)))])))); }
                9 => { p.frames.insert(t[5].clone(), None); }
                // A control record's typed blocks (D-189).
                10 => {
                    let mut lp = StepExecution::new("loop", crate::model::StepStatus::Succeeded, 1);
                    lp.blocks = Some(Box::new(crate::model::Blocks {
                        kind: crate::model::BlockKind::Iterations,
                        frames: vec![Arc::new(FrameRecords::from_iter([(
                            t[7].clone(),
                            Arc::new(record_with(Some(parts[5].clone()), &clean)),
                        )]))],
                        after: None,
                    }));
                    p.steps.insert("loop".into(), Arc::new(lp));
                }
                _ => { p.frames.insert("frame:/l.branches[1]".into(), Some(Arc::new(
                    FrameRecords::from_iter([(t[6].clone(), Arc::new(record_with(None, &clean)))])))); }
            }
            let mut scrubbed = p.clone();
            s.patch(&mut scrubbed);
            prop_assert_eq!(s.touches_patch(&p), scrubbed != p, "{:?}", p);
        }
    }

    /// A failed step's record with `output` and a text of its own in every other part the
    /// sink reads (error code, message and step, meta app, version, action and
    /// connection, an extension's key).
    fn record_with(output: Option<Value>, t: &[String; 8]) -> StepExecution {
        let mut record = StepExecution::new("a", crate::model::StepStatus::Failed, 1);
        record.output = output.map(Into::into);
        let mut error = StepError::new(t[0].clone(), t[1].clone(), crate::model::Phase::Execute);
        error.step_id = Some(t[2].clone());
        record.error = Some(Box::new(error));
        record.meta = Some(Box::new(StepMeta {
            app: t[3].clone(),
            version: t[4].clone(),
            action: t[5].clone(),
            connection_id: Some(t[6].clone()),
        }));
        record.extra.insert(t[7].clone(), json!(null));
        record
    }

    /// Each part of a record alone holding the secret makes the record touched, scrubbed
    /// and copied; the same record without it is left shared.
    #[test]
    fn a_secret_in_any_one_part_of_a_shared_record_is_scrubbed() {
        let s = Scrubber::new([json!("sekrit")].iter());
        for part in 0..9 {
            let mut t: [String; 8] = std::array::from_fn(|i| format!("clean{i}"));
            let mut output = json!({"k": "v"});
            match part {
                8 => output = json!({"k": "a sekrit here"}),
                i => t[i] = "the sekrit".into(),
            }
            let record = record_with(Some(output), &t);
            assert!(s.touches_step(&record), "part {part}");
            let mut state = RunState::new("r", "w");
            state.steps.insert("a".into(), Arc::new(record.clone()));
            let shared = Arc::clone(&state.steps["a"]);
            s.state(&mut state);
            assert!(!Arc::ptr_eq(&shared, &state.steps["a"]), "part {part}");
            let text = serde_json::to_string(&*state.steps["a"]).unwrap_or_default();
            assert!(!text.contains("sekrit"), "part {part}: {text}");
        }
        let clean = record_with(Some(json!(1)), &std::array::from_fn(|i| format!("c{i}")));
        assert!(!s.touches_step(&clean));
    }

    /// D-188: a running frame's records are scrubbed in a state as in a checkpoint, the
    /// frame's key and its records' keys too; so are a finished control's typed blocks
    /// (D-189); a clean frame stays shared.
    #[test]
    fn a_secret_in_a_frame_is_scrubbed() {
        let s = Scrubber::new([json!("sekrit")].iter());
        let clean_t: [String; 8] = std::array::from_fn(|i| format!("c{i}"));
        let dirty = record_with(Some(json!({"k": "a sekrit here"})), &clean_t);
        let clean = Arc::new(FrameRecords::from_iter([(
            "c".to_owned(),
            Arc::new(record_with(None, &clean_t)),
        )]));
        let mut state = RunState::new("r", "w");
        state.frames.insert(
            "frame:/l.iterations[0]".into(),
            Arc::new(FrameRecords::from_iter([("a".to_owned(), Arc::new(dirty))])),
        );
        state
            .frames
            .insert("frame:/sekrit.branches[0]".into(), Arc::clone(&clean));
        state.frames.insert(
            "frame:/l.iterations[1]".into(),
            Arc::new(FrameRecords::from_iter([(
                "sekrit".to_owned(),
                Arc::new(record_with(None, &clean_t)),
            )])),
        );
        state
            .frames
            .insert("frame:/l.iterations[2]".into(), Arc::clone(&clean));
        // D-189: a finished control's typed blocks, one frame dirty, one clean.
        let mut lp = StepExecution::new("loop", crate::model::StepStatus::Succeeded, 1);
        lp.blocks = Some(Box::new(crate::model::Blocks {
            kind: crate::model::BlockKind::Branches,
            frames: vec![
                Arc::clone(&state.frames["frame:/l.iterations[0]"]),
                Arc::clone(&clean),
            ],
            after: None,
        }));
        assert!(s.touches_step(&lp));
        state.steps.insert("loop".into(), Arc::new(lp));
        s.state(&mut state);
        let text = serde_json::to_string(&state).unwrap_or_default();
        assert!(!text.contains("sekrit"), "{text}");
        assert!(Arc::ptr_eq(&clean, &state.frames["frame:/l.iterations[2]"]));
        let blocks = state.steps["loop"].blocks.as_ref().expect("blocks");
        assert!(
            Arc::ptr_eq(&clean, &blocks.frames[1]),
            "a clean frame stays shared"
        );
    }

    #[test]
    fn the_search_finds_what_contains_finds() {
        let all = vec!["abc".to_owned(), "\\\"b".to_owned(), "4".to_owned()];
        let search = Search::new(all.clone());
        for text in ["", "ab", "xabcx", "a\\\"b", "4", "no", "x4", "é4"] {
            assert_eq!(
                search.hits(text),
                all.iter().any(|n| text.contains(n.as_str())),
                "{text}"
            );
        }
        assert!(!Search::new(Vec::new()).hits("anything"));
    }

    #[test]
    fn scrubs_values_keys_and_substrings() {
        let secrets = [
            json!("hunter2"),
            json!({"k": "abc-token"}),
            json!(4242),
            json!(""),
        ];
        let s = Scrubber::new(secrets.iter());
        let mut v = json!({"a": "x hunter2 y", "hunter2": 1, "n": 4242, "deep": ["abc-token"],
                           "keep": "fine", "e": "", "pin": "pin=4242"});
        s.value(&mut v);
        assert_eq!(
            v,
            json!({"a": "x [redacted] y", "[redacted]": 1, "n": "[redacted]",
                   "deep": ["[redacted]"], "keep": "fine", "e": "", "pin": "pin=[redacted]"})
        );
    }

    #[test]
    fn scrubs_every_encoding() {
        let secret = "pw\"Q\\z\u{1}é";
        let s = Scrubber::new([json!(secret)].iter());
        let json_form = serde_json::to_string(secret).unwrap_or_default();
        let debug_form = format!("{secret:?}");
        let twice = serde_json::to_string(&json_form).unwrap_or_default();
        for text in [
            format!("raw {secret} end"),
            format!("json {json_form} end"),
            format!("debug {debug_form} end"),
            format!("twice {twice} end"),
        ] {
            let out = s.line(&text);
            assert!(!out.contains(secret), "{out}");
            assert!(out.contains(REDACTED), "{out}");
            assert!(!out.contains("pw\\\"Q"), "{out}");
        }
    }

    #[test]
    fn derived_values_are_replaced_wholly_and_long_leaves_as_substrings() {
        let s = Scrubber::new([].iter());
        assert!(s.is_empty());
        s.add_derived(&json!({"kind": "function", "id": "fn-derived"}));
        s.add_derived(&json!("derived-id"));
        s.add_derived(&json!("ab"));
        let mut v = json!({"t": {"kind": "function", "id": "fn-derived"},
                           "w": {"kind": "workflow", "workflow": "derived-id"},
                           "m": "no workflow \"derived-id\"", "short": "ab", "in": "abc"});
        s.value(&mut v);
        assert_eq!(
            v,
            json!({"t": "[redacted]", "w": {"kind": "workflow", "workflow": "[redacted]"},
                   "m": "no workflow \"[redacted]\"", "short": "[redacted]", "in": "abc"})
        );
    }
}
