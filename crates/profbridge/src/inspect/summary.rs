//! What `inspect` reports about one pprof, whatever the output format.

use anyhow::{bail, Result};

use profbridge_pprof::{sample_type_index, Profile};

use super::frame_types::frame_type_values;
use super::functions::{function_values, FunctionValues};

#[derive(Debug, Clone)]
pub struct SampleTypeSummary {
    pub name: String,
    pub unit: String,
    /// The profile's default: the first type named by `default_sample_type`,
    /// else the last.
    pub is_default: bool,
    pub total: i128,
}

#[derive(Debug, Clone, Copy)]
pub struct Counts {
    pub samples: usize,
    pub locations: usize,
    pub functions: usize,
    pub mappings: usize,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub sample_types: Vec<SampleTypeSummary>,
    pub counts: Counts,
    /// Index of the sample type the top functions and frame types are for;
    /// `None` when the profile has no sample types.
    pub selected: Option<usize>,
    /// The sum of absolute values of the selected type: what percentages are
    /// of, as in google/pprof.
    pub percent_base: i128,
    /// All functions, largest flat value first.
    pub functions: Vec<FunctionValues>,
    pub frame_types: Vec<(String, i128)>,
}

impl Summary {
    /// Summarises `profile`; `pruned` is the profile after drop-frame
    /// pruning, which the function and frame type values come from.
    pub fn new(profile: &Profile, pruned: &Profile, sample_type: Option<&str>) -> Result<Self> {
        let selected = selected_sample_type(profile, sample_type)?;
        let default = default_sample_type(profile);
        let text = |index: i64| {
            usize::try_from(index)
                .ok()
                .and_then(|i| profile.string_table.get(i))
                .cloned()
                .unwrap_or_default()
        };
        let sample_types = profile
            .sample_type
            .iter()
            .enumerate()
            .map(|(index, value_type)| SampleTypeSummary {
                name: text(value_type.r#type),
                unit: text(value_type.unit),
                is_default: Some(index) == default,
                total: column(profile, index).sum(),
            })
            .collect();
        let (functions, frame_types, percent_base) = match selected {
            Some(index) => (
                function_values(pruned, index),
                frame_type_values(profile, pruned, index),
                column(profile, index).map(i128::abs).sum(),
            ),
            None => (Vec::new(), Vec::new(), 0),
        };
        Ok(Self {
            sample_types,
            counts: Counts {
                samples: profile.sample.len(),
                locations: profile.location.len(),
                functions: profile.function.len(),
                mappings: profile.mapping.len(),
            },
            selected,
            percent_base,
            functions,
            frame_types,
        })
    }

    pub fn selected_type(&self) -> Option<&SampleTypeSummary> {
        self.selected.and_then(|index| self.sample_types.get(index))
    }

    /// The first `top` functions; all of them for 0.
    pub fn top(&self, top: usize) -> &[FunctionValues] {
        let count = if top == 0 {
            self.functions.len()
        } else {
            top.min(self.functions.len())
        };
        self.functions.get(..count).unwrap_or(&[])
    }
}

fn column(profile: &Profile, index: usize) -> impl Iterator<Item = i128> + '_ {
    profile
        .sample
        .iter()
        .map(move |sample| i128::from(sample.value.get(index).copied().unwrap_or(0)))
}

/// pprof's default sample type: the first named by `default_sample_type`,
/// else the last.
pub fn default_sample_type(profile: &Profile) -> Option<usize> {
    profbridge_pprof::default_sample_type_index(profile)
}

/// The sample type asked for by name (or, as pprof allows, by index), else
/// the default.
fn selected_sample_type(profile: &Profile, asked: Option<&str>) -> Result<Option<usize>> {
    let Some(asked) = asked else {
        return Ok(default_sample_type(profile));
    };
    let by_index = asked
        .parse::<usize>()
        .ok()
        .filter(|&index| index < profile.sample_type.len());
    match sample_type_index(profile, asked).or(by_index) {
        Some(index) => Ok(Some(index)),
        None => {
            let names: Vec<&str> = profile
                .sample_type
                .iter()
                .filter_map(|value_type| usize::try_from(value_type.r#type).ok())
                .filter_map(|i| profile.string_table.get(i).map(String::as_str))
                .collect();
            bail!(
                "no sample type {asked:?}; the profile has {}",
                names.join(", ")
            )
        }
    }
}
