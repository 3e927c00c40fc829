//! The settings components embed, as the configuration handles them:
//! [`Embedded`] settings (a listener's, a client's, the exporter
//! helper's), each a struct whose keys sit beside the embedding
//! component's own, and [`NestedSection`]s below a component's own keys
//! that embed settings in turn. [`super::embed`] parses them.

use std::collections::BTreeSet;

use config::{Value, ValueKind};
use serde::de::DeserializeOwned;

use super::de::deserialize_at;
use super::key_paths::{key_paths, keys_of, KeyPathsError};
use super::problems::Problem;

/// Settings embedded in components' options.
pub trait Embedded: DeserializeOwned + Send + Sync + 'static {
    /// Gives each key the file did not write its value in `defaults`, the
    /// embedding component's default; usually written with
    /// [`keep_unwritten!`](crate::keep_unwritten).
    fn keep_unwritten(&mut self, defaults: Self, written: &Written);
}

/// The keys a section wrote.
#[derive(Debug, Default)]
pub struct Written(BTreeSet<String>);

impl Written {
    pub fn has(&self, key: &str) -> bool {
        self.0.contains(key)
    }
}

/// [`Embedded`] settings as the parser handles them, whatever their type.
pub trait EmbeddedPart {
    /// The keys it takes.
    fn keys(&self) -> Vec<&'static str>;

    /// Every key path it takes, nested sections included.
    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError>;

    /// Parses the keys of `section` (all its own) over the current values.
    fn fill(&mut self, section: Value, path: &str) -> Result<(), Problem>;
}

impl<T: Embedded> EmbeddedPart for T {
    fn keys(&self) -> Vec<&'static str> {
        keys_of::<T>()
    }

    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError> {
        key_paths::<T>()
    }

    fn fill(&mut self, section: Value, path: &str) -> Result<(), Problem> {
        let written = match &section.kind {
            ValueKind::Table(table) => Written(table.keys().cloned().collect()),
            _ => Written::default(),
        };
        let parsed: T = deserialize_at(section, path)?;
        let defaults = std::mem::replace(self, parsed);
        self.keep_unwritten(defaults, &written);
        Ok(())
    }
}

/// A section below options `T` whose own options embed settings: where it
/// is, and how it is parsed (by [`super::embed`], as its component is)
/// into its place in `T`.
pub struct NestedSection<T> {
    /// Its key path below `T`, like `["protocols", "http"]`.
    pub path: &'static [&'static str],
    pub fill: fn(&mut T, Value, &str) -> Result<(), Problem>,
    /// Its options' key paths, below `path`.
    pub key_paths: fn() -> Result<BTreeSet<String>, KeyPathsError>,
}
