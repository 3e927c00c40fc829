//! Property: every valid OTLP request survives OTLP → pprof → OTLP, equal
//! under the OTLP canonical equality. Requests are built from a
//! proptest-chosen seed and size, and include mixed frame types,
//! timestamps-only samples, links, profiles in one scope with different
//! sample sets, bool/double/bytes/array/map attributes, and two resources;
//! mappings with several build ids of every kind and attributes of every
//! type, locations and profiles with such attributes, and schema URLs, all
//! of which pprof carries only in its reserved string.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use prost::Message;

use profbridge_testkit::SeededRng;
use profbridge_translate::canonical::canonicalize;
use profbridge_translate::otlp::{
    any_value, array_value, bool_value, int_value, key_value, string_value, AnyValue,
    ExportProfilesServiceRequest, Function, InstrumentationScope, KeyValueList, Line, Link,
    Location, Mapping, Profile, Resource, ResourceProfiles, Sample, ScopeProfiles, ValueType,
};
use profbridge_translate::{
    otlp_to_pprof, otlp_to_unassembled_pprof, pprof_to_otlp, validate_request, DictionaryBuilder,
    PprofConverter, PprofInput, ToOtlpOptions, ToPprofOptions,
};

const FRAME_TYPES: [&str; 6] = ["native", "kernel", "cpython", "jvm", "go", "dotnet"];

struct Gen {
    rng: SeededRng,
    d: DictionaryBuilder,
}

impl Gen {
    fn chance(&mut self, percent: usize) -> bool {
        self.rng.below(100) < percent
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.rng.next_u64() as u8).collect()
    }

    fn any_value(&mut self, depth: usize) -> AnyValue {
        let kind = self.rng.below(if depth > 1 { 7 } else { 9 });
        let value = match kind {
            0 => any_value::Value::StringValue(format!("s{}", self.rng.below(20))),
            1 => any_value::Value::StringValue(String::new()),
            2 => any_value::Value::IntValue(self.rng.next_u64() as i64 % 1000 - 100),
            3 => any_value::Value::BoolValue(self.chance(50)),
            4 => any_value::Value::DoubleValue(match self.rng.below(5) {
                0 => f64::NAN,
                1 => f64::NEG_INFINITY,
                2 => -0.0,
                _ => (self.rng.next_u64() % 100_000) as f64 / 7.0,
            }),
            5 => {
                let n = self.rng.below(5);
                any_value::Value::BytesValue(self.bytes(n))
            }
            6 => any_value::Value::IntValue(0),
            7 => {
                let n = self.rng.below(4);
                let homogeneous = self.chance(50);
                let values = (0..n)
                    .map(|i| {
                        if homogeneous {
                            string_value(format!("e{i}"))
                        } else {
                            self.any_value(depth + 1)
                        }
                    })
                    .collect();
                return array_value(values);
            }
            _ => any_value::Value::KvlistValue(KeyValueList {
                values: (0..self.rng.below(3))
                    .map(|i| key_value(format!("k{i}"), self.any_value(depth + 1)))
                    .collect(),
            }),
        };
        AnyValue { value: Some(value) }
    }

    fn attributes(&mut self, count: usize) -> Vec<i32> {
        let mut keys: Vec<String> = (0..count)
            .map(|_| format!("attr.{}", self.rng.below(8)))
            .collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|key| {
                let value = if self.chance(30) {
                    array_value(
                        (0..2 + self.rng.below(2))
                            .map(|i| int_value(i as i64 + 1))
                            .collect(),
                    )
                } else {
                    self.any_value(0)
                };
                let unit = if self.chance(30) { "ms" } else { "" };
                self.d.attribute(&key, value, unit)
            })
            .collect()
    }

    fn location(&mut self, mappings: &[i32], functions: &[i32]) -> i32 {
        let mut attribute_indices = Vec::new();
        if self.chance(70) {
            let frame_type = FRAME_TYPES[self.rng.below(FRAME_TYPES.len())];
            attribute_indices.push(self.d.attribute(
                "profile.frame.type",
                string_value(frame_type),
                "",
            ));
        }
        if self.chance(10) {
            let folded = bool_value(self.chance(80));
            attribute_indices.push(self.d.attribute("pprof.location.is_folded", folded, ""));
        }
        if self.chance(30) {
            let count = 1 + self.rng.below(3);
            attribute_indices.extend(self.attributes(count));
        }
        let lines = (0..self.rng.below(3))
            .map(|_| Line {
                function_index: functions[self.rng.below(functions.len())],
                line: self.rng.below(900) as i64,
                column: self.rng.below(60) as i64,
            })
            .collect();
        let location = Location {
            mapping_index: mappings[self.rng.below(mappings.len())],
            address: self.rng.next_u64() % (1 << 44),
            lines,
            attribute_indices,
        };
        self.d.location(location)
    }

    fn mapping(&mut self) -> i32 {
        let mut attribute_indices = Vec::new();
        // Any set of build ids, of every kind, each a string or (several
        // ids of one kind) an array of strings; the ids need not look like
        // their kind.
        for key in [
            "process.executable.build_id.gnu",
            "process.executable.build_id.go",
            "process.executable.build_id.htlhash",
        ] {
            if !self.chance(50) {
                continue;
            }
            let several = self.chance(20);
            let rng = &mut self.rng;
            let mut id = || match rng.below(3) {
                0 => format!("deadbeef{:08x}", rng.below(1 << 30)),
                1 => format!("abc_DEF/ghi-{}", rng.below(1000)),
                _ => format!("{:032x}", rng.next_u64()),
            };
            let value = if several {
                let ids = vec![string_value(id()), string_value(id())];
                array_value(ids)
            } else {
                string_value(id())
            };
            attribute_indices.push(self.d.attribute(key, value, ""));
        }
        for flag in [
            "pprof.mapping.has_functions",
            "pprof.mapping.has_line_numbers",
        ] {
            if self.chance(50) {
                let set = self.chance(90);
                attribute_indices.push(self.d.attribute(flag, bool_value(set), ""));
            }
        }
        if self.chance(40) {
            let count = 1 + self.rng.below(3);
            attribute_indices.extend(self.attributes(count));
        }
        let start = self.rng.below(1 << 20) as u64 * 4096;
        let filename_strindex = self
            .d
            .string(&format!("/usr/lib/lib{}.so", self.rng.below(9)));
        self.d.mapping(Mapping {
            memory_start: start,
            memory_limit: start + 4096 * (1 + self.rng.below(100) as u64),
            file_offset: 0,
            filename_strindex,
            attribute_indices,
        })
    }

    fn sample_type(&mut self, name: &str, unit: &str) -> ValueType {
        ValueType {
            type_strindex: self.d.string(name),
            unit_strindex: self.d.string(unit),
        }
    }
}

