//! The `remote` source of the pprof receiver: profiles pulled from HTTP
//! endpoints such as Go's `net/http/pprof`. target.rs turns `endpoint`,
//! `targets` and file_sd groups (file_sd.rs) into jobs, one per target
//! and profile; runner.rs keeps a task per job (schedule.rs), which
//! scrapes (scrape.rs: fetch.rs, then decode, delta.rs, resource.rs, the
//! intake) and counts (metrics.rs).

pub mod config;
mod delta;
mod fetch;
mod file_sd;
mod metrics;
mod resource;
mod runner;
mod schedule;
mod scrape;
mod target;

use std::sync::Arc;

use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use self::config::{ProfileError, RemoteConfig};
use self::fetch::{ClientError, Fetcher};
pub use self::resource::PROFILE_NAME;
use self::runner::Runner;
use self::scrape::Shared;
use self::target::{endpoint_job, TargetError};
use crate::pipeline::PipelineHandle;
use crate::telemetry::{ReceiverMetrics, Registry};
use crate::tls::BearerAuth;

/// Why the remote source cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoteError {
    #[error("remote: {0}")]
    Client(#[from] ClientError),
    #[error("remote.profiles: {0}")]
    Profiles(#[from] ProfileError),
    #[error("remote.{0}")]
    Endpoint(#[from] TargetError),
    #[error("remote.auth.authenticator: {0} is not a running authenticator extension")]
    NoAuthenticator(String),
}

/// What the remote source is started with.
pub struct Start<'a> {
    pub id: &'a str,
    pub config: &'a RemoteConfig,
    pub pipelines: Arc<[PipelineHandle]>,
    pub registry: &'a Arc<Registry>,
    pub auth: Option<BearerAuth>,
    pub stopped: watch::Receiver<bool>,
}

/// What [`start`] would refuse, without starting anything.
pub(crate) fn check(config: &RemoteConfig) -> Result<(), RemoteError> {
    Fetcher::new(config, None)?;
    config.profile_specs()?;
    endpoint_job(config)?;
    Ok(())
}

/// Starts scraping until `stopped` turns true.
pub(crate) fn start(start: Start<'_>) -> Result<JoinHandle<()>, RemoteError> {
    let Start {
        id,
        config,
        pipelines,
        registry,
        auth,
        stopped,
    } = start;
    let specs = config.profile_specs()?;
    endpoint_job(config)?;
    let shared = Shared {
        fetcher: Fetcher::new(config, auth)?,
        permits: Arc::new(Semaphore::new(
            usize::try_from(config.max_concurrent_scrapes).unwrap_or(usize::MAX),
        )),
        pipelines,
        metrics: ReceiverMetrics::new(registry, id, "remote"),
        max_profile_size: usize::try_from(config.max_profile_size.0).unwrap_or(usize::MAX),
    };
    let runner = Runner {
        receiver: id.to_owned(),
        config: config.clone(),
        specs,
        shared: Arc::new(shared),
        registry: Arc::clone(registry),
        stopped,
    };
    Ok(tokio::spawn(runner.run()))
}

/// The start-up line.
pub fn describe(id: &str, config: &RemoteConfig) -> String {
    let mut what = Vec::new();
    if !config.client.endpoint.is_empty() {
        what.push(config.client.endpoint.clone());
    }
    let targets: usize = config.targets.iter().map(|group| group.targets.len()).sum();
    if targets > 0 {
        what.push(format!("{targets} targets"));
    }
    for group in &config.file_sd_configs {
        what.push(format!("targets in {}", group.files.join(", ")));
    }
    format!(
        "{id} pprof remote scraping {} every {:?}",
        what.join(", "),
        config.collection_interval.0
    )
}
