//! Text heap profiles: gperftools heapz (v1, v2), growthz, fragmentationz,
//! and Go's legacy `heap profile: … @ heap/RATE`.

use regex::{Captures, Regex};

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::patterns::{group, Pattern};
use super::scanner::{
    hex_addresses, is_memory_map_sentinel, is_space_or_comment, parse_decimal, HexOverflow, Scanner,
};
use super::{skip_to_memory_map, LegacyError};

static HEAP_HEADER: Pattern = Pattern::re2(
    "heap header",
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)",
);
static GROWTH_HEADER: Pattern = Pattern::re2(
    "growth header",
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ growthz?",
);
static FRAGMENTATION_HEADER: Pattern = Pattern::re2(
    "fragmentation header",
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ fragmentationz?",
);
static HEAP_SAMPLE: Pattern = Pattern::re2(
    "heap sample",
    r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)",
);

const FORMAT: &str = "heap";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sampling {
    /// Values are as recorded.
    None,
    /// Values were sampled by a Poisson process and are scaled back up.
    V2,
}

struct Header {
    sampling: Sampling,
    period: i64,
    has_alloc: bool,
}

/// Whether the first line is a heap, growth or fragmentation header.
pub(super) fn recognizes(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    [&HEAP_HEADER, &GROWTH_HEADER, &FRAGMENTATION_HEADER]
        .iter()
        .any(|pattern| pattern.claims(first))
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let mut lines = Scanner::new(text);
    if !lines.scan() {
        return Err(LegacyError::Unrecognized);
    }
    let first = lines.text();
    let header = if let Some(captures) = HEAP_HEADER.regex()?.captures(first) {
        parse_header(&captures).ok_or(LegacyError::Unrecognized)?
    } else if GROWTH_HEADER.regex()?.is_match(first)
        || FRAGMENTATION_HEADER.regex()?.is_match(first)
    {
        Header {
            sampling: Sampling::None,
            period: 1,
            has_alloc: false,
        }
    } else {
        return Err(LegacyError::Unrecognized);
    };

    // With allocations, they come first so that pprof's default (the last
    // type) is inuse_space.
    let sample_types: &[(&str, &str)] = if header.has_alloc {
        &[
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ]
    } else {
        &[("objects", "count"), ("space", "bytes")]
    };
    let mut profile = LegacyProfile::new(sample_types, ("space", "bytes"), header.period);

    let sample_pattern = HEAP_SAMPLE.regex()?;
    while lines.scan() {
        let line = lines.text().trim();
        if is_space_or_comment(line) {
            continue;
        }
        if is_memory_map_sentinel(line) {
            break;
        }
        let malformed = |problem: String| LegacyError::Malformed {
            format: FORMAT,
            line: lines.line_number(),
            problem,
        };
        let (values, block_size, addresses) =
            parse_sample(sample_pattern, line, &header).map_err(|e| malformed(e.to_string()))?;
        let stack = profile.stack(&addresses, |_, address| address.wrapping_sub(1));
        profile.add_sample(stack, values);
        if let Some(sample) = profile.samples.last_mut() {
            sample.num_labels.push(("bytes".to_owned(), block_size));
        }
    }
    skip_to_memory_map(&mut lines);
    parse_memory_map(&mut lines, &mut profile)?;
    Ok(profile)
}

fn parse_header(captures: &Captures<'_>) -> Option<Header> {
    let field = |i| group(captures, i);
    let mut period = match field(6) {
        "" => 0,
        digits => parse_decimal(digits)?,
    };
    let has_alloc =
        (field(3) != field(1) && field(3) != "0") || (field(4) != field(2) && field(4) != "0");
    let sampling = match field(5) {
        "heapz_v2" | "heap_v2" => Sampling::V2,
        "heapprofile" => {
            period = 1;
            Sampling::None
        }
        "heap" => {
            period /= 2;
            Sampling::V2
        }
        _ => return None,
    };
    Some(Header {
        sampling,
        period,
        has_alloc,
    })
}

type HeapSample = (Vec<i64>, i64, Vec<u64>);

/// A heap profile line that is not a sample google/pprof reads; each holds
/// the line.
#[derive(Debug, thiserror::Error)]
enum HeapSampleError {
    #[error("not a heap sample: {0}")]
    NotASample(String),
    #[error("malformed sample: {0}")]
    Malformed(String),
    /// `what` is `inuse` or `allocation`.
    #[error("{what} count was 0 but {what} bytes was {size}")]
    BytesWithoutCount { what: &'static str, size: i64 },
    #[error("malformed sample: {line}: {error}")]
    Address { line: String, error: HexOverflow },
}

fn parse_sample(
    sample_pattern: &Regex,
    line: &str,
    header: &Header,
) -> Result<HeapSample, HeapSampleError> {
    let captures = sample_pattern
        .captures(line)
        .ok_or_else(|| HeapSampleError::NotASample(line.to_owned()))?;
    let field = |i| group(&captures, i);
    let mut values = Vec::with_capacity(4);
    let mut block_size = 0;
    let malformed = || HeapSampleError::Malformed(line.to_owned());
    let mut add = |count: &str, size: &str, what: &'static str| -> Result<(), HeapSampleError> {
        let count = parse_decimal(count).ok_or_else(malformed)?;
        let size = parse_decimal(size).ok_or_else(malformed)?;
        if count == 0 && size != 0 {
            return Err(HeapSampleError::BytesWithoutCount { what, size });
        }
        let (mut count, mut size) = (count, size);
        if count != 0 {
            block_size = size.wrapping_div(count);
            if header.sampling == Sampling::V2 {
                (count, size) = unsample(count, size, header.period);
            }
        }
        values.extend([count, size]);
        Ok(())
    };
    if header.has_alloc {
        add(field(3), field(4), "allocation")?;
    }
    add(field(1), field(2), "inuse")?;
    let addresses = hex_addresses(field(5)).map_err(|error| HeapSampleError::Address {
        line: line.to_owned(),
        error,
    })?;
    Ok((values, block_size, addresses))
}

/// Scales a sampled (count, size) back up: with a Poisson sampling rate R,
/// an allocation of S bytes was recorded with probability 1 - e^(-S/R).
pub(super) fn unsample(count: i64, size: i64, rate: i64) -> (i64, i64) {
    if count == 0 || size == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count, size);
    }
    let average = size as f64 / count as f64;
    let scale = 1.0 / (1.0 - (-average / rate as f64).exp());
    ((count as f64 * scale) as i64, (size as f64 * scale) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[
            &HEAP_HEADER,
            &GROWTH_HEADER,
            &FRAGMENTATION_HEADER,
            &HEAP_SAMPLE,
        ]);
    }
}
