//! `otel.attr_types`: restores attribute types that pprof labels cannot
//! carry. Its value is sorted `key:type` or `key:type:unit` items joined by
//! `,`, with `%`, `,` and `:` in keys and units %-escaped. Types:
//!
//! - `bool`, `double`, `bytes`: one str label in text form (`true`, Rust's
//!   shortest round-trip decimal, standard base64);
//! - `json`: one str label holding the value in OTLP/JSON form, for
//!   everything else that labels cannot hold natively (maps, mixed, empty or
//!   one-element arrays, empty strings, a 0 without unit, units on
//!   non-integers).

use super::frame_types::{escape_key, unescape_except};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TypeHint {
    Bool,
    Double,
    Bytes,
    Json,
}

impl TypeHint {
    fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Double => "double",
            Self::Bytes => "bytes",
            Self::Json => "json",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "bool" => Some(Self::Bool),
            "double" => Some(Self::Double),
            "bytes" => Some(Self::Bytes),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TypedKey {
    pub key: String,
    pub hint: TypeHint,
    pub unit: String,
}

pub(crate) fn encode(mut keys: Vec<TypedKey>) -> String {
    let mut items: Vec<String> = keys
        .drain(..)
        .map(|k| {
            let mut item = format!("{}:{}", escape_key(&k.key), k.hint.name());
            if !k.unit.is_empty() {
                item.push(':');
                item.push_str(&escape_key(&k.unit));
            }
            item
        })
        .collect();
    items.sort();
    items.join(",")
}

pub(crate) fn decode(value: &str) -> Option<Vec<TypedKey>> {
    value
        .split(',')
        .map(|item| {
            let mut parts = item.split(':');
            let key = unescape_except(parts.next()?, &[',', ':'])?;
            let hint = TypeHint::parse(parts.next()?)?;
            let unit = match parts.next() {
                Some(unit) => unescape_except(unit, &[',', ':'])?,
                None => String::new(),
            };
            parts
                .next()
                .is_none()
                .then_some(TypedKey { key, hint, unit })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_with_escapes() {
        let keys = vec![
            TypedKey {
                key: "z:odd,key%".into(),
                hint: TypeHint::Json,
                unit: String::new(),
            },
            TypedKey {
                key: "a".into(),
                hint: TypeHint::Double,
                unit: "ms".into(),
            },
        ];
        let encoded = encode(keys.clone());
        assert_eq!(encoded, "a:double:ms,z%3Aodd%2Ckey%25:json");
        let mut decoded = decode(&encoded).unwrap();
        decoded.sort();
        let mut expected = keys;
        expected.sort();
        assert_eq!(decoded, expected);
        assert_eq!(decode("a:float"), None);
        assert_eq!(decode("a"), None);
        assert_eq!(decode("a:bool:u:x"), None);
    }
}
