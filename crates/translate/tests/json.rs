//! OTLP/JSON for profiles: round trips, a hand-written document in the
//! spec's style, malformed inputs, and random requests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use opentelemetry_proto::tonic::common::v1::EntityRef;
use profbridge_testkit::otlp_strategies::request_strategy;
use profbridge_translate::json::{
    request_from_json, request_from_json_noting_unknown_keys, request_from_json_value,
    request_to_json, request_to_json_string, JsonError, MAX_UNKNOWN_KEYS,
};
use profbridge_translate::otlp::{
    any_value, AnyValue, ArrayValue, ExportProfilesServiceRequest, Function, InstrumentationScope,
    KeyValue, KeyValueAndUnit, KeyValueList, Line, Link, Location, Mapping, Profile,
    ProfilesDictionary, Resource, ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use proptest::prelude::*;
use prost::Message;
use serde_json::json;

fn value(v: any_value::Value) -> AnyValue {
    AnyValue { value: Some(v) }
}

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(value(v)),
        key_strindex: 0,
    }
}

/// Every AnyValue kind, nested arrays and kvlists, special doubles.
fn every_value_kind() -> Vec<AnyValue> {
    use any_value::Value as V;
    let nested = V::KvlistValue(KeyValueList {
        values: vec![
            kv(
                "inner",
                V::ArrayValue(ArrayValue {
                    values: vec![value(V::IntValue(-1)), AnyValue { value: None }],
                }),
            ),
            KeyValue {
                key: String::new(),
                value: Some(value(V::StringValueStrindex(3))),
                key_strindex: 2,
            },
            KeyValue {
                key: "no value".into(),
                value: None,
                key_strindex: 0,
            },
        ],
    });
    vec![
        value(V::StringValue("héllo \"quoted\" \n".into())),
        value(V::StringValue(String::new())),
        value(V::BoolValue(true)),
        value(V::BoolValue(false)),
        value(V::IntValue(i64::MIN)),
        value(V::IntValue(i64::MAX)),
        value(V::IntValue((1 << 53) + 1)),
        value(V::IntValue(0)),
        value(V::DoubleValue(f64::NAN)),
        value(V::DoubleValue(f64::INFINITY)),
        value(V::DoubleValue(f64::NEG_INFINITY)),
        value(V::DoubleValue(-0.5e-300)),
        value(V::DoubleValue(0.1)),
        value(V::BytesValue(vec![0, 255, 128, 7])),
        value(V::BytesValue(vec![])),
        value(V::StringValueStrindex(4)),
        value(V::ArrayValue(ArrayValue {
            values: vec![value(V::ArrayValue(ArrayValue {
                values: vec![value(nested.clone())],
            }))],
        })),
        value(nested),
        AnyValue { value: None },
    ]
}

