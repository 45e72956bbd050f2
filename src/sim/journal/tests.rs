//! Unit tests of the journal: round trip, torn tails, damage, foreign runs, formats,
//! legacy files, locking, compaction and sequence leases; `auth` the authenticated
//! journal (D-251).

use serde_json::json;

use super::*;
use crate::model::{RunStatus, StepExecution, StepStatus};
use crate::sim::{DiskStore, MemoryStore};

fn patch(run: &str, i: usize, big: usize) -> RunStatePatch {
    let mut p = RunStatePatch {
        run_id: run.into(),
        ..Default::default()
    };
    if i == 0 {
        p.workflow_id = Some("wf".into());
        p.status = Some(RunStatus::Running);
    }
    let mut exec = StepExecution::new(&format!("s{i}"), StepStatus::Succeeded, 1);
    exec.output = Some(json!({"i": i, "pad": "x".repeat(big)}).into());
    p.steps
        .insert(format!("s{i}"), std::sync::Arc::new(exec.clone()));
    // Running sub-block frames (D-188): set, replaced, removed or kept to the end (so a
    // compaction snapshot holds some); they come back typed.
    let frame = |k: usize| format!("frame:/l.iterations[{k}]");
    match i % 8 {
        1 | 5 | 6 => {
            let mut exec = StepExecution::new(&format!("b{i}"), StepStatus::Succeeded, 1);
            exec.output = Some(json!({"i": i}).into());
            let records = [(exec.step_id.clone(), std::sync::Arc::new(exec))];
            let k = if i % 8 == 6 { i - 1 } else { i };
            p.frames.insert(
                frame(k),
                Some(std::sync::Arc::new(records.into_iter().collect())),
            );
        }
        3 => {
            p.frames.insert(frame(i - 2), None);
        }
        _ => {}
    }
    p
}

/// A world that moves on by one invocation per step, as the simulator's would.
fn advance(world: &mut WorldSnapshot, i: usize) -> Vec<String> {
    world.clock_ms += 10;
    world.checkpoints += 1;
    world.seq += 3;
    world.total_invocations += 1;
    let key = format!("s{}", i % 3);
    *world.invocation_counts.entry(key.clone()).or_insert(0) += 1;
    world.invocations.push(crate::sim::world::Invocation {
        step_id: format!("s{i}").into(),
        app: "echo".into(),
        action: "echo".into(),
        connection: None,
        attempt: 1,
        params: crate::sim::world::JsonText::new(&json!({"i": i})),
        at_ms: world.clock_ms,
        run_id: None,
        script: None,
    });
    if i.is_multiple_of(4) {
        world.waits.push(json!({"ms": i}));
    }
    if i == 5 {
        world.fired_invoke_faults.insert(0);
    }
    vec![key]
}

/// Drive `n` checkpoints into a journal store and a memory store side by side.
fn drive(store: &mut JournalStore, run: &str, n: usize, big: usize) -> (RunState, WorldSnapshot) {
    let mut mem = MemoryStore::default();
    let mut world = WorldSnapshot::default();
    for i in 0..n {
        let changed = advance(&mut world, i);
        let p = patch(run, i, big);
        store
            .checkpoint_changes(&p, &world, &changed)
            .expect("checkpoint");
        mem.checkpoint(&p, &world).expect("memory");
    }
    let state = mem.load(run).expect("load").expect("run").state;
    (state, world)
}

mod auth;

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn fresh_load(dir: &Path, run: &str) -> Result<Option<StoredRun>, StoreError> {
    JournalStore::open(dir).expect("open").load(run)
}

#[test]
fn checkpoints_fold_to_the_memory_stores_state_and_the_world_round_trips() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    let (state, world) = drive(&mut store, "r1", 40, 10);
    // The same process reads back what is durable.
    let loaded = store.load("r1").expect("load").expect("run");
    assert_eq!(loaded.state, state);
    assert!(
        !state.frames.is_empty(),
        "frames are read back typed, not as extra JSON"
    );
    assert_eq!(loaded.format, JOURNAL_FORMAT);
    drop(store);
    let again = fresh_load(d.path(), "r1").expect("load").expect("run");
    assert_eq!(again.state, state);
    let mut w = again.world.expect("world");
    assert!(w.seq >= world.seq, "the seq never goes back");
    w.seq = world.seq;
    assert_eq!(w, world, "every world field survives, deltas included");
}

