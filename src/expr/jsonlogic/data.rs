//! What `var` reads (JSON data, a run scope's data root, an item of `map` & co.) and the
//! general JS property walk over it (expr-notes § var).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::rc::Rc;

use serde_json::Value;

use super::eval::eval;
use super::fast::{json_out, val_out};
use super::node::{Node, Segment};
use crate::expr::scope::DataRoot;
use crate::expr::value::{
    Val, object_get, property, string_property, to_js_string, to_number, truthy,
};

/// What `var` reads from.
pub(super) enum Data<'a, 'b> {
    Json(&'a Value),
    /// A run scope's data root, and the values one evaluation builds from it.
    Root(DataRoot<'a>, &'b RootCache),
    Item(&'b Val<'a>),
}

/// The data root is not one JSON value: `{"var": ""}` (and `{"var": "steps"}` over a
/// layered `steps`, D-187) build one. They are built at most once per evaluation and
/// shared, so the root is one object during a resolution, as the reference's data is:
/// `{"===": [{"var": ""}, {"var": ""}]}` is true there and here (D-242).
#[derive(Default)]
pub(super) struct RootCache {
    pub(super) whole: OnceCell<Rc<Value>>,
    pub(super) steps: OnceCell<Rc<Value>>,
}

impl<'a> Data<'a, '_> {
    pub(super) fn whole(&self) -> At<'a> {
        match self {
            Data::Json(v) => At::Json(v),
            Data::Root(r, cache) => {
                // SEC-1: `to_value` notes the read of the whole root; a later read in the
                // same evaluation shares the value and the taint mark is already set.
                let whole = cache.whole.get_or_init(|| Rc::new(r.to_value()));
                At::Computed(Val::Owned(Rc::clone(whole)))
            }
            Data::Item(v) => At::from_val((*v).clone()),
        }
    }
}

/// What `var` answers when its path names nothing and it has no default.
pub(super) const NULL: &Value = &Value::Null;

/// Where a walk stands: on a borrowed JSON value (the fast, common case) or on a value
/// JS computed (`length`, a string index, an item of a fresh array). A borrowed scalar
/// means exactly what [`Val::from_json`] makes of it.
pub(super) enum At<'a> {
    Json(&'a Value),
    Computed(Val<'a>),
}

impl<'a> At<'a> {
    pub(super) fn from_val(v: Val<'a>) -> At<'a> {
        match v {
            Val::Ref(r) => At::Json(r),
            other => At::Computed(other),
        }
    }

    /// One property read; `None` when it names nothing (expr-notes § var).
    pub(super) fn step<S: Segment>(self, seg: &S) -> Option<At<'a>> {
        match self {
            At::Json(Value::Object(map)) => object_get(map, seg.as_ref()).map(At::Json),
            At::Json(Value::Array(items)) => {
                if seg.as_ref() == "length" {
                    Some(At::Computed(Val::Num(items.len() as f64)))
                } else {
                    seg.index().and_then(|i| items.get(i)).map(At::Json)
                }
            }
            At::Json(Value::String(s)) => string_property(s, seg.as_ref()).map(At::Computed),
            At::Json(_) => None,
            At::Computed(v) => property(&v, seg.as_ref()).map(At::from_val),
        }
    }

    pub(super) fn is_nullish(&self) -> bool {
        match self {
            At::Json(v) => v.is_null(),
            At::Computed(v) => v.is_nullish(),
        }
    }

    pub(super) fn into_val(self) -> Val<'a> {
        match self {
            At::Json(v) => Val::from_json(v),
            At::Computed(v) => v,
        }
    }

    /// [`truthy`] without building a value.
    pub(super) fn truthy(&self) -> bool {
        match self {
            At::Json(v) => truthy(&Val::from_json(v)),
            At::Computed(v) => truthy(v),
        }
    }

    /// [`to_number`] without building a value.
    pub(super) fn number(&self) -> f64 {
        match self {
            At::Json(v) => to_number(&Val::from_json(v)),
            At::Computed(v) => to_number(v),
        }
    }

    /// [`Val::to_json`] straight from the data, borrowing what the data holds.
    pub(super) fn into_out(self) -> Cow<'a, Value> {
        match self {
            At::Json(v) => json_out(v),
            At::Computed(v) => val_out(v),
        }
    }
}

