//! Merging requests into one dictionary: entries are shared, every
//! sample resolves as before, zero entries stay at index 0, and the merged
//! tables grow with the distinct input only.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_translate::otlp::{
    any_value, array_value, int_value, resolve_strings, string_value, AnyValue,
    ExportProfilesServiceRequest, Function, InstrumentationScope, KeyValue, KeyValueList, Line,
    Link, Location, Mapping, Profile, ProfilesDictionary, Resource, ResourceProfiles, Sample,
    ScopeProfiles, Stack, ValueType,
};
use profbridge_translate::{merge_requests, validate_request, DictionaryBuilder};

/// One frame: function name, file, address, line.
type Frame = (String, String, u64, i64);

fn frame(name: &str, file: &str, address: u64, line: i64) -> Frame {
    (name.into(), file.into(), address, line)
}

struct Spec {
    service: String,
    stacks: Vec<Vec<Frame>>,
    thread: String,
    /// Sample links to trace `[n; 16]`, span `[n; 8]`.
    link: Option<u8>,
}

fn request(spec: &Spec) -> ExportProfilesServiceRequest {
    let mut b = DictionaryBuilder::new();
    let cpu = b.string("cpu");
    let nanoseconds = b.string("nanoseconds");
    let binary = b.string("/usr/bin/app");
    let arch_attribute = b.attribute("arch", string_value("x86_64"), "");
    let mapping = b.mapping(Mapping {
        memory_start: 0x40_0000,
        memory_limit: 0x80_0000,
        file_offset: 0,
        filename_strindex: binary,
        attribute_indices: vec![arch_attribute],
    });
    let thread_index = b.string(&spec.thread);
    let thread = b.attribute(
        "thread.name",
        AnyValue {
            value: Some(any_value::Value::StringValueStrindex(thread_index)),
        },
        "",
    );
    let kvlist_key = b.string("nested.key");
    let nested = b.attribute(
        "nested",
        AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList {
                values: vec![KeyValue {
                    key: String::new(),
                    value: Some(array_value(vec![
                        int_value(7),
                        AnyValue {
                            value: Some(any_value::Value::StringValueStrindex(thread_index)),
                        },
                    ])),
                    key_strindex: kvlist_key,
                }],
            })),
        },
        "",
    );
    let allocated = b.attribute("allocated", int_value(4096), "bytes");
    let link = spec.link.map_or(0, |n| {
        b.link(Link {
            trace_id: vec![n; 16],
            span_id: vec![n; 8],
        })
    });
    let samples = spec
        .stacks
        .iter()
        .enumerate()
        .map(|(i, frames)| {
            let locations: Vec<i32> = frames
                .iter()
                .map(|(name, file, address, line)| {
                    let name_strindex = b.string(name);
                    let filename_strindex = b.string(file);
                    let function = b.function(Function {
                        name_strindex,
                        system_name_strindex: name_strindex,
                        filename_strindex,
                        start_line: 1,
                    });
                    b.location(Location {
                        mapping_index: mapping,
                        address: *address,
                        lines: vec![Line {
                            function_index: function,
                            line: *line,
                            column: 0,
                        }],
                        attribute_indices: vec![],
                    })
                })
                .collect();
            Sample {
                stack_index: b.stack(&locations),
                attribute_indices: if i % 2 == 0 {
                    vec![thread, allocated]
                } else {
                    vec![nested]
                },
                link_index: link,
                values: vec![i64::try_from(i).unwrap() + 1],
                timestamps_unix_nano: vec![],
            }
        })
        .collect();
    let resource_key = b.string("host.name");
    let profile = Profile {
        sample_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: nanoseconds,
        }),
        period_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: nanoseconds,
        }),
        period: 10_000_000,
        samples,
        attribute_indices: vec![arch_attribute],
        ..Default::default()
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: vec![
                    KeyValue {
                        key: "service.name".into(),
                        value: Some(string_value(spec.service.as_str())),
                        key_strindex: 0,
                    },
                    KeyValue {
                        key: String::new(),
                        value: Some(AnyValue {
                            value: Some(any_value::Value::StringValueStrindex(thread_index)),
                        }),
                        key_strindex: resource_key,
                    },
                ],
                ..Default::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "profbridge".into(),
                    attributes: vec![KeyValue {
                        key: String::new(),
                        value: Some(string_value("scope")),
                        key_strindex: kvlist_key,
                    }],
                    ..Default::default()
                }),
                profiles: vec![profile],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(b.finish()),
    }
}

