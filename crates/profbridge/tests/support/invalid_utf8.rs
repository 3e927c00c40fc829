//! A pprof whose strings are not all UTF-8 (function, system and file
//! names, label keys, values and units, a mapping's file and build id, a
//! comment), with each kind of invalid sequence; a raw scan of a pprof's
//! string table that does not go through our decoder; and google/pprof's
//! own `Profile.String()` of a file, from a small Go program built against
//! github.com/google/pprof/profile in GOPATH mode.
//!
//! Test binaries include it with
//! `#[path = "support/invalid_utf8.rs"] mod invalid_utf8;`.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use profbridge_pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use prost::Message;

/// The string table: index → bytes.
pub const STRINGS: &[&[u8]] = &[
    b"",
    b"samples",
    b"count",
    b"cpu",
    b"nanoseconds",
    // 5: Latin-1 (é as one byte)
    b"caf\xe9_handler",
    // 6: a lone continuation byte
    b"sys\x80name",
    // 7: a truncated three-byte sequence
    b"/src/\xe2\x82file.c",
    // 8: an overlong encoding of '/'
    b"k\xc0\xafey",
    // 9: a byte that never occurs in UTF-8
    b"val\xff",
    // 10: a mapping's file, Latin-1
    b"/usr/lib/lib\xe9.so",
    // 11: a comment ending in a truncated four-byte sequence
    b"comment \xf0\x9f\x98",
    b"main",
    b"main.c",
    // 14, 15: two keys that differ only in their invalid byte, so the same
    // after U+FFFD replacement
    b"key\xfe",
    b"key\xff",
    b"a",
    b"b",
    // 18: a num label's key and 19: its unit
    b"siz\xe9",
    b"byt\xe9s",
    // 20: a build id
    b"b\xe9ld",
];

/// How many entries of [`STRINGS`] are not UTF-8.
pub fn invalid_count() -> usize {
    STRINGS
        .iter()
        .filter(|s| std::str::from_utf8(s).is_err())
        .count()
}

/// The profile, raw protobuf: prost's encoding of everything but the
/// string table, then the strings as field 6 (fields may come in any
/// order; Go and prost both read them).
pub fn profile_bytes() -> Vec<u8> {
    let label = |key: i64, str: i64| Label {
        key,
        str,
        ..Label::default()
    };
    let profile = Profile {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        sample: vec![
            Sample {
                location_id: vec![1, 2],
                value: vec![10, 1000],
                label: vec![label(8, 9), label(14, 16), label(15, 17)],
            },
            Sample {
                location_id: vec![2],
                value: vec![5, 500],
                label: vec![Label {
                    key: 18,
                    num: 4096,
                    num_unit: 19,
                    ..Label::default()
                }],
            },
        ],
        mapping: vec![Mapping {
            id: 1,
            memory_start: 0x1000,
            memory_limit: 0x9000,
            filename: 10,
            build_id: 20,
            has_functions: true,
            ..Mapping::default()
        }],
        location: vec![
            Location {
                id: 1,
                mapping_id: 1,
                address: 0x1100,
                line: vec![Line {
                    function_id: 1,
                    line: 10,
                    column: 0,
                }],
                is_folded: false,
            },
            Location {
                id: 2,
                mapping_id: 1,
                address: 0x2200,
                line: vec![Line {
                    function_id: 2,
                    line: 20,
                    column: 0,
                }],
                is_folded: false,
            },
        ],
        function: vec![
            Function {
                id: 1,
                name: 5,
                system_name: 6,
                filename: 7,
                start_line: 3,
            },
            Function {
                id: 2,
                name: 12,
                system_name: 12,
                filename: 13,
                start_line: 1,
            },
        ],
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        comment: vec![11],
        ..Profile::default()
    };
    let mut bytes = profile.encode_to_vec();
    for string in STRINGS {
        bytes.push(6 << 3 | 2);
        prost::encoding::encode_varint(string.len() as u64, &mut bytes);
        bytes.extend_from_slice(string);
    }
    bytes
}

