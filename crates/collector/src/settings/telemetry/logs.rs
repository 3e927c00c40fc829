//! `service: telemetry: logs:` with the Collector's (zap's) keys.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::super::units::Duration;
use super::super::Problem;

/// The levels accepted, zap's first, then `trace`; zap's `dpanic`, `panic`
/// and `fatal` log at `error`.
const LEVELS: [&str; 8] = [
    "debug", "info", "warn", "error", "dpanic", "panic", "fatal", "trace",
];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogEncoding {
    /// For people: the Collector's `console`; `text` is the older
    /// profbridge spelling.
    #[default]
    Console,
    /// One JSON object per line.
    Json,
}

impl<'de> Deserialize<'de> for LogEncoding {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "console" | "text" => Ok(Self::Console),
            "json" => Ok(Self::Json),
            _ => Err(serde::de::Error::custom(format!(
                "unknown encoding {text:?}; expected console (or text) or json"
            ))),
        }
    }
}

/// A value of `initial_fields`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    Bool(bool),
    Integer(i64),
    Float(f64),
    Text(String),
}

/// zap's sampling: per message and level, the first `initial` lines of
/// each `tick`, then every `thereafter`-th (none when 0).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SamplingConfig {
    pub enabled: bool,
    pub tick: Duration,
    pub initial: u64,
    pub thereafter: u64,
}

impl Default for SamplingConfig {
    /// The Collector's values; `enabled` once the section is written.
    fn default() -> Self {
        Self {
            enabled: true,
            tick: Duration::from_secs(10),
            initial: 10,
            thereafter: 100,
        }
    }
}

/// Where log lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogOutput {
    Stderr,
    Stdout,
    /// Appended to, created if missing.
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogsConfig {
    /// debug, info, warn, error (zap's dpanic, panic and fatal mean
    /// error), or trace.
    pub level: String,
    pub encoding: LogEncoding,
    /// Added to every log line.
    pub initial_fields: BTreeMap<String, FieldValue>,
    /// zap's development mode: only `false` is supported.
    pub development: bool,
    /// Leaves out where each line was logged (the module).
    pub disable_caller: bool,
    /// profbridge logs no stack traces: accepted, changes nothing.
    pub disable_stacktrace: bool,
    /// Off unless written.
    pub sampling: Option<SamplingConfig>,
    pub output_paths: Vec<String>,
    /// zap's own errors; profbridge's logger has none to report.
    pub error_output_paths: Vec<String>,
    pub processors: Option<IgnoredAny>,
}

impl Default for LogsConfig {
    fn default() -> Self {
        Self {
            level: "info".to_owned(),
            encoding: LogEncoding::Console,
            initial_fields: BTreeMap::new(),
            development: false,
            disable_caller: false,
            disable_stacktrace: false,
            sampling: None,
            output_paths: vec!["stderr".to_owned()],
            error_output_paths: vec!["stderr".to_owned()],
            processors: None,
        }
    }
}

impl LogsConfig {
    /// The level as a `tracing` filter directive.
    pub fn filter_level(&self) -> &'static str {
        match self.level.to_ascii_lowercase().as_str() {
            "trace" => "trace",
            "debug" => "debug",
            "warn" => "warn",
            "error" | "dpanic" | "panic" | "fatal" => "error",
            _ => "info",
        }
    }

    /// The sampling to apply, if any.
    pub fn sampling(&self) -> Option<&SamplingConfig> {
        self.sampling.as_ref().filter(|sampling| sampling.enabled)
    }

    /// Where lines go: the one entry of `output_paths`.
    pub fn output(&self) -> LogOutput {
        match self.output_paths.first().map(String::as_str) {
            None | Some("stderr") => LogOutput::Stderr,
            Some("stdout") => LogOutput::Stdout,
            Some(path) => {
                LogOutput::File(PathBuf::from(path.strip_prefix("file://").unwrap_or(path)))
            }
        }
    }

    /// Every problem, with paths from `logs`.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if !LEVELS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(&self.level))
        {
            problems.push(Problem::new(
                "level",
                format!(
                    "unknown level {:?}; expected one of {}",
                    self.level,
                    LEVELS.join(", ")
                ),
            ));
        }
        if self.development {
            problems.push(Problem::new(
                "development",
                "only false is supported: profbridge has no development logging mode",
            ));
        }
        if self.output_paths.len() != 1 {
            problems.push(Problem::new(
                "output_paths",
                "must name exactly one output: stderr, stdout or a file path",
            ));
        }
        if let Some(path) = self.output_paths.first() {
            if path.starts_with("file://") && !path.starts_with("file:///") {
                problems.push(Problem::new(
                    "output_paths[0]",
                    format!("{path:?}: a file:// URL needs an absolute path (file:///var/log/x)"),
                ));
            }
        }
        if let Some(sampling) = self.sampling() {
            if sampling.tick.0.is_zero() {
                problems.push(Problem::new("sampling.tick", "must be more than 0"));
            }
        }
        if self.processors.is_some() {
            problems.push(Problem::new(
                "processors",
                "not supported: profbridge writes its logs to output_paths only; it does \
                 not export them over OTLP",
            ));
        }
        problems
    }
}