/// Two stacks: one shared by every request built here, one through the
/// request's `own` function.
fn shared_and_own(service: &str, own: &str) -> Spec {
    linked(service, own, 1)
}

fn linked(service: &str, own: &str, link: u8) -> Spec {
    Spec {
        service: service.into(),
        stacks: vec![
            vec![
                frame("malloc", "libc.c", 0x1000, 10),
                frame("main", "main.c", 0x2000, 5),
            ],
            vec![
                frame(own, "own.c", 0x3000, 7),
                frame("main", "main.c", 0x2000, 5),
            ],
        ],
        thread: own.into(),
        link: Some(link),
    }
}

/// A sample with every index replaced by what it points at.
#[derive(Debug, Clone, PartialEq)]
struct Resolved {
    resource: Vec<(String, AnyValue)>,
    scope: Vec<(String, AnyValue)>,
    sample_type: (String, String),
    period_type: (String, String),
    profile_attributes: Vec<(String, AnyValue, String)>,
    frames: Vec<ResolvedFrame>,
    attributes: Vec<(String, AnyValue, String)>,
    link: Link,
    values: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
struct ResolvedFrame {
    mapping: (u64, u64, String, Vec<(String, AnyValue, String)>),
    address: u64,
    /// Function name, system name, file, start line; line, column.
    lines: Vec<(String, String, String, i64, i64, i64)>,
    attributes: Vec<(String, AnyValue, String)>,
}

fn resolve(request: &ExportProfilesServiceRequest) -> Vec<Resolved> {
    let d = request.dictionary.clone().unwrap_or_default();
    let s = |i: i32| d.string_table[i as usize].clone();
    let key_values = |kvs: &[KeyValue]| -> Vec<(String, AnyValue)> {
        kvs.iter()
            .map(|kv| {
                let key = if kv.key_strindex != 0 {
                    s(kv.key_strindex)
                } else {
                    kv.key.clone()
                };
                (
                    key,
                    resolve_strings(kv.value.as_ref().unwrap(), &d.string_table),
                )
            })
            .collect()
    };
    let attributes = |indices: &[i32]| -> Vec<(String, AnyValue, String)> {
        indices
            .iter()
            .map(|&i| {
                let a = &d.attribute_table[i as usize];
                (
                    s(a.key_strindex),
                    resolve_strings(a.value.as_ref().unwrap(), &d.string_table),
                    s(a.unit_strindex),
                )
            })
            .collect()
    };
    let value_type = |vt: &Option<ValueType>| {
        let vt = vt.unwrap();
        (s(vt.type_strindex), s(vt.unit_strindex))
    };
    let mut resolved = Vec::new();
    for r in &request.resource_profiles {
        let resource = key_values(&r.resource.as_ref().unwrap().attributes);
        for sp in &r.scope_profiles {
            let scope = key_values(&sp.scope.as_ref().unwrap().attributes);
            for p in &sp.profiles {
                for sample in &p.samples {
                    let frames = d.stack_table[sample.stack_index as usize]
                        .location_indices
                        .iter()
                        .map(|&l| {
                            let location = &d.location_table[l as usize];
                            let m = &d.mapping_table[location.mapping_index as usize];
                            let lines = location
                                .lines
                                .iter()
                                .map(|line| {
                                    let f = &d.function_table[line.function_index as usize];
                                    let names = (
                                        s(f.name_strindex),
                                        s(f.system_name_strindex),
                                        s(f.filename_strindex),
                                    );
                                    (
                                        names.0,
                                        names.1,
                                        names.2,
                                        f.start_line,
                                        line.line,
                                        line.column,
                                    )
                                })
                                .collect();
                            ResolvedFrame {
                                mapping: (
                                    m.memory_start,
                                    m.memory_limit,
                                    s(m.filename_strindex),
                                    attributes(&m.attribute_indices),
                                ),
                                address: location.address,
                                lines,
                                attributes: attributes(&location.attribute_indices),
                            }
                        })
                        .collect();
                    resolved.push(Resolved {
                        resource: resource.clone(),
                        scope: scope.clone(),
                        sample_type: value_type(&p.sample_type),
                        period_type: value_type(&p.period_type),
                        profile_attributes: attributes(&p.attribute_indices),
                        frames,
                        attributes: attributes(&sample.attribute_indices),
                        link: d.link_table[sample.link_index as usize].clone(),
                        values: sample.values.clone(),
                    });
                }
            }
        }
    }
    resolved
}

fn sizes(d: &ProfilesDictionary) -> [usize; 7] {
    [
        d.string_table.len(),
        d.attribute_table.len(),
        d.mapping_table.len(),
        d.function_table.len(),
        d.location_table.len(),
        d.stack_table.len(),
        d.link_table.len(),
    ]
}

fn assert_zero_entries(d: &ProfilesDictionary) {
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.attribute_table[0], Default::default());
    assert_eq!(d.mapping_table[0], Mapping::default());
    assert_eq!(d.function_table[0], Function::default());
    assert_eq!(d.location_table[0], Location::default());
    assert_eq!(d.stack_table[0], Stack::default());
    assert_eq!(d.link_table[0], Link::default());
}

