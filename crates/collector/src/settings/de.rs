//! Deserializes the config crate's value tree into the component structs,
//! keeping the key path of every value so that each error says where it is.
//!
//! Lenient where configuration needs it: text becomes a number or a boolean
//! when the option wants one (environment variables are always text), plain
//! values become text, an empty value is an empty section or list (and an
//! optional section that is present but empty is on, with its defaults),
//! and comma-separated text is a list.

use std::fmt;

use config::{Value, ValueKind};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Expected, IntoDeserializer, Unexpected, Visitor,
};

use super::problems::{join, Problem};

/// Deserializes `value`, found at key path `path`, into `T`.
pub(crate) fn deserialize_at<T: DeserializeOwned>(value: Value, path: &str) -> Result<T, Problem> {
    T::deserialize(ValueDeserializer(value)).map_err(|error| error.into_problem(path))
}

/// An error and the path to it below the value being deserialized.
#[derive(Debug)]
pub(crate) struct DeError {
    /// Key path segments, innermost first: `max_age`, `retention`.
    segments_inner_first: Vec<String>,
    message: String,
}

impl DeError {
    fn inside(mut self, segment: String) -> Self {
        self.segments_inner_first.push(segment);
        self
    }

    fn into_problem(self, base: &str) -> Problem {
        let mut path = base.to_owned();
        for segment in self.segments_inner_first.iter().rev() {
            if segment.starts_with('[') {
                path.push_str(segment);
            } else {
                path = join(&path, segment);
            }
        }
        Problem::new(path, self.message)
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self {
            segments_inner_first: Vec::new(),
            message: message.to_string(),
        }
    }

    fn invalid_type(unexpected: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Self::custom(format_args!("expected {expected}, found {unexpected}"))
    }

    fn invalid_value(unexpected: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Self::custom(format_args!("expected {expected}, found {unexpected}"))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::custom(format_args!(
            "unknown value {variant:?}; expected one of {}",
            expected.join(", ")
        ))
    }

    fn unknown_field(_field: &str, expected: &'static [&'static str]) -> Self {
        if expected.is_empty() {
            Self::custom("unknown key; this section takes no keys")
        } else {
            Self::custom(format_args!(
                "unknown key; expected one of {}",
                expected.join(", ")
            ))
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Self::custom(format_args!("the key {field} is required"))
    }
}

/// How a value reads in an error message: `string "x"`, `a list`.
pub(crate) fn describe(kind: &ValueKind) -> String {
    unexpected(kind).to_string()
}

fn unexpected(kind: &ValueKind) -> Unexpected<'_> {
    match kind {
        ValueKind::Nil => Unexpected::Other("nothing"),
        ValueKind::Boolean(value) => Unexpected::Bool(*value),
        ValueKind::I64(value) => Unexpected::Signed(*value),
        ValueKind::U64(value) => Unexpected::Unsigned(*value),
        ValueKind::I128(_) | ValueKind::U128(_) => Unexpected::Other("a very large integer"),
        ValueKind::Float(value) => Unexpected::Float(*value),
        ValueKind::String(text) => Unexpected::Str(text),
        ValueKind::Table(_) => Unexpected::Other("a section"),
        ValueKind::Array(_) => Unexpected::Other("a list"),
    }
}

struct ValueDeserializer(Value);

impl ValueDeserializer {
    fn mismatch(&self, expected: &dyn Expected) -> DeError {
        match self.0.kind {
            ValueKind::Nil => de::Error::custom(format_args!(
                "expected {expected}, found nothing; leave the key out to use the default"
            )),
            _ => de::Error::invalid_type(unexpected(&self.0.kind), expected),
        }
    }

