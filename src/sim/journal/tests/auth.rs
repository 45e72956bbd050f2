//! D-251: a journal written with a sealing key is authenticated — an edited, dropped,
//! duplicated or moved record is refused with the file and its offset, another key or no
//! key is refused at the header, and a torn tail is still dropped (D-61, D-202, D-210).

use super::*;

fn key() -> SealingKey {
    SealingKey::from_bytes(*b"journal-test-key-0123456789abcde")
}

fn keyed_load(
    dir: &Path,
    run: &str,
    key: Option<SealingKey>,
) -> Result<Option<StoredRun>, StoreError> {
    JournalStore::open_keyed(dir, key).expect("open").load(run)
}

/// The offset and whole length (frame header included) of every record after the magic.
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut off = MAGIC.len();
    while off + FRAME_HEADER <= bytes.len() {
        let len = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]])
            as usize;
        out.push((off, FRAME_HEADER + len));
        off += FRAME_HEADER + len;
    }
    out
}

/// Recompute the (unkeyed) CRC of the record at `off`, as an editor that knows the format
/// would.
fn fix_crc(bytes: &mut [u8], off: usize) {
    let len =
        u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]]) as usize;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[off..off + 4]);
    h.update(&bytes[off + FRAME_HEADER..off + FRAME_HEADER + len]);
    let crc = h.finalize().to_le_bytes();
    bytes[off + 4..off + 8].copy_from_slice(&crc);
}

/// A keyed store with run `r1` of `n` checkpoints: its directory, journal path, bytes and
/// state.
fn written(n: usize) -> (tempfile::TempDir, PathBuf, Vec<u8>, RunState) {
    let d = dir();
    let mut store = JournalStore::open_keyed(d.path(), Some(key())).expect("open");
    let (state, _) = drive(&mut store, "r1", n, 5);
    let path = store.path_of("r1").expect("path");
    drop(store);
    let bytes = std::fs::read(&path).expect("read");
    (d, path, bytes, state)
}

fn refusal(path: &Path, bytes: &[u8]) -> JournalError {
    match read_journal_keyed(path, bytes, Some("r1"), Some(&key())) {
        Ok(_) => panic!("a changed journal was read"),
        Err(e) => e,
    }
}

#[test]
fn a_keyed_store_writes_an_authenticated_journal_and_reads_it_back() {
    let (d, path, bytes, state) = written(12);
    let header = String::from_utf8_lossy(&bytes[..200]).into_owned();
    assert!(header.contains(JOURNAL_FORMAT_AUTH), "{header}");
    let loaded = keyed_load(d.path(), "r1", Some(key()))
        .expect("load")
        .expect("run");
    assert_eq!(loaded.state, state);
    let f = read_journal_keyed(&path, &bytes, Some("r1"), Some(&key())).expect("read");
    assert!(f.authenticated());
    // A run read back and written on continues the chain.
    let mut store = JournalStore::open_keyed(d.path(), Some(key())).expect("open");
    let mut world = store
        .load("r1")
        .expect("load")
        .and_then(|s| s.world)
        .expect("world");
    let changed = advance(&mut world, 12);
    store
        .checkpoint_changes(&patch("r1", 12, 5), &world, &changed)
        .expect("append");
    drop(store);
    assert!(keyed_load(d.path(), "r1", Some(key())).is_ok());
}

#[test]
fn another_key_no_key_or_an_unauthenticated_file_is_refused_at_the_header() {
    let (d, path, bytes, _) = written(3);
    let header = MAGIC.len() as u64;
    let other = SealingKey::from_bytes([9; 32]);
    let e = read_journal_keyed(&path, &bytes, Some("r1"), Some(&other)).expect_err("other key");
    assert_eq!(e.code(), "sealing_key_wrong");
    assert!(
        e.to_string()
            .contains(&format!("{}: offset {header}", path.display())),
        "{e}"
    );
    let e = read_journal_keyed(&path, &bytes, Some("r1"), None).expect_err("no key");
    assert_eq!(e.code(), "sealing_key_required");
    let err = keyed_load(d.path(), "r1", None).expect_err("no key").0;
    assert!(err.contains("[sealing_key_required]"), "{err}");

    // A journal written without a key (or one put in the authenticated one's place).
    let plain = dir();
    let mut store = JournalStore::open(plain.path()).expect("open");
    drive(&mut store, "r1", 3, 5);
    drop(store);
    let err = keyed_load(plain.path(), "r1", Some(key()))
        .expect_err("unauthenticated")
        .0;
    assert!(err.contains("[run_file_unauthenticated]"), "{err}");
    assert!(
        keyed_load(plain.path(), "r1", None).is_ok(),
        "read without a key"
    );
    // …and a legacy whole-file run.
    let legacy = dir();
    let mut old = DiskStore::open(legacy.path()).expect("open");
    old.checkpoint(&patch("r1", 0, 1), &WorldSnapshot::default())
        .expect("legacy");
    let err = keyed_load(legacy.path(), "r1", Some(key()))
        .expect_err("legacy")
        .0;
    assert!(err.contains("[run_file_unauthenticated]"), "{err}");
}

