//! Folded stacks: parsing, writing, inline expansion, errors with line
//! numbers, a round trip through large.cpu, and robustness to broken input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, HashMap};

use profbridge_pprof::{
    decode, parse_folded, sample_type_index, validate, write_folded, DecodeOptions, FoldedError,
    Function, Line, Location, Profile, Sample, ValidationError, ValueType,
    DEFAULT_FOLDED_SAMPLE_TYPE,
};
use profbridge_testkit::{corpus_file, SeededRng};

type StackTotals = BTreeMap<Vec<String>, i64>;

const HAND_WRITTEN: &str = "\
main;std::vector<int>::push_back(int const&);operator new 7
main;compute 3\r
\r
main;compute;leaf 2
  \t
main;std::vector<int>::push_back(int const&);operator new 5
main;compute 1\t
";

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[usize::try_from(index).unwrap()]
}

/// Root-first function names of each sample, summed per stack, zeros dropped.
/// Written independently of the library: locations without lines or functions
/// without a name are named by address.
fn pprof_totals(profile: &Profile, sample_type: usize) -> StackTotals {
    let functions: HashMap<u64, &Function> = profile.function.iter().map(|f| (f.id, f)).collect();
    let locations: HashMap<u64, &Location> = profile.location.iter().map(|l| (l.id, l)).collect();
    let mut totals = StackTotals::new();
    for sample in &profile.sample {
        let mut leaf_first = Vec::new();
        for id in &sample.location_id {
            let location = locations[id];
            if location.line.is_empty() {
                leaf_first.push(format!("0x{:x}", location.address));
            }
            for line in &location.line {
                let name = text(profile, functions[&line.function_id].name);
                leaf_first.push(if name.is_empty() {
                    format!("0x{:x}", location.address)
                } else {
                    name.to_owned()
                });
            }
        }
        if leaf_first.is_empty() {
            continue;
        }
        leaf_first.reverse();
        *totals.entry(leaf_first).or_default() += sample.value[sample_type];
    }
    totals.retain(|_, total| *total != 0);
    totals
}

fn folded_totals(folded: &str) -> StackTotals {
    let mut totals = StackTotals::new();
    for line in folded.lines() {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        let frames = stack.split(';').map(str::to_owned).collect();
        *totals.entry(frames).or_default() += value.parse::<i64>().unwrap();
    }
    totals
}

