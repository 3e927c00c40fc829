//! merge_requests on 1 to 64 copies of a synthetic request (2,000 samples,
//! 1,000 stacks of 4 to 16 frames over 500 functions, 80% of them shared by
//! every copy). Time per copy stays flat when the merge is linear.
//! Run: cargo bench -p profbridge-translate --bench merge

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use profbridge_testkit::SeededRng;
use profbridge_translate::otlp::{
    string_value, ExportProfilesServiceRequest, Function, Line, Link, Location, Mapping, Profile,
    ResourceProfiles, Sample, ScopeProfiles, ValueType,
};
use profbridge_translate::{merge_requests, DictionaryBuilder};

const FUNCTIONS: usize = 500;
const SHARED_FUNCTIONS: usize = 400;
const STACKS: usize = 1_000;
const SAMPLES: usize = 2_000;
const THREADS: usize = 8;

fn synthetic(copy: usize) -> ExportProfilesServiceRequest {
    let mut rng = SeededRng::new(1);
    let mut b = DictionaryBuilder::new();
    let filename = b.string("/usr/lib/libapp.so");
    let mapping = b.mapping(Mapping {
        memory_limit: 1 << 30,
        filename_strindex: filename,
        ..Default::default()
    });
    let locations: Vec<i32> = (0..FUNCTIONS)
        .map(|f| {
            let owner = if f < SHARED_FUNCTIONS {
                "shared".to_owned()
            } else {
                format!("copy{copy}")
            };
            let name = b.string(&format!("{owner}::function_{f}"));
            let file = b.string(&format!("src/{owner}/file_{}.rs", f % 50));
            let function = b.function(Function {
                name_strindex: name,
                system_name_strindex: name,
                filename_strindex: file,
                start_line: 1,
            });
            b.location(Location {
                mapping_index: mapping,
                address: 0x1000 + (f as u64) * 64,
                lines: vec![Line {
                    function_index: function,
                    line: (f % 300) as i64 + 1,
                    column: 0,
                }],
                attribute_indices: vec![],
            })
        })
        .collect();
    let stacks: Vec<i32> = (0..STACKS)
        .map(|_| {
            let depth = 4 + rng.below(13);
            let frames: Vec<i32> = (0..depth)
                .map(|_| locations[rng.below(FUNCTIONS)])
                .collect();
            b.stack(&frames)
        })
        .collect();
    let threads: Vec<i32> = (0..THREADS)
        .map(|t| {
            b.attribute(
                "thread.name",
                string_value(format!("copy{copy}-worker-{t}")),
                "",
            )
        })
        .collect();
    let link = b.link(Link {
        trace_id: (copy as u128 + 1).to_be_bytes().to_vec(),
        span_id: vec![1; 8],
    });
    let samples = (0..SAMPLES)
        .map(|_| Sample {
            stack_index: stacks[rng.below(STACKS)],
            attribute_indices: vec![threads[rng.below(THREADS)]],
            link_index: if rng.below(4) == 0 { link } else { 0 },
            values: vec![rng.below(1_000) as i64],
            timestamps_unix_nano: vec![],
        })
        .collect();
    let cpu = b.string("cpu");
    let nanoseconds = b.string("nanoseconds");
    let profile = Profile {
        sample_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: nanoseconds,
        }),
        samples,
        ..Default::default()
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            scope_profiles: vec![ScopeProfiles {
                profiles: vec![profile],
                ..Default::default()
            }],
            ..Default::default()
        }],
        dictionary: Some(b.finish()),
    }
}

fn merge(c: &mut Criterion) {
    let copies: Vec<ExportProfilesServiceRequest> = (0..64).map(synthetic).collect();
    let mut group = c.benchmark_group("merge");
    group.sample_size(20);
    for n in [1, 2, 4, 8, 16, 32, 64] {
        let inputs = copies[..n].to_vec();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("copies", n), &inputs, |b, inputs| {
            b.iter_batched(|| inputs.clone(), merge_requests, BatchSize::LargeInput)
        });
    }
    group.finish();
}

criterion_group!(benches, merge);
criterion_main!(benches);
