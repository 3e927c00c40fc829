//! One entry point for every pprof-family input: pprof, legacy formats and
//! folded stacks, gunzipped once and told apart by their bytes unless the
//! caller names the format. profbridge-translate's `load_any` adds OTLP.

use thiserror::Error;

use crate::codec::decode_gunzipped_keeping_raw;
use crate::detect::{unzip, DetectError, Detected, Format, Unzipped};
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
    #[error("the input is a JFR recording, which holds several profiles: it is read as JFR, not as one pprof")]
    Jfr,
}

impl From<DecodeError> for ParseError {
    fn from(error: DecodeError) -> Self {
        Self::Pprof(error)
    }
}

/// The reader an input goes to. A caller that does not know passes no
/// hint (`None`) and the bytes decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Pprof,
    /// Any legacy format google/pprof reads; the parser tells which.
    Legacy,
    /// Folded stacks, of the sample type the caller gives.
    Folded,
    OtlpProtobuf,
    OtlpJson,
    /// A JFR recording (profbridge-jfr reads it).
    Jfr,
}

impl From<Format> for InputKind {
    fn from(format: Format) -> Self {
        match format {
            Format::Pprof => Self::Pprof,
            Format::Legacy(_) => Self::Legacy,
            Format::Folded => Self::Folded,
            Format::OtlpProtobuf => Self::OtlpProtobuf,
            Format::OtlpJson => Self::OtlpJson,
            Format::Jfr => Self::Jfr,
        }
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
    let unzipped = unzip(data, options).map_err(DetectError::from)?;
    let detected = unzipped.detect()?;
    let (profile, raw) = parse_unzipped(
        &unzipped,
        detected.format.into(),
        DEFAULT_FOLDED_SAMPLE_TYPE,
        options,
    )?;
    Ok((profile, detected, raw))
}

/// Gunzips `data` once, then reads it as `hint` says or, without a hint,
/// as the bytes say: the pprof family's half of translate's `load_any`.
/// OTLP is refused with [`ParseError::Otlp`].
pub fn load_profile(
    data: &[u8],
    hint: Option<InputKind>,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<(Profile, RawStrings), ParseError> {
    let unzipped = unzip(data, options).map_err(DetectError::from)?;
    let kind = match hint {
        Some(kind) => kind,
        None => unzipped.detect()?.format.into(),
    };
    parse_unzipped(&unzipped, kind, folded_sample_type, options)
}

/// Reads gunzipped bytes with the reader of `kind`; OTLP is refused with
/// [`ParseError::Otlp`] (profbridge-translate reads it).
pub fn parse_unzipped(
    unzipped: &Unzipped<'_>,
    kind: InputKind,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<(Profile, RawStrings), ParseError> {
    let bytes = unzipped.bytes.as_ref();
    let profile = match kind {
        InputKind::Pprof if unzipped.gzipped => return Ok(decode_gunzipped_keeping_raw(bytes)?),
        InputKind::Pprof => return Ok(decode_keeping_raw(bytes, options)?),
        InputKind::Legacy => parse_legacy(bytes)?,
        InputKind::Folded => parse_folded(bytes, folded_sample_type)?,
        InputKind::OtlpProtobuf => return Err(ParseError::Otlp(Format::OtlpProtobuf)),
        InputKind::OtlpJson => return Err(ParseError::Otlp(Format::OtlpJson)),
        InputKind::Jfr => return Err(ParseError::Jfr),
    };
    Ok((profile, RawStrings::default()))
}
