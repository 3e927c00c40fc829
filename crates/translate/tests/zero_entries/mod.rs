//! Entry 0 of every dictionary table, as real producers write it. The
//! bytes are written by hand, as each producer writes them:
//!
//! - pdata: open-telemetry/opentelemetry-collector, pdata/internal/
//!   generated_proto_*.go `MarshalProto` (writes backwards: fields in
//!   descending number order; `KeyValueAndUnit.value` always written, so
//!   `attribute_table[0]` is `12 00`; `Link{}` as `12 00 0a 00`, ids being
//!   fixed arrays written empty when all zero: pdata/internal/traceid.go,
//!   spanid.go; every other zero entry an empty message).
//! - async-profiler: async-profiler/async-profiler, src/otlp.cpp
//!   (`Recorder::recordProfilesDictionary`) over src/protobuf.cpp: length
//!   prefixes padded to 5 bytes (`startMessage`'s default) or 1;
//!   `link_table[0]` as 16 and 8 zero bytes; `function_table[0]` as
//!   `08 00` (`name_strindex` of "" written out); `mapping_table[0]` and
//!   `location_table[0]` empty; `stack_table[0]` and `attribute_table[0]`
//!   empty with a 5-byte prefix (`80 80 80 80 00`).
//!
//! Each accepted encoding decodes the same through prost and
//! `decode_request`, validates, and converts to the same pprof as the
//! request with prost's default entries; each refused one has its message.

use proptest::prelude::*;
use prost::Message;

use profbridge_pprof::{decode, encode, DecodeOptions, EncodeOptions};
use profbridge_testkit::ebpf_profiler_request;
use profbridge_testkit::{async_profiler_otlp, async_profiler_recording, pdata_encode};
use profbridge_translate::json::{request_from_json, request_to_json_string};
use profbridge_translate::otlp::{
    AnyValue, ExportProfilesServiceRequest, Function, KeyValueAndUnit, Link, Location, Mapping,
    ProfilesDictionary, Stack,
};
use profbridge_translate::{
    decode_request, merge_requests, otlp_to_pprof, validate_request, ToPprofOptions,
};

// ---- writing protobuf by hand ----

fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
    out
}

/// A varint padded to `width` bytes, as async-profiler writes lengths.
fn padded_varint(mut value: u64, width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..width - 1 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    assert!(value < 0x80);
    out.push(value as u8);
    out
}

/// A length-delimited field, its length padded to `width` bytes (1:
/// minimal for short bodies).
fn len_field(number: u32, body: &[u8], width: usize) -> Vec<u8> {
    let mut out = varint(u64::from(number << 3 | 2));
    let minimal = varint(body.len() as u64);
    out.extend(if width <= minimal.len() {
        minimal
    } else {
        padded_varint(body.len() as u64, width)
    });
    out.extend_from_slice(body);
    out
}

fn field(number: u32, body: &[u8]) -> Vec<u8> {
    len_field(number, body, 1)
}

fn varint_field(number: u32, value: u64) -> Vec<u8> {
    let mut out = varint(u64::from(number << 3));
    out.extend(varint(value));
    out
}

const TABLES: [&str; 7] = [
    "mapping_table",
    "location_table",
    "function_table",
    "link_table",
    "string_table",
    "attribute_table",
    "stack_table",
];

/// Entry 0 of each table, as its body bytes and the width of its length
/// prefix, by dictionary field number - 1.
#[derive(Debug, Clone)]
struct ZeroEntries {
    bodies: [Vec<u8>; 7],
    widths: [usize; 7],
}

impl Default for ZeroEntries {
    fn default() -> Self {
        Self {
            bodies: Default::default(),
            widths: [1; 7],
        }
    }
}

impl ZeroEntries {
    fn with(mut self, table: &str, body: &[u8]) -> Self {
        let at = TABLES.iter().position(|t| *t == table).unwrap();
        self.bodies[at] = body.to_vec();
        self
    }

    fn padded(mut self, table: &str, width: usize) -> Self {
        let at = TABLES.iter().position(|t| *t == table).unwrap();
        self.widths[at] = width;
        self
    }
}

const TRACE_ID: [u8; 16] = [
    0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c,
];
const SPAN_ID: [u8; 8] = [0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74];

