//! The on-disk store: one append-only journal per run (RUN-3, RUN-4).
//!
//! Owns: the journal file format (`w6w-sim/journal-2`), its durability, the per-run
//! exclusive lock and reading a journal back. Invariant: `checkpoint` appends exactly one
//! framed record and returns only after `fdatasync`; nothing a reader accepts was not
//! written whole by this module; a damaged, foreign or unknown file is refused with its
//! path and byte offset, never silently repaired or shortened — except a torn tail (the
//! one record a killed process was appending, which never returned: an incomplete last
//! record with nothing whole after it, or a tail of zero bytes a filesystem left after a
//! crash), which is dropped. A whole last record that fails its checksum is refused like
//! any other (D-202), and so is a length past the end of the file with a whole record after
//! it (D-210). No file of the store is opened through a symbolic link, and the temp file
//! of a rewrite is created exclusively (D-212).
//!
//! Layout of `DIR/<runId>.journal`: the 8-byte magic `w6wjrnl\n`, then frames of
//! `len: u32 LE | crc: u32 LE | kind: u8 | JSON [| tag: 32 bytes]`, where `len` counts
//! `kind` + JSON (+ tag) and `crc` is CRC-32 (IEEE) over the four `len` bytes followed by
//! the rest. A store holding a sealing key writes `w6w-sim/journal-3`: every record ends
//! with an HMAC-SHA256 tag under a sub-key of the sealing key over the previous record's
//! tag, the record's index, kind and JSON — a chain from the header on, so a record edited
//! (checksum recomputed or not), dropped from the middle, duplicated or moved is refused
//! with the file and its offset (`run_file_tampered`), another key is refused at the header
//! (`sealing_key_wrong`), and a journal of the other kind is refused rather than read as
//! this one (D-251). Without a key the store writes `w6w-sim/journal-2`, without tags. The first
//! record is the header (`H`: format and runId), the second a snapshot (`S`: the whole
//! RunState and world); then one `P` record per checkpoint (the patch and what changed in
//! the world since the previous record) and `L` records (trace-sequence leases). When the
//! records since the snapshot outgrow it, the store writes a fresh file holding only a
//! snapshot (temp file + fsync + rename + directory fsync): compaction.
//!
//! A checkpoint costs O(patch): the patch is serialized once, the folded state is updated
//! in place, and the world's report lists are appended by their new tails only.
//!
//! `DIR/<runId>.lock` is held with an exclusive OS file lock for as long as this store has
//! the run open (released by the kernel when the process dies) and holds the owner's pid:
//! a second process gets "run R is in use by process P" before it can invoke anything.
//! A store directory this process cannot write (no lock file can be created or opened for
//! writing) is read without the lock: a finished run loads, anything else — an unfinished
//! run, any write — is refused (`store_read_only`, D-213).
//!
//! Trace sequence numbers survive real kills through leases: before the trace uses a
//! `seq` at or past the durable ceiling, an `L` record raises the ceiling by
//! [`SEQ_BLOCK`]; a process that resumes the run starts its `seq` at the ceiling, above
//! anything a killed predecessor can have written.
//!
//! The previous whole-file format (`DIR/<runId>.json`, `w6w-sim/run-1`) is read, and
//! migrated to a journal at the run's next write; any other format is refused.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scenario::run_id_ok;
use super::store::{
    STORE_FORMAT, Store, StoreError, StoredRun, create_temp, is_link_refusal, open_no_follow,
};
use super::world::{SeqLease, WorldSnapshot};
use crate::host::SealingKey;
use crate::host::sealing::KeyUse;
use crate::model::{RunState, RunStatePatch};

/// The journal's format tag (its header record's `format`).
pub(crate) const JOURNAL_FORMAT: &str = "w6w-sim/journal-2";
/// The format tag of a journal whose records are authenticated (D-251).
pub(crate) const JOURNAL_FORMAT_AUTH: &str = "w6w-sim/journal-3";
/// The bytes of a record's authentication tag (HMAC-SHA256) in a `journal-3` file.
pub(crate) const TAG_BYTES: usize = 32;
/// The first eight bytes of every journal.
pub const MAGIC: &[u8; 8] = b"w6wjrnl\n";
/// How far one lease raises the trace-sequence ceiling.
pub(crate) const SEQ_BLOCK: u64 = 1024;
/// The largest record a reader accepts (a larger length field is damage).
pub(crate) use crate::limits::JOURNAL_RECORD_MAX as RECORD_MAX;
/// Compaction: rewrite once the records since the snapshot exceed this many bytes and
/// `COMPACT_FACTOR` × the snapshot (so a compaction's O(state) cost is amortized).
const COMPACT_MIN_BYTES: u64 = 4 << 20;
const COMPACT_FACTOR: u64 = 4;
const FRAME_HEADER: usize = 8;

const KIND_HEADER: u8 = b'H';
const KIND_SNAPSHOT: u8 = b'S';
const KIND_PATCH: u8 = b'P';
const KIND_LEASE: u8 = b'L';

/// Why a journal could not be opened, read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// Another process (or another store in this one) has the run open.
    #[error("run {run_id} is in use by process {pid} (lock {})", lock.display())]
    InUse {
        run_id: String,
        pid: String,
        lock: PathBuf,
    },
    /// A record fails its checksum, has an impossible length or kind, or does not follow
    /// from the records before it.
    #[error("{}: offset {offset}: {message}; refusing to use a damaged run file", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        message: String,
    },
    /// The file names another run than the one asked for.
    #[error("{}: offset {offset}: the file belongs to run {found:?}, not {expected:?}", path.display())]
    WrongRun {
        path: PathBuf,
        offset: u64,
        expected: String,
        found: String,
    },
    /// A format tag this build does not read (a newer or foreign writer).
    #[error(
        "{}: offset {offset}: unknown run-file format {found:?} (this build reads {JOURNAL_FORMAT} and the older {STORE_FORMAT})",
        path.display()
    )]
    UnknownFormat {
        path: PathBuf,
        offset: u64,
        found: String,
    },
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// The store directory cannot be written (its lock file cannot be created or opened
    /// for writing): a finished run is read from it, nothing is written to it (D-213).
    #[error("{}: the store cannot be written ({why}); {message}", path.display())]
    ReadOnly {
        path: PathBuf,
        why: String,
        message: String,
    },
    /// A file of the store is a symbolic link: refused, never followed (D-212).
    #[error(
        "{}: is a symbolic link; the store never follows a link in its directory (remove it)",
        path.display()
    )]
    Link { path: PathBuf },
    #[error("run id {0:?} is not a safe file name")]
    BadRunId(String),
    /// D-251: a record of an authenticated journal fails its tag: edited, or a record
    /// before it was dropped, duplicated or moved.
    #[error("{}: offset {offset}: {message}; refusing a run file that was changed after it was written", path.display())]
    Tampered {
        path: PathBuf,
        offset: u64,
        message: String,
    },
    /// D-251: the journal's header does not authenticate under the key given: it was
    /// written with another sealing key (or its header was forged).
    #[error(
        "{}: offset {offset}: the run was written with another sealing key (or its header was forged); give the key it was written with",
        path.display()
    )]
    KeyWrong { path: PathBuf, offset: u64 },
    /// D-251: an authenticated journal read without a key.
    #[error(
        "{}: offset {offset}: the run was written with a sealing key; give the same key (--key-file or W6W_SEALING_KEY) to read it",
        path.display()
    )]
    KeyRequired { path: PathBuf, offset: u64 },
    /// D-251: a key was given but the run file is not authenticated — written without a key,
    /// or replaced by a file that is not this store's.
    #[error(
        "{}: offset {offset}: the run file is not authenticated, but a sealing key was given; it was written without a key (read it without one) or replaced",
        path.display()
    )]
    Unauthenticated { path: PathBuf, offset: u64 },
}

