//! Settings that several components embed, with their keys beside the
//! component's own (what the OpenTelemetry Collector does with
//! `mapstructure:",squash"`): a listener's, a client's, the exporter
//! helper's. Each such struct is declared, defaulted, checked and listed
//! once, and embedded by any number of components.
//!
//! serde's `flatten` does not combine with `deny_unknown_fields` (and would
//! bypass this parser's lenient values and key paths), so the parser splits
//! a component's section itself: the keys of each embedded part go to that
//! part, the rest to the component's own struct, and a key that none takes
//! is refused with every key listed.

use std::collections::BTreeSet;

use config::{Map, Value, ValueKind};
use serde::de::DeserializeOwned;

use super::de::deserialize_at;
use super::key_paths::{key_paths, keys_of, KeyPathsError};
use super::options::Options;
use super::problems::{join, Problem};

/// Every key path of options `T`: its own, then each embedded part's,
/// whose keys sit beside its own.
pub fn options_key_paths<T: Options + DeserializeOwned + Default>(
) -> Result<BTreeSet<String>, KeyPathsError> {
    let mut paths = key_paths::<T>()?;
    for part in T::default().embedded() {
        paths.extend(part.key_paths()?);
    }
    for section in T::nested_sections() {
        let prefix = section.path.join(".");
        paths.insert(prefix.clone());
        for path in (section.key_paths)()? {
            paths.insert(format!("{prefix}.{path}"));
        }
    }
    Ok(paths)
}

/// Deserializes options `T` found at key path `path`: each embedded part's
/// keys into that part (over the component's defaults), the others into
/// `T`, and each of its nested sections the same way.
pub(crate) fn deserialize_embedding<T: Options + DeserializeOwned + Default>(
    mut value: Value,
    path: &str,
) -> Result<T, Problem> {
    let mut nested = Vec::new();
    for section in T::nested_sections() {
        if let Some(found) = take_section(&mut value, section.path) {
            nested.push((section, found));
        }
    }
    let mut options: T = deserialize_own_and_embedded(value, path)?;
    for (section, found) in nested {
        let section_path = section
            .path
            .iter()
            .fold(path.to_owned(), |parent, key| join(&parent, key));
        (section.fill)(&mut options, found, &section_path)?;
    }
    Ok(options)
}

/// Takes the value at `path` out of `value`'s tables, leaving an empty
/// section in its place so that the options still see it present.
fn take_section(value: &mut Value, path: &[&str]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut table = match &mut value.kind {
        ValueKind::Table(table) => table,
        _ => return None,
    };
    for key in parents {
        table = match &mut table.get_mut(*key)?.kind {
            ValueKind::Table(inner) => inner,
            _ => return None,
        };
    }
    let found = table.get_mut(*last)?;
    let origin = found.origin().map(str::to_owned);
    Some(std::mem::replace(
        found,
        Value::new(origin.as_ref(), ValueKind::Table(Map::new())),
    ))
}

fn deserialize_own_and_embedded<T: Options + DeserializeOwned + Default>(
    value: Value,
    path: &str,
) -> Result<T, Problem> {
    let origin = value.origin().map(str::to_owned);
    let table = match value.kind {
        ValueKind::Table(table) => table,
        ValueKind::Nil => Map::new(),
        other => return deserialize_at(Value::new(origin.as_ref(), other), path),
    };
    let own_keys = keys_of::<T>();
    let mut defaults = T::default();
    let part_keys: Vec<Vec<&'static str>> =
        defaults.embedded().iter().map(|part| part.keys()).collect();
    let mut own = Map::new();
    let mut parts: Vec<Map<String, Value>> = vec![Map::new(); part_keys.len()];
    for (key, value) in table {
        if own_keys.contains(&key.as_str()) {
            own.insert(key, value);
        } else if let Some(index) = part_keys.iter().position(|keys| keys.contains(&&*key)) {
            if let Some(part) = parts.get_mut(index) {
                part.insert(key, value);
            }
        } else {
            let every_key: Vec<&str> = own_keys
                .iter()
                .chain(part_keys.iter().flatten())
                .copied()
                .collect();
            let message = if every_key.is_empty() {
                "unknown key; this section takes no keys".to_owned()
            } else {
                format!("unknown key; expected one of {}", every_key.join(", "))
            };
            return Err(Problem::new(join(path, &key), message));
        }
    }
    let mut options: T = deserialize_at(Value::new(origin.as_ref(), ValueKind::Table(own)), path)?;
    for (part, section) in options.embedded().into_iter().zip(parts) {
        if !section.is_empty() {
            part.fill(Value::new(origin.as_ref(), ValueKind::Table(section)), path)?;
        }
    }
    Ok(options)
}

