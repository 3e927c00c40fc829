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

use tokio::sync::Semaphore;

use self::config::{ProfileError, RemoteConfig};
use self::fetch::{ClientError, Fetcher};
pub use self::resource::PROFILE_NAME;
use self::runner::Runner;
use self::scrape::Shared;
use self::target::{endpoint_job, TargetError};
use crate::component::{ReceiverContext, StartError, StartedReceiver};
use crate::telemetry::ReceiverMetrics;

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

/// What [`start`] would refuse, without starting anything.
pub(crate) fn check(config: &RemoteConfig) -> Result<(), RemoteError> {
    Fetcher::new(config, None)?;
    config.profile_specs()?;
    endpoint_job(config)?;
    Ok(())
}

/// Starts scraping until the collector stops.
pub(crate) fn start(
    config: &RemoteConfig,
    context: &ReceiverContext<'_>,
    started: &mut StartedReceiver,
) -> Result<(), StartError> {
    let id = context.id;
    let runner = runner(config, context).map_err(|error| StartError::receiver(id, error))?;
    started.tasks.push(tokio::spawn(runner.run()));
    started.watching.push(describe(id, config));
    Ok(())
}

fn runner(config: &RemoteConfig, context: &ReceiverContext<'_>) -> Result<Runner, RemoteError> {
    let auth = match &config.client.auth {
        Some(auth) => Some(
            context
                .extensions
                .authenticator(&auth.authenticator)
                .cloned()
                .ok_or_else(|| RemoteError::NoAuthenticator(auth.authenticator.to_string()))?,
        ),
        None => None,
    };
    let specs = config.profile_specs()?;
    endpoint_job(config)?;
    let shared = Shared {
        fetcher: Fetcher::new(config, auth)?,
        permits: Arc::new(Semaphore::new(
            usize::try_from(config.max_concurrent_scrapes).unwrap_or(usize::MAX),
        )),
        pipelines: context.pipelines.clone(),
        metrics: ReceiverMetrics::new(context.metrics, context.id, "remote"),
        max_profile_size: usize::try_from(config.max_profile_size.0).unwrap_or(usize::MAX),
    };
    Ok(Runner {
        receiver: context.id.to_owned(),
        config: config.clone(),
        specs,
        shared: Arc::new(shared),
        registry: Arc::clone(context.metrics),
        stopped: context.stopped.clone(),
    })
}

/// The start-up line.
fn describe(id: &str, config: &RemoteConfig) -> String {
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
        "{id} pprof remote source scraping {} every {:?}",
        what.join(", "),
        config.collection_interval.0
    )
}
