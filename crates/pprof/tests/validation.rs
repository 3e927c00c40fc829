//! Each kind of invalid profile is rejected with a message that names it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{
    canonical_eq, canonicalize, decode, dump, encode, validate, DecodeOptions, EncodeOptions,
    Function, Label, Line, Location, Mapping, Profile, Sample, ValueType,
};

/// A small valid profile: two sample types, one mapping, two functions, two
/// locations, two samples with labels.
fn valid() -> Profile {
    let strings = [
        "",
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "main",
        "main.go",
        "/bin/app",
        "leaf",
        "thread",
        "worker",
        "bytes",
        "size",
    ];
    Profile {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        sample: vec![
            Sample {
                location_id: vec![2, 1],
                value: vec![1, 10],
                label: vec![Label {
                    key: 9,
                    str: 10,
                    ..Label::default()
                }],
            },
            Sample {
                location_id: vec![1],
                value: vec![2, 20],
                label: vec![Label {
                    key: 12,
                    num: 64,
                    num_unit: 11,
                    ..Label::default()
                }],
            },
        ],
        mapping: vec![Mapping {
            id: 1,
            memory_start: 0x1000,
            memory_limit: 0x2000,
            filename: 7,
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
                    line: 3,
                    column: 1,
                }],
                is_folded: false,
            },
            Location {
                id: 2,
                mapping_id: 1,
                address: 0x1200,
                line: vec![Line {
                    function_id: 2,
                    line: 7,
                    column: 0,
                }],
                is_folded: true,
            },
        ],
        function: vec![
            Function {
                id: 1,
                name: 5,
                system_name: 5,
                filename: 6,
                start_line: 1,
            },
            Function {
                id: 2,
                name: 8,
                system_name: 8,
                filename: 6,
                start_line: 5,
            },
        ],
        string_table: strings.iter().map(|s| s.to_string()).collect(),
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        default_sample_type: 3,
        ..Profile::default()
    }
}

fn rejected(profile: &Profile) -> String {
    let message = validate(profile)
        .expect_err("profile must be invalid")
        .to_string();
    let bytes = encode(profile, &EncodeOptions::default());
    let decoded = decode(&bytes, &DecodeOptions::default()).expect_err("decode must reject it");
    assert_eq!(decoded.to_string(), format!("invalid profile: {message}"));
    message
}

