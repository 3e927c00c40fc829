//! Builds the running collector from its configuration: exporters, then
//! pipelines, then receivers; and stops it in the reverse order, draining
//! what was accepted.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::config::{Config, ExporterConfig, ProcessorConfig, ReceiverConfig};
use crate::exporters::debug::DebugExporter;
use crate::exporters::file::config::FileFormat;
use crate::exporters::file::FileExporter;
use crate::exporters::helper::{ExporterHelperConfig, QueuedExporter};
use crate::exporters::otlp::OtlpGrpcExporter;
use crate::exporters::otlp_http::OtlpHttpExporter;
use crate::exporters::pyroscope::PyroscopeExporter;
use crate::pipeline::{Exporter, Pipeline, PipelineHandle, Processor};
use crate::processors::{Batcher, ResourceProcessor};
use crate::receivers::otlp::{grpc, http};
use crate::receivers::{file, pprof, pyroscope};
use crate::telemetry::instruments::{register_process, register_queue};
use crate::telemetry::{server as telemetry_server, Readiness, ReceiverMetrics, Registry};
use crate::tls::config::{AuthConfig, ServerTlsConfig};
use crate::tls::{Alpn, Security};

#[derive(Debug, Error)]
pub enum StartError {
    #[error("exporter {id}: {reason}")]
    Exporter { id: String, reason: String },
    #[error("processor {id}: {reason}")]
    Processor { id: String, reason: String },
    #[error("telemetry: cannot listen on {address}: {error}")]
    Telemetry {
        address: String,
        error: std::io::Error,
    },
    #[error("receiver {id}: {reason}")]
    Receiver { id: String, reason: String },
    #[error("receiver {id}: cannot listen on {endpoint}: {error}")]
    Listen {
        id: String,
        endpoint: String,
        error: std::io::Error,
    },
}

/// How long receivers get to finish the requests in flight at shutdown.
const RECEIVER_GRACE: Duration = Duration::from_secs(5);

/// What the collector is doing, for the start-up message.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub what: String,
    pub address: SocketAddr,
}

pub struct Running {
    pub listening: Vec<Endpoint>,
    pub writing: Vec<String>,
    /// What file receivers watch, for the start-up message.
    pub watching: Vec<String>,
    /// The collector's own metrics, also served on `/metrics`.
    pub metrics: Arc<Registry>,
    stop: watch::Sender<bool>,
    servers: Vec<JoinHandle<()>>,
    pipelines: Vec<Pipeline>,
    /// Each exporter once, however many pipelines use it.
    exporters: Vec<Arc<QueuedExporter>>,
    telemetry: Telemetry,
}

