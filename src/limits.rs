//! The one place for the tool's limits (issue 11 item 6): depth, size, count and budget
//! caps, each defined here with a doc line; other modules use or re-export them. First,
//! the limits that what the tool produces, stores and reads must agree on (issue 12 item
//! 5, SEC-2).
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
pub(crate) const READ_DEPTH: usize = 128;

/// Levels a recorded value may sit under in any file the tool writes.
pub(crate) const ENVELOPE_DEPTH: usize = 32;

/// Deepest nesting of any document or value the tool accepts, produces or records.
pub const MAX_NESTING_DEPTH: usize = READ_DEPTH - ENVELOPE_DEPTH;

// ---------------------------------------------------------------------------------------
// Every other tool limit (issue 11 item 6): defined here, one doc line each, and re-exported
// under its old name where a module's API has it. Spec constants (RETRY-5's backoff cap,
// META-2's 256, the key grammar's 3..=39, WOML-7's 24 h) stay with the rule they implement;
// `tests/integration/package.rs` refuses a `MAX` constant defined anywhere else.

// Documents and values.

/// Longest `{{ … }}` template text the resolver parses (EXPR-*; SEC-2).
pub const MAX_TEMPLATE_BYTES: usize = 256 * 1024;
/// Most bytes a template scan may walk (8× the template cap: escapes, nested markers).
pub(crate) const MAX_TEMPLATE_SCAN_BYTES: usize = 8 * MAX_TEMPLATE_BYTES;
/// Deepest nesting of sub-blocks (a body inside a body …); a main-graph control's is 1.
pub(crate) const MAX_CONTROL_NESTING: usize = 16;
/// Longest duration or timestamp text looked at; longer is refused before parsing.
pub(crate) const MAX_TIME_TEXT_LEN: usize = 64;
/// Step ids spelled out in one cycle message; longer cycles are abbreviated.
pub(crate) const MAX_CYCLE_IDS_IN_MESSAGE: usize = 100;
/// Most steps, and most edges, one workflow may declare (the planner's indices are `u32`).
pub(crate) const MAX_GRAPH_SIZE: usize = u32::MAX as usize - 1;
/// Most bytes of steps (or edges) reserved up front on a sequence's announced length when a
/// workflow is deserialized (D-196); past it the vector grows as usual.
pub(crate) const MAX_RESERVED_BYTES: usize = 256 << 20;
/// Largest WOML / YAML source document a front-end reads: 8 MiB.
pub(crate) const SOURCE_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Most nodes a WOML / YAML document may hold, alias expansion included.
pub(crate) const NODES_MAX: usize = 200_000;
/// Most bytes the `context.steps` bindings of a WOML document's imported steps may total:
/// each lists every earlier step (WOML-12), so they grow with the square of the step count
/// (about 500 steps with short ids; D-220).
pub(crate) const WOML_CONTEXT_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Most problems a WOML / YAML document reports; past it one `too_many_problems` says so
/// (each problem repeats its path, which can be long; D-221).
pub(crate) const DIALECT_PROBLEMS_MAX: usize = 100;
/// Longest map key of a YAML document, in characters: YAML's own bound for an implicit key,
/// applied to explicit (`? key`) ones too — every problem under a key repeats it (D-221).
pub(crate) const YAML_KEY_CHARS_MAX: usize = 1024;
/// Most attributes, namespace declarations included, on one element of a WOML document
/// (roxmltree's duplicate check is quadratic in them; D-219).
pub(crate) const WOML_ATTRIBUTES_MAX: usize = 64;
/// Most XML namespace declarations in a whole WOML document (roxmltree copies every one in
/// scope into each element that declares one; D-219).
pub(crate) const WOML_NAMESPACES_MAX: usize = 64;
/// Longest run id (run ids become file names in the disk store).
pub(crate) const RUN_ID_CHARS_MAX: usize = 128;

// A run's budgets: the defaults of `sim::Limits` (README "Limits"; `--max-*` override them).

/// Action invocations, top-level and composed, across restarts.
pub(crate) const DEFAULT_INVOCATIONS_MAX: u64 = 20_000;
/// Virtual time a run may span from the epoch: 100 years of 366 days, in ms.
pub(crate) const DEFAULT_VIRTUAL_MS_MAX: u64 = 100 * 366 * 24 * 3_600_000;
/// Bytes of checkpoint patches a run may record: 64 MiB.
pub(crate) const DEFAULT_RECORDED_BYTES_MAX: u64 = 64 * 1024 * 1024;
/// Bytes of trace events a run may emit: 256 MiB.
pub(crate) const DEFAULT_TRACE_BYTES_MAX: u64 = 256 * 1024 * 1024;

