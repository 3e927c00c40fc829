//! The typed configuration: components by id, pipelines, self-telemetry.

use config::Value;
use serde::Deserialize;

use super::component_id::ComponentId;
use super::de::deserialize_at;
use super::problems::Problem;
use crate::exporters::debug::config::DebugExporterConfig;
use crate::exporters::file::config::FileExporterConfig;
use crate::exporters::otlp::config::OtlpExporterConfig;
use crate::exporters::otlp_http::config::OtlpHttpExporterConfig;
use crate::exporters::pyroscope::config::PyroscopeExporterConfig;
use crate::processors::{BatchProcessorConfig, OptionProblem, ResourceProcessorConfig};
use crate::receivers::file::config::FileReceiverConfig;
use crate::receivers::otlp::config::OtlpReceiverConfig;
use crate::receivers::pprof::config::PprofReceiverConfig;
use crate::receivers::pyroscope::config::PyroscopeReceiverConfig;
use crate::telemetry::config::TelemetryConfig;

/// The whole configuration, components in the order the file lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub receivers: Vec<(ComponentId, ReceiverConfig)>,
    pub processors: Vec<(ComponentId, ProcessorConfig)>,
    pub exporters: Vec<(ComponentId, ExporterConfig)>,
    pub service: ServiceConfig,
}

/// `service:`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceConfig {
    /// Keyed `profiles` or `profiles/NAME`.
    pub pipelines: Vec<(String, PipelineConfig)>,
    pub telemetry: TelemetryConfig,
}

/// One pipeline: the receivers that feed it, the processors profiles pass
/// through in order, the exporters that get every profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineConfig {
    pub receivers: Vec<ComponentId>,
    pub processors: Vec<ComponentId>,
    pub exporters: Vec<ComponentId>,
    pub queue: crate::pipeline::config::QueueConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReceiverConfig {
    Otlp(OtlpReceiverConfig),
    /// pprof and legacy profiles POSTed over HTTP.
    Pprof(PprofReceiverConfig),
    /// Pyroscope's `POST /ingest`.
    Pyroscope(PyroscopeReceiverConfig),
    /// Profile files in watched folders.
    File(FileReceiverConfig),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProcessorConfig {
    Batch(BatchProcessorConfig),
    Resource(ResourceProcessorConfig),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExporterConfig {
    File(FileExporterConfig),
    Debug(DebugExporterConfig),
    /// OTLP over gRPC.
    Otlp(OtlpExporterConfig),
    /// OTLP over HTTP.
    OtlpHttp(OtlpHttpExporterConfig),
    /// pprof pushed to Pyroscope's `/ingest`.
    Pyroscope(PyroscopeExporterConfig),
    /// Accepts and drops everything; takes no options.
    Nop,
}

/// A section with no options: `nop:` or `nop: {}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

impl ReceiverConfig {
    /// Every receiver type, as written in component ids.
    pub const TYPES: &'static [&'static str] = &["otlp", "pprof", "pyroscope", "file"];

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Otlp(_) => "otlp",
            Self::Pprof(_) => "pprof",
            Self::Pyroscope(_) => "pyroscope",
            Self::File(_) => "file",
        }
    }

    /// The options of a receiver of type `kind`, found at key `path`.
    pub(crate) fn from_value(kind: &str, value: Value, path: &str) -> Result<Self, Problem> {
        match kind {
            "otlp" => deserialize_at(value, path).map(Self::Otlp),
            "pprof" => deserialize_at(value, path).map(Self::Pprof),
            "pyroscope" => deserialize_at(value, path).map(Self::Pyroscope),
            "file" => deserialize_at(value, path).map(Self::File),
            _ => Err(unknown_type(path, "receiver", kind, Self::TYPES)),
        }
    }
}

impl ProcessorConfig {
    /// Every processor type, as written in component ids.
    pub const TYPES: &'static [&'static str] = &["batch", "resource"];

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Batch(_) => "batch",
            Self::Resource(_) => "resource",
        }
    }

    /// The options of a processor of type `kind`, found at key `path`.
    pub(crate) fn from_value(kind: &str, value: Value, path: &str) -> Result<Self, Problem> {
        match kind {
            "batch" => deserialize_at(value, path).map(Self::Batch),
            "resource" => deserialize_at(value, path).map(Self::Resource),
            _ => Err(unknown_type(path, "processor", kind, Self::TYPES)),
        }
    }

    /// What is wrong with the options, each at its path under the
    /// processor's own key.
    pub fn problems(&self) -> Vec<OptionProblem> {
        match self {
            Self::Batch(batch) => batch.problems(),
            Self::Resource(resource) => resource.problems(),
        }
    }
}

impl ExporterConfig {
    /// Every exporter type, as written in component ids.
    pub const TYPES: &'static [&'static str] =
        &["file", "debug", "nop", "otlp", "otlphttp", "pyroscope"];

    pub fn kind(&self) -> &'static str {
        match self {
            Self::File(_) => "file",
            Self::Debug(_) => "debug",
            Self::Nop => "nop",
            Self::Otlp(_) => "otlp",
            Self::OtlpHttp(_) => "otlphttp",
            Self::Pyroscope(_) => "pyroscope",
        }
    }

    /// The options of an exporter of type `kind`, found at key `path`.
    pub(crate) fn from_value(kind: &str, value: Value, path: &str) -> Result<Self, Problem> {
        match kind {
            "file" => deserialize_at(value, path).map(Self::File),
            "debug" => deserialize_at(value, path).map(Self::Debug),
            "nop" => deserialize_at::<NoOptions>(value, path).map(|_| Self::Nop),
            "otlp" => deserialize_at(value, path).map(Self::Otlp),
            "otlphttp" => deserialize_at(value, path).map(Self::OtlpHttp),
            "pyroscope" => deserialize_at(value, path).map(Self::Pyroscope),
            _ => Err(unknown_type(path, "exporter", kind, Self::TYPES)),
        }
    }
}

fn unknown_type(path: &str, role: &str, kind: &str, known: &[&str]) -> Problem {
    let known = if known.is_empty() {
        "none yet".to_owned()
    } else {
        known.join(", ")
    };
    Problem::new(
        path,
        format!("unknown {role} type {kind:?}; known: {known}"),
    )
}

impl PipelineConfig {
    /// Every component id the pipeline names, with the section it is
    /// defined under.
    pub fn members(&self) -> impl Iterator<Item = (Section, &ComponentId)> {
        let receivers = self.receivers.iter().map(|id| (Section::Receivers, id));
        let processors = self.processors.iter().map(|id| (Section::Processors, id));
        let exporters = self.exporters.iter().map(|id| (Section::Exporters, id));
        receivers.chain(processors).chain(exporters)
    }
}

/// The three component sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Receivers,
    Processors,
    Exporters,
}

impl Section {
    pub const ALL: [Self; 3] = [Self::Receivers, Self::Processors, Self::Exporters];

    /// The top-level key, which is also the pipeline's list key.
    pub fn key(self) -> &'static str {
        match self {
            Self::Receivers => "receivers",
            Self::Processors => "processors",
            Self::Exporters => "exporters",
        }
    }
}

impl Config {
    /// The ids defined under `section`, in file order.
    pub fn ids(&self, section: Section) -> Vec<&ComponentId> {
        match section {
            Section::Receivers => self.receivers.iter().map(|(id, _)| id).collect(),
            Section::Processors => self.processors.iter().map(|(id, _)| id).collect(),
            Section::Exporters => self.exporters.iter().map(|(id, _)| id).collect(),
        }
    }
}