/// Gives each listed field the value in `defaults` when the file did not
/// write its key. The list must name every field (the destructuring fails
/// to compile when a field is added and not listed), each followed by its
/// serde aliases: `limit | max`.
#[macro_export]
macro_rules! keep_unwritten {
    ($self:ident, $defaults:ident, $written:ident;
     $($field:ident $(| $alias:literal)*),+ $(,)?) => {{
        let Self { $($field),+ } = $defaults;
        $(
            if !$written.has(stringify!($field)) $(&& !$written.has($alias))* {
                $self.$field = $field;
            }
        )+
    }};
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::settings::parts::{Embedded, EmbeddedPart, Written};

    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Listen {
        endpoint: String,
        #[serde(alias = "max")]
        limit: u32,
    }

    impl Default for Listen {
        fn default() -> Self {
            Self {
                endpoint: "0.0.0.0:1".to_owned(),
                limit: 10,
            }
        }
    }

    impl Embedded for Listen {
        fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
            keep_unwritten!(self, defaults, written; endpoint, limit | "max");
        }
    }

    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Component {
        path: String,
        #[serde(skip)]
        listen: Listen,
    }

    impl Default for Component {
        fn default() -> Self {
            Self {
                path: "/in".to_owned(),
                listen: Listen {
                    endpoint: "127.0.0.1:4041".to_owned(),
                    ..Listen::default()
                },
            }
        }
    }

    impl Options for Component {
        fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
            vec![&mut self.listen]
        }
    }

    fn section(entries: &[(&str, &str)]) -> Value {
        let mut map = Map::new();
        for (key, text) in entries {
            map.insert(
                (*key).to_owned(),
                Value::new(None, ValueKind::String((*text).to_owned())),
            );
        }
        Value::new(None, ValueKind::Table(map))
    }

    #[test]
    fn keys_come_from_the_derive_with_aliases_without_skipped_fields() {
        assert_eq!(keys_of::<Listen>(), ["endpoint", "limit", "max"]);
        assert_eq!(keys_of::<Component>(), ["path"]);
    }

    #[test]
    fn unwritten_embedded_keys_keep_the_components_defaults() {
        let parsed: Result<Component, Problem> =
            deserialize_embedding(section(&[("limit", "3")]), "receivers.x");
        let expected = Component {
            path: "/in".to_owned(),
            listen: Listen {
                endpoint: "127.0.0.1:4041".to_owned(),
                limit: 3,
            },
        };
        assert_eq!(parsed, Ok(expected));
        let untouched: Result<Component, Problem> =
            deserialize_embedding(Value::new(None, ValueKind::Nil), "receivers.x");
        assert_eq!(untouched, Ok(Component::default()));
    }

    #[test]
    fn an_embedded_keys_alias_goes_to_its_part() {
        let parsed: Result<Component, Problem> =
            deserialize_embedding(section(&[("max", "4")]), "receivers.x");
        assert_eq!(parsed.map(|c| c.listen.limit), Ok(4));
    }

    #[test]
    fn an_unknown_key_is_refused_with_every_key_listed() {
        let parsed: Result<Component, Problem> =
            deserialize_embedding(section(&[("limits", "3")]), "receivers.x");
        assert_eq!(
            parsed.map_err(|problem| problem.to_string()),
            Err(
                "receivers.x.limits: unknown key; expected one of path, endpoint, limit, max"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_bad_embedded_value_names_its_key_path() {
        let parsed: Result<Component, Problem> =
            deserialize_embedding(section(&[("limit", "many")]), "receivers.x");
        assert_eq!(
            parsed.map_err(|problem| problem.to_string()),
            Err("receivers.x.limit: expected u32, found string \"many\"".to_owned())
        );
    }
}