fn full_request() -> ExportProfilesServiceRequest {
    let strings: Vec<String> = [
        "",
        "cpu",
        "nanoseconds",
        "main",
        "libc.so.6",
        "thread",
        "bytes",
        "k",
    ]
    .map(String::from)
    .to_vec();
    let attribute_table: Vec<KeyValueAndUnit> = std::iter::once(KeyValueAndUnit::default())
        .chain(every_value_kind().into_iter().map(|v| KeyValueAndUnit {
            key_strindex: 5,
            value: Some(v),
            unit_strindex: 6,
        }))
        .chain([KeyValueAndUnit {
            key_strindex: 7,
            value: None,
            unit_strindex: 0,
        }])
        .collect();
    let dictionary = ProfilesDictionary {
        mapping_table: vec![
            Mapping::default(),
            Mapping {
                memory_start: 0x7f00_0000_0000,
                memory_limit: u64::MAX,
                file_offset: (1 << 53) + 3,
                filename_strindex: 4,
                attribute_indices: vec![1, 2],
            },
        ],
        location_table: vec![
            Location::default(),
            Location {
                mapping_index: 1,
                address: u64::MAX - 1,
                lines: vec![
                    Line {
                        function_index: 1,
                        line: 42,
                        column: -7,
                    },
                    Line {
                        function_index: 2,
                        line: i64::MAX,
                        column: i64::MIN,
                    },
                    Line::default(),
                ],
                attribute_indices: vec![3],
            },
        ],
        function_table: vec![
            Function::default(),
            Function {
                name_strindex: 3,
                system_name_strindex: 3,
                filename_strindex: 4,
                start_line: 10,
            },
            Function {
                name_strindex: 1,
                system_name_strindex: 0,
                filename_strindex: 0,
                start_line: -1,
            },
        ],
        link_table: vec![
            Link::default(),
            Link {
                trace_id: (0..16).collect(),
                span_id: vec![0xab; 8],
            },
        ],
        string_table: strings,
        attribute_table,
        stack_table: vec![
            Stack::default(),
            Stack {
                location_indices: vec![1, 1, 0],
            },
        ],
    };
    let sample = Sample {
        stack_index: 1,
        attribute_indices: vec![4, 5],
        link_index: 1,
        values: vec![-5, i64::MAX, (1 << 53) + 1, 0],
        timestamps_unix_nano: vec![u64::MAX, 1_700_000_000_123_456_789, 0, 1],
    };
    let profile = Profile {
        sample_type: Some(ValueType {
            type_strindex: 1,
            unit_strindex: 2,
        }),
        samples: vec![sample, Sample::default()],
        time_unix_nano: 1_700_000_000_000_000_001,
        duration_nano: u64::MAX,
        period_type: Some(ValueType::default()),
        period: -10_000_000,
        profile_id: vec![0xfe; 16],
        dropped_attributes_count: 3,
        original_payload_format: "pprof-gzip+proto".into(),
        original_payload: vec![0x1f, 0x8b, 8, 0, 255],
        attribute_indices: vec![6, 7],
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![
            ResourceProfiles {
                resource: Some(Resource {
                    attributes: vec![
                        kv("service.name", any_value::Value::StringValue("api".into())),
                        KeyValue {
                            key: String::new(),
                            value: Some(value(any_value::Value::StringValueStrindex(3))),
                            key_strindex: 5,
                        },
                    ],
                    dropped_attributes_count: 1,
                    entity_refs: vec![EntityRef {
                        schema_url: "https://opentelemetry.io/schemas/1.30.0".into(),
                        r#type: "service".into(),
                        id_keys: vec!["service.name".into(), "service.namespace".into()],
                        description_keys: vec!["service.version".into()],
                    }],
                }),
                scope_profiles: vec![
                    ScopeProfiles {
                        scope: Some(InstrumentationScope {
                            name: "profbridge".into(),
                            version: "0.1.0".into(),
                            attributes: every_value_kind()
                                .into_iter()
                                .enumerate()
                                .map(|(i, v)| KeyValue {
                                    key: format!("a{i}"),
                                    value: Some(v),
                                    key_strindex: 0,
                                })
                                .collect(),
                            dropped_attributes_count: 2,
                        }),
                        profiles: vec![profile, Profile::default()],
                        schema_url: "https://opentelemetry.io/schemas/1.29.0".into(),
                    },
                    ScopeProfiles::default(),
                ],
                schema_url: "https://opentelemetry.io/schemas/1.28.0".into(),
            },
            ResourceProfiles::default(),
        ],
        dictionary: Some(dictionary),
    }
}

/// prost's `PartialEq` says NaN ≠ NaN; the wire bytes say what we mean.
fn assert_same(a: &ExportProfilesServiceRequest, b: &ExportProfilesServiceRequest) {
    assert_eq!(a.encode_to_vec(), b.encode_to_vec(), "\n{a:#?}\n!=\n{b:#?}");
}

