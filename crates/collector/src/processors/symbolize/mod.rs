//! The `symbolize` processor: resolves native frames to functions, files,
//! lines and inlined frames from the ELF files the mappings name and their
//! debug files (docs/symbolize.md), with profbridge-symbolize.

pub mod config;
mod factory;
mod metrics;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::RuntimeFlavor;

use profbridge_symbolize::{CacheLimits, Debuginfod, MissReason, Report, Sources, Symbolizer};

use config::DebuginfodConfig;
pub use config::SymbolizeProcessorConfig;
pub use factory::SymbolizeProcessorFactory;
pub use metrics::SymbolizeMetrics;

use super::InvalidOptions;
use crate::pipeline::{Processed, Processor, Profiles};

pub struct SymbolizeProcessor {
    symbolizer: Symbolizer,
    /// The time budget of one request; `None` for no limit.
    timeout: Option<Duration>,
    metrics: SymbolizeMetrics,
}

impl SymbolizeProcessor {
    /// Fails with every problem of the options, one per line.
    pub fn new(
        config: &SymbolizeProcessorConfig,
        metrics: SymbolizeMetrics,
    ) -> Result<Self, InvalidOptions> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(InvalidOptions(problems));
        }
        let folder = |path: &String| (!path.is_empty()).then(|| PathBuf::from(path));
        let sources = Sources {
            root: folder(&config.root),
            process_roots: folder(&config.process_roots),
            debug_dirs: config.debug_directories.iter().map(PathBuf::from).collect(),
            debuginfod: debuginfod_of(&config.debuginfod),
            kallsyms: folder(&config.kallsyms),
            kernel_notes: folder(&config.kernel_notes),
        };
        let limits = CacheLimits {
            files: config.cache_files,
            bytes: config.cache_max_bytes.0,
        };
        Ok(Self {
            symbolizer: Symbolizer::with_limits(sources, limits),
            timeout: (!config.timeout.0.is_zero()).then_some(config.timeout.0),
            metrics,
        })
    }

    /// Symbolizes `batch` in place, within the time budget; files that
    /// cannot be used are logged the first time they are met.
    pub fn symbolize(&mut self, batch: &mut Profiles) -> Report {
        let started = Instant::now();
        let deadline = self.timeout.map(|timeout| started + timeout);
        let report = self
            .symbolizer
            .symbolize_until(batch.request_mut(), deadline);
        self.metrics
            .record(&report, started.elapsed(), self.symbolizer.cached_bytes());
        if let Some(&late) = report.misses.get(&MissReason::OutOfTime) {
            tracing::warn!(
                locations = late,
                "symbolize: the time budget ran out; these locations are sent as addresses"
            );
        }
        for problem in &report.problems {
            tracing::warn!(%problem, "symbolize: a file cannot be used; its frames stay addresses");
        }
        if report.locations_symbolized > 0 || report.missed() > 0 {
            tracing::debug!(
                locations = report.locations_symbolized,
                frames = report.frames_symbolized,
                missed = report.missed(),
                left_alone = report.left_alone,
                "symbolize"
            );
        }
        report
    }
}

/// The servers of `config`, or `None` when it names none (its URLs were
/// checked with the other options).
fn debuginfod_of(config: &DebuginfodConfig) -> Option<Debuginfod> {
    let urls = config.urls.urls().ok().filter(|urls| !urls.is_empty())?;
    Some(Debuginfod {
        timeout: config.timeout.0,
        connect_timeout: config.connect_timeout.0,
        read_timeout: config.read_timeout.0,
        cache_max_bytes: config.cache_max_bytes.0,
        miss_ttl: config.miss_ttl.0,
        ..Debuginfod::new(urls, PathBuf::from(&config.cache_dir))
    })
}

impl Processor for SymbolizeProcessor {
    fn process(&mut self, mut batch: Profiles) -> Processed {
        // Reading files (and waiting for debuginfod servers) blocks: on a
        // multi-threaded runtime the worker's other tasks move elsewhere
        // meanwhile.
        let multi_threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread);
        if multi_threaded {
            tokio::task::block_in_place(|| self.symbolize(&mut batch));
        } else {
            self.symbolize(&mut batch);
        }
        Processed::Passed(Arc::new(batch))
    }
}
