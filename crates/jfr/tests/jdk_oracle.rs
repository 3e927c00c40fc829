//! profbridge-jfr against the JDK's own reader: the workload of
//! `profbridge_testkit::jdk` is recorded by the JVM, converted by
//! [`profbridge_jfr::convert`], and every profile must hold exactly what
//! `jfr print --json` shows of the same recording, stack by stack and
//! thread by thread, summed as Grafana Pyroscope sums it.
//!
//! Skipped loudly without a JDK (a failure under
//! `PROFBRIDGE_REQUIRE_INTEROP=1`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::OnceLock;

use profbridge_jfr::{convert, ConvertOptions, Converted, FrameKind, JfrProfile, ProfileKind};
use profbridge_pprof::Profile;
use profbridge_testkit::jdk::{self, Jdk, JfrEvent, JfrFrame, RecordSpec, Recording};

const PURPOSE: &str = "comparing JFR conversion with the JDK's jfr tool";

/// The recorder's default stack depth, and what `jfr print` is asked to
/// show: every recorded frame.
const STACK_DEPTH: u32 = 64;

const THREAD_LABEL: &str = "thread_name";

/// The event types Pyroscope makes profiles of from a JDK recording.
const EVENT_TYPES: &[&str] = &[
    "jdk.ExecutionSample",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
];

/// A sample's identity: its thread and its frames, leaf first, each as
/// a function name and a line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct StackKey {
    thread: Option<String>,
    frames: Vec<(String, i64)>,
}

/// What a profile holds per stack: its values summed.
type Multiset = BTreeMap<StackKey, Vec<i64>>;

/// Pyroscope's name for a class: as the recording spells it, with the
/// number that makes a generated class unique replaced by `_`
/// (`Foo$$Lambda$14/0x0000000800c01234` and `Foo$$Lambda.0x00007ffa600c4da0`
/// become `Foo$$Lambda_`, `jdk/internal/reflect/GeneratedMethodAccessor31`
/// becomes `jdk/internal/reflect/GeneratedMethodAccessor_`).
fn pyroscope_class_name(class: &str) -> String {
    if let Some(number) = class.strip_prefix("jdk/internal/reflect/GeneratedMethodAccessor") {
        if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
            return "jdk/internal/reflect/GeneratedMethodAccessor_".to_owned();
        }
    }
    if let Some(at) = class.rfind("$$Lambda") {
        let (head, tail) = class.split_at(at + "$$Lambda".len());
        if lambda_suffix(tail) {
            return format!("{head}_");
        }
    }
    class.to_owned()
}

/// Whether `tail`, what follows `$$Lambda`, is `$?DIGITS*[./](0x)?HEX+` or
/// `DIGITS+`, the forms Pyroscope merges.
fn lambda_suffix(tail: &str) -> bool {
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if all_digits(tail) {
        return true;
    }
    let rest = tail.strip_prefix('$').unwrap_or(tail);
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let Some(rest) = rest.strip_prefix(['.', '/']) else {
        return false;
    };
    let hex = rest.strip_prefix("0x").unwrap_or(rest);
    !hex.is_empty() && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The line a profile gives a frame: JFR's, with "unknown" (JFR's -1,
/// for generated and native methods) read as Pyroscope reads it, an
/// unsigned 32-bit number: 4294967295.
fn pprof_line(jfr_line: i64) -> i64 {
    if jfr_line < 0 {
        i64::from(jfr_line as i32 as u32)
    } else {
        jfr_line
    }
}

fn frame_key(frame: &JfrFrame) -> (String, i64) {
    (
        format!("{}.{}", pyroscope_class_name(&frame.class), frame.method),
        pprof_line(frame.line),
    )
}

fn event_key(event: &JfrEvent) -> StackKey {
    StackKey {
        thread: event.thread.clone(),
        frames: event.frames.iter().map(frame_key).collect(),
    }
}

/// Sums `values(event)` per stack over the events of `type_name`.
fn expected(
    events: &[JfrEvent],
    type_name: &str,
    keep: impl Fn(&JfrEvent) -> bool,
    values: impl Fn(&JfrEvent) -> Vec<i64>,
) -> Multiset {
    let mut out = Multiset::new();
    for event in events
        .iter()
        .filter(|e| e.type_name == type_name && !e.frames.is_empty() && keep(e))
    {
        add(&mut out, event_key(event), &values(event));
    }
    out
}

fn add(into: &mut Multiset, key: StackKey, values: &[i64]) {
    let sums = into.entry(key).or_insert_with(|| vec![0; values.len()]);
    assert_eq!(
        sums.len(),
        values.len(),
        "samples of one profile differ in length"
    );
    for (sum, value) in sums.iter_mut().zip(values) {
        *sum += value;
    }
}

fn string(profile: &Profile, index: i64) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| profile.string_table.get(i))
        .unwrap_or_else(|| panic!("string index {index} outside the string table"))
}

