//! A workflow registry: the store-side save rules (MODEL-5, MODEL-6).
//!
//! Owns: what a host's workflow store must enforce on save beyond one document's own
//! validity — the key grammar checked against the *previously stored* document (MODEL-5),
//! and uniqueness of non-null keys per account (MODEL-6; `name` is never unique).
//! Invariant: in memory only; no I/O. A save that is refused leaves the registry unchanged.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{ValidateOptions, validate_save};
use crate::model::{ValidationError, errors_to_json, stored_key};

/// Why a save was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SaveError {
    /// The document itself is invalid (400, every problem listed).
    Invalid(Vec<ValidationError>),
    /// MODEL-6: another workflow of the same account already holds this key (409).
    KeyConflict {
        key: String,
        /// The id of the workflow that holds the key.
        holder: String,
    },
}

impl SaveError {
    /// Stable machine code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            SaveError::Invalid(_) => "invalid_workflow",
            SaveError::KeyConflict { .. } => "key_conflict",
        }
    }

    /// The error as the op service reports it.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            SaveError::Invalid(errors) => {
                json!({"code": self.code(), "errors": errors_to_json(errors)})
            }
            SaveError::KeyConflict { key, holder } => json!({
                "code": self.code(),
                "status": 409,
                "path": "/key",
                "message": format!(
                    "key {key:?} is already used by workflow {holder:?} in this account; keys are unique per account (names are not)"
                ),
            }),
        }
    }
}

/// Workflows by account, then by workflow id, as stored documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Registry {
    accounts: BTreeMap<String, BTreeMap<String, Value>>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry::default()
    }

    /// The stored document of `(account, id)`, if any.
    pub(crate) fn get(&self, account: &str, id: &str) -> Option<&Value> {
        self.accounts.get(account)?.get(id)
    }

    /// Store a document as it already exists in a host, without the save-time checks (a
    /// document written before a grammar was tightened, MODEL-5's reason to exist).
    pub(crate) fn seed(&mut self, account: &str, doc: Value) {
        let id = doc
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.accounts
            .entry(account.to_owned())
            .or_default()
            .insert(id, doc);
    }

    /// Save `doc` into `account`, replacing the stored document with the same id.
    pub(crate) fn save(&mut self, account: &str, doc: &Value) -> Result<(), SaveError> {
        let id = doc.get("id").and_then(Value::as_str).unwrap_or_default();
        let previous = self.get(account, id);
        // MODEL-5: the grammar is checked only when the stored key is absent or null.
        let workflow =
            validate_save(doc, previous, ValidateOptions::default()).map_err(SaveError::Invalid)?;
        // MODEL-6: a partial unique index over non-null keys; the document's own stored
        // version never collides with itself.
        if let Some(key) = workflow.key()
            && let Some(stored) = self.accounts.get(account)
            && let Some((holder, _)) = stored
                .iter()
                .find(|(other, d)| other.as_str() != workflow.id && stored_key(d) == Some(key))
        {
            return Err(SaveError::KeyConflict {
                key: key.to_owned(),
                holder: holder.clone(),
            });
        }
        self.accounts
            .entry(account.to_owned())
            .or_default()
            .insert(workflow.id.clone(), doc.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wf(id: &str, name: &str, key: Option<&str>) -> Value {
        let mut d = json!({"manifestVersion": "2", "id": id, "name": name,
            "steps": [{"id": "a", "uses": {"app": "x", "action": "y"}}]});
        if let Some(k) = key {
            d["key"] = json!(k);
        }
        d
    }

    #[test]
    fn model_6_non_null_keys_are_unique_per_account() {
        let mut r = Registry::new();
        assert_eq!(r.save("acme", &wf("w1", "n", Some("daily-report"))), Ok(()));
        let err = r
            .save("acme", &wf("w2", "n", Some("daily-report")))
            .unwrap_err();
        assert_eq!(err.code(), "key_conflict");
        // The refused save left nothing behind.
        assert!(r.get("acme", "w2").is_none());
        // Another account, no keys at all, and re-saving the holder are all fine.
        assert_eq!(
            r.save("globex", &wf("w2", "n", Some("daily-report"))),
            Ok(())
        );
        assert_eq!(r.save("acme", &wf("w3", "n", None)), Ok(()));
        assert_eq!(r.save("acme", &wf("w4", "n", None)), Ok(()));
        assert_eq!(
            r.save("acme", &wf("w1", "renamed", Some("daily-report"))),
            Ok(())
        );
    }

    #[test]
    fn model_5_stored_key_is_not_rechecked() {
        let mut r = Registry::new();
        r.seed("acme", wf("w1", "n", Some("Legacy_Key")));
        // Unchanged: accepted although the grammar would refuse it today.
        assert_eq!(r.save("acme", &wf("w1", "n", Some("Legacy_Key"))), Ok(()));
        // First assignment on a new workflow is checked.
        let err = r
            .save("acme", &wf("w2", "n", Some("Legacy_Key2")))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_workflow");
    }
}
