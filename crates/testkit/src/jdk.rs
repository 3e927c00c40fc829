//! Java Flight Recorder recordings of a Java workload of our own, and the
//! JDK's `jfr` tool as the oracle that reads them.
//!
//! The workload is compiled once by source hash (see [`crate::programs`]);
//! a recording is made once per workload source, recorder options and Java
//! version, and kept under `recordings/` in the same cache folder.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::Deserialize;

use crate::programs::{self, BuildFailed, Recipe};
use crate::require_tool;

/// The JDK's tools, found on the `PATH`.
#[derive(Debug, Clone)]
pub struct Jdk {
    pub java: PathBuf,
    pub javac: PathBuf,
    pub jfr: PathBuf,
}

impl Jdk {
    /// `java`, `javac` and `jfr`, or `None` after a loud skip (a panic when
    /// interop is required).
    pub fn find(purpose: &str) -> Option<Self> {
        let java = require_tool("java", &["-version"], purpose)?;
        let javac = require_tool("javac", &["-version"], purpose)?;
        let jfr = require_tool("jfr", &["version"], purpose)?;
        Some(Self { java, javac, jfr })
    }

    /// `java`, `javac` and `jfr`, or the name of the first one missing;
    /// says nothing and never panics (for benchmarks, which skip instead).
    pub fn locate() -> Result<Self, &'static str> {
        let works = |program: &'static str, probe: &str| {
            let ran = Command::new(program).arg(probe).output();
            if ran.is_ok_and(|out| out.status.success()) {
                Ok(PathBuf::from(program))
            } else {
                Err(program)
            }
        };
        Ok(Self {
            java: works("java", "-version")?,
            javac: works("javac", "-version")?,
            jfr: works("jfr", "version")?,
        })
    }

    /// What `java -version` says (it says it on stderr).
    pub fn java_version(&self) -> String {
        let output = Command::new(&self.java)
            .arg("-version")
            .output()
            .expect("run java -version");
        String::from_utf8_lossy(&output.stderr).into_owned()
    }
}

/// The main class of [`WORKLOAD_SOURCE`].
pub const WORKLOAD_CLASS: &str = "ProfbridgeWorkload";

/// A Java program with one thread per kind of profile, each in methods of
/// its own so that a test can tell them apart in a stack:
///
/// - `cpu-worker` spins in `Burn.spinA` three times as long as in
///   `Burn.spinB`;
/// - `alloc-worker` allocates, in rounds of 200, 4 and 1, `byte[512]` in
///   `Alloc.small`, `int[4096]` in `Alloc.medium` and `long[131072]`
///   (1 MiB, outside any TLAB) in `Alloc.large`;
/// - `lock-worker-0` to `lock-worker-2` take turns on one monitor in
///   `Contend.hold`;
/// - `parker` parks for 3 ms at a time in `Park.nap`.
///
/// Every thread runs a lambda. The arguments: how long to run, in
/// milliseconds; how many times to end the recording's chunk and start
/// another, evenly spread over the run; how many milliseconds
/// `alloc-worker` sleeps after each round of allocations. Stacks are a few frames deep, far below the recorder's
/// default depth of 64.
pub const WORKLOAD_SOURCE: &str = r#"import java.util.concurrent.locks.LockSupport;
import jdk.jfr.Recording;

public class ProfbridgeWorkload {
    static volatile long sink;
    static final Object LOCK = new Object();
    static long allocPause;

    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        int rotations = Integer.parseInt(args[1]);
        allocPause = Long.parseLong(args[2]);
        Thread[] threads = {
            new Thread(() -> Burn.work(end), "cpu-worker"),
            new Thread(() -> Alloc.work(end), "alloc-worker"),
            new Thread(() -> Contend.work(end), "lock-worker-0"),
            new Thread(() -> Contend.work(end), "lock-worker-1"),
            new Thread(() -> Contend.work(end), "lock-worker-2"),
            new Thread(() -> Park.work(end), "parker"),
        };
        for (Thread thread : threads) {
            thread.start();
        }
        for (int i = 1; i <= rotations; i++) {
            pause(Long.parseLong(args[0]) / (rotations + 1));
            // Starting and stopping a recording ends the chunk being written.
            try (Recording extra = new Recording()) {
                extra.start();
            }
        }
        for (Thread thread : threads) {
            thread.join();
        }
    }
}

class Burn {
    static void work(long end) {
        while (System.nanoTime() < end) {
            for (int i = 0; i < 3; i++) {
                ProfbridgeWorkload.sink += spinA(200_000);
            }
            ProfbridgeWorkload.sink += spinB(200_000);
        }
    }