/// The `/metrics`, `/health` and `/ready` endpoint, stopped last.
struct Telemetry {
    readiness: Arc<Readiness>,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

pub async fn start(config: &Config) -> Result<Running, StartError> {
    let registry = Registry::new();
    register_process(&registry);
    let telemetry_address = &config.service.telemetry.metrics.address;
    let telemetry_listener = if telemetry_address.is_empty() {
        None
    } else {
        Some(
            tokio::net::TcpListener::bind(telemetry_address.as_str())
                .await
                .map_err(|error| StartError::Telemetry {
                    address: telemetry_address.clone(),
                    error,
                })?,
        )
    };
    let used = |name: &str| {
        config
            .service
            .pipelines
            .iter()
            .any(|(_, pipeline)| pipeline.exporters.iter().any(|id| id.to_string() == name))
    };
    let mut exporters: BTreeMap<String, Arc<QueuedExporter>> = BTreeMap::new();
    let mut writing = Vec::new();
    for (id, exporter_config) in &config.exporters {
        let name = id.to_string();
        if !used(&name) {
            continue;
        }
        let exporter = Arc::new(build_exporter(&name, exporter_config, &mut writing)?);
        let queued = QueuedExporter::start(exporter, &helper_config(exporter_config), &registry)
            .await
            .map_err(|error| StartError::Exporter {
                id: name.clone(),
                reason: error.to_string(),
            })?;
        exporters.insert(name, queued);
    }

    let mut pipelines = Vec::new();
    let mut handles_by_receiver: BTreeMap<String, Vec<PipelineHandle>> = BTreeMap::new();
    for (name, pipeline) in &config.service.pipelines {
        let members = pipeline
            .exporters
            .iter()
            .filter_map(|id| exporters.get(&id.to_string()).cloned())
            .collect::<Vec<_>>();
        let queue_bytes = usize::try_from(pipeline.queue.max_bytes.0).unwrap_or(usize::MAX);
        let processors = pipeline
            .processors
            .iter()
            .filter_map(|id| config.processors.iter().find(|(defined, _)| defined == id))
            .map(|(id, processor)| build_processor(&id.to_string(), processor))
            .collect::<Result<Vec<_>, _>>()?;
        let running = Pipeline::start(
            name,
            processors,
            members,
            queue_bytes,
            pipeline.queue.max_requests,
        );
        register_queue(&registry, name, Arc::clone(running.handle().budget()));
        for receiver in &pipeline.receivers {
            handles_by_receiver
                .entry(receiver.to_string())
                .or_default()
                .push(running.handle());
        }
        pipelines.push(running);
    }

    let (stop, stopped) = watch::channel(false);
    let mut listening = Vec::new();
    let mut watching = Vec::new();
    let mut servers = Vec::new();
    for (id, receiver) in &config.receivers {
        let name = id.to_string();
        let Some(handles) = handles_by_receiver.remove(&name) else {
            continue;
        };
        let handles: Arc<[PipelineHandle]> = Arc::from(handles);
        match receiver {
            ReceiverConfig::Otlp(otlp) => {
                if let Some(grpc_config) = &otlp.protocols.grpc {
                    let security = security(
                        &name,
                        grpc_config.tls.as_deref(),
                        grpc_config.auth.as_deref(),
                        Alpn::Grpc,
                    )?;
                    let listener = bind(&name, &grpc_config.endpoint).await?;
                    if let Ok(address) = listener.local_addr() {
                        listening.push(Endpoint {
                            what: format!("{name} OTLP gRPC{}", over_tls(&security)),
                            address,
                        });
                    }
                    let shutdown = wait_for(stopped.clone());
                    let (config, handles) = (grpc_config.clone(), Arc::clone(&handles));
                    let metrics = ReceiverMetrics::new(&registry, &name, "grpc");
                    servers.push(tokio::spawn(async move {
                        if let Err(error) =
                            grpc::serve(listener, config, handles, metrics, security, shutdown)
                                .await
                        {
                            tracing::error!(%error, "OTLP gRPC server failed");
                        }
                    }));
                }
                if let Some(http_config) = &otlp.protocols.http {
                    let security = security(
                        &name,
                        http_config.tls.as_deref(),
                        http_config.auth.as_deref(),
                        Alpn::Http1,
                    )?;
                    let listener = bind(&name, &http_config.endpoint).await?;
                    if let Ok(address) = listener.local_addr() {
                        listening.push(Endpoint {
                            what: format!(
                                "{name} OTLP HTTP (POST {}){}",
                                http_config.profiles_url_path,
                                over_tls(&security)
                            ),
                            address,
                        });
                    }
                    let shutdown = wait_for(stopped.clone());
                    let (config, handles) = (http_config.clone(), Arc::clone(&handles));
                    let metrics = ReceiverMetrics::new(&registry, &name, "http");
                    servers.push(tokio::spawn(async move {
                        if let Err(error) =
                            http::serve(listener, config, handles, metrics, security, shutdown)
                                .await
                        {
                            tracing::error!(%error, "OTLP HTTP server failed");
                        }
                    }));
                }
            }
            ReceiverConfig::Pprof(pprof_config) => {
                let security = security(
                    &name,
                    pprof_config.tls.as_deref(),
                    pprof_config.auth.as_deref(),
                    Alpn::Http1,
                )?;
                let listener = bind(&name, &pprof_config.endpoint).await?;
                let what = format!(
                    "{name} pprof push (POST {}){}",
                    pprof_config.path,
                    over_tls(&security)
                );
                note_endpoint(&mut listening, &listener, what);
                let shutdown = wait_for(stopped.clone());
                let config = pprof_config.clone();
                let metrics = ReceiverMetrics::new(&registry, &name, "http");
                servers.push(tokio::spawn(async move {
                    if let Err(error) =
                        pprof::serve(listener, config, handles, metrics, security, shutdown).await
                    {
                        tracing::error!(%error, "pprof receiver failed");
                    }
                }));
            }
            ReceiverConfig::Pyroscope(pyroscope_config) => {
                let security = security(
                    &name,
                    pyroscope_config.tls.as_deref(),
                    pyroscope_config.auth.as_deref(),
                    Alpn::Http1,
                )?;
                let listener = bind(&name, &pyroscope_config.endpoint).await?;
                let what = format!(
                    "{name} Pyroscope ingest (POST {} and {}){}",
                    pyroscope::INGEST_PATH,
                    pyroscope::PUSH_PATH,
                    over_tls(&security)
                );
                note_endpoint(&mut listening, &listener, what);
                let shutdown = wait_for(stopped.clone());
                let config = pyroscope_config.clone();
                let metrics = ReceiverMetrics::new(&registry, &name, "http");
                servers.push(tokio::spawn(async move {
                    if let Err(error) =
                        pyroscope::serve(listener, config, handles, metrics, security, shutdown)
                            .await
                    {
                        tracing::error!(%error, "Pyroscope receiver failed");
                    }
                }));
            }
            ReceiverConfig::File(file_config) => {
                let metrics = ReceiverMetrics::new(&registry, &name, "file");
                let watcher = file::start(&name, file_config, handles, metrics, stopped.clone())
                    .map_err(|reason| StartError::Receiver {
                        id: name.clone(),
                        reason,
                    })?;
                watching.push(file::describe(&name, file_config));
                servers.push(watcher);
            }
        }
    }
    let telemetry = serve_telemetry(
        telemetry_listener,
        &config.service.telemetry.metrics,
        &registry,
        &mut listening,
    );
    Ok(Running {
        listening,
        writing,
        watching,
        metrics: registry,
        stop,
        servers,
        pipelines,
        exporters: exporters.into_values().collect(),
        telemetry,
    })
}

/// What [`start`] would refuse in `config` before binding a port or
/// writing a file: TLS material and tokens that do not load, exporters and
/// processors that cannot be built. `profbridge validate` reports these, so
/// that a configuration it calls OK starts. Needs a Tokio runtime (the
/// gRPC exporter's channel is built on one).
pub fn check_start(config: &Config) -> Vec<StartError> {
    let mut problems = Vec::new();
    for (id, receiver) in &config.receivers {
        let name = id.to_string();
        let listeners: Vec<(Option<&ServerTlsConfig>, Option<&AuthConfig>, Alpn)> = match receiver {
            ReceiverConfig::Otlp(otlp) => otlp
                .protocols
                .grpc
                .iter()
                .map(|grpc| (grpc.tls.as_deref(), grpc.auth.as_deref(), Alpn::Grpc))
                .chain(
                    otlp.protocols
                        .http
                        .iter()
                        .map(|http| (http.tls.as_deref(), http.auth.as_deref(), Alpn::Http1)),
                )
                .collect(),
            ReceiverConfig::Pprof(pprof) => {
                vec![(pprof.tls.as_deref(), pprof.auth.as_deref(), Alpn::Http1)]
            }
            ReceiverConfig::Pyroscope(pyroscope) => vec![(
                pyroscope.tls.as_deref(),
                pyroscope.auth.as_deref(),
                Alpn::Http1,
            )],
            ReceiverConfig::File(_) => Vec::new(),
        };
        for (tls, auth, alpn) in listeners {
            if let Err(problem) = security(&name, tls, auth, alpn) {
                problems.push(problem);
            }
        }
    }
    for (id, exporter) in &config.exporters {
        // The file exporter's only check without creating its folder, the
        // path template, is one of the configuration's own.
        if matches!(exporter, ExporterConfig::File(_)) {
            continue;
        }
        if let Err(problem) = build_exporter(&id.to_string(), exporter, &mut Vec::new()) {
            problems.push(problem);
        }
    }
    for (id, processor) in &config.processors {
        if let Err(problem) = build_processor(&id.to_string(), processor) {
            problems.push(problem);
        }
    }
    problems
}

/// A receiver's TLS acceptor and token check, its files read now so that
/// a bad one stops the start.
fn security(
    name: &str,
    tls: Option<&ServerTlsConfig>,
    auth: Option<&AuthConfig>,
    alpn: Alpn,
) -> Result<Security, StartError> {
    Security::new(tls, auth, alpn).map_err(|error| StartError::Receiver {
        id: name.to_owned(),
        reason: error.to_string(),
    })
}

/// For the start-up message.
fn over_tls(security: &Security) -> &'static str {
    if security.uses_tls() {
        " over TLS"
    } else {
        ""
    }
}

