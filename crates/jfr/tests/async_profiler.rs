//! Recordings shaped as async-profiler writes them (the profiler the
//! Pyroscope Java agent embeds; `profbridge_testkit::jfr_writer::
//! async_profiler`): the JDK's own reader reads what was written, and the
//! conversion holds the samples written, with the frame kinds and names
//! async-profiler's frame types and libraries give.

use std::collections::BTreeMap;

use profbridge_jfr::{convert, ConvertOptions, FrameKind, ProfileKind};
use profbridge_pprof::{validate, Profile};
use profbridge_testkit::jdk::{self, Jdk};
use profbridge_testkit::jfr_writer::async_profiler::{AsyncProfilerRecording, Frame, FrameType};
use profbridge_testkit::TempDir;

/// The frame kind async-profiler's frame type means.
fn kind_of(frame: &Frame) -> FrameKind {
    match frame.frame_type() {
        FrameType::Native | FrameType::Cpp => FrameKind::Native,
        FrameType::Kernel => FrameKind::Kernel,
        FrameType::Interpreted
        | FrameType::JitCompiled
        | FrameType::Inlined
        | FrameType::C1Compiled => FrameKind::Jvm,
    }
}

/// A thread's name as a sample's `thread_name`: its Java name, else its
/// OS name (the same text here).
fn thread_name(recording: &AsyncProfilerRecording, tid: i64) -> String {
    recording
        .threads
        .iter()
        .find(|t| t.tid == tid)
        .map(|t| t.name.clone())
        .unwrap()
}

/// (thread, frames as (name, line, kind) leaf first).
type Key = (String, Vec<(String, i64, String)>);

fn written_key(recording: &AsyncProfilerRecording, tid: i64, stack: &[Frame]) -> Key {
    let frames = stack
        .iter()
        .map(|f| {
            (
                format!("{}.{}", f.class_name(), f.method_name()),
                i64::from(f.line()),
                format!("{:?}", kind_of(f)),
            )
        })
        .collect();
    (thread_name(recording, tid), frames)
}

fn converted_samples(profile: &Profile, kinds: &[FrameKind]) -> BTreeMap<Key, i64> {
    let text = |i: i64| profile.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for sample in &profile.sample {
        let frames = sample
            .location_id
            .iter()
            .map(|id| {
                let at = profile.location.iter().position(|l| l.id == *id).unwrap();
                let line = &profile.location[at].line[0];
                let function = profile
                    .function
                    .iter()
                    .find(|f| f.id == line.function_id)
                    .unwrap();
                (text(function.name), line.line, format!("{:?}", kinds[at]))
            })
            .collect();
        let labels: Vec<(String, String)> = sample
            .label
            .iter()
            .map(|l| (text(l.key), text(l.str)))
            .collect();
        assert_eq!(labels.len(), 1, "only thread_name without a snapshot");
        assert_eq!(labels[0].0, "thread_name");
        *out.entry((labels[0].1.clone(), frames)).or_default() += sample.value[0];
    }
    out
}

#[test]
fn an_agent_recording_converts_to_the_samples_written() {
    let recording = AsyncProfilerRecording::agent_example();
    let bytes = recording.build();
    let converted = convert(&bytes, &ConvertOptions::default()).unwrap();
    assert_eq!(converted.profiler_event.as_deref(), Some("itimer"));
    let kinds: Vec<ProfileKind> = converted.profiles.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, [ProfileKind::Cpu]);
    let cpu = &converted.profiles[0];
    validate(&cpu.profile).unwrap();
    assert_eq!(converted.skipped, Default::default());

    // Each sample weighs the recorded interval (no sample rate given).
    let mut want: BTreeMap<Key, i64> = BTreeMap::new();
    for sample in &recording.execution_samples {
        *want
            .entry(written_key(&recording, sample.tid, &sample.stack))
            .or_default() += recording.interval_nanos;
    }
    let got = converted_samples(&cpu.profile, &cpu.frame_kinds);
    assert_eq!(got, want);
    // Not vacuous: every kind of frame is there.
    let seen: Vec<FrameKind> = cpu.frame_kinds.clone();
    for kind in [FrameKind::Jvm, FrameKind::Native, FrameKind::Kernel] {
        assert!(seen.contains(&kind), "no {kind:?} frame");
    }
}

/// An execution sample's Java thread name and frames (class, method,
/// line, frame type), leaf first.
type PrintedSample = (Option<String>, Vec<(String, String, i64, String)>);

/// The JDK's `jfr print` reads the written recording as holding the
/// events written: the writer's shape is one a JFR reader other than ours
/// takes.
#[test]
fn the_jdk_reads_an_agent_recording_as_written() {
    let Some(jdk) = Jdk::find("reading an async-profiler-shaped recording with jfr print") else {
        return;
    };
    let recording = AsyncProfilerRecording::agent_example();
    let dir = TempDir::new("async-profiler-jfr");
    let path = dir.path().join("agent.jfr");
    std::fs::write(&path, recording.build()).unwrap();
    let printed = jdk::jfr_print_json(&jdk, &path, &["jdk.ExecutionSample"], 64);
    assert_eq!(printed.len(), recording.execution_samples.len());
    let mut want: Vec<PrintedSample> = recording
        .execution_samples
        .iter()
        .map(|sample| {
            let thread = recording
                .threads
                .iter()
                .find(|t| t.tid == sample.tid)
                .unwrap();
            let frames = sample
                .stack
                .iter()
                .map(|f| {
                    (
                        f.class_name().to_owned(),
                        f.method_name().to_owned(),
                        i64::from(f.line()),
                        f.frame_type().description().to_owned(),
                    )
                })
                .collect();
            (thread.java_thread_id.map(|_| thread.name.clone()), frames)
        })
        .collect();
    let mut got: Vec<PrintedSample> = printed
        .iter()
        .map(|event| {
            assert_eq!(event.state.as_deref(), Some("STATE_DEFAULT"));
            let frames = event
                .frames
                .iter()
                .map(|f| {
                    (
                        f.class.clone(),
                        f.method.clone(),
                        f.line,
                        f.frame_type.clone(),
                    )
                })
                .collect();
            (event.thread.clone(), frames)
        })
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}
