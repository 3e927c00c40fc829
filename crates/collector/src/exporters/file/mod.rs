//! The file exporter: pprof, OTLP protobuf or OTLP JSON lines under a
//! directory, named by a path template.
//!
//! - `pprof`: one gzipped `.pb.gz` per pprof that `otlp_to_pprof` gives
//!   (one per scope, more when a scope's profiles disagree on time or
//!   period), with default options: resource attributes name the file but
//!   are not copied into it.
//! - `otlp`: the whole request as protobuf, one request per file.
//! - `otlp_json`: OTLP/JSON, one request per line, appended to the file the
//!   template names; appends are serialized, so lines never interleave.
//!
//! Names come from the template (see [`template`]) with `{profile_type}`,
//! `{time}`, `{seq}` and any resource attribute. For `otlp` and
//! `otlp_json` a request may hold several resources; the first one, and
//! the first profile's sample type, name the file. `{seq}` counts files
//! (each pprof, each request), from 0, in this exporter. Empty requests
//! write nothing.
//!
//! Whole files are written to a hidden temporary file beside their final
//! name, fsynced when `fsync` is set, then renamed; `otlp_json` lines are
//! appended in one write (and fsynced when `fsync` is set) and cut back if
//! the write fails. An export that fails halfway may have written some of
//! its files; a retry writes them again under new `{seq}` numbers.

pub mod config;
mod factory;
mod recover;
mod retention;
mod sanitize;
mod scratch;
mod template;
mod write;

pub use factory::FileExporterFactory;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use profbridge_translate::json::request_to_json_string;
use profbridge_translate::otlp::KeyValue;
use profbridge_translate::{OtlpToPprof, UnassembledPprof};

pub use crate::shared::timestamp::utc_timestamp;
use config::{FileExporterConfig, FileFormat};
use retention::RetentionSweeper;
pub use retention::SWEEP_EVERY_EXPORTS;
use scratch::{Scratch, ScratchPool};
pub use template::PathTemplate;
use write::FileWriter;

use super::attributes::{self, attribute_text};
use super::to_pprof::batch_to_pprofs;
use super::{ExportCause, ExportError};
use crate::pipeline::Profiles;

/// What `{profile_type}` becomes for OTLP output without a sample type.
const NO_PROFILE_TYPE: &str = "profiles";

/// What one export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Every file written or appended to, in order.
    pub files: Vec<PathBuf>,
    /// pprof profiles written (`pprof`), or OTLP profiles in the request
    /// (`otlp`, `otlp_json`).
    pub profiles: usize,
}

/// Writes batches under a directory. Safe to share between threads.
#[derive(Debug)]
pub struct FileExporter {
    root: PathBuf,
    format: FileFormat,
    /// gzip state and buffers for pprof files.
    scratch: ScratchPool,
    template: PathTemplate,
    writer: FileWriter,
    sequence: AtomicU64,
    /// Held while appending, so that lines never interleave.
    append_lock: Mutex<()>,
    retention: RetentionSweeper,
}

/// The values a template's placeholders take for one file.
struct TemplateValues<'a> {
    resource_attributes: &'a [KeyValue],
    profile_type: &'a str,
    time: &'a str,
    seq: u64,
}

impl TemplateValues<'_> {
    /// The reserved names come first; anything else is a resource attribute.
    fn lookup(&self, name: &str) -> Option<String> {
        match name {
            "profile_type" => Some(self.profile_type.to_owned()),
            "time" => Some(self.time.to_owned()),
            "seq" => Some(format!("{:06}", self.seq)),
            key => attribute_text(self.resource_attributes, key),
        }
    }
}

impl FileExporter {
    /// Checks the template and creates the directory.
    pub fn new(config: &FileExporterConfig) -> Result<Self, ExportError> {
        if config.path.is_empty() {
            return Err(unusable(PathError::Empty));
        }
        let template_text = config
            .path_template
            .as_deref()
            .unwrap_or_else(|| default_template(config.format));
        let template = PathTemplate::parse(template_text).map_err(unusable)?;
        let root = std::fs::create_dir_all(&config.path)
            .and_then(|()| std::fs::canonicalize(&config.path))
            .map_err(|error| io_error("creating", Path::new(&config.path), error))?;
        match recover::recover(&root, config.format == FileFormat::OtlpJson) {
            Ok(recovered) if recovered != recover::Recovered::default() => {
                tracing::warn!(
                    path = %root.display(),
                    temp_files_removed = recovered.temp_files_removed,
                    cut_lines_removed = recovered.lines_cut,
                    "file exporter cleaned up after an earlier crash"
                );
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(path = %root.display(), %error, "file exporter could not look for what a crash left");
            }
        }
        Ok(Self {
            writer: FileWriter::new(config.fsync),
            retention: RetentionSweeper::new(&root, &config.retention),
            root,
            format: config.format,
            scratch: ScratchPool::new(config.gzip_level.min(9)),
            template,
            sequence: AtomicU64::new(0),
            append_lock: Mutex::new(()),
        })
    }

    /// The directory everything is written under (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes one batch; blocks on file IO. IO failures are retryable,
    /// requests that cannot be converted are not.
    pub fn export(&self, batch: &Profiles) -> Result<ExportReport, ExportError> {
        let report = match self.format {
            FileFormat::Pprof => self.export_pprof(batch)?,
            FileFormat::Otlp => self.export_otlp(batch)?,
            FileFormat::OtlpJson => self.export_otlp_json(batch)?,
        };
        self.retention.after_export();
        Ok(report)
    }