impl JournalError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            JournalError::InUse { .. } => "run_in_use",
            JournalError::Corrupt { .. } => "run_file_corrupt",
            JournalError::WrongRun { .. } => "run_file_wrong_run",
            JournalError::UnknownFormat { .. } => "run_file_unknown_format",
            JournalError::Io { .. } => "store_io",
            JournalError::Link { .. } => "store_link",
            JournalError::ReadOnly { .. } => "store_read_only",
            JournalError::BadRunId(_) => "bad_run_id",
            JournalError::Tampered { .. } => "run_file_tampered",
            JournalError::KeyWrong { .. } => "sealing_key_wrong",
            JournalError::KeyRequired { .. } => "sealing_key_required",
            JournalError::Unauthenticated { .. } => "run_file_unauthenticated",
        }
    }
}

impl From<JournalError> for StoreError {
    fn from(e: JournalError) -> Self {
        StoreError(format!("{e} [{}]", e.code()))
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> JournalError + '_ {
    move |e| JournalError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// [`io_err`] for opening a store file: a symbolic link is [`JournalError::Link`].
fn open_err(path: &Path) -> impl Fn(std::io::Error) -> JournalError + '_ {
    move |e| {
        if is_link_refusal(path, &e) {
            JournalError::Link {
                path: path.to_owned(),
            }
        } else {
            io_err(path)(e)
        }
    }
}

/// The whole of a store file, opened without following a link (D-212).
fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = open_no_follow(OpenOptions::new().read(true), path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

// ---- records ----

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    format: String,
    run_id: String,
    /// D-260: what the run was started from when it is not a w6w workflow — a dialect
    /// document's identity (`{dialect, documentSha256, workflowSha256}`), checked by
    /// `resume` and `replay` before anything runs. Absent for a w6w run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Value>,
}

/// D-251: the authentication chain of a `journal-3` file — the journal sub-key of the
/// sealing key, the previous record's tag and the next record's index.
#[derive(Clone, PartialEq, Eq)]
struct Chain {
    key: [u8; 32],
    prev: [u8; TAG_BYTES],
    index: u64,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain {{ index: {} }}", self.index)
    }
}

impl Chain {
    /// The chain of a journal's first record (its header).
    fn start(key: &SealingKey) -> Self {
        Chain {
            key: key.derive(KeyUse::Journal),
            prev: [0; TAG_BYTES],
            index: 0,
        }
    }

    /// The tag of the next record (`kind` + `json`).
    fn tag(&self, kind: u8, json: &[u8]) -> [u8; TAG_BYTES] {
        use hmac::Mac as _;
        let mut out = [0u8; TAG_BYTES];
        // HMAC takes a key of any length: construction cannot fail.
        if let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key) {
            mac.update(b"w6w-sim journal record v3");
            mac.update(&self.prev);
            mac.update(&self.index.to_be_bytes());
            mac.update(&[kind]);
            mac.update(json);
            out.copy_from_slice(&mac.finalize().into_bytes());
        }
        out
    }

    /// `tag` when it is the next record's (compared in constant time), else `None`.
    fn verify(&self, kind: u8, json: &[u8], tag: &[u8]) -> Option<[u8; TAG_BYTES]> {
        let want = self.tag(kind, json);
        let same =
            tag.len() == TAG_BYTES && want.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        same.then_some(want)
    }

    fn advance(&mut self, tag: [u8; TAG_BYTES]) {
        self.prev = tag;
        self.index += 1;
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotOut<'a> {
    state: &'a RunState,
    #[serde(skip_serializing_if = "Option::is_none")]
    world: Option<&'a WorldSnapshot>,
    seq_ceiling: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotIn {
    state: RunState,
    #[serde(default)]
    world: Option<WorldSnapshot>,
    #[serde(default)]
    seq_ceiling: u64,
}

#[derive(Serialize)]
struct PatchOut<'a> {
    patch: &'a RunStatePatch,
    world: DeltaOut<'a>,
}

#[derive(Deserialize)]
struct PatchIn {
    patch: RunStatePatch,
    world: DeltaIn,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lease {
    seq_ceiling: u64,
}

/// The new tail of an append-only report list: `items` start at index `at`.
#[derive(Serialize)]
struct TailOut<'a, T = Value> {
    at: usize,
    items: &'a [T],
}

#[derive(Deserialize)]
struct TailIn<T = Value> {
    at: usize,
    items: Vec<T>,
}

fn tail_is_empty<T>(t: &TailOut<'_, T>) -> bool {
    t.items.is_empty()
}

/// What changed in the world since the previous record: every scalar, the changed
/// invocation counts, the fired faults when they grew, and the tails of the report lists.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeltaOut<'a> {
    clock_ms: u64,
    checkpoints: u64,
    crashes: u64,
    aborted: bool,
    checkpoint_bytes: u64,
    seq: u64,
    total_invocations: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    invocation_counts: BTreeMap<&'a str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fired_invoke_faults: Option<&'a BTreeSet<usize>>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    invocations: TailOut<'a, super::world::Invocation>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    waits: TailOut<'a>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    calls: TailOut<'a>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    schedules: TailOut<'a>,
    /// Every schedule's fire time, when one was added (D-122: a child's wait fires after
    /// a real kill too; `resume --token` moves the clock to it, D-125).
    #[serde(skip_serializing_if = "Option::is_none")]
    fire_times: Option<&'a BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "tail_is_empty")]
    canceled: TailOut<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaIn {
    clock_ms: u64,
    checkpoints: u64,
    crashes: u64,
    aborted: bool,
    checkpoint_bytes: u64,
    seq: u64,
    total_invocations: u64,
    #[serde(default)]
    invocation_counts: BTreeMap<String, u64>,
    #[serde(default)]
    fired_invoke_faults: Option<BTreeSet<usize>>,
    #[serde(default)]
    invocations: Option<TailIn<super::world::Invocation>>,
    #[serde(default)]
    waits: Option<TailIn>,
    #[serde(default)]
    calls: Option<TailIn>,
    #[serde(default)]
    schedules: Option<TailIn>,
    #[serde(default)]
    fire_times: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    canceled: Option<TailIn>,
}

impl<'a> DeltaOut<'a> {
    /// What of `world` the journal does not hold yet, past mirror `m`: the scalars, the
    /// invocation counts that changed (all of them when `changed_counts` is `None`), and
    /// each append-only list's new tail.
    fn of(world: &'a WorldSnapshot, m: Mirror, changed_counts: Option<&[String]>) -> Self {
        let invocation_counts: BTreeMap<&str, u64> = match changed_counts {
            Some(keys) => keys
                .iter()
                .filter_map(|k| {
                    world
                        .invocation_counts
                        .get_key_value(k.as_str())
                        .map(|(k, v)| (k.as_str(), *v))
                })
                .collect(),
            None => world
                .invocation_counts
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect(),
        };
        DeltaOut {
            clock_ms: world.clock_ms,
            checkpoints: world.checkpoints,
            crashes: world.crashes,
            aborted: world.aborted,
            checkpoint_bytes: world.checkpoint_bytes,
            seq: world.seq,
            total_invocations: world.total_invocations,
            invocation_counts,
            fired_invoke_faults: (world.fired_invoke_faults.len() != m.fired)
                .then_some(&world.fired_invoke_faults),
            invocations: TailOut {
                at: m.invocations,
                items: &world.invocations[m.invocations..],
            },
            waits: TailOut {
                at: m.waits,
                items: &world.waits[m.waits..],
            },
            calls: TailOut {
                at: m.calls,
                items: &world.calls[m.calls..],
            },
            schedules: TailOut {
                at: m.schedules,
                items: &world.schedules[m.schedules..],
            },
            fire_times: (world.fire_times.len() != m.fire_times).then_some(&world.fire_times),
            canceled: TailOut {
                at: m.canceled,
                items: &world.canceled[m.canceled..],
            },
        }
    }
}

/// How much of the world the journal already holds (lengths of the append-only lists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Mirror {
    invocations: usize,
    waits: usize,
    calls: usize,
    schedules: usize,
    fired: usize,
    fire_times: usize,
    canceled: usize,
}

impl Mirror {
    fn of(w: &WorldSnapshot) -> Self {
        Mirror {
            invocations: w.invocations.len(),
            waits: w.waits.len(),
            calls: w.calls.len(),
            schedules: w.schedules.len(),
            fired: w.fired_invoke_faults.len(),
            fire_times: w.fire_times.len(),
            canceled: w.canceled.len(),
        }
    }

