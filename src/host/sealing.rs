//! The key a host holds outside its store to seal what the store may not hold in plaintext
//! and to authenticate what it keeps (SEC-1, RUN-3, RUN-4; docs/decisions.md D-250, D-251).
//!
//! Owns: [`SealingKey`], how one is built from key material an operator provides (a key
//! file, an environment variable, a scenario's test key), the floor that material must
//! clear ([`KeyError`]), and the sub-keys derived from it (one per use, so an envelope key
//! never authenticates a journal record and the other way round).
//!
//! Invariants: a key is never derived from the run's secrets — the store must hold nothing
//! a guess of a secret could be confirmed against (D-250); without key material a host has
//! no key and nothing is sealed. The key's bytes and the material never leave this module
//! and the engine: no `Debug` of them, no `Serialize`, no error that quotes them.

use hkdf::Hkdf;
use serde_json::{Map, Value};
use sha2::Sha256;

/// The least key material accepted, in bytes (D-250): 256 bits if every byte were random.
pub(crate) const SEALING_KEY_MIN_BYTES: usize = 32;
/// The least estimated entropy accepted, in bits (D-250): a floor against mistakes (a
/// repeated PIN, a word), not a measure of real randomness.
pub(crate) const SEALING_KEY_MIN_BITS: u32 = 96;
pub(crate) use crate::limits::SEALING_KEY_MAX_BYTES;
/// The environment variable a CLI reads key material from (`--key-file` wins).
pub const SEALING_KEY_ENV: &str = "W6W_SEALING_KEY";

/// Why key material was refused. Codes are stable; no variant holds the material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Fewer than [`SEALING_KEY_MIN_BYTES`] bytes (`sealing_key_too_short`).
    #[error(
        "the sealing key material is {bytes} bytes; at least {SEALING_KEY_MIN_BYTES} are needed (e.g. `head -c 32 /dev/urandom > KEYFILE`)"
    )]
    TooShort { bytes: usize },
    /// More than [`SEALING_KEY_MAX_BYTES`] bytes (`sealing_key_too_long`).
    #[error(
        "the sealing key material is {bytes} bytes; at most {SEALING_KEY_MAX_BYTES} are read (is it the right file?)"
    )]
    TooLong { bytes: usize },
    /// A short pattern repeated, or too few distinct bytes (`sealing_key_low_entropy`).
    #[error(
        "the sealing key material looks guessable ({why}); use random bytes (e.g. `head -c 32 /dev/urandom > KEYFILE`)"
    )]
    LowEntropy { why: String },
    /// The material holds one of the run's secrets: the key would be no stronger than the
    /// secret it must protect (`sealing_key_holds_a_secret`).
    #[error(
        "the sealing key material contains the value of secret {name:?}; a key must not be made from the secrets it protects"
    )]
    HoldsSecret { name: String },
    /// The key file or variable could not be read (`sealing_key_unreadable`; a host reads
    /// the file, this module does no I/O).
    #[error("cannot read the sealing key from {source_name}: {message}")]
    Unreadable {
        source_name: String,
        message: String,
    },
}

impl KeyError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::TooShort { .. } => "sealing_key_too_short",
            KeyError::TooLong { .. } => "sealing_key_too_long",
            KeyError::LowEntropy { .. } => "sealing_key_low_entropy",
            KeyError::HoldsSecret { .. } => "sealing_key_holds_a_secret",
            KeyError::Unreadable { .. } => "sealing_key_unreadable",
        }
    }
}

/// A 256-bit key. Built only from material a host holds outside its store.
#[derive(Clone, PartialEq, Eq)]
pub struct SealingKey([u8; 32]);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

/// What a sub-key is for: each use has its own, so no value keyed for one can be
/// presented as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// AES-256-GCM-SIV over a sealed output (`engine::sealed`).
    Envelope,
    /// The nonces of envelopes.
    Nonce,
    /// HMAC-SHA256 over the journal's records (`sim::journal`).
    Journal,
    /// A run's seal id when the host offers no randomness.
    SealId,
}

