//! Text contention profiles: gperftools contentionz and Go's legacy
//! `--- mutex:` / `--- contention:`.

use regex::Regex;

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::patterns::{group, Pattern};
use super::scanner::{hex_addresses, is_space_or_comment, parse_decimal, parse_int_auto, Scanner};
use super::{skip_to_memory_map, LegacyError};

static SAMPLE: Pattern = Pattern::re2("contention sample", r"(\d+) *(\d+) @([ x0-9a-f]*)");

const FORMAT: &str = "contention";

pub(super) fn recognizes(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    ["--- contentionz ", "--- mutex:", "--- contention:"]
        .iter()
        .any(|prefix| first.starts_with(prefix))
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let mut lines = Scanner::new(text);
    if !lines.scan() {
        return Err(LegacyError::Unrecognized);
    }
    let first = lines.text();
    if !["--- contentionz ", "--- mutex:", "--- contention:"]
        .iter()
        .any(|prefix| first.starts_with(prefix))
    {
        return Err(LegacyError::Unrecognized);
    }
    let mut profile = LegacyProfile::new(
        &[("contentions", "count"), ("delay", "nanoseconds")],
        ("contentions", "count"),
        1,
    );

    let mut cpu_hz = 0;
    while lines.scan() {
        let line = lines.text().trim();
        if is_space_or_comment(line) {
            continue;
        }
        if line.starts_with("---") {
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            break;
        };
        let number = || parse_int_auto(value.trim()).ok_or(LegacyError::Unrecognized);
        match key.trim() {
            "cycles/second" => cpu_hz = number()?,
            "sampling period" => profile.period = number()?,
            "ms since reset" => profile.duration_nanos = number()?.wrapping_mul(1_000_000),
            "discarded samples" => {}
            // "format", "resolution" and anything else: not this format.
            _ => return Err(LegacyError::Unrecognized),
        }
    }

    let sample_pattern = SAMPLE.regex()?;
    loop {
        let line = lines.text().trim();
        if line.starts_with("---") {
            break;
        }
        if !is_space_or_comment(line) {
            let (values, addresses) = parse_sample(sample_pattern, line, profile.period, cpu_hz)
                .map_err(|e| match e {
                    SampleError::NotASample => LegacyError::Unrecognized,
                    SampleError::Malformed(problem) => LegacyError::Malformed {
                        format: FORMAT,
                        line: lines.line_number(),
                        problem,
                    },
                })?;
            let stack = profile.stack(&addresses, |_, address| address.wrapping_sub(1));
            profile.add_sample(stack, values);
        }
        if !lines.scan() {
            break;
        }
    }
    skip_to_memory_map(&mut lines);
    parse_memory_map(&mut lines, &mut profile)?;
    Ok(profile)
}

enum SampleError {
    NotASample,
    Malformed(String),
}

fn parse_sample(
    sample_pattern: &Regex,
    line: &str,
    period: i64,
    cpu_hz: i64,
) -> Result<(Vec<i64>, Vec<u64>), SampleError> {
    let captures = sample_pattern
        .captures(line)
        .ok_or(SampleError::NotASample)?;
    let malformed = || SampleError::Malformed(format!("malformed sample: {line}"));
    let mut cycles = parse_decimal(group(&captures, 1)).ok_or_else(malformed)?;
    let mut count = parse_decimal(group(&captures, 2)).ok_or_else(malformed)?;
    // Unsample: delays go from cycles to nanoseconds, counts by the period.
    if period > 0 {
        if cpu_hz > 0 {
            let cpu_ghz = cpu_hz as f64 / 1e9;
            cycles = (cycles as f64 * period as f64 / cpu_ghz) as i64;
        }
        count = count.wrapping_mul(period);
    }
    let addresses = hex_addresses(group(&captures, 3))
        .map_err(|e| SampleError::Malformed(format!("malformed sample: {line}: {e}")))?;
    Ok((vec![count, cycles], addresses))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[&SAMPLE]);
    }
}
