//! Reading inputs: files or standard input, with size limits, in any
//! format profbridge reads.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

use profbridge_jfr::Converted;
use prost::bytes::Bytes;

use profbridge_pprof::{
    DecodeOptions, Detected, InputKind, PackedProfile, RawStrings, DEFAULT_FOLDED_SAMPLE_TYPE,
};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{load_any_detected, load_any_packed, JsonNotes, Loaded as AnyInput};

/// Input formats; `auto` detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// Detect from the bytes.
    Auto,
    /// pprof protobuf, gzipped or raw.
    Pprof,
    /// A legacy format google/pprof reads (gperftools CPU, heap, contention, ...).
    Legacy,
    /// Folded stacks: `frame;frame;frame value` lines.
    Folded,
    /// OTLP ExportProfilesServiceRequest, protobuf.
    Otlp,
    /// OTLP ExportProfilesServiceRequest, JSON.
    OtlpJson,
    /// A JFR (Java Flight Recorder) recording, gzipped or raw.
    Jfr,
}

/// An input's name for messages, and its bytes (which a pprof profile
/// read from them shares when they are not gzipped).
pub struct Input {
    pub name: String,
    pub path: Option<PathBuf>,
    pub bytes: Bytes,
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
            std::fs::File::open(path.as_deref().unwrap_or(Path::new("-"))).and_then(|file| {
                // `take` hides the file's size from read_to_end, which would
                // then grow the buffer by doubling, copying the input each time.
                let size = file.metadata().map_or(0, |m| m.len()).min(read_limit);
                bytes.reserve_exact(usize::try_from(size).unwrap_or(0));
                file.take(read_limit).read_to_end(&mut bytes)
            })
        };
        result.with_context(|| format!("{name}: cannot read"))?;
        if bytes.len() > limit {
            bail!("{name}: larger than the limit of {limit} bytes");
        }
        Ok(Self {
            name,
            path,
            bytes: Bytes::from(bytes),
        })
    }
}

/// What an input holds: pprof profiles, an OTLP request, or a JFR
/// recording's profiles.
pub enum Loaded {
    /// A profile, and the original bytes of its strings that were not
    /// UTF-8 (the profile holds them with U+FFFD).
    Pprof(PackedProfile, RawStrings),
    Otlp(ExportProfilesServiceRequest),
    Jfr(Converted),
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

/// Parses an input in the given (or detected) format, gunzipping it once.
pub fn load(input: &Input, from: InputFormat, folded_type: &(String, String)) -> Result<Loaded> {
    let folded = (folded_type.0.as_str(), folded_type.1.as_str());
    let loaded = load_any_packed(&input.bytes, hint(from), folded, &DecodeOptions::default())?;
    Ok(loaded_input(input, loaded))
}

/// [`load`], and the format detection finds in the input even when `from`
/// names one (`None` when it finds none).
pub fn load_detected(
    input: &Input,
    from: InputFormat,
    folded_type: &(String, String),
) -> Result<(Loaded, Option<Detected>)> {
    let folded = (folded_type.0.as_str(), folded_type.1.as_str());
    let (loaded, detected) =
        load_any_detected(&input.bytes, hint(from), folded, &DecodeOptions::default())?;
    let loaded = match loaded {
        AnyInput::Pprof(profile, raw) => AnyInput::Pprof(PackedProfile::from_profile(profile), raw),
        AnyInput::Otlp { request, json } => AnyInput::Otlp { request, json },
        AnyInput::Jfr(converted) => AnyInput::Jfr(converted),
    };
    Ok((loaded_input(input, loaded), detected))
}

fn hint(from: InputFormat) -> Option<InputKind> {
    match from {
        InputFormat::Auto => None,
        InputFormat::Pprof => Some(InputKind::Pprof),
        InputFormat::Legacy => Some(InputKind::Legacy),
        InputFormat::Folded => Some(InputKind::Folded),
        InputFormat::Otlp => Some(InputKind::OtlpProtobuf),
        InputFormat::OtlpJson => Some(InputKind::OtlpJson),
        InputFormat::Jfr => Some(InputKind::Jfr),
    }
}

fn loaded_input(input: &Input, loaded: AnyInput<PackedProfile>) -> Loaded {
    match loaded {
        AnyInput::Pprof(profile, raw) => Loaded::Pprof(profile, raw),
        AnyInput::Otlp {
            request,
            json: Some(notes),
        } => Loaded::Otlp(otlp_json(input, request, &notes)),
        AnyInput::Otlp {
            request,
            json: None,
        } => Loaded::Otlp(request),
        AnyInput::Jfr(converted) => Loaded::Jfr(converted),
    }
}

/// JSON shorter than this that holds no samples is taken as meant to be
/// empty, unless keys were skipped.
const TRIVIAL_JSON_BYTES: usize = 256;

/// OTLP/JSON is read ignoring unknown keys, as OTLP receivers must; this
/// says so when nothing is left: a file written for another version of
/// the schema would otherwise become empty profiles without a word.
fn otlp_json(
    input: &Input,
    request: ExportProfilesServiceRequest,
    notes: &JsonNotes,
) -> ExportProfilesServiceRequest {
    let samples: usize = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum();
    if samples == 0 && (notes.bytes > TRIVIAL_JSON_BYTES || !notes.unknown_keys.is_empty()) {
        let skipped = if notes.unknown_keys.is_empty() {
            "no keys were skipped".to_owned()
        } else {
            format!(
                "skipped unknown keys (another OTLP version?): {}",
                notes.unknown_keys.join(", ")
            )
        };
        warn(
            input,
            &format!(
                "OTLP/JSON of {} bytes holds no samples; {skipped}",
                notes.bytes
            ),
        );
    }
    request
}

/// A problem that does not stop the command, on stderr.
pub fn warn(input: &Input, message: &str) {
    eprintln!("warning: {}: {message}", input.name);
}