#[test]
fn every_field_round_trips() {
    let request = full_request();
    let text = request_to_json_string(&request);
    let back = request_from_json(text.as_bytes()).unwrap();
    assert_same(&request, &back);
    assert_same(
        &request,
        &request_from_json_value(&request_to_json(&request)).unwrap(),
    );
    // Every key the writer writes is one the reader knows.
    let noted = request_from_json_noting_unknown_keys(text.as_bytes()).unwrap();
    assert_same(&request, &noted.request);
    assert_eq!(noted.unknown_keys, Vec::<String>::new());
}

/// A profile in the shape of OTLP Profiles before v1.8 (samples as
/// `sample` with `locationsStartIndex`, a `stringTable` per profile):
/// every key that the current schema lacks is skipped, and each is named
/// once, however many list items carry it.
#[test]
fn unknown_keys_are_skipped_and_each_is_named_once() {
    let document = json!({
        "resourceProfiles": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]},
            "scopeProfiles": [{
                "profiles": [{
                    "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
                    "sample": [
                        {"locationsStartIndex": 0, "locationsLength": 2, "value": ["10"]},
                        {"locationsStartIndex": 2, "locationsLength": 1, "value": ["3"]}
                    ],
                    "locationIndices": [1, 2, 3],
                    "stringTable": ["", "cpu", "nanoseconds"],
                    "timeUnixNano": "1700000000000000000"
                }],
                "scopeFlavour": "old"
            }]
        }],
        "dictionary": {"stringTable": [""], "oldTable": []}
    });
    let read = request_from_json_noting_unknown_keys(document.to_string().as_bytes()).unwrap();
    assert_eq!(
        read.unknown_keys,
        [
            "dictionary.oldTable",
            "resourceProfiles[].scopeProfiles[].profiles[].locationIndices",
            "resourceProfiles[].scopeProfiles[].profiles[].sample",
            "resourceProfiles[].scopeProfiles[].profiles[].stringTable",
            "resourceProfiles[].scopeProfiles[].scopeFlavour",
        ]
    );
    let profile = &read.request.resource_profiles[0].scope_profiles[0].profiles[0];
    assert!(profile.samples.is_empty());
    assert_eq!(profile.time_unix_nano, 1_700_000_000_000_000_000);
    // The plain reader reads the same request.
    assert_same(
        &read.request,
        &request_from_json(document.to_string().as_bytes()).unwrap(),
    );
}

