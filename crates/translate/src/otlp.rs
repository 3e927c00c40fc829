//! The OTLP types profbridge speaks, from the opentelemetry-proto crate.

pub use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
pub use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
pub use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
pub use opentelemetry_proto::tonic::resource::v1::Resource;

/// A string attribute value.
pub fn string_value(s: impl Into<String>) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(s.into())),
    }
}

pub fn int_value(i: i64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::IntValue(i)),
    }
}

pub fn bool_value(b: bool) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::BoolValue(b)),
    }
}

pub fn array_value(values: Vec<AnyValue>) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::ArrayValue(ArrayValue { values })),
    }
}

/// A `KeyValue` with a string value, for resource and scope attributes.
pub fn key_value(key: impl Into<String>, value: AnyValue) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(value),
        key_strindex: 0,
    }
}

/// `value` with every dictionary string reference (`string_value_strindex`,
/// `key_strindex`) replaced by the string itself.
pub fn resolve_strings(value: &AnyValue, strings: &[String]) -> AnyValue {
    let text = |index: i32| {
        usize::try_from(index)
            .ok()
            .and_then(|i| strings.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let resolved = match &value.value {
        Some(any_value::Value::StringValueStrindex(index)) => {
            any_value::Value::StringValue(text(*index))
        }
        Some(any_value::Value::ArrayValue(array)) => any_value::Value::ArrayValue(ArrayValue {
            values: array
                .values
                .iter()
                .map(|v| resolve_strings(v, strings))
                .collect(),
        }),
        Some(any_value::Value::KvlistValue(list)) => any_value::Value::KvlistValue(KeyValueList {
            values: list
                .values
                .iter()
                .map(|kv| KeyValue {
                    key: if kv.key.is_empty() {
                        text(kv.key_strindex)
                    } else {
                        kv.key.clone()
                    },
                    value: kv.value.as_ref().map(|v| resolve_strings(v, strings)),
                    key_strindex: 0,
                })
                .collect(),
        }),
        Some(other) => other.clone(),
        None => return AnyValue { value: None },
    };
    AnyValue {
        value: Some(resolved),
    }
}
