//! A synthetic OTLP profiles request shaped like an eBPF agent's: many deep
//! stacks that mix kernel, native and interpreter frames, timestamped
//! samples, a few thread attributes, and trace links on some samples.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::SeededRng;

const FRAME_TYPES: [&str; 5] = ["kernel", "native", "cpython", "jvm", "go"];

fn string(s: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(s.to_owned())),
    })
}

struct Strings(Vec<String>);

impl Strings {
    fn add(&mut self, s: String) -> i32 {
        self.0.push(s);
        (self.0.len() - 1) as i32
    }
}

/// How the generated stacks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackShape {
    /// Each frame drawn at random from all locations, with a random frame
    /// type: no two stacks share callers. A stress case for translation
    /// and compression.
    Random,
    /// Walks down a call tree, as a running program's stacks do: stacks
    /// share their callers, and frames come in runs by type (interpreter
    /// frames near the root, then native code, then kernel frames at the
    /// leaf of some stacks).
    CallTree,
}

/// `stacks` samples, each with its own stack of 30 to 60 frames drawn from a
/// pool of locations, 1 to 4 timestamps, and values (CPU nanoseconds).
pub fn ebpf_like_request(stacks: usize, seed: u64) -> ExportProfilesServiceRequest {
    generated_request(StackShape::Random, stacks, seed)
}

/// [`ebpf_like_request`] with stacks from a call tree
/// ([`StackShape::CallTree`]): what a profiler sees of running programs.
pub fn profiler_like_request(stacks: usize, seed: u64) -> ExportProfilesServiceRequest {
    generated_request(StackShape::CallTree, stacks, seed)
}

/// Frame types by layer for [`StackShape::CallTree`], root side first.
const INTERPRETER: usize = 2;
const NATIVE: usize = 1;
const KERNEL: usize = 0;