#[test]
fn output_follows_the_spec_rules() {
    let json = request_to_json(&full_request());
    let profile = &json["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0];
    assert_eq!(profile["timeUnixNano"], json!("1700000000000000001"));
    assert_eq!(profile["durationNano"], json!(u64::MAX.to_string()));
    assert_eq!(profile["period"], json!("-10000000"));
    assert_eq!(
        profile["profileId"],
        json!("fefefefefefefefefefefefefefefefe")
    );
    assert_eq!(profile["originalPayload"], json!("H4sIAP8="));
    assert_eq!(profile["droppedAttributesCount"], json!(3));
    assert_eq!(
        profile["sampleType"],
        json!({"typeStrindex": 1, "unitStrindex": 2})
    );
    assert_eq!(
        profile["periodType"],
        json!({}),
        "a set message is written even when default"
    );
    let sample = &profile["samples"][0];
    assert_eq!(
        sample["values"],
        json!(["-5", i64::MAX.to_string(), "9007199254740993", "0"])
    );
    assert_eq!(
        sample["timestampsUnixNano"][1],
        json!("1700000000123456789")
    );
    assert_eq!(sample["attributeIndices"], json!([4, 5]));
    assert_eq!(
        profile["samples"][1],
        json!({}),
        "default fields are left out"
    );
    assert_eq!(json["resourceProfiles"][1], json!({}));
    let dictionary = &json["dictionary"];
    assert_eq!(dictionary["linkTable"][0], json!({}));
    assert_eq!(
        dictionary["linkTable"][1],
        json!({"traceId": "000102030405060708090a0b0c0d0e0f", "spanId": "abababababababab"})
    );
    assert_eq!(
        dictionary["mappingTable"][1]["memoryLimit"],
        json!("18446744073709551615")
    );
    assert_eq!(
        dictionary["locationTable"][1]["address"],
        json!("18446744073709551614")
    );
    assert_eq!(
        dictionary["locationTable"][1]["lines"][0],
        json!({"functionIndex": 1, "line": "42", "column": "-7"})
    );
    assert_eq!(dictionary["functionTable"][1]["startLine"], json!("10"));
    assert_eq!(
        dictionary["stackTable"][1],
        json!({"locationIndices": [1, 1, 0]})
    );
    assert_eq!(dictionary["stringTable"][0], json!(""));
    let attributes = &dictionary["attributeTable"];
    assert_eq!(
        attributes[5]["value"],
        json!({"intValue": "-9223372036854775808"})
    );
    assert_eq!(attributes[9]["value"], json!({"doubleValue": "NaN"}));
    assert_eq!(attributes[16]["value"], json!({"stringValueStrindex": 4}));
    let text = request_to_json_string(&full_request());
    assert!(!text.contains('\n') && !text.contains("resource_profiles"));
}

/// Written from the spec's rules, not by the encoder: 64-bit values as
/// strings and as numbers, camelCase and snake_case keys, unknown fields,
/// uppercase hex, nulls.
const HAND_WRITTEN: &str = r#"{
  "resourceProfiles": [{
    "resource": {
      "attributes": [
        {"key": "service.name", "value": {"stringValue": "checkout"}},
        {"key_strindex": "3", "value": {"int_value": 12}}
      ],
      "dropped_attributes_count": 0,
      "someFutureField": {"nested": [1, 2, 3]}
    },
    "scope_profiles": [{
      "scope": {"name": "ebpf", "version": "2", "unknown": true},
      "profiles": [{
        "sampleType": {"typeStrindex": 1, "unit_strindex": "2"},
        "time_unix_nano": 1700000000000000000,
        "durationNano": "10000000000",
        "period": 10000000,
        "periodType": null,
        "profileId": "0123456789ABCDEF0123456789abcdef",
        "originalPayloadFormat": "pprof",
        "original_payload": "AAEC",
        "attributeIndices": [1],
        "samples": [
          {"stackIndex": 1, "values": ["18446744073709551", 5, "-3"], "timestamps_unix_nano": [1700000000000000001, "1700000000000000002", "18446744073709551615"], "link_index": 1},
          {"stack_index": "1", "attribute_indices": ["1"], "values": [9007199254740993]}
        ]
      }],
      "schemaUrl": "https://example.com/s"
    }]
  }],
  "dictionary": {
    "stringTable": ["", "cpu", "nanoseconds", "thread", "main"],
    "mapping_table": [{}, {"memoryStart": "4194304", "memory_limit": 8388608, "fileOffset": 0, "filenameStrindex": 0}],
    "locationTable": [{}, {"mappingIndex": 1, "address": "4198400", "lines": [{"functionIndex": 1, "line": 12, "column": "3"}]}],
    "function_table": [{}, {"nameStrindex": 4, "system_name_strindex": 4, "startLine": "10"}],
    "linkTable": [{}, {"trace_id": "5B8EFFF798038103D269B633813FC60C", "spanId": "eee19b7ec3c1b174"}],
    "attributeTable": [{}, {"keyStrindex": 3, "value": {"stringValue": "worker-1"}, "unitStrindex": 0}],
    "stack_table": [{}, {"locationIndices": [1]}],
    "extra": "ignored"
  },
  "partialSuccess": {"ignored": true}
}"#;