/// The exporter an exporter configuration describes; `writing` gets a
/// line for the start-up message when it writes somewhere.
fn build_exporter(
    name: &str,
    config: &ExporterConfig,
    writing: &mut Vec<String>,
) -> Result<Exporter, StartError> {
    let name = name.to_owned();
    Ok(match config {
        ExporterConfig::File(file) => {
            let format = match file.format {
                FileFormat::Pprof => "pprof",
                FileFormat::Otlp => "OTLP protobuf",
                FileFormat::OtlpJson => "OTLP JSON",
            };
            writing.push(format!(
                "{name} exporter writing {format} files under {}",
                file.path
            ));
            let exporter = FileExporter::new(file).map_err(|e| StartError::Exporter {
                id: name.clone(),
                reason: e.to_string(),
            })?;
            Exporter::File { name, exporter }
        }
        ExporterConfig::Debug(debug) => Exporter::Debug {
            name,
            exporter: DebugExporter::new(debug),
        },
        ExporterConfig::Nop => Exporter::Nop { name },
        ExporterConfig::Otlp(otlp) => {
            let exporter = OtlpGrpcExporter::new(otlp).map_err(|e| StartError::Exporter {
                id: name.clone(),
                reason: e.to_string(),
            })?;
            writing.push(format!(
                "{name} exporter sending OTLP over gRPC to {}",
                exporter.endpoint()
            ));
            Exporter::OtlpGrpc {
                name,
                exporter: Box::new(exporter),
            }
        }
        ExporterConfig::OtlpHttp(http) => {
            let exporter = OtlpHttpExporter::new(http).map_err(|e| StartError::Exporter {
                id: name.clone(),
                reason: e.to_string(),
            })?;
            writing.push(format!(
                "{name} exporter sending OTLP over HTTP to {}",
                exporter.url()
            ));
            Exporter::OtlpHttp {
                name,
                exporter: Box::new(exporter),
            }
        }
        ExporterConfig::Pyroscope(pyroscope) => {
            let exporter = PyroscopeExporter::new(pyroscope).map_err(|e| StartError::Exporter {
                id: name.clone(),
                reason: e.to_string(),
            })?;
            writing.push(format!(
                "{name} exporter pushing pprof to Pyroscope at {}",
                exporter.url()
            ));
            Exporter::Pyroscope {
                name,
                exporter: Box::new(exporter),
            }
        }
    })
}