#[test]
fn shared_entries_are_stored_once() {
    let a = request(&shared_and_own("api", "handler_a"));
    let b = request(&shared_and_own("api", "handler_b"));
    let merged = merge_requests(vec![a.clone(), b.clone()]);
    let d = merged.dictionary.as_ref().unwrap();
    // Strings: "", cpu, nanoseconds, /usr/bin/app, arch, thread.name,
    // nested.key, nested, allocated, bytes, malloc, libc.c, main, main.c,
    // own.c, host.name, and each request's own function name.
    assert_eq!(d.string_table.len(), 16 + 2);
    // zero, arch, allocated, and per request thread.name and nested.
    assert_eq!(d.attribute_table.len(), 1 + 2 + 2 * 2);
    assert_eq!(d.mapping_table.len(), 2);
    assert_eq!(d.function_table.len(), 1 + 2 + 2);
    assert_eq!(d.location_table.len(), 1 + 2 + 2);
    assert_eq!(d.stack_table.len(), 1 + 1 + 2);
    assert_eq!(d.link_table.len(), 2);
    let one = sizes(a.dictionary.as_ref().unwrap());
    assert_eq!(
        sizes(
            merge_requests(vec![a.clone(), a.clone(), a])
                .dictionary
                .as_ref()
                .unwrap()
        ),
        one
    );
}

#[test]
fn every_sample_resolves_as_before() {
    let inputs = vec![
        request(&shared_and_own("api", "handler_a")),
        request(&linked("worker", "handler_b", 2)),
        request(&Spec {
            service: "batch".into(),
            stacks: vec![vec![], vec![frame("main", "main.c", 0x2000, 5)]],
            thread: String::new(),
            link: None,
        }),
        request(&shared_and_own("api", "handler_a")),
    ];
    let before: Vec<Resolved> = inputs.iter().flat_map(resolve).collect();
    let merged = merge_requests(inputs);
    assert_eq!(merged.resource_profiles.len(), 4);
    assert_eq!(resolve(&merged), before);
    let validated = validate_request(&merged).unwrap();
    assert!(validated.invalid.is_empty(), "{:?}", validated.invalid);
}

#[test]
fn resource_profiles_keep_their_order() {
    let names = ["a", "b", "c", "d"];
    let inputs = names.map(|n| request(&shared_and_own(n, n))).to_vec();
    let merged = merge_requests(inputs);
    let services: Vec<_> = merged
        .resource_profiles
        .iter()
        .map(|r| {
            r.resource.as_ref().unwrap().attributes[0]
                .value
                .clone()
                .unwrap()
        })
        .collect();
    assert_eq!(services, names.map(string_value).to_vec());
}

#[test]
fn zero_entries_stay_zero() {
    let all_zero = ExportProfilesServiceRequest {
        resource_profiles: vec![],
        dictionary: Some(DictionaryBuilder::new().finish()),
    };
    let real = request(&shared_and_own("api", "handler_a"));
    for inputs in [
        vec![all_zero.clone(), real.clone()],
        vec![real.clone(), all_zero.clone()],
        vec![
            all_zero.clone(),
            real.clone(),
            all_zero.clone(),
            real.clone(),
        ],
    ] {
        let before: Vec<Resolved> = inputs.iter().flat_map(resolve).collect();
        let merged = merge_requests(inputs);
        let d = merged.dictionary.as_ref().unwrap();
        assert_zero_entries(d);
        assert_eq!(sizes(d), sizes(real.dictionary.as_ref().unwrap()));
        assert_eq!(resolve(&merged), before);
    }
    let only_zero = merge_requests(vec![all_zero.clone(), all_zero]);
    assert_zero_entries(only_zero.dictionary.as_ref().unwrap());
    assert_eq!(sizes(only_zero.dictionary.as_ref().unwrap()), [1; 7]);
}