/// Walk a dotted path with JS property semantics (expr-notes § var); `None` when the path
/// names nothing or steps through null/undefined.
pub(super) fn walk<'a, S: Segment>(data: &Data<'a, '_>, segments: &[S]) -> Option<At<'a>> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(data.whole());
    };
    let mut rest = rest;
    let mut current = match data {
        Data::Json(v) => At::Json(v).step(first)?,
        Data::Root(r, cache) if first.as_ref() == "steps" => {
            // D-187, D-195: an entry is read through every layer of `steps`; the whole
            // root is built (one layer's once per write, layers merged per read).
            r.note_read(segments); // SEC-1 taint tracking
            match rest.split_first() {
                Some((id, after)) => {
                    rest = after;
                    At::Json(r.step_entry(id.as_ref())?)
                }
                None => {
                    // A layered `steps` is built once per evaluation, like the whole
                    // root (D-242).
                    if let Some(whole) = cache.steps.get() {
                        return Some(At::Computed(Val::Owned(Rc::clone(whole))));
                    }
                    match r.steps_value() {
                        std::borrow::Cow::Borrowed(whole) => At::Json(whole),
                        std::borrow::Cow::Owned(whole) => {
                            let whole = cache.steps.get_or_init(|| Rc::new(whole));
                            return Some(At::Computed(Val::Owned(Rc::clone(whole))));
                        }
                    }
                }
            }
        }
        Data::Root(r, _) => {
            r.note_read(segments); // SEC-1 taint tracking
            At::Json(r.root(first.as_ref())?)
        }
        Data::Item(v) => At::from_val(property(v, first.as_ref())?),
    };
    for seg in rest {
        if current.is_nullish() {
            return None;
        }
        current = current.step(seg)?;
    }
    Some(current)
}

/// A dotted-path lookup on the data root with the same JS property walk `var` uses
/// (EXPR-1): `None` when the path names nothing. An empty segment list names nothing too:
/// an empty path never exposes the root (ENV-4).
pub(crate) fn lookup_root<'a, S: Segment>(root: DataRoot<'a>, segments: &[S]) -> Option<Val<'a>> {
    if segments.is_empty() {
        return None;
    }
    match walk(&Data::Root(root, &RootCache::default()), segments)?.into_val() {
        Val::Undefined => None,
        v => Some(v),
    }
}

/// `var` with a dynamic path value; `None` when it names nothing.
pub(super) fn walk_dynamic<'a>(path: &Val<'a>, data: &Data<'a, '_>) -> Option<At<'a>> {
    match path {
        Val::Undefined | Val::Null => Some(data.whole()),
        Val::Str(s) if s.is_empty() => Some(data.whole()),
        other => {
            let text = to_js_string(other);
            let segs: Vec<&str> = text.split('.').collect();
            walk(data, &segs)
        }
    }
}

/// `var`'s answer: what the walk found, else its default, else null.
pub(super) fn or_default<'a>(found: Option<At<'a>>, default: Option<&'a Value>) -> At<'a> {
    match found {
        None | Some(At::Computed(Val::Undefined)) => At::Json(default.unwrap_or(NULL)),
        Some(at) => at,
    }
}

/// Whether `missing` counts a key as missing: its path reads null or nothing.
pub(super) fn is_missing<'a>(key: &Val<'a>, data: &Data<'a, '_>) -> bool {
    or_default(walk_dynamic(key, data), None).is_nullish()
}

/// A `var` node's answer by the general walk (see [`static_var`] for the common case).
pub(super) fn var<'a>(node: &'a Node, data: &Data<'a, '_>) -> Option<At<'a>> {
    match node {
        Node::Var(segs, default) => Some(or_default(walk(data, segs), default.as_deref())),
        Node::VarDyn(path, default) => Some(or_default(
            walk_dynamic(&eval(path, data), data),
            default.as_deref(),
        )),
        _ => None,
    }
}
