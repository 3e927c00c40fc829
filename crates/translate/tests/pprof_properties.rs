//! Property: every valid pprof profile survives pprof → OTLP → pprof,
//! canonically equal. Profiles are built from a proptest-chosen seed and
//! size, and include what the mapping must carry: several sample types with
//! the default not last, inline frames, multi-valued labels with units,
//! is_folded, both kinds of build id, comments, drop/keep frames, doc_url,
//! frame types, links and timestamps.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;

use profbridge_pprof::{
    canonical_diff, decode_packed_keeping_raw, encode, validate, Compression, DecodeOptions,
    EncodeOptions, Function, Label, Line, Location, Mapping, Profile, Sample, StringInterner,
    ValueType,
};
use profbridge_testkit::SeededRng;
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, PprofInput, PprofToOtlp, ToOtlpOptions, ToPprofOptions,
};

const TYPE_NAMES: [&str; 6] = [
    "samples",
    "cpu",
    "alloc_objects",
    "alloc_space",
    "inuse_space",
    "wall",
];
const FRAME_TYPES: [&str; 6] = ["native", "kernel", "cpython", "jvm", "go", "odd,type*%"];

struct Gen {
    rng: SeededRng,
    strings: StringInterner,
}

impl Gen {
    fn chance(&mut self, percent: usize) -> bool {
        self.rng.below(100) < percent
    }

    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.rng.below(options.len())]
    }

    fn word(&mut self, prefix: &str) -> i64 {
        let n = self.rng.below(50);
        self.strings.intern(&format!("{prefix}{n}"))
    }

    fn text(&mut self, s: &str) -> i64 {
        self.strings.intern(s)
    }

    fn hex(&mut self, bytes: usize) -> String {
        (0..bytes)
            .map(|_| format!("{:02x}", self.rng.below(256)))
            .collect()
    }

    /// The run-length frame-type encoding, written independently of the
    /// library's.
    fn frame_types_label(types: &[Option<&str>]) -> Option<String> {
        if types.iter().all(Option::is_none) {
            return None;
        }
        let escape = |t: &str| {
            t.replace('%', "%25")
                .replace(',', "%2C")
                .replace('*', "%2A")
        };
        let mut items = Vec::new();
        let mut i = 0;
        while i < types.len() {
            let mut j = i;
            while j < types.len() && types[j] == types[i] {
                j += 1;
            }
            let name = types[i].map(escape).unwrap_or_default();
            items.push(if j - i == 1 {
                name
            } else {
                format!("{name}*{}", j - i)
            });
            i = j;
        }
        Some(items.join(","))
    }
}

