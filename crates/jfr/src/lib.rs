//! JFR (Java Flight Recorder) recordings, read as Grafana Pyroscope reads
//! them (docs/jfr.md).
//!
//! - [`is_jfr`]: whether bytes (gunzipped) start a recording.
//! - [`convert`]: one pprof profile per profile type found, with
//!   Pyroscope's names, sample types and units.
//! - [`parse_labels_snapshot`]: the Pyroscope Java agent's context labels.

mod labels;
mod pyroscope;
mod reader;

use profbridge_pprof::{DecodeOptions, Profile};
use thiserror::Error;

pub use labels::{parse_labels_snapshot, LabelsContext, LabelsError, LabelsSnapshot};
pub use reader::Problem;

/// The magic every JFR chunk starts with.
pub const MAGIC: [u8; 4] = *b"FLR\0";

/// Whether `bytes` (already gunzipped) start with a JFR chunk's magic.
pub fn is_jfr(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// Bounds on what one recording may make the reader hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Chunks in one recording.
    pub max_chunks: usize,
    /// Entries of one constant pool (classes, methods, stack traces...).
    pub max_pool_entries: usize,
    /// Frames of one stack trace.
    pub max_stack_depth: usize,
    /// Type descriptors (classes) of one metadata event.
    pub max_metadata_classes: usize,
    /// Nesting of one value (a field of a field of...).
    pub max_value_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_chunks: 4096,
            max_pool_entries: 4 << 20,
            max_stack_depth: 8192,
            max_metadata_classes: 65_536,
            max_value_depth: 32,
        }
    }
}

/// How a recording becomes profiles.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions<'a> {
    /// Pyroscope's `sampleRate` (Hz): CPU and wall samples weigh
    /// 1e9 / rate nanoseconds. `None`: the recording's own sampling
    /// interval (docs/jfr.md says which setting).
    pub sample_rate: Option<u32>,
    /// Pyroscope's `from` and `until`, in Unix nanoseconds: the profiles'
    /// `time_nanos` and `duration_nanos`. `None`: the chunks' own span.
    pub time_range_nanos: Option<(i64, i64)>,
    /// The agent's context labels, looked up by each event's context id.
    pub labels: Option<&'a LabelsSnapshot>,
    /// gunzip and input size limits.
    pub decode: DecodeOptions,
    pub limits: Limits,
}

/// Which events a profile was made from; one profile per kind found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProfileKind {
    /// `jdk.ExecutionSample` (not sleeping); with async-profiler's wall
    /// mode, `profiler.WallClockSample` in state RUNNABLE.
    Cpu,
    /// `profiler.WallClockSample`; `jdk.ExecutionSample` in wall mode.
    Wall,
    AllocInNewTlab,
    AllocOutsideTlab,
    /// `jdk.ObjectAllocationSample`.
    AllocSample,
    /// `profiler.LiveObject`.
    LiveObject,
    /// `jdk.JavaMonitorEnter`.
    Mutex,
    /// `jdk.ThreadPark`.
    Block,
    /// `profiler.Malloc`.
    Malloc,
}

impl ProfileKind {
    /// Pyroscope's metric name (the `__name__` of the series).
    pub fn metric(self) -> &'static str {
        match self {
            Self::Cpu => "process_cpu",
            Self::Wall => "wall",
            Self::AllocInNewTlab
            | Self::AllocOutsideTlab
            | Self::AllocSample
            | Self::LiveObject
            | Self::Malloc => "memory",
            Self::Mutex => "mutex",
            Self::Block => "block",
        }
    }

    /// A name unique within a recording, for file names and listings.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "process_cpu",
            Self::Wall => "wall",
            Self::AllocInNewTlab => "alloc_in_new_tlab",
            Self::AllocOutsideTlab => "alloc_outside_tlab",
            Self::AllocSample => "alloc_sample",
            Self::LiveObject => "live",
            Self::Mutex => "mutex",
            Self::Block => "block",
            Self::Malloc => "malloc",
        }
    }
}

/// `profile.frame.type` of a frame, as OpenTelemetry names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// Interpreted, JIT-compiled, inlined Java, and the JDK's native methods.
    Jvm,
    /// async-profiler's native and C++ frames.
    Native,
    /// async-profiler's kernel frames.
    Kernel,
}

impl FrameKind {
    pub fn otel_name(self) -> &'static str {
        match self {
            Self::Jvm => "jvm",
            Self::Native => "native",
            Self::Kernel => "kernel",
        }
    }
}

/// One profile of a recording.
#[derive(Debug, Clone)]
pub struct JfrProfile {
    pub kind: ProfileKind,
    /// Valid pprof, as Pyroscope builds it (docs/jfr.md).
    pub profile: Profile,
    /// The frame type of each location: `frame_kinds[i]` is that of the
    /// location with id `i + 1`.
    pub frame_kinds: Vec<FrameKind>,
}

/// What a recording made.
#[derive(Debug, Clone, Default)]
pub struct Converted {
    /// Ordered by kind.
    pub profiles: Vec<JfrProfile>,
    /// async-profiler's `event` setting (`cpu`, `itimer`, `wall`...), when
    /// recorded.
    pub profiler_event: Option<String>,
    /// Events left out as Pyroscope leaves them out.
    pub skipped: Skipped,
}

/// Events (or frames) dropped because a reference did not resolve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    pub stack_trace_not_found: u64,
    pub method_not_found: u64,
    pub class_not_found: u64,
}

/// Why a recording was refused; the text names the chunk, the byte offset
/// and the table at fault.
#[derive(Debug, Error)]
pub enum JfrError {
    #[error(transparent)]
    Decode(#[from] profbridge_pprof::DecodeError),
    #[error("not a JFR recording: it does not start with the magic \"FLR\\0\"")]
    NotJfr,
    #[error("JFR chunk {chunk}, byte {offset}, {part}: {problem}")]
    Malformed {
        /// The chunk's index in the recording, from 0.
        chunk: usize,
        /// The byte's offset from the start of the (gunzipped) recording.
        offset: u64,
        /// What was being read: "metadata", "constant pool jdk.types.Method"...
        part: String,
        problem: Problem,
    },
    #[error("the recording has more than {limit} chunks")]
    TooManyChunks { limit: usize },
}

/// Reads a recording (gzipped or not) into one profile per kind found.
pub fn convert(bytes: &[u8], options: &ConvertOptions<'_>) -> Result<Converted, JfrError> {
    let unzipped = profbridge_pprof::unzip(bytes, &options.decode)?;
    if !is_jfr(&unzipped.bytes) {
        return Err(JfrError::NotJfr);
    }
    pyroscope::convert_recording(&unzipped.bytes, options)
}
