//! Reading a journal back: every frame checked, the records folded into the run's state,
//! a torn tail told from damage (D-210).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::records::{Chain, Header, Lease, Mirror, PatchIn, SnapshotIn, apply_delta};
use super::{
    FRAME_HEADER, JOURNAL_FORMAT, JOURNAL_FORMAT_AUTH, JournalError, KIND_HEADER, KIND_LEASE,
    KIND_PATCH, KIND_SNAPSHOT, MAGIC, RECORD_MAX, TAG_BYTES,
};
use crate::host::SealingKey;
use crate::model::RunState;
use crate::sim::world::WorldSnapshot;

/// How many bytes [`damaged_length`] may checksum per byte of the tail it scans (plus
/// [`SCAN_SLACK`]): the scan stays linear in the file whatever its bytes are.
pub(super) const SCAN_BYTES_PER_TAIL_BYTE: usize = 8;
pub(super) const SCAN_SLACK: usize = 1 << 20;

/// D-210: whether the bytes from `off` (a record whose length points past the end of the
/// file) cannot be a torn tail, and why: the bytes to the end are one whole record under
/// another length (`crc` matches), or a whole record — known kind, a JSON object, a
/// matching checksum — starts after its frame header. Neither can come from an append
/// cut short, whose bytes are a prefix of one record. `None`: a torn tail.
///
/// Only candidates whose kind byte and first JSON byte fit are checksummed, and the work
/// is bounded linearly in the tail; a tail that would need more is crafted, and is
/// refused as damage too.
pub(super) fn damaged_length(bytes: &[u8], off: usize, crc: u32) -> Option<String> {
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
    pub(super) snapshot_bytes: u64,
    pub(super) since_snapshot: u64,
    pub(super) mirror: Mirror,
    /// The authentication chain after the last whole record (`journal-3`).
    pub(super) chain: Option<Chain>,
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
pub(super) enum Auth<'a> {
    /// The store's rule: with a key only a `journal-3` file authenticated under it, without
    /// one only a `journal-2` file.
    Key(Option<&'a SealingKey>),
    /// `inspect` without a key: either format, a `journal-3` file's tags skipped unchecked
    /// (the caller says so to the user). The fold handles it in every build; only the
    /// CLI's `inspect` asks for it.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
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
#[cfg(feature = "cli")]
#[derive(Debug, Clone)]
pub(crate) struct Inspected {
    pub folded: Folded,
    pub records: Vec<RecordSeen>,
    /// The header's format tag.
    pub format: String,
    pub authentication: Authentication,
}

/// Whether an inspected journal's records were authenticated (D-270).
#[cfg(feature = "cli")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authentication {
    /// `journal-2`: written without a key; nothing to verify.
    None,
    /// `journal-3`, every tag checked under the key given.
    Verified,
    /// `journal-3` read without a key: the tags were not checked.
    Unverified,
}

#[cfg(feature = "cli")]
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
#[cfg(feature = "cli")]
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
pub(super) fn fold_journal(
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
pub(super) enum Frame {
    Whole(usize),
    Torn,
}

/// What [`fold_journal`] has learned so far, record by record.
pub(super) struct Fold<'p, 'k> {
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
