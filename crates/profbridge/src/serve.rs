//! `profbridge serve`: the collector.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Args;

use profbridge_collector::config::{load, units::parse_duration, Config};
use profbridge_collector::{descriptors, service};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The configuration file (YAML); without it, the embedded default:
    /// OTLP gRPC on 127.0.0.1:4317 and HTTP on 127.0.0.1:4318, pprof files
    /// under ./profbridge-data.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How long shutdown may take to export what was accepted.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
}

pub fn run(args: &ServeArgs) -> Result<ExitCode> {
    let allocator = crate::allocator::apply_collector_settings();
    let config = load(args.config.as_deref())
        .map_err(|errors| anyhow!("invalid configuration:\n{errors}"))?;
    crate::logs::init(&config.service.telemetry.logs)?;
    for warning in config.warnings() {
        tracing::warn!(key = %warning.path, "{}", warning.message);
    }
    crate::allocator::start_purging().context("starting the allocator's purge thread")?;
    tracing::debug!(
        purge_delay_ms = allocator.purge_delay_ms,
        set_by = ?allocator.source,
        purge_interval_ms = crate::allocator::PURGE_INTERVAL.as_millis(),
        "allocator settings"
    );
    let open_files = descriptors::raise_to_hard_limit().unwrap_or_else(|error| {
        tracing::warn!(%error, "keeping the limit of open files");
        descriptors::DescriptorLimit::current()
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(&config, open_files, args.shutdown_timeout))
}

async fn serve(
    config: &Config,
    open_files: descriptors::DescriptorLimit,
    shutdown_timeout: Duration,
) -> Result<ExitCode> {
    // Listening for the signals before saying "ready": a SIGTERM right
    // after it must shut down cleanly, not end the process.
    let mut signals = Signals::listen()?;
    let hooks = service::Hooks {
        release_memory: Some(Arc::new(crate::allocator::release_memory)),
    };
    let running = service::start_with(config, &hooks, open_files).await?;
    let mut stdout = std::io::stdout().lock();
    for endpoint in &running.listening {
        writeln!(
            stdout,
            "profbridge: {} listening on {}",
            endpoint.what, endpoint.address
        )?;
    }
    for writing in &running.writing {
        writeln!(stdout, "profbridge: {writing}")?;
    }
    for watching in &running.watching {
        writeln!(stdout, "profbridge: {watching}")?;
    }
    writeln!(stdout, "profbridge: ready")?;
    stdout.flush()?;
    drop(stdout);

    signals.wait().await;
    tracing::info!("shutting down: refusing new requests, exporting what was accepted");
    let drained = running.shutdown(shutdown_timeout).await;
    if drained {
        tracing::info!("stopped");
        Ok(ExitCode::SUCCESS)
    } else {
        tracing::error!(timeout = ?shutdown_timeout, "shutdown timed out before every accepted profile was exported");
        Ok(ExitCode::FAILURE)
    }
}

/// SIGTERM and SIGINT, listened for from the start.
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