/// What a converted profile holds per stack, read through its locations,
/// functions and `thread_name` labels.
fn actual(profile: &Profile) -> Multiset {
    let functions: BTreeMap<u64, &str> = profile
        .function
        .iter()
        .map(|f| (f.id, string(profile, f.name)))
        .collect();
    let locations: BTreeMap<u64, Vec<(String, i64)>> = profile
        .location
        .iter()
        .map(|location| {
            let lines = location
                .line
                .iter()
                .map(|line| {
                    let name = functions
                        .get(&line.function_id)
                        .unwrap_or_else(|| panic!("no function {}", line.function_id));
                    ((*name).to_owned(), line.line)
                })
                .collect();
            (location.id, lines)
        })
        .collect();
    let mut out = Multiset::new();
    // A JDK event with an empty stack (of a thread the JVM runs itself)
    // is compared by count only (`Oracle::frameless`).
    for sample in profile.sample.iter().filter(|s| !s.location_id.is_empty()) {
        let frames = sample
            .location_id
            .iter()
            .flat_map(|id| {
                locations
                    .get(id)
                    .unwrap_or_else(|| panic!("no location {id}"))
                    .iter()
                    .cloned()
            })
            .collect();
        let threads: Vec<&str> = sample
            .label
            .iter()
            .filter(|label| string(profile, label.key) == THREAD_LABEL)
            .map(|label| string(profile, label.str))
            .collect();
        assert!(
            threads.len() <= 1,
            "a sample with two thread names: {threads:?}"
        );
        let key = StackKey {
            thread: threads.first().map(|t| (*t).to_owned()),
            frames,
        };
        add(&mut out, key, &sample.value);
    }
    out
}

