//! The memory-map text after a legacy profile (`/proc/self/maps` and the
//! brief `start-end file (@offset) buildid` form), and google/pprof's
//! clean-up of the mappings it finds.

use super::model::{LegacyMapping, LegacyProfile};
use super::patterns::Pattern;
use super::scanner::Scanner;
use super::LegacyError;

const SPACE: &str = r"[\t\n\x0C\r ]";
const NON_SPACE: &str = r"[^\t\n\x0C\r ]";

fn proc_maps_pattern() -> String {
    let hex = "(?:0x)?([[:xdigit:]]+)";
    format!(
        "^{SPACE}*{hex}[\\t\\n\\x0C\\r -]?{SPACE}*{hex}:?\
         (?:{SPACE}+([-rwxp]+))?\
         (?:{SPACE}+([[:xdigit:]]+))?\
         {SPACE}+[[:xdigit:]]+:[[:xdigit:]]+\
         {SPACE}+[[:digit:]]+\
         (?:{SPACE}+({NON_SPACE}+))?"
    )
}

fn brief_maps_pattern() -> String {
    let hex = "(?:0x)?([[:xdigit:]]+)";
    format!(
        "^{SPACE}*{hex}[\\t\\n\\x0C\\r -]?{SPACE}*{hex}:?\
         (?:{SPACE}+([-rwxp]+))?\
         (?:{SPACE}+({NON_SPACE}+))?\
         (?:{SPACE}+\\(@([[:xdigit:]]+)\\))?\
         (?:{SPACE}+([[:xdigit:]]+))?"
    )
}

static PROC_MAPS: Pattern = Pattern::built("/proc/self/maps line", proc_maps_pattern);
static BRIEF_MAPS: Pattern = Pattern::built("brief memory map line", brief_maps_pattern);
/// A glog prefix such as `I0101 00:00:00.000 1234 file.cc:42] `.
static LOG_PREFIX: Pattern = Pattern::re2("glog prefix", r"^[^\[\]]+:[0-9]+\]\s");

/// Reads the rest of `lines` as a memory map, appends its mappings to the
/// profile, and runs google/pprof's mapping and id clean-up.
pub(super) fn parse_memory_map(
    lines: &mut Scanner<'_>,
    profile: &mut LegacyProfile,
) -> Result<(), LegacyError> {
    for mapping in parse_proc_maps(lines)? {
        profile.add_mapping(mapping);
    }
    massage_mappings(profile);
    profile.remap_location_ids();
    profile.remap_function_ids();
    remap_mapping_ids(profile);
    Ok(())
}

/// Mappings of executable entries; lines that are not mappings are ignored,
/// except `attr=value` lines, whose `$attr` later lines may use.
fn parse_proc_maps(lines: &mut Scanner<'_>) -> Result<Vec<LegacyMapping>, LegacyError> {
    let mut mappings = Vec::new();
    let mut substitutions: Vec<(String, String)> = Vec::new();
    while lines.scan() {
        let line = substitute(strip_log_prefix(lines.text())?, &substitutions);
        match parse_mapping_entry(&line)? {
            Entry::Mapping(mapping) => mappings.push(mapping),
            Entry::NotExecutable => {}
            Entry::Unrecognized => {
                if let Some((name, value)) = line.split_once('=') {
                    substitutions.push((format!("${}", name.trim()), value.trim().to_owned()));
                }
            }
        }
    }
    Ok(mappings)
}

fn strip_log_prefix(line: &str) -> Result<&str, LegacyError> {
    Ok(LOG_PREFIX
        .regex()?
        .find(line)
        .and_then(|m| line.get(m.end()..))
        .unwrap_or(line))
}