// The simulator and its store.

/// In-process restarts of one simulated run (each crash fault fires once; a bug's bound).
pub(crate) const RESTARTS_MAX: u64 = 10_000;
/// The stack segment a simulation switches to when its caller's is short (reserved only).
pub(crate) const SIM_STACK_BYTES: usize = 64 << 20;
/// Below this much stack left, the simulation switches to a fresh [`SIM_STACK_BYTES`] one.
pub(crate) const STACK_RED_ZONE: usize = 16 << 20;
/// Largest journal record a reader accepts (a larger length field is damage).
pub(crate) const JOURNAL_RECORD_MAX: usize = 1 << 30;
/// Most bytes of sealing-key material read (a key file that is really something else is
/// refused, `sealing_key_too_long`; D-250).
pub(crate) const SEALING_KEY_MAX_BYTES: usize = 4096;

// Peers across a process boundary and the conformance suite.

/// Longest line read from an adapter, engine or host process: 16 MiB.
pub(crate) const PEER_LINE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Lines of a peer's stdout queued before its reader stops reading (back-pressure).
pub(crate) const PEER_READER_QUEUE_LINES: usize = 16;
/// Longest line of a peer's stderr read for its tail (a longer one is "(an overlong line)").
pub(crate) const STDERR_LINE_BYTES_MAX: usize = 64 * 1024;
/// Lines of a peer's stderr kept for error messages.
pub(crate) const STDERR_TAIL_LINES: usize = 5;
/// How long an exited peer's stderr reader gets to drain the pipe before a message quotes it.
pub(crate) const STDERR_DRAIN: std::time::Duration = std::time::Duration::from_millis(500);
/// How long a peer gets to exit after its stdin closes before its group is killed.
pub(crate) const PEER_EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);
/// Messages in one context-protocol turn before the candidate must say `idle`.
pub(crate) const MAX_MESSAGES_PER_TURN: usize = 100_000;
/// Longest `w6w-sim eval` request line: 64 MiB.
#[cfg(feature = "cli")]
pub(crate) const MAX_REQUEST_LINE_BYTES: usize = 64 * 1024 * 1024;
/// Largest conformance case file read: 64 MiB.
pub(crate) const MAX_CASE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of one adapter response a conformance report keeps (a longer one keeps a prefix).
pub(crate) const RESPONSE_KEEP_MAX: usize = 64 * 1024;
/// Differences a field-level diff collects before it stops.
pub(crate) const MAX_DIFF_ENTRIES: usize = 200;
/// No crash point of a generated workflow lies past this checkpoint.
pub(crate) const CRASH_POINTS_MAX: u64 = 64;
/// Crash points checked per generated workflow: every checkpoint while there are at most
/// this many, else this many of them (D-224).
pub(crate) const CRASH_POINTS_SAMPLED: u64 = 12;
/// The same on the host seam, where our engine runs and the host's store is judged (D-225).
pub(crate) const CRASH_POINTS_HOST_SAMPLED: u64 = 6;
/// Candidate checks the shrinker may spend per generated failure.
pub(crate) const SHRINK_BUDGET: usize = 2_000;
/// A whole adapter run's default deadline (`--deadline`, 0 = none).
pub const DEFAULT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

// Excerpts in messages: a pathological input never makes a megabyte-long message.

/// Characters of a value shown in a validation message (`model::show_value`).
pub(crate) const SHOWN_VALUE_CHARS_MAX: usize = 60;
/// Bytes of a peer process's line quoted in an error.
pub(crate) const PEER_LINE_CLIP_BYTES: usize = 300;
/// Bytes of a generated workflow's failure text kept in its report.
pub(crate) const GENERATED_TEXT_CLIP_BYTES: usize = 600;
/// Bytes of one value shown in a field-level diff entry.
pub(crate) const DIFF_VALUE_CLIP_BYTES: usize = 200;

// The picture of a run (`--html`, issue 41 item 4): a page someone can open and scroll.

/// Lanes (steps and strands) drawn on a run's timeline; the rest are counted, not drawn.
#[cfg(feature = "cli")]
pub(crate) const HTML_LANES_MAX: usize = 2_000;
/// Events listed under "what happened"; the rest are counted, not listed.
#[cfg(feature = "cli")]
pub(crate) const HTML_EVENTS_MAX: usize = 5_000;