fn sample_types(profile: &Profile) -> Vec<(String, String)> {
    profile
        .sample_type
        .iter()
        .map(|t| {
            (
                string(profile, t.r#type).to_owned(),
                string(profile, t.unit).to_owned(),
            )
        })
        .collect()
}

/// Says which stacks differ, and how, in a few lines.
fn describe_difference(expected: &Multiset, actual: &Multiset) -> String {
    let mut lines = Vec::new();
    let keys: BTreeSet<&StackKey> = expected.keys().chain(actual.keys()).collect();
    for key in keys {
        let (want, got) = (expected.get(key), actual.get(key));
        if want != got {
            lines.push(format!("  {key:?}: jfr print {want:?}, converted {got:?}"));
        }
    }
    let shown = lines.len().min(12);
    format!(
        "{} stacks differ (jfr print shows {}, the conversion has {}):\n{}",
        lines.len(),
        expected.len(),
        actual.len(),
        lines[..shown].join("\n")
    )
}

/// How many events `actual` lacks against `expected`: every stack of
/// `actual` must be one `expected` has, with values no larger; `weight`
/// is what one event counts in the first value. `Err` describes the first
/// difference otherwise.
fn missing_events(expected: &Multiset, actual: &Multiset, weight: i64) -> Result<i64, String> {
    let mut missing = 0;
    for (key, got) in actual {
        match expected.get(key) {
            Some(want) if got.iter().zip(want).all(|(g, w)| g <= w) => {
                missing += (want[0] - got[0]) / weight;
            }
            _ => return Err(describe_difference(expected, actual)),
        }
    }
    for (key, want) in expected {
        if !actual.contains_key(key) {
            missing += want[0] / weight;
        }
    }
    Ok(missing)
}

/// How one kind of profile is made from one event type.
struct KindSpec {
    kind: ProfileKind,
    event: &'static str,
    sample_types: [(&'static str, &'static str); 2],
    /// The values of one event, after its count.
    size: fn(&JfrEvent) -> i64,
}

fn tlab_size(event: &JfrEvent) -> i64 {
    event.tlab_size.expect("a TLAB event has tlabSize")
}

fn allocation_size(event: &JfrEvent) -> i64 {
    event.allocation_size.expect("the event has allocationSize")
}

fn weight(event: &JfrEvent) -> i64 {
    event.weight.expect("an allocation sample has a weight")
}

fn duration(event: &JfrEvent) -> i64 {
    event.duration_nanos.expect("the event has a duration")
}

const TWO_VALUE_KINDS: &[KindSpec] = &[
    KindSpec {
        kind: ProfileKind::AllocInNewTlab,
        event: "jdk.ObjectAllocationInNewTLAB",
        sample_types: [
            ("alloc_in_new_tlab_objects", "count"),
            ("alloc_in_new_tlab_bytes", "bytes"),
        ],
        size: tlab_size,
    },
    KindSpec {
        kind: ProfileKind::AllocOutsideTlab,
        event: "jdk.ObjectAllocationOutsideTLAB",
        sample_types: [
            ("alloc_outside_tlab_objects", "count"),
            ("alloc_outside_tlab_bytes", "bytes"),
        ],
        size: allocation_size,
    },
    KindSpec {
        kind: ProfileKind::AllocSample,
        event: "jdk.ObjectAllocationSample",
        sample_types: [
            ("alloc_sample_objects", "count"),
            ("alloc_sample_bytes", "bytes"),
        ],
        size: weight,
    },
    KindSpec {
        kind: ProfileKind::Mutex,
        event: "jdk.JavaMonitorEnter",
        sample_types: [("contentions", "count"), ("delay", "nanoseconds")],
        size: duration,
    },
    KindSpec {
        kind: ProfileKind::Block,
        event: "jdk.ThreadPark",
        sample_types: [("contentions", "count"), ("delay", "nanoseconds")],
        size: duration,
    },
];

fn is_cpu_sample(event: &JfrEvent) -> bool {
    event.state.as_deref() != Some("STATE_SLEEPING")
}

/// What the oracle says each kind of profile must hold.
struct Oracle {
    /// The recording's `jdk.ExecutionSample` period.
    cpu_period_nanos: i64,
    /// `jdk.ExecutionSample`s of sleeping threads, which are not CPU time.
    sleeping_samples: i64,
    /// Per event type, the events that would count but have no stack
    /// trace: Pyroscope skips them, as "stack trace not found".
    stackless: BTreeMap<String, i64>,
    /// Per event type, the events that would count and that `jfr print`
    /// shows with an empty stack trace. At a chunk's end the JDK's reader
    /// gives an empty stack to a reference the chunk's pools lack, which
    /// the conversion skips as not found: either is right.
    frameless: BTreeMap<String, i64>,
    /// Samples counted per stack; a profile holds them weighted.
    cpu_samples: Multiset,
    others: BTreeMap<ProfileKind, Multiset>,
}

impl Oracle {
    fn read(jdk: &Jdk, recording: &Recording, spec: &RecordSpec) -> Self {
        let events = jdk::jfr_print_json(jdk, &recording.path, EVENT_TYPES, STACK_DEPTH);
        for type_name in EVENT_TYPES {
            let printed = events.iter().filter(|e| e.type_name == *type_name).count();
            let summed = recording
                .summary
                .counts
                .get(*type_name)
                .copied()
                .unwrap_or(0);
            assert_eq!(
                printed as u64, summed,
                "jfr print and jfr summary disagree on {type_name}"
            );
        }
        for event in &events {
            assert!(
                event.frames.len() <= STACK_DEPTH as usize,
                "jfr print showed more frames than asked"
            );
        }
        let cpu_period_nanos = spec.cpu_period_nanos();
        let sleeping_samples = events
            .iter()
            .filter(|e| e.type_name == "jdk.ExecutionSample" && !is_cpu_sample(e))
            .count() as i64;
        let mut stackless = BTreeMap::new();
        let mut frameless = BTreeMap::new();
        for event in events.iter().filter(|e| e.frames.is_empty()) {
            if event.type_name != "jdk.ExecutionSample" || is_cpu_sample(event) {
                let counts = if event.has_stack {
                    &mut frameless
                } else {
                    &mut stackless
                };
                *counts.entry(event.type_name.clone()).or_insert(0) += 1;
            }
        }
        let cpu_samples = expected(&events, "jdk.ExecutionSample", is_cpu_sample, |_| vec![1]);
        let others = TWO_VALUE_KINDS
            .iter()
            .map(|spec| {
                let size = spec.size;
                let sums = expected(&events, spec.event, |_| true, |e| vec![1, size(e)]);
                (spec.kind, sums)
            })
            .collect();
        let oracle = Self {
            cpu_period_nanos,
            sleeping_samples,
            stackless,
            frameless,
            cpu_samples,
            others,
        };
        oracle.assert_workload_is_there();
        oracle
    }

    /// Events of `type_name` that make no sample with frames.
    fn stackless_of(&self, type_name: &str) -> i64 {
        self.stackless.get(type_name).copied().unwrap_or(0)
            + self.frameless.get(type_name).copied().unwrap_or(0)
    }

    fn of(&self, kind: ProfileKind) -> &Multiset {
        match kind {
            ProfileKind::Cpu => &self.cpu_samples,
            other => &self.others[&other],
        }
    }

    /// The CPU profile expected when each sample weighs `weight_nanos`.
    fn cpu(&self, weight_nanos: i64) -> Multiset {
        let mut weighted = self.cpu_samples.clone();
        for values in weighted.values_mut() {
            values[0] *= weight_nanos;
        }
        weighted
    }

    /// The recording holds the workload's own activity, so that an empty or
    /// partial conversion cannot match it.
    fn assert_workload_is_there(&self) {
        let cpu_count =
            |thread: &str, function: &str| events_in(&self.cpu_samples, thread, function);
        let spin_a = cpu_count("cpu-worker", "Burn.spinA");
        let spin_b = cpu_count("cpu-worker", "Burn.spinB");
        assert!(
            spin_a >= 20 && spin_b >= 5,
            "too few CPU samples in the workload: spinA {spin_a}, spinB {spin_b}"
        );
        let count = |kind, thread: &str, function: &str| events_in(self.of(kind), thread, function);
        assert!(count(ProfileKind::AllocOutsideTlab, "alloc-worker", "Alloc.large") >= 20);
        assert!(count(ProfileKind::AllocInNewTlab, "alloc-worker", "Alloc.") >= 5);
        assert!(count(ProfileKind::AllocSample, "alloc-worker", "Alloc.") >= 20);
        assert!(count(ProfileKind::Block, "parker", "Park.nap") >= 50);
        let contended: i64 = (0..3)
            .map(|i| {
                count(
                    ProfileKind::Mutex,
                    &format!("lock-worker-{i}"),
                    "Contend.hold",
                )
            })
            .sum();
        assert!(contended >= 20, "only {contended} monitor enters");
        for kind in [ProfileKind::Cpu, ProfileKind::Mutex, ProfileKind::Block] {
            let lambda = self
                .of(kind)
                .keys()
                .any(|key| key.frames.iter().any(|(name, _)| name.contains("$$Lambda")));
            assert!(lambda, "no lambda frame in {kind:?}");
        }
    }
}

/// The first value (the count, or the CPU time) summed over the stacks of
/// `thread` with a function whose name starts with `prefix`.
fn events_in(multiset: &Multiset, thread: &str, prefix: &str) -> i64 {
    multiset
        .iter()
        .filter(|(key, _)| key.thread.as_deref() == Some(thread))
        .filter(|(key, _)| key.frames.iter().any(|(name, _)| name.starts_with(prefix)))
        .map(|(_, values)| values[0])
        .sum()
}

fn profile_of(converted: &Converted, kind: ProfileKind) -> &JfrProfile {
    converted
        .profiles
        .iter()
        .find(|p| p.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} profile"))
}

/// Every profile of `converted` against the oracle, CPU samples weighing
/// `cpu_weight_nanos` each.
/// Checks every profile against the oracle; answers how many events of
/// each kind the conversion lacks, at most `allowed_missing` in all: a
/// JDK event written as a chunk ends may refer to a stack trace of
/// another chunk, which the conversion skips (as Pyroscope) and counts.
fn assert_matches(
    converted: &Converted,
    oracle: &Oracle,
    cpu_weight_nanos: i64,
    allowed_missing: i64,
) -> BTreeMap<ProfileKind, i64> {
    let mut missing = BTreeMap::new();
    let kinds: Vec<ProfileKind> = converted.profiles.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            ProfileKind::Cpu,
            ProfileKind::AllocInNewTlab,
            ProfileKind::AllocOutsideTlab,
            ProfileKind::AllocSample,
            ProfileKind::Mutex,
            ProfileKind::Block,
        ],
        "one profile per kind recorded, ordered by kind"
    );
    for profile in &converted.profiles {
        profbridge_pprof::validate(&profile.profile)
            .unwrap_or_else(|e| panic!("{:?} is not valid pprof: {e}", profile.kind));
        assert_eq!(
            profile.frame_kinds.len(),
            profile.profile.location.len(),
            "{:?}: one frame kind per location",
            profile.kind
        );
        assert!(
            profile.frame_kinds.iter().all(|k| *k == FrameKind::Jvm),
            "{:?}: a JDK recording has Java frames only",
            profile.kind
        );
    }

    let cpu = profile_of(converted, ProfileKind::Cpu);
    assert_eq!(
        sample_types(&cpu.profile),
        [("cpu".to_owned(), "nanoseconds".to_owned())]
    );
    let want = oracle.cpu(cpu_weight_nanos);
    let got = actual(&cpu.profile);
    let lacking = missing_events(&want, &got, cpu_weight_nanos)
        .unwrap_or_else(|difference| panic!("CPU: {difference}"));
    missing.insert(ProfileKind::Cpu, lacking);

    for spec in TWO_VALUE_KINDS {
        let profile = profile_of(converted, spec.kind);
        let want_types: Vec<(String, String)> = spec
            .sample_types
            .iter()
            .map(|(t, u)| ((*t).to_owned(), (*u).to_owned()))
            .collect();
        assert_eq!(
            sample_types(&profile.profile),
            want_types,
            "{:?}",
            spec.kind
        );
        let want = oracle.of(spec.kind);
        let got = actual(&profile.profile);
        let lacking = missing_events(want, &got, 1).unwrap_or_else(|difference| {
            panic!("{:?} from {}: {difference}", spec.kind, spec.event)
        });
        missing.insert(spec.kind, lacking);
    }
    let total: i64 = missing.values().sum();
    assert!(
        total <= allowed_missing,
        "{total} events of jfr print are not in the profiles ({missing:?}); at most \
         {allowed_missing} may refer to another chunk's stack trace"
    );
    missing
}

