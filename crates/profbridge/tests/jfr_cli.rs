//! `convert`, `inspect` and `send`'s reader on JFR recordings the JDK made
//! of a workload of ours: the pprof files are read back by
//! `go tool pprof -raw`, and their totals are those of the events the
//! JDK's own `jfr print` lists.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use profbridge_pprof::{parse_any, DecodeOptions, Profile};
use profbridge_testkit::jdk::{jfr_print_json, record, Jdk, RecordSpec};
use profbridge_testkit::pprof_oracle::OracleProfile;
use profbridge_testkit::{require_tool, TempDir};
use profbridge_translate::otlp::{any_value, ExportProfilesServiceRequest, ProfilesDictionary};
use profbridge_translate::{otlp_to_pprof, validate_request, ToPprofOptions};
use prost::Message;

const PURPOSE: &str = "the JFR convert and inspect tests";

pub(crate) fn profbridge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(args)
        .output()
        .expect("run profbridge")
}

pub(crate) fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The standard recording, copied to `dir` as `app.jfr`.
fn recording(dir: &Path) -> Option<(Jdk, PathBuf, i64)> {
    let spec = RecordSpec::standard();
    let (jdk, recording) = record(&spec, PURPOSE)?;
    let path = dir.join("app.jfr");
    std::fs::copy(&recording.path, &path).unwrap();
    Some((jdk, path, spec.cpu_period_nanos()))
}

/// `convert --out-dir`: the files written, by the part of their name
/// between `app.` and `.pb.gz`.
fn convert_to_dir(input: &Path, dir: &Path) -> BTreeMap<String, PathBuf> {
    succeeded(&profbridge(&[
        "convert",
        input.to_str().unwrap(),
        "--out-dir",
        dir.to_str().unwrap(),
    ]));
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let kind = name
                .strip_prefix("app.")
                .and_then(|rest| rest.strip_suffix(".pb.gz"))
                .unwrap_or_else(|| panic!("unexpected file {name}"))
                .to_owned();
            (kind, path)
        })
        .collect()
}

/// How many events of the listed ones have a frame of `class.method`.
fn events_in(events: &[&profbridge_testkit::jdk::JfrEvent], class: &str, method: &str) -> i64 {
    events
        .iter()
        .filter(|e| {
            e.frames
                .iter()
                .any(|f| f.class == class && f.method == method)
        })
        .count() as i64
}

#[test]
fn convert_writes_one_pprof_per_kind_with_the_jdks_totals() {
    let dir = TempDir::new("jfr-convert");
    let Some((jdk, input, period)) = recording(dir.path()) else {
        return;
    };
    if require_tool("go", &["version"], PURPOSE).is_none() {
        return;
    }
    let out = dir.path().join("out");
    let files = convert_to_dir(&input, &out);
    let kinds: BTreeSet<&str> = files.keys().map(String::as_str).collect();
    for expected in [
        "process_cpu",
        "alloc_in_new_tlab",
        "alloc_outside_tlab",
        "alloc_sample",
        "mutex",
        "block",
    ] {
        assert!(kinds.contains(expected), "no {expected} among {kinds:?}");
    }

    let events = jfr_print_json(
        &jdk,
        &input,
        &[
            "jdk.ExecutionSample",
            "jdk.ObjectAllocationSample",
            "jdk.JavaMonitorEnter",
        ],
        64,
    );
    // Events without a stack trace (a few, of threads the JVM runs itself)
    // are skipped, as Pyroscope skips them; those with an empty one are
    // samples without locations, which go tool pprof leaves out.
    let of_type = |name: &str| -> Vec<&profbridge_testkit::jdk::JfrEvent> {
        events
            .iter()
            .filter(|e| e.type_name == name && !e.frames.is_empty())
            .collect()
    };

    let cpu = OracleProfile::read(&files["process_cpu"]);
    assert_eq!(cpu.sample_types, ["cpu/nanoseconds"]);
    let executing: Vec<_> = of_type("jdk.ExecutionSample")
        .into_iter()
        .filter(|e| e.state.as_deref() != Some("STATE_SLEEPING"))
        .collect();
    assert!(
        executing.len() > 50,
        "{} execution samples",
        executing.len()
    );
    assert_eq!(cpu.total("cpu"), executing.len() as i64 * period);
    let by_function = cpu.values_by_function("cpu");
    for method in ["spinA", "spinB"] {
        let expected = events_in(&executing, "Burn", method) * period;
        assert!(expected > 0, "no samples in Burn.{method}");
        assert_eq!(
            by_function[&format!("Burn.{method}")],
            expected,
            "Burn.{method}"
        );
    }

    let samples = OracleProfile::read(&files["alloc_sample"]);
    assert_eq!(
        samples.sample_types,
        ["alloc_sample_objects/count", "alloc_sample_bytes/bytes"]
    );
    let allocations = of_type("jdk.ObjectAllocationSample");
    assert_eq!(
        samples.total("alloc_sample_objects"),
        allocations.len() as i64
    );
    assert_eq!(
        samples.total("alloc_sample_bytes"),
        allocations.iter().map(|e| e.weight.unwrap()).sum::<i64>()
    );

    let mutex = OracleProfile::read(&files["mutex"]);
    assert_eq!(
        mutex.sample_types,
        ["contentions/count", "delay/nanoseconds"]
    );
    let enters = of_type("jdk.JavaMonitorEnter");
    assert!(!enters.is_empty(), "no monitor enters recorded");
    assert_eq!(
        mutex.values_by_function("contentions")["Contend.hold"],
        events_in(&enters, "Contend", "hold")
    );
    let delay: i64 = enters.iter().map(|e| e.duration_nanos.unwrap()).sum();
    let ours = mutex.total("delay");
    // `jfr print` shows each duration to the nanosecond; ticks convert to
    // nanoseconds with at most one of rounding each.
    assert!(
        (ours - delay).abs() <= enters.len() as i64,
        "delay {ours} ns against the JDK's {delay} ns"
    );
}

