//! Rendering a field-level diff ([`crate::json::json_diff`]) for people: one line per
//! differing JSON Pointer, each value clipped, used by the text and JUnit reports.

use serde_json::Value;

use crate::json::DiffEntry;
use crate::limits::MAX_DIFF_ENTRIES;

/// Render entries as lines `  /ptr: - reference  + candidate`, each value clipped.
pub(crate) fn render(entries: &[DiffEntry]) -> Vec<String> {
    let show = |v: &Option<Value>| match v {
        None => "(absent)".to_owned(),
        Some(v) => clip_value(v),
    };
    let mut lines: Vec<String> = entries
        .iter()
        .map(|d| {
            let ptr = if d.pointer.is_empty() {
                "(whole response)"
            } else {
                &d.pointer
            };
            format!("{ptr}: - {}  + {}", show(&d.expected), show(&d.actual))
        })
        .collect();
    if entries.len() >= MAX_DIFF_ENTRIES {
        lines.push(format!("… stopped after {MAX_DIFF_ENTRIES} differences"));
    }
    lines
}

fn clip_value(v: &Value) -> String {
    use crate::limits::DIFF_VALUE_CLIP_BYTES as MAX;
    let s = v.to_string();
    if s.len() <= MAX {
        return s;
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json_diff;
    use serde_json::json;

    #[test]
    fn render_shows_each_pointer_with_both_sides() {
        let reference = json!({"run": {"status": "succeeded", "steps": [{"id": "a"}, {"id": "b"}]},
                               "checkpoints": 4, "a/b": 1});
        let candidate = json!({"run": {"status": "failed", "steps": [{"id": "a"}]},
                               "checkpoints": 4.0, "a/b": 1, "extra": true});
        assert_eq!(
            render(&json_diff(&reference, &candidate)),
            [
                "/run/status: - \"succeeded\"  + \"failed\"",
                "/run/steps/1: - {\"id\":\"b\"}  + (absent)",
                "/extra: - (absent)  + true",
            ]
        );
    }

    #[test]
    fn render_says_where_a_bounded_diff_stopped() {
        let big: Vec<u32> = (0..1000).collect();
        let d = json_diff(&json!(big), &json!([]));
        assert_eq!(render(&d).len(), MAX_DIFF_ENTRIES + 1);
    }
}
