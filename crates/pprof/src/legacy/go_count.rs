//! Go's legacy count profiles (`goroutine profile: total N`,
//! `threadcreate profile: total N`), as runtime/pprof writes with debug=1.

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::patterns::{group, Pattern};
use super::scanner::{is_space_or_comment, parse_int_auto, Scanner};
use super::{skip_to_memory_map, LegacyError};

static START: Pattern = Pattern::re2("Go count header", r"\A(\S+) profile: total \d+\z");
static RECORD: Pattern = Pattern::re2("Go count record", r"\A(\d+) @(( 0x[0-9a-f]+)+)\z");

const FORMAT: &str = "Go count";

pub(super) fn recognizes(text: &str) -> bool {
    let first = text
        .lines()
        .find(|l| !is_space_or_comment(l))
        .unwrap_or_default();
    START.claims(first.strip_suffix('\r').unwrap_or(first))
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let mut lines = Scanner::new(text);
    while lines.scan() && is_space_or_comment(lines.text()) {}
    let captures = START
        .regex()?
        .captures(lines.text())
        .ok_or(LegacyError::Unrecognized)?;
    let kind = group(&captures, 1);
    let mut profile = LegacyProfile::new(&[(kind, "count")], (kind, "count"), 1);

    let record_pattern = RECORD.regex()?;
    while lines.scan() {
        let line = lines.text();
        if is_space_or_comment(line) {
            continue;
        }
        if line.starts_with("---") {
            break;
        }
        let malformed = |problem: &str| LegacyError::Malformed {
            format: FORMAT,
            line: lines.line_number(),
            problem: format!("{problem}: {line}"),
        };
        let record = record_pattern
            .captures(line)
            .ok_or_else(|| malformed("not a `N @ 0x…` record"))?;
        let count = parse_int_auto(group(&record, 1)).ok_or_else(|| malformed("bad count"))?;
        let addresses = group(&record, 2)
            .split_whitespace()
            .map(|pc| {
                pc.strip_prefix("0x")
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            })
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| malformed("address overflows 64 bits"))?;
        let stack = profile.stack(&addresses, |_, address| address.wrapping_sub(1));
        profile.add_sample(stack, vec![count]);
    }
    skip_to_memory_map(&mut lines);
    parse_memory_map(&mut lines, &mut profile)?;
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[&START, &RECORD]);
    }
}
