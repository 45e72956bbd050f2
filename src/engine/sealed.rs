//! SEC-1 without a crash changing the run (D-112): secret references in recorded outputs.
//!
//! Owns: how a step output that carries a secret of the run is recorded, and how the engine
//! gets the value back when it reads a recorded output into the scope. The live output is
//! scanned once, when its record is sealed ([`seal`]): every occurrence of a secret's value
//! becomes a reference *by name* in the record's `extra.secretRefs` (`{path, secret}` for a
//! leaf that is exactly one secret, `{path, parts}` for a string with secrets inside, text
//! parts as they are). What is recorded ([`display`]) has `"[redacted]"` at those places,
//! so no plaintext reaches a store even on a host without a scrubbing sink. When the engine
//! publishes a recorded output ([`unseal`]) it puts the run's secret values back at the
//! recorded paths — inside the engine only — so a resumed or replayed run reads what the
//! crash-free run read.
//!
//! Invariants: references are made only from secrets the live output really contains, at
//! paths the engine chose; an output is data and is never interpreted, so an action that
//! returns text looking like a reference gets that text back, never a secret. A record with
//! references is tainted when published, so whatever reads the re-materialised value is
//! recorded redacted. A secret-derived record keeps its output `"[redacted]"` wholly; it can
//! be re-materialised only when it adds nothing to the store but secret names
//! (`extra.sealedOutput`, see [`seal`]) — or, with a key the host holds outside the store
//! ([`crate::host::WorkflowContext::sealing_key`], D-170, D-250), from its ciphertext
//! (`extra.encryptedOutput`, [`Sealer`]): an output recorded `"[redacted]"` wholly is sealed
//! whole, so a resumed run reads the computed value too. An envelope never holds a piece of
//! a secret the sink would scrub (it is retried with another nonce, else left out), and
//! opens only for the run, frame, step and attempt it was sealed for (D-251). Without a
//! key nothing is sealed: the store then holds nothing keyed at all, so nothing in it can
//! confirm a guess of a secret (D-250), and such an output reads `"[redacted]"` after a
//! crash — said in the run's log when a resumed run reads it (D-252).

use std::collections::HashSet;

use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use serde_json::{Map, Value, json};
use sha2::Sha256;

use super::journal::is_secret_derived;
use crate::expr::REDACTED;
use crate::host::SealingKey;
use crate::host::sealing::KeyUse;
use crate::json::JsonText;
use crate::json::{Pointer, ROOT};
use crate::model::StepExecution;
use crate::redact::Scrubber;

/// The record `extra` key listing the output's secret references (present ⇒ the output
/// carried a secret; an empty list ⇒ the whole output is recorded `"[redacted]"` and comes
/// back only from its envelope, [`ENCRYPTED_OUTPUT`]).
pub(crate) const SECRET_REFS: &str = "secretRefs";
/// The record `extra` key holding a secret-derived output's skeleton (the output with its
/// referenced leaves `"[redacted]"`), kept only when it holds nothing the store did not hold.
pub(crate) const SEALED_OUTPUT: &str = "sealedOutput";

/// The record `extra` key holding a wholly redacted output sealed with the host's key
/// (D-170, D-251): `v2.<n>.<base64url ciphertext>`, `n` picking the nonce.
pub(crate) const ENCRYPTED_OUTPUT: &str = "encryptedOutput";
/// Nonces tried before an output is left unsealed because every envelope happened to hold
/// a piece of a secret (a 1-character secret is in almost every base64 text).
const NONCE_TRIES: u32 = 16;
/// A secret of this many characters or more must not appear in an envelope by any piece of
/// this length (the SEC-1 property's threshold); a shorter one not at all.
const PIECE: usize = 8;

/// The run `extra` key holding the run's seal id (D-251): 16 random bytes (base64url) the
/// host drew when the run started, bound into every envelope of the run, so an envelope
/// from any other run — the same run id in another store included — never opens.
pub(crate) const SEAL_ID: &str = "sealId";
/// The envelope format tag. `v1.` envelopes (D-170: a key derived from the secrets, bound
/// to step and attempt only) are never opened (D-250).
const ENVELOPE_V: &str = "v2.";

/// AES-256-GCM-SIV under a sub-key of the host's [`SealingKey`] (D-251). The associated
/// data binds a ciphertext to its run (run id and seal id), its record (the frame it lives
/// in, its step id and attempt) and its use (a step output); nonces are derived from the
/// same binding under another sub-key, so a run that crashed and the crash-free run seal
/// alike, and no two records of any run share a nonce. GCM-SIV would stay safe under a
/// repeated nonce anyway (it would reveal only that two plaintexts were equal).
pub(crate) struct Sealer {
    cipher: Aes256GcmSiv,
    nonces: Hkdf<Sha256>,
    /// The run and frame part of the associated data (the record adds step and attempt).
    bound: Vec<u8>,
}

