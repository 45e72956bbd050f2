//! A fast path of serde's derived `Deserialize` for the two commonest element shapes of a
//! checked document: a plain edge and a plain step (D-199, kept by D-330 because it still
//! pays). The derive is the definition; these build the same value directly, because the
//! derive's `#[serde(flatten)] extra` buffers every member before reading any. Each
//! returns `None` for any shape it does not cover, which the derive then reads.
//!
//! Held equal to the derive by `model::validate::plain::tests::the_plain_builds_are_the_derived_ones`
//! (property: steps and edges drawn with every member form, right and wrong types,
//! unknown members, in any order; whatever a plain build returns is the derive's value,
//! member order included) and, over whole documents, by
//! `model::validate::tests::the_workflow_built_as_the_walk_goes_is_the_derived_one`.
//!
//! A second fast path rides on the first (D-371): an element a plain build covers is one
//! the element checks can find no problem in — once a step's id is checked too
//! ([`clean_step`]) — so while the walk has found no problem it keeps such an element
//! without running the checks. Held equal to the checks by
//! `model::validate::plain::tests::what_the_plain_builds_cover_the_checks_pass` (property:
//! the same drawn steps and edges, runnable or not; whatever `clean_step` or `plain_edge`
//! covers, the walk's own checks of it find nothing) and, over whole documents, by
//! `model::validate::tests::the_unchecked_clean_elements_hide_no_problem`.

use serde_json::Value;

use super::super::{Edge, Extra, Id, Step, Uses, When};

/// The [`Edge`] serde's derive reads from `v`, built directly when `v` is an object whose
/// `from` and `to` are strings and whose `when`, if present, is `"success"` or `"error"`
/// (every other member is the edge's extra, in document order); `None` for any other
/// shape, which the derive then reads (D-199). The derive's `#[serde(flatten)]` buffers
/// every member before reading any, which made it most of the cost of a checked edge.
pub(super) fn plain_edge(v: &Value) -> Option<Edge> {
    let Value::Object(members) = v else {
        return None;
    };
    let (mut from, mut to, mut when) = (None, None, None);
    let mut extra = Extra::new();
    for (name, value) in members {
        match (name.as_str(), value) {
            ("from", Value::String(s)) => from = Some(Id::from(s.as_str())),
            ("to", Value::String(s)) => to = Some(Id::from(s.as_str())),
            ("when", Value::String(s)) => {
                when = Some(match s.as_str() {
                    "success" => When::Success,
                    "error" => When::Error,
                    _ => return None,
                })
            }
            ("from" | "to" | "when", _) => return None,
            (_, value) => {
                extra.insert(name.clone(), value.clone());
            }
        }
    }
    Some(Edge {
        from: from?,
        to: to?,
        when,
        extra,
    })
}

/// The [`Step`] serde's derive reads from `v`, built directly for the common shape: an
/// object of a string `id`, an object `with` and a `uses` object of string `app` and
/// `action` only; `None` for anything else (another member, another type, `null`), which
/// the derive then reads (D-199).
pub(super) fn plain_step(v: &Value) -> Option<Step> {
    let Value::Object(members) = v else {
        return None;
    };
    let (mut id, mut uses, mut with) = (None, None, None);
    for (name, value) in members {
        match (name.as_str(), value) {
            ("id", Value::String(s)) => id = Some(Id::from(s.as_str())),
            ("uses", Value::Object(target)) => {
                let mut plain = Uses::default();
                for (name, value) in target {
                    match (name.as_str(), value) {
                        ("app", Value::String(s)) => plain.app = Some(Id::from(s.as_str())),
                        ("action", Value::String(s)) => plain.action = Some(Id::from(s.as_str())),
                        _ => return None,
                    }
                }
                uses = Some(plain);
            }
            ("with", Value::Object(map)) => with = Some(map.clone()),
            _ => return None,
        }
    }
    Some(Step {
        id: id?,
        uses,
        with,
        retry: None,
        on_error: None,
        ports: None,
        notes: None,
        position: None,
        fan_out: None,
        extra: Extra::new(),
    })
}

