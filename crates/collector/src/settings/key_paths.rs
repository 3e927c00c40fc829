//! Every key path a configuration struct accepts, nested sections and list
//! items included, read from its serde derive: the struct is deserialized
//! from a recording deserializer that answers each `deserialize_struct`
//! with a map holding every field, records each field's key path, and
//! recurses into the values with placeholders. The configuration
//! reference test compares these paths with docs/configuration.md.
//!
//! Paths are relative to the struct's own section: `protocols.grpc.endpoint`;
//! the items of a list are `KEY[]`, the keys of a map [`MAP_KEY`].

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::rc::Rc;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, Expected, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

/// The placeholder for the keys of a map (`headers.NAME`).
pub const MAP_KEY: &str = "NAME";

/// How many fields whose custom impls refuse every placeholder a walk may
/// leave out before giving up.
const MAX_LEFT_OUT: usize = 64;

/// The key paths of a struct could not all be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyPathsError {
    /// Its deserializer failed on no field in particular, so there was no
    /// field to leave out and walk past.
    #[error("listing the keys of {type_name}: {cause}, and no field to leave out")]
    Refused {
        type_name: &'static str,
        cause: String,
    },
    /// It still failed after leaving out [`MAX_LEFT_OUT`] fields.
    #[error("listing the keys of {type_name}: still failing after leaving out {MAX_LEFT_OUT} fields: {left_out:?}")]
    TooManyLeftOut {
        type_name: &'static str,
        left_out: BTreeSet<String>,
    },
}

/// Every key path `T` accepts, relative to its own section.
pub fn key_paths<T: DeserializeOwned>() -> Result<BTreeSet<String>, KeyPathsError> {
    let type_name = std::any::type_name::<T>();
    let state = Rc::new(RefCell::new(State::default()));
    for _ in 0..=MAX_LEFT_OUT {
        let walker = Walker {
            path: String::new(),
            state: Rc::clone(&state),
        };
        let before = state.borrow().rejected.len();
        match T::deserialize(walker) {
            Ok(_) => return Ok(state.take().recorded),
            Err(error) => {
                if state.borrow().rejected.len() == before {
                    return Err(KeyPathsError::Refused {
                        type_name,
                        cause: error.message,
                    });
                }
            }
        }
    }
    Err(KeyPathsError::TooManyLeftOut {
        type_name,
        left_out: state.take().rejected,
    })
}

#[derive(Debug)]
struct WalkError {
    message: String,
    /// Whether a field has already been blamed for it (the innermost one).
    blamed: bool,
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WalkError {}

impl de::Error for WalkError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self {
            message: message.to_string(),
            blamed: false,
        }
    }
}

#[derive(Default)]
struct State {
    /// Every key path met.
    recorded: BTreeSet<String>,
    /// Fields whose placeholder value a custom impl rejected: left out on
    /// the next walk so that the fields after them are walked too.
    rejected: BTreeSet<String>,
}

#[derive(Clone)]
struct Walker {
    path: String,
    state: Rc<RefCell<State>>,
}

impl Walker {
    fn child(&self, key: &str) -> Self {
        Self {
            path: child_path(&self.path, key),
            state: Rc::clone(&self.state),
        }
    }

