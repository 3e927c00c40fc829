//! Small helpers any layer uses: UTC timestamps as text, and pools of
//! things kept for reuse between requests.

pub(crate) mod reuse;
pub mod timestamp;
