//! Writes a synthetic 64-bit little-endian gperftools CPU profile with many
//! distinct stacks (profbridge_testkit::gperftools_cpu_profile), the legacy
//! input of scripts/bench-vs-go.sh and of the `legacy` benchmark.
//!
//! Usage: gen_gperftools OUT_FILE [RECORDS] [SEED]   (default 200000 records, seed 1)

use profbridge_testkit::gperftools_cpu_profile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: gen_gperftools OUT_FILE [RECORDS] [SEED]")?;
    let records: usize = args.next().map_or(Ok(200_000), |s| s.parse())?;
    let seed: u64 = args.next().map_or(Ok(1), |s| s.parse())?;
    let bytes = gperftools_cpu_profile(records, seed);
    std::fs::write(&out, &bytes)?;
    println!("{out}: {records} records, {} bytes", bytes.len());
    Ok(())
}