#[test]
fn a_gzipped_recording_converts_to_the_same_files() {
    let dir = TempDir::new("jfr-gzip");
    let Some((_, input, _)) = recording(dir.path()) else {
        return;
    };
    let plain = convert_to_dir(&input, &dir.path().join("plain"));
    let gzipped_dir = dir.path().join("gz");
    std::fs::create_dir_all(&gzipped_dir).unwrap();
    let gzipped = gzipped_dir.join("app.jfr.gz");
    let bytes = std::fs::read(&input).unwrap();
    let options = profbridge_pprof::EncodeOptions {
        compression: profbridge_pprof::Compression::Gzip { level: 6 },
    };
    std::fs::write(&gzipped, profbridge_pprof::compress(bytes, &options)).unwrap();
    let from_gzip = convert_to_dir(&gzipped, &dir.path().join("from-gz"));
    assert_eq!(
        plain.keys().collect::<Vec<_>>(),
        from_gzip.keys().collect::<Vec<_>>()
    );
    for (kind, path) in &plain {
        assert_eq!(
            std::fs::read(path).unwrap(),
            std::fs::read(&from_gzip[kind]).unwrap(),
            "{kind}"
        );
    }
}

#[test]
fn inspect_shows_each_profile_of_a_recording() {
    let dir = TempDir::new("jfr-inspect");
    let Some((_, input, _)) = recording(dir.path()) else {
        return;
    };
    let files = convert_to_dir(&input, &dir.path().join("out"));
    let output = profbridge(&["inspect", input.to_str().unwrap(), "--format", "json"]);
    succeeded(&output);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let reports = json.as_array().expect("several profiles, an array");
    let shown: BTreeSet<&str> = reports
        .iter()
        .map(|report| {
            assert_eq!(report["format"], "JFR");
            report["jfr"]["profile"].as_str().unwrap()
        })
        .collect();
    assert_eq!(shown, files.keys().map(String::as_str).collect());

    let text = profbridge(&["inspect", input.to_str().unwrap()]);
    succeeded(&text);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("== JFR process_cpu (Pyroscope's process_cpu) =="),
        "{text}"
    );
    assert!(text.contains("Burn.spinA"), "{text}");
}