#[test]
fn a_checkpoint_appends_one_record_of_its_patch_size_not_the_run_size() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 200, 10);
    let path = store.path_of("r1").expect("path");
    let before = std::fs::metadata(&path).expect("meta").len();
    let mut world = store
        .load("r1")
        .expect("load")
        .and_then(|s| s.world)
        .expect("world");
    let changed = advance(&mut world, 200);
    let p = patch("r1", 200, 10);
    store.checkpoint_changes(&p, &world, &changed).expect("cp");
    let grew = std::fs::metadata(&path).expect("meta").len() - before;
    let patch_len = serde_json::to_vec(&p).expect("json").len() as u64;
    assert!(
        grew < patch_len + 400,
        "one checkpoint grew the file by {grew} bytes for a {patch_len}-byte patch"
    );
}

#[test]
fn a_torn_tail_is_dropped_at_every_cut_and_the_next_append_follows_a_whole_record() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    let (_, _) = drive(&mut store, "r1", 3, 5);
    let path = store.path_of("r1").expect("path");
    let whole3 = std::fs::read(&path).expect("read");
    let state3 = store.load("r1").expect("load").expect("run").state;
    let mut world = store
        .load("r1")
        .expect("load")
        .and_then(|s| s.world)
        .expect("w");
    let changed = advance(&mut world, 3);
    store
        .checkpoint_changes(&patch("r1", 3, 5), &world, &changed)
        .expect("cp");
    drop(store);
    let whole4 = std::fs::read(&path).expect("read");
    let last = whole4.len() - whole3.len();
    for cut in 1..last {
        std::fs::write(&path, &whole4[..whole4.len() - cut]).expect("write");
        let stored = fresh_load(d.path(), "r1")
            .unwrap_or_else(|e| panic!("cut {cut}: {e}"))
            .expect("run");
        assert_eq!(
            stored.state, state3,
            "cut {cut}: the last whole record wins"
        );
    }
    // Reopen on a torn file, append, and the journal is whole again.
    std::fs::write(&path, &whole4[..whole4.len() - 3]).expect("write");
    let mut store = JournalStore::open(d.path()).expect("open");
    let mut world = store
        .load("r1")
        .expect("load")
        .and_then(|s| s.world)
        .expect("w");
    let changed = advance(&mut world, 9);
    store
        .checkpoint_changes(&patch("r1", 9, 5), &world, &changed)
        .expect("cp");
    drop(store);
    let stored = fresh_load(d.path(), "r1").expect("load").expect("run");
    assert!(stored.state.steps.contains_key("s9"));
    assert!(
        !stored.state.steps.contains_key("s3"),
        "the torn record stays lost"
    );
    let bytes = std::fs::read(&path).expect("read");
    let f = read_journal(&path, &bytes, Some("r1")).expect("whole");
    assert_eq!(f.torn, 0);
}

#[test]
fn a_zero_filled_tail_is_a_torn_record_and_a_damaged_one_is_refused() {
    // D-202: after a crash a filesystem may have extended the file without writing the
    // appended bytes, which then read as zeros.
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 3, 5);
    let path = store.path_of("r1").expect("path");
    let state = store.load("r1").expect("load").expect("run").state;
    drop(store);
    let whole = std::fs::read(&path).expect("read");
    for zeros in [1, 7, 8, 9, 4096, 70_000] {
        let mut bytes = whole.clone();
        bytes.resize(whole.len() + zeros, 0);
        std::fs::write(&path, &bytes).expect("write");
        let f = read_journal(&path, &bytes, Some("r1"))
            .unwrap_or_else(|e| panic!("{zeros} zeros: {e}"));
        assert_eq!((f.len, f.torn), (whole.len() as u64, zeros as u64));
        let stored = fresh_load(d.path(), "r1")
            .unwrap_or_else(|e| panic!("{zeros} zeros: {}", e.0))
            .expect("run");
        assert_eq!(stored.state, state, "{zeros} zeros");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            whole,
            "{zeros} zeros: opening cut the tail off"
        );
    }
    // One byte that is not zero makes it damage, not a torn tail: refused, with offset.
    for at in [0usize, 5, 12, 999] {
        let mut bytes = whole.clone();
        bytes.resize(whole.len() + 1000, 0);
        bytes[whole.len() + at] = 1;
        std::fs::write(&path, &bytes).expect("write");
        let err = fresh_load(d.path(), "r1").expect_err("refused").0;
        assert!(err.contains("run_file_corrupt"), "{at}: {err}");
        assert!(
            err.contains(&format!("offset {}", whole.len())),
            "{at}: {err}"
        );
    }
}