    static long spinA(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += (s ^ i) * 31 % 7;
        }
        return s;
    }

    static long spinB(int n) {
        long s = 1;
        for (int i = 0; i < n; i++) {
            s += (s * 17 + i) % 13;
        }
        return s;
    }
}

class Alloc {
    static final Object[] KEEP = new Object[256];

    static void work(long end) {
        int n = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 200; i++) {
                KEEP[n++ & 255] = small();
            }
            for (int i = 0; i < 4; i++) {
                KEEP[n++ & 255] = medium();
            }
            KEEP[n++ & 255] = large();
            ProfbridgeWorkload.pause(ProfbridgeWorkload.allocPause);
        }
    }

    static byte[] small() {
        return new byte[512];
    }

    static int[] medium() {
        return new int[4096];
    }

    static long[] large() {
        return new long[131072];
    }
}

class Contend {
    static void work(long end) {
        while (System.nanoTime() < end) {
            hold();
        }
    }

    static void hold() {
        synchronized (ProfbridgeWorkload.LOCK) {
            ProfbridgeWorkload.sink += Burn.spinB(20_000);
            ProfbridgeWorkload.pause(1);
        }
    }
}

class Park {
    static void work(long end) {
        while (System.nanoTime() < end) {
            nap();
        }
    }

    static void nap() {
        LockSupport.parkNanos(3_000_000L);
    }
}
"#;

/// Compiles [`WORKLOAD_SOURCE`] once; the folder of its classes.
pub fn workload_classes() -> Result<PathBuf, BuildFailed> {
    let compile = |source: &Path, output: &Path| {
        let mut command = Command::new("javac");
        command.arg("-g").arg("-d").arg(output).arg(source);
        command
    };
    programs::build_once(Recipe {
        name: "java-workload",
        source: WORKLOAD_SOURCE,
        source_file: &format!("{WORKLOAD_CLASS}.java"),
        compiler: "javac",
        version_args: &["-version"],
        compile: &compile,
    })
}

/// Event settings on top of JFR's `profile` settings: every kind of event
/// Pyroscope makes a profile of is on, and monitor enters and parks are
/// recorded however short.
pub const EVENT_SETTINGS: &[&str] = &[
    "jdk.ObjectAllocationSample#enabled=true",
    "jdk.ObjectAllocationInNewTLAB#enabled=true",
    "jdk.ObjectAllocationOutsideTLAB#enabled=true",
    "jdk.JavaMonitorEnter#threshold=0ms",
    "jdk.ThreadPark#threshold=0ms",
];

/// How to record the workload.
#[derive(Debug, Clone)]
pub struct RecordSpec {
    /// Names the recording in the cache.
    pub name: &'static str,
    /// How long the workload runs.
    pub run_millis: u64,
    /// `jdk.ExecutionSample`'s period.
    pub cpu_period_millis: u64,
    /// `-XX:StartFlightRecording` settings after `settings=profile`.
    pub event_settings: Vec<String>,
    /// `-XX:FlightRecorderOptions`, if any (such as `maxchunksize=1M`).
    pub recorder_options: Option<String>,
    /// How many times the workload ends the chunk being recorded and starts
    /// another.
    pub chunk_rotations: u32,
    /// How long `alloc-worker` rests between rounds of allocations.
    pub alloc_pause_millis: u64,
    /// The fewest chunks the recording must have; recording fails loudly
    /// otherwise.
    pub min_chunks: usize,
}

impl RecordSpec {
    /// Three seconds of the workload, in one chunk.
    pub fn standard() -> Self {
        Self {
            name: "standard",
            run_millis: 3_000,
            // Not Pyroscope's default of 100 Hz, so that a reader that
            // ignores the recording's own period is caught.
            cpu_period_millis: 20,
            event_settings: EVENT_SETTINGS.iter().map(|s| (*s).to_owned()).collect(),
            recorder_options: None,
            chunk_rotations: 0,
            alloc_pause_millis: 4,
            min_chunks: 1,
        }
    }

    /// Three chunks or more: twice during the run the workload starts and
    /// stops a second recording, and each start or stop ends the chunk
    /// being written, as a chunk grown past `maxchunksize` would end (a
    /// five-second run with `maxchunksize=1M` stayed in one chunk).
    pub fn multi_chunk() -> Self {
        Self {
            name: "multi-chunk",
            chunk_rotations: 2,
            min_chunks: 3,
            ..Self::standard()
        }
    }

