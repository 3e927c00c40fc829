use profbridge_symbolize::CacheLimits;
use serde::Deserialize;

use crate::settings::units::{ByteSize, Duration};
use crate::settings::{Options, Problem};

/// How long one request may spend being symbolized, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// `processors.symbolize`: where ELF files and debug files are read from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SymbolizeProcessorConfig {
    /// Mapping paths are opened under this folder; empty opens none.
    pub root: String,
    /// A `/proc` folder: a location sampled in a process named by
    /// `process.pid` opens mapping paths under `PROC/PID/root` instead of
    /// `root`; empty uses `root` for every process.
    pub process_roots: String,
    /// Folders of separate debug files (build-id trees, debuglink targets).
    pub debug_directories: Vec<String>,
    /// How many files stay open.
    pub cache_files: usize,
    /// How many bytes the opened files and resolved addresses may take.
    pub cache_max_bytes: ByteSize,
    /// How long one request may spend being symbolized; 0 is no limit.
    pub timeout: Duration,
}

impl Default for SymbolizeProcessorConfig {
    fn default() -> Self {
        Self {
            root: "/".to_owned(),
            process_roots: String::new(),
            debug_directories: Vec::new(),
            cache_files: CacheLimits::default().files,
            cache_max_bytes: ByteSize(CacheLimits::default().bytes),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl SymbolizeProcessorConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.cache_files == 0 {
            problems.push(Problem::new("cache_files", "must be at least 1"));
        }
        if self.cache_max_bytes.0 == 0 {
            problems.push(Problem::new("cache_max_bytes", "must be more than 0"));
        }
        for (key, path) in [("root", &self.root), ("process_roots", &self.process_roots)] {
            if !path.is_empty() && !path.starts_with('/') {
                problems.push(Problem::new(
                    key,
                    format!("{path:?} is not an absolute path"),
                ));
            }
        }
        for (index, dir) in self.debug_directories.iter().enumerate() {
            if !dir.starts_with('/') {
                problems.push(Problem::new(
                    format!("debug_directories[{index}]"),
                    format!("{dir:?} is not an absolute path"),
                ));
            }
        }
        if self.root.is_empty()
            && self.process_roots.is_empty()
            && self.debug_directories.is_empty()
        {
            problems.push(Problem::new(
                "root",
                "is empty and there are no debug_directories: nothing to read symbols from",
            ));
        }
        problems
    }
}

impl Options for SymbolizeProcessorConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(json: &str) -> Vec<String> {
        serde_json::from_str::<SymbolizeProcessorConfig>(json)
            .unwrap()
            .problems()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn the_defaults_read_the_local_machine() {
        let config: SymbolizeProcessorConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, SymbolizeProcessorConfig::default());
        assert_eq!(config.root, "/");
        assert!(config.problems().is_empty());
    }

    #[test]
    fn problems_name_their_key() {
        assert_eq!(
            messages(
                r#"{"root": "proc/1/root", "process_roots": "proc", "debug_directories": ["debug"], "cache_files": 0, "cache_max_bytes": 0}"#
            ),
            [
                "cache_files: must be at least 1",
                "cache_max_bytes: must be more than 0",
                "root: \"proc/1/root\" is not an absolute path",
                "process_roots: \"proc\" is not an absolute path",
                "debug_directories[0]: \"debug\" is not an absolute path",
            ]
        );
        assert_eq!(
            messages(r#"{"root": ""}"#),
            ["root: is empty and there are no debug_directories: nothing to read symbols from"]
        );
        assert!(messages(r#"{"root": "", "debug_directories": ["/d"]}"#).is_empty());
        assert!(serde_json::from_str::<SymbolizeProcessorConfig>(r#"{"roots": "/"}"#).is_err());
    }
}