/// A request whose tables hold `zero` at 0 and one real entry each, with
/// one profile of two samples that use every table; tables in ascending
/// field order, or descending (as pdata writes them).
fn request_bytes(zero: &ZeroEntries, descending: bool) -> Vec<u8> {
    let real: [Vec<u8>; 7] = [
        // mapping 1: /bin/app at 0x1000..0x2000
        [
            varint_field(1, 0x1000),
            varint_field(2, 0x2000),
            varint_field(4, 1),
        ]
        .concat(),
        // location 1: mapping 1, a line of function 1
        [
            varint_field(1, 1),
            varint_field(2, 0x1234),
            field(3, &[varint_field(1, 1), varint_field(2, 7)].concat()),
        ]
        .concat(),
        // function 1: main
        varint_field(1, 2),
        // link 1
        [field(1, &TRACE_ID), field(2, &SPAN_ID)].concat(),
        Vec::new(), // strings are written below
        // attribute 1: thread.name = "t1"
        [varint_field(1, 5), field(2, &field(1, b"t1"))].concat(),
        // stack 1: location 1
        field(1, &[1]),
    ];
    let strings = [
        "/bin/app",
        "main",
        "cpu",
        "nanoseconds",
        "thread.name",
        "t1",
    ];
    let mut tables: Vec<Vec<u8>> = Vec::new();
    for (i, body) in real.iter().enumerate() {
        let number = i as u32 + 1;
        let mut table = len_field(number, &zero.bodies[i], zero.widths[i]);
        if number == 5 {
            for s in strings {
                table.extend(field(5, s.as_bytes()));
            }
        } else {
            table.extend(field(number, body));
        }
        tables.push(table);
    }
    if descending {
        tables.reverse();
    }
    let dictionary = tables.concat();
    let value_type = [varint_field(1, 3), varint_field(2, 4)].concat();
    let samples = [
        field(
            2,
            &[
                varint_field(1, 1),
                field(2, &[1]),
                varint_field(3, 1),
                field(4, &[10]),
            ]
            .concat(),
        ),
        field(2, &[varint_field(1, 1), field(4, &[5])].concat()),
    ]
    .concat();
    let profile = [
        field(1, &value_type),
        samples,
        field(5, &value_type),
        varint_field(6, 10),
    ]
    .concat();
    let resource_profiles = field(1, &field(2, &field(2, &profile)));
    [field(2, &dictionary), resource_profiles].concat()
}

/// `request` with prost's default at entry 0 of every table.
fn with_default_zero_entries(
    request: &ExportProfilesServiceRequest,
) -> ExportProfilesServiceRequest {
    let mut request = request.clone();
    let d = request.dictionary.as_mut().unwrap();
    d.mapping_table[0] = Mapping::default();
    d.location_table[0] = Location::default();
    d.function_table[0] = Function::default();
    d.link_table[0] = Link::default();
    d.string_table[0] = String::new();
    d.attribute_table[0] = KeyValueAndUnit::default();
    d.stack_table[0] = Stack::default();
    request
}

/// Both decoders agree on `bytes`; the request.
fn decoded(bytes: &[u8]) -> ExportProfilesServiceRequest {
    let prost = ExportProfilesServiceRequest::decode(bytes).unwrap();
    let ours = decode_request(bytes).unwrap();
    assert_eq!(ours, prost, "decode_request differs from prost");
    ours
}

