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

#[path = "support/raw_text.rs"]
mod raw_text;

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
