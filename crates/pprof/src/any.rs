//! One entry point for every pprof-family input: pprof, legacy formats and
//! folded stacks, told apart by `detect_format`.

use thiserror::Error;

use crate::detect::{detect_with_payload, DetectError, Detected, Format};
use crate::folded::{parse_folded, FoldedError, DEFAULT_FOLDED_SAMPLE_TYPE};
use crate::legacy::{parse_legacy, LegacyError};
use crate::{decode, DecodeError, DecodeOptions, Profile};

#[derive(Debug, Error)]
pub enum ParseError {
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error("pprof: {0}")]
    Pprof(#[from] DecodeError),
    #[error(transparent)]
    Legacy(#[from] LegacyError),
    #[error(transparent)]
    Folded(#[from] FoldedError),
    #[error("the input is {0}, which is translated to pprof, not parsed as pprof")]
    Otlp(Format),
}

/// Parses pprof (gzipped or raw), any legacy format google/pprof reads, or
/// folded stacks (as samples/count), into a validated profile.
pub fn parse_any(data: &[u8], options: &DecodeOptions) -> Result<(Profile, Detected), ParseError> {
    let (detected, payload) = detect_with_payload(data, options)?;
    let profile = match detected.format {
        Format::Pprof => decode(&payload, options)?,
        Format::Legacy(_) => parse_legacy(&payload)?,
        Format::Folded => parse_folded(&payload, DEFAULT_FOLDED_SAMPLE_TYPE)?,
        format @ (Format::OtlpProtobuf | Format::OtlpJson) => return Err(ParseError::Otlp(format)),
    };
    Ok((profile, detected))
}
