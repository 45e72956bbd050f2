//! Save-time validation: the one gate a workflow document passes before typed code reads it.
//!
//! Owns: [`validate_workflow`], [`validate_save`] (a save over a stored document: MODEL-5's
//! key grammar only on the key's first assignment) and [`Registry`] (MODEL-6's
//! per-account unique index over non-null keys). A document's problems come from the two
//! layers below: `model`'s storage rules (types, required fields, enums, retry
//! well-formedness, the key grammar, dotted ids, the PLAN-9 runnability gate) and `plan`'s
//! graph rules (PLAN-1/2/3, CTRL-1, PLAN-7, CTRL-4…9): over the raw document when the
//! storage rules refused it, over the typed [`Workflow`] deserialized from it when they
//! accepted it (it then reads exactly what the raw document holds). Both are reported
//! together, every problem with its JSON Pointer, sorted into document order; only a
//! document with none is returned as a [`Workflow`], so typed code never sees a
//! malformed one.
//!
//! Invariant: a pure function of the document (and the stored document it replaces);
//! every problem found, not just the first; the nesting bound is checked before anything
//! recursive runs. Refuses to know: how anything runs.

mod registry;

pub(crate) use registry::Registry;

use serde_json::Value;

use crate::model::{
    KeyGate, StorageChecked, ValidationCode as Code, ValidationError, Workflow,
    is_first_key_assignment, storage_checked_workflow,
};

/// What a validation call checks beyond storage rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// PLAN-9: also require runnability (≥ 1 step, `uses.app`/`uses.action` set).
    pub runnable: bool,
}

/// Validate a workflow document. On success the typed workflow is returned; otherwise
/// *all* problems found, in document order.
///
/// The document is treated as a first save, so a `key` it sets is checked against the
/// MODEL-5 grammar; to validate a save over a stored document use [`validate_save`],
/// which skips the grammar for a stored key.
pub fn validate_workflow(
    doc: &Value,
    opts: ValidateOptions,
) -> Result<Workflow, Vec<ValidationError>> {
    validate_document(doc, KeyGate::Check, opts)
}

/// Save-time validation of `doc` replacing `previous` (the stored document, `None` when
/// the workflow is new): everything [`validate_workflow`] checks, except that the key
/// grammar is checked only on the key's first assignment (MODEL-5).
pub(crate) fn validate_save(
    doc: &Value,
    previous: Option<&Value>,
    opts: ValidateOptions,
) -> Result<Workflow, Vec<ValidationError>> {
    let check = is_first_key_assignment(previous);
    #[cfg(w6w_mutants)] // MODEL-5 mutant (mutant build only): re-check a kept key
    let check = check || crate::mutants::active(crate::mutants::Mutant::KeyRevalidated);
    let gate = if check { KeyGate::Check } else { KeyGate::Skip };
    validate_document(doc, gate, opts)
}

fn validate_document(
    doc: &Value,
    gate: KeyGate,
    opts: ValidateOptions,
) -> Result<Workflow, Vec<ValidationError>> {
    // The storage rules (a document nested too deep is refused with that one problem,
    // SEC-2), then the graph rules (they fail planning, so they are save-time problems
    // too, reported with everything else). A document without storage problems comes back
    // typed too, built as the walk went (D-197); the walk checks every field the typed
    // model reads, so building it only fails on a bug, which is still an `Err`, never a
    // panic.
    let checked =
        storage_checked_workflow(doc, gate, opts.runnable).map_err(|too_deep| vec![too_deep])?;
    let workflow = match checked {
        StorageChecked::Problems(mut errors) => {
            // The graph rules over whatever the raw document makes usable.
            errors.extend(crate::plan::document_problems(doc));
            sort_into_document_order(doc, &mut errors);
            return Err(errors);
        }
        StorageChecked::Typed(workflow) => (*workflow).map_err(|e| {
            vec![ValidationError::new(
                Code::InvalidType,
                "",
                format!("the document does not fit the workflow model: {e}"),
            )]
        })?,
    };
    // A document the storage rules accept reads the same typed as raw (every id and
    // endpoint a string, every `uses` and `with` an object, `when` one of its two values),
    // so the graph rules run on the typed workflow: no field is looked up twice.
    let mut errors = crate::plan::workflow_problems(&workflow);
    if !errors.is_empty() {
        sort_into_document_order(doc, &mut errors);
        return Err(errors);
    }
    Ok(workflow)
}

/// Sort problems into document order: by the position, in the document as written, of
/// each path's members (a missing member sorts after its present siblings). A problem
/// with a whole collection (`cycle` at `/edges`) sorts after that collection's members.
/// The sort is stable, so problems at one path keep the order they were found in.
fn sort_into_document_order(doc: &Value, errors: &mut [ValidationError]) {
    errors.sort_by_cached_key(|e| {
        let mut key = document_position(doc, &e.path);
        if e.code == Code::Cycle {
            key.push(usize::MAX);
        }
        key
    });
}

fn document_position(doc: &Value, path: &str) -> Vec<usize> {
    let mut key = Vec::new();
    let mut at = Some(doc);
    for raw in path.split('/').skip(1) {
        let token = raw.replace("~1", "/").replace("~0", "~");
        at = match at {
            Some(Value::Object(o)) => match o.keys().position(|k| *k == token) {
                Some(pos) => {
                    key.push(pos);
                    o.get(&token)
                }
                None => {
                    key.push(o.len());
                    None
                }
            },
            Some(Value::Array(a)) => {
                let i = token.parse::<usize>().unwrap_or(a.len());
                key.push(i);
                a.get(i)
            }
            _ => {
                key.push(0);
                None
            }
        };
    }
    key
}

#[cfg(test)]
mod control_tests;
#[cfg(test)]
mod tests;
