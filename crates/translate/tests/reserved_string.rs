//! The reserved string (docs/mapping.md): what the encoded pprofs carry,
//! and what pprof → OTLP does with reserved strings that are malformed,
//! referenced, or disagree with the pprof's fields.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{decode, decode_packed_keeping_raw, DecodeOptions, Profile as Pprof};
use profbridge_translate::canonical::canonicalize;
use profbridge_translate::otlp::{
    bool_value, int_value, string_value, ExportProfilesServiceRequest, Function, Line, Location,
    Mapping, Profile, Resource, ResourceProfiles, Sample, ScopeProfiles, ValueType,
};
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, DictionaryBuilder, PprofConverter, PprofInput, ToOtlpOptions,
    ToPprofOptions,
};

const PREFIX: &str = "profbridge.otlp.v1:";
const HTLHASH: &str = "0123456789abcdef0123456789abcdef";

/// One sample on one location of a mapping whose only build id is an
/// htlhash one, with an extra attribute, and a resource schema URL.
fn request() -> ExportProfilesServiceRequest {
    let mut d = DictionaryBuilder::new();
    let build_id = d.attribute(
        "process.executable.build_id.htlhash",
        string_value(HTLHASH),
        "",
    );
    let flag = d.attribute("pprof.mapping.has_functions", bool_value(true), "");
    let size = d.attribute("mapping.size", int_value(4096), "By");
    let filename_strindex = d.string("/usr/bin/app");
    let mapping = d.mapping(Mapping {
        memory_start: 0x1000,
        memory_limit: 0x9000,
        file_offset: 0,
        filename_strindex,
        attribute_indices: vec![build_id, flag, size],
    });
    let name_strindex = d.string("main");
    let function = d.function(Function {
        name_strindex,
        ..Function::default()
    });
    let location = d.location(Location {
        mapping_index: mapping,
        address: 0x1234,
        lines: vec![Line {
            function_index: function,
            line: 3,
            column: 0,
        }],
        attribute_indices: Vec::new(),
    });
    let stack = d.stack(&[location]);
    let sample_type = ValueType {
        type_strindex: d.string("samples"),
        unit_strindex: d.string("count"),
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource::default()),
            scope_profiles: vec![ScopeProfiles {
                scope: None,
                profiles: vec![Profile {
                    sample_type: Some(sample_type),
                    samples: vec![Sample {
                        stack_index: stack,
                        values: vec![5],
                        ..Sample::default()
                    }],
                    ..Profile::default()
                }],
                schema_url: String::new(),
            }],
            schema_url: "https://opentelemetry.io/schemas/1.26.0".into(),
        }],
        dictionary: Some(d.finish()),
    }
}

fn to_pprof(request: &ExportProfilesServiceRequest) -> Pprof {
    let converted = otlp_to_pprof(request, &ToPprofOptions::default()).unwrap();
    assert!(converted.rejected.is_empty());
    converted.profiles.into_iter().next().unwrap().profile
}

