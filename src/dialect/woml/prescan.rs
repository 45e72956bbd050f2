//! A linear pre-scan of a WOML document's markup, before roxmltree sees it (issue 44 item
//! 3, D-219).
//!
//! roxmltree checks each attribute of an element against every earlier one (quadratic in
//! the attributes of one element), each namespace declaration against every earlier one of
//! its element, and copies every namespace in scope into each element that declares one
//! (cubic in the depth of nested declarations): a 133 KB document of nested `xmlns` cost
//! 80 s. So the pre-scan reads the start tags once and refuses, at the element's
//! `line:column`, a document with more than [`WOML_ATTRIBUTES_MAX`] attributes on one
//! element or more than [`WOML_NAMESPACES_MAX`] namespace declarations in all; under both,
//! roxmltree's work per element is bounded by a constant.
//! Invariant: one pass, each byte read at most twice. On markup it does not understand it
//! stops and leaves the verdict to roxmltree, which refuses it at or before that point (the
//! start-tag grammar is XML's own), so nothing after it is ever built.

use crate::dialect::{Pos, Problem};
use crate::limits::{WOML_ATTRIBUTES_MAX, WOML_NAMESPACES_MAX};

/// XML's white space (`S`).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Refuse `text` if its markup exceeds the attribute or namespace limits; `pos` turns a
/// byte offset into a position.
// long: one byte scanner over the markup (skip comments/CDATA/PIs, then count a tag's
// attributes and namespaces); its cursor and counters are shared by every branch.
pub(super) fn check(text: &str, pos: impl Fn(usize) -> Pos) -> Result<(), Problem> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut namespaces = 0usize;
    while let Some(lt) = memchr::memchr(b'<', &b[i..]).map(|o| i + o) {
        let rest = &b[lt..];
        #[cfg(test)]
        crate::dialect::work::add(lt + 1 - i);
        // Comments, CDATA and processing instructions hold no markup: skip to their end.
        let skip = |open: &[u8], close: &[u8]| {
            rest.starts_with(open).then(|| {
                memchr::memmem::find(&rest[open.len()..], close)
                    .map(|e| lt + open.len() + e + close.len())
            })
        };
        if let Some(end) = skip(b"<!--", b"-->")
            .or_else(|| skip(b"<![CDATA[", b"]]>"))
            .or_else(|| skip(b"<?", b"?>"))
        {
            match end {
                Some(end) => {
                    #[cfg(test)]
                    crate::dialect::work::add(end - lt);
                    i = end;
                    continue;
                }
                None => return Ok(()), // unclosed: roxmltree refuses it
            }
        }
        // A DOCTYPE (refused by roxmltree, DTDs are off) or anything else unknown.
        if rest.starts_with(b"<!") || rest.starts_with(b"</") {
            if rest.starts_with(b"<!") {
                return Ok(());
            }
            i = lt + 2;
            continue;
        }
        // A start tag: `<` Name (S Attribute)* S? `/`? `>`.
        let mut j = lt + 1;
        while j < b.len() && !is_space(b[j]) && b[j] != b'>' && b[j] != b'/' {
            j += 1;
        }
        let tag = &text[lt + 1..j];
        let mut attributes = 0usize;
        loop {
            while j < b.len() && is_space(b[j]) {
                j += 1;
            }
            match b.get(j) {
                None => return Ok(()),
                Some(b'>') => {
                    j += 1;
                    break;
                }
                Some(b'/') => {
                    j += 1;
                    break;
                }
                Some(_) => {}
            }
            let name_start = j;
            while j < b.len() && !is_space(b[j]) && !matches!(b[j], b'=' | b'>' | b'/') {
                j += 1;
            }
            let name = &text[name_start..j];
            while j < b.len() && is_space(b[j]) {
                j += 1;
            }
            if b.get(j) != Some(&b'=') {
                return Ok(()); // not well-formed: roxmltree's verdict
            }
            j += 1;
            while j < b.len() && is_space(b[j]) {
                j += 1;
            }
            let Some(&quote) = b.get(j).filter(|q| matches!(q, b'"' | b'\'')) else {
                return Ok(());
            };
            let Some(close) = memchr::memchr(quote, &b[j + 1..]) else {
                return Ok(());
            };
            j += close + 2;
            attributes += 1;
            if attributes > WOML_ATTRIBUTES_MAX {
                return Err(limit(
                    pos(name_start),
                    format!(
                        "<{tag}> has more than {WOML_ATTRIBUTES_MAX} attributes (namespace \
                         declarations included); a WOML element takes at most 7"
                    ),
                ));
            }
            if name == "xmlns" || name.starts_with("xmlns:") {
                namespaces += 1;
                if namespaces > WOML_NAMESPACES_MAX {
                    return Err(limit(
                        pos(name_start),
                        format!(
                            "the document declares more than {WOML_NAMESPACES_MAX} XML \
                             namespaces; WOML uses none"
                        ),
                    ));
                }
            }
        }
        #[cfg(test)]
        crate::dialect::work::add(j - lt);
        i = j;
    }
    Ok(())
}

