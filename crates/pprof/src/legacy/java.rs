//! The Java agent's text profiles (`--- heapz 1 ---`,
//! `--- contentionz 1 ---`) and the symbol section its CPU profiles share.

use std::collections::HashMap;

use super::heap::unsample;
use super::maps::remap_mapping_ids;
use super::model::{LegacyFunction, LegacyLine, LegacyProfile};
use super::patterns::{group, Pattern};
use super::scanner::{hex_addresses, parse_int_auto};
use super::LegacyError;

static ATTRIBUTE: Pattern = Pattern::re2("Java attribute", r"([\w ]+)=([\w ]+)");
static SAMPLE: Pattern = Pattern::re2("Java sample", r" *(\d+) +(\d+) +@ +([ x0-9a-f]*)");
static LOCATION: Pattern = Pattern::re2("Java location", r"^\s*0x([[:xdigit:]]+)\s+(.*)\s*$");
static FILE_LINE: Pattern = Pattern::re2(
    "Java function (file:line)",
    r"^(.*)\s+\((.+):(-?[[:digit:]]+)\)$",
);
static PATH: Pattern = Pattern::re2("Java function (path)", r"^(.*)\s+\((.*)\)$");

/// The Java agent samples heap allocations every 512 KiB on average.
const HEAP_SAMPLING_RATE: i64 = 524_288;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Heap,
    Contention,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Heap => "Java heap",
            Self::Contention => "Java contention",
        }
    }
}

pub(super) fn recognizes(text: &str) -> Option<super::LegacyKind> {
    let (header, _) = text.split_once('\n')?;
    match header.trim() {
        "--- heapz 1 ---" => Some(super::LegacyKind::JavaHeap),
        "--- contentionz 1 ---" => Some(super::LegacyKind::JavaContention),
        _ => None,
    }
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let Some((header, body)) = text.split_once('\n') else {
        return Err(LegacyError::Unrecognized);
    };
    let kind = match header.trim() {
        "--- heapz 1 ---" => Kind::Heap,
        "--- contentionz 1 ---" => Kind::Contention,
        _ => return Err(LegacyError::Unrecognized),
    };
    let mut profile = LegacyProfile::new(&[], ("", ""), 0);
    let mut lines = CompleteLines::new(body, 2);
    parse_attributes(kind, &mut lines, &mut profile)?;
    parse_samples(kind, &mut lines, &mut profile)?;
    parse_locations(lines.rest(), &mut profile).map(|()| profile)
}

/// Lines that end in `\n`; a last line without one is left in `rest`.
struct CompleteLines<'a> {
    rest: &'a str,
    line_number: usize,
}

impl<'a> CompleteLines<'a> {
    fn new(text: &'a str, first_line_number: usize) -> Self {
        Self {
            rest: text,
            line_number: first_line_number,
        }
    }

    fn peek(&self) -> Option<&'a str> {
        self.rest.split_once('\n').map(|(line, _)| line.trim())
    }

    fn advance(&mut self) {
        if let Some((_, rest)) = self.rest.split_once('\n') {
            self.rest = rest;
            self.line_number += 1;
        }
    }

    fn rest(&self) -> &'a str {
        self.rest
    }
}

fn parse_attributes(
    kind: Kind,
    lines: &mut CompleteLines<'_>,
    profile: &mut LegacyProfile,
) -> Result<(), LegacyError> {
    let attribute_pattern = ATTRIBUTE.regex()?;
    while let Some(line) = lines.peek() {
        if !line.is_empty() {
            let Some(captures) = attribute_pattern.captures(line) else {
                return Ok(());
            };
            let (attribute, value) = (group(&captures, 1).trim(), group(&captures, 2).trim());
            let bad_number = || LegacyError::Malformed {
                format: kind.name(),
                line: lines.line_number,
                problem: format!("failed to parse attribute {line}"),
            };
            match (kind, attribute) {
                (_, "format") if value != "java" => return Err(LegacyError::Unrecognized),
                (_, "format") => {}
                (Kind::Heap, "resolution") => {
                    profile.sample_types = vec![
                        ("inuse_objects".into(), "count".into()),
                        ("inuse_space".into(), value.into()),
                    ];
                }
                (Kind::Contention, "resolution") => {
                    profile.sample_types = vec![
                        ("contentions".into(), "count".into()),
                        ("delay".into(), value.into()),
                    ];
                }
                (Kind::Contention, "sampling period") => {
                    profile.period_type = ("contentions".into(), "count".into());
                    profile.period = parse_int_auto(value).ok_or_else(bad_number)?;
                }
                (Kind::Contention, "ms since reset") => {
                    let millis = parse_int_auto(value).ok_or_else(bad_number)?;
                    profile.duration_nanos = millis.wrapping_mul(1_000_000);
                }
                _ => return Err(LegacyError::Unrecognized),
            }
        }
        lines.advance();
    }
    Ok(())
}

