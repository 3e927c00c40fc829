#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The `symbolize` processor in a running collector: a gperftools CPU
//! profile of optimized C++ (crates/testkit/src/native.rs), sent as OTLP,
//! leaves the pipeline with the functions, files, lines and inline chains
//! `llvm-symbolizer --inlines` gives.

use std::collections::BTreeMap;
use std::time::Duration;

use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::service;
use profbridge_collector::settings::client::ClientSettings;
use profbridge_testkit::native::{
    assert_matches_oracle, gperftools_cpu_profile_of, locations_of, native_programs,
};
use profbridge_testkit::{files_under, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_symbolize_processor_resolves_as_llvm_symbolizer_does() {
    let Some(programs) = native_programs("the symbolize processor's test against llvm-symbolizer")
    else {
        return;
    };
    let dir = TempDir::new("symbolize-processor");
    let data = dir.path().join("data");
    let profile =
        profbridge_pprof::parse_legacy(&gperftools_cpu_profile_of(&programs.pie, dir.path()))
            .unwrap();
    let request = pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    )
    .request;
    assert!(locations_of(&request, &programs.pie)
        .iter()
        .all(|(_, lines)| lines.is_empty()));

    // No time budget: what this test checks must not depend on how fast
    // the machine is (the budget is tested in crates/symbolize).
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  symbolize:\n    root: /\n    debug_directories: [/nonexistent]\n    timeout: 0s\n\
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
    // Shutting down exports everything accepted.
    assert!(running.shutdown(Duration::from_secs(30)).await);

    let written: Vec<ExportProfilesServiceRequest> = files_under(&data, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect();
    assert_eq!(written.len(), 1);
    let (compared, inlined) = assert_matches_oracle(&written[0], &programs.pie, &programs.pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let (in_library, _) = assert_matches_oracle(&written[0], &programs.library, &programs.library);
    assert!(in_library >= 1);
}
