//! The legacy profile formats google/pprof reads, parsed as it parses them.

use thiserror::Error;

use crate::Profile;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LegacyError {
    #[error("not a legacy profile format google/pprof reads")]
    Unrecognized,
}

/// Parses a legacy profile (gperftools CPU, heap, growth, contention,
/// thread, Go count, Java) into the profile google/pprof would produce.
pub fn parse_legacy(_data: &[u8]) -> Result<Profile, LegacyError> {
    Err(LegacyError::Unrecognized)
}