/// A plain step the step checks can find no problem in (D-371): [`plain_step`]'s, when
/// its id is not empty and has no '.' (PLAN-8), and, for a `runnable` walk (PLAN-9), its
/// `uses` names a non-empty app and action; `None` otherwise, and the walk then checks
/// the step. (Every edge [`plain_edge`] builds passes the edge checks as it is.)
pub(super) fn clean_step(v: &Value, runnable: bool) -> Option<Step> {
    let step = plain_step(v)?;
    let id = step.id.as_str();
    if id.is_empty() || id.contains('.') {
        return None;
    }
    if runnable {
        let uses = step.uses.as_ref()?;
        let named = |part: &Option<Id>| part.as_ref().is_some_and(|p| !p.as_str().is_empty());
        if !named(&uses.app) || !named(&uses.action) {
            return None;
        }
    }
    Some(step)
}

#[cfg(test)]
mod tests {
    use super::super::{KeyGate, Path, Walk};
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::{Map, json};

    /// A member value of every kind the two shapes meet, right or wrong.
    fn value() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![
            json!("s"),
            json!("a.b"),
            json!("success"),
            json!("error"),
            json!("other"),
            json!(""),
            json!(1),
            Value::Null,
            json!(true),
            json!([]),
            json!({}),
            json!({"app": "a", "action": "b"}),
            json!({"app": "a"}),
            json!({"action": "b", "app": "a"}),
            json!({"app": "a", "action": "b", "connection": null}),
            json!({"app": 1, "action": "b"}),
            json!({"app": "", "action": "b"}),
            json!({"app": "a", "action": ""}),
            json!({"function": "f"}),
            json!({"q": {"$": "vars.v"}}),
        ])
    }

    /// An object of members drawn from `names`, each with a drawn value, in drawn order.
    fn object(names: &'static [&'static str]) -> impl Strategy<Value = Value> {
        prop::collection::vec((prop::sample::select(names), value()), 0..6).prop_map(|members| {
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect::<Map<_, _>>(),
            )
        })
    }

    /// The walk's own checks of one step or edge, runnable or not: the problems found.
    fn checked_alone(
        element: &Value,
        runnable: bool,
        check: fn(&mut Walk, &Value, Path<'_>),
    ) -> Vec<String> {
        let mut walk = Walk {
            errors: Vec::new(),
            gate: KeyGate::Check,
            runnable,
            too_deep: false,
            parts: None,
        };
        check(&mut walk, element, Path::Item(&Path::At("/x"), 0));
        walk.errors
            .iter()
            .map(|e| format!("{} {}", e.path, e.message))
            .collect()
    }

    /// A step of the plain shape's members only — `id`, `uses`, `with`, each maybe absent,
    /// in any order — whose values are mostly right: where `clean_step` must still tell
    /// a step the checks refuse (an empty or dotted id, a `uses` a runnable walk refuses)
    /// from one they pass.
    fn near_plain_step() -> impl Strategy<Value = Value> {
        let id =
            prop::sample::select(vec!["a", "step-1", "", "a.b", ".", "x."]).prop_map(Value::from);
        let uses = prop::sample::select(vec![
            json!({"app": "a", "action": "b"}),
            json!({"action": "b", "app": "a"}),
            json!({"app": "a"}),
            json!({"action": "b"}),
            json!({}),
            json!({"app": "", "action": "b"}),
            json!({"app": "a", "action": ""}),
            json!({"app": "a", "action": 1}),
        ]);
        let with = prop::sample::select(vec![json!({}), json!({"k": {"$": "vars.v"}}), json!([])]);
        let order = Just(vec![0usize, 1, 2]).prop_shuffle();
        (
            prop::option::of(id),
            prop::option::of(uses),
            prop::option::of(with),
            order,
        )
            .prop_map(|(id, uses, with, order)| {
                let mut members = [("id", id), ("uses", uses), ("with", with)];
                Value::Object(
                    order
                        .into_iter()
                        .filter_map(|i| {
                            let (k, v) = std::mem::take(&mut members[i]);
                            Some((k.to_owned(), v?))
                        })
                        .collect::<Map<_, _>>(),
                )
            })
    }

    const STEP_NAMES: &[&str] = &["id", "id", "uses", "uses", "with", "retry", "notes", "x"];
    const EDGE_NAMES: &[&str] = &["from", "to", "from", "to", "when", "label", "x-y"];

    proptest! {
        #[test]
        fn the_plain_builds_are_the_derived_ones(step in object(STEP_NAMES), edge in object(EDGE_NAMES)) {
            if let Some(plain) = plain_step(&step) {
                let derived = Step::deserialize(&step);
                prop_assert!(derived.is_ok(), "the derive refuses {}", step);
                let derived = derived.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(serde_json::to_string(&plain).ok(), serde_json::to_string(&derived).ok());
                prop_assert_eq!(plain, derived);
            }
            if let Some(plain) = plain_edge(&edge) {
                let derived = Edge::deserialize(&edge);
                prop_assert!(derived.is_ok(), "the derive refuses {}", edge);
                let derived = derived.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(serde_json::to_string(&plain).ok(), serde_json::to_string(&derived).ok());
                prop_assert_eq!(plain, derived);
            }
        }
    }

    proptest! {
        /// The second fast path (D-371) skips only checks that would pass: whatever
        /// `clean_step` or `plain_edge` covers, the walk's checks of it find no problem.
        #[test]
        fn what_the_plain_builds_cover_the_checks_pass(
            drawn in object(STEP_NAMES),
            near in near_plain_step(),
            edge in object(EDGE_NAMES),
            runnable in any::<bool>(),
        ) {
            for step in [&drawn, &near] {
                if clean_step(step, runnable).is_some() {
                    prop_assert_eq!(checked_alone(step, runnable, Walk::step), Vec::<String>::new(), "{}", step);
                }
            }
            if plain_edge(&edge).is_some() {
                prop_assert_eq!(checked_alone(&edge, runnable, Walk::edge), Vec::<String>::new(), "{}", edge);
            }
        }
    }

    /// `clean_step` leaves to the checks exactly the plain steps they refuse: an empty or
    /// dotted id, and for a runnable walk a `uses` without a non-empty app and action.
    #[test]
    fn clean_step_leaves_the_refused_plain_steps_to_the_checks() {
        let ok = json!({"id": "a", "uses": {"app": "x", "action": "y"}});
        assert!(clean_step(&ok, true).is_some());
        for (step, runnable) in [
            (
                json!({"id": "", "uses": {"app": "x", "action": "y"}}),
                false,
            ),
            (
                json!({"id": "a.b", "uses": {"app": "x", "action": "y"}}),
                false,
            ),
            (json!({"id": "a"}), true),
            (json!({"id": "a", "uses": {"app": "x"}}), true),
            (json!({"id": "a", "uses": {"app": "", "action": "y"}}), true),
            (json!({"id": "a", "uses": {"app": "x", "action": ""}}), true),
        ] {
            assert!(plain_step(&step).is_some(), "{step}");
            assert!(clean_step(&step, runnable).is_none(), "{step}");
            assert!(
                !checked_alone(&step, runnable, Walk::step).is_empty(),
                "{step}"
            );
        }
        assert!(clean_step(&json!({"id": "a"}), false).is_some());
    }

    /// The plain builds are taken for the shapes they exist for (the property above would
    /// pass vacuously otherwise).
    #[test]
    fn the_common_shapes_take_the_plain_builds() {
        let step = json!({"id": "a", "uses": {"app": "x", "action": "y"}, "with": {"k": 1}});
        assert!(plain_step(&step).is_some());
        assert!(plain_step(&json!({"id": "a"})).is_some());
        let edge = json!({"from": "a", "to": "b", "when": "error", "label": [1]});
        assert!(plain_edge(&edge).is_some());
        assert!(plain_edge(&json!({"from": "a", "to": "b"})).is_some());
    }
}
