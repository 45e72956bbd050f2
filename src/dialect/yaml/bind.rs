//! YML-5 and YML-6: what a `{{ … }}` marker may read, and the w6w reference it becomes.
//!
//! Owns: splitting a string into text and markers; the names a marker may root at
//! (docs/decisions.md D-230: an earlier step's id, `message` for the trigger's payload, a
//! `for_each` body's `as` name); the check of a path against what its step's body kind
//! binds (YML-5: an index into a `for_each`, a branch of a `parallel`, a part of a
//! `render`, `status`/`event` of a `wait_for`; nothing into `wait`/`stop`, YML-6); and the
//! w6w path each readable binding has in the imported workflow (D-231).
//! Invariant: a reference is resolved or refused — never carried as literal text.
//! Does not know: where the marker sits in the document (the caller reports the position).

use std::collections::HashMap;

/// The root a marker uses to read the trigger's payload (D-230).
pub(super) const PAYLOAD_ROOT: &str = "message";

/// A piece of a string: literal text or the inside of one `{{ … }}` marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece<'s> {
    Text(&'s str),
    Marker(&'s str),
}

/// A string split at its markers. `unterminated`: a `{{` with no `}}` after it.
pub(super) struct Split<'s> {
    pub pieces: Vec<Piece<'s>>,
    pub unterminated: bool,
}

impl Split<'_> {
    pub(super) fn has_markers(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Marker(_)))
    }
}

pub(super) fn split(s: &str) -> Split<'_> {
    let mut pieces = Vec::new();
    let mut rest = s;
    let mut unterminated = false;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            unterminated = true;
            break;
        };
        if open > 0 {
            pieces.push(Piece::Text(&rest[..open]));
        }
        pieces.push(Piece::Marker(&after[..close]));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Split {
        pieces,
        unterminated,
    }
}

/// The dotted path inside a marker (`lookup.id`, `loop.0.send`), or `None` when the
/// marker holds anything else (an expression the text does not define).
pub(super) fn path_of(inner: &str) -> Option<Vec<&str>> {
    let inner = inner.trim();
    if inner.is_empty() {
        return None;
    }
    let segments: Vec<&str> = inner.split('.').collect();
    let ok = |s: &&str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    segments.iter().all(ok).then_some(segments)
}

/// The names a marker that is not a plain path reads: each identifier not after a dot and
/// not inside quotes. Used only to refuse reads of later or unreadable steps (YML-4, 6).
pub(super) fn expression_roots(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_'))
            {
                i += 1;
            }
            if !(start > 0 && bytes[start - 1] == b'.') {
                out.push(&expr[start..i]);
            }
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += 1;
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// What a step binds (YML-5), as far as a path into it can be checked.
#[derive(Debug, Clone)]
pub(super) enum Shape {
    /// Any path: action call, value, run, agent, call, route, choose.
    Free,
    /// `wait`, `stop`: nothing readable (YML-6).
    Unreadable,
    /// `render` of one string: the string itself, no path into it.
    Text,
    /// `render` of a map: one level, the part names.
    Parts(Vec<String>),
    /// `for_each` / `repeat`: a list indexed by position, each element the body's scope
    /// (`None` when the body is not known, e.g. `repeat`).
    Indexed(Option<Vec<Binder>>),
    /// `parallel`: the branch scopes by name.
    Branches(Vec<(String, Vec<Binder>)>),
    /// `wait_for`: `status` and `event`.
    StatusEvent,
}

/// A readable name: a step (its id, body kind and what it binds) and where its binding is
/// in the imported workflow.
#[derive(Debug, Clone)]
pub(super) struct Binder {
    pub id: String,
    pub kind: &'static str,
    pub shape: Shape,
    /// The w6w path of the bound value (D-231); `None` when the body kind is not runnable.
    pub base: Option<String>,
}

/// A reference the document itself makes invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RefError {
    pub code: &'static str,
    pub clause: &'static str,
    pub message: String,
}

fn invalid(message: String) -> RefError {
    RefError {
        code: "invalid_reference",
        clause: "YML-5",
        message,
    }
}

impl Binder {
    /// The binder of a step whose binding sits at `base` (runnable kinds) or nowhere.
    pub(super) fn new(id: &str, kind: &'static str, shape: Shape, base: Option<String>) -> Self {
        Binder {
            id: id.to_owned(),
            kind,
            shape,
            base,
        }
    }