fn limit(at: Pos, message: String) -> Problem {
    Problem::new("limit_exceeded", Some("SEC-2"), "", at, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{pos_at, work};

    fn scan(text: &str) -> Result<(), Problem> {
        check(text, |o| pos_at(text, o))
    }

    fn attributes(n: usize) -> String {
        (0..n).map(|i| format!(" a{i}=\"v>'\"")).collect()
    }

    #[test]
    fn attributes_and_namespaces_up_to_the_limits_pass() {
        let ns: String = (0..WOML_NAMESPACES_MAX)
            .map(|i| format!(" xmlns:p{i}='u'"))
            .collect();
        let text = format!(
            "<?xml version=\"1.0\"?><!-- <a {} --><workflow{ns}><x{}/><![CDATA[<y {}>]]></workflow>",
            attributes(99),
            attributes(WOML_ATTRIBUTES_MAX - 1),
            attributes(99),
        );
        assert!(scan(&text).is_ok());
    }

    #[test]
    fn too_many_attributes_are_refused_at_the_first_one_past_the_limit() {
        let text = format!(
            "<workflow>\n  <step{}/></workflow>",
            attributes(WOML_ATTRIBUTES_MAX + 1)
        );
        let e = scan(&text).expect_err("too many");
        assert_eq!(e.code, "limit_exceeded");
        let at = text
            .find(&format!(" a{WOML_ATTRIBUTES_MAX}="))
            .expect("there")
            + 1;
        assert_eq!((e.line, e.column), (2, pos_at(&text, at).column));
        assert!(e.message.contains("<step>"), "{}", e.message);
    }

    #[test]
    fn too_many_namespace_declarations_are_refused_nested_or_flat() {
        let n = WOML_NAMESPACES_MAX + 1;
        let nested: String = (0..n).map(|i| format!("<e xmlns:p{i}=\"u{i}\">")).collect();
        let flat: String = (0..n).map(|i| format!(" xmlns:p{i}=\"u\"")).collect();
        for text in [
            nested,
            format!("<workflow{flat}/>"),
            format!("<w xmlns='a'>{}", "<e xmlns='b'/>".repeat(n)),
        ] {
            let e = scan(&text).expect_err("too many");
            assert_eq!(e.code, "limit_exceeded");
            assert!(e.message.contains("namespace"), "{}", e.message);
        }
    }

    /// The pre-scan reads each byte a bounded number of times: 10× the markup, ≤ 20× the work.
    #[test]
    fn the_scan_is_linear_in_the_markup() {
        let doc = |n: usize| {
            format!(
                "<workflow><steps>{}</steps></workflow>",
                "<step id=\"s\" name='n'><script><![CDATA[x<y]]><!--c--></script></step>".repeat(n)
            )
        };
        let (small, big) = (
            work::of(|| scan(&doc(1_000))),
            work::of(|| scan(&doc(10_000))),
        );
        assert!(small.0.is_ok() && big.0.is_ok());
        assert!(big.1 <= 20 * small.1, "{} → {}", small.1, big.1);
        assert!(big.1 <= 3 * doc(10_000).len() as u64, "{} units", big.1);
    }
}