fn build_processor(id: &str, config: &ProcessorConfig) -> Result<Processor, StartError> {
    let problem = |reason: String| StartError::Processor {
        id: id.to_owned(),
        reason,
    };
    Ok(match config {
        ProcessorConfig::Batch(batch) => {
            Processor::Batch(Batcher::new(batch).map_err(|e| problem(e.to_string()))?)
        }
        ProcessorConfig::Resource(resource) => Processor::Resource(
            ResourceProcessor::new(resource).map_err(|e| problem(e.to_string()))?,
        ),
    })
}

/// The sending queue, retries, timeout and dead letters of an exporter.
fn helper_config(config: &ExporterConfig) -> ExporterHelperConfig {
    match config {
        ExporterConfig::File(file) => file.helper(),
        ExporterConfig::Debug(debug) => debug.helper(),
        ExporterConfig::Nop => ExporterHelperConfig::default(),
        ExporterConfig::Otlp(otlp) => otlp.helper(),
        ExporterConfig::OtlpHttp(http) => http.helper(),
        ExporterConfig::Pyroscope(pyroscope) => pyroscope.helper(),
    }
}

/// Starts the telemetry endpoint, if configured, and reports ready: the
/// receivers listen by now.
fn serve_telemetry(
    listener: Option<tokio::net::TcpListener>,
    config: &crate::telemetry::config::MetricsConfig,
    registry: &Arc<Registry>,
    listening: &mut Vec<Endpoint>,
) -> Telemetry {
    let readiness = Readiness::new();
    let (stop, stopped) = watch::channel(false);
    let server = listener.map(|listener| {
        if let Ok(address) = listener.local_addr() {
            listening.push(Endpoint {
                what: "telemetry (/metrics, /health, /ready)".to_owned(),
                address,
            });
        }
        let (registry, readiness) = (Arc::clone(registry), Arc::clone(&readiness));
        let config = config.clone();
        tokio::spawn(async move {
            let shutdown = wait_for(stopped);
            if let Err(error) =
                telemetry_server::serve(listener, &config, registry, readiness, shutdown).await
            {
                tracing::error!(%error, "telemetry server failed");
            }
        })
    });
    readiness.set_ready();
    Telemetry {
        readiness,
        stop,
        server,
    }
}

