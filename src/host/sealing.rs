//! The key a host holds outside its store to seal what the store may not hold in plaintext
//! (SEC-1, RUN-4; docs/decisions.md D-170).
//!
//! Owns: [`SealingKey`], and the default derivation of one from the run's secrets. A host
//! with a real key (a KMS, a key file outside the store) returns it from
//! [`crate::host::WorkflowContext::sealing_key`]; the default derives one from the secrets
//! the host already holds outside the store, so a resumed run — which gets the same secrets
//! — gets the same key. Invariant: the key's bytes never leave the engine (no `Debug`, no
//! `Serialize`; the bytes are crate-private).

use hkdf::Hkdf;
use serde_json::{Map, Value};
use sha2::Sha256;

/// The least secret material (bytes of secret values, all secrets together) from which the
/// default derives a key. Below it a guess of the secrets would open the sealed outputs, so
/// no key is derived and such outputs stay `"[redacted]"` after a crash (D-170).
pub const SEALING_MATERIAL_MIN: usize = 16;

/// A 256-bit key. Built only from bytes a host holds outside its store.
#[derive(Clone, PartialEq, Eq)]
pub struct SealingKey([u8; 32]);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

impl SealingKey {
    /// A host's own key (e.g. from its KMS).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SealingKey(bytes)
    }

    /// The default: HKDF-SHA256 over every secret (name and value, in name order), or
    /// `None` when the values hold fewer than [`SEALING_MATERIAL_MIN`] bytes in all.
    pub fn from_secrets(secrets: &Map<String, Value>) -> Option<Self> {
        let mut named: Vec<(&String, &Value)> = secrets.iter().collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        let (mut ikm, mut material) = (Vec::new(), 0usize);
        for (name, value) in named {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            material += text.len();
            ikm.extend_from_slice(name.as_bytes());
            ikm.push(0);
            ikm.extend_from_slice(text.as_bytes());
            ikm.push(0);
        }
        if material < SEALING_MATERIAL_MIN {
            return None;
        }
        let mut key = [0u8; 32];
        Hkdf::<Sha256>::new(Some(b"w6w-sim sealing key v1"), &ikm)
            .expand(b"sealed outputs", &mut key)
            .ok()?;
        Some(SealingKey(key))
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_same_secrets_give_the_same_key_and_any_change_another() {
        let a = SealingKey::from_secrets(&map(json!({"K": "hunter2-secret-7f3a", "PIN": 4711})));
        let b = SealingKey::from_secrets(&map(json!({"PIN": 4711, "K": "hunter2-secret-7f3a"})));
        assert!(a.is_some());
        assert_eq!(a, b, "order of the map does not matter");
        let c = SealingKey::from_secrets(&map(json!({"K": "hunter2-secret-7f3b", "PIN": 4711})));
        assert_ne!(a, c);
        let renamed =
            SealingKey::from_secrets(&map(json!({"J": "hunter2-secret-7f3a", "PIN": 4711})));
        assert_ne!(a, renamed, "the names are part of the material");
    }

    #[test]
    fn too_little_secret_material_gives_no_key() {
        assert_eq!(SealingKey::from_secrets(&Map::new()), None);
        assert_eq!(
            SealingKey::from_secrets(&map(json!({"PIN": 4711, "S": "short"}))),
            None
        );
        assert!(SealingKey::from_secrets(&map(json!({"S": "sixteen-bytes-ok"}))).is_some());
    }

    #[test]
    fn debug_never_shows_the_key() {
        let k = SealingKey::from_bytes([7; 32]);
        assert_eq!(format!("{k:?}"), "SealingKey(..)");
    }
}