    /// A recording of several megabytes, for benchmarks: a longer run
    /// that allocates without rest (most of its events are allocations).
    pub fn large() -> Self {
        let mut event_settings: Vec<String> =
            EVENT_SETTINGS.iter().map(|s| (*s).to_owned()).collect();
        // The JDK throttles allocation samples to 150 a second by default.
        event_settings.push("jdk.ObjectAllocationSample#throttle=20000/s".to_owned());
        Self {
            name: "large",
            run_millis: 6_000,
            alloc_pause_millis: 0,
            event_settings,
            ..Self::standard()
        }
    }

    pub fn cpu_period_nanos(&self) -> i64 {
        self.cpu_period_millis as i64 * 1_000_000
    }
}

/// A recording of the workload.
#[derive(Debug, Clone)]
pub struct Recording {
    pub path: PathBuf,
    pub summary: Summary,
}

impl Recording {
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }
}

/// Finds the JDK and records the workload as `spec` says (once per
/// machine); `None` after a loud skip when the JDK is missing.
pub fn record(spec: &RecordSpec, purpose: &str) -> Option<(Jdk, Recording)> {
    let jdk = Jdk::find(purpose)?;
    let recording = record_with(&jdk, spec);
    Some((jdk, recording))
}

/// Records the workload with `jdk` as `spec` says (once per machine).
pub fn record_with(jdk: &Jdk, spec: &RecordSpec) -> Recording {
    // One JVM at a time: the workload's threads should have the CPUs to
    // themselves, and tests of one binary share the staging file name.
    static RECORDING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = RECORDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let classes = match workload_classes() {
        Ok(classes) => classes,
        Err(failed) => panic!("the Java workload does not compile: {failed}"),
    };
    let args = java_args(spec, &classes, Path::new("RECORDING"));
    let mut hasher = DefaultHasher::new();
    WORKLOAD_SOURCE.hash(&mut hasher);
    args.hash(&mut hasher);
    jdk.java_version().hash(&mut hasher);
    let folder = programs::cache_dir().join("recordings");
    std::fs::create_dir_all(&folder).expect("create the recordings folder");
    let path = folder.join(format!("{}-{:016x}.jfr", spec.name, hasher.finish()));
    if !path.is_file() {
        record_into(jdk, spec, &classes, &path);
    }
    let summary = jfr_summary(jdk, &path);
    assert!(
        summary.chunks >= spec.min_chunks,
        "{} has {} chunks, fewer than the {} asked for",
        path.display(),
        summary.chunks,
        spec.min_chunks
    );
    Recording { path, summary }
}

fn java_args(spec: &RecordSpec, classes: &Path, output: &Path) -> Vec<String> {
    let mut start = format!(
        "-XX:StartFlightRecording=settings=profile,filename={},jdk.ExecutionSample#period={}ms",
        output.display(),
        spec.cpu_period_millis
    );
    for setting in &spec.event_settings {
        start.push(',');
        start.push_str(setting);
    }
    let mut args = vec![start];
    if let Some(options) = &spec.recorder_options {
        args.push(format!("-XX:FlightRecorderOptions={options}"));
    }
    args.extend([
        "-cp".to_owned(),
        classes.display().to_string(),
        WORKLOAD_CLASS.to_owned(),
        spec.run_millis.to_string(),
        spec.chunk_rotations.to_string(),
        spec.alloc_pause_millis.to_string(),
    ]);
    args
}

/// Records into a folder of its own, then moves the finished recording to
/// `path` (the JVM writes it when the workload exits).
fn record_into(jdk: &Jdk, spec: &RecordSpec, classes: &Path, path: &Path) {
    let work = crate::TempDir::new("jfr-recording");
    let output = work.path().join("recording.jfr");
    let out = Command::new(&jdk.java)
        .args(java_args(spec, classes, &output))
        .current_dir(work.path())
        .output()
        .expect("run the Java workload");
    assert!(
        out.status.success() && output.is_file(),
        "the Java workload failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let chunks = jfr_summary(jdk, &output).chunks;
    assert!(
        chunks >= spec.min_chunks,
        "recording {:?} made {chunks} chunks, fewer than {}: run it longer",
        spec.name,
        spec.min_chunks
    );
    let staged = path.with_extension(format!("jfr.{}", std::process::id()));
    std::fs::copy(&output, &staged).expect("copy the recording into the cache");
    std::fs::rename(&staged, path).expect("move the recording into place");
}

/// What `jfr summary` says of a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub chunks: usize,
    /// Events of each type.
    pub counts: BTreeMap<String, u64>,
}

