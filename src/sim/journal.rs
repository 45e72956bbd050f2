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
//!
//! Files: `records.rs` (each record's JSON form, the frame, the authentication chain, the
//! mirror a checkpoint updates), `read.rs` (a journal read back: frames checked and
//! folded, a torn tail told from damage); this file holds the store — the lock, appends,
//! compaction and the legacy format.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Serialize;
use serde_json::Value;

use super::scenario::run_id_ok;
use super::store::{
    STORE_FORMAT, Store, StoreError, StoredRun, create_temp, is_link_refusal, open_no_follow,
};
use super::world::{SeqLease, WorldSnapshot};
use crate::host::SealingKey;
use crate::model::{RunState, RunStatePatch};

mod read;
mod records;

pub use read::read_journal;
pub(crate) use read::read_journal_keyed;
#[cfg(feature = "cli")] // `w6w-sim inspect`
pub(crate) use read::{Authentication, Inspected, RecordKind, RecordSeen, inspect_journal};
use records::{Chain, DeltaOut, Header, Lease, Mirror, PatchOut, SnapshotOut, advance, frame};

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
#[cfg(feature = "cli")]
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
