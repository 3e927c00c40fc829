//! Writing proto3 JSON objects: lowerCamelCase keys, fields equal to their
//! default left out, 64-bit integers as decimal strings.

use base64::Engine;
use serde_json::{Map, Number, Value};

use super::read::Key;

#[derive(Default)]
pub(crate) struct Object(Map<String, Value>);

impl Object {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn put(mut self, key: Key, value: Value) -> Self {
        self.0.insert(key.camel().to_owned(), value);
        self
    }

    fn put_if(self, present: bool, key: Key, value: impl FnOnce() -> Value) -> Self {
        if present {
            self.put(key, value())
        } else {
            self
        }
    }

    /// A 32-bit integer, as a JSON number.
    pub(crate) fn number<N>(self, key: Key, n: N) -> Self
    where
        N: Copy + Default + PartialEq + Into<Number>,
    {
        self.put_if(n != N::default(), key, || Value::Number(n.into()))
    }

    /// A 64-bit integer, as a decimal string.
    pub(crate) fn int64<N>(self, key: Key, n: N) -> Self
    where
        N: Copy + Default + PartialEq + ToString,
    {
        self.put_if(n != N::default(), key, || Value::String(n.to_string()))
    }

    pub(crate) fn string(self, key: Key, s: &str) -> Self {
        self.put_if(!s.is_empty(), key, || Value::String(s.to_owned()))
    }

    pub(crate) fn base64(self, key: Key, bytes: &[u8]) -> Self {
        self.put_if(!bytes.is_empty(), key, || {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        })
    }

    pub(crate) fn hex(self, key: Key, bytes: &[u8]) -> Self {
        self.put_if(!bytes.is_empty(), key, || Value::String(hex(bytes)))
    }

    /// A message field is written whenever it is set, even to its default:
    /// proto3 keeps message presence.
    pub(crate) fn message<T>(
        self,
        key: Key,
        message: Option<&T>,
        encode: impl Fn(&T) -> Value,
    ) -> Self {
        match message {
            Some(message) => self.put(key, encode(message)),
            None => self,
        }
    }

    pub(crate) fn list<T>(self, key: Key, items: &[T], encode: impl Fn(&T) -> Value) -> Self {
        self.put_if(!items.is_empty(), key, || {
            Value::Array(items.iter().map(encode).collect())
        })
    }

    pub(crate) fn numbers<N>(self, key: Key, items: &[N]) -> Self
    where
        N: Copy + Into<Number>,
    {
        self.list(key, items, |&n| Value::Number(n.into()))
    }

    pub(crate) fn int64s<N: ToString>(self, key: Key, items: &[N]) -> Self {
        self.list(key, items, |n| Value::String(n.to_string()))
    }

    pub(crate) fn finish(self) -> Value {
        Value::Object(self.0)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .flat_map(|&b| [b >> 4, b & 0x0f])
        .map(|nibble| char::from_digit(u32::from(nibble), 16).unwrap_or('0'))
        .collect()
}
