//! Precise cases on recordings written by `profbridge_testkit::jfr_writer`.

use std::collections::HashMap;

use profbridge_jfr::{
    convert, ConvertOptions, FrameKind, JfrError, LabelsContext, LabelsSnapshot, Limits, Problem,
    ProfileKind,
};
use profbridge_pprof::{validate, Profile};

use profbridge_testkit::jfr_writer::{
    s, Recording, Val, ACTIVE_SETTING, CLASS, EXECUTION_SAMPLE, STACK_TRACE, SYMBOL,
};

fn convert_default(bytes: &[u8]) -> Result<profbridge_jfr::Converted, JfrError> {
    convert(bytes, &ConvertOptions::default())
}

fn problem(result: Result<profbridge_jfr::Converted, JfrError>) -> Problem {
    match result {
        Err(JfrError::Malformed { problem, .. }) => problem,
        other => panic!("expected a malformed recording, got {other:?}"),
    }
}

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[index as usize]
}

/// Each sample's labels as (key, value) text.
fn labels(profile: &Profile) -> Vec<Vec<(String, String)>> {
    profile
        .sample
        .iter()
        .map(|sample| {
            sample
                .label
                .iter()
                .map(|l| {
                    (
                        text(profile, l.key).to_owned(),
                        text(profile, l.str).to_owned(),
                    )
                })
                .collect()
        })
        .collect()
}

#[test]
fn one_cpu_sample_becomes_one_profile_as_pyroscope_names_it() {
    for compressed in [true, false] {
        let recording = Recording {
            compressed,
            ..Recording::standard()
        };
        let converted = convert_default(&recording.build()).unwrap();
        assert_eq!(converted.profiles.len(), 1, "compressed: {compressed}");
        let cpu = &converted.profiles[0];
        assert_eq!(cpu.kind, ProfileKind::Cpu);
        let profile = &cpu.profile;
        validate(profile).unwrap();
        assert_eq!(text(profile, profile.sample_type[0].r#type), "cpu");
        assert_eq!(text(profile, profile.sample_type[0].unit), "nanoseconds");
        assert_eq!(profile.sample.len(), 1);
        assert_eq!(profile.sample[0].value, vec![10_000_000]);
        assert_eq!(
            text(profile, profile.function[0].name),
            "com/example/Main.work"
        );
        assert_eq!(profile.location[0].line[0].line, 42);
        assert_eq!(profile.time_nanos, 1_700_000_000_000_000_000);
        assert_eq!(profile.duration_nanos, 2_000_000_000);
        assert_eq!(cpu.frame_kinds, vec![FrameKind::Jvm]);
        assert_eq!(
            labels(profile),
            vec![vec![("thread_name".to_owned(), "worker".to_owned())]]
        );
    }
}

#[test]
fn samples_of_one_stack_and_thread_merge_and_sleeping_ones_are_not_cpu() {
    let mut recording = Recording::standard();
    recording
        .events
        .push((EXECUTION_SAMPLE, Recording::sample(1, 1, 0)));
    recording
        .events
        .push((EXECUTION_SAMPLE, Recording::sample(1, 2, 0)));
    let options = ConvertOptions {
        sample_rate: Some(100),
        ..ConvertOptions::default()
    };
    let converted = convert(&recording.build(), &options).unwrap();
    let profile = &converted.profiles[0].profile;
    assert_eq!(profile.sample.len(), 1);
    assert_eq!(profile.sample[0].value, vec![20_000_000]);
}

#[test]
fn the_recorded_interval_weighs_cpu_samples_unless_a_sample_rate_is_given() {
    let mut recording = Recording::standard();
    let setting = |name: &str, value: &str| {
        vec![Val::Long(0), Val::Long(EXECUTION_SAMPLE), s(name), s(value)]
    };
    recording
        .events
        .insert(0, (ACTIVE_SETTING, setting("period", "20 ms")));
    let bytes = recording.build();
    let recorded = convert_default(&bytes).unwrap();
    assert_eq!(
        recorded.profiles[0].profile.sample[0].value,
        vec![20_000_000]
    );
    let options = ConvertOptions {
        sample_rate: Some(1000),
        ..ConvertOptions::default()
    };
    let given = convert(&bytes, &options).unwrap();
    assert_eq!(given.profiles[0].profile.sample[0].value, vec![1_000_000]);

    let mut async_profiler = Recording::standard();
    async_profiler
        .events
        .insert(0, (ACTIVE_SETTING, setting("interval", "5000000")));
    async_profiler
        .events
        .insert(0, (ACTIVE_SETTING, setting("event", "wall")));
    let converted = convert_default(&async_profiler.build()).unwrap();
    assert_eq!(converted.profiler_event.as_deref(), Some("wall"));
    let kinds: Vec<ProfileKind> = converted.profiles.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProfileKind::Cpu, ProfileKind::Wall]);
    assert_eq!(
        converted.profiles[1].profile.sample[0].value,
        vec![5_000_000]
    );
}

