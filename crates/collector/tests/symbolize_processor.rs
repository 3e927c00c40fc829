#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The `symbolize` processor in a running collector: a gperftools CPU
//! profile of optimized C++ (crates/testkit/src/native.rs), sent as OTLP,
//! leaves the pipeline with the functions, files, lines and inline chains
//! `llvm-symbolizer --inlines` gives, from the binaries and from build-id
//! debug files of stripped ones. Mapping paths are opened under a root
//! whose symbolic links cannot lead out of it, and the processor's counters
//! say what happened to each location.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::service;
use profbridge_collector::settings::client::ClientSettings;
use profbridge_collector::telemetry::Registry;
use profbridge_testkit::debuginfod::DebuginfodServer;
use profbridge_testkit::ebpf_profiler::{
    ebpf_profiler_native_request, profiler_locations_of, NativeFrames,
};
use profbridge_testkit::native::{
    add_build_id, assert_frames_match_oracle, assert_matches_oracle, build_id,
    gperftools_cpu_profile_of, locations_of, native_programs, split_into_build_id_tree, under,
};
use profbridge_testkit::require_tool;
use profbridge_testkit::{files_under, TempDir};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, Location, Mapping};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_symbolize_processor_resolves_as_llvm_symbolizer_does() {
    let Some(programs) = native_programs("the symbolize processor's test against llvm-symbolizer")
    else {
        return;
    };
    let dir = TempDir::new("symbolize-processor");
    // The program is reached through an absolute link inside the root; the
    // library's link points at a copy outside the root, which the processor
    // must not open.
    let root = dir.path().join("root");
    let inside = root.join("opt/app/program");
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::copy(&programs.pie, &inside).unwrap();
    let outside = dir.path().join("outside").join("library.so");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::copy(&programs.library, &outside).unwrap();
    for (file, target) in [
        (&programs.pie, Path::new("/opt/app/program")),
        (&programs.library, outside.as_path()),
    ] {
        let link = under(&root, file);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &link).unwrap();
    }
    let mut request = request_of(&gperftools_cpu_profile_of(&programs.pie, dir.path()));
    add_location_outside_root(&mut request);
    assert!(locations_of(&request, &programs.pie)
        .iter()
        .all(|(_, lines)| lines.is_empty()));

    let (written, metrics) = through_the_processor(
        &format!(
            "root: {}\n    debug_directories: [/nonexistent]",
            root.display()
        ),
        &request,
        &dir.path().join("data"),
    )
    .await;
    let (compared, inlined) = assert_matches_oracle(&written, &programs.pie, &programs.pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let written = &written;
    let library = locations_of(written, &programs.library);
    assert!(!library.is_empty(), "no samples in our shared library");
    assert!(library.iter().all(|(_, lines)| lines.is_empty()));
    let dictionary = written.dictionary.as_ref().unwrap();
    let outside: Vec<_> = dictionary
        .location_table
        .iter()
        .filter(|location| {
            let mapping = &dictionary.mapping_table[location.mapping_index as usize];
            location.mapping_index != 0
                && dictionary.string_table[mapping.filename_strindex as usize] == OUTSIDE_ROOT
        })
        .collect();
    assert_eq!(outside.len(), 1);
    assert!(outside[0].lines.is_empty());

    let symbolized = locations_of(written, &programs.pie);
    let frames: usize = symbolized.iter().map(|(_, lines)| lines.len()).sum();
    let total = |name: &str, reason: Option<&str>| -> f64 {
        metrics
            .series(name)
            .iter()
            .filter(|(labels, _)| {
                labels.contains(&("processor".to_owned(), "symbolize".to_owned()))
                    && reason.is_none_or(|r| labels.contains(&("reason".to_owned(), r.to_owned())))
            })
            .map(|(_, value)| value)
            .sum()
    };
    assert_eq!(
        total("profbridge_symbolize_locations_total", None),
        symbolized.len() as f64
    );
    assert_eq!(
        total("profbridge_symbolize_frames_total", None),
        frames as f64
    );
    // The library's locations, and those of the C library and others
    // that are not under the root, are not found; the path that climbs
    // out of the root is refused.
    let without_lines = dictionary
        .location_table
        .iter()
        .skip(1)
        .filter(|l| l.lines.is_empty());
    assert!(
        total("profbridge_symbolize_misses_total", Some("file_not_found")) >= library.len() as f64
    );
    assert_eq!(
        total("profbridge_symbolize_misses_total", Some("file_unusable")),
        1.0
    );
    assert_eq!(
        total("profbridge_symbolize_misses_total", None),
        without_lines.count() as f64
    );
    assert!(total("profbridge_symbolize_seconds_total", None) > 0.0);
    // Each location with a mapping to look in asks for its file once; each
    // whose file was found asks for its address once.
    let lookups = |cache: &str| -> f64 {
        metrics
            .series("profbridge_symbolize_cache_lookups_total")
            .iter()
            .filter(|(labels, _)| labels.contains(&("cache".to_owned(), cache.to_owned())))
            .map(|(_, value)| value)
            .sum()
    };
    assert_eq!(
        lookups("files"),
        total("profbridge_symbolize_locations_total", None)
            + total("profbridge_symbolize_misses_total", None)
            - total("profbridge_symbolize_misses_total", Some("no_mapping"))
    );
    assert_eq!(
        lookups("addresses"),
        symbolized.len() as f64 + total("profbridge_symbolize_misses_total", Some("no_symbol"))
    );
    // The program's file is open, the library's and the refused one are
    // not.
    let inside_bytes = std::fs::metadata(&inside).unwrap().len() as f64;
    let cached = total("profbridge_symbolize_cache_bytes", None);
    assert!(cached >= inside_bytes, "{cached} < {inside_bytes}");
}

