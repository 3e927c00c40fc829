//! Where a decoder is in the document: a chain of borrowed steps on the
//! stack, turned into text (`resourceProfiles[0].scopeProfiles[1]`) only
//! when an error names it.

use std::fmt;

use super::JsonError;

#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    pub(crate) fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path::Key(self, key)
    }

    pub(crate) fn index(&self, index: usize) -> Path<'_> {
        Path::Index(self, index)
    }

    pub(crate) fn error(&self, problem: impl Into<String>) -> JsonError {
        JsonError::Invalid {
            path: self.to_string(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}