/// Runs `jfr summary`.
pub fn jfr_summary(jdk: &Jdk, path: &Path) -> Summary {
    let out = Command::new(&jdk.jfr)
        .arg("summary")
        .arg(path)
        .output()
        .expect("run jfr summary");
    assert!(
        out.status.success(),
        "jfr summary {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_summary(&String::from_utf8_lossy(&out.stdout))
}

fn parse_summary(text: &str) -> Summary {
    let mut summary = Summary::default();
    let mut chunks = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Chunks:", n] => chunks = n.parse().ok(),
            [name, count, _size] if name.contains('.') => {
                if let Ok(count) = count.parse() {
                    summary.counts.insert((*name).to_owned(), count);
                }
            }
            _ => {}
        }
    }
    summary.chunks = chunks.unwrap_or_else(|| panic!("no chunk count in jfr summary:\n{text}"));
    summary
}

/// A frame as `jfr print` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JfrFrame {
    /// The class as the recording names it: `java/lang/Thread`, slashes
    /// between packages (what `jfr print --json` prints); a hidden class
    /// such as a lambda's as JFR makes it unique,
    /// `Foo$$Lambda$14+0x0000000800c01234/1582071873`.
    pub class: String,
    pub method: String,
    pub line: i64,
    /// `Interpreted`, `JIT compiled`, `Inlined` or `Native`.
    pub frame_type: String,
}

/// An event as `jfr print --json` shows it, reduced to what tests compare.
#[derive(Debug, Clone)]
pub struct JfrEvent {
    pub type_name: String,
    /// `javaName` of `eventThread`, or of `sampledThread` for execution
    /// samples.
    pub thread: Option<String>,
    /// Leaf first.
    pub frames: Vec<JfrFrame>,
    /// Whether the event has a stack trace at all: `stackTrace` is null
    /// for a few events of threads the JVM runs itself.
    pub has_stack: bool,
    /// Whether the stack had more frames than were recorded or printed.
    pub truncated: bool,
    /// As printed, such as `2026-11-27T21:26:44.914869427Z`; ticks, as a
    /// number, when the recording's metadata does not say the field is a
    /// timestamp (async-profiler's, as `jfr_writer` writes it).
    pub start_time: Option<String>,
    /// Printed as an ISO-8601 duration (`PT0.073611958S`), read back.
    pub duration_nanos: Option<i64>,
    /// `jdk.ExecutionSample`'s, such as `STATE_RUNNABLE`.
    pub state: Option<String>,
    /// `jdk.ObjectAllocationSample`'s.
    pub weight: Option<i64>,
    pub tlab_size: Option<i64>,
    pub allocation_size: Option<i64>,
    pub object_class: Option<String>,
}

