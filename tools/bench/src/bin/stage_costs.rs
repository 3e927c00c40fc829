//! Times each stage the collector runs per request, on one thread, for a
//! generated request of STACKS stacks: gunzip, protobuf decode (prost's,
//! then `decode_request`), validation, the memory estimate, OTLP → pprof,
//! pprof encode, gzip, dropping, and decoding into the previous round's
//! request, as the collector's receivers do.
//!
//! Usage: stage_costs [STACKS=2000] [ROUNDS=50]
//! Environment: RANDOM_SHAPE=1 for `ebpf_like_request` instead of
//! `profiler_like_request`; ANALYZE=1 to print what the pprof's bytes are
//! spent on; REQUEST=FILE to time an OTLP protobuf request from a file
//! instead of a generated one; MEMCHECK=1 (MEMCHECK=prost: decoded by prost) to measure the
//! resident memory of decoded requests and conversions against
//! `memory_estimate`; DUMP=FILE to write the pprof; EXPORT_TO=DIR to run
//! only the pprof file exporter (conversion, encoding, gzip, writing) on
//! the decoded request ROUNDS times, writing under DIR (for counting its
//! instructions, allocations or page faults: compare ROUNDS=0), on a batch
//! validated as the OTLP receivers validate it (UNVALIDATED=1: a batch the
//! exporter validates), PAUSE_MS=N apart (so that the allocator gives
//! memory back in between, as it does in a collector at a moderate rate),
//! COLD=N rotating through N decoded copies (out of the caches).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // A measuring tool.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use profbridge_collector::pipeline::memory_estimate;
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{
    decode_request, decode_request_reusing, otlp_to_pprof, otlp_to_unassembled_pprof,
    validate_request, ToPprofOptions,
};
use prost::Message;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let stacks = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let shape = if std::env::var_os("RANDOM_SHAPE").is_some() {
        profbridge_testkit::StackShape::Random
    } else {
        profbridge_testkit::StackShape::CallTree
    };
    let encoded = match std::env::var_os("REQUEST") {
        Some(path) => std::fs::read(path).unwrap(),
        None => profbridge_testkit::generated_request(shape, stacks, 1).encode_to_vec(),
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(&encoded).unwrap();
    let gzipped = gz.finish().unwrap();
    if std::env::var_os("MEMCHECK").is_some() {
        let rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<f64>()
                .unwrap()
                / 1024.0
        };
        // One decoder per run: memory freed by the other would be reused.
        let with_prost = std::env::var_os("MEMCHECK").is_some_and(|v| v == "prost");
        let before = rss();
        let held: Vec<_> = (0..40)
            .map(|_| {
                if with_prost {
                    ExportProfilesServiceRequest::decode(encoded.as_slice()).unwrap()
                } else {
                    decode_request(encoded.as_slice()).unwrap()
                }
            })
            .collect();
        let after = rss();
        let estimate = memory_estimate(&held[0]) as f64 / 1048576.0;
        println!(
            "RSS per decoded request ({}): {:.2} MiB; memory_estimate {:.2} MiB; encoded {:.2} MiB",
            if with_prost {
                "prost"
            } else {
                "decode_request"
            },
            (after - before) / 40.0,
            estimate,
            encoded.len() as f64 / 1048576.0
        );
        let before = rss();
        let converted: Vec<_> = held
            .iter()
            .take(10)
            .map(|r| otlp_to_pprof(r, &ToPprofOptions::default()).unwrap())
            .collect();
        println!(
            "RSS per pprof conversion: {:.2} MiB",
            (rss() - before) / 10.0
        );
        drop(converted);
        return;
    }
    if let Some(dir) = std::env::var_os("EXPORT_TO") {
        export_only(&encoded, dir.to_str().unwrap(), rounds);
        return;
    }
    let mut totals = [Duration::ZERO; 13];
    let names = [
        "gunzip",
        "decode (prost)",
        "drop prost's request",
        "decode_request",
        "validate",
        "memory_estimate",
        "to_pprof",
        "pprof encode",
        "zlib-rs gzip 1",
        "gzip 1 (ours)",
        "drop pprof",
        "drop request",
        "decode into a spare",
    ];
    let mut out_bytes = 0;
    let mut zlib_bytes = 0;
    let mut raw_bytes = 0;
    let mut compressor = profbridge_pprof::GzipCompressor::new(1);
    let mut pprof_gz = Vec::new();
    let mut spare = ExportProfilesServiceRequest::default();
    for _ in 0..rounds {
        let mut t = Instant::now();
        let mut lap = |i: usize, totals: &mut [Duration; 13]| {
            let now = Instant::now();
            totals[i] += now - t;
            t = now;
        };
        let mut raw = Vec::with_capacity(encoded.len());
        flate2::read::GzDecoder::new(gzipped.as_slice())
            .read_to_end(&mut raw)
            .unwrap();
        lap(0, &mut totals);
        let prost_request = ExportProfilesServiceRequest::decode(raw.as_slice()).unwrap();
        lap(1, &mut totals);
        drop(prost_request);
        lap(2, &mut totals);
        let request = decode_request(raw.as_slice()).unwrap();
        lap(3, &mut totals);
        let validated = validate_request(&request).unwrap();
        assert!(validated.invalid.is_empty());
        lap(4, &mut totals);
        std::hint::black_box(memory_estimate(&request));
        lap(5, &mut totals);
        let converted = otlp_to_unassembled_pprof(&request, &ToPprofOptions::default()).unwrap();
        lap(6, &mut totals);
        if std::env::var_os("ANALYZE").is_some() {
            let converted = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
            for output in &converted.profiles {
                let p = &output.profile;
                let sample: usize = p.sample.iter().map(|s| s.encoded_len()).sum();
                let locs: usize = p.sample.iter().map(|s| s.location_id.len()).sum();
                let loc_bytes: usize = p
                    .sample
                    .iter()
                    .map(|s| prost::encoding::uint64::encoded_len_packed(1, &s.location_id))
                    .sum();
                let label_bytes: usize = p
                    .sample
                    .iter()
                    .map(|s| prost::encoding::message::encoded_len_repeated(3, &s.label))
                    .sum();
                let strings: usize = p.string_table.iter().map(|s| s.len() + 2).sum();
                let location: usize = p.location.iter().map(|s| s.encoded_len()).sum();
                let function: usize = p.function.iter().map(|s| s.encoded_len()).sum();
                println!("samples {} ({} bytes; {} location ids, {} bytes; labels {} bytes) strings {} ({} bytes) locations {} ({} bytes) functions {} ({} bytes)",
                    p.sample.len(), sample, locs, loc_bytes, label_bytes, p.string_table.len(), strings, p.location.len(), location, p.function.len(), function);
            }
            return;
        }
        let mut raws = Vec::new();
        for output in &converted.profiles {
            raws.push(output.profile.encode());
        }
        lap(7, &mut totals);
        if let Some(path) = std::env::var_os("DUMP") {
            std::fs::write(path, &raws[0]).unwrap();
        }
        for raw in &raws {
            raw_bytes += raw.len();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
            gz.write_all(raw).unwrap();
            zlib_bytes += gz.finish().unwrap().len();
        }
        lap(8, &mut totals);
        for raw in &raws {
            compressor.compress_into(raw, &mut pprof_gz).unwrap();
            out_bytes += pprof_gz.len();
        }
        lap(9, &mut totals);
        drop(converted);
        lap(10, &mut totals);
        drop(request);
        lap(11, &mut totals);
        spare = decode_request_reusing(raw.as_slice(), std::mem::take(&mut spare)).unwrap();
        lap(12, &mut totals);
    }
    println!(
        "request: {} bytes, {} gzipped; pprof {} bytes, pprof.gz {} bytes (zlib-rs: {})",
        encoded.len(),
        gzipped.len(),
        raw_bytes / rounds as usize,
        out_bytes / rounds as usize,
        zlib_bytes / rounds as usize
    );
    for (name, total) in names.iter().zip(totals) {
        println!(
            "{name:>20}: {:8.3} ms",
            total.as_secs_f64() * 1e3 / f64::from(rounds)
        );
    }
}