#[test]
fn a_whole_last_record_failing_its_checksum_is_refused_with_how_to_drop_it() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 3, 5);
    let path = store.path_of("r1").expect("path");
    drop(store);
    let mut bytes = std::fs::read(&path).expect("read");
    let last = *record_offsets(&bytes).last().expect("records");
    let end = bytes.len() - 2;
    bytes[end] ^= 0x20;
    std::fs::write(&path, &bytes).expect("write");
    let err = fresh_load(d.path(), "r1").expect_err("refused").0;
    assert!(
        err.contains(") in the last record; if the process was killed"),
        "{err}"
    );
    assert!(
        err.contains(&format!("truncating the file to {last} bytes")),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "nothing repaired"
    );
    // Following the advice reads the run as of the record before.
    bytes.truncate(last);
    std::fs::write(&path, &bytes).expect("write");
    assert!(fresh_load(d.path(), "r1").expect("load").is_some());
}

fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offs = Vec::new();
    let mut off = MAGIC.len();
    while off + FRAME_HEADER <= bytes.len() {
        offs.push(off);
        let len = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]])
            as usize;
        off += FRAME_HEADER + len;
    }
    offs
}

#[test]
fn a_record_failing_its_checksum_is_refused_with_file_and_offset() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 5, 5);
    let path = store.path_of("r1").expect("path");
    drop(store);
    let mut bytes = std::fs::read(&path).expect("read");
    let offs = record_offsets(&bytes);
    let victim = offs[3];
    // A valid-JSON edit: a digit inside the record's JSON changes.
    let pos = victim
        + FRAME_HEADER
        + bytes[victim + FRAME_HEADER..]
            .iter()
            .position(u8::is_ascii_digit)
            .expect("a digit");
    bytes[pos] = if bytes[pos] == b'7' { b'8' } else { b'7' };
    std::fs::write(&path, &bytes).expect("write");
    let err = fresh_load(d.path(), "r1").expect_err("refused").0;
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(err.contains(&format!("offset {victim}")), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("run_file_corrupt"), "{err}");
}

/// D-210: one flipped bit in a record's length field that points past the end of the file
/// is damage when whole records follow (a torn append leaves none), or when the bytes to
/// the end are the whole record: refused with the offset, the file never cut.
#[test]
fn a_length_pointing_past_the_end_with_whole_records_after_it_is_damage_not_a_torn_tail() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 8, 5);
    let path = store.path_of("r1").expect("path");
    drop(store);
    let whole = std::fs::read(&path).expect("read");
    let offs = record_offsets(&whole);
    let last = *offs.last().expect("records");
    let mut refused = 0;
    for victim in [offs[2], offs[offs.len() / 2], last] {
        for bit in 0..30 {
            let mut bytes = whole.clone();
            let len = u32::from_le_bytes([
                bytes[victim],
                bytes[victim + 1],
                bytes[victim + 2],
                bytes[victim + 3],
            ]) ^ (1 << bit);
            if (len as usize) <= bytes.len() - victim - FRAME_HEADER {
                continue; // a length inside the file fails its checksum (tested above)
            }
            bytes[victim..victim + 4].copy_from_slice(&len.to_le_bytes());
            std::fs::write(&path, &bytes).expect("write");
            let err = fresh_load(d.path(), "r1").expect_err("refused").0;
            assert!(err.contains("run_file_corrupt"), "{victim}/{bit}: {err}");
            assert!(
                err.contains(&format!("offset {victim}")),
                "{victim}/{bit}: {err}"
            );
            assert!(err.contains("not a torn tail"), "{victim}/{bit}: {err}");
            assert_eq!(
                std::fs::read(&path).expect("read"),
                bytes,
                "{victim}/{bit}: opening changed the damaged file"
            );
            refused += 1;
        }
    }
    assert!(
        refused >= 3 * 10,
        "only {refused} flips pointed past the end"
    );
    // A real torn tail of the same file is still dropped (D-61, D-202).
    std::fs::write(&path, &whole[..whole.len() - 3]).expect("write");
    assert!(fresh_load(d.path(), "r1").expect("torn tail").is_some());
}

