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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::{Map, json};

    /// A member value of every kind the two shapes meet, right or wrong.
    fn value() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![
            json!("s"),
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
