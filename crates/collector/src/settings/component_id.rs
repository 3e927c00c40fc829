//! Component ids: `type` or `type/name`, as keys under `receivers`,
//! `processors` and `exporters` and as entries in pipelines.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

/// `otlp`, `file/archive`: the component's type and an optional name that
/// tells several components of one type apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId {
    pub kind: String,
    pub name: Option<String>,
}

impl ComponentId {
    /// An id without a name, e.g. `otlp`.
    pub fn new(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            name: None,
        }
    }

    /// An id with a name, e.g. `file/archive`.
    pub fn named(kind: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            name: Some(name.into()),
        }
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{}/{name}", self.kind),
            None => f.write_str(&self.kind),
        }
    }
}

/// A text that is not a component id; each names the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentIdError {
    #[error("{0:?} is not a component id: the type must be lowercase letters, digits and _ (like otlp or file/archive)")]
    BadType(String),
    #[error("{0:?} is not a component id: the name after / is empty")]
    EmptyName(String),
    #[error("{0:?} is not a component id: the name after / must not contain /")]
    SlashInName(String),
}

impl FromStr for ComponentId {
    type Err = ComponentIdError;

    fn from_str(text: &str) -> Result<Self, ComponentIdError> {
        let (kind, name) = match text.split_once('/') {
            Some((kind, name)) => (kind, Some(name)),
            None => (text, None),
        };
        let kind_is_valid = !kind.is_empty()
            && kind
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !kind_is_valid {
            return Err(ComponentIdError::BadType(text.to_owned()));
        }
        match name {
            None => Ok(Self::new(kind)),
            Some("") => Err(ComponentIdError::EmptyName(text.to_owned())),
            Some(name) if name.contains('/') => Err(ComponentIdError::SlashInName(text.to_owned())),
            Some(name) => Ok(Self::named(kind, name)),
        }
    }
}

impl<'de> Deserialize<'de> for ComponentId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_print_round_trip() {
        for text in ["otlp", "file/archive", "file/2", "my_type9/with space"] {
            assert_eq!(
                text.parse::<ComponentId>().map(|id| id.to_string()),
                Ok(text.to_owned())
            );
        }
        assert_eq!("file/a".parse(), Ok(ComponentId::named("file", "a")));
    }

    #[test]
    fn bad_ids_say_what_is_wrong() {
        let error = |text: &str| {
            text.parse::<ComponentId>()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error("").contains("the type must be"));
        assert!(error("File").contains("the type must be"));
        assert!(error("/x").contains("the type must be"));
        assert!(error("file/").contains("the name after / is empty"));
        assert!(error("a/b/c").contains("must not contain /"));
    }
}