#[test]
fn context_labels_span_and_thread_name_label_samples() {
    let mut recording = Recording::standard();
    recording.events[0].1[4] = Val::Long(7);
    recording.events[0].1[5] = Val::Long(0xef);
    recording.events[0].1[6] = Val::Long(3);
    let snapshot = LabelsSnapshot {
        contexts: HashMap::from([(
            7,
            LabelsContext {
                labels: HashMap::from([(1, 2), (4, 5)]),
            },
        )]),
        strings: HashMap::from([
            (1, "endpoint".to_owned()),
            (2, "/api".to_owned()),
            (3, "GET /api".to_owned()),
            (4, "customer".to_owned()),
            (5, "acme".to_owned()),
        ]),
    };
    let options = ConvertOptions {
        labels: Some(&snapshot),
        ..ConvertOptions::default()
    };
    let converted = convert(&recording.build(), &options).unwrap();
    let profile = &converted.profiles[0].profile;
    validate(profile).unwrap();
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    assert_eq!(
        labels(profile),
        vec![pairs(&[
            ("customer", "acme"),
            ("endpoint", "/api"),
            ("profile_id", "00000000000000ef"),
            ("span_name", "GET /api"),
            ("thread_name", "worker"),
        ])]
    );
}

#[test]
fn unresolved_stacks_and_classes_are_skipped_and_counted() {
    let mut recording = Recording::standard();
    recording
        .events
        .push((EXECUTION_SAMPLE, Recording::sample(99, 1, 0)));
    // A second stack whose frame's method has a class not in the pool.
    let pool = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == STACK_TRACE)
        .unwrap();
    let frame = vec![Val::Long(2), Val::Int(1), Val::Int(0), Val::Long(1)];
    pool.1
        .push((2, vec![Val::Bool(false), Val::Objects(vec![frame])]));
    let methods = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == profbridge_testkit::jfr_writer::METHOD)
        .unwrap();
    methods
        .1
        .push((2, vec![Val::Long(77), Val::Long(2), Val::Long(3)]));
    recording
        .events
        .push((EXECUTION_SAMPLE, Recording::sample(2, 1, 0)));
    let converted = convert_default(&recording.build()).unwrap();
    assert_eq!(converted.skipped.stack_trace_not_found, 1);
    assert_eq!(converted.skipped.class_not_found, 1);
    let profile = &converted.profiles[0].profile;
    validate(profile).unwrap();
    assert_eq!(profile.sample.len(), 2);
    assert!(profile.sample[1].location_id.is_empty());
}

#[test]
fn generated_class_names_are_merged() {
    let mut recording = Recording::standard();
    let symbols = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == SYMBOL)
        .unwrap();
    symbols.1[0].1 = vec![s("com/example/Main$$Lambda$14.0x0000000800c03000")];
    let converted = convert_default(&recording.build()).unwrap();
    let profile = &converted.profiles[0].profile;
    assert_eq!(
        text(profile, profile.function[0].name),
        "com/example/Main$$Lambda_.work"
    );
}

#[test]
fn a_pool_entry_that_refers_to_itself_is_read_and_not_followed() {
    let mut recording = Recording::standard();
    recording
        .class_mut(CLASS)
        .fields
        .push(profbridge_testkit::jfr_writer::FieldSpec {
            name: "outer".to_owned(),
            class: CLASS,
            constant_pool: true,
            array: false,
        });
    let classes = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == CLASS)
        .unwrap();
    classes.1[0].1.push(Val::Long(1));
    let converted = convert_default(&recording.build()).unwrap();
    assert_eq!(converted.profiles[0].profile.sample.len(), 1);
}