/// The totals of each profile are the event counts `jfr summary` gives.
fn assert_totals_match_summary(
    converted: &Converted,
    recording: &Recording,
    oracle: &Oracle,
    missing: &BTreeMap<ProfileKind, i64>,
) {
    let missing_of = |kind| missing.get(&kind).copied().unwrap_or(0);
    let summary = &recording.summary.counts;
    let total = |kind| -> i64 {
        profile_of(converted, kind)
            .profile
            .sample
            .iter()
            .filter(|s| !s.location_id.is_empty())
            .map(|s| s.value[0])
            .sum()
    };
    let samples = summary["jdk.ExecutionSample"] as i64;
    assert!(samples > 0);
    assert_eq!(
        total(ProfileKind::Cpu),
        (samples
            - oracle.sleeping_samples
            - oracle.stackless_of("jdk.ExecutionSample")
            - missing_of(ProfileKind::Cpu))
            * oracle.cpu_period_nanos,
        "CPU time against jfr summary's jdk.ExecutionSample"
    );
    for spec in TWO_VALUE_KINDS {
        assert_eq!(
            total(spec.kind),
            summary[spec.event] as i64 - oracle.stackless_of(spec.event) - missing_of(spec.kind),
            "{:?}: samples counted against jfr summary's {}",
            spec.kind,
            spec.event
        );
    }
}

