//! One entry point for every pprof-family input: pprof, legacy formats and
//! folded stacks, told apart by `detect_format`.

use thiserror::Error;

use crate::detect::{detect_with_payload, DetectError, Detected, Format};
use crate::folded::{parse_folded, FoldedError, DEFAULT_FOLDED_SAMPLE_TYPE};
use crate::legacy::{parse_legacy, LegacyError};
use crate::{decode_keeping_raw, DecodeError, DecodeOptions, Profile, RawStrings};

/// Variants that wrap another error show it in their text and are
/// `transparent` or do not give it as `source()` (docs/architecture.md).
#[derive(Debug, Error)]
pub enum ParseError {
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error("pprof: {0}")]
    Pprof(DecodeError),
    #[error(transparent)]
    Legacy(#[from] LegacyError),
    #[error(transparent)]
    Folded(#[from] FoldedError),
    #[error("the input is {0}, which is translated to pprof, not parsed as pprof")]
    Otlp(Format),
}

impl From<DecodeError> for ParseError {
    fn from(error: DecodeError) -> Self {
        Self::Pprof(error)
    }
}

/// Parses pprof (gzipped or raw), any legacy format google/pprof reads, or
/// folded stacks (as samples/count), into a validated profile.
pub fn parse_any(data: &[u8], options: &DecodeOptions) -> Result<(Profile, Detected), ParseError> {
    parse_any_keeping_raw(data, options).map(|(profile, detected, _)| (profile, detected))
}

/// [`parse_any`], and for pprof the original bytes of the strings that
/// were not UTF-8 (which the profile holds with U+FFFD).
pub fn parse_any_keeping_raw(
    data: &[u8],
    options: &DecodeOptions,
) -> Result<(Profile, Detected, RawStrings), ParseError> {
    let (detected, payload) = detect_with_payload(data, options)?;
    let (profile, raw) = match detected.format {
        Format::Pprof => decode_keeping_raw(&payload, options)?,
        Format::Legacy(_) => (parse_legacy(&payload)?, RawStrings::default()),
        Format::Folded => (
            parse_folded(&payload, DEFAULT_FOLDED_SAMPLE_TYPE)?,
            RawStrings::default(),
        ),
        format @ (Format::OtlpProtobuf | Format::OtlpJson) => return Err(ParseError::Otlp(format)),
    };
    Ok((profile, detected, raw))
}