    fn number<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::String(text) => {
                let trimmed = text.trim();
                if let Ok(number) = trimmed.parse::<i64>() {
                    visitor.visit_i64(number)
                } else if let Ok(number) = trimmed.parse::<u64>() {
                    visitor.visit_u64(number)
                } else if let Ok(number) = trimmed.parse::<f64>() {
                    visitor.visit_f64(number)
                } else {
                    visitor.visit_string(text)
                }
            }
            ValueKind::Nil => Err(self.mismatch(&visitor)),
            _ => de::Deserializer::deserialize_any(self, visitor),
        }
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::Nil => visitor.visit_unit(),
            ValueKind::Boolean(value) => visitor.visit_bool(value),
            ValueKind::I64(value) => visitor.visit_i64(value),
            ValueKind::U64(value) => visitor.visit_u64(value),
            ValueKind::I128(value) => visitor.visit_i128(value),
            ValueKind::U128(value) => visitor.visit_u128(value),
            ValueKind::Float(value) => visitor.visit_f64(value),
            ValueKind::String(text) => visitor.visit_string(text),
            ValueKind::Table(table) => visitor.visit_map(Entries::new(table.into_iter().collect())),
            ValueKind::Array(items) => visitor.visit_seq(Items::new(items)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::String(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" => visitor.visit_bool(true),
                "false" => visitor.visit_bool(false),
                _ => visitor.visit_string(text),
            },
            ValueKind::Nil => Err(self.mismatch(&visitor)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::String(text) => visitor.visit_string(text),
            ValueKind::Boolean(value) => visitor.visit_string(value.to_string()),
            ValueKind::I64(value) => visitor.visit_string(value.to_string()),
            ValueKind::U64(value) => visitor.visit_string(value.to_string()),
            ValueKind::I128(value) => visitor.visit_string(value.to_string()),
            ValueKind::U128(value) => visitor.visit_string(value.to_string()),
            ValueKind::Float(value) => visitor.visit_string(value.to_string()),
            ValueKind::Nil | ValueKind::Table(_) | ValueKind::Array(_) => {
                Err(self.mismatch(&visitor))
            }
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        Err(self.mismatch(&visitor))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        Err(self.mismatch(&visitor))
    }

    /// A key that is present is `Some`, even with an empty value: `grpc:`
    /// turns gRPC on with its defaults, as in the OpenTelemetry Collector.
    /// Leaving the key out is how to leave an option unset.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::Nil => visitor.visit_unit(),
            _ => Err(self.mismatch(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::Array(items) => visitor.visit_seq(Items::new(items)),
            ValueKind::Nil => visitor.visit_seq(Items::new(Vec::new())),
            ValueKind::String(text) => visitor.visit_seq(Items::new(comma_separated(&text))),
            _ => Err(de::Error::custom(format_args!(
                "expected a list, found {}",
                unexpected(&self.0.kind)
            ))),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::Table(table) => visitor.visit_map(Entries::new(table.into_iter().collect())),
            ValueKind::Nil => visitor.visit_map(Entries::new(Vec::new())),
            _ => Err(de::Error::custom(format_args!(
                "expected a section of keys and values, found {}",
                unexpected(&self.0.kind)
            ))),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0.kind {
            ValueKind::String(text) => visitor.visit_enum(text.into_deserializer()),
            _ => Err(self.mismatch(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

/// `file, debug` as a list of two texts.
fn comma_separated(text: &str) -> Vec<Value> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| Value::new(None, ValueKind::String(item.to_owned())))
        .collect()
}

struct Items {
    items: std::vec::IntoIter<Value>,
    index: usize,
}

impl Items {
    fn new(items: Vec<Value>) -> Self {
        Self {
            items: items.into_iter(),
            index: 0,
        }
    }
}

impl<'de> de::SeqAccess<'de> for Items {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(ValueDeserializer(item))
            .map(Some)
            .map_err(|error| error.inside(format!("[{index}]")))
    }
}

struct Entries {
    entries: std::vec::IntoIter<(String, Value)>,
    pending: Option<(String, Value)>,
}

impl Entries {
    fn new(entries: Vec<(String, Value)>) -> Self {
        Self {
            entries: entries.into_iter(),
            pending: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let parsed = seed
            .deserialize(key.clone().into_deserializer())
            .map_err(|error: DeError| error.inside(key.clone()))?;
        self.pending = Some((key, value));
        Ok(Some(parsed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(ValueDeserializer(value))
            .map_err(|error| error.inside(key))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Sample {
        count: u32,
        on: bool,
        names: Vec<String>,
        inner: Inner,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Inner {
        label: String,
    }

    fn table(entries: &[(&str, ValueKind)]) -> Value {
        let mut map = config::Map::new();
        for (key, kind) in entries {
            map.insert((*key).to_owned(), Value::new(None, kind.clone()));
        }
        Value::new(None, ValueKind::Table(map))
    }

    fn text(value: &str) -> ValueKind {
        ValueKind::String(value.to_owned())
    }

    #[test]
    fn text_turns_into_numbers_booleans_and_lists() {
        let value = table(&[
            ("count", text("8")),
            ("on", text("TRUE")),
            ("names", text("a, b")),
        ]);
        let sample: Sample = deserialize_at(value, "x").unwrap_or_default();
        assert_eq!(sample.count, 8);
        assert!(sample.on);
        assert_eq!(sample.names, ["a", "b"]);
    }

    #[test]
    fn errors_carry_the_full_key_path() {
        let inner = table(&[("lable", text("x"))]);
        let value = table(&[("inner", inner.kind)]);
        let problem = deserialize_at::<Sample>(value, "root").err();
        assert_eq!(
            problem.map(|p| p.to_string()).unwrap_or_default(),
            "root.inner.lable: unknown key; expected one of label"
        );
        let value = table(&[("count", text("many"))]);
        let problem = deserialize_at::<Sample>(value, "root").err();
        assert_eq!(
            problem.map(|p| p.to_string()).unwrap_or_default(),
            "root.count: expected u32, found string \"many\""
        );
        let value = table(&[(
            "names",
            ValueKind::Array(vec![Value::new(None, ValueKind::Nil)]),
        )]);
        let problem = deserialize_at::<Sample>(value, "root").err();
        assert_eq!(
            problem.map(|p| p.to_string()).unwrap_or_default(),
            "root.names[0]: expected a string, found nothing; leave the key out to use the default"
        );
    }
}
