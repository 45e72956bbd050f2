//! Named limits on expression input (SEC-2). Every limit is checked where input enters,
//! and exceeding one is a `limit_exceeded` error value — never a panic, a hang or a stack
//! overflow.

/// Deepest nesting of a with block, a JSONLogic rule or a stringified value: the crate's
/// one depth limit (`crate::limits`), which the store can always read back.
pub use crate::limits::MAX_NESTING_DEPTH;

/// Longest string (in bytes) parsed as a `{{ }}` template: a with string containing `{{`,
/// a render part's content, or the `parse` op's text. Strings without `{{` are never
/// parsed and have no limit.
pub use crate::limits::MAX_TEMPLATE_BYTES;

/// Upper bound on the bytes the balanced close scan may visit while parsing one template.
/// The scan restarts at every `{{ =` marker, so adversarial text could otherwise make
/// parsing quadratic.
pub(crate) use crate::limits::MAX_TEMPLATE_SCAN_BYTES;
