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
