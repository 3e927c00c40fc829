#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The pprof receiver's `remote` source scraping a real Go program's
//! `net/http/pprof`, in the Collector's shape (`endpoint`, one profile's
//! URL): its CPU profiles, asked for `?seconds=1`, hold the function it
//! burns CPU in, under the resource attributes of the target.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::service;
use profbridge_testkit::pprof_target::{PprofTarget, BURN};
use profbridge_testkit::TempDir;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

fn written(dir: &Path) -> Vec<ExportProfilesServiceRequest> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "pb") {
                let bytes = std::fs::read(&path).unwrap();
                found.push(ExportProfilesServiceRequest::decode(&*bytes).unwrap());
            }
        }
    }
    found
}

fn holds_string(request: &ExportProfilesServiceRequest, text: &str) -> bool {
    request
        .dictionary
        .as_ref()
        .is_some_and(|dictionary| dictionary.string_table.iter().any(|s| s == text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_profiles_of_a_go_program_hold_its_busy_function() {
    let Some(target) = PprofTarget::start(SocketAddr::from(([127, 0, 0, 1], 0))) else {
        return;
    };
    let target = Arc::new(target);
    let dir = TempDir::new("pprof-remote-go");
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      endpoint: {}\n      collection_interval: 2s\n      initial_delay: 0s\n\
         exporters:\n  file:\n    path: {}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        target.url("/debug/pprof/profile"),
        dir.path().display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let busy = Arc::new(AtomicBool::new(true));
    let burner = {
        let (target, busy) = (Arc::clone(&target), Arc::clone(&busy));
        tokio::task::spawn_blocking(move || {
            while busy.load(Ordering::Relaxed) {
                target.burn(Duration::from_millis(200));
            }
        })
    };
    let mut found = None;
    for _ in 0..600 {
        found = written(dir.path())
            .into_iter()
            .find(|request| holds_string(request, BURN));
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    busy.store(false, Ordering::Relaxed);
    burner.await.unwrap();
    let request = found.unwrap_or_else(|| panic!("no CPU profile holds {BURN}"));
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    let attribute = |key: &str| {
        resource
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    let address = target.address().to_string();
    let text = |value: String| {
        Some(profbridge_translate::otlp::any_value::Value::StringValue(
            value,
        ))
    };
    assert_eq!(attribute("service.name"), text(address.clone()));
    assert_eq!(attribute("service.instance.id"), text(address));
    assert_eq!(attribute("profbridge.profile.name"), text("cpu".to_owned()));
    assert!(running.shutdown(Duration::from_secs(10)).await);
}
