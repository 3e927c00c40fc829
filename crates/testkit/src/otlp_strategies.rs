//! proptest strategies for OTLP profiles requests: every field of every
//! message, with arbitrary values (any integers, any UTF-8, NaN doubles,
//! nested attribute values), for tests of codecs.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use proptest::prelude::*;

fn value(v: any_value::Value) -> AnyValue {
    AnyValue { value: Some(v) }
}

/// Any `AnyValue`: every kind, nested three deep, NaN and infinities among
/// the doubles.
pub fn any_value_strategy() -> impl Strategy<Value = AnyValue> {
    use any_value::Value as V;
    let double = prop_oneof![
        any::<f64>().prop_filter("one NaN", |d| !d.is_nan()),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ];
    let leaf = prop_oneof![
        ".{0,8}".prop_map(V::StringValue),
        any::<bool>().prop_map(V::BoolValue),
        any::<i64>().prop_map(V::IntValue),
        double.prop_map(V::DoubleValue),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(V::BytesValue),
        (0..50i32).prop_map(V::StringValueStrindex),
    ]
    .prop_map(value);
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|values| value(V::ArrayValue(ArrayValue { values }))),
            prop::collection::vec((".{0,4}", prop::option::of(inner), 0..50i32), 0..4).prop_map(
                |kvs| {
                    let values = kvs
                        .into_iter()
                        .map(|(key, value, key_strindex)| KeyValue {
                            key,
                            value,
                            key_strindex,
                        })
                        .collect();
                    value(V::KvlistValue(KeyValueList { values }))
                }
            ),
            Just(AnyValue { value: None }),
        ]
    })
}

fn key_values() -> impl Strategy<Value = Vec<KeyValue>> {
    prop::collection::vec(
        (".{0,6}", prop::option::of(any_value_strategy()), 0..5i32).prop_map(
            |(key, value, key_strindex)| KeyValue {
                key,
                value,
                key_strindex,
            },
        ),
        0..3,
    )
}

fn indices() -> impl Strategy<Value = Vec<i32>> {
    prop::collection::vec(any::<i32>(), 0..4)
}

fn id(bytes: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![Just(Vec::new()), prop::collection::vec(any::<u8>(), bytes)]
}

pub fn dictionary_strategy() -> impl Strategy<Value = ProfilesDictionary> {
    let mapping = (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<i32>(),
        indices(),
    )
        .prop_map(
            |(memory_start, memory_limit, file_offset, filename_strindex, attribute_indices)| {
                Mapping {
                    memory_start,
                    memory_limit,
                    file_offset,
                    filename_strindex,
                    attribute_indices,
                }
            },
        );
    let line =
        (any::<i32>(), any::<i64>(), any::<i64>()).prop_map(|(function_index, line, column)| {
            Line {
                function_index,
                line,
                column,
            }
        });
    let location = (
        any::<i32>(),
        any::<u64>(),
        prop::collection::vec(line, 0..3),
        indices(),
    )
        .prop_map(
            |(mapping_index, address, lines, attribute_indices)| Location {
                mapping_index,
                address,
                lines,
                attribute_indices,
            },
        );
    let function = (any::<i32>(), any::<i32>(), any::<i32>(), any::<i64>()).prop_map(
        |(name_strindex, system_name_strindex, filename_strindex, start_line)| Function {
            name_strindex,
            system_name_strindex,
            filename_strindex,
            start_line,
        },
    );
    let link = (id(16), id(8)).prop_map(|(trace_id, span_id)| Link { trace_id, span_id });
    let attribute = (
        any::<i32>(),
        prop::option::of(any_value_strategy()),
        any::<i32>(),
    )
        .prop_map(|(key_strindex, value, unit_strindex)| KeyValueAndUnit {
            key_strindex,
            value,
            unit_strindex,
        });
    let stack = indices().prop_map(|location_indices| Stack { location_indices });
    (
        prop::collection::vec(mapping, 0..4),
        prop::collection::vec(location, 0..4),
        prop::collection::vec(function, 0..4),
        prop::collection::vec(link, 0..3),
        prop::collection::vec(".{0,10}", 0..6),
        prop::collection::vec(attribute, 0..4),
        prop::collection::vec(stack, 0..4),
    )
        .prop_map(
            |(
                mapping_table,
                location_table,
                function_table,
                link_table,
                string_table,
                attribute_table,
                stack_table,
            )| {
                ProfilesDictionary {
                    mapping_table,
                    location_table,
                    function_table,
                    link_table,
                    string_table,
                    attribute_table,
                    stack_table,
                }
            },
        )
}

