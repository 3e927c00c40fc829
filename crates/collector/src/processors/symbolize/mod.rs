//! The `symbolize` processor: resolves native frames to functions, files,
//! lines and inlined frames from the ELF files the mappings name and their
//! debug files (docs/symbolize.md), with profbridge-symbolize.

pub mod config;
mod factory;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use profbridge_symbolize::{Debuginfod, MissReason, Report, Sources, Symbolizer};

use config::DebuginfodConfig;
pub use config::SymbolizeProcessorConfig;
pub use factory::SymbolizeProcessorFactory;

use super::InvalidOptions;
use crate::pipeline::{Processed, Processor, Profiles};

pub struct SymbolizeProcessor {
    symbolizer: Symbolizer,
    /// The time budget of one request; `None` for no limit.
    timeout: Option<Duration>,
}

impl SymbolizeProcessor {
    /// Fails with every problem of the options, one per line.
    pub fn new(config: &SymbolizeProcessorConfig) -> Result<Self, InvalidOptions> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(InvalidOptions(problems));
        }
        let sources = Sources {
            root: (!config.root.is_empty()).then(|| PathBuf::from(&config.root)),
            debug_dirs: config.debug_directories.iter().map(PathBuf::from).collect(),
            debuginfod: debuginfod_of(&config.debuginfod),
        };
        Ok(Self {
            symbolizer: Symbolizer::with_cache_capacity(sources, config.cache_files),
            timeout: (!config.timeout.0.is_zero()).then_some(config.timeout.0),
        })
    }

    /// Symbolizes `batch` in place, within the time budget; files that
    /// cannot be used are logged the first time they are met.
    pub fn symbolize(&mut self, batch: &mut Profiles) -> Report {
        let deadline = self.timeout.map(|timeout| Instant::now() + timeout);
        let report = self
            .symbolizer
            .symbolize_until(batch.request_mut(), deadline);
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
        urls,
        timeout: config.timeout.0,
        connect_timeout: config.connect_timeout.0,
        read_timeout: config.read_timeout.0,
        cache_dir: PathBuf::from(&config.cache_dir),
        max_cache_bytes: config.max_cache_bytes,
        miss_ttl: config.miss_ttl.0,
    })
}

impl Processor for SymbolizeProcessor {
    fn process(&mut self, mut batch: Profiles) -> Processed {
        self.symbolize(&mut batch);
        Processed::Passed(Arc::new(batch))
    }
}
