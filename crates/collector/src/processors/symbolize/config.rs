use serde::Deserialize;

use crate::settings::{Options, Problem};

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
}

impl Default for SymbolizeProcessorConfig {
    fn default() -> Self {
        Self {
            root: "/".to_owned(),
            debug_directories: Vec::new(),
            cache_files: profbridge_symbolize::DEFAULT_CACHED_FILES,
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
        if self.root.is_empty() && self.debug_directories.is_empty() {
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