/// Go's strings.Replacer: left to right, the first listed pattern that
/// matches at a position wins.
fn substitute(line: &str, substitutions: &[(String, String)]) -> String {
    if substitutions.is_empty() {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    'outer: while let Some(c) = rest.chars().next() {
        for (pattern, value) in substitutions {
            if let Some(after) = rest.strip_prefix(pattern.as_str()) {
                out.push_str(value);
                rest = after;
                continue 'outer;
            }
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    out
}

enum Entry {
    Mapping(LegacyMapping),
    NotExecutable,
    Unrecognized,
}

fn parse_mapping_entry(line: &str) -> Result<Entry, LegacyError> {
    let group = |captures: &regex::Captures<'_>, i: usize| {
        captures.get(i).map_or("", |m| m.as_str()).to_owned()
    };
    let (start, end, perm, offset, file, build_id) =
        if let Some(c) = PROC_MAPS.regex()?.captures(line) {
            let f = |i| group(&c, i);
            (f(1), f(2), f(3), f(4), f(5), String::new())
        } else if let Some(c) = BRIEF_MAPS.regex()?.captures(line) {
            let f = |i| group(&c, i);
            (f(1), f(2), f(3), f(5), f(4), f(6))
        } else {
            return Ok(Entry::Unrecognized);
        };
    if !perm.is_empty() && !perm.contains('x') {
        return Ok(Entry::NotExecutable);
    }
    let hex = |text: &str| u64::from_str_radix(text, 16).ok();
    let (Some(start), Some(limit)) = (hex(&start), hex(&end)) else {
        return Ok(Entry::Unrecognized);
    };
    let offset = if offset.is_empty() {
        0
    } else {
        match hex(&offset) {
            Some(offset) => offset,
            None => return Ok(Entry::Unrecognized),
        }
    };
    Ok(Entry::Mapping(LegacyMapping {
        start,
        limit,
        offset,
        file,
        build_id,
    }))
}

/// Merges mappings split into adjacent pieces, then moves what looks like
/// the main binary to the front.
fn massage_mappings(profile: &mut LegacyProfile) {
    if profile.mapping_order.len() > 1 {
        let mut kept: Vec<usize> = Vec::with_capacity(profile.mapping_order.len());
        for &index in &profile.mapping_order {
            let Some(&last) = kept.last() else {
                kept.push(index);
                continue;
            };
            let (Some(previous), Some(current)) =
                (profile.mappings.get(last), profile.mappings.get(index))
            else {
                continue;
            };
            if !adjacent(previous, current) {
                kept.push(index);
                continue;
            }
            let current = current.clone();
            if let Some(previous) = profile.mappings.get_mut(last) {
                previous.limit = current.limit;
                if !current.file.is_empty() {
                    previous.file = current.file;
                }
                if !current.build_id.is_empty() {
                    previous.build_id = current.build_id;
                }
            }
            for &location in &profile.location_order {
                if let Some(location) = profile.locations.get_mut(location) {
                    if location.mapping == Some(index) {
                        location.mapping = Some(last);
                    }
                }
            }
        }
        profile.mapping_order = kept;
    }

    let main = profile.mapping_order.iter().position(|&index| {
        profile.mappings.get(index).is_some_and(|m| {
            let file = m.file.replace("(deleted)", "");
            let file = file.trim();
            !file.is_empty() && !is_shared_library(file) && !file.starts_with('[')
        })
    });
    if let Some(main) = main {
        profile.mapping_order.swap(0, main);
    }
}

fn adjacent(first: &LegacyMapping, second: &LegacyMapping) -> bool {
    if !first.file.is_empty() && !second.file.is_empty() && first.file != second.file {
        return false;
    }
    if !first.build_id.is_empty()
        && !second.build_id.is_empty()
        && first.build_id != second.build_id
    {
        return false;
    }
    if first.limit != second.start {
        return false;
    }
    if first.offset != 0 && second.offset != 0 {
        let expected = first
            .offset
            .wrapping_add(first.limit.wrapping_sub(first.start));
        if expected != second.offset {
            return false;
        }
    }
    true
}

/// `.so` at the end, or `.so.` / `.so_` followed by a digit.
fn is_shared_library(file: &str) -> bool {
    if file.ends_with(".so") {
        return true;
    }
    file.match_indices(".so").any(|(at, _)| {
        let after = file.as_bytes().get(at + 3..).unwrap_or_default();
        matches!(after, [b'.' | b'_', digit, ..] if digit.is_ascii_digit())
    })
}

/// Fixes mappings that legacy handlers got wrong, then gives every location
/// with an address the mapping that holds it (a fake catch-all one when none
/// does).
pub(super) fn remap_mapping_ids(profile: &mut LegacyProfile) {
    if let [first, second, ..] = *profile.mapping_order.as_slice() {
        if let (Some(m0), Some(m1)) = (profile.mappings.get(first), profile.mappings.get(second)) {
            if m0.file.starts_with("/anon_hugepage") && m0.limit == m1.start {
                profile.mapping_order.remove(0);
            }
        }
    }
    if let Some(&first) = profile.mapping_order.first() {
        if let Some(main) = profile.mapping_mut(first) {
            const EXPECTED_START: u64 = 0x400000;
            if main.start.wrapping_sub(main.offset) == EXPECTED_START {
                main.start = EXPECTED_START;
                main.offset = 0;
            }
        }
    }

    let mut fake: Option<usize> = None;
    for position in 0..profile.location_order.len() {
        let Some(&location) = profile.location_order.get(position) else {
            continue;
        };
        let Some(address) = profile
            .locations
            .get(location)
            .filter(|l| l.mapping.is_none() && l.address != 0)
            .map(|l| l.address)
        else {
            continue;
        };
        let mapping = find_mapping(profile, address).unwrap_or_else(|| {
            *fake.get_or_insert_with(|| {
                profile.add_mapping(LegacyMapping {
                    limit: u64::MAX,
                    ..LegacyMapping::default()
                })
            })
        });
        if let Some(location) = profile.locations.get_mut(location) {
            location.mapping = Some(mapping);
        }
    }
}

fn find_mapping(profile: &mut LegacyProfile, address: u64) -> Option<usize> {
    let order = &profile.mapping_order;
    let mappings = &profile.mappings;
    let holding = order.iter().copied().find(|&index| {
        mappings
            .get(index)
            .is_some_and(|m| m.start <= address && address < m.limit)
    });
    if holding.is_some() {
        return holding;
    }
    // Legacy handlers sometimes failed to write the first part of a mapping
    // split in two; its offset says where it really starts.
    let split = order.iter().copied().find(|&index| {
        mappings.get(index).is_some_and(|m| {
            m.offset != 0 && m.start.wrapping_sub(m.offset) <= address && address < m.start
        })
    })?;
    if let Some(m) = profile.mapping_mut(split) {
        m.start = m.start.wrapping_sub(m.offset);
        m.offset = 0;
    }
    Some(split)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::legacy::patterns::assert_compile;

    #[test]
    fn patterns_compile() {
        assert_compile(&[&PROC_MAPS, &BRIEF_MAPS, &LOG_PREFIX]);
    }

    #[test]
    fn a_glog_prefix_is_stripped() {
        assert_eq!(
            strip_log_prefix("I0101 00:00:00.000 1234 file.cc:42] 1000-2000 r-xp").unwrap(),
            "1000-2000 r-xp"
        );
        assert_eq!(
            strip_log_prefix("1000-2000 r-xp").unwrap(),
            "1000-2000 r-xp"
        );
    }

    fn entry(line: &str) -> Option<LegacyMapping> {
        match parse_mapping_entry(line).unwrap() {
            Entry::Mapping(m) => Some(m),
            _ => None,
        }
    }

    #[test]
    fn proc_maps_and_brief_lines_are_read() {
        let m = entry("00400000-00452000 r-xp 00001000 08:01 123 /usr/bin/app").unwrap();
        assert_eq!(
            (m.start, m.limit, m.offset, m.file.as_str()),
            (0x400000, 0x452000, 0x1000, "/usr/bin/app")
        );
        assert!(matches!(
            parse_mapping_entry("00651000-00652000 rw-p 00051000 08:01 123 /usr/bin/app").unwrap(),
            Entry::NotExecutable
        ));
        let m = entry("0x1000-0x2000 /lib/libc.so.6 (@200) abc123").unwrap();
        assert_eq!(
            (m.offset, m.file.as_str(), m.build_id.as_str()),
            (0x200, "/lib/libc.so.6", "abc123")
        );
        assert!(entry("garbage line").is_none());
    }

    #[test]
    fn attributes_substitute_into_later_lines() {
        let mut lines = Scanner::new("BIN=/opt/app\n1000-2000 r-xp 0 0:0 0 $BIN/server\n");
        let mappings = parse_proc_maps(&mut lines).unwrap();
        assert_eq!(mappings.len(), 1);
        assert_eq!(mappings[0].file, "/opt/app/server");
    }

    #[test]
    fn shared_libraries_are_recognised() {
        assert!(is_shared_library("/lib/libc.so"));
        assert!(is_shared_library("/lib/libc.so.6"));
        assert!(is_shared_library("/lib/libfoo.so_1"));
        assert!(!is_shared_library("/usr/bin/app"));
        assert!(!is_shared_library("/lib/libc.so.x"));
    }
}