#[test]
fn the_fixture_is_valid_and_round_trips() {
    let profile = valid();
    validate(&profile).unwrap();
    let again = decode(
        &encode(&profile, &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();
    assert_eq!(again, profile);
    assert!(dump(&profile)
        .unwrap()
        .contains("     2: 0x1200 M=1 [F] leaf main.go:7:0 s=5\n"));
}

#[test]
fn string_table_must_start_with_the_empty_string() {
    let mut p = valid();
    p.string_table[0] = "x".into();
    assert_eq!(rejected(&p), "string_table[0] is \"x\"; it must be \"\"");
    p.string_table.clear();
    assert_eq!(
        validate(&p).unwrap_err().to_string(),
        "string_table is empty; its entry 0 must be \"\""
    );
}

#[test]
fn every_string_index_must_be_in_range() {
    type Breaker = fn(&mut Profile);
    let cases: Vec<(Breaker, &str)> = vec![
        (|p| p.sample_type[1].unit = 99, "sample_type 1: unit"),
        (|p| p.sample[0].label[0].str = 13, "sample 0: label 0: str"),
        (
            |p| p.sample[1].label[0].num_unit = -1,
            "sample 1: label 0: num_unit",
        ),
        (|p| p.mapping[0].build_id = 50, "mapping 1: build_id"),
        (|p| p.function[1].filename = 40, "function 2: filename"),
        (|p| p.drop_frames = 30, "profile: drop_frames"),
        (|p| p.comment = vec![1, 77], "profile: comment 1"),
        (
            |p| {
                p.period_type = Some(ValueType {
                    r#type: 70,
                    unit: 0,
                })
            },
            "period_type: type",
        ),
        (
            |p| p.default_sample_type = 100,
            "profile: default_sample_type",
        ),
        (|p| p.doc_url = 14, "profile: doc_url"),
    ];
    for (break_it, place) in cases {
        let mut p = valid();
        break_it(&mut p);
        let message = rejected(&p);
        assert!(
            message.starts_with(&format!("{place}: string index ")),
            "{message}"
        );
        assert!(
            message.ends_with("is out of range (string_table has 13 entries)"),
            "{message}"
        );
    }
}

#[test]
fn ids_must_be_non_zero_and_unique() {
    let mut p = valid();
    p.function[1].id = 0;
    assert_eq!(
        rejected(&p),
        "function at index 1 has id 0; ids must be non-zero"
    );

    let mut p = valid();
    p.location[1].id = 1;
    assert_eq!(
        rejected(&p),
        "location id 1 is used twice, at indexes 0 and 1"
    );

    let mut p = valid();
    p.mapping.push(p.mapping[0]);
    assert_eq!(
        rejected(&p),
        "mapping id 1 is used twice, at indexes 0 and 1"
    );
}

#[test]
fn every_referenced_id_must_resolve() {
    let mut p = valid();
    p.location[1].line.push(Line {
        function_id: 99,
        line: 1,
        column: 0,
    });
    assert_eq!(
        rejected(&p),
        "location 2: line 1 references function 99, which does not exist"
    );

    let mut p = valid();
    p.location[0].line[0].function_id = 0;
    assert_eq!(
        rejected(&p),
        "location 1: line 0 has no function (function_id 0)"
    );

    let mut p = valid();
    p.location[0].mapping_id = 3;
    assert_eq!(
        rejected(&p),
        "location 1 references mapping 3, which does not exist"
    );

    let mut p = valid();
    p.sample[1].location_id.push(17);
    assert_eq!(
        rejected(&p),
        "sample 1: location_id[1] references location 17, which does not exist"
    );
}

#[test]
fn every_sample_has_one_value_per_sample_type() {
    let mut p = valid();
    p.sample[1].value.push(5);
    assert_eq!(
        rejected(&p),
        "sample 1 has 3 values, but the profile has 2 sample types"
    );
}

#[test]
fn a_label_has_str_or_num_and_a_unit_only_with_num() {
    let mut p = valid();
    p.sample[0].label[0].num = 4;
    assert_eq!(rejected(&p), "sample 0: label 0 has both str and num");

    let mut p = valid();
    p.sample[0].label[0].num_unit = 11;
    assert_eq!(
        rejected(&p),
        "sample 0: label 0 has num_unit on a str label"
    );
}

#[test]
fn a_mapping_limit_is_not_below_its_start() {
    let mut p = valid();
    p.mapping[0].memory_limit = 0x800;
    assert_eq!(
        rejected(&p),
        "mapping 1: memory_limit 0x800 is below memory_start 0x1000"
    );
}

#[test]
fn protobuf_errors_and_empty_input_are_reported() {
    assert_eq!(
        decode(&[], &DecodeOptions::default())
            .unwrap_err()
            .to_string(),
        "input is empty"
    );
    let err = decode(&[0x0a, 0x05, 0x01], &DecodeOptions::default()).unwrap_err();
    assert!(err.to_string().starts_with("protobuf: "), "{err}");
    let err = decode(&[0x1f, 0x8b, 0x08, 0x00], &DecodeOptions::default()).unwrap_err();
    assert!(err.to_string().starts_with("gzip: "), "{err}");
}

#[test]
fn canonical_form_ignores_layout_but_not_content() {
    let original = valid();

    // The same profile, laid out differently: strings reordered and
    // duplicated, ids renumbered, a duplicate function, an unreferenced
    // location, labels reordered, one sample split in two.
    let mut relaid = valid();
    relaid.string_table.push("leaf".into()); // 13, a duplicate of 8
    relaid.function.push(Function {
        id: 7,
        name: 13,
        system_name: 8,
        filename: 6,
        start_line: 5,
    });
    relaid.location[1].line[0].function_id = 7;
    relaid.location.push(Location {
        id: 9,
        address: 0xdead,
        ..Location::default()
    });
    for location in &mut relaid.location {
        location.id *= 10;
    }
    for sample in &mut relaid.sample {
        for id in &mut sample.location_id {
            *id *= 10;
        }
    }
    relaid.sample[0].label.insert(
        0,
        Label {
            key: 12,
            num: 1,
            ..Label::default()
        },
    );
    relaid.sample[0].label.push(Label {
        key: 9,
        ..Label::default()
    }); // key-only: dropped
    relaid.sample[1].value = vec![1, 5];
    let mut rest = relaid.sample[1].clone();
    rest.value = vec![1, 15];
    relaid.sample.push(rest);
    let mut expected = original.clone();
    expected.sample[0].label.push(Label {
        key: 12,
        num: 1,
        ..Label::default()
    });

    assert_eq!(
        profbridge_pprof::canonical_diff(&expected, &relaid).unwrap(),
        None
    );
    assert!(canonical_eq(&expected, &relaid).unwrap());
    assert_eq!(
        canonicalize(&expected).unwrap(),
        canonicalize(&relaid).unwrap()
    );
    let canonical = canonicalize(&relaid).unwrap();
    assert_eq!(canonical.function.len(), 2);
    assert_eq!(canonical.location.len(), 2);
    assert_eq!(canonical.sample.len(), 2);
    assert_eq!(canonical.sample[1].value, vec![2, 20]);

    let mut changed = valid();
    changed.location[0].line[0].column = 2;
    assert!(!canonical_eq(&original, &changed).unwrap());
    let diff = profbridge_pprof::canonical_diff(&original, &changed)
        .unwrap()
        .unwrap();
    assert!(diff.contains("main main.go:3:2 s=1"), "{diff}");

    let mut reordered_lines = valid();
    reordered_lines.location[0].line.insert(
        0,
        Line {
            function_id: 2,
            line: 1,
            column: 0,
        },
    );
    let mut swapped = reordered_lines.clone();
    swapped.location[0].line.swap(0, 1);
    assert!(
        !canonical_eq(&reordered_lines, &swapped).unwrap(),
        "line order is content"
    );
}