    /// The lists only ever grow; a shorter one means the caller's world is another
    /// world (a snapshot is written instead of a delta).
    fn follows(&self, w: &WorldSnapshot) -> bool {
        w.invocations.len() >= self.invocations
            && w.waits.len() >= self.waits
            && w.calls.len() >= self.calls
            && w.schedules.len() >= self.schedules
            && w.fired_invoke_faults.len() >= self.fired
            && w.fire_times.len() >= self.fire_times
            && w.canceled.len() >= self.canceled
    }
}

fn apply_tail<T>(
    list: &mut Vec<T>,
    tail: Option<TailIn<T>>,
    fail: &dyn Fn(String) -> JournalError,
) -> Result<(), JournalError> {
    let Some(tail) = tail else { return Ok(()) };
    if tail.at != list.len() {
        return Err(fail(format!(
            "a report list resumes at index {} but {} entries precede it",
            tail.at,
            list.len()
        )));
    }
    list.extend(tail.items);
    Ok(())
}

fn apply_delta(
    world: &mut WorldSnapshot,
    d: DeltaIn,
    fail: &dyn Fn(String) -> JournalError,
) -> Result<(), JournalError> {
    world.clock_ms = d.clock_ms;
    world.checkpoints = d.checkpoints;
    world.crashes = d.crashes;
    world.aborted = d.aborted;
    world.checkpoint_bytes = d.checkpoint_bytes;
    world.seq = d.seq;
    world.total_invocations = d.total_invocations;
    world.invocation_counts.extend(d.invocation_counts);
    if let Some(f) = d.fired_invoke_faults {
        world.fired_invoke_faults = f;
    }
    apply_tail(&mut world.invocations, d.invocations, fail)?;
    apply_tail(&mut world.waits, d.waits, fail)?;
    apply_tail(&mut world.calls, d.calls, fail)?;
    apply_tail(&mut world.schedules, d.schedules, fail)?;
    if let Some(f) = d.fire_times {
        world.fire_times = f;
    }
    apply_tail(&mut world.canceled, d.canceled, fail)?;
    Ok(())
}

/// Frame `kind` + the JSON of `body` into `buf` (cleared first), with the next tag of
/// `chain` when the journal is authenticated; the tag is returned for the caller to
/// [`Chain::advance`] once the record is durable.
fn frame(
    buf: &mut Vec<u8>,
    kind: u8,
    body: &impl Serialize,
    chain: Option<&Chain>,
) -> Result<Option<[u8; TAG_BYTES]>, String> {
    buf.clear();
    buf.extend_from_slice(&[0; FRAME_HEADER]);
    buf.push(kind);
    serde_json::to_writer(&mut *buf, body).map_err(|e| format!("cannot serialize: {e}"))?;
    let tag = chain.map(|c| c.tag(kind, &buf[FRAME_HEADER + 1..]));
    if let Some(tag) = &tag {
        buf.extend_from_slice(tag);
    }
    let len = buf.len() - FRAME_HEADER;
    if len > RECORD_MAX {
        return Err(format!("a record of {len} bytes exceeds {RECORD_MAX}"));
    }
    let len_bytes = u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len_bytes);
    h.update(&buf[FRAME_HEADER..]);
    buf[0..4].copy_from_slice(&len_bytes);
    buf[4..8].copy_from_slice(&h.finalize().to_le_bytes());
    Ok(tag)
}

/// Move `chain` past a record whose tag `frame` returned.
fn advance(chain: &mut Option<Chain>, tag: Option<[u8; TAG_BYTES]>) {
    if let (Some(c), Some(t)) = (chain.as_mut(), tag) {
        c.advance(t);
    }
}

// ---- reading ----

/// How many bytes [`damaged_length`] may checksum per byte of the tail it scans (plus
/// [`SCAN_SLACK`]): the scan stays linear in the file whatever its bytes are.
const SCAN_BYTES_PER_TAIL_BYTE: usize = 8;
const SCAN_SLACK: usize = 1 << 20;

/// D-210: whether the bytes from `off` (a record whose length points past the end of the
/// file) cannot be a torn tail, and why: the bytes to the end are one whole record under
/// another length (`crc` matches), or a whole record — known kind, a JSON object, a
/// matching checksum — starts after its frame header. Neither can come from an append
/// cut short, whose bytes are a prefix of one record. `None`: a torn tail.
///
/// Only candidates whose kind byte and first JSON byte fit are checksummed, and the work
/// is bounded linearly in the tail; a tail that would need more is crafted, and is
/// refused as damage too.
fn damaged_length(bytes: &[u8], off: usize, crc: u32) -> Option<String> {
    let end = bytes.len();
    let whole_len = end - off - FRAME_HEADER;
    if let Ok(whole) = u32::try_from(whole_len) {
        let mut h = crc32fast::Hasher::new();
        h.update(&whole.to_le_bytes());
        h.update(&bytes[off + FRAME_HEADER..]);
        if h.finalize() == crc {
            return Some(format!(
                "the {whole_len} bytes after its frame header form the whole record"
            ));
        }
    }
    let mut budget = SCAN_BYTES_PER_TAIL_BYTE
        .saturating_mul(end - off)
        .saturating_add(SCAN_SLACK);
    // A record's body is at least one byte, so the next one starts after that.
    for p in off + FRAME_HEADER + 1..end.saturating_sub(FRAME_HEADER + 1) {
        let len = u32::from_le_bytes([bytes[p], bytes[p + 1], bytes[p + 2], bytes[p + 3]]) as usize;
        if !(2..=RECORD_MAX).contains(&len) || len > end - p - FRAME_HEADER {
            continue;
        }
        let body = &bytes[p + FRAME_HEADER..p + FRAME_HEADER + len];
        if !matches!(
            body[0],
            KIND_HEADER | KIND_SNAPSHOT | KIND_PATCH | KIND_LEASE
        ) || body[1] != b'{'
        {
            continue;
        }
        if len + 4 > budget {
            return Some(format!(
                "the bytes after it hold more record-like frames than a torn tail can (from offset {p})"
            ));
        }
        budget -= len + 4;
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[p..p + 4]);
        h.update(body);
        let stored = u32::from_le_bytes([bytes[p + 4], bytes[p + 5], bytes[p + 6], bytes[p + 7]]);
        if h.finalize() == stored {
            return Some(format!("a whole record follows at offset {p}"));
        }
    }
    None
}

/// A journal read back: the state its records fold to, and where its whole records end.
#[derive(Debug, Clone)]
pub struct Folded {
    pub state: RunState,
    pub world: Option<WorldSnapshot>,
    /// The durable trace-sequence ceiling (already folded into `world.seq`).
    pub seq_ceiling: u64,
    /// Bytes of whole records (where the next append goes).
    pub len: u64,
    /// Bytes of an incomplete last record a killed writer left (dropped).
    pub torn: u64,
    snapshot_bytes: u64,
    since_snapshot: u64,
    mirror: Mirror,
    /// The authentication chain after the last whole record (`journal-3`).
    chain: Option<Chain>,
    /// The header's `source` (D-260): the dialect document the run was started from.
    pub source: Option<Value>,
}

impl Folded {
    /// Whether the journal's records are authenticated (`journal-3`, D-251).
    pub fn authenticated(&self) -> bool {
        self.chain.is_some()
    }
}

/// Read a journal's bytes written without a sealing key. `expected`: the run the caller
/// asked for (`None` accepts the header's).
pub fn read_journal(
    path: &Path,
    bytes: &[u8],
    expected: Option<&str>,
) -> Result<Folded, JournalError> {
    read_journal_keyed(path, bytes, expected, None)
}

/// Read a journal's bytes with the store's sealing key, if it holds one: with a key only
/// an authenticated journal under that key is read, without one only an unauthenticated
/// journal (D-251).
pub(crate) fn read_journal_keyed(
    path: &Path,
    bytes: &[u8],
    expected: Option<&str>,
    key: Option<&SealingKey>,
) -> Result<Folded, JournalError> {
    fold_journal(path, bytes, expected, Auth::Key(key), &mut |_| {})
}

