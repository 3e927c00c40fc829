//! What the engine is told: the file receiver's options and the pprof
//! receiver's `file` source both come down to these.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::settings::Problem;

/// Where checkpoints go when the configuration does not say.
pub const DEFAULT_STATE_DIR: &str = "./profbridge-state";

/// The checkpoint of the receiver `id` when the configuration names none:
/// `./profbridge-state/ID.checkpoint.json`, `/` written `%2F`.
pub fn default_checkpoint(id: &str) -> PathBuf {
    PathBuf::from(DEFAULT_STATE_DIR).join(format!("{}.checkpoint.json", id.replace('/', "%2F")))
}

/// A problem for each of `patterns` that is not a glob, at `key[INDEX]`.
pub fn pattern_problems(key: &str, patterns: &[String]) -> Vec<Problem> {
    patterns
        .iter()
        .enumerate()
        .filter_map(|(index, pattern)| {
            let error = glob::Pattern::new(pattern).err()?;
            Some(Problem::new(
                format!("{key}[{index}]"),
                format!("{pattern:?} is not a glob pattern: {error}"),
            ))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct WatchSettings {
    /// Glob patterns of the files to read.
    pub include: Vec<String>,
    /// Glob patterns of files to leave alone, even when included.
    pub exclude: Vec<String>,
    pub poll_interval: Duration,
    /// How long after start the first poll waits.
    pub initial_delay: Duration,
    pub start_at: StartAt,
    pub checkpoint: PathBuf,
    pub after_success: AfterSuccess,
    /// The folder delivered files go to with `after_success: move`.
    pub move_to: Option<PathBuf>,
    /// The folder unreadable files go to; `.failed` beside each file
    /// when `None`.
    pub failed_dir: Option<PathBuf>,
    pub format: InputFormat,
    /// Added to the resource of every profile.
    pub resource_attributes: BTreeMap<String, String>,
    pub service_name_from: ServiceNameFrom,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartAt {
    #[default]
    Beginning,
    /// Files present at the first start are recorded as seen, not read.
    End,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterSuccess {
    #[default]
    Keep,
    Delete,
    Move,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFormat {
    /// Detected from the bytes.
    #[default]
    Auto,
    Pprof,
    Legacy,
    Folded,
    Otlp,
    OtlpJson,
    /// A JFR recording: one profile per kind of event.
    Jfr,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceNameFrom {
    #[default]
    None,
    /// The file name up to its first `.`.
    Filename,
    /// The name of the folder the file is in.
    ParentDir,
}
