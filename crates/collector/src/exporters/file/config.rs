use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig, SendingQueueConfig};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, Problem};

/// What the file exporter writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileFormat {
    /// One .pb.gz per scope group, by the OTLP → pprof mapping.
    #[default]
    Pprof,
    /// One OTLP protobuf request per file.
    Otlp,
    /// OTLP JSON, one request per line.
    OtlpJson,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileExporterConfig {
    /// The directory everything is written under.
    pub path: String,
    pub format: FileFormat,
    /// File names under `path`: `{resource attribute}`, `{profile_type}`,
    /// `{time}`, `{seq}`. Default depends on the format.
    pub path_template: Option<String>,
    /// fsync each file before renaming it into place.
    pub fsync: bool,
    /// gzip level of pprof files: 0 (stored) to 9 (smallest).
    pub gzip_level: u32,
    pub retention: Retention,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for FileExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

impl Default for FileExporterConfig {
    fn default() -> Self {
        Self {
            path: "./profbridge-data".to_owned(),
            format: FileFormat::Pprof,
            path_template: None,
            fsync: false,
            gzip_level: profbridge_pprof::DEFAULT_GZIP_LEVEL,
            retention: Retention::default(),
            // Writers are CPU work: as many as CPUs.
            helper: ExporterHelperConfig {
                sending_queue: SendingQueueConfig {
                    num_consumers: cpu_count(),
                    ..SendingQueueConfig::default()
                },
                ..ExporterHelperConfig::default()
            },
        }
    }
}

/// Converting and compressing is CPU work: more writers than CPUs only
/// hold more requests in memory at once.
fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Optional clean-up of old files; nothing is removed by default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// Keep at most this many files.
    pub max_files: Option<u64>,
    /// Remove files older than this.
    pub max_age: Option<Duration>,
}

impl Options for FileExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.helper]
    }

    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.path.trim().is_empty() {
            problems.push(Problem::new(
                "path",
                "is empty; name the directory to write under",
            ));
        }
        if let Some(template) = &self.path_template {
            if let Err(reason) = super::PathTemplate::parse(template) {
                problems.push(Problem::new("path_template", reason.to_string()));
            }
        }
        if self.gzip_level > 9 {
            problems.push(Problem::new(
                "gzip_level",
                format!("is {}; use 0 (stored) to 9 (smallest)", self.gzip_level),
            ));
        }
        problems
    }
}
