//! Folded text into a pprof profile.

use std::collections::HashMap;

use super::FoldedError;
use crate::{Function, Line, Location, Profile, Sample, StringInterner, ValueType};

/// Error messages quote at most this many characters of a bad value.
const MAX_QUOTED_CHARS: usize = 64;

/// Reads folded stacks into a pprof profile with one sample type, `(type,
/// unit)`. Identical stacks are summed into one sample.
pub fn parse_folded(text: &[u8], sample_type: (&str, &str)) -> Result<Profile, FoldedError> {
    let mut builder = ProfileBuilder::new(sample_type);
    for (index, bytes) in text.split(|&byte| byte == b'\n').enumerate() {
        let line = index + 1;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|_| FoldedError::InvalidUtf8 { line })?;
        if let Some(stack) = parse_line(text, line)? {
            builder.add(&stack, line)?;
        }
    }
    Ok(builder.finish())
}

struct FoldedLine<'a> {
    root_first: Vec<&'a str>,
    value: i64,
}

fn is_separator(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The stack and value of one line, or `None` for a blank line.
fn parse_line(text: &str, line: usize) -> Result<Option<FoldedLine<'_>>, FoldedError> {
    let text = text.trim_end_matches(is_separator);
    if text.trim_start_matches(is_separator).is_empty() {
        return Ok(None);
    }
    let (stack, value) = text
        .rsplit_once(is_separator)
        .ok_or(FoldedError::MissingValue { line })?;
    let value = value
        .parse::<i64>()
        .map_err(|source| FoldedError::InvalidValue {
            line,
            value: value.chars().take(MAX_QUOTED_CHARS).collect(),
            source,
        })?;
    let stack = stack.trim_end_matches(is_separator);
    if stack.is_empty() {
        return Err(FoldedError::NoFrames { line });
    }
    let root_first: Vec<&str> = stack.split(';').collect();
    let is_blank = |frame: &&str| frame.trim_matches(is_separator).is_empty();
    if let Some(position) = root_first.iter().position(is_blank) {
        return Err(FoldedError::EmptyFrame {
            line,
            frame: position + 1,
        });
    }
    Ok(Some(FoldedLine { root_first, value }))
}

/// One function and one location per distinct frame name, sharing an id.
struct ProfileBuilder<'a> {
    strings: StringInterner,
    sample_type: ValueType,
    frame_ids: HashMap<&'a str, u64>,
    functions: Vec<Function>,
    locations: Vec<Location>,
    sample_positions: HashMap<Vec<u64>, usize>,
    samples: Vec<Sample>,
}

impl<'a> ProfileBuilder<'a> {
    fn new((type_name, unit): (&str, &str)) -> Self {
        let mut strings = StringInterner::new();
        let sample_type = ValueType {
            r#type: strings.intern(type_name),
            unit: strings.intern(unit),
        };
        Self {
            strings,
            sample_type,
            frame_ids: HashMap::new(),
            functions: Vec::new(),
            locations: Vec::new(),
            sample_positions: HashMap::new(),
            samples: Vec::new(),
        }
    }

    fn frame_id(&mut self, frame: &'a str) -> u64 {
        if let Some(&id) = self.frame_ids.get(frame) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let name = self.strings.intern(frame);
        self.functions.push(Function {
            id,
            name,
            system_name: name,
            ..Function::default()
        });
        self.locations.push(Location {
            id,
            line: vec![Line {
                function_id: id,
                ..Line::default()
            }],
            ..Location::default()
        });
        self.frame_ids.insert(frame, id);
        id
    }

    fn add(&mut self, stack: &FoldedLine<'a>, line: usize) -> Result<(), FoldedError> {
        let mut leaf_first: Vec<u64> = stack
            .root_first
            .iter()
            .map(|frame| self.frame_id(frame))
            .collect();
        leaf_first.reverse();
        let existing = self
            .sample_positions
            .get(&leaf_first)
            .and_then(|&position| self.samples.get_mut(position))
            .and_then(|sample| sample.value.first_mut());
        if let Some(total) = existing {
            *total = total
                .checked_add(stack.value)
                .ok_or(FoldedError::TotalOverflow { line })?;
            return Ok(());
        }
        self.sample_positions
            .insert(leaf_first.clone(), self.samples.len());
        self.samples.push(Sample {
            location_id: leaf_first,
            value: vec![stack.value],
            ..Sample::default()
        });
        Ok(())
    }

    fn finish(self) -> Profile {
        Profile {
            sample_type: vec![self.sample_type],
            period_type: Some(self.sample_type),
            period: 1,
            sample: self.samples,
            location: self.locations,
            function: self.functions,
            string_table: self.strings.into_table(),
            ..Profile::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Option<(Vec<&str>, i64)> {
        parse_line(text, 1)
            .ok()
            .flatten()
            .map(|line| (line.root_first, line.value))
    }

    #[test]
    fn value_is_the_last_token_and_frames_keep_their_spaces() {
        assert_eq!(
            parsed("main;operator new(unsigned long) 4"),
            Some((vec!["main", "operator new(unsigned long)"], 4))
        );
        assert_eq!(parsed("a;b c \t 12 \t"), Some((vec!["a", "b c"], 12)));
        assert_eq!(parsed("a\t-3"), Some((vec!["a"], -3)));
        assert_eq!(parsed(" \t "), None);
        assert_eq!(parsed(""), None);
    }

    #[test]
    fn a_line_without_separator_has_no_value() {
        assert!(matches!(
            parse_line("a;b", 4),
            Err(FoldedError::MissingValue { line: 4 })
        ));
        assert!(matches!(
            parse_line("17", 2),
            Err(FoldedError::MissingValue { line: 2 })
        ));
    }
}
