//! Folded stacks (`frame;frame;frame value` per line), as Brendan Gregg's
//! flame graph tools and Pyroscope's `format=folded` use.

use thiserror::Error;

use crate::Profile;

/// The sample type folded input gets unless the caller names another.
pub const DEFAULT_FOLDED_SAMPLE_TYPE: (&str, &str) = ("samples", "count");

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FoldedError {
    #[error("folded stacks: not implemented yet")]
    NotImplemented,
}

/// Reads folded stacks into a pprof profile with one sample type.
pub fn parse_folded(_text: &[u8], _sample_type: (&str, &str)) -> Result<Profile, FoldedError> {
    Err(FoldedError::NotImplemented)
}

/// Writes folded stacks, root first, for the sample type at `sample_type`.
pub fn write_folded(_profile: &Profile, _sample_type: usize) -> Result<String, FoldedError> {
    Err(FoldedError::NotImplemented)
}
