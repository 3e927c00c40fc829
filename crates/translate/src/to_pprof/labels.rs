//! OTLP attributes as pprof labels, with `otel.attr_types` for the types
//! labels cannot hold natively.

use base64::Engine;

use crate::json::any_value_to_json;
use crate::otlp::{any_value, AnyValue};
use crate::reserved::attr_types::{TypeHint, TypedKey};

/// A label before interning.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LabelOut {
    Str(String),
    Num(i64, String),
}

/// The labels for one attribute, and its type hint when it needs one.
pub(super) fn attribute_labels(
    key: &str,
    value: &AnyValue,
    unit: &str,
) -> (Vec<LabelOut>, Option<TypedKey>) {
    if let Some(labels) = native_labels(value, unit) {
        return (labels, None);
    }
    let (text, hint) = match &value.value {
        Some(any_value::Value::BoolValue(b)) => (b.to_string(), TypeHint::Bool),
        Some(any_value::Value::DoubleValue(d)) => (d.to_string(), TypeHint::Double),
        Some(any_value::Value::BytesValue(bytes)) if !bytes.is_empty() => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            TypeHint::Bytes,
        ),
        _ => (any_value_to_json(value).to_string(), TypeHint::Json),
    };
    let typed = TypedKey {
        key: key.to_owned(),
        hint,
        unit: unit.to_owned(),
    };
    (vec![LabelOut::Str(text)], Some(typed))
}

/// Labels that read back as the same attribute without a hint: a non-empty
/// string, an int that is not a unitless 0, or an array of two or more of
/// one of those.
fn native_labels(value: &AnyValue, unit: &str) -> Option<Vec<LabelOut>> {
    let scalar = |v: &AnyValue| match &v.value {
        Some(any_value::Value::StringValue(s)) if !s.is_empty() && unit.is_empty() => {
            Some(LabelOut::Str(s.clone()))
        }
        Some(any_value::Value::IntValue(i)) if *i != 0 || !unit.is_empty() => {
            Some(LabelOut::Num(*i, unit.to_owned()))
        }
        _ => None,
    };
    match &value.value {
        Some(any_value::Value::ArrayValue(array)) if array.values.len() >= 2 => {
            let labels: Vec<LabelOut> = array.values.iter().map(scalar).collect::<Option<_>>()?;
            let all_strings = labels.iter().all(|l| matches!(l, LabelOut::Str(_)));
            let all_numbers = labels.iter().all(|l| matches!(l, LabelOut::Num(..)));
            (all_strings || all_numbers).then_some(labels)
        }
        Some(any_value::Value::ArrayValue(_)) => None,
        _ => scalar(value).map(|label| vec![label]),
    }
}
