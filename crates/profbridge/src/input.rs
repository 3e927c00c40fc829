//! Reading inputs: files or standard input, with size limits, in any
//! format profbridge reads.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use profbridge_pprof::{
    decode_keeping_raw, detect_format, gunzip, parse_folded, parse_legacy, DecodeOptions, Format,
    Profile, RawStrings, DEFAULT_FOLDED_SAMPLE_TYPE,
};
use profbridge_translate::decode_request;
use profbridge_translate::json::request_from_json_noting_unknown_keys;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

use crate::cli::InputFormat;

/// An input's name for messages, and its bytes.
pub struct Input {
    pub name: String,
    pub path: Option<PathBuf>,
    pub bytes: Vec<u8>,
}

impl Input {
    /// Reads `path`, or standard input for `-`, up to the decode limit.
    pub fn read(path: &Path) -> Result<Self> {
        let limit = DecodeOptions::default().max_input_bytes;
        let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        let (name, stdin, path) = if path == Path::new("-") {
            ("<stdin>".to_owned(), true, None)
        } else {
            (path.display().to_string(), false, Some(path.to_path_buf()))
        };
        let mut bytes = Vec::new();
        let result = if stdin {
            std::io::stdin().take(read_limit).read_to_end(&mut bytes)
        } else {
            std::fs::File::open(path.as_deref().unwrap_or(Path::new("-")))
                .and_then(|file| file.take(read_limit).read_to_end(&mut bytes))
        };
        result.with_context(|| format!("{name}: cannot read"))?;
        if bytes.len() > limit {
            bail!("{name}: larger than the limit of {limit} bytes");
        }
        Ok(Self { name, path, bytes })
    }
}

/// What an input holds: pprof profiles, or an OTLP request.
pub enum Loaded {
    /// A profile, and the original bytes of its strings that were not
    /// UTF-8 (the profile holds them with U+FFFD).
    Pprof(Profile, RawStrings),
    Otlp(ExportProfilesServiceRequest),
}

/// Says on standard error that strings of `name` were not UTF-8 and are
/// written with U+FFFD (docs/cli.md), when there were any.
pub fn warn_replaced_strings(name: &str, raw: &RawStrings) {
    match raw.len() {
        0 => {}
        1 => eprintln!(
            "profbridge: {name}: warning: 1 string is not valid UTF-8; \
             its invalid bytes are written as U+FFFD"
        ),
        n => eprintln!(
            "profbridge: {name}: warning: {n} strings are not valid UTF-8; \
             their invalid bytes are written as U+FFFD"
        ),
    }
}

/// The sample type of folded input: `TYPE` or `TYPE/UNIT`.
pub fn folded_sample_type(spec: Option<&str>) -> (String, String) {
    match spec {
        None => (
            DEFAULT_FOLDED_SAMPLE_TYPE.0.to_owned(),
            DEFAULT_FOLDED_SAMPLE_TYPE.1.to_owned(),
        ),
        Some(spec) => match spec.split_once('/') {
            Some((kind, unit)) => (kind.to_owned(), unit.to_owned()),
            None => (spec.to_owned(), "count".to_owned()),
        },
    }
}

/// Parses an input in the given (or detected) format.
pub fn load(input: &Input, from: InputFormat, folded_type: &(String, String)) -> Result<Loaded> {
    let options = DecodeOptions::default();
    let format = match from {
        InputFormat::Auto => Some(
            detect_format(&input.bytes, &options)
                .map_err(|e| anyhow!("{e}"))?
                .format,
        ),
        _ => None,
    };
    let bytes = &input.bytes;
    let folded = (folded_type.0.as_str(), folded_type.1.as_str());
    let loaded = match (from, format) {
        (InputFormat::Pprof, _) | (_, Some(Format::Pprof)) => {
            let (profile, raw) = decode_keeping_raw(bytes, &options)?;
            Loaded::Pprof(profile, raw)
        }
        (InputFormat::Legacy, _) | (_, Some(Format::Legacy(_))) => {
            Loaded::Pprof(parse_legacy(&gunzipped(bytes)?)?, RawStrings::default())
        }
        (InputFormat::Folded, _) | (_, Some(Format::Folded)) => Loaded::Pprof(
            parse_folded(&gunzipped(bytes)?, folded)?,
            RawStrings::default(),
        ),
        (InputFormat::Otlp, _) | (_, Some(Format::OtlpProtobuf)) => {
            Loaded::Otlp(decode_request(gunzipped(bytes)?.as_slice())?)
        }
        (InputFormat::OtlpJson, _) | (_, Some(Format::OtlpJson)) => {
            Loaded::Otlp(otlp_json(input, &gunzipped(bytes)?)?)
        }
        (InputFormat::Auto, None) => bail!("no format detected"),
    };
    Ok(loaded)
}

/// JSON shorter than this that holds no samples is taken as meant to be
/// empty, unless keys were skipped.
const TRIVIAL_JSON_BYTES: usize = 256;

/// Reads OTLP/JSON, ignoring unknown keys as OTLP receivers must, but
/// saying so when nothing is left: a file written for another version of
/// the schema would otherwise become empty profiles without a word.
fn otlp_json(input: &Input, json: &[u8]) -> Result<ExportProfilesServiceRequest> {
    let read = request_from_json_noting_unknown_keys(json)?;
    let samples: usize = read
        .request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum();
    if samples == 0 && (json.len() > TRIVIAL_JSON_BYTES || !read.unknown_keys.is_empty()) {
        let skipped = if read.unknown_keys.is_empty() {
            "no keys were skipped".to_owned()
        } else {
            format!(
                "skipped unknown keys (another OTLP version?): {}",
                read.unknown_keys.join(", ")
            )
        };
        warn(
            input,
            &format!(
                "OTLP/JSON of {} bytes holds no samples; {skipped}",
                json.len()
            ),
        );
    }
    Ok(read.request)
}

/// A problem that does not stop the command, on stderr.
pub fn warn(input: &Input, message: &str) {
    eprintln!("warning: {}: {message}", input.name);
}

/// The bytes inside gzip, if they are gzipped.
fn gunzipped(bytes: &[u8]) -> Result<Vec<u8>> {
    if profbridge_pprof::is_gzip(bytes) {
        Ok(gunzip(bytes, &DecodeOptions::default())?)
    } else {
        Ok(bytes.to_vec())
    }
}