/// How [`fold_journal`] treats a journal's authentication tags (D-251, D-270).
#[derive(Clone, Copy)]
enum Auth<'a> {
    /// The store's rule: with a key only a `journal-3` file authenticated under it, without
    /// one only a `journal-2` file.
    Key(Option<&'a SealingKey>),
    /// `inspect` without a key: either format, a `journal-3` file's tags skipped unchecked
    /// (the caller says so to the user).
    Unverified,
}

/// What a record is, for [`RecordSeen`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum RecordKind {
    Header,
    Snapshot,
    Checkpoint,
    Lease,
}

/// One whole record as [`fold_journal`] read it (D-270): where it is and what the world
/// and the run were after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordSeen {
    pub offset: u64,
    /// Frame header included.
    pub bytes: u64,
    pub kind: RecordKind,
    /// The virtual clock after the record (snapshot and checkpoint records).
    pub clock_ms: Option<u64>,
    /// The run's checkpoint count after the record (snapshot and checkpoint records).
    pub checkpoints: Option<u64>,
    /// The trace-sequence ceiling after the record.
    pub seq_ceiling: u64,
    /// The run's status after the record (snapshot and checkpoint records).
    pub status: Option<crate::model::RunStatus>,
    /// The steps a checkpoint wrote: id, status, attempt.
    pub steps: Vec<(String, crate::model::StepStatus, u32)>,
}

/// A journal read by `inspect` (D-270): the fold, every whole record in order, and how
/// its authentication was treated.
#[derive(Debug, Clone)]
pub(crate) struct Inspected {
    pub folded: Folded,
    pub records: Vec<RecordSeen>,
    /// The header's format tag.
    pub format: String,
    pub authentication: Authentication,
}

/// Whether an inspected journal's records were authenticated (D-270).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authentication {
    /// `journal-2`: written without a key; nothing to verify.
    None,
    /// `journal-3`, every tag checked under the key given.
    Verified,
    /// `journal-3` read without a key: the tags were not checked.
    Unverified,
}

impl Authentication {
    /// Stable name (`--json`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Authentication::None => "none",
            Authentication::Verified => "verified",
            Authentication::Unverified => "unverified",
        }
    }
}

/// Read a journal for `inspect` (D-270) — the same fold the store uses, never a second
/// parser, and nothing written: with `key` a `journal-3` file is verified as the store
/// verifies it (and a `journal-2` file refused, D-251); without one either format is read
/// and a `journal-3` file's tags are skipped unchecked ([`Authentication::Unverified`]).
pub(crate) fn inspect_journal(
    path: &Path,
    bytes: &[u8],
    key: Option<&SealingKey>,
) -> Result<Inspected, JournalError> {
    let mut records = Vec::new();
    let mut format = String::new();
    let auth = match key {
        Some(k) => Auth::Key(Some(k)),
        None => Auth::Unverified,
    };
    let folded = fold_journal(path, bytes, None, auth, &mut |r| records.push(r))?;
    // The header is the first whole record, so its format was accepted: read it again for
    // the tag only (its JSON parsed once already, so this cannot fail on a folded file).
    if let Some(h) = records.first().filter(|r| r.kind == RecordKind::Header) {
        let start = (h.offset as usize).saturating_add(FRAME_HEADER + 1);
        let end = (h.offset as usize).saturating_add(h.bytes as usize);
        if let Some(json) = bytes.get(start..end)
            && let Some(Ok(head)) = serde_json::Deserializer::from_slice(json)
                .into_iter::<Header>()
                .next()
        {
            format = head.format;
        }
    }
    let authentication = if folded.chain.is_some() {
        Authentication::Verified
    } else if format == JOURNAL_FORMAT_AUTH {
        Authentication::Unverified
    } else {
        Authentication::None
    };
    Ok(Inspected {
        folded,
        records,
        format,
        authentication,
    })
}

/// The one definition of how a journal is read and folded: frame checks, the torn-tail
/// rules (D-61, D-202, D-210), the authentication chain (D-251), then each record applied
/// in order; `seen` is told of every whole record once it is applied.
fn fold_journal(
    path: &Path,
    bytes: &[u8],
    expected: Option<&str>,
    auth: Auth<'_>,
    seen: &mut dyn FnMut(RecordSeen),
) -> Result<Folded, JournalError> {
    let mut fold = Fold::new(path, expected, auth);
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(fold.corrupt(0, "not a w6w-sim run journal (no `w6wjrnl` magic)".into()));
    }
    let mut off = MAGIC.len();
    let mut torn = 0u64;
    while off < bytes.len() {
        let Frame::Whole(len) = fold.frame(bytes, off)? else {
            torn = (bytes.len() - off) as u64;
            break;
        };
        let body = &bytes[off + FRAME_HEADER..off + FRAME_HEADER + len];
        let (kind, rest) = (body[0], &body[1..]);
        if fold.header_seen {
            let json = fold.untag(off, kind, rest)?;
            seen(fold.record(off, len, kind, json)?);
        } else {
            fold.header(off, kind, rest)?;
            seen(RecordSeen {
                offset: off as u64,
                bytes: (FRAME_HEADER + len) as u64,
                kind: RecordKind::Header,
                clock_ms: None,
                checkpoints: None,
                seq_ceiling: fold.ceiling,
                status: None,
                steps: Vec::new(),
            });
        }
        off += FRAME_HEADER + len;
    }
    fold.finish(off, torn)
}

/// What the frame at an offset is: a whole record of this many body bytes, or a torn
/// tail (the rest of the file).
enum Frame {
    Whole(usize),
    Torn,
}

/// What [`fold_journal`] has learned so far, record by record.
struct Fold<'p, 'k> {
    path: &'p Path,
    auth: Auth<'k>,
    run_id: Option<String>,
    header_seen: bool,
    state: Option<RunState>,
    world: Option<WorldSnapshot>,
    ceiling: u64,
    snapshot_bytes: u64,
    since_snapshot: u64,
    chain: Option<Chain>,
    source: Option<Value>,
    /// D-270: a `journal-3` file read without a key: its tags are skipped, unchecked.
    skip_tags: bool,
}

impl<'p, 'k> Fold<'p, 'k> {
    fn new(path: &'p Path, expected: Option<&str>, auth: Auth<'k>) -> Self {
        Fold {
            path,
            auth,
            run_id: expected.map(str::to_owned),
            header_seen: false,
            state: None,
            world: None,
            ceiling: 0,
            snapshot_bytes: 0,
            since_snapshot: 0,
            chain: None,
            source: None,
            skip_tags: false,
        }
    }

    fn corrupt(&self, offset: usize, message: String) -> JournalError {
        JournalError::Corrupt {
            path: self.path.to_owned(),
            offset: offset as u64,
            message,
        }
    }

    fn wrong_run(&self, offset: usize, found: &str) -> JournalError {
        JournalError::WrongRun {
            path: self.path.to_owned(),
            offset: offset as u64,
            expected: self.run_id.clone().unwrap_or_default(),
            found: found.to_owned(),
        }
    }