const OUTSIDE_ROOT: &str = "/usr/../../etc/passwd";

/// Adds a mapping whose path climbs out of the root, and a location in it.
fn add_location_outside_root(request: &mut ExportProfilesServiceRequest) {
    let dictionary = request.dictionary.as_mut().unwrap();
    dictionary.string_table.push(OUTSIDE_ROOT.to_owned());
    let mapping_index = dictionary.mapping_table.len() as i32;
    dictionary.mapping_table.push(Mapping {
        memory_start: 0x1000,
        memory_limit: 0x2000,
        filename_strindex: dictionary.string_table.len() as i32 - 1,
        ..Mapping::default()
    });
    dictionary.location_table.push(Location {
        mapping_index,
        address: 0x1100,
        ..Location::default()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripped_binaries_resolve_through_build_id_debug_files_in_the_processor() {
    let Some(programs) = native_programs("the symbolize processor's test against llvm-symbolizer")
    else {
        return;
    };
    let dir = TempDir::new("symbolize-processor-debug-files");
    let root = dir.path().join("root");
    let debug = dir.path().join("debug");
    for file in [&programs.pie, &programs.library] {
        split_into_build_id_tree(file, &root, &debug);
    }
    let request = request_of(&gperftools_cpu_profile_of(&programs.pie, dir.path()));
    let (written, _) = through_the_processor(
        &format!(
            "root: {}\n    debug_directories: [{}]",
            root.display(),
            debug.display()
        ),
        &request,
        &dir.path().join("data"),
    )
    .await;
    // The oracle reads the unstripped files.
    let (compared, inlined) = assert_matches_oracle(&written, &programs.pie, &programs.pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let (in_library, _) = assert_matches_oracle(&written, &programs.library, &programs.library);
    assert!(in_library >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_fetched_from_a_debuginfod_server_resolve_in_the_processor() {
    const PURPOSE: &str = "the symbolize processor's test against a debuginfod server";
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    if require_tool("debuginfod", &["--version"], PURPOSE).is_none() {
        return;
    }
    let dir = TempDir::new("symbolize-processor-debuginfod");
    // Nothing is read from the local machine: the mapping paths do not
    // exist under the root.
    let server = DebuginfodServer::serving_programs(&programs, dir.path());
    let mut request = request_of(&gperftools_cpu_profile_of(&programs.pie, dir.path()));
    let ids = [build_id(&programs.pie), build_id(&programs.library)];
    for (file, id) in [&programs.pie, &programs.library].into_iter().zip(&ids) {
        add_build_id(&mut request, file, id);
    }
    server.wait_for(&ids);
    let cache = dir.path().join("cache");
    let (written, metrics) = through_the_processor(
        &format!(
            "root: \"\"\n    debuginfod:\n      urls: [{}]\n      cache_dir: {}\n      timeout: 30s",
            server.url,
            cache.display()
        ),
        &request,
        &dir.path().join("data"),
    )
    .await;
    let (compared, inlined) = assert_matches_oracle(&written, &programs.pie, &programs.pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let (in_library, _) = assert_matches_oracle(&written, &programs.library, &programs.library);
    assert!(in_library >= 1);
    let misses: f64 = metrics
        .series("profbridge_symbolize_misses_total")
        .iter()
        .filter(|(labels, _)| {
            labels.contains(&("reason".to_owned(), "debuginfod_failed".to_owned()))
        })
        .map(|(_, value)| value)
        .sum();
    assert_eq!(misses, 0.0);
    assert!(cache.join(&ids[0]).join("debuginfo").is_file());

    // The same samples as the eBPF profiler sends them (base names, ELF
    // addresses, build ids), through a new cache: fetched again.
    let native: Vec<NativeFrames> = [&programs.pie, &programs.library]
        .into_iter()
        .map(|file| NativeFrames {
            file: file.clone(),
            addresses: locations_of(&request, file)
                .into_iter()
                .map(|(a, _)| a)
                .collect(),
        })
        .collect();
    let profiled = ebpf_profiler_native_request(&programs.pie, &native, &[], &[]);
    let (written, _) = through_the_processor(
        &format!(
            "root: \"\"\n    debuginfod:\n      urls: [{}]\n      cache_dir: {}\n      timeout: 30s",
            server.url,
            dir.path().join("second-cache").display()
        ),
        &profiled,
        &dir.path().join("second-data"),
    )
    .await;
    for (frames, file) in native.iter().zip([&programs.pie, &programs.library]) {
        let (compared, _) =
            assert_frames_match_oracle(&profiler_locations_of(&written, file), file, file);
        assert_eq!(compared, frames.addresses.len());
    }
}

/// The OTLP form of a gperftools profile, as agents send it.
fn request_of(gperftools_profile: &[u8]) -> ExportProfilesServiceRequest {
    let profile = profbridge_pprof::parse_legacy(gperftools_profile).unwrap();
    pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    )
    .request
}

/// Sends `request` to a collector whose pipeline runs a `symbolize`
/// processor with `options` (YAML under it) into an OTLP file exporter
/// writing under `data`; returns what was written and the collector's
/// metrics.
async fn through_the_processor(
    options: &str,
    request: &ExportProfilesServiceRequest,
    data: &Path,
) -> (ExportProfilesServiceRequest, Arc<Registry>) {
    // No time budget: what these tests check must not depend on how fast
    // the machine is (the budget is tested in crates/symbolize).
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  symbolize:\n    {options}\n    timeout: 0s\n\
         exporters:\n  file:\n    path: {}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      processors: [symbolize]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        data.display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let grpc = running
        .listening
        .iter()
        .find(|endpoint| endpoint.what.contains("gRPC"))
        .unwrap()
        .address;
    let exporter = OtlpGrpcExporter::new(&OtlpExporterConfig {
        client: ClientSettings {
            endpoint: format!("http://{grpc}"),
            ..ClientSettings::default()
        },
        ..OtlpExporterConfig::default()
    })
    .unwrap();
    exporter
        .export(&Profiles::new(request.clone(), request.encoded_len()))
        .await
        .unwrap();
    let metrics = Arc::clone(&running.metrics);
    // Shutting down exports everything accepted.
    assert!(running.shutdown(Duration::from_secs(30)).await);
    let mut written: Vec<ExportProfilesServiceRequest> = files_under(data, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect();
    assert_eq!(written.len(), 1);
    (written.remove(0), metrics)
}