fn random_request(seed: u64, size: usize) -> ExportProfilesServiceRequest {
    let mut g = Gen {
        rng: SeededRng::new(seed),
        d: DictionaryBuilder::new(),
    };
    let mappings: Vec<i32> = std::iter::once(0)
        .chain((0..1 + g.rng.below(3)).map(|_| g.mapping()))
        .collect();
    let functions: Vec<i32> = (0..1 + g.rng.below(size + 1))
        .map(|i| {
            let f = Function {
                name_strindex: g.d.string(&format!("func{i}")),
                system_name_strindex: g.d.string(&format!("_Z4func{i}")),
                filename_strindex: g.d.string("src/lib.rs"),
                start_line: i as i64,
            };
            g.d.function(f)
        })
        .collect();
    let locations: Vec<i32> = (0..1 + g.rng.below(size * 2 + 1))
        .map(|_| g.location(&mappings, &functions))
        .collect();

    let mut resource_profiles = Vec::new();
    for r in 0..1 + g.rng.below(2) {
        let mut scope_profiles = Vec::new();
        for s in 0..1 + g.rng.below(2) {
            // Identities shared by the scope's profiles, each profile taking a
            // subset of them.
            let identities: Vec<(i32, Vec<i32>, i32)> = (0..1 + g.rng.below(size + 1))
                .map(|_| {
                    let depth = g.rng.below(10);
                    let stack: Vec<i32> = (0..depth)
                        .map(|_| locations[g.rng.below(locations.len())])
                        .collect();
                    let stack = g.d.stack(&stack);
                    let count = g.rng.below(3);
                    let attributes = g.attributes(count);
                    let link = if g.chance(25) {
                        let link = Link {
                            trace_id: g.bytes(16),
                            span_id: g.bytes(8),
                        };
                        g.d.link(link)
                    } else {
                        0
                    };
                    (stack, attributes, link)
                })
                .collect();
            let time = 1_700_000_000_000_000_000u64 + g.rng.below(1000) as u64;
            let period_type = Some(g.sample_type("cpu", "nanoseconds"));
            let mut profile_attributes = Vec::new();
            if g.chance(40) {
                let comments = array_value(vec![string_value("first"), string_value("")]);
                profile_attributes.push(g.d.attribute("pprof.profile.comment", comments, ""));
            }
            if g.chance(30) {
                profile_attributes.push(g.d.attribute(
                    "pprof.profile.drop_frames",
                    string_value("runtime\\..*"),
                    "",
                ));
            }
            if g.chance(15) {
                // pprof has no field for this form: it goes whole into the
                // reserved string.
                profile_attributes.push(g.d.attribute(
                    "pprof.profile.keep_frames",
                    int_value(3),
                    "",
                ));
            }
            let kinds = [
                ("samples", "count"),
                ("cpu", "nanoseconds"),
                ("wall", "nanoseconds"),
                ("alloc_space", "bytes"),
            ];
            let mut profiles = Vec::new();
            for _ in 0..1 + g.rng.below(3) {
                let (name, unit) = kinds[g.rng.below(kinds.len())];
                let mut samples = Vec::new();
                for (stack, attributes, link) in &identities {
                    if !g.chance(70) {
                        continue;
                    }
                    let observations = g.rng.below(4);
                    let timestamps: Vec<u64> = (0..observations)
                        .map(|_| time + g.rng.below(1_000_000) as u64)
                        .collect();
                    let values: Vec<i64> = match (observations, g.rng.below(3)) {
                        (0, _) => vec![1 + g.rng.below(1000) as i64],
                        (_, 0) => Vec::new(),
                        (n, _) => (0..n).map(|_| 1 + g.rng.below(1000) as i64).collect(),
                    };
                    samples.push(Sample {
                        stack_index: *stack,
                        attribute_indices: attributes.clone(),
                        link_index: *link,
                        values,
                        timestamps_unix_nano: timestamps,
                    });
                }
                profiles.push(Profile {
                    sample_type: Some(g.sample_type(name, unit)),
                    samples,
                    time_unix_nano: time,
                    duration_nano: 10_000_000_000,
                    period_type,
                    period: 10_000_000,
                    attribute_indices: {
                        let mut attributes = profile_attributes.clone();
                        if g.chance(40) {
                            let count = 1 + g.rng.below(3);
                            attributes.extend(g.attributes(count));
                        }
                        attributes
                    },
                    ..Profile::default()
                });
            }
            scope_profiles.push(ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: format!("agent-{s}"),
                    version: "1.2.3".into(),
                    attributes: vec![key_value("agent.mode", string_value("ebpf"))],
                    dropped_attributes_count: 0,
                }),
                profiles,
                schema_url: if g.chance(50) {
                    format!("https://opentelemetry.io/schemas/1.{}.0", g.rng.below(40))
                } else {
                    String::new()
                },
            });
        }
        let resource = Resource {
            attributes: vec![
                key_value("service.name", string_value(format!("service-{r}"))),
                key_value("host.cores", int_value(2)),
                key_value("debug", bool_value(r == 0)),
            ],
            ..Resource::default()
        };
        resource_profiles.push(ResourceProfiles {
            resource: Some(resource),
            scope_profiles,
            schema_url: if g.chance(50) {
                "https://opentelemetry.io/schemas/1.26.0".to_owned()
            } else {
                String::new()
            },
        });
    }
    ExportProfilesServiceRequest {
        resource_profiles,
        dictionary: Some(g.d.finish()),
    }
}

