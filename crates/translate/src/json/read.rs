//! Reading proto3 JSON objects: lowerCamelCase or original snake_case keys,
//! `null` as absent, absent as the default, unknown keys ignored.

use std::cell::RefCell;

use serde_json::{Map, Value};

use super::path::{Path, UnknownKeys};
use super::scalar::{
    base64_from_json, describe, i32_from_json, i64_from_json, string_from_json, u32_from_json,
    u64_from_json, ScalarError,
};
use super::JsonError;

/// A field's JSON names: the lowerCamelCase one OTLP/JSON writes, and the
/// proto name proto3 parsers also accept.
#[derive(Clone, Copy)]
pub(crate) struct Key {
    camel: &'static str,
    snake: &'static str,
}

pub(crate) const fn key(camel: &'static str, snake: &'static str) -> Key {
    Key { camel, snake }
}

impl Key {
    pub(crate) fn camel(self) -> &'static str {
        self.camel
    }
}

/// One JSON object being decoded, and where it is. When the document
/// keeps a record of unknown keys, the names looked up are remembered, and
/// the object's other keys are noted when it is dropped.
pub(crate) struct Fields<'v, 'p> {
    map: &'v Map<String, Value>,
    at: &'p Path<'p>,
    looked_up: Option<(&'p UnknownKeys, RefCell<Vec<&'static str>>)>,
}

impl<'v, 'p> Fields<'v, 'p> {
    pub(crate) fn of(value: &'v Value, at: &'p Path<'p>) -> Result<Self, JsonError> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                at,
                looked_up: at
                    .unknown_keys()
                    .map(|record| (record, RefCell::new(Vec::new()))),
            }),
            other => Err(at.error(format!("expected an object, found {}", describe(other)))),
        }
    }

    /// The field's value and the name it was found under.
    fn find(&self, key: Key) -> Option<(&'v Value, &'static str)> {
        if let Some((_, names)) = &self.looked_up {
            names.borrow_mut().extend([key.camel, key.snake]);
        }
        [key.camel, key.snake]
            .into_iter()
            .find_map(|name| match self.map.get(name) {
                None | Some(Value::Null) => None,
                Some(value) => Some((value, name)),
            })
    }

    pub(crate) fn has(&self, key: Key) -> bool {
        self.find(key).is_some()
    }

    pub(crate) fn scalar<T: Default>(
        &self,
        key: Key,
        parse: fn(&Value) -> Result<T, ScalarError>,
    ) -> Result<T, JsonError> {
        match self.find(key) {
            None => Ok(T::default()),
            Some((value, name)) => {
                parse(value).map_err(|problem| self.at.key(name).error(problem.to_string()))
            }
        }
    }

    pub(crate) fn i32(&self, key: Key) -> Result<i32, JsonError> {
        self.scalar(key, i32_from_json)
    }

    pub(crate) fn u32(&self, key: Key) -> Result<u32, JsonError> {
        self.scalar(key, u32_from_json)
    }

    pub(crate) fn i64(&self, key: Key) -> Result<i64, JsonError> {
        self.scalar(key, i64_from_json)
    }

    pub(crate) fn u64(&self, key: Key) -> Result<u64, JsonError> {
        self.scalar(key, u64_from_json)
    }

    pub(crate) fn string(&self, key: Key) -> Result<String, JsonError> {
        self.scalar(key, string_from_json)
    }

    pub(crate) fn base64(&self, key: Key) -> Result<Vec<u8>, JsonError> {
        self.scalar(key, base64_from_json)
    }

    /// A hex id of exactly `bytes` bytes, or empty.
    pub(crate) fn hex_id(&self, key: Key, bytes: usize) -> Result<Vec<u8>, JsonError> {
        match self.find(key) {
            None => Ok(Vec::new()),
            Some((value, name)) => hex_id_from_json(value, bytes)
                .map_err(|problem| self.at.key(name).error(problem.to_string())),
        }
    }

    pub(crate) fn message<T>(
        &self,
        key: Key,
        decode: impl Fn(&Value, Path<'_>) -> Result<T, JsonError>,
    ) -> Result<Option<T>, JsonError> {
        self.find(key)
            .map(|(value, name)| decode(value, self.at.key(name)))
            .transpose()
    }

    pub(crate) fn list<T>(
        &self,
        key: Key,
        decode: impl Fn(&Value, Path<'_>) -> Result<T, JsonError>,
    ) -> Result<Vec<T>, JsonError> {
        let Some((value, name)) = self.find(key) else {
            return Ok(Vec::new());
        };
        let at = self.at.key(name);
        let Value::Array(items) = value else {
            return Err(at.error(format!("expected an array, found {}", describe(value))));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| decode(item, at.index(i)))
            .collect()
    }

    pub(crate) fn scalars<T>(
        &self,
        key: Key,
        parse: fn(&Value) -> Result<T, ScalarError>,
    ) -> Result<Vec<T>, JsonError> {
        self.list(key, |value, at| {
            parse(value).map_err(|problem| at.error(problem.to_string()))
        })
    }
}

impl Drop for Fields<'_, '_> {
    fn drop(&mut self) {
        let Some((record, names)) = &self.looked_up else {
            return;
        };
        let names = names.borrow();
        self.map
            .keys()
            .filter(|key| !names.contains(&key.as_str()))
            .for_each(|key| record.note(self.at, key));
    }
}

/// OTLP/JSON writes trace, span and profile ids as case-insensitive hex.
fn hex_id_from_json(value: &Value, bytes: usize) -> Result<Vec<u8>, ScalarError> {
    let Value::String(text) = value else {
        return Err(ScalarError::NotHexString(describe(value)));
    };
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let invalid = || ScalarError::NotHexId {
        value: describe(value),
        bytes,
    };
    if text.len() != bytes * 2 {
        return Err(invalid());
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(hex_digit(*high)? << 4 | hex_digit(*low)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(invalid)
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
