//! Times the translations for scripts/bench-vs-go.sh.
//!
//! Usage:
//!   translate_roundtrip FILE [ITERATIONS]
//!     FILE is pprof (gzipped or raw, or any legacy format) or an OTLP
//!     protobuf request. Prints
//!     `to_otlp_ns=N to_pprof_ns=N otlp_bytes=N pprof_bytes=N`: pprof.gz →
//!     OTLP protobuf bytes, and OTLP bytes → pprof.gz.
//!   translate_roundtrip --ebpf-like OTLP_OUT PPROF_OUT
//!     Writes the synthetic eBPF-like request (10k stacks of 30–60 frames)
//!     and its pprof.gz, for the Go side to parse.

use std::time::Instant;

use profbridge_pprof::{detect_format, encode, parse_any, DecodeOptions, EncodeOptions, Format};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, PprofInput, ToOtlpOptions, ToPprofOptions,
};
use prost::Message;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn to_otlp(pprof: &[u8]) -> Result<Vec<u8>> {
    let (profile, _) = parse_any(pprof, &DecodeOptions::default())?;
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    Ok(converted.request.encode_to_vec())
}

fn to_pprof(otlp: &[u8]) -> Result<Vec<u8>> {
    let request = ExportProfilesServiceRequest::decode(otlp)?;
    let converted = otlp_to_pprof(&request, &ToPprofOptions::default())?;
    let first = converted
        .profiles
        .first()
        .ok_or("the request holds no profile")?;
    Ok(encode(&first.profile, &EncodeOptions::default()))
}

fn time(iterations: u32, mut work: impl FnMut() -> Result<Vec<u8>>) -> Result<u128> {
    let start = Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(work()?);
    }
    Ok(start.elapsed().as_nanos() / u128::from(iterations))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, otlp_out, pprof_out] = args.as_slice() {
        if flag == "--ebpf-like" {
            let otlp = profbridge_testkit::ebpf_like_request(10_000, 1).encode_to_vec();
            std::fs::write(pprof_out, to_pprof(&otlp)?)?;
            std::fs::write(otlp_out, otlp)?;
            return Ok(());
        }
    }
    let path = args
        .first()
        .ok_or("usage: translate_roundtrip FILE [ITERATIONS]")?;
    let iterations: u32 = args.get(1).map_or(Ok(20), |s| s.parse())?.max(1);
    let input = std::fs::read(path)?;
    let (pprof, otlp) = match detect_format(&input, &DecodeOptions::default())?.format {
        Format::OtlpProtobuf => (to_pprof(&input)?, input),
        _ => {
            let otlp = to_otlp(&input)?;
            (input, otlp)
        }
    };
    let to_otlp_ns = time(iterations, || to_otlp(&pprof))?;
    let to_pprof_ns = time(iterations, || to_pprof(&otlp))?;
    println!(
        "to_otlp_ns={to_otlp_ns} to_pprof_ns={to_pprof_ns} otlp_bytes={} pprof_bytes={}",
        otlp.len(),
        pprof.len()
    );
    Ok(())
}