    /// The frame at `off`: its length and checksum checked, or a torn tail.
    fn frame(&self, bytes: &[u8], off: usize) -> Result<Frame, JournalError> {
        let rest = bytes.len() - off;
        if rest < FRAME_HEADER {
            return Ok(Frame::Torn);
        }
        let len_bytes: [u8; 4] = [bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]];
        let len = u32::from_le_bytes(len_bytes) as usize;
        let crc = u32::from_le_bytes([
            bytes[off + 4],
            bytes[off + 5],
            bytes[off + 6],
            bytes[off + 7],
        ]);
        if len == 0 && bytes[off..].iter().all(|&b| b == 0) {
            // D-202: a file whose size reached the disk before its data (a crash during
            // the append on a filesystem that zero-fills, such as XFS or ext4 with
            // `data=writeback`): no whole record is all zeros, so this is the record
            // that never returned, torn.
            return Ok(Frame::Torn);
        }
        if len == 0 || len > RECORD_MAX {
            return Err(self.corrupt(off, format!("impossible record length {len}")));
        }
        if rest - FRAME_HEADER < len {
            // D-210: a torn append leaves a prefix of one record and nothing after it; a
            // length past the end with a whole record after it is a damaged length field.
            if let Some(found) = damaged_length(bytes, off, crc) {
                return Err(self.corrupt(
                    off,
                    format!(
                        "record length {len} points past the end of the file, but {found}: damage, not a torn tail (an append cut short leaves a prefix of one record and nothing whole after it)"
                    ),
                ));
            }
            return Ok(Frame::Torn);
        }
        let body = &bytes[off + FRAME_HEADER..off + FRAME_HEADER + len];
        let mut h = crc32fast::Hasher::new();
        h.update(&len_bytes);
        h.update(body);
        let actual = h.finalize();
        if actual != crc {
            // D-202: a whole last record may have been acknowledged (fsynced) and then
            // damaged, so it is refused too; the message says how to drop it by hand.
            let hint = if off + FRAME_HEADER + len == bytes.len() {
                format!(
                    " in the last record; if the process was killed while appending it, truncating the file to {off} bytes drops it and resumes from the record before"
                )
            } else {
                String::new()
            };
            return Err(self.corrupt(
                off,
                format!("record checksum mismatch (stored {crc:08x}, computed {actual:08x}){hint}"),
            ));
        }
        Ok(Frame::Whole(len))
    }

    /// The first record: the header, its format against the key (D-251, D-270), and the
    /// run it names.
    fn header(&mut self, off: usize, kind: u8, rest: &[u8]) -> Result<(), JournalError> {
        if kind != KIND_HEADER {
            return Err(self.corrupt(off, "the first record is not a header".into()));
        }
        // The header's JSON ends where its object does: a `journal-3` header has its
        // tag after it.
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Header>();
        let h = match values.next() {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(self.corrupt(off, format!("unreadable record: {e}"))),
            None => return Err(self.corrupt(off, "an empty header".into())),
        };
        let (json, trailer) = rest.split_at(values.byte_offset());
        self.header_format(off, kind, &h.format, json, trailer)?;
        match &self.run_id {
            Some(id) if *id != h.run_id => return Err(self.wrong_run(off, &h.run_id)),
            _ => self.run_id = Some(h.run_id),
        }
        self.source = h.source;
        self.header_seen = true;
        Ok(())
    }

    /// The header's format against the key: which one the reader accepts, and for
    /// `journal-3` under a key, the start of the authentication chain.
    fn header_format(
        &mut self,
        off: usize,
        kind: u8,
        format: &str,
        json: &[u8],
        trailer: &[u8],
    ) -> Result<(), JournalError> {
        let path = self.path.to_owned();
        let offset = off as u64;
        let key = match self.auth {
            Auth::Key(k) => k,
            Auth::Unverified => None,
        };
        match (format, trailer.len()) {
            (JOURNAL_FORMAT_AUTH, TAG_BYTES) if matches!(self.auth, Auth::Unverified) => {
                self.skip_tags = true;
            }
            (JOURNAL_FORMAT, 0) => {
                if key.is_some() {
                    return Err(JournalError::Unauthenticated { path, offset });
                }
            }
            (JOURNAL_FORMAT_AUTH, TAG_BYTES) => {
                let Some(key) = key else {
                    return Err(JournalError::KeyRequired { path, offset });
                };
                let mut c = Chain::start(key);
                let Some(tag) = c.verify(kind, json, trailer) else {
                    return Err(JournalError::KeyWrong { path, offset });
                };
                c.advance(tag);
                self.chain = Some(c);
            }
            (JOURNAL_FORMAT | JOURNAL_FORMAT_AUTH, n) => {
                return Err(self.corrupt(
                    off,
                    format!("{n} bytes after the header's JSON, which its format does not have"),
                ));
            }
            _ => {
                return Err(JournalError::UnknownFormat {
                    path,
                    offset,
                    found: format.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// A record's JSON: its authentication tag checked and removed (D-251), skipped
    /// unchecked (D-270), or none.
    fn untag<'b>(
        &mut self,
        off: usize,
        kind: u8,
        rest: &'b [u8],
    ) -> Result<&'b [u8], JournalError> {
        let split = rest.len().checked_sub(TAG_BYTES).filter(|&n| n > 0);
        let Some(c) = self.chain.as_mut() else {
            if !self.skip_tags {
                return Ok(rest);
            }
            let Some(split) = split else {
                return Err(self.corrupt(off, "a record too short to hold its tag".into()));
            };
            return Ok(&rest[..split]);
        };
        // D-251: the tag covers the record and, through the previous tag, every record
        // before it in order.
        let tampered = |message: String| JournalError::Tampered {
            path: self.path.to_owned(),
            offset: off as u64,
            message,
        };
        let Some(split) = split else {
            return Err(tampered(format!(
                "record {} is too short to hold its tag",
                c.index
            )));
        };
        let (json, tag) = rest.split_at(split);
        let Some(tag) = c.verify(kind, json, tag) else {
            return Err(tampered(format!(
                "record {} fails its authentication tag: it was edited, or a record before it was dropped, duplicated or moved",
                c.index
            )));
        };
        c.advance(tag);
        Ok(json)
    }

    /// A record after the header applied: a snapshot, a checkpoint or a lease.
    fn record(
        &mut self,
        off: usize,
        len: usize,
        kind: u8,
        json: &[u8],
    ) -> Result<RecordSeen, JournalError> {
        let bad_json = |e: serde_json::Error| self.corrupt(off, format!("unreadable record: {e}"));
        let mut record = RecordSeen {
            offset: off as u64,
            bytes: (FRAME_HEADER + len) as u64,
            kind: RecordKind::Lease,
            clock_ms: None,
            checkpoints: None,
            seq_ceiling: 0,
            status: None,
            steps: Vec::new(),
        };
        match kind {
            KIND_HEADER => {
                return Err(self.corrupt(off, "a second header".into()));
            }
            KIND_SNAPSHOT => {
                let s: SnapshotIn = serde_json::from_slice(json).map_err(bad_json)?;
                self.snapshot(off, len, s, &mut record)?;
            }
            KIND_PATCH => {
                let p: PatchIn = serde_json::from_slice(json).map_err(bad_json)?;
                self.checkpoint(off, len, p, &mut record)?;
            }
            KIND_LEASE => {
                let l: Lease = serde_json::from_slice(json).map_err(bad_json)?;
                self.ceiling = self.ceiling.max(l.seq_ceiling);
                self.since_snapshot += (FRAME_HEADER + len) as u64;
                record.kind = RecordKind::Lease;
            }
            other => {
                return Err(self.corrupt(
                    off,
                    format!(
                        "unknown record kind {:?} (written by a newer version?)",
                        char::from(other)
                    ),
                ));
            }
        }
        record.seq_ceiling = self.ceiling;
        Ok(record)
    }

    /// A snapshot record: the state and world replaced whole.
    fn snapshot(
        &mut self,
        off: usize,
        len: usize,
        s: SnapshotIn,
        record: &mut RecordSeen,
    ) -> Result<(), JournalError> {
        if Some(&s.state.run_id) != self.run_id.as_ref() {
            return Err(self.wrong_run(off, &s.state.run_id));
        }
        record.kind = RecordKind::Snapshot;
        record.status = Some(s.state.status);
        record.clock_ms = s.world.as_ref().map(|w| w.clock_ms);
        record.checkpoints = s.world.as_ref().map(|w| w.checkpoints);
        self.state = Some(s.state);
        self.world = s.world;
        self.ceiling = self.ceiling.max(s.seq_ceiling);
        self.snapshot_bytes = (FRAME_HEADER + len) as u64;
        self.since_snapshot = 0;
        Ok(())
    }

    /// A checkpoint record: its patch applied to the state, its delta to the world.
    fn checkpoint(
        &mut self,
        off: usize,
        len: usize,
        p: PatchIn,
        record: &mut RecordSeen,
    ) -> Result<(), JournalError> {
        if Some(&p.patch.run_id) != self.run_id.as_ref() {
            return Err(self.wrong_run(off, &p.patch.run_id));
        }
        let Some(s) = self.state.as_mut() else {
            return Err(self.corrupt(off, "a checkpoint record before any snapshot".into()));
        };
        s.apply(&p.patch);
        record.kind = RecordKind::Checkpoint;
        record.status = Some(s.status);
        record.clock_ms = Some(p.world.clock_ms);
        record.checkpoints = Some(p.world.checkpoints);
        record.steps = p
            .patch
            .steps
            .iter()
            .map(|(id, r)| (id.clone(), r.status, r.attempt))
            .collect();
        let path = self.path;
        let corrupt = |message: String| JournalError::Corrupt {
            path: path.to_owned(),
            offset: off as u64,
            message,
        };
        let w = self.world.get_or_insert_with(WorldSnapshot::default);
        apply_delta(w, p.world, &corrupt)?;
        self.since_snapshot += (FRAME_HEADER + len) as u64;
        Ok(())
    }

    /// The fold's result once every whole record is applied.
    fn finish(self, off: usize, torn: u64) -> Result<Folded, JournalError> {
        let Some(mut state) = self.state else {
            return Err(JournalError::Corrupt {
                path: self.path.to_owned(),
                offset: off as u64,
                message: "the journal holds no snapshot".into(),
            });
        };
        if state.run_id.is_empty() {
            state.run_id = self.run_id.unwrap_or_default();
        }
        let mut world = self.world;
        let mirror = world.as_ref().map(Mirror::of).unwrap_or_default();
        if let Some(w) = world.as_mut() {
            w.seq = w.seq.max(self.ceiling);
        }
        Ok(Folded {
            state,
            world,
            seq_ceiling: self.ceiling,
            len: off as u64,
            torn,
            snapshot_bytes: self.snapshot_bytes,
            since_snapshot: self.since_snapshot,
            mirror,
            chain: self.chain,
            source: self.source,
        })
    }
}

/// Replace the journal at `path` with `bytes` durably: written whole to a temp file in
/// `dir`, synced, renamed over it, the directory synced; the new file, open.
fn replace_durably(
    dir: &Path,
    run_id: &str,
    path: &Path,
    bytes: &[u8],
) -> Result<std::fs::File, JournalError> {
    let tmp = dir.join(format!(".{run_id}.journal.tmp"));
    // D-212: created exclusively and never through a link, so a file planted at the temp
    // path is never truncated or written.
    let mut file = create_temp(&tmp).map_err(open_err(&tmp))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(dir)?;
    Ok(file)
}

/// Read a legacy whole-file run (`w6w-sim/run-1`), refusing any other format.
fn read_legacy(path: &Path, bytes: &[u8], expected: &str) -> Result<StoredRun, JournalError> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| JournalError::Corrupt {
        path: path.to_owned(),
        offset: 0,
        message: format!("not a stored run: {e}"),
    })?;
    let format = doc.get("format").and_then(Value::as_str).unwrap_or("");
    if format != STORE_FORMAT {
        return Err(JournalError::UnknownFormat {
            path: path.to_owned(),
            offset: 0,
            found: format.to_owned(),
        });
    }
    let stored: StoredRun = serde_json::from_value(doc).map_err(|e| JournalError::Corrupt {
        path: path.to_owned(),
        offset: 0,
        message: format!("not a stored run: {e}"),
    })?;
    if stored.state.run_id != expected {
        return Err(JournalError::WrongRun {
            path: path.to_owned(),
            offset: 0,
            expected: expected.to_owned(),
            found: stored.state.run_id,
        });
    }
    Ok(stored)
}