fn parse_samples(
    kind: Kind,
    lines: &mut CompleteLines<'_>,
    profile: &mut LegacyProfile,
) -> Result<(), LegacyError> {
    let sample_pattern = SAMPLE.regex()?;
    while let Some(line) = lines.peek() {
        if !line.is_empty() {
            let Some(captures) = sample_pattern.captures(line) else {
                return Ok(());
            };
            let malformed = |problem: String| LegacyError::Malformed {
                format: kind.name(),
                line: lines.line_number,
                problem,
            };
            let addresses = hex_addresses(group(&captures, 3))
                .map_err(|e| malformed(format!("malformed sample: {line}: {e}")))?;
            let stack = profile.stack(&addresses, |_, address| address);
            // The agent writes the two values the other way round.
            let number = |i| {
                parse_int_auto(group(&captures, i))
                    .ok_or_else(|| malformed(format!("parsing sample {line}")))
            };
            let (mut first, mut second) = (number(2)?, number(1)?);
            let mut block_size = None;
            match kind {
                Kind::Heap => {
                    if first == 0 {
                        return Err(malformed(format!(
                            "parsing sample {line}: second value must be non-zero"
                        )));
                    }
                    block_size = Some(second.wrapping_div(first));
                    (first, second) = unsample(first, second, HEAP_SAMPLING_RATE);
                }
                Kind::Contention if profile.period != 0 => {
                    first = first.wrapping_mul(profile.period);
                    second = second.wrapping_mul(profile.period);
                }
                Kind::Contention => {}
            }
            profile.add_sample(stack, vec![first, second]);
            if let (Some(size), Some(sample)) = (block_size, profile.samples.last_mut()) {
                sample.num_labels.push(("bytes".to_owned(), size));
            }
        }
        lines.advance();
    }
    Ok(())
}

/// Reads `0xADDRESS function (file:line)` lines, gives the locations that
/// samples use their function and line, and clears their addresses.
pub(super) fn parse_locations(text: &str, profile: &mut LegacyProfile) -> Result<(), LegacyError> {
    let mut functions: HashMap<String, usize> = HashMap::new();
    let location_pattern = LOCATION.regex()?;
    for line in text.split_inclusive('\n').map(str::trim) {
        if line.is_empty() {
            continue;
        }
        let Some(captures) = location_pattern.captures(line) else {
            continue;
        };
        let address =
            u64::from_str_radix(group(&captures, 1), 16).map_err(|_| LegacyError::Malformed {
                format: "Java",
                line: 0,
                problem: format!("parsing sample {line}: address overflows 64 bits"),
            })?;
        let Some(location) = profile.location_index_at(address) else {
            continue;
        };
        let (name, file, line_number) = describe(group(&captures, 2))?;
        let function = match functions.get(&name) {
            Some(&function) => function,
            None => {
                let function = profile.add_function(LegacyFunction {
                    name: name.clone(),
                    filename: file,
                });
                functions.insert(name, function);
                function
            }
        };
        if let Some(location) = profile.locations.get_mut(location) {
            location.line = Some(LegacyLine {
                function,
                line: line_number,
            });
            location.address = 0;
        }
    }
    profile.remap_location_ids();
    profile.remap_function_ids();
    remap_mapping_ids(profile);
    // google/pprof then drops every address so that samples merge.
    for location in &mut profile.locations {
        location.address = 0;
    }
    Ok(())
}

/// (function, file, line) from `function (file:line)`, `function (path)`,
/// a JIT stub, or a bare name such as `GC`.
fn describe(text: &str) -> Result<(String, String, i64), LegacyError> {
    if let Some(c) = FILE_LINE.regex()?.captures(text) {
        let line = group(&c, 3)
            .parse::<i64>()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or(0);
        return Ok((group(&c, 1).to_owned(), group(&c, 2).to_owned(), line));
    }
    if let Some(c) = PATH.regex()?.captures(text) {
        return Ok((group(&c, 1).to_owned(), base_name(group(&c, 2)), 0));
    }
    if text.contains("generated stub/JIT") {
        return Ok(("STUB".to_owned(), String::new(), 0));
    }
    Ok((text.to_owned(), String::new(), 0))
}

/// Go's filepath.Base.
fn base_name(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_owned();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[&ATTRIBUTE, &SAMPLE, &LOCATION, &FILE_LINE, &PATH]);
    }
}
