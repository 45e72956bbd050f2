//! The run model: RunState, StepExecution, StepError, StepMeta and RunStatePatch.
//!
//! A RunState is never written whole by the engine: every checkpoint is a
//! [`RunStatePatch`], and the store folds patches with [`RunState::apply`]. That keeps the
//! bytes a run writes linear in its length (RUN-2) and gives every host one definition of
//! what a patch means.
//!
//! One definition per behaviour (D-320): serde is every record's, frame's and state's JSON
//! form (the `into_json` conversions call it), and [`RunState::apply`] is the fold (the
//! by-value and draining spellings call it).
//!
//! - `status`: the run and step statuses, the phase, StepError, StepMeta;
//! - `record`: StepExecution, its `Serialize` impl and its typed blocks (D-189);
//! - `frames`: typed frames (D-188) and how reading JSON tells them from foreign JSON;
//! - `state`: RunState and the fold; `patch`: RunStatePatch.

mod frames;
mod patch;
mod record;
mod state;
mod status;
#[cfg(test)]
mod tests;

pub(crate) use frames::{FRAME_PREFIX, FrameHasher};
pub use frames::{FrameRecords, Frames, PatchFrames};
pub use patch::{PatchField, RunStatePatch};
pub(crate) use record::records_json;
pub use record::{BlockKind, Blocks, StepExecution};
pub use state::RunState;
pub use status::{Phase, RunStatus, StepError, StepMeta, StepStatus};