/// The request decodes, validates, converts like the one with default zero
/// entries, merges, and survives OTLP/JSON.
fn assert_accepted(bytes: &[u8]) -> Result<(), TestCaseError> {
    let request = decoded(bytes);
    let validated = validate_request(&request);
    prop_assert!(validated.is_ok(), "{:?}", validated.err());
    prop_assert!(validated.unwrap().invalid.is_empty());
    let options = ToPprofOptions::default();
    let ours = otlp_to_pprof(&request, &options).unwrap();
    let reference = otlp_to_pprof(&with_default_zero_entries(&request), &options).unwrap();
    prop_assert_eq!(ours.profiles.len(), 1);
    prop_assert!(ours.rejected.is_empty());
    let pprof = &ours.profiles[0].profile;
    prop_assert_eq!(pprof, &reference.profiles[0].profile);
    let values: i64 = pprof.sample.iter().flat_map(|s| &s.value).sum();
    prop_assert_eq!(values, 15);
    decode(
        &encode(pprof, &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();

    let merged = merge_requests(vec![request.clone(), request.clone()]);
    prop_assert!(validate_request(&merged).is_ok());
    let json = request_from_json(request_to_json_string(&request).as_bytes()).unwrap();
    prop_assert!(validate_request(&json).is_ok());
    Ok(())
}

/// The message the request is refused with.
fn refusal(bytes: &[u8]) -> String {
    validate_request(&decoded(bytes)).unwrap_err().to_string()
}

// ---- what producers write ----

#[test]
fn pdata_zero_entries_are_accepted() {
    // pdata: every zero entry an empty message, Link{} as its two empty
    // ids (span_id first), KeyValueAndUnit{} as its always-written value;
    // tables in descending field order.
    let zero = ZeroEntries::default()
        .with("link_table", &[0x12, 0x00, 0x0a, 0x00])
        .with("attribute_table", &[0x12, 0x00]);
    for descending in [true, false] {
        assert_accepted(&request_bytes(&zero, descending)).unwrap();
    }
}

#[test]
fn async_profiler_zero_entries_are_accepted() {
    // async-profiler: zero-filled ids, an explicit name_strindex 0, and
    // 5-byte length prefixes on the empty stack and attribute entries.
    let link = [field(1, &[0; 16]), field(2, &[0; 8])].concat();
    let zero = ZeroEntries::default()
        .with("link_table", &link)
        .with("function_table", &[0x08, 0x00])
        .padded("stack_table", 5)
        .padded("attribute_table", 5);
    assert_accepted(&request_bytes(&zero, false)).unwrap();
}

#[test]
fn other_encodings_of_the_zero_value_are_accepted() {
    let cases: [(&str, &[u8]); 12] = [
        (
            "mapping_table",
            &[0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00],
        ),
        ("mapping_table", &[0x2a, 0x00]),
        ("location_table", &[0x08, 0x00, 0x10, 0x00, 0x22, 0x00]),
        ("function_table", &[0x20, 0x00, 0x18, 0x00, 0x10, 0x00]),
        // only one of the ids, zero-filled
        (
            "link_table",
            &[0x0a, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
        ("link_table", &[0x12, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]),
        // an empty trace id beside a zero-filled span id
        (
            "link_table",
            &[0x0a, 0x00, 0x12, 0x08, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
        ("attribute_table", &[0x08, 0x00, 0x12, 0x00, 0x18, 0x00]),
        // a value whose only field is unknown to both prost and pdata
        ("attribute_table", &[0x12, 0x02, 0x48, 0x01]),
        ("stack_table", &[0x0a, 0x00]),
        // an unknown field in the entry itself
        ("stack_table", &[0x78, 0x05]),
        ("string_table", &[]),
    ];
    for (table, body) in cases {
        let zero = ZeroEntries::default().with(table, body);
        assert_accepted(&request_bytes(&zero, false))
            .unwrap_or_else(|e| panic!("{table} {body:02x?}: {e}"));
    }
}

#[test]
fn entries_that_hold_data_are_refused_naming_table_and_field() {
    let mut trace = vec![0x0a, 0x10];
    trace.extend(TRACE_ID);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("string_table", b"x".to_vec(), "string_table[0] is \"x\", must be empty"),
        (
            "mapping_table",
            varint_field(1, 4096),
            "mapping_table[0].memory_start is 4096, must be 0",
        ),
        (
            "mapping_table",
            varint_field(3, u64::MAX),
            "mapping_table[0].file_offset is 18446744073709551615, must be 0",
        ),
        (
            "mapping_table",
            field(5, &[1, 1]),
            "mapping_table[0].attribute_indices has 2 entries, must be empty",
        ),
        (
            "location_table",
            field(3, &[]),
            "location_table[0].lines has 1 entry, must be empty",
        ),
        (
            "location_table",
            varint_field(2, 1),
            "location_table[0].address is 1, must be 0",
        ),
        (
            "function_table",
            varint_field(4, u64::MAX),
            "function_table[0].start_line is -1, must be 0",
        ),
        (
            "function_table",
            varint_field(2, 2),
            "function_table[0].system_name_strindex is 2, must be 0",
        ),
        (
            "link_table",
            trace,
            "link_table[0].trace_id is 5b8efff798038103d269b633813fc60c, must be empty",
        ),
        (
            "link_table",
            field(2, &[0, 0, 0]),
            "link_table[0].span_id is 000000 (3 bytes; such an id has 8), must be empty",
        ),
        (
            "link_table",
            field(1, &[0; 8]),
            "link_table[0].trace_id is 0000000000000000 (8 bytes; such an id has 16), must be empty",
        ),
        (
            "attribute_table",
            varint_field(1, 5),
            "attribute_table[0].key_strindex is 5, must be 0",
        ),
        (
            "attribute_table",
            [field(2, &[]), varint_field(3, 4)].concat(),
            "attribute_table[0].unit_strindex is 4, must be 0",
        ),
        (
            "attribute_table",
            field(2, &field(1, b"")),
            "attribute_table[0].value is string_value \"\", must be empty",
        ),
        (
            "attribute_table",
            field(2, &varint_field(3, 0)),
            "attribute_table[0].value is int_value 0, must be empty",
        ),
        (
            "attribute_table",
            field(2, &varint_field(2, 0)),
            "attribute_table[0].value is bool_value false, must be empty",
        ),
        (
            "attribute_table",
            field(2, &varint_field(8, 0)),
            "attribute_table[0].value is string_value_strindex 0, must be empty",
        ),
        (
            "attribute_table",
            field(2, &field(5, &[])),
            "attribute_table[0].value is array_value of 0 values, must be empty",
        ),
        (
            "stack_table",
            field(1, &[0]),
            "stack_table[0].location_indices has 1 entry, must be empty",
        ),
    ];
    for (table, body, message) in cases {
        let zero = ZeroEntries::default().with(table, &body);
        for descending in [false, true] {
            assert_eq!(
                refusal(&request_bytes(&zero, descending)),
                format!("dictionary: {message}")
            );
        }
    }
}

#[test]
fn huge_entries_give_short_messages() {
    let request = decoded(&request_bytes(&ZeroEntries::default(), false));
    let mut long_string = request.clone();
    long_string.dictionary.as_mut().unwrap().string_table[0] = "x".repeat(1 << 20);
    let message = validate_request(&long_string).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "dictionary: string_table[0] is \"{}…\"",
            "x".repeat(40)
        )),
        "{message}"
    );
    let mut long_id = request;
    long_id.dictionary.as_mut().unwrap().link_table[0].trace_id = vec![0xab; 1 << 20];
    let message = validate_request(&long_id).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "dictionary: link_table[0].trace_id is {}…",
            "ab".repeat(32)
        )),
        "{message}"
    );
    assert!(message.len() < 200, "{} bytes", message.len());
}

