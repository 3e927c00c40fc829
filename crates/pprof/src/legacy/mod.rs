//! The legacy profile formats google/pprof reads, parsed as it parses them:
//! the same samples, locations, mappings and ids, so that `dump` prints what
//! google/pprof prints.

mod contention;
mod cpu;
mod frames;
mod go_count;
mod heap;
mod java;
mod maps;
mod model;
mod patterns;
mod scanner;
mod thread;

use thiserror::Error;

use crate::validate::{validate, ValidationError};
use crate::Profile;
use model::LegacyProfile;
use scanner::{is_memory_map_sentinel, Scanner};

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LegacyError {
    #[error("not a legacy profile format google/pprof reads")]
    Unrecognized,
    #[error("gperftools CPU profile: at offset {offset} ({offset:#x}): {problem}")]
    Gperftools { offset: usize, problem: String },
    #[error("{format} profile: line {line}: {problem}")]
    Malformed {
        format: &'static str,
        line: usize,
        problem: String,
    },
    #[error("legacy profile parsed into an invalid profile: {0}")]
    Invalid(ValidationError),
    /// A pattern of the parsers does not compile: a bug in profbridge.
    #[error("legacy parser pattern {pattern:?} does not compile: {problem}")]
    BrokenPattern {
        pattern: &'static str,
        problem: String,
    },
}

/// By hand rather than `#[from]`, which would also make the error the
/// `source()` of a text that already shows it (docs/architecture.md).
impl From<ValidationError> for LegacyError {
    fn from(error: ValidationError) -> Self {
        Self::Invalid(error)
    }
}

/// The legacy formats, as detection names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LegacyKind {
    GperftoolsCpu,
    JavaCpu,
    Heap,
    GoCount,
    Thread,
    Contention,
    JavaHeap,
    JavaContention,
}

impl LegacyKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::GperftoolsCpu => "gperftools CPU",
            Self::JavaCpu => "Java CPU",
            Self::Heap => "heap/growth (gperftools or Go legacy text)",
            Self::GoCount => "Go goroutine/threadcreate count (legacy text)",
            Self::Thread => "thread (threadz)",
            Self::Contention => "contention (gperftools or Go legacy text)",
            Self::JavaHeap => "Java heap",
            Self::JavaContention => "Java contention",
        }
    }

    pub const ALL: [Self; 8] = [
        Self::GperftoolsCpu,
        Self::JavaCpu,
        Self::Heap,
        Self::GoCount,
        Self::Thread,
        Self::Contention,
        Self::JavaHeap,
        Self::JavaContention,
    ];
}

/// Which legacy format `data` is, judged from its header as each parser
/// judges it, in google/pprof's order.
pub fn sniff_legacy(data: &[u8]) -> Option<LegacyKind> {
    if let Some(kind) = cpu::recognizes(data) {
        return Some(kind);
    }
    let text = String::from_utf8_lossy(data.get(..4096).unwrap_or(data));
    if heap::recognizes(&text) {
        Some(LegacyKind::Heap)
    } else if go_count::recognizes(&text) {
        Some(LegacyKind::GoCount)
    } else if thread::recognizes(&text) {
        Some(LegacyKind::Thread)
    } else if contention::recognizes(&text) {
        Some(LegacyKind::Contention)
    } else {
        java::recognizes(&text)
    }
}

/// Parses a legacy profile (gperftools or Java CPU, heap, growth,
/// fragmentation, contention, thread, Go count, Java heap and contention)
/// into the profile google/pprof would produce, checked by `validate`.
pub fn parse_legacy(data: &[u8]) -> Result<Profile, LegacyError> {
    let mut legacy = parse_any_legacy(data)?;
    (legacy.drop_frames, legacy.keep_frames) = frames::frame_filters(&legacy.sample_types);
    let profile = legacy.into_profile();
    validate(&profile)?;
    Ok(profile)
}

fn parse_any_legacy(data: &[u8]) -> Result<LegacyProfile, LegacyError> {
    match cpu::parse(data) {
        Err(LegacyError::Unrecognized) => {}
        result => return result,
    }
    let text = String::from_utf8_lossy(data);
    type TextParser = fn(&str) -> Result<LegacyProfile, LegacyError>;
    let text_parsers: [TextParser; 5] = [
        heap::parse,
        go_count::parse,
        thread::parse,
        contention::parse,
        java::parse,
    ];
    for parse in text_parsers {
        match parse(&text) {
            Err(LegacyError::Unrecognized) => continue,
            result => return result,
        }
    }
    Err(LegacyError::Unrecognized)
}

/// Moves `lines` to the memory-map sentinel, if there is one.
fn skip_to_memory_map(lines: &mut Scanner<'_>) {
    while !is_memory_map_sentinel(lines.text()) && lines.scan() {}
}

/// The profiler may record the leaf twice: once from the signal context and
/// once, adjusted by -1, from unwinding. Drops the second copy.
fn remove_duplicated_leaf(profile: &mut LegacyProfile) {
    let locations = &profile.locations;
    let address = |index: Option<&usize>| index.and_then(|&i| locations.get(i)).map(|l| l.address);
    for sample in &mut profile.samples {
        let (leaf, next) = (
            address(sample.locations.first()),
            address(sample.locations.get(1)),
        );
        if let (Some(leaf), Some(next)) = (leaf, next) {
            if leaf == next.wrapping_add(1) {
                sample.locations.remove(1);
            }
        }
    }
}
