//! Source positions in bounded work per lookup (issue 44 item 3, D-217).
//!
//! Owns: turning a byte offset of a dialect document into its 1-based `line:column` (column
//! counted in characters), as [`super::pos_at`] does, but from an index built once in one
//! pass: line starts for a binary search, and a character count every [`SAMPLE_BYTES`] so
//! a column is counted from the nearest sample, never from the start of a long line. A
//! front-end asks for a position per step, attribute and problem; asked of the text each
//! time, a 60,000-step document cost time quadratic in its size.
//! Invariant: a lookup reads at most [`SAMPLE_BYTES`] + 3 bytes of the text.

use super::Pos;

/// Bytes between two character-count samples: a lookup counts at most this many.
pub(crate) const SAMPLE_BYTES: usize = 1024;

/// Line starts and character-count samples of one text.
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset of the start of every line (the first is 0).
    starts: Vec<usize>,
    /// Whether the text is ASCII: then a character count is a byte count.
    ascii: bool,
    /// For each multiple `k` of [`SAMPLE_BYTES`]: the char boundary at or before it, and
    /// the number of characters before that boundary. Empty for ASCII text.
    samples: Vec<(usize, usize)>,
}

impl<'t> LineIndex<'t> {
    /// Index `text` in one pass.
    pub(crate) fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        let ascii = text.is_ascii();
        let mut samples = Vec::new();
        if !ascii {
            let (mut at, mut chars) = (0, 0);
            for k in 0..=text.len() / SAMPLE_BYTES {
                let cut = floor_boundary(text, k * SAMPLE_BYTES);
                chars += text[at..cut].chars().count();
                at = cut;
                samples.push((cut, chars));
            }
        }
        LineIndex {
            text,
            starts,
            ascii,
            samples,
        }
    }

    /// The position of byte `offset` (clamped to the text, moved back to a char boundary).
    pub(crate) fn pos(&self, offset: usize) -> Pos {
        let offset = floor_boundary(self.text, offset.min(self.text.len()));
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts[line - 1];
        Pos {
            line,
            column: self.chars_before(offset) - self.chars_before(start) + 1,
        }
    }

    /// Characters before byte `offset` (a char boundary).
    fn chars_before(&self, offset: usize) -> usize {
        if self.ascii {
            return offset;
        }
        let (at, chars) = self
            .samples
            .get(offset / SAMPLE_BYTES)
            .copied()
            .unwrap_or((0, 0));
        #[cfg(test)]
        super::work::add(1 + offset - at);
        chars + self.text[at..offset].chars().count()
    }
}

/// The largest char boundary of `text` at or before `offset` (≤ `text.len()`).
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut cut = offset.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{pos_at, work};

    #[test]
    fn every_offset_has_the_position_a_scan_from_the_start_gives() {
        let mut text = String::from("ab\ncé\n\n日本語 x\r\nlast");
        text.push_str(&"é".repeat(SAMPLE_BYTES));
        text.push_str("\nz");
        for t in [text.as_str(), "plain\nascii\n", "", "\n"] {
            let index = LineIndex::new(t);
            for offset in 0..=t.len() + 2 {
                assert_eq!(index.pos(offset), pos_at(t, offset), "{t:?} at {offset}");
            }
        }
    }

    /// One lookup per line of a one-line and of a many-line document, at 1× and 10× the
    /// size: the bytes read per lookup stay under the sample size, so the total grows with
    /// the number of lookups (10×), not with lookups × size (100×).
    #[test]
    fn lookups_read_a_bounded_number_of_bytes() {
        let doc = |n: usize, sep: &str| -> String {
            (0..n).map(|i| format!("<é id=\"{i}\"/>{sep}")).collect()
        };
        for sep in ["", "\n"] {
            let lookups = |n: usize| {
                let text = doc(n, sep);
                let index = LineIndex::new(&text);
                let step = text.len() / n;
                work::of(|| {
                    for i in 0..n {
                        let _ = index.pos(i * step);
                    }
                })
                .1
            };
            let (small, big) = (lookups(1_000), lookups(10_000));
            assert!(
                big <= 20 * small.max(1),
                "{sep:?}: {small} → {big} bytes read"
            );
            assert!(big <= 2 * 10_000 * (SAMPLE_BYTES + 4) as u64);
        }
    }
}
