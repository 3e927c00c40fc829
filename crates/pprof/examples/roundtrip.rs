//! Times parse → encode → gz on one file, the work scripts/bench-vs-go.sh
//! compares with google/pprof's Parse + Write. The input is read by
//! `parse_any`: pprof (gzipped or raw) is decoded with validation, and a
//! legacy profile is parsed as google/pprof parses it, then validated, as
//! google/pprof's Parse falls back to its legacy parsers and runs CheckValid.
//!
//! Usage: roundtrip FILE [ITERATIONS] [GZIP_LEVEL]
//! Prints one line: `ns_per_op=N bytes_out=N`.

use std::time::Instant;

// The profbridge binary runs on mimalloc; so do its benchmarks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use profbridge_pprof::{encode, parse_any, Compression, DecodeOptions, EncodeOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: roundtrip FILE [ITERATIONS] [GZIP_LEVEL]")?;
    let iterations: u32 = args.next().map_or(Ok(20), |s| s.parse())?;
    let level: u32 = args
        .next()
        .map_or(Ok(profbridge_pprof::DEFAULT_GZIP_LEVEL), |s| s.parse())?;
    let input = std::fs::read(&path)?;
    let decode_options = DecodeOptions::default();
    let options = EncodeOptions {
        compression: Compression::Gzip { level },
    };

    let mut bytes_out = 0;
    let start = Instant::now();
    for _ in 0..iterations {
        let (profile, _format) =
            parse_any(&input, &decode_options).map_err(|e| format!("{path}: {e}"))?;
        bytes_out = encode(&profile, &options).len();
    }
    let ns_per_op = start.elapsed().as_nanos() / u128::from(iterations.max(1));
    println!("ns_per_op={ns_per_op} bytes_out={bytes_out}");
    Ok(())
}