fn round_trip(request: &ExportProfilesServiceRequest) -> ExportProfilesServiceRequest {
    let pprofs = otlp_to_pprof(request, &ToPprofOptions::default()).unwrap();
    assert!(pprofs.rejected.is_empty(), "{:?}", pprofs.rejected);
    let inputs: Vec<PprofInput<'_>> = pprofs
        .profiles
        .iter()
        .map(|out| PprofInput {
            profile: &out.profile,
            resource_attributes: &out.resource_attributes,
            scope: out.instrumentation_scope.as_ref(),
            original_payload: None,
        })
        .collect();
    let converted = pprof_to_otlp(&inputs, &ToOtlpOptions::default());
    assert!(converted.rejected.is_empty(), "{:?}", converted.rejected);
    converted.request
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn otlp_to_pprof_to_otlp_is_canonically_equal(seed in any::<u64>(), size in 0usize..25) {
        let original = random_request(seed, size);
        prop_assert!(validate_request(&original).unwrap().invalid.is_empty());
        let back = round_trip(&original);
        prop_assert!(validate_request(&back).unwrap().invalid.is_empty());
        let (expected, actual) = (canonicalize(&original), canonicalize(&back));
        if expected != actual {
            let (e, a) = (format!("{expected:#?}"), format!("{actual:#?}"));
            let line = e.lines().zip(a.lines()).position(|(x, y)| x != y).unwrap_or(0);
            let context = |text: &str| text.lines().skip(line.saturating_sub(8)).take(12).collect::<Vec<_>>().join("\n");
            prop_assert!(false, "canonical forms differ at line {}:\nexpected:\n{}\nactual:\n{}", line, context(&e), context(&a));
        }
    }

    /// The exporters write pprofs without assembling their samples; the
    /// bytes must be exactly what encoding the assembled profile gives.
    #[test]
    fn unassembled_pprof_encodes_like_the_assembled_profile(
        seed in any::<u64>(),
        size in 0usize..25,
        aggregate_timestamps in any::<bool>(),
        resource_labels in any::<bool>(),
    ) {
        let request = random_request(seed, size);
        let options = ToPprofOptions { aggregate_timestamps, resource_labels, scope_labels: resource_labels };
        let unassembled = otlp_to_unassembled_pprof(&request, &options).unwrap();
        let assembled = otlp_to_pprof(&request, &options).unwrap();
        prop_assert_eq!(unassembled.profiles.len(), assembled.profiles.len());
        for (fast, slow) in unassembled.profiles.into_iter().zip(&assembled.profiles) {
            prop_assert_eq!(fast.profile.sample_count(), slow.profile.sample.len());
            let bytes = fast.profile.encode();
            prop_assert_eq!(&bytes, &slow.profile.encode_to_vec());
            prop_assert_eq!(&fast.profile.assemble(), &slow.profile);
        }
    }

    /// A converter reuses the memory of the pprofs it was given back; what
    /// it converts next is exactly what a fresh conversion gives.
    #[test]
    fn a_reused_converter_converts_like_a_fresh_one(
        seed in any::<u64>(),
        other_seed in any::<u64>(),
        size in 0usize..25,
        other_size in 0usize..25,
        aggregate_timestamps in any::<bool>(),
    ) {
        let options = ToPprofOptions { aggregate_timestamps, ..ToPprofOptions::default() };
        let mut converter = PprofConverter::new(options.clone());
        let mut encoded = Vec::new();
        for (seed, size) in [(other_seed, other_size), (seed, size), (other_seed, other_size)] {
            let request = random_request(seed, size);
            let fresh = otlp_to_unassembled_pprof(&request, &options).unwrap();
            let reused = converter.convert(&request).unwrap();
            prop_assert_eq!(&reused.rejected, &fresh.rejected);
            prop_assert_eq!(reused.profiles.len(), fresh.profiles.len());
            for (mine, theirs) in reused.profiles.iter().zip(&fresh.profiles) {
                prop_assert_eq!(&mine.profile.head, &theirs.profile.head);
                converter.encode_into(&mine.profile, &mut encoded);
                prop_assert_eq!(&encoded, &theirs.profile.encode());
            }
            converter.recycle(reused);
        }
    }
}