    /// YML-5/YML-6: is `rest` (the segments after the id) a path into what this step binds?
    pub(super) fn check(&self, rest: &[&str]) -> Result<(), RefError> {
        let id = &self.id;
        match &self.shape {
            Shape::Free => Ok(()),
            Shape::Unreadable => Err(RefError {
                code: "unreadable_step",
                clause: "YML-6",
                message: format!(
                    "{id:?} is a {} step: it binds nothing readable, so a path into it is invalid",
                    self.kind
                ),
            }),
            Shape::Text => match rest.first() {
                None => Ok(()),
                Some(s) => Err(invalid(format!(
                    "{id:?} is a render of one string: it binds the rendered string, which has no member {s:?}"
                ))),
            },
            Shape::Parts(parts) => match rest {
                [] => Ok(()),
                [p] if parts.iter().any(|x| x == p) => Ok(()),
                [p] => Err(invalid(format!(
                    "{id:?} is a render of the parts {}: it has no part {p:?}",
                    parts.join(", ")
                ))),
                [p, s, ..] => Err(invalid(format!(
                    "{id:?}.{p} is a rendered string, which has no member {s:?}"
                ))),
            },
            Shape::Indexed(members) => {
                let Some(index) = rest.first() else {
                    return Ok(());
                };
                if index.parse::<usize>().is_err() {
                    return Err(invalid(format!(
                        "{id:?} is a {} step: it binds a list of iteration scopes indexed by \
                         position, so {index:?} must be a number such as 0",
                        self.kind
                    )));
                }
                match (members, rest.get(1)) {
                    (Some(members), Some(m)) => member(id, members, m, &rest[2..]),
                    _ => Ok(()),
                }
            }
            Shape::Branches(branches) => {
                let Some(b) = rest.first() else {
                    return Ok(());
                };
                let Some((_, members)) = branches.iter().find(|(n, _)| n == b) else {
                    let names: Vec<&str> = branches.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(invalid(format!(
                        "{id:?} is a parallel step whose branches are {}: it has no branch {b:?}",
                        names.join(", ")
                    )));
                };
                match rest.get(1) {
                    Some(m) => member(&format!("{id}.{b}"), members, m, &rest[2..]),
                    None => Ok(()),
                }
            }
            Shape::StatusEvent => match rest.first() {
                None | Some(&"status") | Some(&"event") => Ok(()),
                Some(s) => Err(invalid(format!(
                    "{id:?} is a wait_for step: it binds a scope with the members status and event, not {s:?}"
                ))),
            },
        }
    }

    /// The w6w path `rest` reads (D-231), or why the imported workflow cannot read it.
    pub(super) fn w6w_path(&self, rest: &[&str]) -> Result<String, String> {
        let join = |base: &str, rest: &[&str]| {
            let mut p = base.to_owned();
            for s in rest {
                p.push('.');
                p.push_str(s);
            }
            p
        };
        match (&self.shape, &self.base) {
            (Shape::Indexed(Some(_)), Some(items)) => match rest.split_first() {
                Some((i, more)) => Ok(join(&format!("{items}.{i}.result"), more)),
                None => Err(format!(
                    "the whole list of {:?}'s iteration scopes has no w6w equivalent (each \
                     iteration's scope is wrapped in the engine's foreach output); read one \
                     iteration, {{{{ {}.0 }}}}",
                    self.id, self.id
                )),
            },
            (_, Some(base)) => Ok(join(base, rest)),
            (_, None) => Err(format!(
                "{:?} is a {} step, which cannot run on w6w",
                self.id, self.kind
            )),
        }
    }
}

