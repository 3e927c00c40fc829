//! `go tool pprof -raw` reads profbridge's OTLP → pprof output, with the
//! same totals per sample type as the OTLP input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{encode, EncodeOptions};
use profbridge_testkit::{ebpf_like_request, require_tool, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{otlp_to_pprof, ToPprofOptions};

use crate::raw_text;

use raw_text::{go_tool_pprof_raw, RawText};

/// (type/unit, total) per OTLP profile: values summed, a timestamps-only
/// sample counting 1 per timestamp.
fn otlp_totals(request: &ExportProfilesServiceRequest) -> Vec<(String, i64)> {
    let d = request.dictionary.as_ref().unwrap();
    let text = |i: i32| d.string_table[i as usize].clone();
    let mut totals = Vec::new();
    for profile in request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
    {
        let sample_type = profile.sample_type.unwrap();
        let total = profile
            .samples
            .iter()
            .map(|s| {
                if s.values.is_empty() {
                    s.timestamps_unix_nano.len() as i64
                } else {
                    s.values.iter().sum()
                }
            })
            .sum();
        totals.push((
            format!(
                "{}/{}",
                text(sample_type.type_strindex),
                text(sample_type.unit_strindex)
            ),
            total,
        ));
    }
    totals.sort();
    totals
}

#[test]
fn go_tool_pprof_reads_our_otlp_to_pprof_output_with_the_same_totals() {
    if require_tool("go", &["version"], "the OTLP → pprof interop test").is_none() {
        return;
    }
    let dir = TempDir::new("otlp-go-interop");
    let mut timestamps_only = ebpf_like_request(300, 7);
    for sample in &mut timestamps_only.resource_profiles[0].scope_profiles[0].profiles[0].samples {
        sample.values.clear();
    }
    for (name, request) in [
        ("ebpf-like", ebpf_like_request(500, 3)),
        ("timestamps-only", timestamps_only),
    ] {
        let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
        assert!(converted.rejected.is_empty());
        assert_eq!(converted.profiles.len(), 1);
        let written = dir.path().join(format!("{name}.pb.gz"));
        std::fs::write(
            &written,
            encode(&converted.profiles[0].profile, &EncodeOptions::default()),
        )
        .unwrap();

        let raw = go_tool_pprof_raw(&written, dir.path()).unwrap_or_else(|stderr| {
            panic!("go tool pprof -raw {} failed: {stderr}", written.display())
        });
        let theirs = RawText::parse(&raw);
        let mut go_totals: Vec<(String, i64)> = theirs
            .sample_types
            .iter()
            .cloned()
            .zip(theirs.totals())
            .collect();
        go_totals.sort();
        assert_eq!(go_totals, otlp_totals(&request), "{name}");
    }
}

/// Adds to `request` what pprof has no field for: three build ids of
/// different kinds on every mapping (the gnu one primary), an attribute on
/// every location and profile, and schema URLs.
fn with_otlp_only_data(mut request: ExportProfilesServiceRequest) -> ExportProfilesServiceRequest {
    use profbridge_translate::otlp::{int_value, string_value, AnyValue, KeyValueAndUnit};
    let d = request.dictionary.as_mut().unwrap();
    let mut attribute = |key: &str, value: AnyValue, unit: &str| {
        let mut string = |s: &str| {
            d.string_table.push(s.to_owned());
            (d.string_table.len() - 1) as i32
        };
        let entry = KeyValueAndUnit {
            key_strindex: string(key),
            value: Some(value),
            unit_strindex: string(unit),
        };
        d.attribute_table.push(entry);
        (d.attribute_table.len() - 1) as i32
    };
    let gnu = attribute(
        "process.executable.build_id.gnu",
        string_value("c0ffee00112233445566778899aabbccddeeff00"),
        "",
    );
    let go = attribute(
        "process.executable.build_id.go",
        string_value("abc_DEF/ghi-123"),
        "",
    );
    let htlhash = attribute(
        "process.executable.build_id.htlhash",
        string_value("0123456789abcdef0123456789abcdef"),
        "",
    );
    let extra = attribute("frame.cost", int_value(7), "ms");
    let profile_attribute = attribute("profile.note", string_value("from the agent"), "");
    let d = request.dictionary.as_mut().unwrap();
    for mapping in d.mapping_table.iter_mut().skip(1) {
        mapping.attribute_indices = vec![htlhash, go, gnu];
    }
    for location in d.location_table.iter_mut().skip(1) {
        location.attribute_indices.push(extra);
    }
    for resource in &mut request.resource_profiles {
        resource.schema_url = "https://opentelemetry.io/schemas/1.26.0".into();
        for scope in &mut resource.scope_profiles {
            scope.schema_url = "https://opentelemetry.io/schemas/1.27.0".into();
            for profile in &mut scope.profiles {
                profile.attribute_indices.push(profile_attribute);
            }
        }
    }
    request
}

/// A pprof carrying the reserved string reads in `go tool pprof` exactly as
/// the same pprof without it, and its `Mapping.build_id` is the primary
/// (gnu) id; profbridge reads every build id back with its kind.
#[test]
fn go_tool_pprof_reads_a_pprof_with_the_reserved_string_as_without_it() {
    use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};
    if require_tool("go", &["version"], "the reserved-string interop test").is_none() {
        return;
    }
    let dir = TempDir::new("otlp-go-reserved");
    let request = with_otlp_only_data(ebpf_like_request(300, 5));
    let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    assert!(converted.rejected.is_empty());
    let with = converted.profiles[0].profile.clone();
    let reserved = with.string_table.last().unwrap();
    assert!(reserved.starts_with("profbridge.otlp.v1:"), "{reserved}");
    let mut without = with.clone();
    without.string_table.pop();
    for mapping in &with.mapping {
        assert_eq!(
            with.string_table[mapping.build_id as usize],
            "c0ffee00112233445566778899aabbccddeeff00"
        );
    }

    let with_file = dir.path().join("with.pb.gz");
    let without_file = dir.path().join("without.pb.gz");
    std::fs::write(&with_file, encode(&with, &EncodeOptions::default())).unwrap();
    std::fs::write(&without_file, encode(&without, &EncodeOptions::default())).unwrap();
    for args in [
        &["-raw", "-symbolize=none"][..],
        &["-top", "-symbolize=none", "-nodecount=1000"][..],
    ] {
        let run = |file: &std::path::Path| {
            raw_text::go_tool_pprof(args, file, dir.path())
                .unwrap_or_else(|stderr| panic!("go tool pprof {args:?} failed: {stderr}"))
                // -top names the file it read.
                .replace(file.to_str().unwrap(), "FILE")
        };
        let (theirs_with, theirs_without) = (run(&with_file), run(&without_file));
        assert_eq!(theirs_with, theirs_without, "go tool pprof {args:?}");
        if args[0] == "-raw" {
            assert!(
                theirs_with.contains("c0ffee00112233445566778899aabbccddeeff00"),
                "the primary build id is the mapping's: {theirs_with}"
            );
            assert!(!theirs_with.contains("profbridge.otlp"));
        }
    }

    // profbridge reads the reserved string back: every build id, its kind.
    let back = pprof_to_otlp(
        &[PprofInput {
            profile: &with,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert!(back.rejected.is_empty());
    let d = back.request.dictionary.as_ref().unwrap();
    let keys: Vec<&str> = d.mapping_table[1]
        .attribute_indices
        .iter()
        .map(|&a| d.string_table[d.attribute_table[a as usize].key_strindex as usize].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "process.executable.build_id.htlhash",
            "process.executable.build_id.go",
            "process.executable.build_id.gnu"
        ]
    );
    assert_eq!(
        back.request.resource_profiles[0].schema_url,
        "https://opentelemetry.io/schemas/1.26.0"
    );
}
