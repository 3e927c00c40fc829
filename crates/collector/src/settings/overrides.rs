//! Environment overrides: `PROFBRIDGE__SERVICE__TELEMETRY__LOGS__LEVEL=debug`
//! sets `service.telemetry.logs.level` to `debug`, whatever the file says.
//!
//! The name after the prefix is the key path with `__` between levels,
//! lowercased; single `_` stays part of a key (`MAX_AGE` is `max_age`). The
//! value is text, taken as it is (no `${env:…}` expansion) and converted to
//! the option's type; a list is comma-separated. Sections on the way are
//! created when missing, so an override can add a component.

use std::collections::BTreeMap;

use config::{Map, Value, ValueKind};

use super::problems::Problem;

/// The prefix that marks an environment variable as an override.
pub const ENV_PREFIX: &str = "PROFBRIDGE__";

/// Applies every override in `vars` to `root`, in name order.
pub(crate) fn apply_overrides(
    root: &mut Map<String, Value>,
    vars: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    for (name, value) in vars {
        let Some(key_path) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let keys: Vec<String> = key_path.split("__").map(str::to_ascii_lowercase).collect();
        if keys.iter().any(String::is_empty) {
            problems.push(Problem::new(
                name.as_str(),
                "an override needs a key between every two __, like PROFBRIDGE__EXPORTERS__FILE__PATH",
            ));
            continue;
        }
        let origin = name.clone();
        let override_value = Value::new(Some(&origin), ValueKind::String(value.clone()));
        if let Err(error) = set(root, &keys, override_value) {
            problems.push(Problem::new(name.as_str(), error.to_string()));
        }
    }
}

/// An override whose key path goes through a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} holds a value, not a section, so it has no key {key:?}")]
struct NotASection {
    path: String,
    key: String,
}

/// Sets `keys` (a path of at least one key) under `table` to `value`.
fn set(table: &mut Map<String, Value>, keys: &[String], value: Value) -> Result<(), NotASection> {
    let Some((last, sections)) = keys.split_last() else {
        return Ok(());
    };
    let mut current = table;
    for (depth, key) in sections.iter().enumerate() {
        let child = current
            .entry(key.clone())
            .or_insert_with(|| Value::new(None, ValueKind::Nil));
        if matches!(child.kind, ValueKind::Nil) {
            child.kind = ValueKind::Table(Map::new());
        }
        current = match &mut child.kind {
            ValueKind::Table(inner) => inner,
            _ => {
                return Err(NotASection {
                    path: keys.get(..=depth).unwrap_or_default().join("."),
                    key: keys.get(depth + 1).cloned().unwrap_or_default(),
                });
            }
        };
    }
    current.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn text_at(root: &Map<String, Value>, keys: &[&str]) -> Option<String> {
        let (last, sections) = keys.split_last()?;
        let mut table = root;
        for key in sections {
            match &table.get(*key)?.kind {
                ValueKind::Table(inner) => table = inner,
                _ => return None,
            }
        }
        match &table.get(*last)?.kind {
            ValueKind::String(text) => Some(text.clone()),
            _ => None,
        }
    }

    #[test]
    fn overrides_create_sections_and_replace_values() {
        let mut root = Map::new();
        let mut problems = Vec::new();
        let env = vars(&[
            ("PROFBRIDGE__SERVICE__TELEMETRY__LOGS__LEVEL", "debug"),
            ("PROFBRIDGE__EXPORTERS__FILE__RETENTION__MAX_AGE", "1h"),
            ("PROFBRIDGE_DATA", "not an override"),
            ("HOME", "/root"),
        ]);
        apply_overrides(&mut root, &env, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            text_at(&root, &["service", "telemetry", "logs", "level"]).as_deref(),
            Some("debug")
        );
        assert_eq!(
            text_at(&root, &["exporters", "file", "retention", "max_age"]).as_deref(),
            Some("1h")
        );
        assert_eq!(root.len(), 2);
    }

    #[test]
    fn overrides_below_a_value_or_with_empty_keys_are_problems() {
        let mut root = Map::new();
        let mut problems = Vec::new();
        let env = vars(&[
            ("PROFBRIDGE__EXPORTERS__FILE__PATH", "/data"),
            ("PROFBRIDGE__EXPORTERS__FILE__PATH__X", "1"),
            ("PROFBRIDGE__EXPORTERS____PATH", "1"),
        ]);
        apply_overrides(&mut root, &env, &mut problems);
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "PROFBRIDGE__EXPORTERS__FILE__PATH__X: exporters.file.path holds a value, not a section, so it has no key \"x\"",
                "PROFBRIDGE__EXPORTERS____PATH: an override needs a key between every two __, like PROFBRIDGE__EXPORTERS__FILE__PATH",
            ]
        );
    }
}