#[test]
fn an_empty_table_has_its_own_message() {
    let request = decoded(&request_bytes(&ZeroEntries::default(), false));
    type Clear = fn(&mut ProfilesDictionary);
    let clears: [(&str, Clear); 7] = [
        ("mapping_table", |d| d.mapping_table.clear()),
        ("location_table", |d| d.location_table.clear()),
        ("function_table", |d| d.function_table.clear()),
        ("link_table", |d| d.link_table.clear()),
        ("string_table", |d| d.string_table.clear()),
        ("attribute_table", |d| d.attribute_table.clear()),
        ("stack_table", |d| d.stack_table.clear()),
    ];
    for (table, clear) in clears {
        let mut request = request.clone();
        clear(request.dictionary.as_mut().unwrap());
        assert_eq!(
            validate_request(&request).unwrap_err().to_string(),
            format!("dictionary: {table} is empty; entry 0 must be the zero value")
        );
    }
}

#[test]
fn a_pdata_encoded_ebpf_profiler_request_is_accepted() {
    let request = ebpf_profiler_request(50, 3);
    let bytes = pdata_encode(&request);
    // pdata's attribute_table[0] and link_table[0], in its field order:
    // stack_table first, so the request starts with the dictionary.
    assert!(bytes.windows(4).any(|w| w == [0x32, 0x02, 0x12, 0x00]));
    assert!(bytes
        .windows(6)
        .any(|w| w == [0x22, 0x04, 0x12, 0x00, 0x0a, 0x00]));
    assert_eq!(bytes[0], 0x12, "the dictionary comes first");
    let decoded = decoded(&bytes);
    assert_eq!(
        decoded, request,
        "pdata_encode writes what prost reads back"
    );
    assert_eq!(
        decoded.dictionary.as_ref().unwrap().attribute_table[0].value,
        Some(AnyValue { value: None })
    );
    assert!(validate_request(&decoded).unwrap().invalid.is_empty());
    let converted = otlp_to_pprof(&decoded, &ToPprofOptions::default()).unwrap();
    assert!(converted.rejected.is_empty());
    let reference = otlp_to_pprof(
        &with_default_zero_entries(&decoded),
        &ToPprofOptions::default(),
    )
    .unwrap();
    assert_eq!(converted.profiles.len(), reference.profiles.len());
    for (ours, reference) in converted.profiles.iter().zip(&reference.profiles) {
        assert_eq!(ours.profile, reference.profile);
        decode(
            &encode(&ours.profile, &EncodeOptions::default()),
            &DecodeOptions::default(),
        )
        .unwrap();
    }
}

