#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! Processors in a running collector: requests received over OTLP go
//! through `resource` and `batch` before the file exporter writes them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::service::{self, Running};
use profbridge_collector::settings::client::ClientSettings;
use profbridge_testkit::{ebpf_like_request, files_under, TempDir};
use profbridge_translate::otlp::{any_value, ExportProfilesServiceRequest};

const REQUESTS: u64 = 5;
const STACKS: usize = 20;

fn sample_count(request: &ExportProfilesServiceRequest) -> usize {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum()
}

fn written(dir: &Path) -> Vec<ExportProfilesServiceRequest> {
    files_under(dir, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect()
}

async fn start(dir: &Path, batch_size: usize) -> (Running, SocketAddr) {
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  resource:\n    attributes:\n      - {{key: deployment.environment, value: test, action: upsert}}\n      - {{key: service.name, action: delete}}\n\
         \x20 batch:\n    send_batch_size: {batch_size}\n    timeout: 5s\n\
         exporters:\n  file:\n    path: {}\n    format: otlp\n    path_template: \"{{deployment.environment}}/{{seq}}.otlp.pb\"\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      processors: [resource, batch]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        dir.display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let grpc = running
        .listening
        .iter()
        .find(|endpoint| endpoint.what.contains("gRPC"))
        .unwrap()
        .address;
    (running, grpc)
}

async fn send(grpc: SocketAddr, requests: &[ExportProfilesServiceRequest]) {
    let exporter = OtlpGrpcExporter::new(&OtlpExporterConfig {
        client: ClientSettings {
            endpoint: format!("http://{grpc}"),
            ..ClientSettings::default()
        },
        ..OtlpExporterConfig::default()
    })
    .unwrap();
    for request in requests {
        let batch = Profiles::new(request.clone(), request.encoded_len());
        exporter.export(&batch).await.unwrap();
    }
}

/// Polls (at most 60 s) until the files under `dir` hold `samples` samples.
async fn wait_for_samples(dir: &Path, samples: usize) -> Vec<ExportProfilesServiceRequest> {
    for _ in 0..1200 {
        let requests = written(dir);
        if requests.iter().map(sample_count).sum::<usize>() >= samples {
            return requests;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the file exporter never wrote {samples} samples");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_and_batch_processors_run_between_receiver_and_exporter() {
    let dir = TempDir::new("pipeline-processors");
    let data = dir.path().join("data");
    let requests: Vec<_> = (0..REQUESTS)
        .map(|seed| ebpf_like_request(STACKS, seed))
        .collect();
    let total: usize = requests.iter().map(sample_count).sum();
    // The batch fills exactly with the last request, so it is sent then,
    // as one merged request, long before the timeout.
    let (running, grpc) = start(&data, total).await;
    send(grpc, &requests).await;
    let merged = wait_for_samples(&data, total).await;
    assert_eq!(merged.len(), 1, "one merged request");
    let merged = &merged[0];
    assert_eq!(sample_count(merged), total);
    for resource in &merged.resource_profiles {
        let attributes = &resource.resource.as_ref().unwrap().attributes;
        let value = |key: &str| {
            attributes
                .iter()
                .find(|kv| kv.key == key)
                .and_then(|kv| kv.value.as_ref())
                .and_then(|v| v.value.clone())
        };
        assert_eq!(
            value("deployment.environment"),
            Some(any_value::Value::StringValue("test".into()))
        );
        assert_eq!(
            value("service.name"),
            None,
            "deleted by the resource processor"
        );
    }
    assert!(
        data.join("test").is_dir(),
        "named after the upserted attribute"
    );

    // Less than a batch goes out when the timeout fires.
    let late = ebpf_like_request(STACKS, 99);
    send(grpc, std::slice::from_ref(&late)).await;
    let all = wait_for_samples(&data, total + sample_count(&late)).await;
    assert_eq!(all.len(), 2);
    assert!(running.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_flushes_what_the_batch_processor_holds() {
    let dir = TempDir::new("pipeline-processors-shutdown");
    let data = dir.path().join("data");
    let requests: Vec<_> = (0..2).map(|seed| ebpf_like_request(STACKS, seed)).collect();
    let total: usize = requests.iter().map(sample_count).sum();
    let (running, grpc) = start(&data, total * 100).await;
    send(grpc, &requests).await;
    assert!(running.shutdown(Duration::from_secs(30)).await);
    let written = written(&data);
    assert_eq!(written.iter().map(sample_count).sum::<usize>(), total);
}