impl SealingKey {
    /// A host's own 32-byte key (from its KMS or HSM): taken as it is, uniformly random by
    /// the host's word.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SealingKey(bytes)
    }

    /// A key from operator material (a key file's bytes, an environment variable): checked
    /// against the floor (length, pattern, distinct bytes; [`KeyError`]) and against the
    /// run's `secrets` (the material must not hold one), then HKDF-SHA256 into 256 bits.
    /// A trailing newline (`echo KEY > file`) is not part of the material.
    pub fn from_material(material: &[u8], secrets: &Map<String, Value>) -> Result<Self, KeyError> {
        let material = trim_newline(material);
        check_material(material)?;
        for (name, value) in secrets {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => continue,
            };
            // A secret of fewer than 4 bytes is in much random material by chance.
            if text.len() >= 4 && memchr::memmem::find(material, text.as_bytes()).is_some() {
                return Err(KeyError::HoldsSecret { name: name.clone() });
            }
        }
        let mut key = [0u8; 32];
        Hkdf::<Sha256>::new(Some(b"w6w-sim sealing key v2"), material)
            .expand(b"root", &mut key)
            .map_err(|_| KeyError::TooLong {
                bytes: material.len(),
            })?;
        Ok(SealingKey(key))
    }

    /// The 32 bytes as base64url, for a host that hands its key to an engine behind the
    /// context protocol (`host.sealingKey`, docs/context-protocol.md).
    pub fn to_wire(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0)
    }

    /// The key a host handed over as [`SealingKey::to_wire`] (`None`: not 32 bytes).
    pub fn from_wire(text: &str) -> Option<Self> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        Some(SealingKey(bytes.try_into().ok()?))
    }

    /// The sub-key for `what`.
    pub(crate) fn derive(&self, what: KeyUse) -> [u8; 32] {
        let label: &[u8] = match what {
            KeyUse::Envelope => b"sealed output v2",
            KeyUse::Nonce => b"sealed output nonce v2",
            KeyUse::Journal => b"journal records v3",
            KeyUse::SealId => b"seal id v2",
        };
        let mut out = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's 8,160-byte limit: `expand` cannot fail.
        let _ = Hkdf::<Sha256>::from_prk(&self.0)
            .map(|hk| hk.expand(label, &mut out))
            .ok();
        out
    }
}

fn trim_newline(material: &[u8]) -> &[u8] {
    let m = material.strip_suffix(b"\n").unwrap_or(material);
    m.strip_suffix(b"\r").unwrap_or(m)
}

/// The floor (D-250): long enough, no short pattern repeated, enough distinct bytes.
fn check_material(material: &[u8]) -> Result<(), KeyError> {
    let n = material.len();
    if n < SEALING_KEY_MIN_BYTES {
        return Err(KeyError::TooShort { bytes: n });
    }
    if n > SEALING_KEY_MAX_BYTES {
        return Err(KeyError::TooLong { bytes: n });
    }
    // A pattern of period p ≤ n/2 repeated ("12341234…", "hunter2hunter2…").
    if let Some(p) = (1..=n / 2).find(|&p| material[p..] == material[..n - p]) {
        return Err(KeyError::LowEntropy {
            why: format!("it repeats a {p}-byte pattern"),
        });
    }
    let bits = entropy_bits(material);
    if bits < SEALING_KEY_MIN_BITS {
        return Err(KeyError::LowEntropy {
            why: format!(
                "about {bits} bits by its byte frequencies, fewer than {SEALING_KEY_MIN_BITS}"
            ),
        });
    }
    Ok(())
}