    fn item(&self) -> Self {
        Self {
            path: format!("{}[]", self.path),
            state: Rc::clone(&self.state),
        }
    }
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> de::Deserializer<'de> for Walker {
    type Error = WalkError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        // Custom impls (durations, sizes, attribute values) ask for
        // anything; give each what it reads.
        let expecting = format!("{}", &visitor as &dyn Expected);
        if expecting.contains("duration") {
            visitor.visit_str("1s")
        } else if expecting.contains("size") {
            visitor.visit_u64(1)
        } else {
            visitor.visit_str("1s")
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_f64(1.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_f64(1.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_char('x')
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str("1s")
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str("1s")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bytes(b"x")
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bytes(b"x")
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_seq(Items {
            walker: self.item(),
            left: 1,
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_seq(Items {
            walker: self.item(),
            left: len,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_map(Fields {
            walker: self,
            keys: vec![MAP_KEY],
            next: 0,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        let keys = {
            let mut state = self.state.borrow_mut();
            let mut keys = Vec::with_capacity(fields.len());
            for field in fields {
                let path = child_path(&self.path, field);
                if !state.rejected.contains(&path) {
                    keys.push(*field);
                }
                state.recorded.insert(path);
            }
            keys
        };
        visitor.visit_map(Fields {
            walker: self,
            keys,
            next: 0,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_enum(Variant {
            walker: self,
            name: variants.first().copied().unwrap_or("unit"),
        })
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str(MAP_KEY)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }
}

/// A list's items: `left` of them, all at `PATH[]`.
struct Items {
    walker: Walker,
    left: usize,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = WalkError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, WalkError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.walker.clone()).map(Some)
    }
}

/// A struct's fields, or a map's single placeholder key.
struct Fields {
    walker: Walker,
    keys: Vec<&'static str>,
    next: usize,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = WalkError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, WalkError> {
        match self.keys.get(self.next) {
            None => Ok(None),
            Some(key) => {
                let key: de::value::StrDeserializer<'_, WalkError> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, WalkError> {
        let Some(key) = self.keys.get(self.next).copied() else {
            return Err(de::Error::custom("a value asked for after the last key"));
        };
        self.next += 1;
        let child = self.walker.child(key);
        let path = child.path.clone();
        seed.deserialize(child).map_err(|mut error| {
            if !error.blamed {
                error.blamed = true;
                self.walker.state.borrow_mut().rejected.insert(path);
            }
            error
        })
    }
}

/// An enum: its first variant.
struct Variant {
    walker: Walker,
    name: &'static str,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = WalkError;
    type Variant = Walker;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Walker), WalkError> {
        let name: de::value::StrDeserializer<'_, WalkError> = self.name.into_deserializer();
        Ok((seed.deserialize(name)?, self.walker))
    }
}

impl<'de> VariantAccess<'de> for Walker {
    type Error = WalkError;

    fn unit_variant(self) -> Result<(), WalkError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, WalkError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, WalkError> {
        de::Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

/// The keys a struct's serde derive takes (its fields and their aliases,
/// without skipped ones), read by asking it to deserialize from a
/// deserializer that only records the field list it is handed.
pub fn keys_of<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut fields = Vec::new();
    let _ = T::deserialize(FieldRecorder(&mut fields));
    fields
}

struct FieldRecorder<'a>(&'a mut Vec<&'static str>);

#[derive(Debug, thiserror::Error)]
#[error("recording fields only")]
struct Recorded;

impl de::Error for Recorded {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        Self
    }
}

impl<'de> de::Deserializer<'de> for FieldRecorder<'_> {
    type Error = Recorded;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Recorded> {
        Err(Recorded)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Recorded> {
        self.0.extend_from_slice(fields);
        Err(Recorded)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::settings::parts::{Embedded, EmbeddedPart, Written};
    use crate::settings::units::{ByteSize, Duration};
    use crate::settings::{options_key_paths, Options};

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Limits {
        size: Option<ByteSize>,
        wait: Option<Duration>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        #[default]
        Fast,
        Slow,
    }

    /// Refuses every placeholder, as a `try_from` that checks its value.
    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(try_from = "String")]
    struct Picky;

    impl TryFrom<String> for Picky {
        type Error = &'static str;
        fn try_from(_: String) -> Result<Self, Self::Error> {
            Err("never")
        }
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Item {
        key: String,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Section {
        limits: Option<Limits>,
        picky: Picky,
        mode: Mode,
        items: Vec<Item>,
        headers: BTreeMap<String, String>,
        #[serde(skip)]
        part: Part,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Part {
        endpoint: String,
        inner: Limits,
    }

    impl Embedded for Part {
        fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
            crate::keep_unwritten!(self, defaults, written; endpoint, inner);
        }
    }

    impl Options for Section {
        fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
            vec![&mut self.part]
        }
    }

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|path| (*path).to_owned()).collect()
    }

    #[test]
    fn nested_sections_list_items_and_map_keys_are_walked_past_refused_fields() {
        assert_eq!(
            key_paths::<Section>(),
            Ok(set(&[
                "headers",
                "items",
                "items[].key",
                "limits",
                "limits.size",
                "limits.wait",
                "mode",
                "picky",
            ]))
        );
    }

    #[test]
    fn options_list_their_embedded_parts_paths_beside_their_own() {
        let paths = options_key_paths::<Section>();
        let paths = paths.as_ref().map(|paths| {
            ["endpoint", "inner.size", "inner.wait", "limits.size"]
                .iter()
                .all(|path| paths.contains(*path))
        });
        assert_eq!(paths, Ok(true));
    }

    /// Fails on no field in particular.
    #[derive(Debug)]
    struct Stubborn;

    impl<'de> Deserialize<'de> for Stubborn {
        fn deserialize<D: de::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Err(de::Error::custom("no"))
        }
    }

    #[test]
    fn a_type_that_refuses_on_no_field_is_an_error() {
        assert!(matches!(
            key_paths::<Stubborn>(),
            Err(KeyPathsError::Refused { cause, .. }) if cause == "no"
        ));
    }
}
