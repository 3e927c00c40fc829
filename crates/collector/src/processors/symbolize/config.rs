use profbridge_symbolize::CacheLimits;
use serde::Deserialize;

use crate::settings::units::{ByteSize, Duration};
use crate::settings::{Options, Problem};

/// How long one request may spend being symbolized, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Where kernel symbols are read, by default.
pub const DEFAULT_KALLSYMS: &str = "/proc/kallsyms";
pub const DEFAULT_KERNEL_NOTES: &str = "/sys/kernel/notes";

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
    /// The kernel's symbols, for kernel frames; empty leaves them alone.
    pub kallsyms: String,
    /// The running kernel's notes, whose build id a kernel mapping's must
    /// match; empty checks nothing.
    pub kernel_notes: String,
    /// How many files stay open.
    pub cache_files: usize,
    /// How many bytes the opened files and resolved addresses may take.
    pub cache_max_bytes: ByteSize,
    /// How long one request may spend being symbolized; 0 is no limit.
    pub timeout: Duration,
    /// debuginfod servers, asked by build id after the local files.
    pub debuginfod: DebuginfodConfig,
}

/// `processors.symbolize.debuginfod`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebuginfodConfig {
    /// Servers, `http://host:port[/prefix]` or `https://…`, asked in order;
    /// none asks none.
    pub urls: ServerList,
    /// How long one request to one server may take, from resolving its
    /// name to the last byte.
    pub timeout: Duration,
    /// How long resolving a server's name and connecting (TLS included)
    /// may take.
    pub connect_timeout: Duration,
    /// How long a server may stay silent while answering.
    pub read_timeout: Duration,
    /// Where fetched files are kept.
    pub cache_dir: String,
    /// How many bytes `cache_dir` may hold; the oldest files go first.
    pub cache_max_bytes: ByteSize,
    /// How long a file that every server answered 404 for is not asked for again.
    pub miss_ttl: Duration,
}

/// `debuginfod.urls`: a list, or text with URLs separated by spaces as
/// `DEBUGINFOD_URLS` holds them (`urls: ${env:DEBUGINFOD_URLS}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ServerList {
    List(Vec<String>),
    Text(String),
}

impl ServerList {
    /// Every URL, in order, each entry split on spaces.
    pub fn urls(&self) -> Result<Vec<String>, profbridge_symbolize::UnsupportedUrl> {
        match self {
            ServerList::List(entries) => {
                let mut urls = Vec::new();
                for entry in entries {
                    urls.extend(profbridge_symbolize::server_urls(entry)?);
                }
                Ok(urls)
            }
            ServerList::Text(text) => profbridge_symbolize::server_urls(text),
        }
    }

    fn is_empty(&self) -> bool {
        self.urls().is_ok_and(|urls| urls.is_empty())
    }
}

impl Default for DebuginfodConfig {
    fn default() -> Self {
        Self {
            urls: ServerList::List(Vec::new()),
            timeout: Duration(profbridge_symbolize::DEFAULT_TIMEOUT),
            connect_timeout: Duration(profbridge_symbolize::DEFAULT_CONNECT_TIMEOUT),
            read_timeout: Duration(profbridge_symbolize::DEFAULT_READ_TIMEOUT),
            cache_dir: String::new(),
            cache_max_bytes: ByteSize(profbridge_symbolize::DEFAULT_CACHE_MAX_BYTES),
            miss_ttl: Duration(profbridge_symbolize::DEFAULT_MISS_TTL),
        }
    }
}

