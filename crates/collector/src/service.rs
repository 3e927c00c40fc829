//! Builds the running collector from its configuration: extensions, then
//! exporters, then pipelines, then receivers; and stops it in the reverse
//! order, draining what was accepted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::component::listen::wait_for;
pub use crate::component::{Endpoint, StartError};
use crate::component::{ExtensionContext, Extensions, Host, ReceiverContext};
use crate::components::Registry as Components;
use crate::descriptors::{ConnectionPlan, DescriptorLimit, Reserve, PROCESS_RESERVE};
use crate::pipeline::register_queue;
use crate::pipeline::sending::{ExporterHelperConfig, QueueStorage, QueuedExporter};
pub use crate::pipeline::Hooks;
use crate::pipeline::{GateContext, Pipeline, PipelineHandle, PipelineProcessor, RequestPool};
use crate::settings::server::ENDPOINT_MAX_CONNECTIONS;
use crate::settings::telemetry::MetricsConfig;
use crate::settings::{ComponentId, Config, ProcessorConfig};
use crate::telemetry::instruments::register_process;
use crate::telemetry::{server as telemetry_server, ProcessorMetrics, Readiness, Registry};

/// How long receivers get to finish the requests in flight at shutdown.
const RECEIVER_GRACE: Duration = Duration::from_secs(5);

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
    extensions: RunningExtensions,
    telemetry: Telemetry,
}

/// The extensions' tasks and their stop signal: stopped after the
/// exporters.
struct RunningExtensions {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// The `/metrics`, `/health` and `/ready` endpoint, stopped last.
struct Telemetry {
    readiness: Arc<Readiness>,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

pub async fn start(config: &Config) -> Result<Running, StartError> {
    start_with(config, &Hooks::default(), DescriptorLimit::current()).await
}

/// [`start`], with what the program running the collector lends its
/// components (a `memory_limiter` releases memory through `hooks`) and
/// the limit of open files it runs under, which caps the connections of
/// receivers whose `max_connections` is not written.
pub async fn start_with(
    config: &Config,
    hooks: &Hooks,
    open_files: DescriptorLimit,
) -> Result<Running, StartError> {
    let connections = connection_plan(config, open_files);
    connections.log();
    let registry = Registry::new();
    register_process(&registry);
    let telemetry_listener = match config.service.telemetry.metrics.endpoint() {
        None => None,
        Some(address) => Some(
            crate::net::bind(address.as_str())
                .await
                .map_err(|error| StartError::Telemetry { address, error })?,
        ),
    };
    let readiness = Readiness::new();
    let host = Arc::new(Host {
        readiness: Arc::clone(&readiness),
        metrics: Arc::clone(&registry),
        config: Arc::new(config.clone()),
    });
    let mut listening = Vec::new();
    let (extensions, running_extensions) = start_extensions(config, &host, &mut listening).await?;
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
        let factory = Components
            .exporter(exporter_config.kind())
            .ok_or_else(|| unknown(&name, exporter_config.kind()))?;
        let built = factory.build(&name, exporter_config, &extensions)?;
        writing.extend(built.writing);
        let settings = resolve_storage(id, factory.settings(exporter_config), &extensions)?;
        let queued = QueuedExporter::start(Arc::new(built.exporter), &settings, &registry)
            .await
            .map_err(|error| StartError::exporter(&name, error))?;
        exporters.insert(name, queued);
    }

    // One pool of decoded requests for every pipeline and receiver, so
    // that its size and its hits and misses are the collector's.
    let request_pool = Arc::new(RequestPool::registered(&registry));
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
            .map(|(id, processor)| {
                let id = id.to_string();
                Ok(PipelineProcessor {
                    runtime: build_processor(&id, processor, &registry)?,
                    metrics: ProcessorMetrics::new(&registry, &id),
                })
            })
            .collect::<Result<Vec<_>, StartError>>()?;
        let running = Pipeline::start_sharing(
            name,
            processors,
            members,
            (queue_bytes, pipeline.queue.max_requests),
            Arc::clone(&request_pool),
        );
        register_queue(&registry, name, Arc::clone(running.handle().budget()));
        for gate in running.handle().gates() {
            Arc::clone(gate).start(GateContext {
                pipeline: name,
                hooks,
                metrics: &registry,
            });
        }
        for receiver in &pipeline.receivers {
            handles_by_receiver
                .entry(receiver.to_string())
                .or_default()
                .push(running.handle());
        }
        pipelines.push(running);
    }

