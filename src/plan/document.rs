//! The graph rules over a raw document, for save-time validation (`crate::validate`).
//!
//! Owns: [`document_problems`] — the same analysis [`super::plan`] runs over a typed
//! workflow (PLAN-1/2/3, then the plan-time control checks CTRL-1, PLAN-7, CTRL-4…9),
//! run over whatever ids, endpoints and control params the raw document makes usable, so
//! that one validation call reports graph problems together with `model`'s storage-rule
//! problems. A part the storage rules refuse (a step that is not an object, an id or
//! endpoint that is not a string) is simply not usable here; its problem is theirs.
//! Validation runs it when the storage rules refused the document; one they accepted is
//! checked on its typed form by [`super::workflow_problems`], which reads the same values.

use serde_json::Value;

use super::control::{CONTROL_APP, StepView, analyse_controls};
use super::{Needs, analyse};
use crate::model::{ValidationError, When};

/// Every graph problem of the raw workflow document `doc`, in the order the analysis
/// finds them (empty when `doc` is not an object or its `steps` is not an array).
pub(crate) fn document_problems(doc: &Value) -> Vec<ValidationError> {
    let Some(steps) = doc.get("steps").and_then(Value::as_array) else {
        return Vec::new();
    };
    let views: Vec<StepView<'_>> = steps.iter().map(step_view).collect();
    let edges: &[Value] = match doc.get("edges") {
        Some(Value::Array(edges)) => edges,
        _ => &[],
    };
    let has_controls = views.iter().any(|v| v.control.is_some());
    let mut graph = analyse(
        views.len(),
        |i| views.get(i).and_then(|v| v.id),
        edges.iter().map(edge_ends),
        Needs {
            index: has_controls,
            order: false,
        },
    );
    let mut errors = std::mem::take(&mut graph.errors);
    if has_controls {
        errors.extend(analyse_controls(&views, &graph).errors);
    }
    errors
}

/// What the control analysis sees of one raw step: its id when it is a string, its
/// control action when `uses.app` is [`CONTROL_APP`], its `with` when it is an object.
fn step_view(step: &Value) -> StepView<'_> {
    let Some(obj) = step.as_object() else {
        return StepView {
            id: None,
            control: None,
            with: None,
        };
    };
    let control = obj
        .get("uses")
        .and_then(Value::as_object)
        .filter(|u| u.get("app").and_then(Value::as_str) == Some(CONTROL_APP))
        .and_then(|u| u.get("action"))
        .and_then(Value::as_str);
    StepView {
        id: obj.get("id").and_then(Value::as_str),
        control,
        with: obj.get("with").and_then(Value::as_object),
    }
}

/// One raw edge's ends, each when it is a string, and its `when` (`Error` only for the
/// string `"error"`; CTRL-9: such an edge may not touch a sub-block).
fn edge_ends(edge: &Value) -> (Option<&str>, Option<&str>, When) {
    let Some(obj) = edge.as_object() else {
        return (None, None, When::Success);
    };
    let when = if obj.get("when").and_then(Value::as_str) == Some("error") {
        When::Error
    } else {
        When::Success
    };
    (
        obj.get("from").and_then(Value::as_str),
        obj.get("to").and_then(Value::as_str),
        when,
    )
}
