//! decode + encode of large.cpu, raw and gzipped, and the parts of it.
//! Run: cargo bench -p profbridge-pprof --bench codec

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use prost::bytes::Bytes;

use profbridge_pprof::{
    decode, decode_packed_keeping_raw, encode, encode_packed, gunzip, gunzip_into, validate,
    Compression, DecodeOptions, EncodeOptions, GzipCompressor, DEFAULT_GZIP_LEVEL,
};
use profbridge_testkit::corpus_file;

fn codec(c: &mut Criterion) {
    let Some(file) = corpus_file("large.cpu") else {
        return;
    };
    let options = DecodeOptions::default();
    let gzip = EncodeOptions {
        compression: Compression::Gzip {
            level: DEFAULT_GZIP_LEVEL,
        },
    };
    let raw_options = EncodeOptions {
        compression: Compression::None,
    };
    let profile = decode(&file.bytes, &options).expect("large.cpu decodes");
    let raw = encode(&profile, &raw_options);

    let mut group = c.benchmark_group("large.cpu");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(raw.len() as u64));
    group.bench_function("decode+encode gzipped", |b| {
        b.iter(|| encode(&decode(&file.bytes, &options).expect("decodes"), &gzip))
    });
    group.bench_function("decode+encode raw", |b| {
        b.iter(|| encode(&decode(&raw, &options).expect("decodes"), &raw_options))
    });
    group.bench_function("decode gzipped", |b| {
        b.iter(|| decode(&file.bytes, &options).expect("decodes"))
    });
    group.bench_function("decode raw", |b| {
        b.iter(|| decode(&raw, &options).expect("decodes"))
    });
    // Samples left in their protobuf (what `convert` reads pprof into).
    let gzipped_bytes = Bytes::from(file.bytes.clone());
    group.bench_function("decode packed gzipped", |b| {
        b.iter(|| decode_packed_keeping_raw(gzipped_bytes.clone(), &options).expect("decodes"))
    });
    group.bench_function("decode packed+encode gzipped", |b| {
        b.iter(|| {
            let (packed, strings) =
                decode_packed_keeping_raw(gzipped_bytes.clone(), &options).expect("decodes");
            encode_packed(packed, &strings, &gzip)
        })
    });
    group.bench_function("validate", |b| {
        b.iter(|| validate(&profile).expect("valid"))
    });
    group.bench_function("encode raw", |b| b.iter(|| encode(&profile, &raw_options)));
    group.bench_function("encode gzipped", |b| b.iter(|| encode(&profile, &gzip)));
    group.bench_function("drop", |b| {
        b.iter_batched(|| profile.clone(), drop, BatchSize::LargeInput)
    });
    // The default level's own deflate against zlib-rs at the same level,
    // both with state kept between inputs.
    let mut ours = GzipCompressor::new(DEFAULT_GZIP_LEVEL);
    let mut gzipped = Vec::new();
    group.bench_function("gzip level 1", |b| {
        b.iter(|| ours.compress_into(&raw, &mut gzipped).expect("gzips"))
    });
    let mut zlib = flate2::Compress::new(flate2::Compression::fast(), false);
    group.bench_function("zlib-rs deflate level 1 (baseline)", |b| {
        b.iter(|| {
            zlib.reset();
            gzipped.clear();
            gzipped.reserve(raw.len());
            zlib.compress_vec(&raw, &mut gzipped, flate2::FlushCompress::Finish)
                .expect("deflates")
        })
    });
    group.finish();
    bench_gunzip(c, &file.bytes, &options);
}

/// Gunzipping whole, cut in half (its trailer then gives a random size)
/// and into a reused buffer with much spare room, as the receivers do.
fn bench_gunzip(c: &mut Criterion, gzipped: &[u8], options: &DecodeOptions) {
    let mut group = c.benchmark_group("gunzip large.cpu");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(gzipped.len() as u64));
    group.bench_function("whole", |b| {
        b.iter(|| gunzip(gzipped, options).expect("gunzips"))
    });
    group.bench_function("flate2 MultiGzDecoder (baseline)", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(gzipped), &mut out)
                .expect("gunzips");
            out
        })
    });
    let half = &gzipped[..gzipped.len() / 2];
    group.bench_function("cut in half", |b| {
        b.iter(|| gunzip(half, options).expect_err("cut off"))
    });
    let mut inflater = flate2::Decompress::new(false);
    let mut reused = Vec::with_capacity(64 << 20);
    group.bench_function("into a reused 64 MiB buffer", |b| {
        b.iter(|| {
            reused.clear();
            gunzip_into(gzipped, &mut reused, 256 << 20, &mut inflater).expect("gunzips")
        })
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