/// D-210: the scan that tells damage from a torn tail costs work linear in the tail, even
/// for a tail crafted to hold record-like frames at every offset.
#[test]
fn a_tail_of_record_like_frames_is_scanned_in_linear_work_and_refused() {
    let path = Path::new("crafted.journal");
    let mut bytes = MAGIC.to_vec();
    // A header record, then a length past the end, then 10-byte frames claiming a long
    // body at every offset (their checksums are wrong).
    let mut buf = Vec::new();
    frame(
        &mut buf,
        KIND_HEADER,
        &Header {
            format: JOURNAL_FORMAT.into(),
            run_id: "r1".into(),
            source: None,
        },
        None,
    )
    .expect("frame");
    bytes.extend_from_slice(&buf);
    let bad = bytes.len();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes()[..3]);
    bytes.extend_from_slice(&[0x3f, 0, 0, 0, 0]);
    let tail = 200_000;
    let claim = u32::try_from(tail / 2).expect("small").to_le_bytes();
    while bytes.len() < bad + tail {
        bytes.extend_from_slice(&claim);
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(b"P{");
    }
    let err = read_journal(path, &bytes, Some("r1")).expect_err("refused");
    let text = err.to_string();
    assert!(text.contains(&format!("offset {bad}")), "{text}");
    assert!(
        text.contains("more record-like frames than a torn tail"),
        "{text}"
    );
}

#[test]
fn a_journal_of_another_run_is_refused() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    drive(&mut store, "r1", 2, 5);
    let path = store.path_of("r1").expect("path");
    drop(store);
    std::fs::copy(&path, d.path().join("r2.journal")).expect("copy");
    let err = fresh_load(d.path(), "r2").expect_err("refused").0;
    assert!(err.contains("belongs to run \"r1\", not \"r2\""), "{err}");
    assert!(err.contains(&format!("offset {}", MAGIC.len())), "{err}");
}

#[test]
fn an_unknown_format_or_a_foreign_file_is_refused_saying_so() {
    let d = dir();
    let path = d.path().join("r1.journal");
    let mut buf = Vec::new();
    frame(
        &mut buf,
        KIND_HEADER,
        &Header {
            format: "w6w-sim/journal-9".into(),
            run_id: "r1".into(),
            source: None,
        },
        None,
    )
    .expect("frame");
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&buf);
    std::fs::write(&path, &bytes).expect("write");
    let err = fresh_load(d.path(), "r1").expect_err("refused").0;
    assert!(
        err.contains("unknown run-file format \"w6w-sim/journal-9\""),
        "{err}"
    );
    assert!(err.contains(JOURNAL_FORMAT), "{err}");

    std::fs::write(&path, b"{\"not\": \"a journal\"}").expect("write");
    let err = fresh_load(d.path(), "r1").expect_err("refused").0;
    assert!(err.contains("offset 0: not a w6w-sim run journal"), "{err}");

    // An unknown record kind from a newer writer.
    let mut store = JournalStore::open(d.path()).expect("open");
    std::fs::remove_file(&path).expect("rm");
    drive(&mut store, "r1", 1, 1);
    drop(store);
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes.len();
    frame(&mut buf, b'Z', &json!({}), None).expect("frame");
    bytes.extend_from_slice(&buf);
    std::fs::write(&path, &bytes).expect("write");
    let err = fresh_load(d.path(), "r1").expect_err("refused").0;
    assert!(
        err.contains(&format!("offset {at}: unknown record kind 'Z'")),
        "{err}"
    );
}

#[test]
fn a_legacy_run_file_is_read_and_migrated_and_an_unknown_one_refused() {
    let d = dir();
    let mut legacy = DiskStore::open(d.path()).expect("open");
    let mut world = WorldSnapshot::default();
    advance(&mut world, 0);
    legacy.checkpoint(&patch("old", 0, 3), &world).expect("cp");
    let legacy_state = legacy.load("old").expect("load").expect("run").state;

    let mut store = JournalStore::open(d.path()).expect("open");
    let read = store.load("old").expect("read").expect("run");
    assert_eq!(read.format, STORE_FORMAT);
    assert_eq!(read.state, legacy_state);
    let changed = advance(&mut world, 1);
    store
        .checkpoint_changes(&patch("old", 1, 3), &world, &changed)
        .expect("migrating checkpoint");
    assert!(!d.path().join("old.json").exists(), "migrated away");
    drop(store);
    let now = fresh_load(d.path(), "old").expect("load").expect("run");
    assert_eq!(now.format, JOURNAL_FORMAT);
    assert_eq!(now.state.steps.len(), 2);

    std::fs::write(
        d.path().join("odd.json"),
        br#"{"format": "w6w-sim/run-7", "state": {}}"#,
    )
    .expect("write");
    let err = fresh_load(d.path(), "odd").expect_err("refused").0;
    assert!(
        err.contains("unknown run-file format \"w6w-sim/run-7\""),
        "{err}"
    );
}