/// Read a run file (a journal or the legacy whole-file format) for inspection, without
/// taking its lock (`w6w-sim replay --run DIR/<runId>.journal`).
pub fn read_run_file(path: &Path) -> Result<StoredRun, JournalError> {
    read_run_file_keyed(path, None)
}

/// [`read_run_file`] with the sealing key the run was written with, if any (D-251).
pub(crate) fn read_run_file_keyed(
    path: &Path,
    key: Option<&SealingKey>,
) -> Result<StoredRun, JournalError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    if bytes.starts_with(MAGIC) {
        let f = read_journal_keyed(path, &bytes, None, key)?;
        return Ok(StoredRun {
            format: JOURNAL_FORMAT.into(),
            state: f.state,
            world: f.world,
            source: f.source,
        });
    }
    if key.is_some() {
        return Err(JournalError::Unauthenticated {
            path: path.to_owned(),
            offset: 0,
        });
    }
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    read_legacy(path, &bytes, &id)
}

/// Whether `bytes` start like a journal.
pub(crate) fn is_journal(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

// ---- the store ----

/// One run this store has open (and locked).
struct OpenRun {
    path: PathBuf,
    /// Held for the lock; dropping it releases the run. `None`: the store cannot be
    /// written, and `read_only` says why (D-213).
    _lock: Option<File>,
    read_only: Option<String>,
    /// The journal, positioned at `len`; `None` until the run's first write.
    file: Option<File>,
    /// A legacy file to migrate at the first write, and remove once the journal is durable.
    legacy: Option<PathBuf>,
    /// The durable state (what `load` would return), `None` before the first write.
    state: Option<RunState>,
    mirror: Mirror,
    seq_ceiling: u64,
    len: u64,
    snapshot_bytes: u64,
    since_snapshot: u64,
    /// The authentication chain after the last durable record (`journal-3`, D-251).
    chain: Option<Chain>,
    /// D-260: the header's `source` — read from the journal, or for a run this store
    /// creates the store's; every rewrite (compaction) keeps it.
    source: Option<Value>,
}

struct Inner {
    dir: PathBuf,
    runs: BTreeMap<String, OpenRun>,
    buf: Vec<u8>,
    /// D-251: the sealing key the store authenticates its journals with, if it holds one.
    key: Option<SealingKey>,
    /// D-260: the source a run this store creates records in its header.
    source: Option<Value>,
}

/// The on-disk store: `DIR/<runId>.journal`, one append-only journal per run.
pub struct JournalStore {
    inner: Rc<RefCell<Inner>>,
}

impl std::fmt::Debug for JournalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.inner.try_borrow().map(|i| i.dir.clone()).ok();
        f.debug_struct("JournalStore").field("dir", &dir).finish()
    }
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// How many times [`Inner::lock`] tries again a lock its own process holds (2 ms apart).
const OWN_LOCK_TRIES: u32 = 100;

/// How many times [`holder`] reads again a lock file that names no pid yet (1 ms apart).
const HOLDER_TRIES: u32 = 200;

/// The pid a lock file names now: its first line when that is a number, else empty.
fn holder_now(f: &mut File) -> String {
    let mut text = String::new();
    let _ = f
        .seek(SeekFrom::Start(0))
        .and_then(|_| f.read_to_string(&mut text));
    let first = text.lines().next().unwrap_or_default().trim();
    if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
        first.to_owned()
    } else {
        String::new()
    }
}