/// The OTLP request of a recording: every profile under one resource,
/// the recording as the first one's payload, and each Java frame typed
/// `jvm`; back to pprof, the same profiles as `--to pprof` writes.
#[test]
fn to_otlp_is_one_request_that_converts_back_to_the_same_profiles() {
    let dir = TempDir::new("jfr-otlp");
    let Some((_, input, _)) = recording(dir.path()) else {
        return;
    };
    let files = convert_to_dir(&input, &dir.path().join("out"));
    let otlp = dir.path().join("app.otlp");
    succeeded(&profbridge(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "otlp",
        "--original-payload",
        "--resource-attr",
        "service.name=java-app",
        "-o",
        otlp.to_str().unwrap(),
    ]));
    let request = ExportProfilesServiceRequest::decode(&*std::fs::read(&otlp).unwrap()).unwrap();
    let validated = validate_request(&request).unwrap();
    assert!(validated.invalid.is_empty(), "{:?}", validated.invalid);
    // A resource per Pyroscope metric (the three allocation profiles are
    // all `memory`).
    let dictionary = request.dictionary.as_ref().unwrap();
    let mut metrics = BTreeSet::new();
    for resource in &request.resource_profiles {
        let attributes = &resource.resource.as_ref().unwrap().attributes;
        let text = |key: &str| {
            attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
                match kv.value.as_ref()?.value.as_ref()? {
                    any_value::Value::StringValue(text) => Some(text.clone()),
                    _ => None,
                }
            })
        };
        assert_eq!(text("service.name").as_deref(), Some("java-app"));
        assert!(metrics.insert(text("pyroscope.profile_name").unwrap()));
    }
    assert_eq!(
        metrics,
        ["block", "memory", "mutex", "process_cpu"]
            .map(str::to_owned)
            .into()
    );
    // A scope per pprof profile, an OTLP profile per sample type.
    let scopes: Vec<_> = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .collect();
    assert_eq!(scopes.len(), files.len());
    let profiles: Vec<_> = scopes.iter().flat_map(|s| &s.profiles).collect();
    assert_eq!(profiles[0].original_payload_format, "jfr");
    assert_eq!(profiles[0].original_payload, std::fs::read(&input).unwrap());
    assert!(profiles[1..].iter().all(|p| p.original_payload.is_empty()));

    let frame_types: BTreeSet<String> = dictionary
        .location_table
        .iter()
        .filter(|location| !location.lines.is_empty())
        .map(|location| {
            string_attribute(
                dictionary,
                &location.attribute_indices,
                "profile.frame.type",
            )
        })
        .collect();
    assert_eq!(frame_types, BTreeSet::from(["jvm".to_owned()]));

    let back = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    assert_eq!(back.profiles.len(), files.len());
    let direct: Vec<Profile> = files
        .values()
        .map(|path| {
            parse_any(&std::fs::read(path).unwrap(), &DecodeOptions::default())
                .unwrap()
                .0
        })
        .collect();
    // A dictionary shared by the whole request orders the tables
    // differently, so profiles are compared by what their samples say.
    let direct: BTreeSet<String> = direct.iter().map(content).collect();
    let back: BTreeSet<String> = back.profiles.iter().map(|o| content(&o.profile)).collect();
    assert_eq!(back, direct);
}

/// The string value of the attribute `key` among `indices` of the
/// dictionary's attribute table; empty when there is none.
pub(crate) fn string_attribute(
    dictionary: &ProfilesDictionary,
    indices: &[i32],
    key: &str,
) -> String {
    indices
        .iter()
        .map(|&i| &dictionary.attribute_table[i as usize])
        .find(|a| dictionary.string_table[a.key_strindex as usize] == key)
        .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(text) => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// A stack of (function, line), leaf first, and sorted labels.
type SampleKey = (Vec<(String, i64)>, Vec<(String, String)>);

/// A profile's header fields and its samples by stack (function and line,
/// leaf first) and labels, except the `profile.frame.types` label that
/// carries frame types through pprof.
fn content(profile: &Profile) -> String {
    let text = |i: i64| profile.string_table[i as usize].clone();
    let value_type =
        |vt: &profbridge_pprof::ValueType| format!("{}/{}", text(vt.r#type), text(vt.unit));
    let functions: BTreeMap<u64, String> = profile
        .function
        .iter()
        .map(|f| (f.id, text(f.name)))
        .collect();
    let locations: BTreeMap<u64, Vec<(String, i64)>> = profile
        .location
        .iter()
        .map(|l| {
            let lines = l
                .line
                .iter()
                .map(|line| (functions[&line.function_id].clone(), line.line))
                .collect();
            (l.id, lines)
        })
        .collect();
    let mut samples: BTreeMap<SampleKey, Vec<i64>> = BTreeMap::new();
    for sample in &profile.sample {
        let stack = sample
            .location_id
            .iter()
            .flat_map(|id| locations[id].clone())
            .collect();
        let mut labels: Vec<(String, String)> = sample
            .label
            .iter()
            .map(|l| (text(l.key), text(l.str)))
            .filter(|(key, _)| key != "profile.frame.types")
            .collect();
        labels.sort();
        let sums = samples
            .entry((stack, labels))
            .or_insert_with(|| vec![0; sample.value.len()]);
        for (sum, value) in sums.iter_mut().zip(&sample.value) {
            *sum += value;
        }
    }
    format!(
        "{:?} {:?} {} {} {} {:?}",
        profile
            .sample_type
            .iter()
            .map(value_type)
            .collect::<Vec<_>>(),
        profile.period_type.as_ref().map(value_type),
        profile.period,
        profile.time_nanos,
        profile.duration_nanos,
        samples
    )
}

#[test]
fn a_truncated_recording_fails_with_its_name_and_writes_nothing() {
    let dir = TempDir::new("jfr-truncated");
    let Some((_, input, _)) = recording(dir.path()) else {
        return;
    };
    let bytes = std::fs::read(&input).unwrap();
    let cut = dir.path().join("cut.jfr");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.path().join("out");
    let output = profbridge(&[
        "convert",
        cut.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cut.jfr"), "{stderr}");
    assert!(stderr.contains("chunk"), "{stderr}");
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "a file was written for a recording that failed"
    );
}