#[test]
fn an_edited_dropped_duplicated_or_moved_record_is_refused_with_its_offset() {
    let (d, path, bytes, _) = written(8);
    let recs = records(&bytes);
    assert!(recs.len() >= 8, "{recs:?}");
    let (at, len) = recs[4];
    let (next, next_len) = recs[5];

    // Edited: one digit of the JSON changed and the CRC made to match.
    let mut edited = bytes.clone();
    let digit = (at + FRAME_HEADER + 1..at + len - TAG_BYTES)
        .find(|&i| edited[i].is_ascii_digit())
        .expect("a digit");
    edited[digit] = if edited[digit] == b'9' {
        b'8'
    } else {
        edited[digit] + 1
    };
    fix_crc(&mut edited, at);
    // Dropped from the middle.
    let mut dropped = bytes[..at].to_vec();
    dropped.extend_from_slice(&bytes[next..]);
    // Duplicated.
    let mut duplicated = bytes[..next].to_vec();
    duplicated.extend_from_slice(&bytes[at..at + len]);
    duplicated.extend_from_slice(&bytes[next..]);
    // Moved: two records swapped.
    let mut moved = bytes[..at].to_vec();
    moved.extend_from_slice(&bytes[next..next + next_len]);
    moved.extend_from_slice(&bytes[at..at + len]);
    moved.extend_from_slice(&bytes[next + next_len..]);
    // An edit that leaves the CRC as it was is damage, caught by the checksum first.
    let mut flipped = bytes.clone();
    flipped[digit] ^= 1;

    for (what, changed, offset, code) in [
        ("edited", &edited, at, "run_file_tampered"),
        ("dropped", &dropped, at, "run_file_tampered"),
        ("duplicated", &duplicated, next, "run_file_tampered"),
        ("moved", &moved, at, "run_file_tampered"),
        ("flipped", &flipped, at, "run_file_corrupt"),
    ] {
        let e = refusal(&path, changed);
        assert_eq!(e.code(), code, "{what}: {e}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("{}: offset {offset}:", path.display())),
            "{what}: {text}"
        );
        // Through the store: refused, and the file left exactly as it was.
        std::fs::write(&path, changed).expect("write");
        let err = keyed_load(d.path(), "r1", Some(key())).expect_err(what).0;
        assert!(err.contains(&format!("[{code}]")), "{what}: {err}");
        assert_eq!(
            &std::fs::read(&path).expect("read"),
            changed,
            "{what}: file changed"
        );
    }
    // The header's tag is the key check: a header edited to another run id is refused.
    let mut renamed = bytes.clone();
    let (h, hlen) = recs[0];
    let pos = (h..h + hlen)
        .find(|&i| renamed[i..].starts_with(b"\"r1\""))
        .expect("run id");
    renamed[pos + 2] = b'9';
    fix_crc(&mut renamed, h);
    let e = read_journal_keyed(&path, &renamed, None, Some(&key())).expect_err("renamed");
    assert_eq!(e.code(), "sealing_key_wrong", "{e}");
}

#[test]
fn a_torn_tail_is_still_dropped_and_a_damaged_length_still_refused() {
    let (d, path, bytes, state) = written(6);
    let recs = records(&bytes);
    let (last, last_len) = recs[recs.len() - 1];
    // A torn append: the last record cut short, and a zero-filled tail (D-202).
    for torn in [
        bytes[..last + last_len / 2].to_vec(),
        [&bytes[..], &vec![0u8; 300][..]].concat(),
    ] {
        let f = read_journal_keyed(&path, &torn, Some("r1"), Some(&key())).expect("torn");
        assert!(f.torn > 0);
        assert!(f.authenticated());
    }
    // The store cuts the torn record off and appends after the last whole one.
    std::fs::write(&path, &bytes[..last + last_len / 2]).expect("write");
    let loaded = keyed_load(d.path(), "r1", Some(key()))
        .expect("load")
        .expect("run");
    assert_ne!(loaded.state, state, "the torn record is not folded");
    // D-210: a middle record's length pointing past the end, with whole records after it.
    let (mid, _) = recs[2];
    let mut damaged = bytes.clone();
    damaged[mid + 3] ^= 0x40;
    let e = refusal(&path, &damaged);
    assert_eq!(e.code(), "run_file_corrupt", "{e}");
    assert!(e.to_string().contains(&format!("offset {mid}")), "{e}");
}
