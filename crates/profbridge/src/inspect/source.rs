//! The pprof profiles an input holds: itself, or for OTLP one per scope.

use anyhow::{Context, Result};

use profbridge_jfr::ProfileKind;
use profbridge_pprof::{Detected, Format, Profile, RawStrings};
use profbridge_translate::otlp::{any_value, KeyValue};
use profbridge_translate::{otlp_to_pprof, PprofOutput, ToPprofOptions};

use crate::input::{folded_sample_type, load_detected, Input, InputFormat, Loaded};

/// Where in an OTLP request a pprof came from.
#[derive(Debug, Clone)]
pub struct OtlpOrigin {
    pub resource: usize,
    pub scope: usize,
    pub scope_name: String,
    pub scope_version: String,
    pub service_name: Option<String>,
}

impl std::fmt::Display for OtlpOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "resource {}, scope {}", self.resource, self.scope)?;
        if !self.scope_name.is_empty() {
            write!(f, " ({}", self.scope_name)?;
            if !self.scope_version.is_empty() {
                write!(f, " {}", self.scope_version)?;
            }
            f.write_str(")")?;
        }
        if let Some(service) = &self.service_name {
            write!(f, ", service.name={service}")?;
        }
        Ok(())
    }
}

/// Which of an input's profiles one is, for inputs that hold several.
#[derive(Debug, Clone)]
pub enum Origin {
    Otlp(OtlpOrigin),
    /// The profile of one kind of event in a JFR recording.
    Jfr(ProfileKind),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Otlp(origin) => origin.fmt(f),
            Self::Jfr(kind) => write!(f, "JFR {} (Pyroscope's {})", kind.name(), kind.metric()),
        }
    }
}

pub struct InspectedProfile {
    /// `None` for inputs that are pprof-family formats themselves.
    pub origin: Option<Origin>,
    pub profile: Profile,
    /// The original bytes of its strings that were not UTF-8.
    pub raw: RawStrings,
}

pub struct Source {
    /// The input's name for messages: its path, or `<stdin>`.
    pub name: String,
    /// Its format, e.g. `pprof (gzipped)`.
    pub format: String,
    pub profiles: Vec<InspectedProfile>,
    /// OTLP profiles the conversion rejected, each with its reason.
    pub rejected: Vec<String>,
}

/// Reads and parses the input; errors name it.
pub fn read_source(path: &std::path::Path, from: InputFormat) -> Result<Source> {
    let input = Input::read(path)?;
    let name = input.name.clone();
    let (loaded, detected) =
        load_detected(&input, from, &folded_sample_type(None)).with_context(|| name.clone())?;
    let format = format_name(detected, from);
    let (profiles, rejected) = match loaded {
        Loaded::Pprof(profile, raw) => (
            vec![InspectedProfile {
                origin: None,
                profile: profile.into_profile(),
                raw,
            }],
            Vec::new(),
        ),
        Loaded::Jfr(converted) => (
            converted
                .profiles
                .into_iter()
                .map(|jfr| InspectedProfile {
                    origin: Some(Origin::Jfr(jfr.kind)),
                    profile: jfr.profile,
                    raw: RawStrings::default(),
                })
                .collect(),
            Vec::new(),
        ),
        Loaded::Otlp(request) => {
            let converted = otlp_to_pprof(&request, &ToPprofOptions::default())
                .with_context(|| name.clone())?;
            let rejected = converted
                .rejected
                .iter()
                .map(|(_, error)| error.to_string())
                .collect();
            (
                converted.profiles.into_iter().map(inspected).collect(),
                rejected,
            )
        }
    };
    Ok(Source {
        name,
        format,
        profiles,
        rejected,
    })
}

fn inspected(output: PprofOutput) -> InspectedProfile {
    let scope = output.instrumentation_scope.as_ref();
    let origin = OtlpOrigin {
        resource: output.resource,
        scope: output.scope,
        scope_name: scope.map(|s| s.name.clone()).unwrap_or_default(),
        scope_version: scope.map(|s| s.version.clone()).unwrap_or_default(),
        service_name: string_attribute(&output.resource_attributes, "service.name"),
    };
    InspectedProfile {
        origin: Some(Origin::Otlp(origin)),
        profile: output.profile,
        raw: RawStrings::default(),
    }
}

fn string_attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(text) => Some(text.clone()),
            _ => None,
        }
    })
}

/// The detected format's name, or the one `--from` forces when detection
/// disagrees or fails.
fn format_name(detected: Option<Detected>, from: InputFormat) -> String {
    let agrees = |format: Format| match from {
        InputFormat::Auto => true,
        InputFormat::Pprof => format == Format::Pprof,
        InputFormat::Legacy => matches!(format, Format::Legacy(_)),
        InputFormat::Folded => format == Format::Folded,
        InputFormat::Otlp => format == Format::OtlpProtobuf,
        InputFormat::OtlpJson => format == Format::OtlpJson,
        InputFormat::Jfr => format == Format::Jfr,
    };
    match detected.filter(|detected| agrees(detected.format)) {
        Some(detected) if detected.gzipped => format!("{} (gzipped)", detected.format),
        Some(detected) => detected.format.to_string(),
        None => match from {
            InputFormat::Auto => "unknown",
            InputFormat::Pprof => "pprof",
            InputFormat::Legacy => "legacy",
            InputFormat::Folded => "folded stacks",
            InputFormat::Otlp => "OTLP protobuf",
            InputFormat::OtlpJson => "OTLP JSON",
            InputFormat::Jfr => "JFR",
        }
        .to_owned(),
    }
}