pub fn generated_request(
    shape: StackShape,
    stacks: usize,
    seed: u64,
) -> ExportProfilesServiceRequest {
    let mut rng = SeededRng::new(seed);
    let mut strings = Strings(vec![String::new()]);
    let mut d = ProfilesDictionary {
        mapping_table: vec![Mapping::default()],
        location_table: vec![Location::default()],
        function_table: vec![Function::default()],
        link_table: vec![Link::default()],
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![Stack::default()],
        string_table: Vec::new(),
    };

    let frame_type_key = strings.add("profile.frame.type".into());
    let frame_type_attributes: Vec<i32> = FRAME_TYPES
        .iter()
        .map(|t| {
            d.attribute_table.push(KeyValueAndUnit {
                key_strindex: frame_type_key,
                value: string(t),
                unit_strindex: 0,
            });
            (d.attribute_table.len() - 1) as i32
        })
        .collect();
    let thread_key = strings.add("thread.name".into());
    let thread_attributes: Vec<i32> = (0..16)
        .map(|i| {
            d.attribute_table.push(KeyValueAndUnit {
                key_strindex: thread_key,
                value: string(&format!("worker-{i}")),
                unit_strindex: 0,
            });
            (d.attribute_table.len() - 1) as i32
        })
        .collect();

    for i in 0..8u64 {
        let filename_strindex = strings.add(format!("/usr/lib/x86_64-linux-gnu/lib{i}.so"));
        d.mapping_table.push(Mapping {
            memory_start: 0x7f00_0000_0000 + i * 0x100_0000,
            memory_limit: 0x7f00_0000_0000 + (i + 1) * 0x100_0000,
            file_offset: 0,
            filename_strindex,
            attribute_indices: Vec::new(),
        });
    }
    let functions = 4000;
    for i in 0..functions {
        let name_strindex = strings.add(format!("function_{i}"));
        let filename_strindex = strings.add(format!("src/module_{}.c", i % 300));
        d.function_table.push(Function {
            name_strindex,
            system_name_strindex: name_strindex,
            filename_strindex,
            start_line: (i % 1000) as i64,
        });
    }
    let locations = 20_000;
    for i in 0..locations {
        let kind = match shape {
            StackShape::Random => rng.below(FRAME_TYPES.len()),
            // Locations 1..2000 are kernel code, then 8000 native, then
            // interpreted.
            StackShape::CallTree if i < 2000 => KERNEL,
            StackShape::CallTree if i < 10_000 => NATIVE,
            StackShape::CallTree => INTERPRETER,
        };
        d.location_table.push(Location {
            mapping_index: 1 + rng.below(8) as i32,
            address: 0x7f00_0000_0000 + rng.below(0x800_0000) as u64,
            lines: vec![Line {
                function_index: 1 + rng.below(functions) as i32,
                line: rng.below(5000) as i64,
                column: 0,
            }],
            attribute_indices: vec![frame_type_attributes[kind]],
        });
    }
    for _ in 0..64 {
        let link = Link {
            trace_id: (0..16).map(|_| rng.next_u64() as u8).collect(),
            span_id: (0..8).map(|_| rng.next_u64() as u8).collect(),
        };
        d.link_table.push(link);
    }

    let start = 1_700_000_000_000_000_000u64;
    let mut samples = Vec::with_capacity(stacks);
    let mut tree = CallTree::default();
    for _ in 0..stacks {
        let depth = 30 + rng.below(31);
        let location_indices = match shape {
            StackShape::Random => (0..depth)
                .map(|_| 1 + rng.below(locations) as i32)
                .collect(),
            StackShape::CallTree => tree.walk(&mut rng, depth),
        };
        d.stack_table.push(Stack { location_indices });
        let observations = 1 + rng.below(4);
        let timestamps: Vec<u64> = (0..observations)
            .map(|_| start + rng.below(60_000_000_000) as u64)
            .collect();
        samples.push(Sample {
            stack_index: (d.stack_table.len() - 1) as i32,
            attribute_indices: vec![thread_attributes[rng.below(thread_attributes.len())]],
            link_index: if rng.below(10) == 0 {
                1 + rng.below(64) as i32
            } else {
                0
            },
            values: timestamps
                .iter()
                .map(|_| 10_000_000 * (1 + rng.below(3) as i64))
                .collect(),
            timestamps_unix_nano: timestamps,
        });
    }
    let cpu = strings.add("cpu".into());
    let nanoseconds = strings.add("nanoseconds".into());
    let profile = Profile {
        sample_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: nanoseconds,
        }),
        samples,
        time_unix_nano: start,
        duration_nano: 60_000_000_000,
        period_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: nanoseconds,
        }),
        period: 10_000_000,
        ..Profile::default()
    };
    d.string_table = strings.0;
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: string("checkout"),
                    key_strindex: 0,
                }],
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "ebpf-profiler".into(),
                    ..InstrumentationScope::default()
                }),
                profiles: vec![profile],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(d),
    }
}

/// A call tree grown as it is walked: each step down takes a known callee
/// most of the time, else a new one from the next layer's locations.
#[derive(Default)]
struct CallTree {
    callees: std::collections::HashMap<i32, Vec<i32>>,
}

impl CallTree {
    /// A stack of `depth` frames, leaf first: 4 to 8 roots of interpreted
    /// code, interpreter frames for most of the depth, then native frames,
    /// and kernel frames at the leaf of one stack in three.
    fn walk(&mut self, rng: &mut SeededRng, depth: usize) -> Vec<i32> {
        let kernel = if rng.below(3) == 0 {
            2 + rng.below(6)
        } else {
            0
        };
        let native = 5 + rng.below(10);
        let mut path = Vec::with_capacity(depth);
        let mut caller = -1 - rng.below(6) as i32; // one of the roots
        for level in 0..depth {
            let from_leaf = depth - level;
            let (first, count) = if from_leaf <= kernel {
                (1, 1999)
            } else if from_leaf <= kernel + native {
                (2000, 8000)
            } else {
                (10_000, 10_000)
            };
            let known = self.callees.entry(caller).or_default();
            let callee = if !known.is_empty() && rng.below(10) < 8 {
                known[rng.below(known.len())]
            } else {
                let new = first + rng.below(count) as i32;
                known.push(new);
                new
            };
            path.push(callee);
            caller = callee;
        }
        path.reverse();
        path
    }
}