#[test]
fn a_type_nested_in_itself_stops_at_the_depth_limit() {
    let mut recording = Recording::standard();
    recording
        .class_mut(CLASS)
        .fields
        .push(profbridge_testkit::jfr_writer::FieldSpec {
            name: "inner".to_owned(),
            class: CLASS,
            constant_pool: false,
            array: false,
        });
    let err = problem(convert_default(&recording.build()));
    assert!(
        matches!(err, Problem::TooDeep(_) | Problem::UnexpectedEnd),
        "{err:?}"
    );
}

#[test]
fn a_looping_or_escaping_pool_chain_is_refused() {
    let looping = Recording {
        looping_pool_chain: true,
        ..Recording::standard()
    };
    assert!(matches!(
        problem(convert_default(&looping.build())),
        Problem::PoolChainLoop(_)
    ));
    let escaping = Recording {
        pool_delta: Some(1 << 40),
        ..Recording::standard()
    };
    assert!(matches!(
        problem(convert_default(&escaping.build())),
        Problem::OffsetOutOfChunk { .. }
    ));
}

#[test]
fn headers_past_the_input_or_of_another_format_are_refused() {
    let (bytes, layout) = Recording::standard().build_with_layout();
    let mut big = bytes.clone();
    big[8..16].copy_from_slice(&(1u64 << 40).to_be_bytes());
    assert!(matches!(
        problem(convert_default(&big)),
        Problem::ChunkSizePastInput { .. }
    ));
    let mut negative = bytes.clone();
    negative[8..16].copy_from_slice(&(-5i64).to_be_bytes());
    assert!(matches!(
        problem(convert_default(&negative)),
        Problem::ChunkSizePastInput { .. }
    ));
    let mut version = bytes.clone();
    version[4..6].copy_from_slice(&1u16.to_be_bytes());
    assert!(matches!(
        problem(convert_default(&version)),
        Problem::UnsupportedVersion { .. }
    ));
    let mut metadata = bytes.clone();
    metadata[24..32].copy_from_slice(&(layout.size as u64).to_be_bytes());
    assert!(matches!(
        problem(convert_default(&metadata)),
        Problem::OffsetOutOfChunk { .. }
    ));
    let mut pool_at_metadata = bytes.clone();
    pool_at_metadata[16..24].copy_from_slice(&(layout.metadata as u64).to_be_bytes());
    assert!(matches!(
        problem(convert_default(&pool_at_metadata)),
        Problem::WrongEventType {
            expected: 1,
            found: 0
        }
    ));
    let mut metadata_at_pool = bytes.clone();
    metadata_at_pool[24..32].copy_from_slice(&(layout.constant_pool as u64).to_be_bytes());
    assert!(matches!(
        problem(convert_default(&metadata_at_pool)),
        Problem::WrongEventType {
            expected: 0,
            found: 1
        }
    ));
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(matches!(convert_default(&magic), Err(JfrError::NotJfr)));
    let mut second_magic = bytes.clone();
    second_magic.extend(&bytes);
    second_magic[layout.size + 1] = b'X';
    match convert_default(&second_magic) {
        Err(JfrError::Malformed {
            chunk: 1,
            offset,
            problem: Problem::BadMagic,
            ..
        }) => {
            assert_eq!(offset, layout.size as u64);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn concatenated_chunks_add_up_and_the_chunk_limit_holds() {
    let bytes = Recording::standard().build();
    let three = [bytes.as_slice(), &bytes, &bytes].concat();
    let converted = convert_default(&three).unwrap();
    assert_eq!(
        converted.profiles[0].profile.sample[0].value,
        vec![30_000_000]
    );
    let options = ConvertOptions {
        limits: Limits {
            max_chunks: 2,
            ..Limits::default()
        },
        ..ConvertOptions::default()
    };
    assert!(matches!(
        convert(&three, &options),
        Err(JfrError::TooManyChunks { limit: 2 })
    ));
}

#[test]
fn limits_on_pools_and_metadata_hold() {
    let bytes = Recording::standard().build();
    let few_entries = ConvertOptions {
        limits: Limits {
            max_pool_entries: 2,
            ..Limits::default()
        },
        ..ConvertOptions::default()
    };
    assert!(matches!(
        problem(convert(&bytes, &few_entries)),
        Problem::LimitExceeded { .. }
    ));
    let few_classes = ConvertOptions {
        limits: Limits {
            max_metadata_classes: 3,
            ..Limits::default()
        },
        ..ConvertOptions::default()
    };
    assert!(matches!(
        problem(convert(&bytes, &few_classes)),
        Problem::LimitExceeded { .. }
    ));
}

#[test]
fn a_huge_count_is_refused_without_allocating_for_it() {
    let mut recording = Recording::standard();
    // A stack trace whose frame array claims i32::MAX frames.
    let pool = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == STACK_TRACE)
        .unwrap();
    pool.1[0].1[1] = Val::Int(i32::MAX);
    let err = problem(convert_default(&recording.build()));
    assert!(matches!(err, Problem::CountPastEnd { .. }), "{err:?}");
    // An event type the metadata does not describe is skipped by its size.
    let mut unknown = Recording::standard();
    unknown.events.push((12345, vec![Val::Long(1)]));
    assert!(convert_default(&unknown.build()).is_ok());
}

#[test]
fn frame_kinds_tell_async_profiler_native_frames_from_java_native_methods() {
    use profbridge_testkit::jfr_writer::{FRAME_TYPE, METHOD};
    let mut recording = Recording::standard();
    let symbols = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == SYMBOL)
        .unwrap();
    symbols.1.extend([
        (4, vec![s("libc.so.6")]),
        (5, vec![s("__write")]),
        (6, vec![s("()L;")]),
        (7, vec![s("")]),
        (8, vec![s("java/lang/Thread")]),
        (9, vec![s("sleep")]),
        (10, vec![s("(J)V")]),
    ]);
    let classes = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == CLASS)
        .unwrap();
    classes.1.extend([
        (2, vec![Val::Long(4)]),
        (3, vec![Val::Long(7)]),
        (4, vec![Val::Long(8)]),
    ]);
    let methods = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == METHOD)
        .unwrap();
    methods.1.extend([
        // libc.so.6.__write, async-profiler's way.
        (2, vec![Val::Long(2), Val::Long(5), Val::Long(6)]),
        // A function of an unnamed library.
        (3, vec![Val::Long(3), Val::Long(5), Val::Long(6)]),
        // java/lang/Thread.sleep, a native Java method.
        (4, vec![Val::Long(4), Val::Long(9), Val::Long(10)]),
    ]);
    let frame_types = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == FRAME_TYPE)
        .unwrap();
    frame_types.1.extend([
        (2, vec![s("Native")]),
        (3, vec![s("C++")]),
        (4, vec![s("Kernel")]),
        (5, vec![s("Inlined")]),
    ]);
    let frame = |method: i64, line: i32, frame_type: i64| {
        vec![
            Val::Long(method),
            Val::Int(line),
            Val::Int(0),
            Val::Long(frame_type),
        ]
    };
    let stacks = recording
        .pools
        .iter_mut()
        .find(|(t, _)| *t == STACK_TRACE)
        .unwrap();
    stacks.1[0].1[1] = Val::Objects(vec![
        frame(2, 0, 4),
        frame(2, 0, 2),
        frame(3, 0, 3),
        frame(4, -1, 2),
        frame(1, 42, 5),
    ]);
    let converted = convert_default(&recording.build()).unwrap();
    let cpu = &converted.profiles[0];
    validate(&cpu.profile).unwrap();
    assert_eq!(
        cpu.frame_kinds,
        vec![
            FrameKind::Kernel,
            FrameKind::Native,
            FrameKind::Native,
            FrameKind::Jvm,
            FrameKind::Jvm
        ]
    );
    let profile = &cpu.profile;
    let names: Vec<(&str, i64)> = profile.sample[0]
        .location_id
        .iter()
        .map(|id| {
            let line = &profile.location[*id as usize - 1].line[0];
            (
                text(
                    profile,
                    profile.function[line.function_id as usize - 1].name,
                ),
                line.line,
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("libc.so.6.__write", 0),
            ("libc.so.6.__write", 0),
            (".__write", 0),
            ("java/lang/Thread.sleep", 4_294_967_295),
            ("com/example/Main.work", 42),
        ]
    );
}