/// The pid of the process holding the lock on `f` (empty when it names none). D-213: the
/// holder writes its pid just after it takes the lock, so a lock file that names no pid
/// yet (created a moment ago) is read again for a short while.
fn holder(f: &mut File) -> String {
    let mut tries = 0;
    loop {
        let pid = holder_now(f);
        if !pid.is_empty() || tries >= HOLDER_TRIES {
            return pid;
        }
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

impl Inner {
    fn journal_path(&self, run_id: &str) -> Result<PathBuf, JournalError> {
        if !run_id_ok(run_id) {
            return Err(JournalError::BadRunId(run_id.to_owned()));
        }
        Ok(self.dir.join(format!("{run_id}.journal")))
    }

    /// Take the run's lock: `Ok(Err(why))` when the store cannot be written (a read-only
    /// directory or filesystem), for reading a finished run without it (D-213).
    fn lock(&self, run_id: &str) -> Result<Result<File, String>, JournalError> {
        let path = self.dir.join(format!("{run_id}.lock"));
        let opened = open_no_follow(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
            &path,
        );
        let mut f = match opened {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) && !is_link_refusal(&path, &e) =>
            {
                return Ok(Err(format!("{}: {e}", path.display())));
            }
            Err(e) => return Err(open_err(&path)(e)),
        };
        // A lock this very process holds may be a closed store's, still held for a moment
        // by a child this process is spawning (between its fork and its exec the child
        // holds every descriptor): it is tried again for a short while before the run is
        // called in use. Another process's lock is reported at once.
        let mut tries = 0;
        let locked = loop {
            match f.try_lock() {
                Err(std::fs::TryLockError::WouldBlock)
                    if tries < OWN_LOCK_TRIES
                        && holder_now(&mut f) == std::process::id().to_string() =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other,
            }
        };
        match locked {
            Ok(()) => {
                // The pid is informational (the OS lock is the exclusion): no fsync. D-213:
                // written over the previous holder's in one write, then the file is cut to
                // it, so the file never reads empty while it is locked.
                let line = format!("{}\n", std::process::id());
                f.seek(SeekFrom::Start(0))
                    .and_then(|_| f.write_all(line.as_bytes()))
                    .and_then(|()| f.set_len(line.len() as u64))
                    .map_err(io_err(&path))?;
                Ok(Ok(f))
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = holder(&mut f);
                Err(JournalError::InUse {
                    run_id: run_id.to_owned(),
                    pid: if pid.is_empty() {
                        "(unknown)".into()
                    } else {
                        pid
                    },
                    lock: path,
                })
            }
            Err(std::fs::TryLockError::Error(e)) => Err(io_err(&path)(e)),
        }
    }

    /// Open (lock, read, repair a torn tail) a run, once per store.
    fn open(&mut self, run_id: &str) -> Result<&mut OpenRun, JournalError> {
        if !self.runs.contains_key(run_id) {
            let path = self.journal_path(run_id)?;
            let (lock, read_only) = match self.lock(run_id)? {
                Ok(lock) => (Some(lock), None),
                Err(why) => (None, Some(why)),
            };
            let mut run = OpenRun {
                path: path.clone(),
                _lock: lock,
                read_only,
                file: None,
                legacy: None,
                state: None,
                mirror: Mirror::default(),
                seq_ceiling: 0,
                len: 0,
                snapshot_bytes: 0,
                since_snapshot: 0,
                chain: None,
                source: self.source.clone(),
            };
            let writable = run.read_only.is_none();
            match open_no_follow(OpenOptions::new().read(true).write(writable), &path) {
                Ok(mut file) => {
                    let mut bytes = Vec::new();
                    file.read_to_end(&mut bytes).map_err(io_err(&path))?;
                    let f = read_journal_keyed(&path, &bytes, Some(run_id), self.key.as_ref())?;
                    if f.torn > 0 && writable {
                        // The record a killed writer was appending never returned: drop it
                        // so the next append follows a whole record.
                        file.set_len(f.len)
                            .and_then(|()| file.sync_data())
                            .map_err(io_err(&path))?;
                    }
                    file.seek(SeekFrom::Start(f.len)).map_err(io_err(&path))?;
                    run.file = Some(file);
                    run.state = Some(f.state);
                    run.mirror = f.mirror;
                    run.seq_ceiling = f.seq_ceiling;
                    run.len = f.len;
                    run.snapshot_bytes = f.snapshot_bytes;
                    run.since_snapshot = f.since_snapshot;
                    run.chain = f.chain;
                    run.source = f.source;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.open_legacy(run_id, &mut run)?;
                }
                Err(e) => return Err(open_err(&path)(e)),
            }
            self.runs.insert(run_id.to_owned(), run);
        }
        self.runs
            .get_mut(run_id)
            .ok_or_else(|| JournalError::BadRunId(run_id.to_owned()))
    }

    /// A run with no journal: its legacy whole-file form (`RUN_ID.json`), if there is one.
    fn open_legacy(&self, run_id: &str, run: &mut OpenRun) -> Result<(), JournalError> {
        let legacy = self.dir.join(format!("{run_id}.json"));
        match read_no_follow(&legacy) {
            Ok(_) if self.key.is_some() => {
                // D-251: the whole-file format has no tags; a store with a key reads only
                // what it can authenticate.
                Err(JournalError::Unauthenticated {
                    path: legacy,
                    offset: 0,
                })
            }
            Ok(bytes) => {
                let stored = read_legacy(&legacy, &bytes, run_id)?;
                run.mirror = stored.world.as_ref().map(Mirror::of).unwrap_or_default();
                run.state = Some(stored.state);
                run.legacy = Some(legacy);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(open_err(&legacy)(e)),
        }
    }
}

impl OpenRun {
    /// D-213: refuse any write to a run read from a store that cannot be written.
    fn writable(&self) -> Result<(), JournalError> {
        match &self.read_only {
            Some(why) => Err(JournalError::ReadOnly {
                path: self.path.clone(),
                why: why.clone(),
                message: "nothing can be written to it".into(),
            }),
            None => Ok(()),
        }
    }

    /// Append one framed record and make it durable.
    fn append(&mut self, buf: &[u8]) -> Result<(), JournalError> {
        self.writable()?;
        let Some(file) = self.file.as_mut() else {
            return Err(JournalError::Io {
                path: self.path.clone(),
                message: "the journal is not open for writing".into(),
            });
        };
        let written = file.write_all(buf).and_then(|()| file.sync_data());
        if let Err(e) = written {
            // Never leave a partial record for the next append to follow: cut it off (a
            // failed cut leaves a torn tail, which the next open drops).
            let _ = file
                .set_len(self.len)
                .and_then(|()| file.seek(SeekFrom::Start(self.len)).map(|_| ()));
            return Err(io_err(&self.path)(e));
        }
        self.len += buf.len() as u64;
        self.since_snapshot += buf.len() as u64;
        Ok(())
    }

    /// Write a fresh journal holding only a snapshot (temp + fsync + rename + dir fsync)
    /// and switch appends to it. Creates a run, migrates a legacy file, compacts.
    fn rewrite(
        &mut self,
        dir: &Path,
        run_id: &str,
        world: Option<&WorldSnapshot>,
        buf: &mut Vec<u8>,
        key: Option<&SealingKey>,
    ) -> Result<(), JournalError> {
        self.writable()?;
        let Some(state) = self.state.as_ref() else {
            return Err(JournalError::Io {
                path: self.path.clone(),
                message: "no state to snapshot".into(),
            });
        };
        let path = self.path.clone();
        let fail = |m: String| JournalError::Io {
            path: path.clone(),
            message: m,
        };
        let mut bytes = MAGIC.to_vec();
        // D-251: a fresh chain from the header on (a compacted journal is a new file).
        let mut chain = key.map(Chain::start);
        let format = match chain {
            Some(_) => JOURNAL_FORMAT_AUTH,
            None => JOURNAL_FORMAT,
        };
        let tag = frame(
            buf,
            KIND_HEADER,
            &Header {
                format: format.into(),
                run_id: run_id.to_owned(),
                source: self.source.clone(),
            },
            chain.as_ref(),
        )
        .map_err(fail)?;
        advance(&mut chain, tag);
        bytes.extend_from_slice(buf);
        let tag = frame(
            buf,
            KIND_SNAPSHOT,
            &SnapshotOut {
                state,
                world,
                seq_ceiling: self.seq_ceiling,
            },
            chain.as_ref(),
        )
        .map_err(fail)?;
        advance(&mut chain, tag);
        let snapshot_bytes = buf.len() as u64;
        bytes.extend_from_slice(buf);
        self.file = Some(replace_durably(dir, run_id, &self.path, &bytes)?);
        self.chain = chain;
        self.len = bytes.len() as u64;
        self.snapshot_bytes = snapshot_bytes;
        self.since_snapshot = 0;
        self.mirror = world.map(Mirror::of).unwrap_or_default();
        if let Some(legacy) = self.legacy.take() {
            std::fs::remove_file(&legacy).map_err(io_err(&legacy))?;
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Frame `kind` + `body` as this run's next record, append it durably and move the
    /// chain past it.
    fn append_record(
        &mut self,
        buf: &mut Vec<u8>,
        kind: u8,
        body: &impl Serialize,
    ) -> Result<(), JournalError> {
        let tag = frame(buf, kind, body, self.chain.as_ref()).map_err(|m| JournalError::Io {
            path: self.path.clone(),
            message: m,
        })?;
        self.append(buf)?;
        advance(&mut self.chain, tag);
        Ok(())
    }

    fn wants_compaction(&self) -> bool {
        self.since_snapshot > COMPACT_MIN_BYTES.max(COMPACT_FACTOR * self.snapshot_bytes)
    }
}

impl JournalStore {
    /// Open (creating if needed) a store directory that holds no sealing key.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_keyed(dir, None)
    }

    /// Open (creating if needed) a store directory; with `key`, every journal it writes is
    /// authenticated and only journals authenticated under `key` are read (D-251).
    pub fn open_keyed(dir: &Path, key: Option<SealingKey>) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError(format!("cannot create store {}: {e}", dir.display())))?;
        Ok(JournalStore {
            inner: Rc::new(RefCell::new(Inner {
                dir: dir.to_owned(),
                runs: BTreeMap::new(),
                buf: Vec::new(),
                key,
                source: None,
            })),
        })
    }

    /// D-260: record `source` (a dialect document's identity) in the header of every run
    /// this store creates; a run already on disk keeps the source its header has.
    pub fn with_source(self, source: Option<Value>) -> Self {
        if let Ok(mut inner) = self.inner.try_borrow_mut() {
            inner.source = source;
        }
        self
    }

    /// The journal a run is kept in.
    pub fn path_of(&self, run_id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.borrow()?.journal_path(run_id)?)
    }

    fn borrow(&self) -> Result<std::cell::RefMut<'_, Inner>, StoreError> {
        self.inner
            .try_borrow_mut()
            .map_err(|_| StoreError("the journal store is busy (re-entrant call)".into()))
    }

    fn write_checkpoint(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
        changed_counts: Option<&[String]>,
    ) -> Result<(), StoreError> {
        let mut guard = self.borrow()?;
        let inner = &mut *guard;
        let dir = inner.dir.clone();
        let key = inner.key.clone();
        let mut buf = std::mem::take(&mut inner.buf);
        let result = (|| {
            let run = inner.open(&patch.run_id)?;
            if run.file.is_none() || !run.mirror.follows(world) {
                // A new run (or a legacy one, or a foreign world): start with a snapshot.
                let state = run.state.get_or_insert_with(|| {
                    RunState::new(
                        &patch.run_id,
                        patch.workflow_id.as_deref().unwrap_or_default(),
                    )
                });
                state.apply(patch);
                return run.rewrite(&dir, &patch.run_id, Some(world), &mut buf, key.as_ref());
            }
            let delta = DeltaOut::of(world, run.mirror, changed_counts);
            run.append_record(
                &mut buf,
                KIND_PATCH,
                &PatchOut {
                    patch,
                    world: delta,
                },
            )?;
            run.mirror = Mirror::of(world);
            if let Some(state) = run.state.as_mut() {
                state.apply(patch);
            }
            if run.wants_compaction() {
                run.rewrite(&dir, &patch.run_id, Some(world), &mut buf, key.as_ref())?;
            }
            Ok(())
        })();
        inner.buf = buf;
        if result.is_err() {
            // Whatever is half-done is not durable: reopen from disk next time.
            inner.runs.remove(&patch.run_id);
        }
        result.map_err(StoreError::from)
    }

    /// Write a lease: trace sequence numbers below the returned ceiling are reserved.
    fn lease(&self, run_id: &str, next: u64) -> Result<u64, JournalError> {
        let mut guard = self.inner.try_borrow_mut().map_err(|_| JournalError::Io {
            path: PathBuf::from(run_id),
            message: "the journal store is busy (re-entrant lease)".into(),
        })?;
        let inner = &mut *guard;
        let mut buf = std::mem::take(&mut inner.buf);
        let result = (|| {
            let run = inner.open(run_id)?;
            if run.read_only.is_some() {
                // D-213: nothing this process does to the run is durable, so no `seq` of it
                // can be met again after a kill.
                return Ok(u64::MAX);
            }
            if run.file.is_none() {
                // No journal yet: nothing of this run survives a kill, so nothing to guard;
                // ask again at the next event.
                return Ok(next + 1);
            }
            let ceiling = next.saturating_add(SEQ_BLOCK).max(run.seq_ceiling);
            run.append_record(
                &mut buf,
                KIND_LEASE,
                &Lease {
                    seq_ceiling: ceiling,
                },
            )?;
            run.seq_ceiling = ceiling;
            Ok(ceiling)
        })();
        inner.buf = buf;
        if result.is_err() {
            inner.runs.remove(run_id);
        }
        result
    }
}

