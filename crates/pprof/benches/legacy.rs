//! parse_legacy on a generated 64-bit gperftools CPU profile of 200,000
//! records (profbridge_testkit::gperftools_cpu_profile), alone and followed
//! by the gzip encode that scripts/bench-vs-go.sh also times.
//! Run: cargo bench -p profbridge-pprof --bench legacy

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use profbridge_pprof::{encode, parse_legacy, Compression, EncodeOptions, DEFAULT_GZIP_LEVEL};
use profbridge_testkit::gperftools_cpu_profile;

const RECORDS: usize = 200_000;
const SEED: u64 = 1;

fn legacy(c: &mut Criterion) {
    let input = gperftools_cpu_profile(RECORDS, SEED);
    let profile = parse_legacy(&input).expect("the generated gperftools profile parses");
    let gzip = EncodeOptions {
        compression: Compression::Gzip {
            level: DEFAULT_GZIP_LEVEL,
        },
    };
    eprintln!(
        "gperftools 200k records: {} bytes in, {} samples, {} locations, {} mappings",
        input.len(),
        profile.sample.len(),
        profile.location.len(),
        profile.mapping.len()
    );

    let mut group = c.benchmark_group("gperftools 200k records");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("parse_legacy", |b| {
        b.iter(|| parse_legacy(&input).expect("parses"))
    });
    group.bench_function("parse_legacy+encode gzipped", |b| {
        b.iter(|| encode(&parse_legacy(&input).expect("parses"), &gzip))
    });
    group.finish();
}

criterion_group!(benches, legacy);
criterion_main!(benches);