fn random_pprof(seed: u64, size: usize) -> Profile {
    let mut g = Gen {
        rng: SeededRng::new(seed),
        strings: StringInterner::new(),
    };
    let mut p = Profile::default();

    let types = g.rng.below(4) + usize::from(g.chance(90));
    for _ in 0..types {
        let name = g.pick(&TYPE_NAMES);
        let unit = g.pick(&["count", "nanoseconds", "bytes"]);
        p.sample_type.push(ValueType {
            r#type: g.text(name),
            unit: g.text(unit),
        });
    }
    p.default_sample_type = match g.rng.below(4) {
        0 => 0,
        1 => g.text("not-a-type"),
        _ if types > 0 => {
            let i = g.rng.below(types);
            p.sample_type[i].r#type
        }
        _ => 0,
    };
    if g.chance(80) {
        p.period_type = Some(ValueType {
            r#type: g.word("period"),
            unit: g.word("unit"),
        });
    }
    p.period = g.rng.next_u64() as i64 % 1_000_000;
    p.time_nanos = g.rng.next_u64() as i64;
    p.duration_nanos = g.rng.next_u64() as i64 % 1_000_000_000_000;
    for _ in 0..g.rng.below(3) {
        let comment = if g.chance(20) { 0 } else { g.word("comment ") };
        p.comment.push(comment);
    }
    if g.chance(50) {
        p.drop_frames = g.word("drop.*");
    }
    if g.chance(30) {
        p.keep_frames = g.word("keep.*");
    }
    if g.chance(30) {
        p.doc_url = g.word("https://example.com/doc");
    }

    let id_step = 1 + g.rng.below(3) as u64;
    let mappings = g.rng.below(4);
    for i in 0..mappings {
        let start = g.rng.below(1 << 20) as u64 * 4096;
        let build_id = match g.rng.below(4) {
            0 => 0,
            1 => {
                let hex = g.hex(20);
                g.text(&hex)
            }
            2 => g.text("Bz9xq-K_3a/c1lOpTr5mW_yx2/AbC_dEf-1"),
            _ => g.word("weird id "),
        };
        p.mapping.push(Mapping {
            id: (i as u64 + 1) * id_step,
            memory_start: start,
            memory_limit: start + g.rng.below(1 << 20) as u64,
            file_offset: g.rng.below(1 << 16) as u64,
            filename: g.word("/lib/object"),
            build_id,
            has_functions: g.chance(50),
            has_filenames: g.chance(50),
            has_line_numbers: g.chance(50),
            has_inline_frames: g.chance(50),
        });
    }
    let functions = 1 + g.rng.below(size + 1);
    for i in 0..functions {
        p.function.push(Function {
            id: i as u64 * 7 + 3,
            name: g.word("fn_"),
            system_name: g.word("_Z3fn"),
            filename: g.word("src/file"),
            start_line: g.rng.below(500) as i64,
        });
    }
    let locations = 1 + g.rng.below(size * 2 + 1);
    for i in 0..locations {
        let mapping_id = if mappings > 0 && g.chance(80) {
            p.mapping[g.rng.below(mappings)].id
        } else {
            0
        };
        let lines = (0..g.rng.below(4))
            .map(|_| Line {
                function_id: p.function[g.rng.below(functions)].id,
                line: g.rng.below(1000) as i64,
                column: g.rng.below(80) as i64,
            })
            .collect();
        p.location.push(Location {
            id: 1000 + i as u64 * 3,
            mapping_id,
            address: g.rng.next_u64() % (1 << 40),
            line: lines,
            is_folded: g.chance(10),
        });
    }

    // Label keys keep one kind: str, or num in one unit.
    let str_keys = ["thread", "request", "span name"];
    let num_keys = [
        ("bytes", "bytes"),
        ("alignment", ""),
        ("latency", "nanoseconds"),
    ];
    let samples = g.rng.below(size * 3 + 1);
    for _ in 0..samples {
        let depth = g.rng.below(8);
        let location_id: Vec<u64> = (0..depth)
            .map(|_| p.location[g.rng.below(locations)].id)
            .collect();
        let value = (0..types).map(|_| g.rng.next_u64() as i64 % 1000).collect();
        let mut label = Vec::new();
        for _ in 0..g.rng.below(4) {
            if g.chance(50) {
                let key = g.pick(&str_keys);
                label.push(Label {
                    key: g.text(key),
                    str: g.word("v"),
                    ..Label::default()
                });
            } else {
                let (key, unit) = num_keys[g.rng.below(num_keys.len())];
                label.push(Label {
                    key: g.text(key),
                    num: g.rng.below(5000) as i64 - 100,
                    num_unit: g.text(unit),
                    ..Label::default()
                });
            }
        }
        if depth > 0 && g.chance(30) {
            let types: Vec<Option<&str>> = (0..depth)
                .map(|_| {
                    if g.chance(70) {
                        Some(g.pick(&FRAME_TYPES))
                    } else {
                        None
                    }
                })
                .collect();
            if let Some(value) = Gen::frame_types_label(&types) {
                label.push(Label {
                    key: g.text("profile.frame.types"),
                    str: g.text(&value),
                    ..Label::default()
                });
            }
        }
        if g.chance(15) {
            let (trace, span) = (g.hex(16), g.hex(8));
            label.push(Label {
                key: g.text("trace_id"),
                str: g.text(&trace),
                ..Label::default()
            });
            label.push(Label {
                key: g.text("span_id"),
                str: g.text(&span),
                ..Label::default()
            });
        }
        if g.chance(20) {
            let timestamp = 1_700_000_000_000_000_000 + g.rng.below(5) as i64;
            label.push(Label {
                key: g.text("timestamp_ns"),
                num: timestamp,
                ..Label::default()
            });
        }
        p.sample.push(Sample {
            location_id,
            value,
            label,
        });
    }
    p.string_table = g.strings.into_table();
    p
}

