//! Flat and cumulative values per function, as google/pprof's reports count
//! them at their default granularity (functions).
//!
//! pprof names a frame by its function name. At this granularity it forgets
//! addresses, so a frame without a function name is called after its
//! mapping's file, `[libc.so.6]`, or `<unknown>` without one.

use std::collections::HashMap;

use profbridge_pprof::{Location, Profile};

/// One function's values for one sample type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionValues {
    pub name: String,
    /// Samples whose innermost frame is this function.
    pub flat: i128,
    /// Samples in which this function appears at all, counted once each.
    pub cum: i128,
}

/// Every function with a non-zero value for the sample type at `index`,
/// largest flat value first, then largest cum, then by name.
pub fn function_values(profile: &Profile, index: usize) -> Vec<FunctionValues> {
    let names = FrameNames::new(profile);
    let mut flat = vec![0i128; names.names.len()];
    let mut cum = vec![0i128; names.names.len()];
    let mut last_counted_in: Vec<Option<usize>> = vec![None; names.names.len()];
    for (sample_number, sample) in profile.sample.iter().enumerate() {
        let value = i128::from(sample.value.get(index).copied().unwrap_or(0));
        if value == 0 {
            continue;
        }
        let mut frames = sample
            .location_id
            .iter()
            .flat_map(|id| names.frames_of(*id))
            .peekable();
        if let Some(leaf) = frames.peek().and_then(|&node| flat.get_mut(node)) {
            *leaf += value;
        }
        for node in frames {
            if let Some(last) = last_counted_in.get_mut(node) {
                if *last != Some(sample_number) {
                    *last = Some(sample_number);
                    if let Some(total) = cum.get_mut(node) {
                        *total += value;
                    }
                }
            }
        }
    }
    let mut values: Vec<FunctionValues> = names
        .names
        .into_iter()
        .zip(flat.into_iter().zip(cum))
        .filter(|(_, (flat, cum))| *flat != 0 || *cum != 0)
        .map(|(name, (flat, cum))| FunctionValues { name, flat, cum })
        .collect();
    values.sort_by(|a, b| {
        b.flat
            .abs()
            .cmp(&a.flat.abs())
            .then_with(|| b.cum.abs().cmp(&a.cum.abs()))
            .then_with(|| a.name.cmp(&b.name))
    });
    values
}

/// Each location's frames, innermost first, as indexes into `names`.
struct FrameNames {
    names: Vec<String>,
    frames_by_location: HashMap<u64, Vec<usize>>,
}

impl FrameNames {
    fn new(profile: &Profile) -> Self {
        let text = |index: i64| {
            usize::try_from(index)
                .ok()
                .and_then(|i| profile.string_table.get(i))
                .map_or("", String::as_str)
        };
        let function_names: HashMap<u64, &str> = profile
            .function
            .iter()
            .map(|function| (function.id, text(function.name)))
            .collect();
        let mapping_files: HashMap<u64, &str> = profile
            .mapping
            .iter()
            .map(|mapping| (mapping.id, text(mapping.filename)))
            .collect();
        let mut this = Self {
            names: Vec::new(),
            frames_by_location: HashMap::new(),
        };
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for location in &profile.location {
            let file = mapping_files
                .get(&location.mapping_id)
                .copied()
                .unwrap_or("");
            let frames = frame_names(location, &function_names, file)
                .into_iter()
                .map(|name| {
                    let next = index_of.len();
                    *index_of.entry(name.clone()).or_insert_with(|| {
                        this.names.push(name);
                        next
                    })
                })
                .collect();
            this.frames_by_location.insert(location.id, frames);
        }
        this
    }

    fn frames_of(&self, location_id: u64) -> impl Iterator<Item = usize> + '_ {
        self.frames_by_location
            .get(&location_id)
            .into_iter()
            .flatten()
            .copied()
    }
}

/// A location's frame names, innermost first; one frame when it has no lines.
fn frame_names(
    location: &Location,
    function_names: &HashMap<u64, &str>,
    mapping_file: &str,
) -> Vec<String> {
    let unnamed = || {
        if mapping_file.is_empty() {
            "<unknown>".to_owned()
        } else {
            format!("[{}]", base_name(mapping_file))
        }
    };
    if location.line.is_empty() {
        return vec![unnamed()];
    }
    location
        .line
        .iter()
        .map(|line| match function_names.get(&line.function_id) {
            Some(name) if !name.is_empty() => (*name).to_owned(),
            _ => unnamed(),
        })
        .collect()
}

/// The last element of a `/`-separated path, as Go's `filepath.Base` gives it.
fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "." } else { "/" };
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_pprof::{Function, Line, Mapping, Sample, ValueType};

    fn line(function_id: u64) -> Line {
        Line {
            function_id,
            ..Line::default()
        }
    }

    /// Functions 1 main, 2 work, 3 helper, 4 unnamed; mapping 1 /usr/lib/libx.so.
    fn profile(samples: &[(&[u64], i64)]) -> Profile {
        let string_table: Vec<String> = [
            "",
            "cpu",
            "ns",
            "main",
            "work",
            "helper",
            "/usr/lib/libx.so",
        ]
        .map(str::to_owned)
        .to_vec();
        let function = [(1, 3), (2, 4), (3, 5), (4, 0)]
            .map(|(id, name)| Function {
                id,
                name,
                ..Function::default()
            })
            .to_vec();
        let location = vec![
            Location {
                id: 1,
                line: vec![line(1)],
                ..Location::default()
            },
            // helper inlined into work
            Location {
                id: 2,
                line: vec![line(3), line(2)],
                ..Location::default()
            },
            Location {
                id: 3,
                mapping_id: 1,
                address: 0x1234,
                ..Location::default()
            },
            Location {
                id: 4,
                line: vec![line(4)],
                ..Location::default()
            },
            Location {
                id: 5,
                line: vec![line(2)],
                ..Location::default()
            },
        ];
        let sample = samples
            .iter()
            .map(|(stack, value)| Sample {
                location_id: stack.to_vec(),
                value: vec![*value],
                ..Sample::default()
            })
            .collect();
        Profile {
            string_table,
            function,
            location,
            mapping: vec![Mapping {
                id: 1,
                filename: 6,
                ..Mapping::default()
            }],
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample,
            ..Profile::default()
        }
    }

    fn values(profile: &Profile) -> Vec<(String, i128, i128)> {
        function_values(profile, 0)
            .into_iter()
            .map(|v| (v.name, v.flat, v.cum))
            .collect()
    }

    #[test]
    fn inlined_frames_count_and_recursion_counts_once() {
        let p = profile(&[(&[2, 5, 1], 10), (&[1], 3), (&[5, 5, 1], 0)]);
        assert_eq!(
            values(&p),
            vec![
                ("helper".to_owned(), 10, 10),
                ("main".to_owned(), 3, 13),
                ("work".to_owned(), 0, 10),
            ]
        );
    }

    #[test]
    fn unnamed_frames_are_called_after_their_mapping() {
        let p = profile(&[(&[3, 1], 5), (&[4, 1], 2)]);
        assert_eq!(
            values(&p),
            vec![
                ("[libx.so]".to_owned(), 5, 5),
                ("<unknown>".to_owned(), 2, 2),
                ("main".to_owned(), 0, 7),
            ]
        );
    }

    #[test]
    fn base_names_follow_go() {
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(base_name("b"), "b");
        assert_eq!(base_name("///"), "/");
    }
}
