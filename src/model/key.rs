//! MODEL-5: the Workflow `key` grammar and its first-assignment gate.
//!
//! Owns: the grammar (`^[a-z][a-z0-9-]{2,38}$`, no `--`, no trailing `-`) and the rule of
//! *when* it is checked — only when the previously stored document has no key (absent or
//! `null`) and the new one sets it. A key that is already stored is never re-checked, even
//! when a save changes it: the 2026-09-02 amendment pins only that the grammar is not
//! re-checked, nothing about whether a key may change. `crate::validate::validate_save`
//! applies the gate.
//! Refuses to know: uniqueness over `(account, key)` (MODEL-6) — that needs a store of
//! other workflows and belongs to the host.

use serde_json::Value;

/// Shortest legal key (one leading letter plus at least two more characters).
pub(crate) const KEY_LEN_MIN: usize = 3;
/// Longest legal key (one leading letter plus at most 38 more characters).
pub(crate) const KEY_LEN_MAX: usize = 39;

/// Every way `key` breaks the MODEL-5 grammar, as sentences; empty when it is legal.
pub(crate) fn key_grammar_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let len = key.chars().count();
    if !(KEY_LEN_MIN..=KEY_LEN_MAX).contains(&len) {
        problems.push(format!(
            "must be {KEY_LEN_MIN} to {KEY_LEN_MAX} characters long, not {len}"
        ));
    }
    match key.chars().next() {
        Some(c) if c.is_ascii_lowercase() => {}
        Some(c) => problems.push(format!("must start with a lowercase letter a-z, not {c:?}")),
        None => {}
    }
    // The first character has its own rule above; list each other illegal one once.
    let mut illegal: Vec<char> = Vec::new();
    for c in key.chars().skip(1) {
        let legal = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if !legal && !illegal.contains(&c) {
            illegal.push(c);
        }
    }
    if !illegal.is_empty() {
        let shown: Vec<String> = illegal.iter().map(|c| format!("{c:?}")).collect();
        problems.push(format!(
            "may contain only a-z, 0-9 and '-', not {}",
            shown.join(", ")
        ));
    }
    if key.contains("--") {
        problems.push("must not contain \"--\"".to_owned());
    }
    if key.ends_with('-') {
        problems.push("must not end with '-'".to_owned());
    }
    problems
}

/// Whether `key` matches the MODEL-5 grammar.
#[cfg(test)]
pub(crate) fn is_valid_key(key: &str) -> bool {
    key_grammar_problems(key).is_empty()
}

/// The key a stored document carries: `None` when absent, `null` or not a string.
pub(crate) fn stored_key(document: &Value) -> Option<&str> {
    document.get("key").and_then(Value::as_str)
}

/// Whether saving over `previous` (the stored document, `None` for a new workflow) is the
/// key's first assignment, the only moment its grammar is checked (MODEL-5).
pub(crate) fn is_first_key_assignment(previous: Option<&Value>) -> bool {
    previous.and_then(stored_key).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_5_grammar_accepts_legal_keys() {
        for key in [
            "abc",
            "daily-report",
            "a1-b2-c3",
            "a23456789012345678901234567890123456789",
        ] {
            assert!(is_valid_key(key), "{key}: {:?}", key_grammar_problems(key));
        }
    }

    #[test]
    fn model_5_grammar_refuses_each_broken_rule() {
        for (key, needle) in [
            ("ab", "3 to 39"),
            ("a234567890123456789012345678901234567890", "3 to 39"),
            ("", "3 to 39"),
            ("1abc", "lowercase letter"),
            ("-abc", "lowercase letter"),
            ("Abc", "lowercase letter"),
            ("ab_c", "'_'"),
            ("abC", "'C'"),
            ("ab.c", "'.'"),
            ("añb", "'ñ'"),
            ("a_b_C", "not '_', 'C'"),
            ("ab--c", "--"),
            ("abc-", "end with"),
        ] {
            let problems = key_grammar_problems(key).join("; ");
            assert!(problems.contains(needle), "{key:?}: {problems}");
        }
    }
}