    /// Applies the retention policy now instead of at the next sweep;
    /// returns how many files were removed.
    pub fn enforce_retention(&self) -> Result<usize, ExportError> {
        self.retention
            .sweep()
            .map_err(|error| io_error("applying retention under", &self.root, error))
    }

    fn export_pprof(&self, batch: &Profiles) -> Result<ExportReport, ExportError> {
        let mut scratch = self.scratch.take();
        let converted = match batch_to_pprofs(&mut scratch.converter, batch, "file") {
            Ok(converted) => converted,
            Err(error) => {
                self.scratch.give_back(scratch);
                return Err(error);
            }
        };
        let written = self.write_pprofs(batch, &converted, &mut scratch);
        scratch.converter.recycle(converted);
        // A compressor that failed halfway is not used again.
        if written.is_ok() {
            self.scratch.give_back(scratch);
        }
        written
    }

    fn write_pprofs(
        &self,
        batch: &Profiles,
        converted: &OtlpToPprof<UnassembledPprof>,
        scratch: &mut Scratch,
    ) -> Result<ExportReport, ExportError> {
        let time = utc_timestamp(batch.received_at);
        let mut files = Vec::with_capacity(converted.profiles.len());
        for output in &converted.profiles {
            let profile_type =
                attributes::pprof_sample_type(&output.profile.head).unwrap_or_default();
            let path = self.path_for(&TemplateValues {
                resource_attributes: &output.resource_attributes,
                profile_type: &profile_type,
                time: &time,
                seq: self.next_seq(),
            })?;
            scratch
                .converter
                .encode_into(&output.profile, &mut scratch.encoded);
            scratch
                .compressor
                .compress_into(&scratch.encoded, &mut scratch.gzipped)
                .map_err(|error| io_error("compressing", &path, error))?;
            self.writer
                .write_atomically(&path, &scratch.gzipped)
                .map_err(|error| io_error("writing", &path, error))?;
            files.push(path);
        }
        Ok(ExportReport {
            profiles: files.len(),
            files,
        })
    }

    fn export_otlp(&self, batch: &Profiles) -> Result<ExportReport, ExportError> {
        let Some(path) = self.request_path(batch)? else {
            return Ok(ExportReport::default());
        };
        self.writer
            .write_atomically(&path, &batch.protobuf())
            .map_err(|error| io_error("writing", &path, error))?;
        Ok(ExportReport {
            files: vec![path],
            profiles: batch.profile_count(),
        })
    }

    fn export_otlp_json(&self, batch: &Profiles) -> Result<ExportReport, ExportError> {
        let Some(path) = self.request_path(batch)? else {
            return Ok(ExportReport::default());
        };
        let line = request_to_json_string(batch.request());
        {
            let _appending = self
                .append_lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.writer
                .append_line(&path, line.as_bytes())
                .map_err(|error| io_error("appending to", &path, error))?;
        }
        Ok(ExportReport {
            files: vec![path],
            profiles: batch.profile_count(),
        })
    }

    /// The file for a whole request, or `None` when it has no profiles.
    fn request_path(&self, batch: &Profiles) -> Result<Option<PathBuf>, ExportError> {
        if batch.profile_count() == 0 {
            return Ok(None);
        }
        let profile_type = attributes::first_sample_type(batch.request())
            .unwrap_or_else(|| NO_PROFILE_TYPE.to_owned());
        let resource_attributes = attributes::first_resource_attributes(batch.request());
        self.path_for(&TemplateValues {
            resource_attributes: &resource_attributes,
            profile_type: &profile_type,
            time: &utc_timestamp(batch.received_at),
            seq: self.next_seq(),
        })
        .map(Some)
    }

    fn next_seq(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::Relaxed)
    }

    /// The expanded template under the root, checked to stay there.
    fn path_for(&self, values: &TemplateValues<'_>) -> Result<PathBuf, ExportError> {
        let relative = self.template.expand(|name| values.lookup(name));
        let path = self.root.join(&relative);
        let only_names = relative
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
        if only_names && path.starts_with(&self.root) && path != self.root {
            Ok(path)
        } else {
            Err(unusable(PathError::LeavesRoot {
                relative,
                root: self.root.clone(),
            }))
        }
    }
}

/// The template used when the configuration gives none.
pub fn default_template(format: FileFormat) -> &'static str {
    match format {
        FileFormat::Pprof => "{service.name}/{profile_type}/{time}-{seq}.pb.gz",
        FileFormat::Otlp => "{service.name}/{time}-{seq}.otlp.pb",
        FileFormat::OtlpJson => "{service.name}/profiles.jsonl",
    }
}

/// Why the file exporter cannot write where it was asked to.
#[derive(Debug, thiserror::Error)]
enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("{} would leave {}", .relative.display(), .root.display())]
    LeavesRoot { relative: PathBuf, root: PathBuf },
}

fn unusable(error: impl std::error::Error + Send + Sync + 'static) -> ExportError {
    ExportError::Permanent(ExportCause::exporter("file", error))
}

fn io_error(action: &'static str, path: &Path, error: std::io::Error) -> ExportError {
    ExportError::retryable(ExportCause::Io {
        action,
        path: path.to_owned(),
        error,
    })
}