/// The string table of a raw (not gzipped) pprof: every top-level field 6,
/// read with prost's wire functions only.
pub fn raw_string_table(protobuf: &[u8]) -> Vec<Vec<u8>> {
    use prost::bytes::Buf;
    use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
    let mut buf = protobuf;
    let mut strings = Vec::new();
    while buf.has_remaining() {
        let (tag, wire_type) = decode_key(&mut buf).unwrap();
        if tag == 6 && wire_type == WireType::LengthDelimited {
            let len = decode_varint(&mut buf).unwrap() as usize;
            strings.push(buf[..len].to_vec());
            buf.advance(len);
        } else {
            skip_field(wire_type, tag, &mut buf, DecodeContext::default()).unwrap();
        }
    }
    strings
}

/// gunzips when gzipped.
pub fn gunzipped(bytes: &[u8]) -> Vec<u8> {
    if profbridge_pprof::is_gzip(bytes) {
        profbridge_pprof::gunzip(bytes, &profbridge_pprof::DecodeOptions::default()).unwrap()
    } else {
        bytes.to_vec()
    }
}

const PRINT_PROFILE_GO: &str = r#"package main

import (
	"fmt"
	"os"

	"github.com/google/pprof/profile"
)

// Prints google/pprof's Profile.String() of the file named first.
func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := profile.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.WriteString(p.String())
}
"#;

/// Where the Debian package golang-github-google-pprof-dev puts the source.
const GOPATH: &str = "/usr/share/gocode";

/// Builds the Go program (once: see `profbridge_testkit::programs`), or
/// `None` after skipping loudly when Go or the google/pprof source is
/// missing.
pub fn print_profile_program() -> Option<PathBuf> {
    let purpose = "comparing inspect --format raw with google/pprof's Profile.String()";
    profbridge_testkit::require_tool("go", &["version"], purpose)?;
    let source_dir = Path::new(GOPATH).join("src/github.com/google/pprof/profile");
    if !source_dir.join("profile.go").is_file() {
        profbridge_testkit::missing_prerequisite(
            &format!(
                "google/pprof's source in {} (package golang-github-google-pprof-dev)",
                source_dir.display()
            ),
            purpose,
        );
        return None;
    }
    let binary = profbridge_testkit::go::build_once_with_gopath(
        "print-profile",
        PRINT_PROFILE_GO,
        Path::new(GOPATH),
    )
    .unwrap_or_else(|failed| panic!("building the Go program failed: {}", failed.stderr));
    Some(binary)
}

/// google/pprof's `Profile.String()` of `file`, as bytes.
pub fn go_profile_string(program: &Path, file: &Path) -> Vec<u8> {
    let output = Command::new(program).arg(file).output().unwrap();
    assert!(
        output.status.success(),
        "google/pprof cannot read {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Our dump as the google/pprof release in /usr/share/gocode prints it:
/// that release predates line columns, so a location line reads
/// `file:10 s=3` where ours (after newer google/pprof) reads
/// `file:10:0 s=3`. The profile's columns are all 0.
pub fn without_columns(dump: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dump.len());
    let mut rest = dump;
    while let Some(at) = rest.windows(5).position(|w| w == b":0 s=") {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(b" s=");
        rest = &rest[at + 5..];
    }
    out.extend_from_slice(rest);
    out
}

/// Every string of an OTLP request's dictionary: the string table and the
/// attributes' string values (label values, comments and build ids are
/// attributes), arrays included.
pub fn otlp_strings(
    request: &profbridge_translate::otlp::ExportProfilesServiceRequest,
) -> Vec<String> {
    use profbridge_translate::otlp::{any_value::Value, AnyValue};
    fn collect(value: &AnyValue, table: &[String], out: &mut Vec<String>) {
        match &value.value {
            Some(Value::StringValue(text)) => out.push(text.clone()),
            Some(Value::StringValueStrindex(index)) => {
                out.extend(table.get(*index as usize).cloned());
            }
            Some(Value::ArrayValue(array)) => {
                for value in &array.values {
                    collect(value, table, out);
                }
            }
            _ => {}
        }
    }
    let Some(dictionary) = &request.dictionary else {
        return Vec::new();
    };
    let mut out = dictionary.string_table.clone();
    for attribute in &dictionary.attribute_table {
        if let Some(value) = &attribute.value {
            collect(value, &dictionary.string_table, &mut out);
        }
    }
    out
}