/// A recording and what the oracle says of it.
struct Recorded {
    recording: Recording,
    oracle: Oracle,
}

impl Recorded {
    fn make(spec: &RecordSpec) -> Option<Self> {
        let (jdk, recording) = jdk::record(spec, PURPOSE)?;
        let oracle = Oracle::read(&jdk, &recording, spec);
        Some(Self { recording, oracle })
    }

    fn convert(&self, bytes: &[u8], options: &ConvertOptions<'_>) -> Converted {
        let converted = convert(bytes, options)
            .unwrap_or_else(|e| panic!("{}: {e}", self.recording.path.display()));
        let skipped = converted.skipped;
        assert!(
            skipped.method_not_found == 0 && skipped.class_not_found == 0,
            "every method and class of a JDK recording resolves: {skipped:?}"
        );
        converted
    }

    /// Events that may refer to another chunk's stack trace: two a chunk
    /// boundary.
    fn allowed_missing(&self) -> i64 {
        2 * (self.recording.summary.chunks as i64 - 1)
    }
}

/// The standard recording, read by `jfr print` once for the tests that
/// share it.
fn standard() -> Option<&'static Recorded> {
    static ONCE: OnceLock<Option<Recorded>> = OnceLock::new();
    ONCE.get_or_init(|| Recorded::make(&RecordSpec::standard()))
        .as_ref()
}

