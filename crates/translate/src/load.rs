//! `load_any`: any input profbridge reads, gunzipped once, into a pprof
//! profile, a JFR recording's profiles or an OTLP request. It lives here,
//! not in profbridge-pprof, because OTLP is decoded here; the pprof family
//! is read by profbridge-pprof's `parse_unzipped`, JFR by profbridge-jfr.

use profbridge_jfr::{convert as convert_jfr, ConvertOptions, Converted, JfrError};
use std::borrow::Cow;

use prost::bytes::Bytes;

use profbridge_pprof::{
    decode_packed_gunzipped, decode_packed_keeping_raw, parse_unzipped, unzip, DecodeError,
    DecodeOptions, DetectError, Detected, FoldedError, InputKind, LegacyError, PackedProfile,
    ParseError, Profile, RawStrings, Unzipped,
};
use thiserror::Error;

use crate::json::{request_from_json_noting_unknown_keys, JsonError};
use crate::otlp::ExportProfilesServiceRequest;
use crate::otlp_decode::decode_request;

/// What an input held: pprof as a [`Profile`], or for
/// [`load_any_packed`] as a [`PackedProfile`].
#[derive(Debug)]
pub enum Loaded<P = Profile> {
    /// A profile, and the original bytes of its strings that were not
    /// UTF-8 (the profile holds them with U+FFFD).
    Pprof(P, RawStrings),
    Otlp {
        request: ExportProfilesServiceRequest,
        /// For OTLP/JSON: what was read, for callers that warn.
        json: Option<JsonNotes>,
    },
    /// A JFR recording: a profile per kind of event it holds.
    Jfr(Converted),
}

/// What reading OTLP/JSON noticed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonNotes {
    /// The JSON's size after gunzip.
    pub bytes: usize,
    /// Keys skipped as unknown, as `request_from_json_noting_unknown_keys`
    /// lists them.
    pub unknown_keys: Vec<String>,
}

/// Why an input was not read; each variant is its reader's error, whose
/// text it shows alone, so callers add what they want to say.
#[derive(Debug, Error)]
pub enum LoadError {
    /// gzip, the input limits, or no format recognized.
    #[error(transparent)]
    Detect(DetectError),
    #[error(transparent)]
    Pprof(DecodeError),
    #[error(transparent)]
    Legacy(LegacyError),
    #[error(transparent)]
    Folded(FoldedError),
    #[error(transparent)]
    OtlpProtobuf(prost::DecodeError),
    #[error(transparent)]
    OtlpJson(JsonError),
    #[error(transparent)]
    Jfr(JfrError),
}

impl From<ParseError> for LoadError {
    fn from(error: ParseError) -> Self {
        match error {
            ParseError::Detect(error) => Self::Detect(error),
            ParseError::Pprof(error) => Self::Pprof(error),
            ParseError::Legacy(error) => Self::Legacy(error),
            ParseError::Folded(error) => Self::Folded(error),
            // parse_unzipped refuses OTLP and JFR only, which are read here first.
            ParseError::Otlp(_) | ParseError::Jfr => Self::Detect(DetectError::Unrecognized),
        }
    }
}

/// Reads `data`, gunzipped once when it is gzip, as `hint` says or,
/// without a hint, as its bytes say: pprof, any legacy format google/pprof
/// reads, folded stacks (of `folded_sample_type`), OTLP protobuf or
/// OTLP/JSON.
pub fn load_any(
    data: &[u8],
    hint: Option<InputKind>,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<Loaded, LoadError> {
    let read = |unzipped, kind| read_pprof(unzipped, kind, folded_sample_type, options);
    load(data, hint, false, options, read).map(|(loaded, _)| loaded)
}

/// [`load_any`] with pprof read into a [`PackedProfile`], whose samples
/// stay in the protobuf: `data` itself when it is not gzipped (shared, not
/// copied), else what it gunzips to.
pub fn load_any_packed(
    data: &Bytes,
    hint: Option<InputKind>,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<Loaded<PackedProfile>, LoadError> {
    let read = |unzipped: Unzipped<'_>, kind| match kind {
        InputKind::Pprof => {
            let decoded = match unzipped.bytes {
                Cow::Owned(protobuf) => decode_packed_gunzipped(Bytes::from(protobuf)),
                Cow::Borrowed(_) => decode_packed_keeping_raw(data.clone(), options),
            };
            decoded.map_err(LoadError::Pprof)
        }
        kind => read_pprof(unzipped, kind, folded_sample_type, options)
            .map(|(profile, raw)| (PackedProfile::from_profile(profile), raw)),
    };
    load(data, hint, false, options, read).map(|(loaded, _)| loaded)
}

/// The pprof family's reader of gunzipped bytes, into a [`Profile`].
fn read_pprof(
    unzipped: Unzipped<'_>,
    kind: InputKind,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<(Profile, RawStrings), LoadError> {
    Ok(parse_unzipped(
        &unzipped,
        kind,
        folded_sample_type,
        options,
    )?)
}

/// [`load_any`], and what detection finds in the gunzipped bytes even
/// when `hint` names the format (`None` when it finds nothing), for
/// callers that show both.
pub fn load_any_detected(
    data: &[u8],
    hint: Option<InputKind>,
    folded_sample_type: (&str, &str),
    options: &DecodeOptions,
) -> Result<(Loaded, Option<Detected>), LoadError> {
    let read = |unzipped, kind| read_pprof(unzipped, kind, folded_sample_type, options);
    load(data, hint, true, options, read)
}

fn load<'a, P>(
    data: &'a [u8],
    hint: Option<InputKind>,
    always_detect: bool,
    options: &DecodeOptions,
    read_pprof: impl FnOnce(Unzipped<'a>, InputKind) -> Result<(P, RawStrings), LoadError>,
) -> Result<(Loaded<P>, Option<Detected>), LoadError> {
    let unzipped = unzip(data, options).map_err(|error| LoadError::Detect(error.into()))?;
    let (kind, detected) = match hint {
        Some(kind) => (
            kind,
            always_detect.then(|| unzipped.detect().ok()).flatten(),
        ),
        None => {
            let detected = unzipped.detect().map_err(LoadError::Detect)?;
            (detected.format.into(), Some(detected))
        }
    };
    let bytes = unzipped.bytes.as_ref();
    match kind {
        InputKind::OtlpProtobuf => Ok((
            Loaded::Otlp {
                request: decode_request(bytes).map_err(LoadError::OtlpProtobuf)?,
                json: None,
            },
            detected,
        )),
        InputKind::OtlpJson => {
            let read = request_from_json_noting_unknown_keys(bytes).map_err(LoadError::OtlpJson)?;
            let loaded = Loaded::Otlp {
                request: read.request,
                json: Some(JsonNotes {
                    bytes: bytes.len(),
                    unknown_keys: read.unknown_keys,
                }),
            };
            Ok((loaded, detected))
        }
        InputKind::Jfr => {
            let options = ConvertOptions {
                decode: *options,
                ..ConvertOptions::default()
            };
            let converted = convert_jfr(bytes, &options).map_err(LoadError::Jfr)?;
            Ok((Loaded::Jfr(converted), detected))
        }
        kind => {
            let (profile, raw) = read_pprof(unzipped, kind)?;
            Ok((Loaded::Pprof(profile, raw), detected))
        }
    }
}
