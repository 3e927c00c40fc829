//! `profbridge convert`, end to end on the built binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use profbridge_pprof::{
    canonical_diff, parse_any, parse_folded, write_folded, DecodeOptions, Profile,
};
use profbridge_testkit::{
    async_profiler_otlp, async_profiler_recording, corpus_file, corpus_files,
    ebpf_profiler_request, pdata_encode, require_tool, TempDir,
};
use profbridge_translate::json::request_from_json;
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

use crate::support::raw_text;

fn profbridge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(args)
        .output()
        .expect("run profbridge")
}

fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run profbridge");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    output
}

fn parse(bytes: &[u8]) -> Profile {
    parse_any(bytes, &DecodeOptions::default()).unwrap().0
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Totals per root-first stack of function names, as folded text holds them.
fn folded_totals(profile: &Profile, sample_type: usize) -> BTreeMap<String, i64> {
    write_folded(profile, sample_type)
        .unwrap()
        .lines()
        .map(|line| {
            let (stack, value) = line.rsplit_once(' ').unwrap();
            (stack.to_owned(), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn every_corpus_file_converts_to_each_format_and_back() {
    let dir = TempDir::new("convert-corpus");
    for file in corpus_files() {
        let original = parse(&file.bytes);
        let input = file.path.to_str().unwrap();
        for (format, extension) in [
            ("pprof", "pb.gz"),
            ("otlp", "otlp.pb"),
            ("otlp-json", "json"),
        ] {
            let converted = dir.path().join(format!("{}.{extension}", file.name));
            let back = dir
                .path()
                .join(format!("{}.{format}.back.pb.gz", file.name));
            let output = profbridge(&[
                "convert",
                input,
                "--to",
                format,
                "-o",
                converted.to_str().unwrap(),
            ]);
            assert!(
                output.status.success(),
                "{} to {format}: {}",
                file.name,
                stderr(&output)
            );
            let output = profbridge(&[
                "convert",
                converted.to_str().unwrap(),
                "--to",
                "pprof",
                "-o",
                back.to_str().unwrap(),
            ]);
            assert!(
                output.status.success(),
                "{} back from {format}: {}",
                file.name,
                stderr(&output)
            );
            let round_tripped = parse(&std::fs::read(&back).unwrap());
            assert_eq!(
                canonical_diff(&original, &round_tripped).unwrap(),
                None,
                "{} via {format}",
                file.name
            );
        }
        if original.sample_type.is_empty() {
            continue;
        }
        // Folded holds one sample type and function names: compare totals per stack.
        let folded = dir.path().join(format!("{}.folded", file.name));
        let output = profbridge(&["convert", input, "-o", folded.to_str().unwrap()]);
        assert!(
            output.status.success(),
            "{} to folded: {}",
            file.name,
            stderr(&output)
        );
        let default = original.sample_type.len() - 1;
        let default = original
            .sample_type
            .iter()
            .position(|t| {
                t.r#type == original.default_sample_type && original.default_sample_type != 0
            })
            .unwrap_or(default);
        let from_folded =
            parse_folded(&std::fs::read(&folded).unwrap(), ("samples", "count")).unwrap();
        assert_eq!(
            folded_totals(&from_folded, 0),
            folded_totals(&original, default),
            "{} via folded",
            file.name
        );
    }
}

#[test]
fn stdin_to_stdout_pipelines_work() {
    let Some(file) = corpus_file("large.cpu") else {
        return;
    };
    let otlp = with_stdin(&["convert", "-", "--to", "otlp"], &file.bytes);
    assert!(otlp.status.success(), "{}", stderr(&otlp));
    ExportProfilesServiceRequest::decode(otlp.stdout.as_slice())
        .expect("stdout holds an OTLP request");
    let pprof = with_stdin(&["convert", "-", "--to", "pprof"], &otlp.stdout);
    assert!(pprof.status.success(), "{}", stderr(&pprof));
    assert_eq!(
        canonical_diff(&parse(&file.bytes), &parse(&pprof.stdout)).unwrap(),
        None
    );
}

#[test]
fn resource_attributes_scope_and_original_payload_reach_otlp() {
    let Some(file) = corpus_file("cppbench.heap") else {
        return;
    };
    let output = profbridge(&[
        "convert",
        file.path.to_str().unwrap(),
        "--to",
        "otlp-json",
        "--resource-attr",
        "service.name=checkout",
        "--resource-attr",
        "deployment.environment=prod",
        "--scope-name",
        "heap-agent",
        "--original-payload",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let request = request_from_json(&output.stdout).unwrap();
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    let keys: Vec<&str> = resource
        .attributes
        .iter()
        .map(|kv| kv.key.as_str())
        .collect();
    assert_eq!(keys, ["service.name", "deployment.environment"]);
    let scope = &request.resource_profiles[0].scope_profiles[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "heap-agent");
    assert_eq!(scope.profiles[0].original_payload, file.bytes);
}

#[test]
fn merge_puts_every_input_into_one_request_with_one_dictionary() {
    let (Some(a), Some(b)) = (corpus_file("java.cpu"), corpus_file("large.cpu")) else {
        return;
    };
    let dir = TempDir::new("convert-merge");
    let out = dir.path().join("both.otlp.pb");
    let output = profbridge(&[
        "convert",
        a.path.to_str().unwrap(),
        b.path.to_str().unwrap(),
        "--merge",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let request =
        ExportProfilesServiceRequest::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let scopes: usize = request
        .resource_profiles
        .iter()
        .map(|r| r.scope_profiles.len())
        .sum();
    assert_eq!(scopes, 2);
    let converted = profbridge_translate::otlp_to_pprof(&request, &Default::default()).unwrap();
    assert_eq!(converted.profiles.len(), 2);
    assert_eq!(
        canonical_diff(&parse(&a.bytes), &converted.profiles[0].profile).unwrap(),
        None
    );
    assert_eq!(
        canonical_diff(&parse(&b.bytes), &converted.profiles[1].profile).unwrap(),
        None
    );
}

#[test]
fn errors_name_the_file_and_the_reason_with_the_right_exit_code() {
    let dir = TempDir::new("convert-errors");
    let missing = dir.path().join("missing.pb.gz");
    let output = profbridge(&["convert", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!("{}: cannot read", missing.display())),
        "{}",
        stderr(&output)
    );

    let unknown = dir.path().join("notes.txt");
    std::fs::write(&unknown, "these are not profiles\n").unwrap();
    let output = profbridge(&["convert", unknown.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "{}: unrecognized format; tried",
            unknown.display()
        )),
        "{}",
        stderr(&output)
    );

    if let Some(file) = corpus_file("large.cpu") {
        let corrupt = dir.path().join("corrupt.pb.gz");
        std::fs::write(&corrupt, &file.bytes[..file.bytes.len() / 2]).unwrap();
        let output = profbridge(&["convert", corrupt.to_str().unwrap(), "--to", "otlp"]);
        assert_eq!(output.status.code(), Some(1));
        assert!(
            stderr(&output).contains(&format!("{}: gzip", corrupt.display())),
            "{}",
            stderr(&output)
        );
    }

    let usage = profbridge(&["convert", "--to", "yaml", "x"]);
    assert_eq!(usage.status.code(), Some(2));
    let usage = profbridge(&["convert", "a", "b", "-o", "c"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(
        stderr(&usage).contains("several inputs need --out-dir"),
        "{}",
        stderr(&usage)
    );
}

/// OTLP/JSON of an older schema: samples under `sample` with
/// `locationsStartIndex`, and tables inside the profile. Unknown keys are
/// ignored, as OTLP requires, so it reads as a request with no samples.
const OLDER_SCHEMA_JSON: &str = r#"{"resourceProfiles": [{
  "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout"}}]},
  "scopeProfiles": [{"profiles": [{
    "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
    "sample": [{"locationsStartIndex": 0, "locationsLength": 2, "value": ["10"]},
               {"locationsStartIndex": 2, "locationsLength": 1, "value": ["3"]}],
    "locationIndices": [0, 1, 2],
    "location": [{"address": "4096"}, {"address": "8192"}, {"address": "12288"}],
    "stringTable": ["", "cpu", "nanoseconds"]
  }]}]
}]}"#;

#[test]
fn otlp_json_that_reads_as_no_samples_is_reported_with_the_keys_it_skipped() {
    let dir = TempDir::new("convert-json-unknown");
    let older = dir.path().join("older.json");
    std::fs::write(&older, OLDER_SCHEMA_JSON).unwrap();
    let output = profbridge(&[
        "convert",
        older.to_str().unwrap(),
        "--to",
        "otlp",
        "-o",
        dir.path().join("older.otlp.pb").to_str().unwrap(),
    ]);
    let text = stderr(&output);
    let expected = format!(
        "warning: {}: OTLP/JSON of {} bytes holds no samples; skipped unknown keys (another OTLP version?): \
         resourceProfiles[].scopeProfiles[].profiles[].location, \
         resourceProfiles[].scopeProfiles[].profiles[].locationIndices, \
         resourceProfiles[].scopeProfiles[].profiles[].sample, \
         resourceProfiles[].scopeProfiles[].profiles[].stringTable",
        older.display(),
        OLDER_SCHEMA_JSON.len()
    );
    assert!(text.contains(&expected), "{text}");
    assert_eq!(text.matches("warning:").count(), 1, "{text}");

    // A current document with samples says nothing.
    let Some(file) = corpus_file("cppbench.cpu") else {
        return;
    };
    let current = dir.path().join("current.json");
    let output = profbridge(&[
        "convert",
        file.path.to_str().unwrap(),
        "--to",
        "otlp-json",
        "-o",
        current.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = profbridge(&["convert", current.to_str().unwrap(), "--to", "pprof"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("warning"), "{}", stderr(&output));
}

#[test]
fn among_many_inputs_the_good_ones_are_still_converted() {
    let Some(good) = corpus_file("java.heap") else {
        return;
    };
    let dir = TempDir::new("convert-partial");
    let bad = dir.path().join("bad.pb.gz");
    std::fs::write(&bad, [0x1f, 0x8b, 0x08, 0x00, 0x01]).unwrap();
    let out_dir = dir.path().join("out");
    let output = profbridge(&[
        "convert",
        bad.to_str().unwrap(),
        good.path.to_str().unwrap(),
        "--out-dir",
        out_dir.to_str().unwrap(),
        "--to",
        "otlp",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(bad.to_str().unwrap()),
        "{}",
        stderr(&output)
    );
    assert!(Path::new(&out_dir.join("java.heap.otlp.pb")).exists());
    assert!(!out_dir.join("bad.otlp.pb").exists());
}

#[test]
fn help_shows_examples_for_each_command() {
    for command in ["convert", "inspect"] {
        let output = profbridge(&[command, "--help"]);
        assert!(output.status.success());
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(
            text.contains("Examples:") && text.contains(&format!("profbridge {command} ")),
            "{text}"
        );
    }
}

#[test]
fn many_inputs_show_progress_on_a_terminal_and_are_quiet_otherwise() {
    let (Some(a), Some(b)) = (corpus_file("java.cpu"), corpus_file("java.heap")) else {
        return;
    };
    let dir = TempDir::new("convert-progress");
    let out_dir = dir.path().join("out");
    let args = [
        "convert",
        a.path.to_str().unwrap(),
        b.path.to_str().unwrap(),
        "--out-dir",
        out_dir.to_str().unwrap(),
    ];
    let quiet = profbridge(&args);
    assert!(quiet.status.success());
    assert!(
        quiet.stderr.is_empty() && quiet.stdout.is_empty(),
        "{}",
        stderr(&quiet)
    );

    // `script` runs the command on a pseudo-terminal.
    let purpose = "the terminal half of this test (Debian package bsdutils)";
    if profbridge_testkit::require_tool("script", &["--version"], purpose).is_none() {
        return;
    }
    let command = format!("{} {}", env!("CARGO_BIN_EXE_profbridge"), args.join(" "));
    let on_terminal = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(on_terminal.status.success(), "{}", stderr(&on_terminal));
    let shown = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(
        shown.contains("2/2"),
        "no progress bar on the terminal: {shown:?}"
    );
}

/// OTLP files as real producers write them: the Collector's Go pdata
/// library (what the OTel eBPF profiler sends: `attribute_table[0]` as
/// `12 00`, fields in descending order) and async-profiler's OTLP writer
/// (`link_table[0]` as zero-filled ids, padded length prefixes). Both
/// convert, and `go tool pprof -raw` reads the pprofs with the totals the
/// requests hold.
#[test]
fn pdata_and_async_profiler_files_convert_to_pprof_that_go_reads() {
    let dir = TempDir::new("convert-producers");
    let request = ebpf_profiler_request(40, 11);
    let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
    let cpu_observations: usize = profiles[0]
        .samples
        .iter()
        .map(|s| s.timestamps_unix_nano.len())
        .sum();
    let off_cpu_nanoseconds: i64 = profiles[1].samples.iter().flat_map(|s| &s.values).sum();
    let recording = async_profiler_recording();
    let recorded: u64 = recording.traces.iter().map(|t| t.samples).sum();
    let cases = [
        (
            "ebpf-pdata",
            pdata_encode(&request),
            vec![
                ("samples/count", i64::try_from(cpu_observations).unwrap()),
                ("off_cpu/nanoseconds", off_cpu_nanoseconds),
            ],
        ),
        (
            "async-profiler",
            async_profiler_otlp(&recording),
            vec![("cpu/count", i64::try_from(recorded).unwrap())],
        ),
    ];
    let go = require_tool(
        "go",
        &["version"],
        "reading converted pdata and async-profiler files with go tool pprof",
    );
    for (name, bytes, expected) in cases {
        let input = dir.path().join(format!("{name}.otlp.pb"));
        std::fs::write(&input, &bytes).unwrap();
        let out = dir.path().join(name);
        let output = profbridge(&[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "pprof",
            "--out-dir",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let mut ours: BTreeMap<String, i64> = BTreeMap::new();
        let mut theirs: BTreeMap<String, i64> = BTreeMap::new();
        let mut files: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: no pprof written");
        for file in &files {
            let profile = parse(&std::fs::read(file).unwrap());
            for (i, sample_type) in profile.sample_type.iter().enumerate() {
                let text = |index: i64| profile.string_table[index as usize].clone();
                let key = format!("{}/{}", text(sample_type.r#type), text(sample_type.unit));
                let total: i64 = profile.sample.iter().map(|s| s.value[i]).sum();
                *ours.entry(key).or_default() += total;
            }
            if go.is_some() {
                let home = TempDir::new("convert-producers-go");
                let raw = raw_text::go_tool_pprof_raw(file, home.path())
                    .unwrap_or_else(|e| panic!("{name}: go tool pprof: {e}"));
                let raw = raw_text::RawText::parse(&raw);
                for (sample_type, total) in raw.sample_types.iter().zip(raw.totals()) {
                    *theirs.entry(sample_type.clone()).or_default() += total;
                }
            }
        }
        let expected: BTreeMap<String, i64> = expected
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ours, expected, "{name}: totals per sample type");
        if go.is_some() {
            assert_eq!(theirs, expected, "{name}: totals go tool pprof reads");
        }
    }
}

use crate::support::invalid_utf8;

/// pprof → pprof keeps strings that are not UTF-8 byte for byte, raw or
/// gzipped, from raw or gzipped input; read back with a raw scan of the
/// protobuf, not our decoder.
#[test]
fn pprof_to_pprof_keeps_strings_that_are_not_utf8() {
    let dir = TempDir::new("convert-invalid-utf8");
    let raw_input = dir.path().join("invalid.pb");
    let bytes = invalid_utf8::profile_bytes();
    std::fs::write(&raw_input, &bytes).unwrap();
    let gzipped_input = dir.path().join("invalid.pb.gz");
    std::fs::write(
        &gzipped_input,
        profbridge_pprof::compress(bytes, &profbridge_pprof::EncodeOptions::default()),
    )
    .unwrap();
    let expected: Vec<Vec<u8>> = invalid_utf8::STRINGS.iter().map(|s| s.to_vec()).collect();
    for input in [&raw_input, &gzipped_input] {
        for level in ["0", "1", "6"] {
            let out = dir.path().join(format!("out-{level}.pb"));
            let output = profbridge(&[
                "convert",
                input.to_str().unwrap(),
                "--to",
                "pprof",
                "--gzip-level",
                level,
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(output.status.success(), "{}", stderr(&output));
            assert_eq!(stderr(&output), "", "no warning: nothing was replaced");
            let written = std::fs::read(&out).unwrap();
            assert_eq!(profbridge_pprof::is_gzip(&written), level != "0");
            let strings = invalid_utf8::raw_string_table(&invalid_utf8::gunzipped(&written));
            assert_eq!(strings, expected, "{} at level {level}", input.display());
        }
    }
}

/// pprof → OTLP: OTLP strings are UTF-8, so each invalid sequence becomes
/// U+FFFD; the profile is converted, and stderr says how many strings.
#[test]
fn pprof_to_otlp_replaces_invalid_utf8_and_warns() {
    let dir = TempDir::new("convert-invalid-utf8-otlp");
    let input = dir.path().join("invalid.pb");
    std::fs::write(&input, invalid_utf8::profile_bytes()).unwrap();
    let out = dir.path().join("out.otlp");
    let output = profbridge(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "otlp",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let count = invalid_utf8::invalid_count();
    assert!(count >= 10);
    assert_eq!(
        stderr(&output).trim_end(),
        format!(
            "profbridge: {}: warning: {count} strings are not valid UTF-8; \
             their invalid bytes are written as U+FFFD",
            input.display()
        )
    );
    let request = ExportProfilesServiceRequest::decode(std::fs::read(&out).unwrap().as_slice())
        .expect("OTLP protobuf, all strings UTF-8");
    let table = invalid_utf8::otlp_strings(&request);
    for string in invalid_utf8::STRINGS {
        let lossy = String::from_utf8_lossy(string);
        assert!(
            table.iter().any(|s| *s == lossy),
            "{lossy:?} is not in {table:?}"
        );
    }
    // The two label keys that differ only in an invalid byte are one
    // string now.
    assert_eq!(table.iter().filter(|s| *s == "key\u{FFFD}").count(), 1);
    assert!(table.iter().any(|s| s == "comment \u{FFFD}"));
}

/// Broken inputs: the detail appears once, and prost's message whole.
#[test]
fn error_messages_are_whole_and_said_once() {
    let dir = TempDir::new("convert-error-text");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // sample_type says 5 bytes follow; there is 1.
    let truncated = write("truncated.pb", &[0x0a, 0x05, 0x08]);
    // A function with id 0.
    let zero_id = write(
        "zero-id.pb",
        &Profile {
            function: vec![profbridge_pprof::Function::default()],
            string_table: vec![String::new()],
            ..Profile::default()
        }
        .encode_to_vec(),
    );
    let mut corrupt_gzip = profbridge_pprof::compress(
        vec![0x0a, 0x00],
        &profbridge_pprof::EncodeOptions::default(),
    );
    let at = corrupt_gzip.len() - 6;
    corrupt_gzip[at] ^= 0xff;
    let corrupt_gzip = write("corrupt.pb.gz", &corrupt_gzip);
    let cases = [
        (
            &truncated,
            "failed to decode Protobuf message: Profile.sample_type: buffer underflow",
        ),
        (&zero_id, "function at index 0 has id 0"),
        (&corrupt_gzip, "gzip: "),
    ];
    for (path, detail) in cases {
        for to in ["pprof", "otlp"] {
            let output = profbridge(&[
                "convert",
                path.to_str().unwrap(),
                "--from",
                "pprof",
                "--to",
                to,
                "-o",
                dir.path().join("out").to_str().unwrap(),
            ]);
            assert_eq!(output.status.code(), Some(1));
            let text = stderr(&output);
            assert_eq!(text.matches(detail).count(), 1, "{detail:?} once in {text}");
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(
                text.starts_with(&format!("profbridge: {}: ", path.display())),
                "{text}"
            );
            if detail.starts_with("failed") {
                assert!(text.trim_end().ends_with(detail), "{text}");
            }
        }
    }
}
