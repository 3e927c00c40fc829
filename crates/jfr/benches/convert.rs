//! JFR → pprof and JFR → OTLP bytes (`jfr_to_otlp`, what convert and the
//! file receiver run) throughput, in MB/s of recording, on a recording
//! of several megabytes made by `profbridge_testkit::jdk` (a longer run of
//! the workload, mostly allocation events). Skips with a note when no JDK
//! is installed. Run: cargo bench -p profbridge-jfr --bench convert

#![allow(clippy::panic)] // A recording that does not convert is a bug, not a skip.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use profbridge_jfr::{convert, ConvertOptions, Converted};
use profbridge_testkit::jdk::{record_with, Jdk, RecordSpec};
use profbridge_translate::{jfr_to_otlp, ToOtlpOptions};
use prost::Message;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The recording's profiles as one OTLP request, encoded.
fn to_otlp_bytes(converted: &Converted) -> Vec<u8> {
    let out = jfr_to_otlp(converted, &[], None, &ToOtlpOptions::default());
    assert!(
        out.rejected.is_empty(),
        "profiles rejected: {:?}",
        out.rejected
    );
    out.request.encode_to_vec()
}

fn bench_convert(c: &mut Criterion) {
    let jdk = match Jdk::locate() {
        Ok(jdk) => jdk,
        Err(missing) => {
            eprintln!("SKIPPED: `{missing}` is not installed; the JFR benchmark needs a JDK");
            return;
        }
    };
    let recording = record_with(&jdk, &RecordSpec::large());
    let bytes = recording.bytes();
    let options = ConvertOptions::default();
    let converted = match convert(&bytes, &options) {
        Ok(converted) => converted,
        Err(e) => panic!("{} does not convert: {e}", recording.path.display()),
    };
    let samples: usize = converted
        .profiles
        .iter()
        .map(|p| p.profile.sample.len())
        .sum();
    eprintln!(
        "{}: {} bytes, {} chunks, {} profiles, {samples} samples",
        recording.path.display(),
        bytes.len(),
        recording.summary.chunks,
        converted.profiles.len()
    );

    let mut group = c.benchmark_group("jfr");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("jfr → pprof", |b| {
        b.iter(|| convert(&bytes, &options).map(|c| c.profiles.len()))
    });
    group.bench_function("jfr → otlp bytes", |b| {
        b.iter(|| convert(&bytes, &options).map(|c| to_otlp_bytes(&c).len()))
    });
    group.finish();
}

criterion_group!(benches, bench_convert);
criterion_main!(benches);