#[test]
fn parses_hand_written_text() {
    let profile = parse_folded(HAND_WRITTEN.as_bytes(), DEFAULT_FOLDED_SAMPLE_TYPE).unwrap();
    validate(&profile).unwrap();

    assert_eq!(profile.sample_type.len(), 1);
    assert_eq!(text(&profile, profile.sample_type[0].r#type), "samples");
    assert_eq!(text(&profile, profile.sample_type[0].unit), "count");
    assert_eq!(profile.period_type, Some(profile.sample_type[0]));
    assert_eq!(profile.period, 1);

    let names: Vec<&str> = profile
        .function
        .iter()
        .map(|f| text(&profile, f.name))
        .collect();
    assert_eq!(
        names,
        [
            "main",
            "std::vector<int>::push_back(int const&)",
            "operator new",
            "compute",
            "leaf"
        ]
    );
    for (position, function) in profile.function.iter().enumerate() {
        assert_eq!(function.id, position as u64 + 1);
        assert_eq!(function.system_name, function.name);
    }
    for location in &profile.location {
        assert_eq!((location.mapping_id, location.address), (0, 0));
        assert_eq!(location.line.len(), 1);
        assert_eq!(location.line[0].function_id, location.id);
    }

    let samples: Vec<(&[u64], &[i64])> = profile
        .sample
        .iter()
        .map(|s| (s.location_id.as_slice(), s.value.as_slice()))
        .collect();
    assert_eq!(
        samples,
        [
            (&[3, 2, 1][..], &[12][..]),
            (&[4, 1][..], &[4][..]),
            (&[5, 4, 1][..], &[2][..]),
        ]
    );
}

#[test]
fn parses_with_a_custom_sample_type_and_finds_it_by_name() {
    let profile = parse_folded(b"a;b 10\n", ("cpu", "nanoseconds")).unwrap();
    assert_eq!(text(&profile, profile.sample_type[0].unit), "nanoseconds");
    assert_eq!(sample_type_index(&profile, "cpu"), Some(0));
    assert_eq!(sample_type_index(&profile, "samples"), None);
    assert_eq!(write_folded(&profile, 0).unwrap(), "a;b 10\n");
}

#[test]
fn empty_input_is_a_valid_profile_without_samples() {
    for input in ["", "\n", "\r\n\r\n", "  \n\t\n"] {
        let profile = parse_folded(input.as_bytes(), DEFAULT_FOLDED_SAMPLE_TYPE).unwrap();
        validate(&profile).unwrap();
        assert!(profile.sample.is_empty());
        assert_eq!(write_folded(&profile, 0).unwrap(), "");
    }
}

#[test]
fn malformed_lines_are_reported_with_their_number() {
    let cases: [(&[u8], FoldedError); 9] = [
        (b"a;b 1\nc;d\n", FoldedError::MissingValue { line: 2 }),
        (b"a;b 1\r\n\r\n  7\n", FoldedError::NoFrames { line: 3 }),
        (b"a;;b 3", FoldedError::EmptyFrame { line: 1, frame: 2 }),
        (b"x 1\n;a 3", FoldedError::EmptyFrame { line: 2, frame: 1 }),
        (b"a;b; 3", FoldedError::EmptyFrame { line: 1, frame: 3 }),
        (b"a; \t;b 3", FoldedError::EmptyFrame { line: 1, frame: 2 }),
        (b"a 1\n\xff;b 3\n", FoldedError::InvalidUtf8 { line: 2 }),
        (
            b"a 9223372036854775807\na 1\n",
            FoldedError::TotalOverflow { line: 2 },
        ),
        (
            b"a 1\nb 2\nc 2.5\n",
            FoldedError::InvalidValue {
                line: 3,
                value: "2.5".to_owned(),
                source: "2.5".parse::<i64>().unwrap_err(),
            },
        ),
    ];
    for (input, expected) in cases {
        let error = parse_folded(input, DEFAULT_FOLDED_SAMPLE_TYPE).unwrap_err();
        assert_eq!(error, expected, "{}", String::from_utf8_lossy(input));
    }
    let error = parse_folded(b"a;b x", DEFAULT_FOLDED_SAMPLE_TYPE).unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 1: value \"x\" is not a 64-bit integer: invalid digit found in string"
    );
    let error = parse_folded(b"a;b 99999999999999999999", DEFAULT_FOLDED_SAMPLE_TYPE);
    assert!(matches!(
        error,
        Err(FoldedError::InvalidValue { line: 1, .. })
    ));
}

/// Functions 1 main, 2 inlined, 3 leaf, 4 unnamed; location 1 is `inlined`
/// inlined into `main`, 2 is `leaf`, 3 has no lines, 4 is the unnamed one.
fn inline_profile(samples: Vec<(Vec<u64>, i64)>) -> Profile {
    let strings = ["", "samples", "count", "main", "inlined", "leaf"];
    let function = |id: u64, name: i64| Function {
        id,
        name,
        system_name: name,
        ..Function::default()
    };
    let location = |id: u64, address: u64, functions: &[u64]| Location {
        id,
        address,
        line: functions
            .iter()
            .map(|&function_id| Line {
                function_id,
                ..Line::default()
            })
            .collect(),
        ..Location::default()
    };
    Profile {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        sample: samples
            .into_iter()
            .map(|(location_id, value)| Sample {
                location_id,
                value: vec![value],
                ..Sample::default()
            })
            .collect(),
        function: vec![
            function(1, 3),
            function(2, 4),
            function(3, 5),
            function(4, 0),
        ],
        location: vec![
            location(1, 0x10, &[2, 1]),
            location(2, 0x20, &[3]),
            location(3, 0xbeef, &[]),
            location(4, 0x40, &[4]),
        ],
        string_table: strings.iter().map(|&s| s.to_owned()).collect(),
        ..Profile::default()
    }
}

#[test]
fn writes_inline_frames_root_first() {
    let profile = inline_profile(vec![
        (vec![2, 1], 5),
        (vec![3, 1], 2),
        (vec![2, 1], 3),
        (vec![1], 0),
        (vec![4, 1], 4),
        (vec![], 9),
    ]);
    let folded = write_folded(&profile, 0).unwrap();
    assert_eq!(
        folded,
        "main;inlined;0x40 4\nmain;inlined;0xbeef 2\nmain;inlined;leaf 8\n"
    );
    assert_eq!(folded_totals(&folded), pprof_totals(&profile, 0));

    let reparsed = parse_folded(folded.as_bytes(), DEFAULT_FOLDED_SAMPLE_TYPE).unwrap();
    assert_eq!(write_folded(&reparsed, 0).unwrap(), folded);
}

#[test]
fn frame_names_that_would_break_the_format_are_replaced() {
    let mut profile = inline_profile(vec![(vec![2, 1], 1)]);
    profile.string_table[5] = "a;b\nc\r".to_owned();
    assert_eq!(
        write_folded(&profile, 0).unwrap(),
        "main;inlined;a_b_c_ 1\n"
    );
    profile.string_table[5] = " \t".to_owned();
    assert_eq!(write_folded(&profile, 0).unwrap(), "main;inlined;0x20 1\n");
}

#[test]
fn write_rejects_bad_sample_types_and_invalid_profiles() {
    let profile = inline_profile(vec![(vec![2, 1], 1)]);
    assert_eq!(
        write_folded(&profile, 1).unwrap_err(),
        FoldedError::SampleTypeOutOfRange { index: 1, count: 1 }
    );
    let broken = inline_profile(vec![(vec![2, 9], 1)]);
    assert_eq!(
        write_folded(&broken, 0).unwrap_err(),
        FoldedError::InvalidProfile(ValidationError::MissingLocation {
            sample: 0,
            position: 1,
            location: 9
        })
    );
}

#[test]
fn write_fails_only_when_a_stack_total_does_not_fit() {
    let fits = inline_profile(vec![
        (vec![2, 1], i64::MAX),
        (vec![2, 1], 1),
        (vec![2, 1], -1),
    ]);
    assert_eq!(
        write_folded(&fits, 0).unwrap(),
        format!("main;inlined;leaf {}\n", i64::MAX)
    );
    let overflows = inline_profile(vec![(vec![2, 1], i64::MAX), (vec![2, 1], 1)]);
    assert_eq!(
        write_folded(&overflows, 0).unwrap_err(),
        FoldedError::StackTotalOverflow {
            stack: "main;inlined;leaf".to_owned()
        }
    );
}

#[test]
fn large_cpu_round_trips_with_the_same_totals_per_stack() {
    let Some(file) = corpus_file("large.cpu") else {
        return;
    };
    let profile = decode(&file.bytes, &DecodeOptions::default()).unwrap();
    for name in ["samples", "cpu"] {
        let index = sample_type_index(&profile, name).unwrap();
        let expected = pprof_totals(&profile, index);
        assert!(expected.len() > 100, "{name}: too few stacks to be a test");

        let folded = write_folded(&profile, index).unwrap();
        assert_eq!(folded_totals(&folded), expected, "{name}: folded text");

        let reparsed = parse_folded(folded.as_bytes(), ("x", "y")).unwrap();
        validate(&reparsed).unwrap();
        assert_eq!(pprof_totals(&reparsed, 0), expected, "{name}: reparsed");
        assert_eq!(reparsed.sample.len(), expected.len());
        assert_eq!(write_folded(&reparsed, 0).unwrap(), folded);
    }
}

/// Whether `input` parses. What parses is valid, and writing it is stable:
/// the text written from it reads back to a profile that writes the same text
/// and has the same total.
fn check_parse(input: &[u8]) -> bool {
    let Ok(profile) = parse_folded(input, DEFAULT_FOLDED_SAMPLE_TYPE) else {
        return false;
    };
    validate(&profile).unwrap();
    let folded = write_folded(&profile, 0).unwrap();
    let reparsed = parse_folded(folded.as_bytes(), DEFAULT_FOLDED_SAMPLE_TYPE).unwrap();
    assert_eq!(write_folded(&reparsed, 0).unwrap(), folded);
    let total = |p: &Profile| {
        p.sample
            .iter()
            .map(|s| i128::from(s.value[0]))
            .sum::<i128>()
    };
    assert_eq!(total(&reparsed), total(&profile));
    true
}

#[test]
fn truncated_and_mutated_text_parses_or_fails_cleanly() {
    let input = HAND_WRITTEN.as_bytes();
    for cut in 0..=input.len() {
        check_parse(&input[..cut]);
    }
    let mutations = 5_000;
    let parsed = (0..mutations)
        .filter(|&seed| check_parse(&SeededRng::new(seed).mutate(input)))
        .count();
    // Both outcomes must be common, or the mutations test only one path.
    assert!(
        (mutations / 10..mutations * 9 / 10).contains(&(parsed as u64)),
        "{parsed} parsed"
    );
}