#[test]
fn a_hand_written_document_decodes() {
    let request = request_from_json(HAND_WRITTEN.as_bytes()).unwrap();
    let resource = &request.resource_profiles[0];
    let attributes = &resource.resource.as_ref().unwrap().attributes;
    assert_eq!(attributes[0].key, "service.name");
    assert_eq!(
        attributes[0].value.as_ref().unwrap().value,
        Some(any_value::Value::StringValue("checkout".into()))
    );
    assert_eq!(attributes[1].key_strindex, 3);
    assert_eq!(
        attributes[1].value.as_ref().unwrap().value,
        Some(any_value::Value::IntValue(12))
    );
    let scope = &resource.scope_profiles[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "ebpf");
    assert_eq!(scope.schema_url, "https://example.com/s");
    let profile = &scope.profiles[0];
    assert_eq!(
        profile.sample_type,
        Some(ValueType {
            type_strindex: 1,
            unit_strindex: 2
        })
    );
    assert_eq!(profile.period_type, None);
    assert_eq!(profile.time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(profile.duration_nano, 10_000_000_000);
    assert_eq!(profile.period, 10_000_000);
    assert_eq!(profile.profile_id, hex("0123456789abcdef0123456789abcdef"));
    assert_eq!(profile.original_payload, vec![0, 1, 2]);
    assert_eq!(profile.attribute_indices, vec![1]);
    assert_eq!(
        profile.samples[0],
        Sample {
            stack_index: 1,
            attribute_indices: vec![],
            link_index: 1,
            values: vec![18_446_744_073_709_551, 5, -3],
            timestamps_unix_nano: vec![
                1_700_000_000_000_000_001,
                1_700_000_000_000_000_002,
                u64::MAX
            ],
        }
    );
    assert_eq!(profile.samples[1].stack_index, 1);
    assert_eq!(profile.samples[1].attribute_indices, vec![1]);
    assert_eq!(profile.samples[1].values, vec![9_007_199_254_740_993]);

    let d = request.dictionary.as_ref().unwrap();
    assert_eq!(d.string_table, ["", "cpu", "nanoseconds", "thread", "main"]);
    assert_eq!(d.mapping_table[0], Mapping::default());
    assert_eq!(
        d.mapping_table[1],
        Mapping {
            memory_start: 4_194_304,
            memory_limit: 8_388_608,
            ..Default::default()
        }
    );
    assert_eq!(d.location_table[1].address, 4_198_400);
    assert_eq!(
        d.location_table[1].lines,
        vec![Line {
            function_index: 1,
            line: 12,
            column: 3
        }]
    );
    assert_eq!(
        d.function_table[1],
        Function {
            name_strindex: 4,
            system_name_strindex: 4,
            filename_strindex: 0,
            start_line: 10
        }
    );
    assert_eq!(
        d.link_table[1].trace_id,
        hex("5b8efff798038103d269b633813fc60c")
    );
    assert_eq!(d.link_table[1].span_id, hex("eee19b7ec3c1b174"));
    assert_eq!(d.attribute_table[1].key_strindex, 3);
    assert_eq!(d.stack_table[1].location_indices, vec![1]);
    assert!(profbridge_translate::validate_request(&request)
        .unwrap()
        .invalid
        .is_empty());
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn empty_documents_are_empty_requests() {
    assert_eq!(
        request_from_json(b"{}").unwrap(),
        ExportProfilesServiceRequest::default()
    );
    assert_eq!(
        request_to_json_string(&ExportProfilesServiceRequest::default()),
        "{}"
    );
    let nulls = br#"{"resourceProfiles": null, "dictionary": null}"#;
    assert_eq!(
        request_from_json(nulls).unwrap(),
        ExportProfilesServiceRequest::default()
    );
}

fn error_of(text: &str) -> String {
    match request_from_json(text.as_bytes()) {
        Ok(request) => panic!("{text} decoded to {request:?}"),
        Err(e) => e.to_string(),
    }
}

fn in_sample(sample: &str) -> String {
    format!(
        r#"{{"resourceProfiles": [{{"scopeProfiles": [{{}}, {{"profiles": [{{}}, {{"samples": [{sample}]}}]}}]}}]}}"#
    )
}

#[test]
fn malformed_inputs_name_the_path() {
    let cases = [
        (
            in_sample(r#"{"values": ["1", "x"]}"#),
            r#"resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].values[1]: "x" is not a 64-bit integer"#,
        ),
        (
            in_sample(r#"{"values": [1.5]}"#),
            "resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].values[0]: 1.5 is not a 64-bit integer",
        ),
        (
            in_sample(r#"{"stack_index": "1e3"}"#),
            r#"resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].stack_index: "1e3" is not a 32-bit integer"#,
        ),
        (
            in_sample(r#"{"stackIndex": 2147483648}"#),
            "resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].stackIndex: 2147483648 is not a 32-bit integer",
        ),
        (
            in_sample(r#"{"timestampsUnixNano": ["-1"]}"#),
            r#"resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].timestampsUnixNano[0]: "-1" is not an unsigned 64-bit integer"#,
        ),
        (
            in_sample(r#"{"attributeIndices": 3}"#),
            "resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0].attributeIndices: expected an array, found 3",
        ),
        (
            in_sample("[]"),
            "resourceProfiles[0].scopeProfiles[1].profiles[1].samples[0]: expected an object, found an array",
        ),
        (
            r#"{"resourceProfiles": {}}"#.into(),
            "resourceProfiles: expected an array, found an object",
        ),
        (
            r#"{"dictionary": {"linkTable": [{}, {"traceId": "0102", "spanId": "0102030405060708"}]}}"#.into(),
            r#"dictionary.linkTable[1].traceId: "0102" is not a hex id of 16 bytes (32 hex digits)"#,
        ),
        (
            r#"{"dictionary": {"link_table": [{"span_id": "zz02030405060708"}]}}"#.into(),
            r#"dictionary.link_table[0].span_id: "zz02030405060708" is not a hex id of 8 bytes (16 hex digits)"#,
        ),
        (
            r#"{"dictionary": {"linkTable": [{"spanId": "é2030405060708"}]}}"#.into(),
            r#"dictionary.linkTable[0].spanId: "é2030405060708" is not a hex id of 8 bytes (16 hex digits)"#,
        ),
        (
            r#"{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"profileId": 5}]}]}]}"#.into(),
            "resourceProfiles[0].scopeProfiles[0].profiles[0].profileId: 5 is not a hex string",
        ),
        (
            r#"{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"originalPayload": "not base64!"}]}]}]}"#.into(),
            r#"resourceProfiles[0].scopeProfiles[0].profiles[0].originalPayload: "not base64!" is not base64"#,
        ),
        (
            r#"{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"droppedAttributesCount": -1}]}]}]}"#.into(),
            "resourceProfiles[0].scopeProfiles[0].profiles[0].droppedAttributesCount: -1 is not an unsigned 32-bit integer",
        ),
        (
            r#"{"resourceProfiles": [{"resource": {"attributes": [{"key": 7}]}}]}"#.into(),
            "resourceProfiles[0].resource.attributes[0].key: 7 is not a string",
        ),
        (
            r#"{"dictionary": {"attributeTable": [{}, {"value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": "yes"}}]}}}]}}"#.into(),
            r#"dictionary.attributeTable[1].value.kvlistValue.values[0].value.boolValue: "yes" is not a boolean"#,
        ),
        (
            r#"{"dictionary": {"attributeTable": [{"value": {"arrayValue": {"values": [{"bytesValue": "%%"}]}}}]}}"#.into(),
            r#"dictionary.attributeTable[0].value.arrayValue.values[0].bytesValue: "%%" is not base64"#,
        ),
        (
            r#"{"dictionary": {"attributeTable": [{"value": {"stringValue": "a", "intValue": "1"}}]}}"#.into(),
            "dictionary.attributeTable[0].value: sets both stringValue and intValue; an AnyValue holds one",
        ),
        (
            r#"{"dictionary": {"attributeTable": [{"value": {"doubleValue": "fast"}}]}}"#.into(),
            r#"dictionary.attributeTable[0].value.doubleValue: "fast" is not a double"#,
        ),
        (
            r#"{"dictionary": {"stringTable": ["", 1]}}"#.into(),
            "dictionary.stringTable[1]: 1 is not a string",
        ),
        (
            r#"{"dictionary": {"mappingTable": [{"memoryStart": true}]}}"#.into(),
            "dictionary.mappingTable[0].memoryStart: true is not an unsigned 64-bit integer",
        ),
        (
            r#"{"dictionary": {"locationTable": [{"lines": [{"line": "99999999999999999999"}]}]}}"#.into(),
            r#"dictionary.locationTable[0].lines[0].line: "99999999999999999999" is not a 64-bit integer"#,
        ),
        ("[1, 2]".into(), "the request must be a JSON object, not an array"),
        ("\"text\"".into(), r#"the request must be a JSON object, not "text""#),
    ];
    for (input, expected) in cases {
        assert_eq!(error_of(&input), expected, "input: {input}");
    }
}

#[test]
fn text_that_is_not_json_is_a_syntax_error() {
    for input in ["", "{", "resourceProfiles", "{\"a\": 1,}", "\u{0}"] {
        let error = request_from_json(input.as_bytes()).unwrap_err();
        assert!(
            matches!(error, JsonError::Syntax(_)),
            "{input:?}: {error:?}"
        );
    }
    let error = request_from_json(&[0xff, 0xfe, b'{']).unwrap_err();
    assert!(matches!(error, JsonError::Syntax(_)));
}

#[test]
fn long_strings_are_cut_in_errors() {
    let long = "y".repeat(10_000);
    let error = error_of(&in_sample(&format!(r#"{{"values": ["{long}"]}}"#)));
    assert!(error.len() < 200, "{error}");
}

#[test]
fn deep_nesting_is_refused_without_overflowing() {
    let mut value = json!({"stringValue": "leaf"});
    for _ in 0..150 {
        value = json!({"arrayValue": {"values": [value]}});
    }
    let document = json!({"dictionary": {"attributeTable": [{"value": value}]}});
    let error = request_from_json_value(&document).unwrap_err().to_string();
    assert!(error.contains("nest deeper than 100 levels"), "{error}");
    // serde_json's own recursion limit guards the text form.
    assert!(matches!(
        request_from_json(document.to_string().as_bytes()),
        Err(JsonError::Syntax(_))
    ));
}

#[test]
fn a_document_of_many_unknown_keys_names_only_the_first_few() {
    let fields: serde_json::Map<String, serde_json::Value> = (0..10_000)
        .map(|i| (format!("unknown{i}"), json!(i)))
        .collect();
    let document = json!({ "resourceProfiles": [serde_json::Value::Object(fields)] });
    let read = request_from_json_noting_unknown_keys(document.to_string().as_bytes()).unwrap();
    assert_eq!(read.unknown_keys.len(), MAX_UNKNOWN_KEYS);
    assert!(read
        .unknown_keys
        .iter()
        .all(|key| key.starts_with("resourceProfiles[].unknown")));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_requests_round_trip(request in request_strategy()) {
        let text = request_to_json_string(&request);
        let back = request_from_json(text.as_bytes()).unwrap();
        prop_assert_eq!(request.encode_to_vec(), back.encode_to_vec());
        let noted = request_from_json_noting_unknown_keys(text.as_bytes()).unwrap();
        prop_assert_eq!(request.encode_to_vec(), noted.request.encode_to_vec());
        prop_assert!(noted.unknown_keys.is_empty(), "{:?}", noted.unknown_keys);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = request_from_json(&bytes);
    }
}