fn note_endpoint(listening: &mut Vec<Endpoint>, listener: &tokio::net::TcpListener, what: String) {
    if let Ok(address) = listener.local_addr() {
        listening.push(Endpoint { what, address });
    }
}

async fn bind(id: &str, endpoint: &str) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(endpoint)
        .await
        .map_err(|error| StartError::Listen {
            id: id.to_owned(),
            endpoint: endpoint.to_owned(),
            error,
        })
}

async fn all_true(mut tasks: JoinSet<bool>) -> bool {
    let mut all = true;
    while let Some(result) = tasks.join_next().await {
        all &= result.unwrap_or(false);
    }
    all
}

async fn wait_for(mut stopped: watch::Receiver<bool>) {
    while !*stopped.borrow() {
        if stopped.changed().await.is_err() {
            return;
        }
    }
}

impl Running {
    /// Stops accepting, then drains every pipeline, then every exporter's
    /// queue, all within `timeout`. Returns whether everything accepted
    /// was exported.
    pub async fn shutdown(self, timeout: Duration) -> bool {
        let Self {
            stop,
            servers,
            pipelines,
            exporters,
            telemetry,
            ..
        } = self;
        let deadline = tokio::time::Instant::now() + timeout;
        let remaining = || deadline.saturating_duration_since(tokio::time::Instant::now());
        telemetry.readiness.set_shutting_down();
        let _ = stop.send(true);
        // Servers finish the requests in flight; idle client connections
        // are not waited for past the grace period.
        for mut server in servers {
            if tokio::time::timeout(RECEIVER_GRACE.min(timeout), &mut server)
                .await
                .is_err()
            {
                server.abort();
            }
        }
        let mut drained = true;
        // Pipelines first, all at once: an exporter that blocks when full
        // still has its consumers making room. Then every exporter at
        // once, so that a stuck one does not use up the others' time.
        let mut closing = JoinSet::new();
        for pipeline in pipelines {
            closing.spawn(pipeline.shutdown(remaining()));
        }
        drained &= all_true(closing).await;
        let mut closing = JoinSet::new();
        for exporter in exporters {
            let timeout = remaining();
            closing.spawn(async move { exporter.shutdown(timeout).await });
        }
        drained &= all_true(closing).await;
        let _ = telemetry.stop.send(true);
        if let Some(mut server) = telemetry.server {
            if tokio::time::timeout(RECEIVER_GRACE.min(timeout), &mut server)
                .await
                .is_err()
            {
                server.abort();
            }
        }
        drained
    }
}