fn round_trip(original: &Profile) -> Profile {
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: original,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert!(converted.rejected.is_empty(), "{:?}", converted.rejected);
    let back = otlp_to_pprof(&converted.request, &ToPprofOptions::default()).unwrap();
    assert!(back.rejected.is_empty(), "{:?}", back.rejected);
    assert_eq!(back.profiles.len(), 1);
    back.profiles.into_iter().next().unwrap().profile
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn pprof_to_otlp_to_pprof_is_canonically_equal(seed in any::<u64>(), size in 0usize..40) {
        let original = random_pprof(seed, size);
        validate(&original).unwrap();
        let back = round_trip(&original);
        validate(&back).unwrap();
        prop_assert_eq!(canonical_diff(&original, &back).unwrap(), None);
        // A pprof has nothing pprof cannot hold: no reserved string.
        prop_assert!(
            back.string_table.iter().all(|s| !s.starts_with("profbridge.otlp.v1:")),
            "a reserved string was written for a plain pprof"
        );
        // And it is its own fixed point: a second trip gives the same bytes.
        let again = round_trip(&back);
        prop_assert_eq!(prost::Message::encode_to_vec(&again), prost::Message::encode_to_vec(&back));
    }

    /// A profile whose samples stay packed in its protobuf converts to the
    /// request its prost-decoded form converts to, byte for byte.
    #[test]
    fn a_packed_profile_converts_as_its_decoded_form_does(seed in any::<u64>(), size in 0usize..40) {
        let profile = random_pprof(seed, size);
        let bytes = prost::Message::encode_to_vec(&profile);
        let (packed, raw) = decode_packed_keeping_raw(bytes.into(), &DecodeOptions::default()).unwrap();
        prop_assert!(raw.is_empty());
        prop_assert_eq!(packed.sample_bytes().len(), profile.sample.len());
        let request = |input: PprofToOtlp| {
            assert!(input.rejected.is_empty(), "{:?}", input.rejected);
            prost::Message::encode_to_vec(&input.request)
        };
        let options = ToOtlpOptions {
            original_payload: true,
            ..ToOtlpOptions::default()
        };
        let from_packed = request(pprof_to_otlp(
            &[PprofInput { profile: &packed, resource_attributes: &[], scope: None, original_payload: Some(b"x") }],
            &options,
        ));
        let from_decoded = request(pprof_to_otlp(
            &[PprofInput { profile: &profile, resource_attributes: &[], scope: None, original_payload: Some(b"x") }],
            &options,
        ));
        prop_assert!(from_packed == from_decoded, "the requests differ");
    }

    /// pprof's hand-written encoder writes exactly prost's bytes.
    #[test]
    fn the_hand_written_encoder_writes_what_prost_writes(seed in any::<u64>(), size in 0usize..40) {
        let profile = random_pprof(seed, size);
        let raw = encode(&profile, &EncodeOptions { compression: Compression::None });
        prop_assert_eq!(raw, prost::Message::encode_to_vec(&profile));
    }
}

#[test]
fn the_generator_covers_what_the_mapping_must_carry() {
    let profiles: Vec<Profile> = (0..200).map(|seed| random_pprof(seed, 20)).collect();
    let text = |p: &Profile, i: i64| p.string_table[i as usize].clone();
    let any = |f: &dyn Fn(&Profile) -> bool| profiles.iter().any(f);
    assert!(any(&|p| p.sample_type.len() >= 2
        && p.default_sample_type != 0
        && p.sample_type
            .iter()
            .position(|t| t.r#type == p.default_sample_type)
            < Some(p.sample_type.len() - 1)));
    assert!(any(&|p| p.location.iter().any(|l| l.line.len() >= 2)));
    assert!(any(&|p| p.location.iter().any(|l| l.is_folded)));
    assert!(any(&|p| p
        .mapping
        .iter()
        .any(|m| text(p, m.build_id).contains('/'))));
    assert!(any(&|p| p
        .mapping
        .iter()
        .any(|m| text(p, m.build_id).len() == 40)));
    assert!(any(&|p| !p.comment.is_empty()
        && p.drop_frames != 0
        && p.keep_frames != 0));
    assert!(any(&|p| p.sample.iter().any(|s| {
        let units: Vec<&Label> = s
            .label
            .iter()
            .filter(|l| l.num_unit != 0 && !text(p, l.num_unit).is_empty())
            .collect();
        units.len() >= 2 && units.iter().all(|l| l.key == units[0].key)
    })));
}

#[test]
fn a_key_with_str_and_num_labels_is_rejected_with_its_sample() {
    let mut p = random_pprof(7, 5);
    let key = p.string_table.len() as i64;
    p.string_table.push("mixed".into());
    p.string_table.push("text".into());
    p.sample.push(Sample {
        location_id: vec![],
        value: vec![0; p.sample_type.len()],
        label: vec![
            Label {
                key,
                str: key + 1,
                ..Label::default()
            },
            Label {
                key,
                num: 3,
                ..Label::default()
            },
        ],
    });
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: &p,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert_eq!(converted.rejected.len(), 1);
    assert_eq!(
        converted.rejected[0].1.to_string(),
        format!(
            "sample {}: label \"mixed\" has both str and num values; OTLP attributes hold one type",
            p.sample.len() - 1
        )
    );
}