#[test]
fn a_second_opener_is_told_the_run_is_in_use_by_this_process() {
    let d = dir();
    let mut first = JournalStore::open(d.path()).expect("open");
    drive(&mut first, "r1", 1, 1);
    let second = JournalStore::open(d.path()).expect("open");
    let err = second.load("r1").expect_err("locked").0;
    assert!(
        err.contains(&format!(
            "run r1 is in use by process {}",
            std::process::id()
        )),
        "{err}"
    );
    // A simulated crash releases it.
    first.crash();
    assert!(second.load("r1").expect("free").is_some());
}

/// D-213: a losing opener used to say "in use by process (unknown)" when it read the lock
/// file between the holder creating (or emptying) it and writing its pid. The file no
/// longer reads empty once it names a pid, and one that names none yet is read again.
#[test]
fn a_losing_opener_reads_the_pid_its_holder_writes_just_after_locking() {
    let d = dir();
    let lock_path = d.path().join("r1.lock");
    let held = File::create(&lock_path).expect("create");
    held.try_lock().expect("the holder has the lock");
    let writer = {
        let path = lock_path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            std::fs::write(path, "1\n").expect("the holder writes its pid");
        })
    };
    let err = fresh_load(d.path(), "r1").expect_err("locked").0;
    writer.join().expect("writer");
    assert!(err.contains("run r1 is in use by process 1 "), "{err}");
    drop(held);
    // Taking the lock writes the pid over a longer, older one: no empty moment, no tail.
    std::fs::write(&lock_path, "4294967295\nleft over\n").expect("write");
    let store = JournalStore::open(d.path()).expect("open");
    assert!(store.load("r1").expect("free").is_none());
    assert_eq!(
        std::fs::read_to_string(&lock_path).expect("lock"),
        format!("{}\n", std::process::id())
    );
}

#[test]
fn compaction_rewrites_a_snapshot_and_keeps_the_state() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    // 80 KiB per checkpoint: the 4 MiB floor is crossed within 60 checkpoints.
    let (state, _) = drive(&mut store, "r1", 70, 80 * 1024);
    let path = store.path_of("r1").expect("path");
    let bytes = std::fs::read(&path).expect("read");
    let f = read_journal(&path, &bytes, Some("r1")).expect("read");
    assert!(
        f.snapshot_bytes > 50 * 80 * 1024,
        "a snapshot of the run so far replaced the first records"
    );
    assert!(
        record_offsets(&bytes).len() < 30,
        "the records before the snapshot are gone"
    );
    drop(store);
    assert_eq!(
        fresh_load(d.path(), "r1")
            .expect("load")
            .expect("run")
            .state,
        state
    );
}

#[test]
fn a_lease_raises_the_durable_seq_ceiling_a_resumed_process_starts_from() {
    let d = dir();
    let mut store = JournalStore::open(d.path()).expect("open");
    let (_, world) = drive(&mut store, "r1", 2, 1);
    let mut lease = store.seq_lease("r1").expect("a disk store leases");
    let ceiling = lease.extend(world.seq + 1).expect("lease");
    assert_eq!(ceiling, world.seq + 1 + SEQ_BLOCK);
    drop(lease);
    drop(store);
    let w = fresh_load(d.path(), "r1")
        .expect("load")
        .and_then(|s| s.world)
        .expect("world");
    assert_eq!(w.seq, ceiling);
}

#[test]
fn a_lease_before_the_run_exists_asks_again_at_the_next_event() {
    let d = dir();
    let store = JournalStore::open(d.path()).expect("open");
    let mut lease = store.seq_lease("r1").expect("lease");
    assert_eq!(lease.extend(4).expect("no run yet"), 5);
    assert!(!d.path().join("r1.journal").exists());
}
