//! Legacy formats against google/pprof's own test profiles and output, and
//! malformed gperftools input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{
    detect_format, dump, parse_any, parse_legacy, DecodeOptions, Format, LegacyError, LegacyKind,
};
use profbridge_testkit::{corpus_file, corpus_files, CorpusFile};

fn legacy_corpus() -> Vec<CorpusFile> {
    corpus_files()
        .into_iter()
        .filter(|f| !f.is_gzip())
        .collect()
}

fn first_difference(ours: &str, expected: &str) -> String {
    ours.lines()
        .zip(expected.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| format!("line {}\n   ours:     {a}\n   expected: {b}", i + 1))
        .unwrap_or_else(|| "(one is a prefix of the other)".to_owned())
}

#[test]
fn dump_of_each_legacy_corpus_file_matches_google_pprof() {
    let files = legacy_corpus();
    if files.is_empty() {
        return;
    }
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cppbench.contention",
            "cppbench.cpu",
            "cppbench.heap",
            "cppbench.small.contention",
            "cppbench.thread",
            "go.crc32.cpu",
            "java.cpu",
            "java.heap"
        ]
    );
    let mut failures = Vec::new();
    for file in files {
        let expected = file
            .expected_string()
            .expect("every legacy corpus file has a .string");
        match parse_legacy(&file.bytes) {
            Ok(profile) => {
                let ours = dump(&profile).unwrap();
                if ours != expected {
                    failures.push(format!(
                        "{}: {}",
                        file.name,
                        first_difference(&ours, &expected)
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", file.name)),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn detection_names_each_corpus_format_and_parse_any_agrees() {
    let expected = [
        (
            "cppbench.contention",
            Format::Legacy(LegacyKind::Contention),
        ),
        ("cppbench.cpu", Format::Legacy(LegacyKind::GperftoolsCpu)),
        ("cppbench.cpu_no_samples_type", Format::Pprof),
        ("cppbench.heap", Format::Legacy(LegacyKind::Heap)),
        (
            "cppbench.small.contention",
            Format::Legacy(LegacyKind::Contention),
        ),
        ("cppbench.thread", Format::Legacy(LegacyKind::Thread)),
        ("go.crc32.cpu", Format::Legacy(LegacyKind::GperftoolsCpu)),
        ("go.nomappings.crash", Format::Pprof),
        ("java.cpu", Format::Legacy(LegacyKind::JavaCpu)),
        ("java.heap", Format::Legacy(LegacyKind::JavaHeap)),
        ("large.cpu", Format::Pprof),
    ];
    for file in corpus_files() {
        let (_, format) = expected
            .iter()
            .find(|(name, _)| *name == file.name)
            .unwrap();
        let detected = detect_format(&file.bytes, &DecodeOptions::default()).unwrap();
        assert_eq!(detected.format, *format, "{}", file.name);
        assert_eq!(detected.gzipped, file.is_gzip(), "{}", file.name);
        let (profile, _) = parse_any(&file.bytes, &DecodeOptions::default()).unwrap();
        assert_eq!(
            dump(&profile).unwrap(),
            file.expected_string().unwrap(),
            "{}",
            file.name
        );
    }
}

#[test]
fn unrecognized_input_names_the_formats_tried() {
    let err = detect_format(
        b"hello, world\nthis is not a profile",
        &DecodeOptions::default(),
    )
    .unwrap_err()
    .to_string();
    for format in [
        "pprof",
        "gperftools CPU",
        "Java heap",
        "folded stacks",
        "OTLP protobuf",
        "OTLP JSON",
    ] {
        assert!(err.contains(format), "{format} missing from: {err}");
    }
    assert_eq!(
        parse_legacy(b"hello").unwrap_err(),
        LegacyError::Unrecognized
    );
}

/// A gperftools profile's slots, re-encoded with another slot size or byte
/// order.
struct CpuProfile {
    slots: Vec<u64>,
    text: Vec<u8>,
}

impl CpuProfile {
    fn read(data: &[u8], bytes: usize, big_endian: bool) -> Self {
        let word = |at: usize| {
            let chunk = &data[at..at + bytes];
            let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
            if big_endian {
                chunk.iter().fold(0, fold)
            } else {
                chunk.iter().rev().fold(0, fold)
            }
        };
        let mut slots: Vec<u64> = (0..5).map(|i| word(i * bytes)).collect();
        let mut at = 5 * bytes;
        loop {
            let (count, pcs) = (word(at), word(at + bytes));
            let record: Vec<u64> = (0..2 + pcs as usize)
                .map(|i| word(at + i * bytes))
                .collect();
            at += record.len() * bytes;
            let trailer = count == 0 && pcs == 1 && record[2] == 0;
            slots.extend(record);
            if trailer {
                break;
            }
        }
        Self {
            slots,
            text: data[at..].to_vec(),
        }
    }

    fn write(&self, bytes: usize, big_endian: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &slot in &self.slots {
            let le = slot.to_le_bytes();
            let mut word = le[..bytes].to_vec();
            if big_endian {
                word.reverse();
            }
            out.extend(word);
        }
        out.extend(&self.text);
        out
    }
}

#[test]
fn every_slot_size_and_byte_order_parses_to_the_same_profile() {
    for (name, bytes) in [("cppbench.cpu", 8), ("go.crc32.cpu", 8), ("java.cpu", 4)] {
        let Some(file) = corpus_file(name) else {
            return;
        };
        let original = CpuProfile::read(&file.bytes, bytes, false);
        assert_eq!(
            original.write(bytes, false),
            file.bytes,
            "{name}: re-encoding is exact"
        );
        let expected = dump(&parse_legacy(&file.bytes).unwrap()).unwrap();
        let fits_32_bits = original.slots.iter().all(|&s| s <= u64::from(u32::MAX));
        for (size, big_endian) in [(4, false), (4, true), (8, false), (8, true)] {
            if size == 4 && !fits_32_bits {
                continue;
            }
            let encoded = original.write(size, big_endian);
            let profile = parse_legacy(&encoded).unwrap_or_else(|e| {
                panic!("{name} as {size}-byte slots, big endian {big_endian}: {e}")
            });
            assert_eq!(
                dump(&profile).unwrap(),
                expected,
                "{name}: {size}-byte, big endian {big_endian}"
            );
        }
    }
}

fn gperftools_error(data: &[u8]) -> String {
    match parse_legacy(data) {
        Err(e @ LegacyError::Gperftools { .. }) => e.to_string(),
        other => panic!("expected a gperftools error, got {other:?}"),
    }
}

#[test]
fn malformed_gperftools_profiles_get_errors_that_name_the_offset() {
    let Some(file) = corpus_file("cppbench.cpu") else {
        return;
    };
    let profile = CpuProfile::read(&file.bytes, 8, false);
    let records = profile.write(8, false).len() - profile.text.len();

    assert_eq!(
        gperftools_error(&file.bytes[..24]),
        "gperftools CPU profile: at offset 24 (0x18): header truncated: \
         40 bytes needed for five 64-bit slots, the file has 24"
    );

    // The first record claims more PCs than the file holds.
    let mut too_many_pcs = file.bytes.clone();
    too_many_pcs[48..56].copy_from_slice(&1_000_000u64.to_le_bytes());
    let message = gperftools_error(&too_many_pcs);
    assert!(
        message.starts_with("gperftools CPU profile: at offset 40 (0x28): record has 1000000 PCs, past the end of the file"),
        "{message}"
    );

    // Cut right before the trailer: no trailer, no maps.
    let without_trailer = &file.bytes[..records - 24];
    assert_eq!(
        gperftools_error(without_trailer),
        format!(
            "gperftools CPU profile: at offset {0} ({0:#x}): the file ends without the trailer record (0, 1, 0)",
            records - 24
        )
    );

    // Cut inside a record.
    let message = gperftools_error(&file.bytes[..records - 28]);
    assert!(
        message.contains("PCs, past the end of the file") || message.contains("record truncated"),
        "{message}"
    );
}

#[test]
fn garbage_in_the_maps_text_is_ignored_as_google_pprof_ignores_it() {
    let Some(file) = corpus_file("cppbench.cpu") else {
        return;
    };
    let profile = CpuProfile::read(&file.bytes, 8, false);
    let clean = parse_legacy(&file.bytes).unwrap();

    let mut garbage = profile.write(8, false);
    garbage.truncate(garbage.len() - profile.text.len());
    let text = String::from_utf8_lossy(&profile.text).into_owned();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "this is not a mapping");
    lines.insert(3, "\u{1}\u{2}\u{3} 0xzz-0xyy r-xp");
    lines.push("ffffffffffffffffffff-1 r-xp 0 0:0 0 /overflow");
    garbage.extend(lines.join("\n").into_bytes());
    garbage.extend([0xff, 0xfe, b'\n']);

    let parsed = parse_legacy(&garbage).unwrap();
    assert_eq!(parsed.mapping.len(), clean.mapping.len());
    assert_eq!(dump(&parsed).unwrap(), dump(&clean).unwrap());
    assert!(!clean.mapping.is_empty());
}

#[test]
fn text_formats_report_the_line_at_fault() {
    let heap = b"heap profile:    2:  200 [   2:  200] @ heapz_v2/524288\n     1:  100 [ 1: 100] @ 0x1 0x2\n     zero: x\n";
    assert_eq!(
        parse_legacy(heap).unwrap_err().to_string(),
        "heap profile: line 3: not a heap sample: zero: x"
    );
    let heap = b"heap profile: 1: 2 [ 1: 2] @ heap/1048576\n0: 5 [0: 0] @ 0x1\n";
    assert_eq!(
        parse_legacy(heap).unwrap_err().to_string(),
        "heap profile: line 2: inuse count was 0 but inuse bytes was 5"
    );
    let goroutines = b"goroutine profile: total 2\n1 @ 0x1 0x2\nnot a record\n";
    assert_eq!(
        parse_legacy(goroutines).unwrap_err().to_string(),
        "Go count profile: line 3: not a `N @ 0x…` record: not a record"
    );
}