/// The request `p` converts to; the same, byte for byte, from `p` decoded
/// with its samples left packed in its protobuf.
fn to_otlp(p: &Pprof) -> ExportProfilesServiceRequest {
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: p,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert!(converted.rejected.is_empty(), "{:?}", converted.rejected);
    let bytes = prost::Message::encode_to_vec(p);
    let (packed, _) = decode_packed_keeping_raw(bytes.into(), &DecodeOptions::default()).unwrap();
    let from_packed = pprof_to_otlp(
        &[PprofInput {
            profile: &packed,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert_eq!(from_packed.request, converted.request);
    converted.request
}

/// The mapping's attributes as (key, value) text, in order.
fn mapping_attributes(request: &ExportProfilesServiceRequest) -> Vec<String> {
    let d = request.dictionary.as_ref().unwrap();
    d.mapping_table[1]
        .attribute_indices
        .iter()
        .map(|&a| {
            let a = &d.attribute_table[a as usize];
            format!(
                "{}={:?}",
                d.string_table[a.key_strindex as usize],
                a.value.as_ref().unwrap().value
            )
        })
        .collect()
}

#[test]
fn an_htlhash_id_keeps_its_kind_and_the_mapping_its_attributes() {
    let original = request();
    let p = to_pprof(&original);
    assert_eq!(p.string_table[p.mapping[0].build_id as usize], HTLHASH);
    assert!(p.string_table.last().unwrap().starts_with(PREFIX));
    let back = to_otlp(&p);
    assert_eq!(
        canonicalize(&back)[0].schema_url,
        canonicalize(&original)[0].schema_url
    );
    let attributes = mapping_attributes(&back);
    assert_eq!(attributes.len(), 3, "{attributes:?}");
    assert!(attributes[0].starts_with("process.executable.build_id.htlhash="));
}

/// The file exporter encodes through `PprofConverter`: its bytes carry the
/// reserved string, and reading them back gives the request again.
#[test]
fn the_file_exporters_pprof_bytes_carry_the_reserved_string() {
    let original = request();
    let mut converter = PprofConverter::new(ToPprofOptions::default());
    let converted = converter.convert(&original).unwrap();
    let mut bytes = Vec::new();
    converter.encode_into(&converted.profiles[0].profile, &mut bytes);
    assert_eq!(
        converted.profiles[0].resource_schema_url,
        "https://opentelemetry.io/schemas/1.26.0"
    );
    let p = decode(&bytes, &DecodeOptions::default()).unwrap();
    assert!(p.string_table.last().unwrap().starts_with(PREFIX));
    let back = to_otlp(&p);
    let (mut expected, actual) = (canonicalize(&original), canonicalize(&back));
    // The scope is profbridge's on the way back (none was given).
    expected[0].scopes[0].name = actual[0].scopes[0].name.clone();
    expected[0].scopes[0].version = actual[0].scopes[0].version.clone();
    assert_eq!(expected, actual);
}

#[test]
fn a_malformed_reserved_string_is_ignored() {
    let p = to_pprof(&request());
    for garbage in [
        "{",
        "[]",
        "{\"mappings\":[{\"id\":\"x\"}]}",
        "{\"mappings\":[{\"id\":1,\"attributes\":[{\"key\":\"k\",\"value\":{\"intValue\":\"one\"}}]}]}",
        "{\"locations\":7}",
        "{\"resourceSchemaUrl\":1}",
    ] {
        let mut broken = p.clone();
        *broken.string_table.last_mut().unwrap() = format!("{PREFIX}{garbage}");
        let back = to_otlp(&broken);
        // As if there were no reserved string: the id comes back as gnu.
        assert_eq!(
            mapping_attributes(&back),
            [
                format!("process.executable.build_id.gnu={:?}", Some(string_value(HTLHASH).value.unwrap())),
                format!("pprof.mapping.has_functions={:?}", Some(bool_value(true).value.unwrap())),
            ],
            "{garbage}"
        );
        assert_eq!(back.resource_profiles[0].schema_url, "");
    }
}

#[test]
fn a_mapping_entry_that_disagrees_with_the_fields_is_ignored() {
    let mut p = to_pprof(&request());
    // A tool changed the mapping's build id but kept the reserved string.
    let build_id = p.mapping[0].build_id as usize;
    p.string_table[build_id] = "feedface".into();
    profbridge_pprof::validate(&p).unwrap();
    let back = to_otlp(&p);
    assert_eq!(
        mapping_attributes(&back)[0],
        format!(
            "process.executable.build_id.gnu={:?}",
            Some(string_value("feedface").value.unwrap())
        )
    );
    // The schema URL still comes back: only the mapping entry disagrees.
    assert_eq!(
        back.resource_profiles[0].schema_url,
        "https://opentelemetry.io/schemas/1.26.0"
    );
}

#[test]
fn a_referenced_string_with_the_prefix_is_ordinary() {
    let mut p = to_pprof(&request());
    p.string_table.pop();
    // A label whose value looks like a reserved string, last in the table.
    p.string_table.push("note".into());
    p.string_table
        .push(format!("{PREFIX}{{\"resourceSchemaUrl\":\"x\"}}"));
    let n = p.string_table.len() as i64;
    p.sample[0].label.push(profbridge_pprof::Label {
        key: n - 2,
        str: n - 1,
        ..profbridge_pprof::Label::default()
    });
    let back = to_otlp(&p);
    assert_eq!(back.resource_profiles[0].schema_url, "");
    let d = back.request_dictionary();
    let sample = &back.resource_profiles[0].scope_profiles[0].profiles[0].samples[0];
    let value = &d.attribute_table[sample.attribute_indices[0] as usize];
    assert_eq!(
        value.value.as_ref().unwrap().value,
        string_value(format!("{PREFIX}{{\"resourceSchemaUrl\":\"x\"}}")).value
    );
}

trait Dictionary {
    fn request_dictionary(&self) -> &profbridge_translate::otlp::ProfilesDictionary;
}

impl Dictionary for ExportProfilesServiceRequest {
    fn request_dictionary(&self) -> &profbridge_translate::otlp::ProfilesDictionary {
        self.dictionary.as_ref().unwrap()
    }
}