/// The file exporter alone, as a pipeline's exporter runs it.
fn export_only(encoded: &[u8], dir: &str, rounds: u32) {
    use profbridge_collector::exporters::file::config::FileExporterConfig;
    use profbridge_collector::exporters::file::FileExporter;
    use profbridge_collector::pipeline::Profiles;

    let config = FileExporterConfig {
        path: dir.to_owned(),
        path_template: Some("{seq}.pb.gz".to_owned()),
        ..FileExporterConfig::default()
    };
    let exporter = FileExporter::new(&config).unwrap();
    // COLD=N exports N separately decoded copies in turn, so that each
    // export finds its request out of the caches, as in a collector whose
    // queue holds other requests.
    let copies = std::env::var("COLD")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_usize)
        .max(1);
    let batches: Vec<Profiles> = (0..copies)
        .map(|_| {
            let request = decode_request(encoded).unwrap();
            if std::env::var_os("UNVALIDATED").is_some() {
                Profiles::new(request, encoded.len())
            } else {
                let validation = validate_request(&request).unwrap();
                Profiles::validated(request, encoded.len(), validation)
            }
        })
        .collect();
    let pause = std::env::var("PAUSE_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis);
    let mut busy = Duration::ZERO;
    let mut written = Vec::new();
    for batch in batches.iter().cycle().take(rounds as usize) {
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
        let start = Instant::now();
        let report = exporter.export(batch).unwrap();
        busy += start.elapsed();
        written.extend(report.files);
    }
    for file in written {
        std::fs::remove_file(file).unwrap();
    }
    println!(
        "export: {:.3} ms",
        busy.as_secs_f64() * 1e3 / f64::from(rounds.max(1))
    );
}
