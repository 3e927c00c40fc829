//! The common messages: attributes (`KeyValue`) and their values.

use super::field;
use super::wire::{field_counts, fields, int32, int64};
use super::{set_once, Fast, Unsupported};
use crate::otlp::{any_value, AnyValue, ArrayValue, KeyValue, KeyValueList};

/// Values nested deeper than this (arrays in arrays, maps in maps) are left
/// to prost, whose recursion limit (100 messages) this stays far below.
const MAX_VALUE_DEPTH: usize = 16;

pub(super) fn any_value(message: &[u8], depth: usize) -> Fast<AnyValue> {
    if depth > MAX_VALUE_DEPTH {
        return Err(Unsupported);
    }
    let mut value = None;
    for field in fields(message) {
        let field = field?;
        let decoded = match field.number {
            field::any_value::STRING_VALUE => any_value::Value::StringValue(field.string()?),
            field::any_value::BOOL_VALUE => any_value::Value::BoolValue(field.varint()? != 0),
            field::any_value::INT_VALUE => any_value::Value::IntValue(int64(field.varint()?)),
            field::any_value::DOUBLE_VALUE => {
                any_value::Value::DoubleValue(f64::from_bits(field.fixed64()?))
            }
            field::any_value::ARRAY_VALUE => any_value::Value::ArrayValue(ArrayValue {
                values: elements(field.bytes()?, |element| any_value(element, depth + 1))?,
            }),
            field::any_value::KVLIST_VALUE => any_value::Value::KvlistValue(KeyValueList {
                values: elements(field.bytes()?, |element| key_value(element, depth + 1))?,
            }),
            field::any_value::BYTES_VALUE => any_value::Value::BytesValue(field.bytes()?.to_vec()),
            field::any_value::STRING_VALUE_STRINDEX => {
                any_value::Value::StringValueStrindex(int32(field.varint()?))
            }
            _ => continue,
        };
        // prost keeps the last of two values, or merges two of a kind.
        set_once(&mut value, decoded)?;
    }
    Ok(AnyValue { value })
}

/// The elements of `ArrayValue` and `KeyValueList`: their only field, 1.
fn elements<T>(message: &[u8], decode: impl Fn(&[u8]) -> Fast<T>) -> Fast<Vec<T>> {
    let [_, count] = field_counts(message)?;
    let mut elements = Vec::with_capacity(count);
    for field in fields(message) {
        let field = field?;
        if field.number == field::list::VALUES {
            elements.push(decode(field.bytes()?)?);
        }
    }
    Ok(elements)
}

/// `depth` is that of the value: 0 for an attribute's.
pub(super) fn key_value(message: &[u8], depth: usize) -> Fast<KeyValue> {
    let mut key_value = KeyValue::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::key_value::KEY => key_value.key = field.string()?,
            field::key_value::VALUE => {
                set_once(&mut key_value.value, any_value(field.bytes()?, depth)?)?
            }
            field::key_value::KEY_STRINDEX => key_value.key_strindex = int32(field.varint()?),
            _ => {}
        }
    }
    Ok(key_value)
}
