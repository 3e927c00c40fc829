//! `profbridge inspect` end to end, on the built binary: text, raw and JSON
//! output, flame graphs, errors, frame types, and agreement with
//! `go tool pprof -top`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use crate::support::raw_text;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use prost::Message;
use serde_json::Value;

use profbridge_pprof::{parse_any, DecodeOptions, Profile};
use profbridge_testkit::{
    corpus_file, corpus_files, ebpf_like_request, require_tool, CorpusFile, TempDir,
};

fn profbridge_inspect<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .arg("inspect")
        .args(args)
        .output()
        .expect("run profbridge")
}

/// Standard output of a run that must succeed.
fn stdout_of<S: AsRef<OsStr>>(args: &[S]) -> String {
    let output = profbridge_inspect(args);
    assert!(
        output.status.success(),
        "profbridge inspect {:?} failed: {}",
        args.iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn json_of<S: AsRef<OsStr>>(args: &[S]) -> Value {
    serde_json::from_str(&stdout_of(args)).expect("inspect --format json prints JSON")
}

fn decoded(file: &CorpusFile) -> Profile {
    parse_any(&file.bytes, &DecodeOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", file.name))
        .0
}

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[index as usize]
}

fn totals(profile: &Profile) -> Vec<i64> {
    (0..profile.sample_type.len())
        .map(|i| profile.sample.iter().map(|s| s.value[i]).sum())
        .collect()
}

/// pprof's default: the first type named by default_sample_type, else the last.
fn default_index(profile: &Profile) -> usize {
    let name = text(profile, profile.default_sample_type);
    profile
        .sample_type
        .iter()
        .position(|t| !name.is_empty() && text(profile, t.r#type) == name)
        .unwrap_or(profile.sample_type.len() - 1)
}

#[test]
fn text_output_names_format_types_totals_and_counts() {
    let Some(file) = corpus_file("large.cpu") else {
        return;
    };
    let profile = decoded(&file);
    let out = stdout_of(&[&file.path]);
    assert!(out.contains("Format:  pprof (gzipped)"), "{out}");
    let totals = totals(&profile);
    assert_eq!(profile.sample_type.len(), 2);
    let has_line = |start: &str, end: String| {
        out.lines()
            .any(|l| l.trim_start().starts_with(start) && l.ends_with(&end))
    };
    assert!(
        has_line("samples/count ", format!(" {} count", totals[0])),
        "{out}"
    );
    assert!(
        has_line(
            "cpu/nanoseconds [default] ",
            format!(" {} nanoseconds", totals[1])
        ),
        "{out}"
    );
    assert!(!out.contains("samples/count [default]"), "{out}");
    let counts = format!(
        "Samples: {}   Locations: {}   Functions: {}   Mappings: {}",
        profile.sample.len(),
        profile.location.len(),
        profile.function.len(),
        profile.mapping.len()
    );
    assert!(out.contains(&counts), "{out}");
    assert!(out.contains("Top 10 of "), "{out}");
    assert!(
        out.contains("cpu by leaf frame type:\n  (unknown)"),
        "{out}"
    );

    let out = stdout_of(&[
        file.path.as_os_str(),
        OsStr::new("--sample-type"),
        OsStr::new("samples"),
        OsStr::new("--top"),
        OsStr::new("3"),
    ]);
    assert!(out.contains("Top 3 of "), "{out}");
    assert!(out.contains("samples by leaf frame type:"), "{out}");
}

#[test]
fn raw_output_is_google_pprof_string_for_every_corpus_file() {
    for file in corpus_files() {
        let expected = file
            .expected_string()
            .unwrap_or_else(|| panic!("{} has no .string file", file.name));
        let ours = stdout_of(&[file.path.as_path(), Path::new("--format"), Path::new("raw")]);
        assert!(
            ours == expected,
            "{}: --format raw differs from google/pprof's Profile.String()",
            file.name
        );
    }
}

#[test]
fn json_totals_counts_and_values_add_up_for_every_corpus_file() {
    for file in corpus_files() {
        let profile = decoded(&file);
        let json = json_of(&[
            file.path.as_path(),
            Path::new("--format"),
            Path::new("json"),
            Path::new("--top"),
            Path::new("0"),
        ]);
        let what = &file.name;
        let types = json["sample_types"].as_array().unwrap();
        assert_eq!(types.len(), profile.sample_type.len(), "{what}");
        for (i, (entry, total)) in types.iter().zip(totals(&profile)).enumerate() {
            let sample_type = &profile.sample_type[i];
            assert_eq!(entry["type"], text(&profile, sample_type.r#type), "{what}");
            assert_eq!(entry["unit"], text(&profile, sample_type.unit), "{what}");
            assert_eq!(
                entry["total"].as_i64(),
                Some(total),
                "{what}: total of type {i}"
            );
            assert_eq!(
                entry["default"],
                i == default_index(&profile),
                "{what}: default flag of type {i}"
            );
        }
        let counts = &json["counts"];
        assert_eq!(
            counts["samples"].as_u64(),
            Some(profile.sample.len() as u64),
            "{what}"
        );
        assert_eq!(
            counts["locations"].as_u64(),
            Some(profile.location.len() as u64),
            "{what}"
        );
        assert_eq!(
            counts["functions"].as_u64(),
            Some(profile.function.len() as u64),
            "{what}"
        );
        assert_eq!(
            counts["mappings"].as_u64(),
            Some(profile.mapping.len() as u64),
            "{what}"
        );

        // Every sample with a stack has one leaf, whose function gets its value.
        let selected = default_index(&profile);
        let with_stack: i64 = profile
            .sample
            .iter()
            .filter(|s| !s.location_id.is_empty())
            .map(|s| s.value[selected])
            .sum();
        let sum = |list: &str, field: &str| {
            json[list]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e[field].as_i64().unwrap())
                .sum::<i64>()
        };
        assert_eq!(sum("top", "flat"), with_stack, "{what}: flat values");
        assert_eq!(
            sum("frame_types", "value"),
            totals(&profile)[selected],
            "{what}: frame types"
        );
        for function in json["top"].as_array().unwrap() {
            assert!(
                function["cum"].as_i64().unwrap() >= function["flat"].as_i64().unwrap(),
                "{what}: {function}"
            );
        }
    }
}

#[test]
fn flame_graph_is_well_formed_svg_naming_the_top_functions() {
    let Some(file) = corpus_file("large.cpu") else {
        return;
    };
    let dir = TempDir::new("inspect-flamegraph");
    let svg_path = dir.path().join("cpu.svg");
    let json = json_of(&[
        file.path.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("--flamegraph"),
        svg_path.as_os_str(),
    ]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let document =
        roxmltree::Document::parse_with_options(&svg, options).expect("the SVG is well-formed XML");
    assert_eq!(document.root_element().tag_name().name(), "svg");
    let texts: Vec<&str> = document
        .descendants()
        .filter_map(|node| node.text())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("large.cpu") && t.contains("cpu")),
        "the title names the file and type"
    );
    for function in json["top"].as_array().unwrap().iter().take(3) {
        let name = function["function"].as_str().unwrap();
        assert!(svg.contains(name), "the flame graph lacks {name}");
    }
}

#[test]
fn errors_name_the_file_and_exit_with_1() {
    let dir = TempDir::new("inspect-errors");
    let missing = dir.path().join("missing.pb.gz");
    let unrecognized = dir.path().join("notes.txt");
    std::fs::write(&unrecognized, "these are not stacks\n").unwrap();
    let truncated = dir.path().join("truncated.pb.gz");
    let gzipped = corpus_file("large.cpu").map_or_else(gzip_of_something, |file| file.bytes);
    std::fs::write(&truncated, &gzipped[..gzipped.len() / 2]).unwrap();
    for (path, reason) in [
        (&missing, "cannot read"),
        (&unrecognized, "unrecognized format"),
        (&truncated, "gzip"),
    ] {
        let output = profbridge_inspect(&[path]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stderr}",
            path.display()
        );
        assert!(
            stderr.contains(&path.display().to_string()) && stderr.contains(reason),
            "{stderr}"
        );
    }
}

/// A gzip member of a tiny pprof, for when the corpus is absent.
fn gzip_of_something() -> Vec<u8> {
    let dir = TempDir::new("inspect-gzip");
    let folded = dir.path().join("stacks.folded");
    std::fs::write(&folded, "main;work 10\nmain;idle 3\n".repeat(50)).unwrap();
    let out = dir.path().join("stacks.pb.gz");
    let status = Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args([
            "convert".as_ref(),
            folded.as_os_str(),
            "--to".as_ref(),
            "pprof".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(out).unwrap()
}

#[test]
fn frame_types_of_an_otlp_request_add_up_to_the_total() {
    let dir = TempDir::new("inspect-frame-types");
    let path = dir.path().join("ebpf.otlp.pb");
    std::fs::write(&path, ebpf_like_request(300, 7).encode_to_vec()).unwrap();
    let json = json_of(&[path.as_os_str(), OsStr::new("--format"), OsStr::new("json")]);
    let profiles: Vec<&Value> = match &json {
        Value::Array(several) => several.iter().collect(),
        one => vec![one],
    };
    for profile in profiles {
        assert_eq!(profile["format"], "OTLP protobuf");
        assert!(profile["otlp"]["resource"].is_u64(), "{profile}");
        let selected = profile["selected_sample_type"].as_str().unwrap();
        let total = profile["sample_types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == selected)
            .unwrap()["total"]
            .as_i64()
            .unwrap();
        let frame_types: HashMap<&str, i64> = profile["frame_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                (
                    entry["type"].as_str().unwrap(),
                    entry["value"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(frame_types.values().sum::<i64>(), total, "{profile}");
        let known = ["kernel", "native", "cpython", "jvm", "go", "(unknown)"];
        assert!(
            frame_types.keys().all(|t| known.contains(t)),
            "{frame_types:?}"
        );
        assert!(
            frame_types.keys().filter(|t| **t != "(unknown)").count() >= 2,
            "{frame_types:?}"
        );
    }
    let out = stdout_of(&[&path]);
    assert!(out.contains("== resource 0, scope 0"), "{out}");
    assert!(out.contains("by leaf frame type:"), "{out}");
}

/// One row of `go tool pprof -top`.
#[derive(Debug)]
struct GoRow {
    name: String,
    flat: String,
    cum: String,
}

/// What `go tool pprof -top` printed: the sample type, the total and rows.
#[derive(Debug)]
struct GoTop {
    sample_type: String,
    total: String,
    rows: Vec<GoRow>,
}

impl GoTop {
    fn parse(text: &str) -> Self {
        let sample_type = text
            .lines()
            .find_map(|l| l.strip_prefix("Type: "))
            .expect("a Type: line")
            .to_owned();
        let total = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("Showing nodes accounting for ")?
                    .split(" of ")
                    .nth(1)?
                    .strip_suffix(" total")
            })
            .expect("a Showing nodes line")
            .to_owned();
        let rows = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
            .skip(1)
            .map(Self::row)
            .collect();
        Self {
            sample_type,
            total,
            rows,
        }
    }

    /// `flat flat% sum% cum cum%  name[ (inline)]`.
    fn row(line: &str) -> GoRow {
        let mut rest = line;
        let mut columns = Vec::new();
        for _ in 0..5 {
            rest = rest.trim_start();
            let end = rest.find(' ').unwrap_or(rest.len());
            columns.push(&rest[..end]);
            rest = &rest[end..];
        }
        let name = rest
            .strip_prefix("  ")
            .unwrap_or_else(|| panic!("unexpected -top row {line:?}"));
        let name = name
            .strip_suffix(" (partial-inline)")
            .or_else(|| name.strip_suffix(" (inline)"))
            .unwrap_or(name);
        GoRow {
            name: name.to_owned(),
            flat: columns[0].to_owned(),
            cum: columns[3].to_owned(),
        }
    }
}

/// A number as pprof prints it (`1.20s`, `512kB`, `0`), in the base unit of
/// its kind (nanoseconds, bytes) or as is: the value, and half of the last
/// digit shown.
fn go_quantity(text: &str, report_unit: &str) -> (f64, f64) {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = if unit.is_empty() { report_unit } else { unit };
    let factor = match unit {
        "" => 1.0,
        "B" => 1.0,
        "kB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0f64.powi(4),
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "hrs" => 3.6e12,
        other => panic!("unexpected unit {other:?} in {text:?}"),
    };
    let value: f64 = number
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"));
    (value * factor, 0.005 * factor)
}

/// The unit a `go_quantity` of `text` is in: its suffix.
fn unit_suffix(text: &str) -> &str {
    text.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

/// Our raw values in the base unit pprof scales to.
fn base_factor(unit: &str) -> f64 {
    match unit {
        "nanoseconds" | "ns" => 1.0,
        "microseconds" | "us" => 1e3,
        "milliseconds" | "ms" => 1e6,
        "seconds" | "s" => 1e9,
        _ => 1.0,
    }
}

fn go_tool_pprof_top(
    file: &Path,
    sample_type: &str,
    node_count: usize,
    home: &Path,
) -> Result<String, String> {
    let node_count = format!("-nodecount={node_count}");
    let sample_index = format!("-sample_index={sample_type}");
    raw_text::go_tool_pprof(
        &["-top", &node_count, &sample_index, "-symbolize=none"],
        file,
        home,
    )
}

fn assert_close(what: &str, ours: i64, unit: &str, go_text: &str, report_unit: &str) {
    let (go_value, precision) = go_quantity(go_text, report_unit);
    let ours_scaled = ours as f64 * base_factor(unit);
    let slack = precision * 1.000_001 + ours_scaled.abs() * 1e-12;
    assert!(
        (ours_scaled - go_value).abs() <= slack,
        "{what}: ours {ours} {unit}, go tool pprof {go_text}"
    );
}

const GO_NODE_COUNT: usize = 25;

/// Runs `go tool pprof -top` and `inspect --format json` on `path` for each
/// of `profile`'s sample types and compares the totals and the flat and cum
/// values of every function Go lists. Returns the names Go listed per type,
/// or Go's error output when it cannot read the file.
fn compare_with_go_top(
    label: &str,
    path: &Path,
    profile: &Profile,
    home: &Path,
) -> Result<Vec<Vec<String>>, String> {
    let mut listed = Vec::new();
    for sample_type in &profile.sample_type {
        let (name, unit) = (
            text(profile, sample_type.r#type),
            text(profile, sample_type.unit),
        );
        let what = format!("{label} -sample_index={name}");
        let go = GoTop::parse(&go_tool_pprof_top(path, name, GO_NODE_COUNT, home)?);
        let json = json_of(&[
            path.as_os_str(),
            OsStr::new("--format"),
            OsStr::new("json"),
            OsStr::new("--top"),
            OsStr::new("0"),
            OsStr::new("--sample-type"),
            OsStr::new(name),
        ]);
        assert_eq!(go.sample_type, name, "{what}");
        assert_eq!(json["selected_sample_type"], name, "{what}");
        let total = json["sample_types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == name)
            .unwrap()["total"]
            .as_i64()
            .unwrap();
        let report_unit = unit_suffix(&go.total);
        assert_close(
            &format!("{what}: total"),
            total,
            unit,
            &go.total,
            report_unit,
        );

        let ours: HashMap<&str, (i64, i64)> = json["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["function"].as_str().unwrap(),
                    (f["flat"].as_i64().unwrap(), f["cum"].as_i64().unwrap()),
                )
            })
            .collect();
        assert!(!go.rows.is_empty(), "{what}: go tool pprof listed nothing");
        for row in &go.rows {
            let (flat, cum) = *ours
                .get(row.name.as_str())
                .unwrap_or_else(|| panic!("{what}: go tool pprof lists {:?}, we do not", row.name));
            assert_close(
                &format!("{what}: flat of {}", row.name),
                flat,
                unit,
                &row.flat,
                report_unit,
            );
            assert_close(
                &format!("{what}: cum of {}", row.name),
                cum,
                unit,
                &row.cum,
                report_unit,
            );
        }
        listed.push(go.rows.into_iter().map(|row| row.name).collect());
    }
    Ok(listed)
}

#[test]
fn inspect_agrees_with_go_tool_pprof_top_on_the_corpus() {
    const REQUIRED: [&str; 4] = ["large.cpu", "java.cpu", "java.heap", "cppbench.heap"];
    let files = corpus_files();
    if files.is_empty()
        || require_tool("go", &["version"], "the go tool pprof -top interop test").is_none()
    {
        return;
    }
    let home = TempDir::new("inspect-go-top");
    for file in &files {
        match compare_with_go_top(&file.name, &file.path, &decoded(file), home.path()) {
            Ok(_) => {}
            Err(stderr) if !REQUIRED.contains(&file.name.as_str()) => {
                eprintln!(
                    "note: {}: go tool pprof failed, not compared: {stderr}",
                    file.name
                );
            }
            Err(stderr) => panic!("{}: go tool pprof failed: {stderr}", file.name),
        }
    }
}

/// A profile where pruning and naming matter: allocator frames to drop (one
/// inlined, one kept by keep_frames, one at the root), C++ names with
/// argument lists and reserved parentheses, unsymbolized frames with and
/// without a mapping, recursion, and a zero sample.
fn crafted_profile() -> Profile {
    use profbridge_pprof::{Function, Line, Location, Mapping, Sample, ValueType};
    let mut strings = vec![String::new()];
    let mut string = |s: &str| {
        strings.push(s.to_owned());
        strings.len() as i64 - 1
    };
    let sample_type = vec![
        ValueType {
            r#type: string("samples"),
            unit: string("count"),
        },
        ValueType {
            r#type: string("cpu"),
            unit: string("nanoseconds"),
        },
    ];
    let names = [
        "main",
        "malloc",
        "operator new(unsigned long)",
        "(anonymous namespace)::worker(int)",
        "helper",
        "tcmalloc::Alloc",
        "tcmalloc::KeepMe",
        "compute(int, char const*)",
        "",
    ];
    let function: Vec<Function> = names
        .iter()
        .enumerate()
        .map(|(i, name)| Function {
            id: i as u64 + 1,
            name: string(name),
            ..Function::default()
        })
        .collect();
    let drop_frames = string(r"malloc|operator new|tcmalloc::.*|\(anonymous namespace\)::worker");
    let keep_frames = string(r"tcmalloc::Keep.*");
    let mapping = vec![Mapping {
        id: 1,
        memory_start: 0x1000,
        memory_limit: 0x9000,
        filename: string("/usr/lib/libfoo.so"),
        ..Mapping::default()
    }];
    let lines = |ids: &[u64]| {
        ids.iter()
            .map(|&function_id| Line {
                function_id,
                ..Line::default()
            })
            .collect()
    };
    // Location n has function n, except: 9 (mapped, no lines), 10 (mapped,
    // unnamed function), 11 (neither), 12 (helper inlined into compute), 13
    // (malloc inlined into helper).
    let mut location: Vec<Location> = (1..=8)
        .map(|id| Location {
            id,
            address: 0x100 * id,
            line: lines(&[id]),
            ..Location::default()
        })
        .collect();
    location.extend([
        Location {
            id: 9,
            mapping_id: 1,
            address: 0x1100,
            ..Location::default()
        },
        Location {
            id: 10,
            mapping_id: 1,
            address: 0x1200,
            line: lines(&[9]),
            ..Location::default()
        },
        Location {
            id: 11,
            address: 0x1300,
            ..Location::default()
        },
        Location {
            id: 12,
            address: 0x1400,
            line: lines(&[5, 8]),
            ..Location::default()
        },
        Location {
            id: 13,
            address: 0x1500,
            line: lines(&[2, 5]),
            ..Location::default()
        },
    ]);
    let stacks: [(&[u64], i64); 11] = [
        (&[2, 3, 8, 1], 7),
        (&[6, 7, 8, 1], 11),
        (&[13, 12, 1], 13),
        (&[9, 8, 1], 17),
        (&[10, 1], 19),
        (&[11, 1], 23),
        (&[2, 1], 29),
        (&[1, 2], 31),
        (&[8, 4, 1], 37),
        (&[8, 8, 12, 1], 41),
        (&[8, 1], 0),
    ];
    let sample = stacks
        .iter()
        .map(|(stack, count)| Sample {
            location_id: stack.to_vec(),
            value: vec![*count, count * 10_000_000],
            ..Sample::default()
        })
        .collect();
    Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        drop_frames,
        keep_frames,
        string_table: strings,
        ..Profile::default()
    }
}

#[test]
fn pruning_and_naming_agree_with_go_tool_pprof_top() {
    if require_tool("go", &["version"], "the go tool pprof -top interop test").is_none() {
        return;
    }
    let home = TempDir::new("inspect-go-crafted");
    let path = home.path().join("crafted.pb.gz");
    let profile = crafted_profile();
    std::fs::write(
        &path,
        profbridge_pprof::encode(&profile, &Default::default()),
    )
    .unwrap();
    let listed = compare_with_go_top("crafted", &path, &profile, home.path())
        .unwrap_or_else(|stderr| panic!("go tool pprof cannot read the crafted profile: {stderr}"));
    let json = json_of(&[
        path.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("--top"),
        OsStr::new("0"),
    ]);
    let mut ours: Vec<String> = json["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap().to_owned())
        .collect();
    let mut theirs = listed[1].clone();
    ours.sort();
    theirs.sort();
    assert_eq!(
        ours, theirs,
        "the functions listed (left: ours, right: go tool pprof)"
    );
    for expected in ["[libfoo.so]", "<unknown>", "tcmalloc::KeepMe", "malloc"] {
        assert!(
            ours.iter().any(|name| name == expected),
            "{expected} missing from {ours:?}"
        );
    }
    assert!(
        !ours
            .iter()
            .any(|name| name == "tcmalloc::Alloc" || name.starts_with("operator new")),
        "{ours:?}"
    );
}

use crate::support::invalid_utf8;

/// Strings that are not UTF-8 are printed as the file holds them, as
/// google/pprof (whose strings are bytes) prints them; gzipped or not.
#[test]
fn raw_output_of_strings_that_are_not_utf8_is_what_google_pprof_prints() {
    let dir = TempDir::new("inspect-invalid-utf8");
    let file = dir.path().join("invalid.pb");
    let bytes = invalid_utf8::profile_bytes();
    std::fs::write(&file, &bytes).unwrap();
    let gzipped = dir.path().join("invalid.pb.gz");
    std::fs::write(
        &gzipped,
        profbridge_pprof::compress(bytes, &profbridge_pprof::EncodeOptions::default()),
    )
    .unwrap();

    let output = profbridge_inspect(&[file.as_os_str(), OsStr::new("--format"), OsStr::new("raw")]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ours = output.stdout;
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Every string but the empty one and the default types' names shows,
    // byte for byte; nothing was replaced.
    for string in invalid_utf8::STRINGS
        .iter()
        .filter(|s| std::str::from_utf8(s).is_err())
    {
        assert!(
            ours.windows(string.len()).any(|w| w == *string),
            "{} is missing from {}",
            String::from_utf8_lossy(string),
            String::from_utf8_lossy(&ours)
        );
    }
    assert!(!String::from_utf8_lossy(&ours).contains("\u{FFFD}\u{FFFD}\u{FFFD}"));
    assert!(
        !ours.windows(3).any(|w| w == "\u{FFFD}".as_bytes()),
        "a replacement character was printed"
    );
    let from_gzip = profbridge_inspect(&[
        gzipped.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("raw"),
    ]);
    assert_eq!(from_gzip.stdout, ours);

    let Some(program) = invalid_utf8::print_profile_program() else {
        return;
    };
    let theirs = invalid_utf8::go_profile_string(&program, &file);
    assert_eq!(
        invalid_utf8::without_columns(&ours),
        theirs,
        "ours:\n{}\ngoogle/pprof's:\n{}",
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}