fn member(owner: &str, members: &[Binder], m: &str, rest: &[&str]) -> Result<(), RefError> {
    match members.iter().find(|b| b.id == m) {
        Some(b) => b.check(rest),
        None => Err(invalid(format!(
            "{owner} has no step {m:?}: its scope holds {}",
            if members.is_empty() {
                "nothing readable".to_owned()
            } else {
                members
                    .iter()
                    .map(|b| b.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
    }
}

/// Where each step of the document is, for refusing a read of one that is not visible.
#[derive(Debug, Clone)]
pub(super) struct Site {
    pub line: usize,
    /// The body that holds it: `L` for a `for_each` L, `P.b` for branch b of a `parallel`
    /// P (`None` at the top level).
    pub within: Option<String>,
    /// How a step outside that body reads it (`L.<index>.x`, `P.b.x`).
    pub through: Option<String>,
}

/// The names visible at one point of the walk: layers of steps (the top level, then one
/// per `for_each` body or `parallel` branch being walked) and the `as` names in scope.
#[derive(Default)]
pub(super) struct Scope {
    layers: Vec<Layer>,
    /// The bodies being walked (`Site::within` names), innermost last.
    open: Vec<String>,
    items: Vec<(String, usize)>,
    /// Every step id in the document (D-230: a read of one not yet visible is refused).
    pub sites: HashMap<String, Site>,
}

/// The steps of one list, in list order, found by id with a hash probe (D-218).
#[derive(Default)]
struct Layer {
    order: Vec<Binder>,
    index: HashMap<String, usize>,
}

/// What a marker's first segment names.
pub(super) enum Root<'b> {
    Step(&'b Binder),
    /// The trigger's payload (`trigger.event`).
    Payload,
    /// The current `for_each` item (`foreach.item`).
    Item,
}

impl Scope {
    /// Start walking a body (`within` as in [`Site::within`]); `item` is its `as` name.
    pub(super) fn enter(&mut self, within: &str, item: Option<&str>) {
        self.layers.push(Layer::default());
        self.open.push(within.to_owned());
        if let Some(name) = item {
            self.items.push((name.to_owned(), self.layers.len()));
        }
    }

    /// Finish a body: the steps it bound, in list order.
    pub(super) fn leave(&mut self) -> Vec<Binder> {
        let depth = self.layers.len();
        self.items.retain(|(_, d)| *d < depth);
        self.open.pop();
        self.layers.pop().map(|l| l.order).unwrap_or_default()
    }

    /// A step is visible from here on (in the innermost layer).
    pub(super) fn add(&mut self, b: Binder) {
        if self.layers.is_empty() {
            self.layers.push(Layer::default());
        }
        if let Some(top) = self.layers.last_mut() {
            top.index.insert(b.id.clone(), top.order.len());
            top.order.push(b);
        }
    }

    /// Issue 40: every step visible here whose whole binding a w6w path reads (innermost
    /// body last, so an inner id shadows an outer one), with that path — what a JavaScript
    /// `run` body is handed by id.
    pub(super) fn readable(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for b in self.layers.iter().flat_map(|l| l.order.iter()) {
            if let Ok(path) = b.w6w_path(&[]) {
                out.retain(|(id, _)| *id != b.id);
                out.push((b.id.clone(), path));
            }
        }
        out
    }

    /// D-230: resolve a marker's first segment, or say why the document cannot read it.
    pub(super) fn root(&self, name: &str, reader: &str) -> Result<Root<'_>, RefError> {
        #[cfg(test)]
        crate::dialect::work::add(1);
        if let Some(b) = self
            .layers
            .iter()
            .rev()
            .find_map(|l| l.index.get(name).and_then(|&i| l.order.get(i)))
        {
            return Ok(Root::Step(b));
        }
        if self.items.iter().any(|(n, _)| n == name) {
            return Ok(Root::Item);
        }
        if let Some(site) = self.sites.get(name) {
            let later = |line: usize| {
                format!(
                    "{name:?} is a later step (line {line}): steps run in list order, so it has \
                     bound nothing yet"
                )
            };
            if let (Some(w), Some(through)) = (&site.within, &site.through)
                && !self.open.contains(w)
                && name != reader
            {
                return Err(invalid(format!(
                    "{name:?} (line {}) is inside the body of another construct, whose binding \
                     holds it: read it as {{{{ {through} }}}}",
                    site.line
                )));
            }
            let message = if name == reader {
                format!("step {name:?} reads its own binding, which does not exist until it ends")
            } else {
                later(site.line)
            };
            return Err(RefError {
                code: "later_step",
                clause: "YML-4",
                message,
            });
        }
        if name == PAYLOAD_ROOT {
            return Ok(Root::Payload);
        }
        Err(RefError {
            code: "unknown_reference",
            clause: "YML-5",
            message: format!(
                "{name:?} is neither an earlier step nor a name the YAML dialect defines (an \
                 earlier step's id, {PAYLOAD_ROOT} for the trigger's payload, or a for_each's \
                 as name){}",
                if matches!(name, "vars" | "steps" | "trigger" | "secrets" | "documents") {
                    "; w6w's roots are not roots of the YAML dialect (D-230)"
                } else {
                    ""
                }
            ),
        })
    }
}
