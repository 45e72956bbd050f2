//! WOML-16: the static secret reads of a script body.
//!
//! Owns: a small JavaScript-aware scan (string literals, template literals with `${…}`
//! code, comments) that finds every `secrets` identifier and classifies it: a literal
//! `secrets.NAME` read is collected (the compiled model stores names, never values), any
//! other use — `secrets[name]`, enumeration, passing the object — is refused.
//! Invariant: iterative and linear in the body; never panics on any text.

/// A refused use of `secrets` at byte `offset` of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DynamicSecret {
    pub offset: usize,
    pub message: String,
}

/// The literal secret names a body reads (sorted, deduplicated) and every refused use.
// long: one hand-written lexer loop; its states (code, template text, `${` nesting,
// comments, strings) change inside each other, and split they would have to be passed
// back and forth on every byte.
pub(crate) fn secret_reads(body: &str) -> (Vec<String>, Vec<DynamicSecret>) {
    let bytes = body.as_bytes();
    let mut names = Vec::new();
    let mut refused = Vec::new();
    // Lexer state: a stack of template-literal nesting (brace depth inside each `${`).
    let mut templates: Vec<usize> = Vec::new();
    let mut in_template_text = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_template_text {
            match c {
                b'\\' => i += 2,
                b'`' => {
                    in_template_text = false;
                    i += 1;
                }
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    templates.push(0);
                    in_template_text = false;
                    i += 2;
                }
                _ => i += 1,
            }
            continue;
        }
        match c {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'\'' | b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'`' => {
                in_template_text = true;
                i += 1;
            }
            b'{' => {
                if let Some(depth) = templates.last_mut() {
                    *depth += 1;
                }
                i += 1;
            }
            b'}' => {
                match templates.last_mut() {
                    Some(0) => {
                        templates.pop();
                        in_template_text = true;
                    }
                    Some(depth) => *depth -= 1,
                    None => {}
                }
                i += 1;
            }
            c if is_ident_start(c) => {
                let start = i;
                while i < bytes.len() && is_ident_part(bytes[i]) {
                    i += 1;
                }
                let word = &body[start..i];
                // `a.secrets` is a member, `...secrets` a spread of the object.
                let member = previous_significant(bytes, start) == Some(b'.')
                    && !body[..start].trim_end().ends_with("...");
                if word == "secrets" && !member {
                    match literal_member(body, i) {
                        Some((name, end)) => {
                            names.push(name.to_owned());
                            i = end;
                        }
                        None => refused.push(DynamicSecret {
                            offset: start,
                            message: "scripts may read secrets only as literal secrets.NAME; \
                                      dynamic access or enumeration of secrets is refused"
                                .into(),
                        }),
                    }
                }
            }
            _ => i += 1,
        }
    }
    names.sort();
    names.dedup();
    (names, refused)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn is_ident_part(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

fn previous_significant(bytes: &[u8], before: usize) -> Option<u8> {
    bytes[..before]
        .iter()
        .rev()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// After `secrets` ending at `at`: `. NAME` (not followed by a call or an index that would
/// make it something else than a read) → the name and where it ends.
fn literal_member(body: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = body.as_bytes();
    let mut i = at;
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    if bytes.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    if !bytes.get(i).copied().is_some_and(is_ident_start) {
        return None;
    }
    while i < bytes.len() && is_ident_part(bytes[i]) {
        i += 1;
    }
    Some((&body[start..i], i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_reads_are_collected() {
        let (names, refused) = secret_reads(
            "const t = secrets.PAYMENTS_API_TOKEN;\nfetch(u, {h: secrets . B_KEY});\nsecrets.PAYMENTS_API_TOKEN",
        );
        assert_eq!(names, ["B_KEY", "PAYMENTS_API_TOKEN"]);
        assert!(refused.is_empty());
    }

    #[test]
    fn dynamic_access_and_enumeration_are_refused() {
        for body in [
            "secrets[name]",
            "Object.keys(secrets)",
            "for (const k in secrets) {}",
            "const s = secrets;",
            "f(...secrets)",
            "`${secrets[k]}`",
            "x = `a ${ {a: 1}.a } ${secrets['X']}`",
        ] {
            let (_, refused) = secret_reads(body);
            assert_eq!(refused.len(), 1, "{body:?}");
        }
    }

    #[test]
    fn strings_comments_and_members_are_not_reads() {
        for body in [
            "// secrets[x]\n",
            "/* secrets[x] */",
            "'secrets[x]'",
            "\"secrets\"",
            "`secrets[x]`",
            "context.secrets[x]",
            "mysecrets[x]",
        ] {
            let (names, refused) = secret_reads(body);
            assert!(names.is_empty() && refused.is_empty(), "{body:?}");
        }
        let (_, refused) = secret_reads("a\n  secrets[k]");
        assert_eq!(refused[0].offset, 4);
    }
}
