//! The one place for the limits that what the tool produces, stores and reads must agree
//! on (issue 12 item 5, SEC-2).
//!
//! `serde_json` refuses text nested deeper than 128 levels, and every file the tool writes
//! (a store file, a trace line, a report, a response) is read back by it. A recorded value
//! sits inside an envelope (`{"state": {"steps": {id: {"output": V}}}}`, a trace patch, a
//! world snapshot, a foreach's `{"items": [V]}`) of at most [`ENVELOPE_DEPTH`] levels, so a
//! value may nest at most [`MAX_NESTING_DEPTH`] levels: validation refuses a workflow
//! deeper than that, the resolver a with block, JSONLogic rule or stringified value deeper
//! than that, the scenario loader a variable, trigger or document deeper than that, and
//! the engine fails a step whose params or output would be (`limit_exceeded`) — so a store
//! can always be read back and a run always resumed.

/// The nesting depth `serde_json` reads back (its fixed recursion limit).
pub const READ_DEPTH: usize = 128;

/// Levels a recorded value may sit under in any file the tool writes.
pub const ENVELOPE_DEPTH: usize = 32;

/// Deepest nesting of any document or value the tool accepts, produces or records.
pub const MAX_NESTING_DEPTH: usize = READ_DEPTH - ENVELOPE_DEPTH;

/// Whether `v` nests deeper than `max` levels (a scalar is depth 0, `[]` depth 1).
/// Iterative: never recurses, whatever the input.
pub fn nests_deeper_than(v: &serde_json::Value, max: usize) -> bool {
    use serde_json::Value;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                if d + 1 > max {
                    return true;
                }
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(m) => {
                if d + 1 > max {
                    return true;
                }
                stack.extend(m.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn nested(levels: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..levels {
            v = json!([v]);
        }
        v
    }

    #[test]
    fn depth_is_counted_in_containers() {
        assert!(!nests_deeper_than(&json!(1), 0));
        assert!(nests_deeper_than(&json!([]), 0));
        assert!(!nests_deeper_than(&nested(5), 5));
        assert!(nests_deeper_than(&nested(6), 5));
        assert!(!nests_deeper_than(&json!({"a": [1, {"b": 2}]}), 3));
    }

    /// What the tool accepts, wrapped in the deepest envelope it writes, reads back.
    #[test]
    fn the_deepest_accepted_value_reads_back_in_its_envelope() {
        let text = nested(MAX_NESTING_DEPTH + ENVELOPE_DEPTH - 1).to_string();
        assert!(serde_json::from_str::<Value>(&text).is_ok());
        let text = nested(READ_DEPTH + 1).to_string();
        assert!(serde_json::from_str::<Value>(&text).is_err());
    }
}