struct JournalLease {
    store: JournalStore,
    run_id: String,
}

impl SeqLease for JournalLease {
    fn extend(&mut self, next: u64) -> Result<u64, String> {
        self.store
            .lease(&self.run_id, next)
            .map_err(|e| format!("cannot reserve trace sequence numbers: {e}"))
    }
}

impl Store for JournalStore {
    fn checkpoint(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
    ) -> Result<(), StoreError> {
        self.write_checkpoint(patch, world, None)
    }

    fn checkpoint_changes(
        &mut self,
        patch: &RunStatePatch,
        world: &WorldSnapshot,
        changed_counts: &[String],
    ) -> Result<(), StoreError> {
        self.write_checkpoint(patch, world, Some(changed_counts))
    }

    fn put(&mut self, state: &RunState, world: &WorldSnapshot) -> Result<(), StoreError> {
        let mut guard = self.borrow()?;
        let inner = &mut *guard;
        let dir = inner.dir.clone();
        let key = inner.key.clone();
        let mut buf = std::mem::take(&mut inner.buf);
        let result = (|| {
            let run = inner.open(&state.run_id)?;
            run.state = Some(state.clone());
            run.rewrite(&dir, &state.run_id, Some(world), &mut buf, key.as_ref())
        })();
        inner.buf = buf;
        if result.is_err() {
            inner.runs.remove(&state.run_id);
        }
        result.map_err(StoreError::from)
    }

    /// Read the run from disk (what a crash would leave), taking its lock first.
    fn load(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let mut inner = self.borrow()?;
        let key = inner.key.clone();
        let run = inner.open(run_id)?;
        let stored = if let Some(legacy) = &run.legacy {
            let bytes = read_no_follow(legacy).map_err(open_err(legacy))?;
            let mut stored = read_legacy(legacy, &bytes, run_id)?;
            stored.format = STORE_FORMAT.into();
            stored
        } else if run.file.is_none() {
            return Ok(None);
        } else {
            let bytes = read_no_follow(&run.path).map_err(open_err(&run.path))?;
            let f = read_journal_keyed(&run.path, &bytes, Some(run_id), key.as_ref())?;
            StoredRun {
                format: JOURNAL_FORMAT.into(),
                state: f.state,
                world: f.world,
                source: f.source,
            }
        };
        if let Some(why) = &run.read_only
            && !stored.state.status.is_terminal()
        {
            // D-213: without the lock another process may be running it, and nothing of
            // a continuation could be written.
            return Err(JournalError::ReadOnly {
                path: run.path.clone(),
                why: why.clone(),
                message: format!(
                    "run {run_id} is {}: only a finished run is read from such a store",
                    stored.state.status.as_str()
                ),
            }
            .into());
        }
        Ok(Some(stored))
    }

    /// A simulated crash: close every run (releasing its lock); the next access reads
    /// the durable journal again.
    fn crash(&mut self) {
        if let Ok(mut inner) = self.inner.try_borrow_mut() {
            inner.runs.clear();
        }
    }

    fn seq_lease(&self, run_id: &str) -> Option<Box<dyn SeqLease>> {
        Some(Box::new(JournalLease {
            store: JournalStore {
                inner: Rc::clone(&self.inner),
            },
            run_id: run_id.to_owned(),
        }))
    }
}

#[cfg(test)]
mod tests;