    let (stop, stopped) = watch::channel(false);
    let mut watching = Vec::new();
    let mut servers = Vec::new();
    for (id, receiver) in &config.receivers {
        let name = id.to_string();
        let Some(handles) = handles_by_receiver.remove(&name) else {
            continue;
        };
        let factory = Components
            .receiver(receiver.kind())
            .ok_or_else(|| unknown(&name, receiver.kind()))?;
        let context = ReceiverContext {
            id: &name,
            pipelines: Arc::from(handles),
            metrics: &registry,
            extensions: &extensions,
            stopped: stopped.clone(),
            max_connections: connections.max_connections(),
        };
        let started = factory.start(receiver, context).await?;
        listening.extend(started.listening);
        watching.extend(started.watching);
        servers.extend(started.tasks);
    }
    let telemetry = serve_telemetry(
        telemetry_listener,
        &config.service.telemetry.metrics,
        &registry,
        readiness,
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
        extensions: running_extensions,
        telemetry,
    })
}

/// The receivers' connection caps under `limit`: see [`Reserve`] for what
/// is kept out of them.
fn connection_plan(config: &Config, limit: DescriptorLimit) -> ConnectionPlan {
    let pipelines = &config.service.pipelines;
    let receives = |id: &ComponentId| pipelines.iter().any(|(_, p)| p.receivers.contains(id));
    let exports = |id: &ComponentId| pipelines.iter().any(|(_, p)| p.exporters.contains(id));
    let listeners: Vec<(String, Option<u32>)> = config
        .receivers
        .iter()
        .filter(|(id, _)| receives(id))
        .flat_map(|(id, receiver)| {
            let path = format!("receivers.{id}");
            receiver.connection_caps().into_iter().map(move |cap| {
                let name = if cap.section.is_empty() {
                    path.clone()
                } else {
                    format!("{path}.{}", cap.section)
                };
                (name, cap.max_connections)
            })
        })
        .collect();
    let endpoint_cap = |cap: Option<u32>| u64::from(cap.unwrap_or(ENDPOINT_MAX_CONNECTIONS));
    let extensions = config
        .extensions
        .iter()
        .filter(|(id, _)| config.service.extensions.contains(id))
        .flat_map(|(_, extension)| extension.connection_caps())
        .map(|cap| endpoint_cap(cap.max_connections));
    let metrics = &config.service.telemetry.metrics;
    let telemetry = metrics
        .endpoint()
        .map(|_| endpoint_cap(metrics.connection.max_connections));
    let consumers = config
        .exporters
        .iter()
        .filter(|(id, _)| exports(id))
        .filter_map(|(_, exporter)| Components.exporter(exporter.kind()).map(|f| (f, exporter)))
        .map(|(factory, exporter)| {
            let queue = factory.settings(exporter).sending_queue;
            let consumers = if queue.enabled {
                queue.num_consumers
            } else {
                1
            };
            u64::try_from(consumers).unwrap_or(u64::MAX)
        });
    let reserve = Reserve {
        process: PROCESS_RESERVE,
        exporters: consumers.fold(0, |sum, count| sum.saturating_add(count.saturating_mul(2))),
        endpoints: extensions.chain(telemetry).fold(0, u64::saturating_add),
    };
    ConnectionPlan::derive(limit, reserve, &listeners)
}

/// Starts the extensions `service.extensions` lists, in its order.
async fn start_extensions(
    config: &Config,
    host: &Arc<Host>,
    listening: &mut Vec<Endpoint>,
) -> Result<(Extensions, RunningExtensions), StartError> {
    let (stop, stopped) = watch::channel(false);
    let mut extensions = Extensions::default();
    let mut tasks = Vec::new();
    for id in &config.service.extensions {
        let name = id.to_string();
        let Some((_, extension)) = config.extensions.iter().find(|(defined, _)| defined == id)
        else {
            return Err(StartError::other(
                &name,
                "is not defined under extensions".to_owned(),
            ));
        };
        let factory = Components
            .extension(extension.kind())
            .ok_or_else(|| unknown(&name, extension.kind()))?;
        let context = ExtensionContext {
            id: &name,
            host,
            stopped: stopped.clone(),
        };
        let started = factory.start(extension, context).await?;
        listening.extend(started.listening);
        tasks.extend(started.tasks);
        extensions.add(id.clone(), started.offers);
    }
    Ok((extensions, RunningExtensions { stop, tasks }))
}