fn check(recorded: &Recorded) {
    let Recorded { recording, oracle } = recorded;
    let converted = recorded.convert(&recording.bytes(), &ConvertOptions::default());
    let missing = assert_matches(
        &converted,
        oracle,
        oracle.cpu_period_nanos,
        recorded.allowed_missing(),
    );
    assert_totals_match_summary(&converted, recording, oracle, &missing);
    // Every event skipped is accounted for: jfr print shows it without a
    // stack trace, with an empty one the profiles hold no sample for, or
    // it is one of those found missing above.
    let locationless: i64 = converted
        .profiles
        .iter()
        .flat_map(|p| &p.profile.sample)
        .filter(|s| s.location_id.is_empty())
        .map(|s| {
            if s.value.len() == 1 {
                s.value[0] / oracle.cpu_period_nanos
            } else {
                s.value[0]
            }
        })
        .sum();
    let stackless: i64 = oracle.stackless.values().sum();
    let frameless: i64 = oracle.frameless.values().sum();
    assert_eq!(
        converted.skipped.stack_trace_not_found as i64,
        stackless + (frameless - locationless) + missing.values().sum::<i64>(),
        "events skipped: {:?} without a stack trace, {:?} with an empty one \
         ({locationless} of them in the profiles), {missing:?} missing",
        oracle.stackless,
        oracle.frameless
    );
}

