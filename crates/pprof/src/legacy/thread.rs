//! Text thread profiles: threadz, and `--- Thread …` stack dumps.

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::patterns::Pattern;
use super::scanner::{hex_addresses, is_memory_map_sentinel, is_space_or_comment, Scanner};
use super::{remove_duplicated_leaf, skip_to_memory_map, LegacyError};

static THREADZ_START: Pattern = Pattern::re2("threadz header", r"--- threadz \d+ ---");
static THREAD_START: Pattern = Pattern::re2(
    "thread header",
    r"--- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: ---",
);

const FORMAT: &str = "thread";

pub(super) fn recognizes(text: &str) -> bool {
    let first = text
        .lines()
        .find(|l| !is_space_or_comment(l))
        .unwrap_or_default();
    THREADZ_START.claims(first) || THREAD_START.claims(first)
}

pub(super) fn parse(text: &str) -> Result<LegacyProfile, LegacyError> {
    let mut lines = Scanner::new(text);
    while lines.scan() && is_space_or_comment(lines.text()) {}
    let mut line = lines.text().to_owned();
    let thread_start = THREAD_START.regex()?;
    if THREADZ_START.regex()?.is_match(&line) {
        while lines.scan() {
            line = lines.text().to_owned();
            if is_memory_map_sentinel(&line) || line.starts_with('-') {
                break;
            }
        }
    } else if !thread_start.is_match(&line) {
        return Err(LegacyError::Unrecognized);
    }

    let mut profile = LegacyProfile::new(&[("thread", "count")], ("thread", "count"), 1);
    while !is_memory_map_sentinel(&line) {
        if line.starts_with("---- no stack trace for") {
            break;
        }
        if !thread_start.is_match(&line) {
            return Err(LegacyError::Unrecognized);
        }
        let (next, addresses) = parse_thread_stack(&mut lines)?;
        line = next;
        match addresses {
            Some(addresses) if !addresses.is_empty() => {
                let stack = profile.stack(&addresses, |i, address| {
                    if i > 0 {
                        address.wrapping_sub(1)
                    } else {
                        address
                    }
                });
                profile.add_sample(stack, vec![1]);
            }
            // "same as previous thread", or no frames: one more of the last.
            _ => {
                if let Some(value) = profile
                    .samples
                    .last_mut()
                    .and_then(|s| s.values.first_mut())
                {
                    *value = value.wrapping_add(1);
                }
            }
        }
    }
    skip_to_memory_map(&mut lines);
    parse_memory_map(&mut lines, &mut profile)?;
    remove_duplicated_leaf(&mut profile);
    Ok(profile)
}

/// Reads one thread's stack; returns the line after it (trimmed) and its
/// addresses, or `None` for a "same as previous thread" stack.
fn parse_thread_stack(lines: &mut Scanner<'_>) -> Result<(String, Option<Vec<u64>>), LegacyError> {
    let mut line = String::new();
    let mut same_as_previous = false;
    let mut addresses = Vec::new();
    while lines.scan() {
        line = lines.text().trim().to_owned();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("---") {
            break;
        }
        if line.contains("same as previous thread") {
            same_as_previous = true;
            continue;
        }
        let found = hex_addresses(&line).map_err(|e| LegacyError::Malformed {
            format: FORMAT,
            line: lines.line_number(),
            problem: format!("malformed sample: {line}: {e}"),
        })?;
        addresses.extend(found);
    }
    Ok((line, (!same_as_previous).then_some(addresses)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[&THREADZ_START, &THREAD_START]);
    }
}