/// The empirical Shannon entropy of `bytes` times their count, in whole bits.
fn entropy_bits(bytes: &[u8]) -> u32 {
    let mut counts = [0usize; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    let per_byte: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    // Bounded by 8 × SEALING_KEY_MAX_BYTES: the cast cannot truncate.
    (per_byte * n) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn none() -> Map<String, Value> {
        Map::new()
    }

    const GOOD: &[u8] = b"q7Vx2LmP9sKd4RtY8wZc1NbH6fJg3XeA";

    #[test]
    fn material_above_the_floor_gives_a_key_and_the_same_material_the_same_key() {
        let a = SealingKey::from_material(GOOD, &none());
        assert!(a.is_ok(), "{a:?}");
        let mut with_newline = GOOD.to_vec();
        with_newline.push(b'\n');
        assert_eq!(a, SealingKey::from_material(&with_newline, &none()));
        let mut other = GOOD.to_vec();
        other[0] = b'r';
        assert_ne!(a, SealingKey::from_material(&other, &none()));
        // 32 random-looking raw bytes, a hex key of 32 bytes.
        let raw: Vec<u8> = (0u32..32).map(|i| (i * 97 + 13) as u8 ^ 0x5a).collect();
        assert!(SealingKey::from_material(&raw, &none()).is_ok());
        let hex = b"3f9a0c7be14d52a8966e0b3dc1f4a27785e0d9b6c3a1f0e2d4b5c6a7980f1e2d";
        assert!(SealingKey::from_material(hex, &none()).is_ok());
    }

    #[test]
    fn short_repeated_or_low_entropy_material_is_refused_with_its_code() {
        let cases: [(&[u8], &str); 5] = [
            (b"4711", "sealing_key_too_short"),
            (b"0123456789abcdef0123456789abcde", "sealing_key_too_short"),
            (
                b"47114711471147114711471147114711",
                "sealing_key_low_entropy",
            ),
            (
                b"00000000000000000000000000000000",
                "sealing_key_low_entropy",
            ),
            (
                b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
                "sealing_key_low_entropy",
            ),
        ];
        for (material, code) in cases {
            let e = SealingKey::from_material(material, &none());
            assert_eq!(e.as_ref().err().map(KeyError::code), Some(code), "{e:?}");
        }
        let long = vec![b'x'; SEALING_KEY_MAX_BYTES + 1];
        assert_eq!(
            SealingKey::from_material(&long, &none())
                .err()
                .map(|e| e.code()),
            Some("sealing_key_too_long")
        );
    }

    #[test]
    fn material_holding_a_secret_is_refused_naming_the_secret_not_the_key() {
        let secrets = json!({"PIN": 4711, "TOKEN": "Zc1NbH6f"});
        let secrets = secrets.as_object().cloned().unwrap_or_default();
        let e = SealingKey::from_material(GOOD, &secrets);
        let Err(e) = e else {
            panic!("a key holding a secret was accepted");
        };
        assert_eq!(e.code(), "sealing_key_holds_a_secret");
        let text = e.to_string();
        assert!(
            text.contains("TOKEN") && !text.contains("Zc1NbH6f"),
            "{text}"
        );
    }

    #[test]
    fn no_error_and_no_debug_shows_the_material_or_the_key() {
        let weak = b"hunter2!hunter2!hunter2!hunter2!";
        for material in [&weak[..], &weak[..20], b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"] {
            if let Err(e) = SealingKey::from_material(material, &none()) {
                let text = format!("{e} {e:?}");
                assert!(
                    !text.contains("hunter2") && !text.contains("aaaa"),
                    "{text}"
                );
            }
        }
        let k = SealingKey::from_bytes([7; 32]);
        assert_eq!(format!("{k:?}"), "SealingKey(..)");
    }

    #[test]
    fn sub_keys_differ_by_use_and_the_wire_form_round_trips() {
        let k = SealingKey::from_bytes([7; 32]);
        let uses = [
            KeyUse::Envelope,
            KeyUse::Nonce,
            KeyUse::Journal,
            KeyUse::SealId,
        ];
        for (i, a) in uses.iter().enumerate() {
            for b in &uses[i + 1..] {
                assert_ne!(k.derive(*a), k.derive(*b));
            }
        }
        assert_eq!(SealingKey::from_wire(&k.to_wire()), Some(k));
        assert_eq!(SealingKey::from_wire("AAAA"), None);
    }
}
