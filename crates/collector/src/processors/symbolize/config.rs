use serde::Deserialize;

use crate::settings::units::Duration;
use crate::settings::{Options, Problem};

/// How long one request may spend being symbolized, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// `processors.symbolize`: where ELF files and debug files are read from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SymbolizeProcessorConfig {
    /// Mapping paths are opened under this folder; empty opens none.
    pub root: String,
    /// Folders of separate debug files (build-id trees, debuglink targets).
    pub debug_directories: Vec<String>,
    /// How many files stay open.
    pub cache_files: usize,
    /// How long one request may spend being symbolized; 0 is no limit.
    pub timeout: Duration,
    /// debuginfod servers, asked by build id after the local files.
    pub debuginfod: DebuginfodConfig,
}

/// `processors.symbolize.debuginfod`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebuginfodConfig {
    /// Servers, `http://host:port[/prefix]`, asked in order; empty asks none.
    pub urls: Vec<String>,
    /// How long one request to one server may take.
    pub timeout: Duration,
    /// Where fetched files are kept.
    pub cache_dir: String,
    /// How many bytes `cache_dir` may hold; the oldest files go first.
    pub max_cache_bytes: u64,
    /// How long a file that every server answered 404 for is not asked for again.
    pub miss_ttl: Duration,
}

impl Default for DebuginfodConfig {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            timeout: Duration(profbridge_symbolize::DEFAULT_TIMEOUT),
            cache_dir: String::new(),
            max_cache_bytes: profbridge_symbolize::DEFAULT_MAX_CACHE_BYTES,
            miss_ttl: Duration(profbridge_symbolize::DEFAULT_MISS_TTL),
        }
    }
}

impl Default for SymbolizeProcessorConfig {
    fn default() -> Self {
        Self {
            root: "/".to_owned(),
            debug_directories: Vec::new(),
            cache_files: profbridge_symbolize::DEFAULT_CACHED_FILES,
            timeout: DEFAULT_TIMEOUT,
            debuginfod: DebuginfodConfig::default(),
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
        if !self.root.is_empty() && !self.root.starts_with('/') {
            problems.push(Problem::new(
                "root",
                format!("{:?} is not an absolute path", self.root),
            ));
        }
        for (index, dir) in self.debug_directories.iter().enumerate() {
            if !dir.starts_with('/') {
                problems.push(Problem::new(
                    format!("debug_directories[{index}]"),
                    format!("{dir:?} is not an absolute path"),
                ));
            }
        }
        let debuginfod = &self.debuginfod;
        for (index, url) in debuginfod.urls.iter().enumerate() {
            if !url.starts_with("http://") {
                problems.push(Problem::new(
                    format!("debuginfod.urls[{index}]"),
                    format!("{url:?} is not an http:// URL"),
                ));
            }
        }
        if !debuginfod.urls.is_empty() && !debuginfod.cache_dir.starts_with('/') {
            problems.push(Problem::new(
                "debuginfod.cache_dir",
                format!("{:?} is not an absolute path", debuginfod.cache_dir),
            ));
        }
        if !debuginfod.urls.is_empty() && debuginfod.timeout.0.is_zero() {
            problems.push(Problem::new("debuginfod.timeout", "must be more than 0"));
        }
        if self.root.is_empty() && self.debug_directories.is_empty() && debuginfod.urls.is_empty() {
            problems.push(Problem::new(
                "root",
                "is empty and there are no debug_directories nor debuginfod.urls: nothing to read symbols from",
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
                r#"{"root": "proc/1/root", "debug_directories": ["debug"], "cache_files": 0}"#
            ),
            [
                "cache_files: must be at least 1",
                "root: \"proc/1/root\" is not an absolute path",
                "debug_directories[0]: \"debug\" is not an absolute path",
            ]
        );
        assert_eq!(
            messages(r#"{"root": ""}"#),
            ["root: is empty and there are no debug_directories nor debuginfod.urls: nothing to read symbols from"]
        );
        assert!(messages(r#"{"root": "", "debug_directories": ["/d"]}"#).is_empty());
        assert!(serde_json::from_str::<SymbolizeProcessorConfig>(r#"{"roots": "/"}"#).is_err());
        assert_eq!(
            messages(r#"{"debuginfod": {"urls": ["https://d.example"], "timeout": "0s"}}"#),
            [
                "debuginfod.urls[0]: \"https://d.example\" is not an http:// URL",
                "debuginfod.cache_dir: \"\" is not an absolute path",
                "debuginfod.timeout: must be more than 0",
            ]
        );
        assert!(messages(
            r#"{"root": "", "debuginfod": {"urls": ["http://127.0.0.1:8002"], "cache_dir": "/c"}}"#
        )
        .is_empty());
    }
}
