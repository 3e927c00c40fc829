//! What is wrong with a configuration, each problem tied to its key path.

use std::fmt;

/// One problem (or warning) at a key path such as
/// `exporters.file.retention.max_age`; the path is empty for problems with
/// the file as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every problem found in a configuration (at least one), and the warnings
/// found on the way. Displays one problem per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    pub problems: Vec<Problem>,
    pub warnings: Vec<Problem>,
}

impl ConfigErrors {
    /// A configuration that could not be read at all.
    pub fn single(problem: Problem) -> Self {
        Self {
            problems: vec![problem],
            warnings: Vec::new(),
        }
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Joins key path segments: `join("exporters", "file")` is
/// `exporters.file`; an empty segment adds nothing.
pub(crate) fn join(parent: &str, key: &str) -> String {
    match (parent.is_empty(), key.is_empty()) {
        (true, _) => key.to_owned(),
        (_, true) => parent.to_owned(),
        _ => format!("{parent}.{key}"),
    }
}