#[test]
fn empty_and_missing_dictionaries_merge() {
    let real = request(&shared_and_own("api", "handler_a"));
    let no_dictionary = ExportProfilesServiceRequest {
        resource_profiles: vec![],
        dictionary: None,
    };
    let empty_tables = ExportProfilesServiceRequest {
        resource_profiles: vec![],
        dictionary: Some(ProfilesDictionary::default()),
    };
    let merged = merge_requests(vec![
        no_dictionary.clone(),
        real.clone(),
        empty_tables.clone(),
    ]);
    assert_eq!(resolve(&merged), resolve(&real));
    assert_zero_entries(merged.dictionary.as_ref().unwrap());
    let nothing = merge_requests(vec![]);
    assert!(nothing.resource_profiles.is_empty());
    assert_eq!(sizes(nothing.dictionary.as_ref().unwrap()), [1; 7]);
    let empties = merge_requests(vec![no_dictionary, empty_tables]);
    assert_zero_entries(empties.dictionary.as_ref().unwrap());
}

#[test]
fn out_of_range_indexes_become_zero() {
    let mut broken = request(&shared_and_own("api", "handler_a"));
    let profile = &mut broken.resource_profiles[0].scope_profiles[0].profiles[0];
    profile.samples[0].stack_index = 1_000;
    profile.samples[0].attribute_indices = vec![-1, 77];
    profile.samples[1].link_index = i32::MAX;
    profile.sample_type = Some(ValueType {
        type_strindex: -5,
        unit_strindex: 9_999,
    });
    let d = broken.dictionary.as_mut().unwrap();
    d.location_table[1].lines[0].function_index = 500;
    d.stack_table[1].location_indices.push(i32::MIN);
    let merged = merge_requests(vec![broken]);
    let sample = &merged.resource_profiles[0].scope_profiles[0].profiles[0].samples[0];
    assert_eq!(sample.stack_index, 0);
    assert_eq!(sample.attribute_indices, vec![0, 0]);
    let profile = &merged.resource_profiles[0].scope_profiles[0].profiles[0];
    assert_eq!(profile.samples[1].link_index, 0);
    assert_eq!(profile.sample_type, Some(ValueType::default()));
    // A request with profiles and no dictionary at all.
    let mut orphan = request(&shared_and_own("api", "handler_a"));
    orphan.dictionary = None;
    let merged = merge_requests(vec![orphan]);
    assert_eq!(
        merged.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index,
        0
    );
}

/// Request `i` of a family: its own functions, strings, attributes and
/// stacks, nothing shared beyond the fixed entries.
fn distinct(i: usize, frames: usize) -> ExportProfilesServiceRequest {
    let stacks = (0..frames)
        .map(|f| {
            vec![frame(
                &format!("r{i}_f{f}"),
                "file.c",
                u64::try_from(i * frames + f).unwrap(),
                1,
            )]
        })
        .collect();
    request(&Spec {
        service: "svc".into(),
        stacks,
        thread: format!("r{i}_thread"),
        link: Some(1),
    })
}

#[test]
fn merged_tables_grow_linearly_with_distinct_input_and_not_with_copies() {
    const K: usize = 25;
    let one = sizes(
        merge_requests(vec![distinct(0, K)])
            .dictionary
            .as_ref()
            .unwrap(),
    );
    let two = sizes(
        merge_requests(vec![distinct(0, K), distinct(1, K)])
            .dictionary
            .as_ref()
            .unwrap(),
    );
    let per_request: Vec<usize> = one.iter().zip(&two).map(|(a, b)| b - a).collect();
    let fixed: Vec<usize> = one.iter().zip(&per_request).map(|(a, p)| a - p).collect();
    for n in [1, 2, 4, 8] {
        let inputs: Vec<_> = (0..n).map(|i| distinct(i, K)).collect();
        let total_entries: usize = inputs
            .iter()
            .map(|r| sizes(r.dictionary.as_ref().unwrap()).iter().sum::<usize>())
            .sum();
        let merged = sizes(merge_requests(inputs).dictionary.as_ref().unwrap());
        let expected: Vec<usize> = fixed
            .iter()
            .zip(&per_request)
            .map(|(f, p)| f + n * p)
            .collect();
        assert_eq!(merged.to_vec(), expected, "{n} distinct requests");
        assert!(merged.iter().sum::<usize>() <= total_entries);

        let copies = sizes(
            merge_requests(vec![distinct(0, K); n])
                .dictionary
                .as_ref()
                .unwrap(),
        );
        assert_eq!(copies, one, "{n} copies");
    }
    assert_eq!(per_request[3], K, "one new function per frame");
}
