//! Where a decoder is in the document: a chain of borrowed steps on the
//! stack, turned into text (`resourceProfiles[0].scopeProfiles[1]`) only
//! when an error names it. The root may carry a record of unknown keys.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;

use super::JsonError;

#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    Root,
    /// The root of a document whose unknown keys are noted in the record.
    NotingRoot(&'a UnknownKeys),
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

    /// The record of unknown keys, when the document keeps one.
    pub(crate) fn unknown_keys(&self) -> Option<&UnknownKeys> {
        match self {
            Path::Root => None,
            Path::NotingRoot(keys) => Some(keys),
            Path::Key(parent, _) | Path::Index(parent, _) => parent.unknown_keys(),
        }
    }

    /// The path with every index written `[]`, so that one unknown key
    /// of many list items is noted once.
    fn write_shape(&self, out: &mut String) {
        match self {
            Path::Root | Path::NotingRoot(_) => {}
            Path::Key(parent, key) => {
                parent.write_shape(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Index(parent, _) => {
                parent.write_shape(out);
                out.push_str("[]");
            }
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root | Path::NotingRoot(_) => Ok(()),
            Path::Key(Path::Root | Path::NotingRoot(_), key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// The keys a decoder skipped because the schema has no such field, each
/// once by its path with indexes left out (`resourceProfiles[].x`).
/// At most [`MAX_UNKNOWN_KEYS`] are kept: a document of millions of
/// unknown keys must not make millions of strings.
#[derive(Debug, Default)]
pub(crate) struct UnknownKeys(RefCell<BTreeSet<String>>);

/// How many distinct unknown keys are noted.
pub const MAX_UNKNOWN_KEYS: usize = 20;

impl UnknownKeys {
    pub(crate) fn note(&self, at: &Path<'_>, key: &str) {
        let mut keys = self.0.borrow_mut();
        if keys.len() >= MAX_UNKNOWN_KEYS {
            return;
        }
        let mut shape = String::new();
        at.key(key).write_shape(&mut shape);
        keys.insert(shape);
    }

    pub(crate) fn into_sorted(self) -> Vec<String> {
        self.0.into_inner().into_iter().collect()
    }
}