pub fn profile_strategy() -> impl Strategy<Value = Profile> {
    let value_type = prop::option::of((any::<i32>(), any::<i32>()).prop_map(
        |(type_strindex, unit_strindex)| ValueType {
            type_strindex,
            unit_strindex,
        },
    ));
    let sample = (
        any::<i32>(),
        indices(),
        any::<i32>(),
        prop::collection::vec(any::<i64>(), 0..4),
        prop::collection::vec(any::<u64>(), 0..4),
    )
        .prop_map(
            |(stack_index, attribute_indices, link_index, values, timestamps_unix_nano)| Sample {
                stack_index,
                attribute_indices,
                link_index,
                values,
                timestamps_unix_nano,
            },
        );
    (
        (
            value_type.clone(),
            prop::collection::vec(sample, 0..5),
            any::<u64>(),
            any::<u64>(),
            value_type,
        ),
        (
            any::<i64>(),
            id(16),
            any::<u32>(),
            ".{0,8}",
            prop::collection::vec(any::<u8>(), 0..16),
            indices(),
        ),
    )
        .prop_map(
            |(
                (sample_type, samples, time_unix_nano, duration_nano, period_type),
                (
                    period,
                    profile_id,
                    dropped_attributes_count,
                    original_payload_format,
                    original_payload,
                    attribute_indices,
                ),
            )| Profile {
                sample_type,
                samples,
                time_unix_nano,
                duration_nano,
                period_type,
                period,
                profile_id,
                dropped_attributes_count,
                original_payload_format,
                original_payload,
                attribute_indices,
            },
        )
}

/// Any request: every field of every message, with arbitrary values.
pub fn request_strategy() -> impl Strategy<Value = ExportProfilesServiceRequest> {
    let entity_ref = (
        ".{0,5}",
        ".{0,5}",
        prop::collection::vec(".{0,5}", 0..3),
        prop::collection::vec(".{0,5}", 0..2),
    )
        .prop_map(
            |(schema_url, r#type, id_keys, description_keys)| EntityRef {
                schema_url,
                r#type,
                id_keys,
                description_keys,
            },
        );
    let resource = (
        key_values(),
        any::<u32>(),
        prop::collection::vec(entity_ref, 0..2),
    )
        .prop_map(
            |(attributes, dropped_attributes_count, entity_refs)| Resource {
                attributes,
                dropped_attributes_count,
                entity_refs,
            },
        );
    let scope = (".{0,5}", ".{0,5}", key_values(), any::<u32>()).prop_map(
        |(name, version, attributes, dropped_attributes_count)| InstrumentationScope {
            name,
            version,
            attributes,
            dropped_attributes_count,
        },
    );
    let scope_profiles = (
        prop::option::of(scope),
        prop::collection::vec(profile_strategy(), 0..3),
        ".{0,6}",
    )
        .prop_map(|(scope, profiles, schema_url)| ScopeProfiles {
            scope,
            profiles,
            schema_url,
        });
    let resource_profiles = (
        prop::option::of(resource),
        prop::collection::vec(scope_profiles, 0..3),
        ".{0,6}",
    )
        .prop_map(|(resource, scope_profiles, schema_url)| ResourceProfiles {
            resource,
            scope_profiles,
            schema_url,
        });
    (
        prop::collection::vec(resource_profiles, 0..3),
        prop::option::of(dictionary_strategy()),
    )
        .prop_map(
            |(resource_profiles, dictionary)| ExportProfilesServiceRequest {
                resource_profiles,
                dictionary,
            },
        )
}
