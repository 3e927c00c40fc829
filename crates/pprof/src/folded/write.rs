//! A pprof profile as folded text.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use super::FoldedError;
use crate::strings::resolve;
use crate::validate::validate;
use crate::{Location, Profile, Sample};

/// Characters that would split a frame or a line when read back; frame names
/// carry `_` in their place.
const FRAME_BREAKING_CHARS: [char; 3] = [';', '\n', '\r'];

/// Writes one line per distinct stack, root first, with its total for the
/// sample type at `sample_type`. Lines are sorted; zero totals and samples
/// without locations are left out.
pub fn write_folded(profile: &Profile, sample_type: usize) -> Result<String, FoldedError> {
    validate(profile)?;
    let count = profile.sample_type.len();
    if sample_type >= count {
        return Err(FoldedError::SampleTypeOutOfRange {
            index: sample_type,
            count,
        });
    }
    let frames = LocationFrames::new(profile);
    // Summed wide, so only a total that does not fit fails, whatever the order.
    let mut totals: BTreeMap<String, i128> = BTreeMap::new();
    for sample in &profile.sample {
        let value = sample.value.get(sample_type).copied().unwrap_or(0);
        if value != 0 && !sample.location_id.is_empty() {
            *totals.entry(frames.root_first_stack(sample)).or_default() += i128::from(value);
        }
    }
    let mut out = String::new();
    for (stack, total) in totals {
        let total = i64::try_from(total).map_err(|_| FoldedError::StackTotalOverflow {
            stack: stack.clone(),
        })?;
        if total != 0 {
            let _ = writeln!(out, "{stack} {total}");
        }
    }
    Ok(out)
}

/// Each location's frames, root first and joined with `;`, keyed by id.
struct LocationFrames {
    by_id: HashMap<u64, String>,
}

impl LocationFrames {
    fn new(profile: &Profile) -> Self {
        let function_names: HashMap<u64, &str> = profile
            .function
            .iter()
            .map(|function| (function.id, resolve(&profile.string_table, function.name)))
            .collect();
        let by_id = profile
            .location
            .iter()
            .map(|location| (location.id, location_frames(location, &function_names)))
            .collect();
        Self { by_id }
    }

    fn root_first_stack(&self, sample: &Sample) -> String {
        let leaf_first: Vec<&str> = sample
            .location_id
            .iter()
            .filter_map(|id| self.by_id.get(id).map(String::as_str))
            .collect();
        let mut stack = String::new();
        for (position, frames) in leaf_first.iter().rev().enumerate() {
            if position > 0 {
                stack.push(';');
            }
            stack.push_str(frames);
        }
        stack
    }
}

/// A location's lines are innermost first; folded frames are root first.
fn location_frames(location: &Location, function_names: &HashMap<u64, &str>) -> String {
    let address = || format!("0x{:x}", location.address);
    if location.line.is_empty() {
        return address();
    }
    let root_first: Vec<String> = location
        .line
        .iter()
        .rev()
        .map(|line| {
            let name = function_names.get(&line.function_id).copied().unwrap_or("");
            if name.trim().is_empty() {
                address()
            } else {
                name.replace(FRAME_BREAKING_CHARS, "_")
            }
        })
        .collect();
    root_first.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Line;

    fn location(address: u64, function_ids: &[u64]) -> Location {
        Location {
            id: 1,
            address,
            line: function_ids
                .iter()
                .map(|&function_id| Line {
                    function_id,
                    ..Line::default()
                })
                .collect(),
            ..Location::default()
        }
    }

    #[test]
    fn inlined_lines_come_out_caller_first() {
        let names = HashMap::from([(1, "caller"), (2, "callee"), (3, "")]);
        assert_eq!(
            location_frames(&location(0x10, &[2, 1]), &names),
            "caller;callee"
        );
        assert_eq!(
            location_frames(&location(0xab, &[3, 1]), &names),
            "caller;0xab"
        );
        assert_eq!(location_frames(&location(0xab, &[]), &names), "0xab");
    }
}
