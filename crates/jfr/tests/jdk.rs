//! A recording made by the JDK, converted and compared with what the
//! JDK's own reader (`jfr print --json`) finds in it.

use std::collections::BTreeSet;

use profbridge_jfr::{convert, ConvertOptions, FrameKind, ProfileKind};
use profbridge_pprof::validate;
use serde_json::Value;

use crate::jdk_recording::{jdk_json, recording};

/// `PT0.025S`-style durations (what `jfr print --json` writes) in
/// nanoseconds.
fn duration_nanos(text: &str) -> i64 {
    let rest = text.strip_prefix("PT").expect("an ISO-8601 duration");
    let mut total = 0f64;
    let mut number = String::new();
    for c in rest.chars() {
        match c {
            'H' => total += number.parse::<f64>().unwrap() * 3600e9,
            'M' => total += number.parse::<f64>().unwrap() * 60e9,
            'S' => total += number.parse::<f64>().unwrap() * 1e9,
            _ => {
                number.push(c);
                continue;
            }
        }
        number.clear();
    }
    total.round() as i64
}

fn events(json: &Value) -> &Vec<Value> {
    json["recording"]["events"].as_array().expect("events")
}

#[test]
fn a_jdk_recording_converts_as_the_jdk_reads_it() {
    let Some(bytes) = recording() else { return };
    let converted = convert(bytes, &ConvertOptions::default()).unwrap();
    assert_eq!(converted.skipped.method_not_found, 0);
    assert_eq!(converted.skipped.class_not_found, 0);
    let kinds: Vec<ProfileKind> = converted.profiles.iter().map(|p| p.kind).collect();
    for kind in [
        ProfileKind::Cpu,
        ProfileKind::AllocSample,
        ProfileKind::Mutex,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
    for profile in &converted.profiles {
        validate(&profile.profile).unwrap();
        assert_eq!(profile.frame_kinds.len(), profile.profile.location.len());
        assert!(profile.frame_kinds.iter().all(|k| *k == FrameKind::Jvm));
    }
    let profile_of = |kind| {
        &converted
            .profiles
            .iter()
            .find(|p| p.kind == kind)
            .unwrap()
            .profile
    };

    // CPU: every sample not sleeping weighs the recorded period (the
    // `profile` settings sample every 10 ms).
    let samples = jdk_json("jdk.ExecutionSample");
    let running = events(&samples)
        .iter()
        .filter(|e| {
            e["values"]["state"] != "STATE_SLEEPING" && !e["values"]["stackTrace"].is_null()
        })
        .count() as i64;
    let cpu = profile_of(ProfileKind::Cpu);
    let total: i64 = cpu.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(
        total,
        running * 10_000_000 - converted.skipped.stack_trace_not_found as i64 * 10_000_000
    );
    let names: BTreeSet<&str> = cpu
        .function
        .iter()
        .map(|f| cpu.string_table[f.name as usize].as_str())
        .collect();
    assert!(names.contains("Busy.spin"), "{names:?}");
    let threads: BTreeSet<&str> = cpu
        .sample
        .iter()
        .flat_map(|s| &s.label)
        .filter(|l| cpu.string_table[l.key as usize] == "thread_name")
        .map(|l| cpu.string_table[l.str as usize].as_str())
        .collect();
    assert!(threads.contains("spinner"), "{threads:?}");

    // Monitor waits: counts and durations (ticks made nanoseconds).
    let enters = jdk_json("jdk.JavaMonitorEnter");
    let with_stacks: Vec<&Value> = events(&enters)
        .iter()
        .filter(|e| !e["values"]["stackTrace"].is_null())
        .collect();
    let mutex = profile_of(ProfileKind::Mutex);
    let count: i64 = mutex.sample.iter().map(|s| s.value[0]).sum();
    let delay: i64 = mutex.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(count, with_stacks.len() as i64);
    let expected: i64 = with_stacks
        .iter()
        .map(|e| duration_nanos(e["values"]["duration"].as_str().unwrap()))
        .sum();
    assert!((delay - expected).abs() <= count, "{delay} vs {expected}");

    // Allocation samples: count and weight.
    let allocations = jdk_json("jdk.ObjectAllocationSample");
    let with_stacks: Vec<&Value> = events(&allocations)
        .iter()
        .filter(|e| !e["values"]["stackTrace"].is_null())
        .collect();
    let alloc = profile_of(ProfileKind::AllocSample);
    let weight: i64 = alloc.sample.iter().map(|s| s.value[1]).sum();
    let expected: i64 = with_stacks
        .iter()
        .map(|e| e["values"]["weight"].as_i64().unwrap())
        .sum();
    assert_eq!(weight, expected);
}

#[test]
fn a_gzipped_recording_and_a_given_time_range() {
    let Some(bytes) = recording() else { return };
    let options = ConvertOptions {
        time_range_nanos: Some((1_000, 11_000)),
        sample_rate: Some(50),
        ..ConvertOptions::default()
    };
    let plain = convert(bytes, &options).unwrap();
    let cpu = &plain.profiles[0].profile;
    assert_eq!((cpu.time_nanos, cpu.duration_nanos), (1_000, 10_000));
    assert!(cpu.sample.iter().all(|s| s.value[0] % 20_000_000 == 0));
    let gzipped =
        profbridge_pprof::compress(bytes.to_vec(), &profbridge_pprof::EncodeOptions::default());
    let unzipped = convert(&gzipped, &options).unwrap();
    assert_eq!(unzipped.profiles.len(), plain.profiles.len());
    for (a, b) in unzipped.profiles.iter().zip(&plain.profiles) {
        assert_eq!(a.profile, b.profile);
    }
}