#[test]
fn an_async_profiler_file_is_accepted() {
    let recording = async_profiler_recording();
    let bytes = async_profiler_otlp(&recording);
    let request = decoded(&bytes);
    let d = request.dictionary.as_ref().unwrap();
    assert_eq!(d.link_table[0].trace_id, vec![0; 16]);
    assert_eq!(d.link_table[0].span_id, vec![0; 8]);
    assert!(validate_request(&request).unwrap().invalid.is_empty());
    let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    assert_eq!(converted.profiles.len(), 1);
    let pprof = &converted.profiles[0].profile;
    let total: i64 = pprof.sample.iter().map(|s| s.value[0]).sum();
    let expected: u64 = recording.traces.iter().map(|t| t.samples).sum();
    assert_eq!(total, i64::try_from(expected).unwrap());
    let reference = otlp_to_pprof(
        &with_default_zero_entries(&request),
        &ToPprofOptions::default(),
    )
    .unwrap();
    assert_eq!(pprof, &reference.profiles[0].profile);
    decode(
        &encode(pprof, &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();
}

// ---- properties ----

/// An encoding of entry 0 that pdata reads as the zero value: explicit
/// zero scalars and empty packed lists in any order, unknown fields, ids
/// empty or zero-filled, a present empty value.
fn zero_body(table: usize) -> BoxedStrategy<Vec<u8>> {
    let zero_varints = |numbers: &'static [u32]| {
        proptest::sample::subsequence(numbers, 0..=numbers.len()).prop_map(|chosen| {
            chosen
                .iter()
                .map(|&n| varint_field(n, 0))
                .collect::<Vec<_>>()
        })
    };
    let id = |size: usize| {
        prop_oneof![
            Just(None),
            Just(Some(Vec::new())),
            Just(Some(vec![0u8; size])),
        ]
    };
    let parts: BoxedStrategy<Vec<Vec<u8>>> = match table {
        0 => (zero_varints(&[1, 2, 3, 4]), any::<bool>())
            .prop_map(|(mut parts, packed)| {
                if packed {
                    parts.push(field(5, &[]));
                }
                parts
            })
            .boxed(),
        1 => (zero_varints(&[1, 2]), any::<bool>())
            .prop_map(|(mut parts, packed)| {
                if packed {
                    parts.push(field(4, &[]));
                }
                parts
            })
            .boxed(),
        2 => zero_varints(&[1, 2, 3, 4]).boxed(),
        3 => (id(16), id(8))
            .prop_map(|(trace, span)| {
                let mut parts = Vec::new();
                parts.extend(trace.map(|t| field(1, &t)));
                parts.extend(span.map(|s| field(2, &s)));
                parts
            })
            .boxed(),
        4 => Just(Vec::new()).boxed(),
        5 => (zero_varints(&[1, 3]), 0..3usize)
            .prop_map(|(mut parts, value)| {
                match value {
                    1 => parts.push(field(2, &[])),
                    2 => parts.push(field(2, &varint_field(15, 3))),
                    _ => {}
                }
                parts
            })
            .boxed(),
        _ => any::<bool>()
            .prop_map(|packed| if packed { vec![field(1, &[])] } else { vec![] })
            .boxed(),
    };
    let unknown = table != 4;
    (parts, any::<bool>(), any::<u64>())
        .prop_flat_map(move |(parts, with_unknown, seed)| {
            let mut parts = parts;
            if with_unknown && unknown {
                parts.push(varint_field(17, seed % 1000));
            }
            Just(parts).prop_shuffle()
        })
        .prop_map(|parts| parts.concat())
        .boxed()
}

fn zero_entries() -> impl Strategy<Value = ZeroEntries> {
    let bodies: Vec<BoxedStrategy<Vec<u8>>> = (0..7).map(zero_body).collect();
    (bodies, proptest::collection::vec(1..=5usize, 7)).prop_map(|(bodies, widths)| ZeroEntries {
        bodies: bodies.try_into().unwrap(),
        widths: widths.try_into().unwrap(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_zero_encoding_is_accepted_and_converts_as_the_default(
        zero in zero_entries(),
        descending in any::<bool>(),
    ) {
        assert_accepted(&request_bytes(&zero, descending))?;
    }

    /// One field of one table's entry 0 set to something that is not zero:
    /// refused, naming that table and field.
    #[test]
    fn a_set_field_is_refused_with_its_name(
        zero in zero_entries(),
        (table, field_number, name) in prop_oneof![
            Just((0usize, 1u32, "memory_start")),
            Just((0, 2, "memory_limit")),
            Just((0, 3, "file_offset")),
            Just((0, 4, "filename_strindex")),
            Just((1, 1, "mapping_index")),
            Just((1, 2, "address")),
            Just((2, 1, "name_strindex")),
            Just((2, 3, "filename_strindex")),
            Just((2, 4, "start_line")),
            Just((5, 1, "key_strindex")),
            Just((5, 3, "unit_strindex")),
        ],
        value in 1..10_000u64,
    ) {
        let mut body = zero.bodies[table].clone();
        body.extend(varint_field(field_number, value));
        let mut zero = zero;
        zero.bodies[table] = body;
        let message = refusal(&request_bytes(&zero, false));
        prop_assert_eq!(
            message,
            format!("dictionary: {}[0].{name} is {value}, must be 0", TABLES[table])
        );
    }
}

/// OTLP/JSON as pdata writes it (`KeyValueAndUnit.MarshalJSON` always
/// writes `"value"`, so `attribute_table[0]` is `{"value":{}}`; `Link{}` is
/// `{}`), and zero-filled ids as hex.
#[test]
fn pdata_shaped_json_is_accepted() {
    let json = r#"{"dictionary": {
      "mappingTable": [{}], "locationTable": [{}, {"lines": [{"functionIndex": 1}]}],
      "functionTable": [{}, {"nameStrindex": 1}],
      "linkTable": [{"traceId": "00000000000000000000000000000000", "spanId": "0000000000000000"}],
      "stringTable": ["", "main", "samples", "count"],
      "attributeTable": [{"value": {}}],
      "stackTable": [{}, {"locationIndices": [1]}]},
     "resourceProfiles": [{"scopeProfiles": [{"profiles": [{
       "sampleType": {"typeStrindex": 2, "unitStrindex": 3},
       "samples": [{"stackIndex": 1, "timestampsUnixNano": ["1700000000000000000", "1700000000000000001"]}]
     }]}]}]}"#;
    let request = request_from_json(json.as_bytes()).unwrap();
    let d = request.dictionary.as_ref().unwrap();
    assert_eq!(d.attribute_table[0].value, Some(AnyValue { value: None }));
    assert_eq!(d.link_table[0].trace_id, vec![0; 16]);
    assert!(validate_request(&request).unwrap().invalid.is_empty());
    let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    let pprof = &converted.profiles[0].profile;
    assert_eq!(pprof.sample.iter().map(|s| s.value[0]).sum::<i64>(), 2);
}
