//! The level-1 gzip profbridge writes (`GzipCompressor::new(1)`) against
//! flate2's zlib-rs at level 1, both with state kept between inputs, on
//! the corpus read at run time: throughput, and the output size on
//! stderr. Level 1 is our own deflate (codec/gzip/deflate/), kept only
//! while it is faster than zlib-rs for no more bytes (docs/benchmarks.md,
//! "Own level-1 deflate").
//! Run: cargo bench -p profbridge-pprof --bench deflate

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flate2::{Compress, Compression, FlushCompress};
use profbridge_pprof::{gunzip, DecodeOptions, GzipCompressor};
use profbridge_testkit::corpus_files;

/// The corpus files as a writer would compress them: pprof protobuf
/// (gunzipped when stored gzipped), and every legacy file as it is.
fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut inputs: Vec<(String, Vec<u8>)> = corpus_files()
        .into_iter()
        .map(|file| {
            let bytes = if file.is_gzip() {
                gunzip(&file.bytes, &DecodeOptions::default()).expect("gunzips")
            } else {
                file.bytes
            };
            (file.name, bytes)
        })
        .collect();
    let all: Vec<u8> = inputs.iter().flat_map(|(_, b)| b.clone()).collect();
    inputs.push(("whole corpus".to_owned(), all));
    inputs
}

fn zlib_rs_gzip(state: &mut Compress, raw: &[u8], out: &mut Vec<u8>) {
    state.reset();
    out.clear();
    out.reserve(raw.len() + 4096);
    state
        .compress_vec(raw, out, FlushCompress::Finish)
        .expect("deflates");
}

fn deflate(c: &mut Criterion) {
    let mut ours = GzipCompressor::new(1);
    let mut zlib = Compress::new_gzip(Compression::new(1), 15);
    let mut out = Vec::new();
    for (name, raw) in inputs() {
        if raw.len() < 4096 && name != "whole corpus" {
            continue;
        }
        ours.compress_into(&raw, &mut out).expect("gzips");
        let own_size = out.len();
        zlib_rs_gzip(&mut zlib, &raw, &mut out);
        let zlib_size = out.len();
        eprintln!(
            "size {name}: input {} own {own_size} zlib-rs {zlib_size} (own/zlib-rs {:.3})",
            raw.len(),
            own_size as f64 / zlib_size as f64
        );
        let mut group = c.benchmark_group(format!("deflate level 1/{name}"));
        group.sample_size(20);
        group.throughput(Throughput::Bytes(raw.len() as u64));
        group.bench_function("own", |b| {
            b.iter(|| ours.compress_into(&raw, &mut out).expect("gzips"))
        });
        group.bench_function("zlib-rs", |b| {
            b.iter(|| zlib_rs_gzip(&mut zlib, &raw, &mut out))
        });
        group.finish();
    }
}

criterion_group!(benches, deflate);
criterion_main!(benches);