/// `field` into `out`, length-prefixed, so no two field lists encode alike.
fn put(out: &mut Vec<u8>, field: &[u8]) {
    out.extend_from_slice(&u32::try_from(field.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(field);
}

/// The seal id of a run that recorded none (a host without randomness, D-251): derived
/// from the key and the run id, so it binds the run id only.
fn fallback_seal_id(key: &SealingKey, run_id: &str) -> String {
    let mut id = [0u8; 16];
    let _ = Hkdf::<Sha256>::from_prk(&key.derive(KeyUse::SealId))
        .map(|hk| hk.expand(run_id.as_bytes(), &mut id))
        .ok();
    URL_SAFE_NO_PAD.encode(id)
}

/// A fresh seal id for a run, from the host's randomness (`None`: the host offers none,
/// and the run uses [`fallback_seal_id`]).
pub(crate) fn draw_seal_id(host: &impl crate::host::WorkflowContext) -> Option<String> {
    host.sealing_key()?;
    let mut id = [0u8; 16];
    host.random_bytes(&mut id)
        .then(|| URL_SAFE_NO_PAD.encode(id))
}

impl Sealer {
    /// The sealer of `key` for records of run `run_id` (seal id `seal_id`, `None`: the
    /// fallback) in frame `locator` (`""`: the main graph).
    pub(crate) fn new(
        key: &SealingKey,
        run_id: &str,
        seal_id: Option<&str>,
        locator: &str,
    ) -> Option<Sealer> {
        let seal_id = seal_id.map_or_else(|| fallback_seal_id(key, run_id), str::to_owned);
        let mut bound = b"w6w-sim sealed output v2".to_vec();
        put(&mut bound, run_id.as_bytes());
        put(&mut bound, seal_id.as_bytes());
        put(&mut bound, locator.as_bytes());
        Some(Sealer {
            cipher: Aes256GcmSiv::new_from_slice(&key.derive(KeyUse::Envelope)).ok()?,
            nonces: Hkdf::<Sha256>::from_prk(&key.derive(KeyUse::Nonce)).ok()?,
            bound,
        })
    }

    /// The sealer of `host`'s key, if it holds one, for records of `journal`'s run in
    /// `frame` (built only when an output needs it).
    pub(crate) fn of(
        host: &impl crate::host::WorkflowContext,
        journal: &super::journal::Journal,
        frame: &super::journal::Frame,
    ) -> Option<Sealer> {
        let key = host.sealing_key()?;
        let seal_id = journal.extra(SEAL_ID);
        Sealer::new(
            &key,
            &journal.run_id(),
            seal_id.as_ref().and_then(Value::as_str),
            frame.key(),
        )
    }

    fn aad(&self, record: &StepExecution) -> Vec<u8> {
        let mut aad = self.bound.clone();
        put(&mut aad, record.step_id.as_bytes());
        put(&mut aad, &record.attempt.to_be_bytes());
        put(&mut aad, b"output");
        aad
    }

    fn nonce(&self, aad: &[u8], n: u32) -> Option<[u8; 12]> {
        let mut info = aad.to_vec();
        info.extend_from_slice(&n.to_be_bytes());
        let mut nonce = [0u8; 12];
        self.nonces.expand(&info, &mut nonce).ok()?;
        Some(nonce)
    }

    /// The envelope for `output` of `record`, or `None` when none is free of every secret.
    fn seal(
        &self,
        record: &StepExecution,
        output: &Value,
        secrets: &Map<String, Value>,
    ) -> Option<String> {
        let plaintext = serde_json::to_vec(output).ok()?;
        let aad = self.aad(record);
        let sink = Scrubber::new(secrets.values());
        let pieces = pieces(secrets);
        (0..NONCE_TRIES).find_map(|n| {
            let nonce = self.nonce(&aad, n)?;
            let payload = Payload {
                msg: &plaintext,
                aad: &aad,
            };
            let sealed = self
                .cipher
                .encrypt(Nonce::from_slice(&nonce), payload)
                .ok()?;
            let envelope = format!("{ENVELOPE_V}{n}.{}", URL_SAFE_NO_PAD.encode(sealed));
            let clean = sink.text(&envelope).is_none()
                && !pieces.iter().any(|p| envelope.contains(p.as_str()));
            clean.then_some(envelope)
        })
    }

    /// The output sealed in `envelope` for `record`; `None` when it does not open (another
    /// key, another run, frame, step or attempt, a damaged or forged envelope, a `v1.`
    /// envelope).
    fn open(&self, record: &StepExecution, envelope: &str) -> Option<Value> {
        let rest = envelope.strip_prefix(ENVELOPE_V)?;
        let (n, body) = rest.split_once('.')?;
        let n: u32 = n.parse().ok().filter(|n| *n < NONCE_TRIES)?;
        let aad = self.aad(record);
        let nonce = self.nonce(&aad, n)?;
        let sealed = URL_SAFE_NO_PAD.decode(body).ok()?;
        let payload = Payload {
            msg: &sealed,
            aad: &aad,
        };
        let plaintext = self
            .cipher
            .decrypt(Nonce::from_slice(&nonce), payload)
            .ok()?;
        serde_json::from_slice(&plaintext).ok()
    }
}

/// Every `PIECE`-character window of every secret of `PIECE` characters or more (strings
/// and numbers as text).
fn pieces(secrets: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for v in secrets.values() {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => continue,
        };
        let chars: Vec<char> = text.chars().collect();
        for w in chars.windows(PIECE) {
            out.push(w.iter().collect());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// One secret to look for: its name and value (a non-empty string or a number).
struct Needle<'a> {
    name: &'a str,
    value: &'a Value,
}

/// What scanning one output found.
#[derive(Default)]
struct Scan {
    refs: Vec<Value>,
    /// A secret inside an object key: paths through it are not stable; redact wholly.
    in_key: bool,
    /// A reference with text around the secret (a `parts` entry).
    with_text: bool,
}

fn needles(secrets: &Map<String, Value>) -> Vec<Needle<'_>> {
    let mut out: Vec<Needle<'_>> = secrets
        .iter()
        .filter(|(_, v)| matches!(v, Value::String(s) if !s.is_empty()) || v.is_number())
        .map(|(name, value)| Needle { name, value })
        .collect();
    // Longest first, so a secret that contains another is referenced whole.
    let len = |n: &Needle<'_>| n.value.as_str().map_or(0, str::len);
    out.sort_by(|a, b| len(b).cmp(&len(a)).then_with(|| a.name.cmp(b.name)));
    out
}

/// `text` split into literal parts and secret references, or `None` when no secret occurs.
fn split(text: &str, needles: &[Needle<'_>]) -> Option<Vec<Value>> {
    let mut parts = Vec::new();
    let (mut literal, mut found, mut rest) = (String::new(), false, text);
    while let Some(c) = rest.chars().next() {
        let hit = needles
            .iter()
            .find(|n| n.value.as_str().is_some_and(|s| rest.starts_with(s)));
        match hit {
            Some(n) => {
                if !literal.is_empty() {
                    parts.push(Value::String(std::mem::take(&mut literal)));
                }
                parts.push(json!({"secret": n.name}));
                rest = &rest[n.value.as_str().map_or(0, str::len)..];
                found = true;
            }
            None => {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !literal.is_empty() {
        parts.push(Value::String(literal));
    }
    found.then_some(parts)
}

/// Every secret reference in `value` (at `at`) into `out`. Every output of a run with
/// secrets is scanned, so a pointer is written only for a reference found (D-372's
/// [`Pointer`]), not for every value walked.
fn scan(value: &Value, at: Pointer<'_>, needles: &[Needle<'_>], out: &mut Scan) {
    match value {
        Value::String(s) => {
            if let Some(n) = needles.iter().find(|n| n.value.as_str() == Some(s)) {
                out.refs
                    .push(json!({"path": at.render(), "secret": n.name}));
            } else if let Some(parts) = split(s, needles) {
                out.with_text = true;
                out.refs.push(json!({"path": at.render(), "parts": parts}));
            }
        }
        Value::Number(_) => {
            if let Some(n) = needles.iter().find(|n| n.value == value) {
                out.refs
                    .push(json!({"path": at.render(), "secret": n.name}));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                scan(v, Pointer::Item(&at, i), needles, out);
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                if split(k, needles).is_some() {
                    out.in_key = true;
                }
                scan(v, Pointer::Member(&at, k), needles, out);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Seal the live terminal `record` against the run's `secrets` (name → value): record the
/// references of every secret its output carries. A secret-derived record also gets its
/// skeleton when every other leaf and every key of the output already appears in the
/// recorded (redacted) input and every referenced leaf is exactly one secret — an echo:
/// then the store learns nothing but secret names. Any other output that will be recorded
/// `"[redacted]"` wholly (a secret-derived one, one with a secret in a key) is sealed whole
/// with `sealer` — built only when needed; `None` when the host holds no key — so a
/// resumed run reads it too (D-170, D-251). Without a key it stays `"[redacted]"` after a crash
/// (what an action computes from a secret is its own business; D-41).
///
/// D-274: any other leaf holding secret material — a value the step was handed as
/// secret-derived, or a secret in a form no reference can name (base64, a piece) — is
/// listed under [`super::taint::OUTPUT_TAINT`] (`tainted`: the step's needles and the run's
/// detector), recorded `"[redacted]"`, and makes the output sealed whole too.
pub(crate) fn seal(
    record: &mut StepExecution,
    secrets: &Map<String, Value>,
    tainted: (&super::taint::Needles, &crate::redact::leak::Detector),
    sealer: impl FnOnce() -> Option<Sealer>,
) {
    let Some(text) = &record.output else {
        return;
    };
    let derived = is_secret_derived(record);
    let needles = needles(secrets);
    let (step_needles, detector) = tainted;
    if needles.is_empty() && !derived && step_needles.is_empty() {
        // Nothing to scan for and nothing to redact: the output stays as recorded.
        return;
    }
    let output = &text.to_value();
    let mut found = Scan::default();
    if !needles.is_empty() {
        scan(output, ROOT, &needles, &mut found);
    }
    let places = if derived || found.in_key {
        Vec::new()
    } else {
        super::taint::scan(output, step_needles, detector)
    };
    let carries = !found.refs.is_empty() || found.in_key;
    if !carries && !derived && places.is_empty() {
        return;
    }
    if found.in_key {
        found.refs.clear();
    }
    let skeleton = if derived {
        skeleton(record, output, &found)
    } else {
        None
    };
    let wholly_redacted = (derived && !output.is_null() && skeleton.is_none()) || found.in_key;
    if carries {
        record
            .extra
            .insert(SECRET_REFS.into(), Value::Array(found.refs.clone()));
    }
    // D-274: the tainted leaves a reference by name does not rebuild.
    super::taint::mark(record, places);
    let partly_redacted = record.extra.contains_key(super::taint::OUTPUT_TAINT);
    let envelope = if wholly_redacted || partly_redacted {
        sealer().and_then(|s| s.seal(record, output, secrets))
    } else {
        None
    };
    if derived && skeleton.is_none() && carries {
        // The output is recorded "[redacted]" wholly: references would only tell the store
        // the text around the secret (a "Bearer " prefix), which nothing reads back.
        record
            .extra
            .insert(SECRET_REFS.into(), Value::Array(Vec::new()));
    }
    if let Some(skeleton) = skeleton {
        record.extra.insert(SEALED_OUTPUT.into(), skeleton);
    }
    if let Some(envelope) = envelope {
        record
            .extra
            .insert(ENCRYPTED_OUTPUT.into(), Value::String(envelope));
    }
}

/// A secret-derived output's skeleton (its referenced leaves `"[redacted]"`), when it
/// teaches the store nothing: every referenced leaf is exactly one secret, and every other
/// leaf and every key already appears in `record`'s recorded (redacted) input — an echo.
fn skeleton(record: &StepExecution, output: &Value, found: &Scan) -> Option<Value> {
    let echo = !found.refs.is_empty()
        && !found.with_text
        && known_to_the_store(
            output,
            record.input.as_ref().map(JsonText::to_value).as_ref(),
            &found.refs,
        );
    echo.then(|| {
        let mut skeleton = output.clone();
        for r in &found.refs {
            if let Some(leaf) = r["path"].as_str().and_then(|p| skeleton.pointer_mut(p)) {
                *leaf = Value::String(REDACTED.to_owned());
            }
        }
        skeleton
    })
}

/// Whether every key and every scalar leaf of `output` outside `refs` already appears in
/// the recorded `input` (a redacted leaf does not count).
///
/// Linear in the two documents: the input's keys and leaves go into hash sets, and the
/// referenced leaves are found once by their pointers and then known by identity, so an
/// echo of a large payload costs what reading it costs (it was quadratic: 5.1 s for an
/// echo of 32,000 small objects, D-373).
fn known_to_the_store(output: &Value, input: Option<&Value>, refs: &[Value]) -> bool {
    let (mut keys, mut leaves) = (HashSet::new(), HashSet::new());
    if let Some(input) = input {
        collect(input, &mut keys, &mut leaves);
    }
    leaves.remove(&Leaf::String(REDACTED));
    let referenced: HashSet<*const Value> = refs
        .iter()
        .filter_map(|r| output.pointer(r["path"].as_str()?))
        .map(std::ptr::from_ref)
        .collect();
    fn check(
        v: &Value,
        keys: &HashSet<&str>,
        leaves: &HashSet<Leaf<'_>>,
        referenced: &HashSet<*const Value>,
    ) -> bool {
        if referenced.contains(&std::ptr::from_ref(v)) {
            return true;
        }
        match v {
            Value::Null => true,
            Value::Array(items) => items.iter().all(|x| check(x, keys, leaves, referenced)),
            Value::Object(m) => m
                .iter()
                .all(|(k, x)| keys.contains(k.as_str()) && check(x, keys, leaves, referenced)),
            scalar => Leaf::of(scalar).is_some_and(|leaf| leaves.contains(&leaf)),
        }
    }
    check(output, &keys, &leaves, &referenced)
}

/// A scalar leaf, compared and hashed as `Value`'s `==` compares it (a number by its
/// `Number`: `1` and `1.0` differ).
#[derive(Debug, PartialEq, Eq, Hash)]
enum Leaf<'v> {
    Bool(bool),
    Number(&'v serde_json::Number),
    String(&'v str),
}

impl<'v> Leaf<'v> {
    /// `v` as a leaf; `None` for `null` and containers.
    fn of(v: &'v Value) -> Option<Leaf<'v>> {
        match v {
            Value::Bool(b) => Some(Leaf::Bool(*b)),
            Value::Number(n) => Some(Leaf::Number(n)),
            Value::String(s) => Some(Leaf::String(s)),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }
}

fn collect<'v>(v: &'v Value, keys: &mut HashSet<&'v str>, leaves: &mut HashSet<Leaf<'v>>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| collect(x, keys, leaves)),
        Value::Object(m) => {
            for (k, x) in m {
                keys.insert(k);
                collect(x, keys, leaves);
            }
        }
        scalar => leaves.extend(Leaf::of(scalar)),
    }
}

/// The recorded form of a sealed record's output: `"[redacted]"` at every reference (a
/// whole `"[redacted]"` when none can be kept). A secret-derived output is left to the
/// whole-output redaction.
pub(crate) fn display(record: &mut StepExecution) {
    if is_secret_derived(record) {
        return;
    }
    let refs = match record.extra.get(SECRET_REFS) {
        Some(Value::Array(refs)) => Some(refs.clone()),
        _ => None,
    };
    let tainted: Vec<String> = super::taint::output_taint(record)
        .map(str::to_owned)
        .collect();
    if refs.is_none() && tainted.is_empty() {
        return;
    }
    let Some(text) = &mut record.output else {
        return;
    };
    if refs.as_ref().is_some_and(Vec::is_empty) {
        *text = JsonText::new(&Value::String(REDACTED.to_owned()));
        return;
    }
    let mut output = text.to_value();
    if let Some(refs) = refs {
        redact_at(&mut output, &Value::Array(refs));
    }
    // D-274: the tainted leaves, wholly.
    for p in &tainted {
        if let Some(leaf) = output.pointer_mut(p) {
            *leaf = Value::String(REDACTED.to_owned());
        }
    }
    *text = JsonText::new(&output);
}

/// The output the engine publishes for a recorded (or live) `record`: its secret
/// references re-materialised from `secret` (name → value). A reference to a secret the
/// run no longer has is left as recorded. Never recorded anywhere: the caller puts the
/// value in the scope (tainted) or a join's inputs only.
///
/// A recorded output that is `"[redacted]"` wholly and has an envelope is opened with
/// `sealer` (built only then); an envelope that does not open leaves it as recorded.
/// Whether `record`'s output is published as recorded: nothing sealed, no secret
/// references to re-materialise.
pub(crate) fn is_plain(record: &StepExecution) -> bool {
    [SEALED_OUTPUT, ENCRYPTED_OUTPUT, SECRET_REFS]
        .iter()
        .all(|k| !record.extra.contains_key(*k))
}

/// [`unseal`] of a record the caller is done with: a plain output (nothing sealed, no
/// secret references) moves out of the record instead of being copied.
pub(crate) fn unseal_taking(
    record: &mut StepExecution,
    secret: impl Fn(&str) -> Option<Value>,
    sealer: impl FnOnce() -> Option<Sealer>,
) -> Value {
    if is_plain(record) {
        return record.output.take().map_or(Value::Null, |t| t.to_value());
    }
    unseal(record, secret, sealer)
}

pub(crate) fn unseal(
    record: &StepExecution,
    secret: impl Fn(&str) -> Option<Value>,
    sealer: impl FnOnce() -> Option<Sealer>,
) -> Value {
    let sealed = record
        .extra
        .get(SEALED_OUTPUT)
        .filter(|_| is_secret_derived(record));
    if sealed.is_none()
        && let Some(Value::String(envelope)) = record.extra.get(ENCRYPTED_OUTPUT)
        && let Some(output) = sealer().and_then(|s| s.open(record, envelope))
    {
        return output;
    }
    let mut out = sealed
        .cloned()
        .or_else(|| record.output.as_ref().map(JsonText::to_value))
        .unwrap_or(Value::Null);
    let Some(Value::Array(refs)) = record.extra.get(SECRET_REFS) else {
        return out;
    };
    if is_secret_derived(record) && sealed.is_none() {
        return out;
    }
    materialise(&mut out, &Value::Array(refs.clone()), &secret);
    out
}

/// RUN-3 / SEC-1 for the run's seed (D-112): the variables as recorded (secret values
/// `"[redacted]"`) and their references (`None` when no variable carries a secret, or a
/// secret sits in a key — then the host's sink is the only redaction, as before).
pub(crate) fn seal_variables(
    variables: &Map<String, Value>,
    secrets: &Map<String, Value>,
) -> Option<(Map<String, Value>, Value)> {
    let needles = needles(secrets);
    let mut found = Scan::default();
    let value = Value::Object(variables.clone());
    scan(&value, ROOT, &needles, &mut found);
    if found.refs.is_empty() || found.in_key {
        return None;
    }
    let refs = Value::Array(found.refs);
    let mut recorded = value;
    redact_at(&mut recorded, &refs);
    match recorded {
        Value::Object(m) => Some((m, refs)),
        _ => None,
    }
}

/// The run's variables with their recorded secret references re-materialised.
pub(crate) fn unseal_variables(
    variables: Value,
    refs: Option<&Value>,
    secret: impl Fn(&str) -> Option<Value>,
) -> Value {
    let mut out = variables;
    if let Some(refs) = refs {
        materialise(&mut out, refs, &secret);
    }
    out
}

/// `"[redacted]"` at every reference of `refs` in `value`.
fn redact_at(value: &mut Value, refs: &Value) {
    for r in refs.as_array().into_iter().flatten() {
        let Some(leaf) = r["path"].as_str().and_then(|p| value.pointer_mut(p)) else {
            continue;
        };
        *leaf = match r.get("parts").and_then(Value::as_array) {
            Some(parts) => Value::String(
                parts
                    .iter()
                    .map(|p| p.as_str().unwrap_or(REDACTED))
                    .collect(),
            ),
            None => Value::String(REDACTED.to_owned()),
        };
    }
}

/// Every reference of `refs` in `value` replaced by the secret's value (a reference to a
/// secret `secret` does not know is left as it is).
fn materialise(value: &mut Value, refs: &Value, secret: &impl Fn(&str) -> Option<Value>) {
    for r in refs.as_array().into_iter().flatten() {
        let v = match (r.get("secret"), r.get("parts").and_then(Value::as_array)) {
            (Some(Value::String(name)), _) => secret(name),
            (_, Some(parts)) => parts
                .iter()
                .map(|p| match p {
                    Value::String(text) => Some(text.clone()),
                    other => other["secret"]
                        .as_str()
                        .and_then(secret)
                        .and_then(|v| v.as_str().map(str::to_owned)),
                })
                .collect::<Option<String>>()
                .map(Value::String),
            _ => None,
        };
        if let (Some(v), Some(leaf)) = (v, r["path"].as_str().and_then(|p| value.pointer_mut(p))) {
            *leaf = v;
        }
    }
}

/// D-252: whether `published`, what a recorded `record` unsealed to, is an output recorded
/// `"[redacted]"` wholly (secret-derived, or a secret in a key) that the store could not
/// give back (no envelope, or one that did not open).
pub(crate) fn is_lost(record: &StepExecution, published: &Value) -> bool {
    let wholly = is_secret_derived(record)
        || matches!(record.extra.get(SECRET_REFS), Some(Value::Array(r)) if r.is_empty());
    if wholly {
        return !record.extra.contains_key(SEALED_OUTPUT) && published.as_str() == Some(REDACTED);
    }
    // D-274: a tainted leaf still reads "[redacted]" (no envelope, or one that did not open).
    super::taint::output_taint(record)
        .any(|p| published.pointer(p).and_then(Value::as_str) == Some(REDACTED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StepStatus;

    /// [`seal`] as a step with no secret-derived params seals: the run's detector only.
    fn seal_plain(
        record: &mut StepExecution,
        secrets: &Map<String, Value>,
        sealer: impl FnOnce() -> Option<Sealer>,
    ) {
        let detector = crate::redact::leak::Detector::new(secrets.values());
        let needles = super::super::taint::Needles::default();
        seal(record, secrets, (&needles, &detector), sealer);
    }

    fn secrets() -> Map<String, Value> {
        let v = json!({"K": "hunter2-long", "PIN": 4711, "S": "ab", "EMPTY": ""});
        v.as_object().cloned().unwrap_or_default()
    }

    fn record(output: Value, input: Value, derived: bool) -> StepExecution {
        let mut r = StepExecution::new("a", StepStatus::Succeeded, 1);
        r.output = Some(output.into());
        r.input = Some(input.into());
        if derived {
            r.extra.insert("secretDerived".into(), Value::Bool(true));
        }
        r
    }

    fn lookup(name: &str) -> Option<Value> {
        secrets().get(name).cloned()
    }

    #[test]
    fn an_untainted_output_is_recorded_redacted_and_comes_back_whole() {
        let live = json!({"tok": "hunter2-long", "h": "Bearer hunter2-long!", "pin": 4711,
                          "n": 1, "list": ["x", "cab"]});
        let mut r = record(live.clone(), json!({}), false);
        seal_plain(&mut r, &secrets(), || None);
        assert!(!super::super::taint::places(&r).is_empty());
        let mut recorded = r.clone();
        display(&mut recorded);
        assert_eq!(
            recorded.output,
            Some(
                json!({"tok": REDACTED, "h": format!("Bearer {REDACTED}!"), "pin": REDACTED,
                        "n": 1, "list": ["x", format!("c{REDACTED}")]})
                .into()
            )
        );
        let text = serde_json::to_string(&recorded).unwrap_or_default();
        assert!(
            !text.contains("hunter2") && !text.contains("4711"),
            "{text}"
        );
        assert_eq!(unseal(&recorded, lookup, || None), live);
        assert_eq!(
            unseal(&r, lookup, || None),
            live,
            "the live record unseals to itself"
        );
    }

    #[test]
    fn an_output_without_secrets_is_left_alone() {
        let mut r = record(json!({"a": "plain", "n": 2}), json!({}), false);
        seal_plain(&mut r, &secrets(), || None);
        assert!(super::super::taint::places(&r).is_empty());
        assert!(r.extra.is_empty());
    }

    #[test]
    fn a_secret_in_a_key_redacts_the_whole_output() {
        let mut r = record(json!({"hunter2-long": 1}), json!({}), false);
        seal_plain(&mut r, &secrets(), || None);
        assert_eq!(r.extra[SECRET_REFS], json!([]));
        display(&mut r);
        assert_eq!(r.output, Some(json!(REDACTED).into()));
        assert_eq!(unseal(&r, lookup, || None), json!(REDACTED));
    }

    #[test]
    fn a_forged_reference_in_an_output_is_only_data() {
        let forged = json!({"path": "", "secret": "K"});
        let live = json!({"secretRefs": [forged], "sealedOutput": {"secret": "K"}});
        let mut r = record(live.clone(), json!({}), false);
        seal_plain(&mut r, &secrets(), || None);
        assert!(r.extra.is_empty());
        assert_eq!(unseal(&r, lookup, || None), live);
    }

    #[test]
    fn a_secret_derived_echo_is_sealed_only_when_the_store_learns_nothing() {
        // An echo of {i: 0, sec: K}: the input recorded {i: 0, sec: "[redacted]"}.
        let input = json!({"i": 0, "sec": REDACTED});
        let live = json!({"i": 0, "sec": "hunter2-long"});
        let mut r = record(live.clone(), input.clone(), true);
        seal_plain(&mut r, &secrets(), || None);
        assert_eq!(r.extra[SEALED_OUTPUT], json!({"i": 0, "sec": REDACTED}));
        let mut recorded = r.clone();
        recorded.output = Some(json!(REDACTED).into()); // the whole-output redaction (journal)
        assert_eq!(unseal(&recorded, lookup, || None), live);
        // A computed leaf (a length, a transformed secret) or text around the secret: not
        // sealed — the output stays "[redacted]" wholly after a crash.
        for computed in [
            json!({"i": 0, "sec": "hunter2-long", "len": 12}),
            json!({"i": 0, "sec": "Bearer hunter2-long"}),
            json!({"i": 0, "b64": "aHVudGVyMi1sb25n", "sec": "hunter2-long"}),
        ] {
            let mut r = record(computed, input.clone(), true);
            seal_plain(&mut r, &secrets(), || None);
            assert!(!r.extra.contains_key(SEALED_OUTPUT), "{:?}", r.output);
            assert!(!super::super::taint::places(&r).is_empty());
            r.output = Some(json!(REDACTED).into());
            assert_eq!(unseal(&r, lookup, || None), json!(REDACTED));
        }
    }

    /// The echo test compares leaves as `Value`'s `==` does and finds each reference by its
    /// pointer, escapes included (D-373).
    #[test]
    fn an_echo_is_known_leaf_by_leaf_and_reference_by_reference() {
        let refs = [json!({"path": "/a~1b~0/1", "secret": "K"})];
        let output = json!({"a/b~": [1, "hunter2-long", {"n": 1.5}], "t": true});
        let input = json!({"a/b~": [1, REDACTED, {"n": 1.5}], "t": true});
        assert!(known_to_the_store(&output, Some(&input), &refs));
        // Not known: a leaf of another number type, a key or a leaf the input lacks, a
        // reference that is elsewhere (the secret's own leaf is then unknown), no input.
        for input in [
            json!({"a/b~": [1.0, REDACTED, {"n": 1.5}], "t": true}),
            json!({"a/b~": [1, REDACTED, {"m": 1.5}], "t": true}),
            json!({"a/b~": [1, REDACTED, {"n": 1.5}], "t": false}),
        ] {
            assert!(!known_to_the_store(&output, Some(&input), &refs), "{input}");
        }
        let elsewhere = [json!({"path": "/a~1b~0/0", "secret": "K"})];
        let output = json!({"a/b~": [1, "hunter2-long", {"n": 1.5}], "t": true});
        assert!(!known_to_the_store(&output, Some(&input), &elsewhere));
        assert!(!known_to_the_store(&output, None, &refs));
        // The whole output a reference: known whatever the input.
        let whole = [json!({"path": "", "secret": "K"})];
        assert!(known_to_the_store(&json!("hunter2-long"), None, &whole));
    }

    #[test]
    fn a_secret_the_run_no_longer_has_stays_redacted() {
        let mut r = record(json!({"tok": "hunter2-long"}), json!({}), false);
        seal_plain(&mut r, &secrets(), || None);
        display(&mut r);
        assert_eq!(unseal(&r, |_| None, || None), json!({"tok": REDACTED}));
    }

    fn host_key() -> SealingKey {
        SealingKey::from_bytes(*b"0123456789abcdefghijklmnopqrstuv")
    }

    fn key() -> Option<Sealer> {
        Sealer::new(&host_key(), "run_1", Some("c2VhbC1pZC0x"), "")
    }

    fn recorded(r: &StepExecution) -> StepExecution {
        let mut out = r.clone();
        crate::engine::journal::redact_record(&mut out);
        out
    }

    #[test]
    fn a_computed_secret_derived_output_comes_back_whole_with_a_key() {
        let input = json!({"tok": REDACTED});
        for live in [
            json!({"auth": "Bearer hunter2-long", "len": 12}),
            json!({"b64": "aHVudGVyMi1sb25n"}),
            json!(12),
        ] {
            let mut r = record(live.clone(), input.clone(), true);
            seal_plain(&mut r, &secrets(), key);
            assert!(r.extra.contains_key(ENCRYPTED_OUTPUT), "{live}");
            let stored = recorded(&r);
            assert_eq!(stored.output, Some(json!(REDACTED).into()));
            let text = serde_json::to_string(&stored).unwrap_or_default();
            assert!(
                !text.contains("hunter2") && !text.contains("aHVudGVy"),
                "{text}"
            );
            assert_eq!(unseal(&stored, lookup, key), live, "resumed");
            assert_eq!(unseal(&r, lookup, key), live, "live");
            // Another key, step or attempt does not open it.
            let other = || {
                Sealer::new(
                    &SealingKey::from_bytes([9; 32]),
                    "run_1",
                    Some("c2VhbC1pZC0x"),
                    "",
                )
            };
            assert_eq!(unseal(&stored, lookup, other), json!(REDACTED));
            let mut moved = stored.clone();
            moved.attempt += 1;
            assert_eq!(unseal(&moved, lookup, key), json!(REDACTED));
            moved.attempt -= 1;
            moved.step_id = "b".into();
            assert_eq!(unseal(&moved, lookup, key), json!(REDACTED));
        }
        // The same run sealed twice gives the same bytes (a reproducible simulation).
        let (mut a, mut b) = (
            record(json!({"len": 12}), input.clone(), true),
            record(json!({"len": 12}), input, true),
        );
        seal_plain(&mut a, &secrets(), key);
        seal_plain(&mut b, &secrets(), key);
        assert_eq!(a.extra[ENCRYPTED_OUTPUT], b.extra[ENCRYPTED_OUTPUT]);
    }

    #[test]
    fn a_secret_in_a_key_comes_back_whole_with_a_key() {
        let live = json!({"hunter2-long": 1});
        let mut r = record(live.clone(), json!({}), false);
        seal_plain(&mut r, &secrets(), key);
        let stored = recorded(&r);
        assert_eq!(stored.output, Some(json!(REDACTED).into()));
        assert_eq!(unseal(&stored, lookup, key), live);
    }

    #[test]
    fn without_a_key_a_computed_output_stays_redacted() {
        let mut r = record(json!({"len": 12}), json!({}), true);
        seal_plain(&mut r, &secrets(), || None);
        assert!(!r.extra.contains_key(ENCRYPTED_OUTPUT));
        assert_eq!(unseal(&recorded(&r), lookup, key), json!(REDACTED));
    }

    #[test]
    fn a_damaged_or_forged_envelope_stays_redacted() {
        let mut r = record(json!({"len": 12}), json!({}), true);
        seal_plain(&mut r, &secrets(), key);
        let mut stored = recorded(&r);
        let Some(Value::String(env)) = stored.extra.get(ENCRYPTED_OUTPUT).cloned() else {
            panic!("sealed");
        };
        for bad in [
            env.replacen("v2.", "v1.", 1),
            format!("{env}A"),
            env.replacen('.', ".99", 1),
            "v2.0.".into(),
            "v2.x.AAAA".into(),
        ] {
            stored.extra.insert(ENCRYPTED_OUTPUT.into(), json!(bad));
            assert_eq!(unseal(&stored, lookup, key), json!(REDACTED), "{bad}");
        }
    }

    #[test]
    fn an_envelope_never_holds_a_secret_the_sink_would_scrub() {
        // A 1-character secret is in almost every base64 text: no envelope is kept.
        let few = json!({"K": "hunter2-long-enough", "A": "a", "B": "b", "C": "c"});
        let few = few.as_object().cloned().unwrap_or_default();
        let k = key;
        let big: String = (0..200)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut r = record(json!({"v": big}), json!({}), true);
        seal_plain(&mut r, &few, k);
        assert_eq!(r.extra.get(ENCRYPTED_OUTPUT), None, "{:?}", r.extra);
        assert_eq!(unseal(&recorded(&r), lookup, k), json!(REDACTED));
        // Across many outputs, every envelope kept is free of every secret.
        for i in 0..64 {
            let mut r = record(json!({"i": i}), json!({}), true);
            seal_plain(&mut r, &few, k);
            if let Some(Value::String(env)) = r.extra.get(ENCRYPTED_OUTPUT) {
                assert!(Scrubber::new(few.values()).text(env).is_none(), "{env}");
                assert_eq!(unseal(&recorded(&r), |_| None, k), json!({"i": i}));
            }
        }
    }

    /// D-251: an envelope opens only for the run (id and seal id) and the record (frame,
    /// step, attempt) it was sealed for — a transplant from any other run never opens.
    #[test]
    fn a_transplanted_envelope_never_opens() {
        let live = json!({"branch": "pay", "len": 12});
        let mut r = record(live.clone(), json!({}), true);
        seal_plain(&mut r, &secrets(), key);
        let stored = recorded(&r);
        assert_eq!(unseal(&stored, lookup, key), live, "its own run opens it");
        let k = host_key();
        let elsewhere: [(&str, Option<&str>, &str); 5] = [
            ("run_2", Some("c2VhbC1pZC0x"), ""),
            ("run_1", Some("c2VhbC1pZC0y"), ""),
            ("run_1", None, ""),
            ("run_1", Some("c2VhbC1pZC0x"), "frame:/loop.iterations[0]"),
            ("run_1", Some("c2VhbC1pZC0x"), "frame:/loop.iterations[1]"),
        ];
        for (run, seal_id, frame) in elsewhere {
            let other = || Sealer::new(&k, run, seal_id, frame);
            assert_eq!(
                unseal(&stored, lookup, other),
                json!(REDACTED),
                "opened in run {run} seal id {seal_id:?} frame {frame:?}"
            );
        }
        // Two runs sealing the same output at the same step and attempt write different
        // envelopes (their seal ids differ).
        let mut other_run = record(live, json!({}), true);
        seal_plain(&mut other_run, &secrets(), || {
            Sealer::new(&k, "run_1", Some("c2VhbC1pZC0y"), "")
        });
        assert_ne!(r.extra[ENCRYPTED_OUTPUT], other_run.extra[ENCRYPTED_OUTPUT]);
    }

    /// D-250: with no key nothing keyed reaches the record — no envelope, so nothing in
    /// the store can confirm a guess of the secret; the output is lost after a crash and
    /// says so.
    #[test]
    fn without_a_key_the_record_holds_nothing_a_guess_could_be_checked_against() {
        let mut r = record(
            json!({"pin": 4711, "len": 4}),
            json!({"pin": REDACTED}),
            true,
        );
        seal_plain(&mut r, &secrets(), || None);
        let stored = recorded(&r);
        let text = serde_json::to_string(&stored).unwrap_or_default();
        assert!(
            !text.contains(ENCRYPTED_OUTPUT) && !text.contains("4711"),
            "{text}"
        );
        let published = unseal(&stored, lookup, || None);
        assert_eq!(published, json!(REDACTED));
        assert!(is_lost(&stored, &published));
        assert!(!is_lost(&stored, &json!({"pin": 4711})));
    }
}
