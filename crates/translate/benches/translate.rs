//! pprof.gz → OTLP protobuf bytes and OTLP bytes → pprof.gz, on large.cpu
//! and on a synthetic eBPF-like request (10k stacks of 30–60 frames, mixed
//! frame types, timestamps). Run: cargo bench -p profbridge-translate --bench translate

#![allow(clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use profbridge_pprof::{decode, encode, parse_any, DecodeOptions, EncodeOptions};
use profbridge_testkit::{corpus_file, ebpf_like_request};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, PprofInput, ToOtlpOptions, ToPprofOptions,
};
use prost::Message;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn pprof_gz_to_otlp_bytes(pprof: &[u8]) -> Vec<u8> {
    let (profile, _) = parse_any(pprof, &DecodeOptions::default()).expect("parses");
    let input = PprofInput {
        profile: &profile,
        resource_attributes: &[],
        scope: None,
        original_payload: None,
    };
    pprof_to_otlp(&[input], &ToOtlpOptions::default())
        .request
        .encode_to_vec()
}

fn otlp_bytes_to_pprof_gz(otlp: &[u8]) -> Vec<Vec<u8>> {
    let request = ExportProfilesServiceRequest::decode(otlp).expect("decodes");
    let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).expect("converts");
    converted
        .profiles
        .iter()
        .map(|out| encode(&out.profile, &EncodeOptions::default()))
        .collect()
}

fn bench_pair(c: &mut Criterion, name: &str, pprof: &[u8], otlp: &[u8]) {
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    group.bench_function("pprof.gz -> OTLP bytes", |b| {
        b.iter(|| pprof_gz_to_otlp_bytes(pprof))
    });
    group.bench_function("OTLP bytes -> pprof.gz", |b| {
        b.iter(|| otlp_bytes_to_pprof_gz(otlp))
    });
    group.bench_function("pprof decode+encode (codec floor)", |b| {
        b.iter(|| {
            let profile = decode(pprof, &DecodeOptions::default()).expect("decodes");
            encode(&profile, &EncodeOptions::default())
        })
    });
    group.finish();
}

fn translate(c: &mut Criterion) {
    if let Some(file) = corpus_file("large.cpu") {
        let otlp = pprof_gz_to_otlp_bytes(&file.bytes);
        bench_pair(c, "large.cpu", &file.bytes, &otlp);
    }
    let otlp = ebpf_like_request(10_000, 1).encode_to_vec();
    let pprof = otlp_bytes_to_pprof_gz(&otlp)
        .into_iter()
        .next()
        .expect("one profile");
    bench_pair(c, "ebpf-like 10k stacks", &pprof, &otlp);
}

criterion_group!(benches, translate);
criterion_main!(benches);
