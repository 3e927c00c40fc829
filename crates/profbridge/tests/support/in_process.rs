//! The collector inside the test process: the library's `service::start`
//! on a runtime of its own, for tests of receiver, processor and exporter
//! behaviour, where a process is not the point. Ports are bound before
//! `start` returns, so the collector is ready once [`InProcess::start`]
//! returns. Each test module uses part of it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::service::{self, Running};
use profbridge_testkit::TempDir;

/// How long [`InProcess::stop`] and dropping give the collector to drain,
/// as `profbridge serve --shutdown-timeout` does by default.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

pub struct InProcess {
    running: Option<Running>,
    runtime: Option<tokio::runtime::Runtime>,
    pub grpc: Option<SocketAddr>,
    pub http: Option<SocketAddr>,
    pub telemetry: Option<SocketAddr>,
    /// Every endpoint, as (what it is, address), as `serve` prints them.
    pub listening: Vec<(String, SocketAddr)>,
    /// `{data}` in the configuration: a folder for file exporters.
    pub data: PathBuf,
    dir: Option<TempDir>,
}

impl InProcess {
    /// Starts the collector on `config`, in which `{data}` stands for a
    /// fresh data folder, with no environment variables; returns once its
    /// ports are bound.
    pub fn start(label: &str, config: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("collector-{label}"))
            .enable_all()
            .build()
            .unwrap();
        let dir = TempDir::new(label);
        let data = dir.path().join("data");
        let config = config.replace("{data}", data.to_str().unwrap());
        let config = parse_yaml(&config, &BTreeMap::new())
            .unwrap_or_else(|errors| panic!("invalid configuration:\n{errors}\n{config}"));
        let running = runtime
            .block_on(service::start(&config))
            .unwrap_or_else(|error| panic!("the collector did not start: {error}"));
        let mut collector = Self {
            running: None,
            runtime: None,
            grpc: None,
            http: None,
            telemetry: None,
            listening: Vec::new(),
            data,
            dir: Some(dir),
        };
        for endpoint in &running.listening {
            let (what, address) = (endpoint.what.clone(), endpoint.address);
            if what.contains("OTLP gRPC") {
                collector.grpc = Some(address);
            } else if what.contains("OTLP HTTP") {
                collector.http = Some(address);
            } else if what.contains("telemetry") {
                collector.telemetry = Some(address);
            }
            collector.listening.push((what, address));
        }
        collector.running = Some(running);
        collector.runtime = Some(runtime);
        collector
    }

    /// The address of the endpoint whose description contains `what`.
    pub fn address(&self, what: &str) -> SocketAddr {
        self.listening
            .iter()
            .find(|(description, _)| description.contains(what))
            .map(|(_, address)| *address)
            .unwrap_or_else(|| panic!("nothing listens as {what:?}: {:?}", self.listening))
    }

    /// Shuts down as `serve` does on SIGTERM: stops accepting and exports
    /// what was accepted. Returns whether everything was exported, and the
    /// folder, whose data stays until it is dropped.
    pub fn stop(mut self) -> (bool, TempDir) {
        let drained = self.shut_down();
        (drained, self.dir.take().unwrap())
    }

    fn shut_down(&mut self) -> bool {
        let (Some(running), Some(runtime)) = (self.running.take(), self.runtime.take()) else {
            return true;
        };
        let drained = runtime.block_on(running.shutdown(SHUTDOWN_TIMEOUT));
        runtime.shutdown_background();
        drained
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        // A test that failed (or ended) mid-way: nothing waits for a drain.
        if let Some(runtime) = self.runtime.take() {
            let entered = runtime.enter();
            drop(self.running.take());
            drop(entered);
            runtime.shutdown_background();
        }
    }
}