/// What the OTel eBPF profiler's reporter (reporter/internal/pdata/
/// generate.go) puts in a request, as pdata holds it, so that
/// [`crate::pdata_encode`] writes the bytes it sends: zero entries first in
/// every table (pdata's `AppendEmpty`, so `attribute_table[0].value` is an
/// empty `AnyValue` that is present); one resource with `process.*`
/// attributes and a scope named after the agent; a `cpu` profile
/// (`samples`/`count`, period `cpu`/`nanoseconds`, timestamps only) and an
/// `off_cpu` profile (`off_cpu`/`nanoseconds`, values beside timestamps,
/// no period type: pdata writes an empty one); kernel frames (a symbol and
/// the `vmlinux` mapping, the address counted from the kernel's start),
/// native frames (an ELF address in a mapping named after the file's base
/// name, with `process.executable.build_id.gnu`, `.go` and `.htlhash`
/// attributes) and interpreted frames (a function, file and line), each
/// typed by a `profile.frame.type` location attribute; samples with
/// `thread.name`, `thread.id` and `cpu.logical_number`; some samples linked
/// to a trace. `samples` samples per profile. The shapes are those of
/// crate::ebpf_profiler, which documents them with the profiler's sources.
pub fn ebpf_profiler_request(samples: usize, seed: u64) -> ExportProfilesServiceRequest {
    let mut rng = SeededRng::new(seed);
    let mut strings = Strings(vec![String::new()]);
    let mut d = ProfilesDictionary {
        mapping_table: vec![Mapping::default()],
        location_table: vec![Location::default()],
        function_table: vec![Function::default()],
        link_table: vec![Link::default()],
        attribute_table: vec![KeyValueAndUnit {
            key_strindex: 0,
            value: Some(AnyValue { value: None }),
            unit_strindex: 0,
        }],
        stack_table: vec![Stack::default()],
        string_table: Vec::new(),
    };
    let attribute = |d: &mut ProfilesDictionary,
                     strings: &mut Strings,
                     key: &str,
                     value: any_value::Value|
     -> i32 {
        let key_strindex = match strings.0.iter().position(|s| s == key) {
            Some(i) => i as i32,
            None => strings.add(key.to_owned()),
        };
        let entry = KeyValueAndUnit {
            key_strindex,
            value: Some(AnyValue { value: Some(value) }),
            unit_strindex: 0,
        };
        match d.attribute_table.iter().position(|a| *a == entry) {
            Some(i) => i as i32,
            None => {
                d.attribute_table.push(entry);
                (d.attribute_table.len() - 1) as i32
            }
        }
    };
    let text = |s: &str| any_value::Value::StringValue(s.to_owned());

    // Mappings: an executable, a Go binary (with a Go build id) and libc,
    // named by their base names; then the kernel's.
    let binaries: [(&str, [&str; 3]); 3] = [
        (
            "app",
            [
                "9f3c1e2a4b5d6e7f8091a2b3c4d5e6f708192a3b",
                "",
                "4d2f0e1c9b8a77660123456789abcdef",
            ],
        ),
        (
            "server",
            [
                "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
                "Go1abcdefghijklmnopq/rstuvwxyzABCDEFGHIJ/KLMNOPQRSTUVWXYZ01234/56789abcdefghijklmno",
                "c0ffee0123456789fedcba9876543210",
            ],
        ),
        (
            "libc.so.6",
            [
                "6e3c087aca9b39549e4ba92c451f1e399b586e28",
                "",
                "a1b2c3d4e5f607180f1e2d3c4b5a6978",
            ],
        ),
    ];
    let mut native_mappings = Vec::new();
    for (i, (file, [gnu, go, htlhash])) in binaries.iter().enumerate() {
        let filename_strindex = strings.add((*file).to_owned());
        let mut attribute_indices = Vec::new();
        for (key, value) in [
            ("process.executable.build_id.gnu", gnu),
            ("process.executable.build_id.go", go),
            ("process.executable.build_id.htlhash", htlhash),
        ] {
            if !value.is_empty() {
                attribute_indices.push(attribute(&mut d, &mut strings, key, text(value)));
            }
        }
        // The code segment, in the file's own addresses.
        let file_offset = 0x1000 * (1 + i as u64);
        let start = 0x40_0000 * i as u64 + file_offset;
        d.mapping_table.push(Mapping {
            memory_start: start,
            memory_limit: start + 0x80_0000,
            file_offset,
            filename_strindex,
            attribute_indices,
        });
        native_mappings.push(((d.mapping_table.len() - 1) as i32, start));
    }
    let kernel_mapping = {
        let filename_strindex = strings.add("vmlinux".to_owned());
        let attribute_indices = vec![
            attribute(
                &mut d,
                &mut strings,
                "process.executable.build_id.gnu",
                text("1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c"),
            ),
            attribute(
                &mut d,
                &mut strings,
                "process.executable.build_id.htlhash",
                text("1f2e3d4c5b6a79881f2e3d4c5b6a7988"),
            ),
        ];
        d.mapping_table.push(Mapping {
            filename_strindex,
            attribute_indices,
            ..Mapping::default()
        });
        (d.mapping_table.len() - 1) as i32
    };

    let function = |d: &mut ProfilesDictionary, strings: &mut Strings, name: &str, file: &str| {
        let name_strindex = strings.add(name.to_owned());
        let filename_strindex = if file.is_empty() {
            0
        } else {
            strings.add(file.to_owned())
        };
        d.function_table.push(Function {
            name_strindex,
            system_name_strindex: 0,
            filename_strindex,
            start_line: 0,
        });
        (d.function_table.len() - 1) as i32
    };
    let locations_of = |d: &mut ProfilesDictionary,
                        strings: &mut Strings,
                        kind: &str,
                        count: usize,
                        rng: &mut SeededRng|
     -> Vec<i32> {
        let frame_type = attribute(d, strings, "profile.frame.type", text(kind));
        (0..count)
            .map(|i| {
                let location = match kind {
                    "kernel" => {
                        let f = function(d, strings, &format!("do_syscall_{i}"), "");
                        Location {
                            mapping_index: kernel_mapping,
                            address: rng.below(0x10_0000) as u64,
                            lines: vec![Line {
                                function_index: f,
                                line: 0,
                                column: 0,
                            }],
                            attribute_indices: vec![frame_type],
                        }
                    }
                    "native" => {
                        let (mapping, start) = native_mappings[rng.below(native_mappings.len())];
                        Location {
                            mapping_index: mapping,
                            address: start + rng.below(0x7f_0000) as u64,
                            lines: Vec::new(),
                            attribute_indices: vec![frame_type],
                        }
                    }
                    _ => {
                        let f = function(
                            d,
                            strings,
                            &format!("handler_{i}"),
                            &format!("/srv/app/module_{}.py", i % 7),
                        );
                        Location {
                            mapping_index: 0,
                            address: 0,
                            lines: vec![Line {
                                function_index: f,
                                line: 1 + rng.below(400) as i64,
                                column: 0,
                            }],
                            attribute_indices: vec![frame_type],
                        }
                    }
                };
                d.location_table.push(location);
                (d.location_table.len() - 1) as i32
            })
            .collect()
    };
    let kernel = locations_of(&mut d, &mut strings, "kernel", 20, &mut rng);
    let native = locations_of(&mut d, &mut strings, "native", 60, &mut rng);
    let python = locations_of(&mut d, &mut strings, "cpython", 40, &mut rng);

    for _ in 0..4 {
        d.link_table.push(Link {
            trace_id: (0..16).map(|_| 1 | rng.next_u64() as u8).collect(),
            span_id: (0..8).map(|_| 1 | rng.next_u64() as u8).collect(),
        });
    }

    let start = 1_700_000_000_000_000_000u64;
    let profile = |d: &mut ProfilesDictionary,
                   strings: &mut Strings,
                   rng: &mut SeededRng,
                   (sample_type, sample_unit): (&str, &str),
                   period: Option<(&str, &str)>,
                   with_values: bool|
     -> Profile {
        let mut string = |s: &str| match strings.0.iter().position(|t| t == s) {
            Some(i) => i as i32,
            None => strings.add(s.to_owned()),
        };
        let sample_type = ValueType {
            type_strindex: string(sample_type),
            unit_strindex: string(sample_unit),
        };
        let period_type = period.map_or_else(ValueType::default, |(t, u)| ValueType {
            type_strindex: string(t),
            unit_strindex: string(u),
        });
        let samples = (0..samples)
            .map(|_| {
                // Leaf first: kernel frames (in one stack of three), native
                // code, then interpreted frames up to the root.
                let mut stack = Vec::new();
                if rng.below(3) == 0 {
                    stack.extend((0..1 + rng.below(4)).map(|_| kernel[rng.below(kernel.len())]));
                }
                stack.extend((0..2 + rng.below(8)).map(|_| native[rng.below(native.len())]));
                stack.extend((0..1 + rng.below(12)).map(|_| python[rng.below(python.len())]));
                d.stack_table.push(Stack {
                    location_indices: stack,
                });
                let tid = 1000 + rng.below(8) as i64;
                let attribute_indices = vec![
                    attribute(d, strings, "thread.name", text(&format!("worker-{tid}"))),
                    attribute(d, strings, "thread.id", any_value::Value::IntValue(tid)),
                    attribute(
                        d,
                        strings,
                        "cpu.logical_number",
                        any_value::Value::IntValue(rng.below(4) as i64),
                    ),
                ];
                let timestamps: Vec<u64> = (0..1 + rng.below(5))
                    .map(|_| start + rng.below(5_000_000_000) as u64)
                    .collect();
                Sample {
                    stack_index: (d.stack_table.len() - 1) as i32,
                    attribute_indices,
                    link_index: if rng.below(8) == 0 {
                        1 + rng.below(4) as i32
                    } else {
                        0
                    },
                    values: if with_values {
                        timestamps
                            .iter()
                            .map(|_| 1_000_000 + rng.below(50_000_000) as i64)
                            .collect()
                    } else {
                        Vec::new()
                    },
                    timestamps_unix_nano: timestamps,
                }
            })
            .collect();
        Profile {
            sample_type: Some(sample_type),
            samples,
            time_unix_nano: start,
            duration_nano: 5_000_000_000,
            period_type: Some(period_type),
            period: if period.is_some() { 50_000_000 } else { 0 },
            ..Profile::default()
        }
    };
    let cpu = profile(
        &mut d,
        &mut strings,
        &mut rng,
        ("samples", "count"),
        Some(("cpu", "nanoseconds")),
        false,
    );
    let off_cpu = profile(
        &mut d,
        &mut strings,
        &mut rng,
        ("off_cpu", "nanoseconds"),
        None,
        true,
    );
    d.string_table = strings.0;
    let schema_url = "https://opentelemetry.io/schemas/1.37.0".to_owned();
    let plain = |key: &str, value: any_value::Value| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        key_strindex: 0,
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: vec![
                    plain("service.name", text("checkout")),
                    plain("process.pid", any_value::Value::IntValue(4242)),
                    plain("process.executable.path", text("/usr/bin/app")),
                    plain("process.executable.name", text("app")),
                ],
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "opentelemetry-ebpf-profiler".into(),
                    version: "v0.0.202547".into(),
                    ..InstrumentationScope::default()
                }),
                profiles: vec![cpu, off_cpu],
                schema_url: schema_url.clone(),
            }],
            schema_url,
        }],
        dictionary: Some(d),
    }
}
