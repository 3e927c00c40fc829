//! Go's legacy count profiles (`goroutine profile: total N`,
//! `threadcreate profile: total N`), as runtime/pprof writes with debug=1.

use std::sync::LazyLock;

use regex::Regex;

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::patterns::{go_regex, group};
use super::scanner::{is_space_or_comment, parse_int_auto, Scanner};
use super::{skip_to_memory_map, LegacyError};

static START: LazyLock<Option<Regex>> = LazyLock::new(|| go_regex(r"\A(\S+) profile: total \d+\z"));
static RECORD: LazyLock<Option<Regex>> =
    LazyLock::new(|| go_regex(r"\A(\d+) @(( 0x[0-9a-f]+)+)\z"));

const FORMAT: &str = "Go count";

pub(super) fn recognizes(text: &str) -> bool {
    let first = text
        .lines()
        .find(|l| !is_space_or_comment(l))
        .unwrap_or_default();
    START
        .as_ref()
        .is_some_and(|re| re.is_match(first.strip_suffix('\r').unwrap_or(first)))
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let mut lines = Scanner::new(text);
    while lines.scan() && is_space_or_comment(lines.text()) {}
    let captures = START
        .as_ref()
        .and_then(|re| re.captures(lines.text()))
        .ok_or(LegacyError::Unrecognized)?;
    let kind = group(&captures, 1);
    let mut profile = LegacyProfile::new(&[(kind, "count")], (kind, "count"), 1);

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
        let record = RECORD
            .as_ref()
            .and_then(|re| re.captures(line))
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
    parse_memory_map(&mut lines, &mut profile);
    Ok(profile)
}
