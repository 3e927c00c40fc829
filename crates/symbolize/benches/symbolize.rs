//! Frames per second: 20,000 distinct addresses spread over the `.text` of
//! this bench's own executable (a Rust binary with line tables, inlined
//! frames included), symbolized cold (a new Symbolizer: the file opened and
//! its DWARF parsed as the addresses need it) and warm (the same Symbolizer,
//! a fresh copy of the request each time). `PROFBRIDGE_BENCH_BINARY` names
//! another file to symbolize.
//! Run: cargo bench -p profbridge-symbolize --bench symbolize

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use object::{Object, ObjectSection};
use profbridge_symbolize::{Sources, Symbolizer};
use profbridge_testkit::SeededRng;
use profbridge_translate::otlp::{ExportProfilesServiceRequest, Location, Mapping};
use profbridge_translate::DictionaryBuilder;

const ADDRESSES: usize = 20_000;

/// Names another file to symbolize, so that two builds of the bench can be
/// compared on the same one.
const BINARY_VAR: &str = "PROFBRIDGE_BENCH_BINARY";

/// A request whose one mapping is `binary` with ELF addresses (start and
/// limit 0), and a location per address.
fn request(binary: &str, addresses: &[u64]) -> ExportProfilesServiceRequest {
    let mut dictionary = DictionaryBuilder::new();
    let filename_strindex = dictionary.string(binary);
    let mapping_index = dictionary.mapping(Mapping {
        filename_strindex,
        ..Mapping::default()
    });
    for &address in addresses {
        dictionary.location(Location {
            mapping_index,
            address,
            ..Location::default()
        });
    }
    ExportProfilesServiceRequest {
        dictionary: Some(dictionary.finish()),
        ..ExportProfilesServiceRequest::default()
    }
}

fn bench(c: &mut Criterion) {
    let binary = std::env::var_os(BINARY_VAR)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::current_exe().unwrap());
    let data = std::fs::read(&binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text = file.section_by_name(".text").unwrap();
    let mut rng = SeededRng::new(7);
    let mut addresses: Vec<u64> = (0..ADDRESSES)
        .map(|_| text.address() + rng.next_u64() % text.size())
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let request = request(&binary.to_string_lossy(), &addresses);
    let sources = || Sources {
        root: Some(PathBuf::from("/")),
        debug_dirs: Vec::new(),
        ..Sources::default()
    };
    let check = Symbolizer::new(sources()).symbolize(&mut request.clone());
    assert!(check.locations_symbolized as usize > addresses.len() / 2);

    let mut group = c.benchmark_group("symbolize");
    group.sample_size(10);
    group.throughput(Throughput::Elements(addresses.len() as u64));
    group.bench_function("cold", |b| {
        b.iter_batched(
            || request.clone(),
            |mut request| Symbolizer::new(sources()).symbolize(&mut request),
            BatchSize::LargeInput,
        )
    });
    let mut warm = Symbolizer::new(sources());
    group.bench_function("warm", |b| {
        b.iter_batched(
            || request.clone(),
            |mut request| warm.symbolize(&mut request),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
