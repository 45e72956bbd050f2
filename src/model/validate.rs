//! Save-time validation: every problem of a workflow document, each with a JSON Pointer.
//!
//! FOUNDATION PLACEHOLDER: typed parse + planner checks only. The foundation issue
//! replaces the body, keeping the signatures.

use serde_json::Value;

use super::{ValidationCode, ValidationError, Workflow};

/// What a validation call checks beyond storage rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// PLAN-9: also require runnability (≥ 1 step, `uses.app`/`uses.action` set).
    pub runnable: bool,
}

/// Validate a workflow document. On success the typed workflow is returned; otherwise
/// *all* problems found.
pub fn validate_workflow(
    doc: &Value,
    _opts: ValidateOptions,
) -> Result<Workflow, Vec<ValidationError>> {
    let workflow: Workflow = serde_json::from_value(doc.clone()).map_err(|e| {
        vec![ValidationError::new(
            ValidationCode::InvalidType,
            "",
            e.to_string(),
        )]
    })?;
    crate::plan::plan(&workflow)?;
    Ok(workflow)
}