/// Runs `jfr print --json --stack-depth DEPTH --events EVENTS PATH`; its
/// events in the order printed.
pub fn jfr_print_json(jdk: &Jdk, path: &Path, events: &[&str], stack_depth: u32) -> Vec<JfrEvent> {
    let mut child = Command::new(&jdk.jfr)
        .args(["print", "--json", "--stack-depth"])
        .arg(stack_depth.to_string())
        .arg("--events")
        .arg(events.join(","))
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jfr print");
    let stdout = child.stdout.take().expect("jfr print's stdout");
    // Read as it is printed: the JSON repeats every frame's class loader
    // and can run to hundreds of megabytes.
    let parsed: Result<PrintedDocument, _> = serde_json::from_reader(BufReader::new(stdout));
    let out = child.wait_with_output().expect("wait for jfr print");
    assert!(
        out.status.success(),
        "jfr print {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let document = parsed.unwrap_or_else(|e| panic!("jfr print's JSON does not parse: {e}"));
    document
        .recording
        .events
        .into_iter()
        .map(PrintedEvent::into_event)
        .collect()
}

#[derive(Deserialize)]
struct PrintedDocument {
    recording: PrintedRecording,
}

#[derive(Deserialize)]
struct PrintedRecording {
    events: Vec<PrintedEvent>,
}

#[derive(Deserialize)]
struct PrintedEvent {
    #[serde(rename = "type")]
    type_name: String,
    values: PrintedValues,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrintedValues {
    start_time: Option<serde_json::Value>,
    duration: Option<String>,
    event_thread: Option<PrintedThread>,
    sampled_thread: Option<PrintedThread>,
    stack_trace: Option<PrintedStack>,
    state: Option<String>,
    weight: Option<i64>,
    tlab_size: Option<i64>,
    allocation_size: Option<i64>,
    object_class: Option<PrintedClass>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrintedThread {
    java_name: Option<String>,
}

#[derive(Deserialize)]
struct PrintedStack {
    truncated: bool,
    frames: Vec<PrintedFrame>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrintedFrame {
    method: PrintedMethod,
    line_number: i64,
    #[serde(rename = "type")]
    frame_type: String,
}

#[derive(Deserialize)]
struct PrintedMethod {
    #[serde(rename = "type")]
    class: PrintedClass,
    name: String,
}

#[derive(Deserialize)]
struct PrintedClass {
    name: String,
}

impl PrintedEvent {
    fn into_event(self) -> JfrEvent {
        let values = self.values;
        let thread = values
            .event_thread
            .or(values.sampled_thread)
            .and_then(|thread| thread.java_name);
        let has_stack = values.stack_trace.is_some();
        let (frames, truncated) = values.stack_trace.map_or((Vec::new(), false), |stack| {
            let frames = stack
                .frames
                .into_iter()
                .map(|frame| JfrFrame {
                    class: frame.method.class.name,
                    method: frame.method.name,
                    line: frame.line_number,
                    frame_type: frame.frame_type,
                })
                .collect();
            (frames, stack.truncated)
        });
        let duration_nanos = values.duration.as_deref().map(|text| {
            parse_iso_duration(text).unwrap_or_else(|| panic!("duration {text:?} does not parse"))
        });
        JfrEvent {
            type_name: self.type_name,
            thread,
            frames,
            has_stack,
            truncated,
            start_time: values.start_time.map(|time| match time {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            }),
            duration_nanos,
            state: values.state,
            weight: values.weight,
            tlab_size: values.tlab_size,
            allocation_size: values.allocation_size,
            object_class: values.object_class.map(|class| class.name),
        }
    }
}

/// Nanoseconds of a `java.time.Duration` as `toString` prints it:
/// `PT0S`, `PT0.073611958S`, `PT1M2.5S`, `PT-0.5S`, `PT26H3M`.
pub fn parse_iso_duration(text: &str) -> Option<i64> {
    let mut rest = text.strip_prefix("PT")?;
    let mut nanos: i64 = 0;
    while !rest.is_empty() {
        let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
        let (number, unit) = (&rest[..end], &rest[end..end + 1]);
        rest = &rest[end + 1..];
        let (negative, digits) = match number.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, number),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() || fraction.len() > 9 {
            return None;
        }
        let unit_nanos: i64 = match unit {
            "H" => 3_600_000_000_000,
            "M" => 60_000_000_000,
            "S" => 1_000_000_000,
            _ => return None,
        };
        if unit != "S" && !fraction.is_empty() {
            return None;
        }
        let mut value = whole.parse::<i64>().ok()?.checked_mul(unit_nanos)?;
        if !fraction.is_empty() {
            let padded = format!("{fraction:0<9}");
            value = value.checked_add(padded.parse::<i64>().ok()?)?;
        }
        nanos = nanos.checked_add(if negative { -value } else { value })?;
    }
    Some(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations_as_java_prints_them() {
        assert_eq!(parse_iso_duration("PT0S"), Some(0));
        assert_eq!(parse_iso_duration("PT0.073611958S"), Some(73_611_958));
        assert_eq!(parse_iso_duration("PT0.01S"), Some(10_000_000));
        assert_eq!(parse_iso_duration("PT1M2.5S"), Some(62_500_000_000));
        assert_eq!(parse_iso_duration("PT26H3M"), Some(93_780_000_000_000));
        assert_eq!(parse_iso_duration("PT-0.5S"), Some(-500_000_000));
        assert_eq!(parse_iso_duration("P1D"), None);
        assert_eq!(parse_iso_duration("PT1.5M"), None);
    }

    #[test]
    fn summary_lines() {
        let text = "\n Version: 2.1\n Chunks: 2\n Start: 2026-11-27 21:26:31 (UTC)\n Duration: 5 s\n\n Event Type   Count  Size (bytes) \n=====\n jdk.ExecutionSample   500   5000\n jdk.ThreadPark  486  13608\n";
        let summary = parse_summary(text);
        assert_eq!(summary.chunks, 2);
        assert_eq!(summary.counts.get("jdk.ExecutionSample"), Some(&500));
        assert_eq!(summary.counts.get("jdk.ThreadPark"), Some(&486));
        assert_eq!(summary.counts.len(), 2);
    }
}