/// `sending_queue.storage: file_storage/NAME` made the directory the
/// extension keeps this exporter's queue in.
fn resolve_storage(
    exporter: &ComponentId,
    mut settings: ExporterHelperConfig,
    extensions: &Extensions,
) -> Result<ExporterHelperConfig, StartError> {
    if let Some(QueueStorage::Extension(id)) = &settings.sending_queue.storage {
        let storage = extensions.storage(id).ok_or_else(|| {
            StartError::other(
                &exporter.to_string(),
                format!("sending_queue.storage: {id} is not a running storage extension"),
            )
        })?;
        settings.sending_queue.storage =
            Some(QueueStorage::Exact(storage.exporter_queue(exporter)));
    }
    Ok(settings)
}

/// What [`start`] would refuse in `config` before binding a port or
/// writing a file: TLS material and tokens that do not load, exporters and
/// processors that cannot be built. `profbridge validate` reports these, so
/// that a configuration it calls OK starts. Needs a Tokio runtime (the
/// gRPC exporter's channel is built on one).
pub fn check_start(config: &Config) -> Vec<StartError> {
    let mut problems = Vec::new();
    for (id, extension) in &config.extensions {
        if !config.service.extensions.contains(id) {
            continue;
        }
        let name = id.to_string();
        match Components.extension(extension.kind()) {
            Some(factory) => problems.extend(factory.check(&name, extension)),
            None => problems.push(unknown(&name, extension.kind())),
        }
    }
    for (id, receiver) in &config.receivers {
        let name = id.to_string();
        match Components.receiver(receiver.kind()) {
            Some(factory) => problems.extend(factory.check(&name, receiver)),
            None => problems.push(unknown(&name, receiver.kind())),
        }
    }
    for (id, exporter) in &config.exporters {
        let name = id.to_string();
        match Components.exporter(exporter.kind()) {
            Some(factory) => problems.extend(factory.check(&name, exporter)),
            None => problems.push(unknown(&name, exporter.kind())),
        }
    }
    for (id, processor) in &config.processors {
        // Counters registered while checking are thrown away.
        let telemetry = Registry::default();
        if let Err(problem) = build_processor(&id.to_string(), processor, &telemetry) {
            problems.push(problem);
        }
    }
    problems
}

fn build_processor(
    id: &str,
    config: &ProcessorConfig,
    telemetry: &Registry,
) -> Result<Box<dyn crate::pipeline::Processor>, StartError> {
    Components
        .processor(config.kind())
        .ok_or_else(|| unknown(id, config.kind()))?
        .build(id, config, telemetry)
}

/// A component whose type the registry does not have: only a
/// configuration built in code can name one.
fn unknown(id: &str, kind: &str) -> StartError {
    StartError::Other {
        id: id.to_owned(),
        reason: format!("no component type {kind:?}"),
    }
}

/// Starts the telemetry endpoint, if configured, and reports ready: the
/// receivers listen by now.
fn serve_telemetry(
    listener: Option<tokio::net::TcpListener>,
    config: &MetricsConfig,
    registry: &Arc<Registry>,
    readiness: Arc<Readiness>,
    listening: &mut Vec<Endpoint>,
) -> Telemetry {
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
                serve_telemetry_endpoint(listener, &config, registry, readiness, shutdown).await
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

/// Serves until `shutdown` resolves; the listener is already bound.
async fn serve_telemetry_endpoint(
    listener: tokio::net::TcpListener,
    config: &MetricsConfig,
    registry: Arc<Registry>,
    readiness: Arc<Readiness>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (connection_limits, http_limits) = crate::net::endpoint_limits(&config.connection);
    let incoming = crate::net::Incoming::new(listener, connection_limits, None);
    crate::net::serve_http(
        incoming,
        telemetry_server::router(config.serves_metrics().then_some(registry), readiness),
        http_limits,
        shutdown,
    )
    .await
}

async fn all_true(mut tasks: JoinSet<bool>) -> bool {
    let mut all = true;
    while let Some(result) = tasks.join_next().await {
        all &= result.unwrap_or(false);
    }
    all
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
            extensions,
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
        let _ = extensions.stop.send(true);
        for mut task in extensions.tasks {
            if tokio::time::timeout(RECEIVER_GRACE.min(timeout), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
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