#[test]
fn one_chunk_recording_holds_what_jfr_prints() {
    if let Some(recorded) = standard() {
        check(recorded);
    }
}

#[test]
fn multi_chunk_recording_holds_what_jfr_prints() {
    if let Some(recorded) = Recorded::make(&RecordSpec::multi_chunk()) {
        check(&recorded);
    }
}

#[test]
fn gzipped_recording_converts_as_the_plain_one() {
    let Some(recorded) = standard() else {
        return;
    };
    let bytes = recorded.recording.bytes();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&bytes).unwrap();
    let gzipped = encoder.finish().unwrap();
    let converted = recorded.convert(&gzipped, &ConvertOptions::default());
    let oracle = &recorded.oracle;
    assert_matches(
        &converted,
        oracle,
        oracle.cpu_period_nanos,
        recorded.allowed_missing(),
    );
    let plain = recorded.convert(&bytes, &ConvertOptions::default());
    for (zipped, plain) in converted.profiles.iter().zip(&plain.profiles) {
        assert_eq!(zipped.profile, plain.profile, "{:?}", plain.kind);
    }
}

#[test]
fn sample_rate_sets_the_weight_of_a_cpu_sample() {
    let Some(recorded) = standard() else {
        return;
    };
    let options = ConvertOptions {
        sample_rate: Some(250),
        ..ConvertOptions::default()
    };
    assert_ne!(recorded.oracle.cpu_period_nanos, 4_000_000);
    let converted = recorded.convert(&recorded.recording.bytes(), &options);
    assert_matches(
        &converted,
        &recorded.oracle,
        4_000_000,
        recorded.allowed_missing(),
    );
}

/// Pyroscope's `from` and `until` are the profiles' time and duration,
/// and its `sampleRate` weighs the CPU samples; what they hold is as
/// without them.
#[test]
fn a_given_time_range_and_sample_rate() {
    let Some(recorded) = standard() else {
        return;
    };
    let options = ConvertOptions {
        time_range_nanos: Some((1_000, 11_000)),
        sample_rate: Some(40),
        ..ConvertOptions::default()
    };
    assert_ne!(recorded.oracle.cpu_period_nanos, 25_000_000);
    let converted = recorded.convert(&recorded.recording.bytes(), &options);
    assert_matches(
        &converted,
        &recorded.oracle,
        25_000_000,
        recorded.allowed_missing(),
    );
    for JfrProfile { kind, profile, .. } in &converted.profiles {
        assert_eq!(
            (profile.time_nanos, profile.duration_nanos),
            (1_000, 10_000),
            "{kind:?}"
        );
    }
}

#[test]
fn pyroscope_class_names() {
    let cases = [
        ("java/lang/Thread", "java/lang/Thread"),
        (
            "org/example/OrderService$$Lambda$669.0x0000000800fd7318",
            "org/example/OrderService$$Lambda_",
        ),
        ("Fib$$Lambda.0x00007ffa600c4da0", "Fib$$Lambda_"),
        ("Foo$$Lambda$14/0x0000000800c01234", "Foo$$Lambda_"),
        ("Foo$$Lambda$14", "Foo$$Lambda$14"),
        ("Foo$$Lambda14", "Foo$$Lambda_"),
        (
            "jdk/internal/reflect/GeneratedMethodAccessor31",
            "jdk/internal/reflect/GeneratedMethodAccessor_",
        ),
        (
            "jdk/internal/reflect/GeneratedMethodAccessorX",
            "jdk/internal/reflect/GeneratedMethodAccessorX",
        ),
        // As JDK 17 records a lambda: not a form Pyroscope merges.
        (
            "ProfbridgeWorkload$$Lambda$93+0x00007fbb50007a08/1582071873",
            "ProfbridgeWorkload$$Lambda$93+0x00007fbb50007a08/1582071873",
        ),
    ];
    for (recorded, named) in cases {
        assert_eq!(pyroscope_class_name(recorded), named, "{recorded}");
    }
}
