//! One recording of the process's CPU: started, stopped, and what it
//! holds resolved into a profile.

use ::pprof::{ProfilerGuard, ProfilerGuardBuilder, UnresolvedReport};
use profbridge_pprof::Profile;
use thiserror::Error;

use super::maps::executable_mappings;
use super::profile::{self, RecordedStack, Symbol, Timing};

/// Samples per CPU second, as Go's CPU profiler takes them.
pub const FREQUENCY_HZ: i32 = 100;

/// Libraries no sample is taken in: unwinding a thread stopped inside
/// them could wait on a lock that thread holds (the dynamic loader's, the
/// allocator's) and hang the process.
const BLOCKLIST: &[&str] = &["libc", "libgcc", "pthread", "vdso"];

#[derive(Debug, Error)]
pub enum SamplerError {
    /// Another recording runs: the pprof extension's (a profile request,
    /// `save_to_file`) or the pprof receiver's `self` source. The text is
    /// Go's.
    #[error("cpu profiling already in use")]
    InUse,
    #[error("the CPU sampler failed: {0}")]
    Sampler(::pprof::Error),
}

impl From<::pprof::Error> for SamplerError {
    fn from(error: ::pprof::Error) -> Self {
        match error {
            ::pprof::Error::Running => Self::InUse,
            other => Self::Sampler(other),
        }
    }
}

/// A CPU profile being recorded; dropping it stops it.
pub struct Recording {
    guard: ProfilerGuard<'static>,
}

impl Recording {
    pub fn start() -> Result<Self, SamplerError> {
        let guard = ProfilerGuardBuilder::default()
            .frequency(FREQUENCY_HZ)
            .blocklist(BLOCKLIST)
            .build()?;
        Ok(Self { guard })
    }

    /// Stops; what was recorded, its addresses not yet resolved.
    pub fn stop(self) -> Result<Recorded, SamplerError> {
        let report = self.guard.report().build_unresolved()?;
        Ok(Recorded::from(report))
    }
}

/// What a recording holds, to be resolved into a profile.
pub struct Recorded {
    stacks: Vec<RecordedStack>,
    frames: Vec<backtrace::Frame>,
    timing: Timing,
}

impl From<UnresolvedReport> for Recorded {
    fn from(report: UnresolvedReport) -> Self {
        let mut frames: Vec<backtrace::Frame> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let stacks = report
            .data
            .iter()
            .map(|(stack, &count)| {
                let addresses = stack
                    .frames
                    .iter()
                    .map(|frame| {
                        let address = frame.ip() as u64;
                        if seen.insert(address) {
                            frames.push(frame.clone());
                        }
                        address
                    })
                    .collect();
                let name = stack
                    .thread_name
                    .get(..stack.thread_name_length)
                    .unwrap_or_default();
                let thread = if name.is_empty() {
                    stack.thread_id.to_string()
                } else {
                    String::from_utf8_lossy(name).into_owned()
                };
                RecordedStack {
                    addresses,
                    thread,
                    count: i64::try_from(count).unwrap_or(i64::MAX),
                }
            })
            .collect();
        let timing = Timing {
            start: report.timing.start_time,
            duration: report.timing.duration,
            frequency: i64::from(report.timing.frequency),
        };
        Self {
            stacks,
            frames,
            timing,
        }
    }
}

impl Recorded {
    /// The pprof profile: resolves every address (reading the binaries'
    /// debug information the first time), so run it off the async threads.
    pub fn into_profile(self) -> Profile {
        let frames: std::collections::HashMap<u64, &backtrace::Frame> = self
            .frames
            .iter()
            .map(|frame| (frame.ip() as u64, frame))
            .collect();
        profile::build(
            &self.stacks,
            &self.timing,
            &executable_mappings(),
            |address| {
                frames
                    .get(&address)
                    .map(|frame| resolve(frame))
                    .unwrap_or_default()
            },
        )
    }
}

/// The functions at `frame`'s address, innermost inlined first.
fn resolve(frame: &backtrace::Frame) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    backtrace::resolve_frame(frame, |symbol| {
        let Some(name) = symbol.name() else {
            return;
        };
        symbols.push(Symbol {
            name: format!("{name:#}"),
            system_name: String::from_utf8_lossy(name.as_bytes()).into_owned(),
            filename: symbol
                .filename()
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
            line: symbol.lineno().map_or(0, i64::from),
        });
    });
    symbols
}