impl Default for SymbolizeProcessorConfig {
    fn default() -> Self {
        Self {
            root: "/".to_owned(),
            process_roots: String::new(),
            debug_directories: Vec::new(),
            kallsyms: DEFAULT_KALLSYMS.to_owned(),
            kernel_notes: DEFAULT_KERNEL_NOTES.to_owned(),
            cache_files: CacheLimits::default().files,
            cache_max_bytes: ByteSize(CacheLimits::default().bytes),
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
        if self.cache_max_bytes.0 == 0 {
            problems.push(Problem::new("cache_max_bytes", "must be more than 0"));
        }
        let paths = [
            ("root", &self.root),
            ("process_roots", &self.process_roots),
            ("kallsyms", &self.kallsyms),
            ("kernel_notes", &self.kernel_notes),
        ];
        for (key, path) in paths {
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
        let debuginfod = &self.debuginfod;
        if let Err(error) = debuginfod.urls.urls() {
            problems.push(Problem::new("debuginfod.urls", error.to_string()));
        }
        let asks_servers = !debuginfod.urls.is_empty();
        if asks_servers && !debuginfod.cache_dir.starts_with('/') {
            problems.push(Problem::new(
                "debuginfod.cache_dir",
                format!("{:?} is not an absolute path", debuginfod.cache_dir),
            ));
        }
        for (key, timeout) in [
            ("debuginfod.timeout", debuginfod.timeout),
            ("debuginfod.connect_timeout", debuginfod.connect_timeout),
            ("debuginfod.read_timeout", debuginfod.read_timeout),
        ] {
            if asks_servers && timeout.0.is_zero() {
                problems.push(Problem::new(key, "must be more than 0"));
            }
        }
        if asks_servers && debuginfod.cache_max_bytes.0 == 0 {
            problems.push(Problem::new(
                "debuginfod.cache_max_bytes",
                "must be more than 0",
            ));
        }
        if self.root.is_empty()
            && self.process_roots.is_empty()
            && self.debug_directories.is_empty()
            && !asks_servers
            && self.kallsyms.is_empty()
        {
            problems.push(Problem::new(
                "root",
                "is empty and there are no process_roots, debug_directories, debuginfod.urls or kallsyms: nothing to read symbols from",
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
        assert_eq!(config.kallsyms, "/proc/kallsyms");
        assert!(config.problems().is_empty());
    }

    #[test]
    fn problems_name_their_key() {
        assert_eq!(
            messages(
                r#"{"root": "proc/1/root", "process_roots": "proc", "debug_directories": ["debug"], "cache_files": 0, "cache_max_bytes": 0,
                    "kallsyms": "proc/kallsyms"}"#
            ),
            [
                "cache_files: must be at least 1",
                "cache_max_bytes: must be more than 0",
                "root: \"proc/1/root\" is not an absolute path",
                "process_roots: \"proc\" is not an absolute path",
                "kallsyms: \"proc/kallsyms\" is not an absolute path",
                "debug_directories[0]: \"debug\" is not an absolute path",
            ]
        );
        assert_eq!(
            messages(r#"{"root": "", "kallsyms": ""}"#),
            ["root: is empty and there are no process_roots, debug_directories, debuginfod.urls or kallsyms: nothing to read symbols from"]
        );
        assert!(
            messages(r#"{"root": "", "kallsyms": "", "debug_directories": ["/d"]}"#).is_empty()
        );
        assert!(messages(r#"{"root": ""}"#).is_empty());
        assert!(serde_json::from_str::<SymbolizeProcessorConfig>(r#"{"roots": "/"}"#).is_err());
        assert_eq!(
            messages(r#"{"debuginfod": {"urls": ["ftp://d.example"], "cache_dir": "/c"}}"#),
            ["debuginfod.urls: \"ftp://d.example\" is not an http:// or https:// URL with a host"]
        );
        assert_eq!(
            messages(
                r#"{"debuginfod": {"urls": "https://d.example http://127.0.0.1:8002", "read_timeout": "0s"}}"#
            ),
            [
                "debuginfod.cache_dir: \"\" is not an absolute path",
                "debuginfod.read_timeout: must be more than 0",
            ]
        );
        assert!(messages(
            r#"{"root": "", "debuginfod": {"urls": ["http://127.0.0.1:8002"], "cache_dir": "/c"}}"#
        )
        .is_empty());
        let spaced: SymbolizeProcessorConfig = serde_json::from_str(
            r#"{"debuginfod": {"urls": " https://a.example  http://b:8002 "}}"#,
        )
        .unwrap();
        assert_eq!(
            spaced.debuginfod.urls.urls().unwrap(),
            ["https://a.example", "http://b:8002"]
        );
    }
}