/// The generated requests reach what only the reserved string carries, and
/// the pprofs hold it: several build ids of each kind, an htlhash primary
/// id, location and profile attributes, schema URLs.
#[test]
fn the_generator_covers_what_the_reserved_string_must_carry() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let request = random_request(seed, 10);
        let d = request.dictionary.as_ref().unwrap();
        let key =
            |a: i32| d.string_table[d.attribute_table[a as usize].key_strindex as usize].as_str();
        for m in &d.mapping_table {
            let keys: Vec<&str> = m.attribute_indices.iter().map(|&a| key(a)).collect();
            if keys.iter().filter(|k| k.contains("build_id")).count() == 3 {
                seen.insert("three build ids");
            }
            if keys == ["process.executable.build_id.htlhash"] {
                seen.insert("htlhash only");
            }
            for &a in &m.attribute_indices {
                if let Some(any_value::Value::ArrayValue(_)) =
                    &d.attribute_table[a as usize].value.as_ref().unwrap().value
                {
                    if key(a).contains("build_id") {
                        seen.insert("several ids of one kind");
                    }
                }
            }
        }
        if d.location_table.iter().any(|l| {
            l.attribute_indices
                .iter()
                .any(|&a| key(a).starts_with("attr."))
        }) {
            seen.insert("location attributes");
        }
        let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
        for out in &converted.profiles {
            let last = out.profile.string_table.last().unwrap();
            if last.starts_with("profbridge.otlp.v1:") {
                seen.insert("reserved string");
                if last.contains("\"profiles\"") {
                    seen.insert("profile attributes");
                }
                if last.contains("SchemaUrl") {
                    seen.insert("schema URLs");
                }
            }
            if out
                .profile
                .mapping
                .iter()
                .any(|m| out.profile.string_table[m.build_id as usize].len() == 32)
            {
                seen.insert("an htlhash-looking primary id");
            }
        }
    }
    let expected = [
        "three build ids",
        "htlhash only",
        "several ids of one kind",
        "location attributes",
        "reserved string",
        "profile attributes",
        "schema URLs",
        "an htlhash-looking primary id",
    ];
    for what in expected {
        assert!(seen.contains(what), "never generated: {what}");
    }
}
