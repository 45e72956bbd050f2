//! Walking a value of the document for its `{{ … }}` markers (YML-5, YML-6; D-230, D-231).
//!
//! Owns: checking every marker of a value against the names visible where it sits, and
//! building the value the imported workflow carries: a string that is one whole marker
//! becomes a type-preserving `{"$": path}` where a value is bound, any other string with
//! markers a w6w template whose markers name w6w paths. A marker the text allows but w6w
//! cannot express (an expression beyond a path, a string w6w would read as literal text)
//! is refused only for running, and so is a map w6w would read as a marker (EXPR-6).
//! Invariant: recursion follows the document's nesting, which `yaml_tree` bounds; a
//! problem's path is built only when the problem is reported.

use serde_json::{Map, Value, json};

use super::Ctx;
use super::bind::{self, Piece, Root};
use crate::dialect::Pos;
use crate::dialect::yaml_tree::{N, Y};
use crate::model::pointer_token;

/// What the imported workflow does with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// Bound as a value: a whole-marker string keeps the type of what it reads.
    Value,
    /// Rendered: every string stays a string (render, D-232).
    Text,
}

/// One step down from the value's root, for a problem's JSON Pointer.
enum Tok<'y> {
    Key(&'y str),
    Index(usize),
}

struct Walker<'c, 'm, 'y> {
    cx: &'c mut Ctx<'m>,
    base: &'y str,
    reader: &'y str,
    toks: Vec<Tok<'y>>,
    use_: Use,
}

/// Check the markers of `y` (at JSON Pointer `base`, in step `reader`) and build the value
/// the imported workflow carries.
pub(super) fn rewrite(cx: &mut Ctx<'_>, y: &Y, base: &str, reader: &str, use_: Use) -> Value {
    let mut w = Walker {
        cx,
        base,
        reader,
        toks: Vec::new(),
        use_,
    };
    w.value(y)
}

impl<'y> Walker<'_, '_, 'y> {
    fn path(&self) -> String {
        let mut p = self.base.to_owned();
        for t in &self.toks {
            p.push('/');
            match t {
                Tok::Key(k) => p.push_str(&pointer_token(k)),
                Tok::Index(i) => p.push_str(itoa::Buffer::new().format(*i)),
            }
        }
        p
    }

    fn value(&mut self, y: &'y Y) -> Value {
        if self.cx.full() {
            return Value::Null;
        }
        match &y.node {
            N::Str(s) => self.string(s, y.pos),
            N::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.toks.push(Tok::Index(i));
                    out.push(self.value(item));
                    self.toks.pop();
                }
                Value::Array(out)
            }
            N::Map(entries) => {
                if let [(k, kpos, _)] = entries.as_slice()
                    && matches!(k.as_str(), "$" | "$expr")
                {
                    let path = self.path();
                    self.cx.unsupported(
                        "YML-5",
                        path,
                        *kpos,
                        format!(
                            "a map whose only key is {k:?} is a marker in w6w (EXPR-6), which \
                             has no escape form: it would be evaluated instead of passed as data"
                        ),
                    );
                }
                let mut out = Map::new();
                for (k, _, v) in entries {
                    self.toks.push(Tok::Key(k));
                    out.insert(k.clone(), self.value(v));
                    self.toks.pop();
                }
                Value::Object(out)
            }
            _ => y.to_json(),
        }
    }

    fn string(&mut self, s: &str, pos: Pos) -> Value {
        let split = bind::split(s);
        if !split.has_markers() {
            return json!(s);
        }
        let mut out = String::with_capacity(s.len() + 16);
        let mut whole = None;
        let mut resolved = true;
        for piece in &split.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Marker(inner) => match self.marker(inner, pos) {
                    Some(path) => {
                        out.push_str("{{ ");
                        out.push_str(&path);
                        out.push_str(" }}");
                        whole = Some(path);
                    }
                    // Reported; the value is never used (the document does not import).
                    None => resolved = false,
                },
            }
        }
        if !resolved {
            return Value::Null;
        }
        if split.unterminated {
            let path = self.path();
            self.cx.unsupported(
                "YML-5",
                path,
                pos,
                "the string has a {{ with no }} after it as well as markers: w6w reads such a \
                 string as literal text (TPL-3), so its markers would not be resolved",
            );
        }
        match (self.use_, split.pieces.as_slice(), whole) {
            (Use::Value, [Piece::Marker(_)], Some(path)) if !split.unterminated => {
                json!({"$": path})
            }
            _ => Value::String(out),
        }
    }

    /// One marker: the w6w path it reads, or `None` after reporting why there is none.
    fn marker(&mut self, inner: &str, pos: Pos) -> Option<String> {
        let Some(segments) = bind::path_of(inner) else {
            self.expression(inner, pos);
            return None;
        };
        let (root, rest) = segments.split_first()?;
        let resolved = match self.cx.scope.root(root, self.reader) {
            Err(e) => Err(e),
            Ok(Root::Payload) => Ok(Ok(join("trigger.event", rest))),
            Ok(Root::Item) => Ok(Ok(join("foreach.item", rest))),
            Ok(Root::Step(b)) => b.check(rest).map(|()| b.w6w_path(rest)),
        };
        match resolved {
            Ok(Ok(path)) => Some(path),
            Ok(Err(why)) => {
                let path = self.path();
                self.cx
                    .unsupported("YML-5", path, pos, format!("{{{{{inner}}}}}: {why}"));
                None
            }
            Err(e) => {
                self.reference_problem(&e, inner, pos);
                None
            }
        }
    }

    /// A reference a marker makes that the document does not allow, at the marker.
    fn reference_problem(&mut self, e: &super::bind::RefError, inner: &str, pos: Pos) {
        let path = self.path();
        self.cx.problem(
            e.code,
            e.clause,
            path,
            pos,
            format!("{{{{{inner}}}}}: {}", e.message),
        );
    }

    /// A marker that is not a path: the names it reads must still be readable (YML-4,
    /// YML-6); running it needs an expression language the text does not define.
    fn expression(&mut self, inner: &str, pos: Pos) {
        for root in bind::expression_roots(inner) {
            let err = match self.cx.scope.root(root, self.reader) {
                Err(e) if e.code != "unknown_reference" => Some(e),
                Ok(Root::Step(b)) => b.check(&[]).err(),
                _ => None,
            };
            if let Some(e) = err {
                self.reference_problem(&e, inner, pos);
            }
        }
        let path = self.path();
        self.cx.unsupported(
            "YML-5",
            path,
            pos,
            format!(
                "{{{{{inner}}}}} at line {}: only a path (an earlier step's id, then its \
                 members) can run; yaml-steps.txt does not define an expression language",
                pos.line
            ),
        );
    }
}

fn join(base: &str, rest: &[&str]) -> String {
    let mut p = base.to_owned();
    for s in rest {
        p.push('.');
        p.push_str(s);
    }
    p
}
