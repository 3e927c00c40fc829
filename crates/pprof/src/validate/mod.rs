//! Every invariant of the pprof format, checked in one pass per table.
//!
//! The samples are read once (a [`SampleSource`] may decode each as it
//! is read): their string references and their own invariants are
//! checked in the same pass, and the first error is reported in the order
//! the checks are listed, strings first, whatever pass found it.

mod error;
pub(crate) mod ids;

pub use error::{Table, ValidationError};
use ids::{IdIndex, IdProblem};

use crate::{Profile, Sample, SampleSource};

/// Checks every invariant of the pprof format and returns the first broken one.
pub fn validate(profile: &Profile) -> Result<(), ValidationError> {
    validate_source(profile)
}

/// [`validate`] of a profile whose samples come from `source`.
pub fn validate_source(source: &impl SampleSource) -> Result<(), ValidationError> {
    let profile = source.tables();
    let strings = Strings::of(profile)?;
    for (i, value_type) in profile.sample_type.iter().enumerate() {
        strings.check(value_type.r#type, &|| format!("sample_type {i}: type"))?;
        strings.check(value_type.unit, &|| format!("sample_type {i}: unit"))?;
    }
    // Reported after every string check, as the checks are listed.
    let mappings = index_ids(Table::Mapping, profile.mapping.iter().map(|m| m.id));
    let functions = index_ids(Table::Function, profile.function.iter().map(|f| f.id));
    let locations = index_ids(Table::Location, profile.location.iter().map(|l| l.id));

    let types = profile.sample_type.len();
    let mut first_sample_error = None;
    source.try_for_each_sample(|index, sample| {
        check_label_strings(&strings, index, sample)?;
        if let (None, Ok(locations)) = (&first_sample_error, &locations) {
            first_sample_error = check_sample(index, sample, locations, types).err();
        }
        Ok(())
    })?;
    check_table_strings(&strings, profile)?;
    let mappings = mappings?;
    let functions = functions?;
    locations?;

    for mapping in &profile.mapping {
        if mapping.memory_limit < mapping.memory_start {
            return Err(ValidationError::MappingLimitBelowStart {
                mapping: mapping.id,
                start: mapping.memory_start,
                limit: mapping.memory_limit,
            });
        }
    }
    for location in &profile.location {
        if location.mapping_id != 0 && !mappings.contains(location.mapping_id) {
            return Err(ValidationError::MissingMapping {
                location: location.id,
                mapping: location.mapping_id,
            });
        }
        for (line_index, line) in location.line.iter().enumerate() {
            if line.function_id == 0 {
                return Err(ValidationError::LineWithoutFunction {
                    location: location.id,
                    line: line_index,
                });
            }
            if !functions.contains(line.function_id) {
                return Err(ValidationError::MissingFunction {
                    location: location.id,
                    line: line_index,
                    function: line.function_id,
                });
            }
        }
    }
    first_sample_error.map_or(Ok(()), Err)
}

/// A sample's own invariants: its values, locations and labels.
fn check_sample(
    sample_index: usize,
    sample: &Sample,
    locations: &IdIndex,
    types: usize,
) -> Result<(), ValidationError> {
    if sample.value.len() != types {
        return Err(ValidationError::ValueCountMismatch {
            sample: sample_index,
            values: sample.value.len(),
            types,
        });
    }
    for (position, &location) in sample.location_id.iter().enumerate() {
        if !locations.contains(location) {
            return Err(ValidationError::MissingLocation {
                sample: sample_index,
                position,
                location,
            });
        }
    }
    for (label_index, label) in sample.label.iter().enumerate() {
        if label.str != 0 && label.num != 0 {
            return Err(ValidationError::LabelWithStrAndNum {
                sample: sample_index,
                label: label_index,
            });
        }
        if label.str != 0 && label.num_unit != 0 {
            return Err(ValidationError::LabelUnitWithoutNum {
                sample: sample_index,
                label: label_index,
            });
        }
    }
    Ok(())
}

fn index_ids(
    table: Table,
    ids: impl ExactSizeIterator<Item = u64> + Clone,
) -> Result<IdIndex, ValidationError> {
    IdIndex::build(ids).map_err(|problem| match problem {
        IdProblem::Zero { index } => ValidationError::ZeroId { table, index },
        IdProblem::Duplicate { id, first, second } => ValidationError::DuplicateId {
            table,
            id,
            first,
            second,
        },
    })
}

/// The string table, once its first entry is checked: what string
/// references are checked against.
struct Strings {
    len: usize,
}

impl Strings {
    fn of(profile: &Profile) -> Result<Self, ValidationError> {
        let table = &profile.string_table;
        match table.first() {
            None => Err(ValidationError::EmptyStringTable),
            Some(first) if !first.is_empty() => {
                Err(ValidationError::FirstStringNotEmpty(first.clone()))
            }
            Some(_) => Ok(Self { len: table.len() }),
        }
    }

    fn check(&self, index: i64, place: &dyn Fn() -> String) -> Result<(), ValidationError> {
        if usize::try_from(index).is_ok_and(|i| i < self.len) {
            Ok(())
        } else {
            Err(ValidationError::StringOutOfRange {
                place: place(),
                index,
                len: self.len,
            })
        }
    }
}

fn check_label_strings(
    strings: &Strings,
    s: usize,
    sample: &Sample,
) -> Result<(), ValidationError> {
    for (l, label) in sample.label.iter().enumerate() {
        strings.check(label.key, &|| format!("sample {s}: label {l}: key"))?;
        strings.check(label.str, &|| format!("sample {s}: label {l}: str"))?;
        strings.check(label.num_unit, &|| {
            format!("sample {s}: label {l}: num_unit")
        })?;
    }
    Ok(())
}

/// The string references after the samples' (mappings, functions, the
/// profile's own fields).
fn check_table_strings(strings: &Strings, profile: &Profile) -> Result<(), ValidationError> {
    for mapping in &profile.mapping {
        let id = mapping.id;
        strings.check(mapping.filename, &|| format!("mapping {id}: filename"))?;
        strings.check(mapping.build_id, &|| format!("mapping {id}: build_id"))?;
    }
    for function in &profile.function {
        let id = function.id;
        strings.check(function.name, &|| format!("function {id}: name"))?;
        strings.check(function.system_name, &|| {
            format!("function {id}: system_name")
        })?;
        strings.check(function.filename, &|| format!("function {id}: filename"))?;
    }
    strings.check(profile.drop_frames, &|| "profile: drop_frames".to_owned())?;
    strings.check(profile.keep_frames, &|| "profile: keep_frames".to_owned())?;
    if let Some(period_type) = &profile.period_type {
        strings.check(period_type.r#type, &|| "period_type: type".to_owned())?;
        strings.check(period_type.unit, &|| "period_type: unit".to_owned())?;
    }
    for (i, &comment) in profile.comment.iter().enumerate() {
        strings.check(comment, &|| format!("profile: comment {i}"))?;
    }
    strings.check(profile.default_sample_type, &|| {
        "profile: default_sample_type".to_owned()
    })?;
    strings.check(profile.doc_url, &|| "profile: doc_url".to_owned())?;
    Ok(())
}