/// Whether `v` nests deeper than `max` levels (a scalar is depth 0, `[]` depth 1).
/// Its stack depth is bounded whatever the input: up to [`RECURSION_DEPTH_MAX`] levels it
/// recurses (no allocation: it runs on every step's output), beyond that it walks with a
/// heap stack.
pub(crate) fn nests_deeper_than(v: &serde_json::Value, max: usize) -> bool {
    use serde_json::Value;
    // Stops one level past `room`, so the recursion is at most `max` + 1 deep.
    fn deeper(v: &Value, room: usize) -> bool {
        match (v, room.checked_sub(1)) {
            (Value::Array(_) | Value::Object(_), None) => true,
            (Value::Array(items), Some(room)) => items.iter().any(|c| deeper(c, room)),
            (Value::Object(m), Some(room)) => m.values().any(|c| deeper(c, room)),
            _ => false,
        }
    }
    if max <= RECURSION_DEPTH_MAX {
        return deeper(v, max);
    }
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

// Scripts (issue 40): a WOML `<script>` / YAML `run` body in the embedded JavaScript engine
// (src/script). Each bounds one attempt; a script past one fails its step, never the tool.

/// Heap one script attempt's JavaScript runtime may allocate: 64 MiB. Past it an allocation
/// fails inside the script (an allocation bomb ends as a failed step, D-283).
pub(crate) const SCRIPT_MEMORY_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Native stack one script attempt's interpreter may use: 512 KiB (deep recursion throws a
/// `RangeError` inside the script).
pub(crate) const SCRIPT_STACK_BYTES_MAX: usize = 512 * 1024;
/// Interrupt checks one script attempt may pass: QuickJS checks once per 10,000 function
/// calls and loop iterations, so this is about 20 million of them — the deterministic CPU
/// budget that ends an endless loop as `timeout` (D-283).
pub(crate) const SCRIPT_INTERRUPT_BUDGET: u64 = 2_000;
/// Wall-clock milliseconds one script attempt may run before it is stopped as `timeout`:
/// the guard for loops whose every iteration is slow native work (building megabyte
/// strings), which the interrupt budget alone would let run for minutes (D-283).
pub(crate) const SCRIPT_WALL_MS_MAX: u64 = 10_000;
/// Virtual-clock events (timers, settled calls) one script attempt may fire before it is a
/// `timeout` (an endless `setInterval` with no `<config>` timeout ends too).
pub(crate) const SCRIPT_TICKS_MAX: u64 = 100_000;
/// Longest JSON text a script may return: 1 MiB; longer is the `size` failure (WOML-11).
pub(crate) const SCRIPT_RETURN_BYTES_MAX: usize = 1024 * 1024;
/// Most `services`/`fetch` calls one script attempt may make; past it the run stops with
/// `limit_exceeded` like any run budget.
pub(crate) const SCRIPT_CALLS_MAX: usize = 1_000;
/// Most `console` lines one script attempt writes to the trace; later lines are counted,
/// not written.
pub(crate) const SCRIPT_CONSOLE_LINES_MAX: usize = 1_000;
/// Longest `console` line, in UTF-16 units, before it is cut (with `…`).
pub(crate) const SCRIPT_CONSOLE_LINE_CHARS_MAX: usize = 8 * 1024;

/// The deepest limit [`nests_deeper_than`] checks by recursion.
pub(crate) const RECURSION_DEPTH_MAX: usize = 128;

/// The smallest per-run shift of an engine-seam session clock, in days (D-104): 300 years,
/// twice beyond the longest virtual-time window that is shifted at all.
pub(crate) const CLOCK_SHIFT_DAYS_MIN: u64 = 109_575;

/// The largest per-run shift of an engine-seam session clock, in days (D-104): about 7,000
/// years, so a shifted ISO year keeps four digits.
pub(crate) const CLOCK_SHIFT_DAYS_MAX: u64 = 2_556_750;

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
        // Past the recursion bound the heap walk answers the same.
        let deep = nested(RECURSION_DEPTH_MAX + 5);
        assert!(!nests_deeper_than(&deep, RECURSION_DEPTH_MAX + 5));
        assert!(nests_deeper_than(&deep, RECURSION_DEPTH_MAX + 4));
        assert!(nests_deeper_than(&deep, RECURSION_DEPTH_MAX));
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
