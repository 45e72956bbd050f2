//! The run-journal reader (issue 13 item 1): any bytes fold to a run or give a clear
//! error, never a panic; and a folded run's state writes back and reads back unchanged.
//!
//! An input whose first byte is 0 is a list of records (`kind` byte + JSON, separated by
//! 0xFF, a byte JSON text never holds) that the target frames itself, with the length
//! and CRC-32 the format asks for, so mutations reach the record parsing and the fold
//! instead of stopping at the checksum. Any other input is read as it is.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use w6w_sim::__internals::sim::{MAGIC, read_journal};
use w6w_sim::model::RunState;

/// `MAGIC` then each non-empty record framed as `len: u32 LE | crc: u32 LE | body`, the
/// CRC over the length bytes and the body (the format in `src/sim/journal.rs`).
fn framed(records: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for body in records.split(|&b| b == 0xFF).filter(|b| !b.is_empty()) {
        let len = (body.len() as u32).to_le_bytes();
        let mut h = crc32fast::Hasher::new();
        h.update(&len);
        h.update(body);
        out.extend_from_slice(&len);
        out.extend_from_slice(&h.finalize().to_le_bytes());
        out.extend_from_slice(body);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let bytes = match data.split_first() {
        Some((0, records)) => framed(records),
        _ => data.to_vec(),
    };
    match read_journal(Path::new("fuzz.journal"), &bytes, None) {
        Ok(f) => {
            assert_eq!(
                f.len + f.torn,
                bytes.len() as u64,
                "whole records and the torn tail cover the file"
            );
            // D-188 / D-189: whatever a journal folds to is written as JSON that reads
            // back to a state writing the very same bytes — a resume never loses a key.
            let once = serde_json::to_vec(&f.state).expect("a folded state serializes");
            let again: RunState =
                serde_json::from_slice(&once).expect("a written state reads back");
            let twice = serde_json::to_vec(&again).expect("a read state serializes");
            assert!(
                once == twice,
                "a state reads and writes back the same bytes"
            );
        }
        Err(e) => assert!(!e.to_string().is_empty(), "a refusal says why"),
    }
});
