//! Small helpers any layer uses: UTC timestamps and durations as text,
//! pools of things kept for reuse between requests, and an error's text
//! with its root cause.

pub mod duration;
pub(crate) mod reuse;
pub(crate) mod root_cause;
pub mod timestamp;
