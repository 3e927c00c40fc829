//! Every invariant of the pprof format, checked in one pass per table.

mod error;
pub(crate) mod ids;

pub use error::{Table, ValidationError};
use ids::{IdIndex, IdProblem};

use crate::Profile;

/// Checks every invariant of the pprof format and returns the first broken one.
pub fn validate(profile: &Profile) -> Result<(), ValidationError> {
    check_strings(profile)?;
    let mappings = index_ids(Table::Mapping, profile.mapping.iter().map(|m| m.id))?;
    let functions = index_ids(Table::Function, profile.function.iter().map(|f| f.id))?;
    let locations = index_ids(Table::Location, profile.location.iter().map(|l| l.id))?;

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
    let types = profile.sample_type.len();
    for (sample_index, sample) in profile.sample.iter().enumerate() {
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

fn check_strings(profile: &Profile) -> Result<(), ValidationError> {
    let table = &profile.string_table;
    match table.first() {
        None => return Err(ValidationError::EmptyStringTable),
        Some(first) if !first.is_empty() => {
            return Err(ValidationError::FirstStringNotEmpty(first.clone()))
        }
        Some(_) => {}
    }
    let len = table.len();
    let in_range = |index: i64| usize::try_from(index).is_ok_and(|i| i < len);
    let check = |index: i64, place: &dyn Fn() -> String| {
        if in_range(index) {
            Ok(())
        } else {
            Err(ValidationError::StringOutOfRange {
                place: place(),
                index,
                len,
            })
        }
    };

    for (i, value_type) in profile.sample_type.iter().enumerate() {
        check(value_type.r#type, &|| format!("sample_type {i}: type"))?;
        check(value_type.unit, &|| format!("sample_type {i}: unit"))?;
    }
    for (s, sample) in profile.sample.iter().enumerate() {
        for (l, label) in sample.label.iter().enumerate() {
            check(label.key, &|| format!("sample {s}: label {l}: key"))?;
            check(label.str, &|| format!("sample {s}: label {l}: str"))?;
            check(label.num_unit, &|| {
                format!("sample {s}: label {l}: num_unit")
            })?;
        }
    }
    for mapping in &profile.mapping {
        let id = mapping.id;
        check(mapping.filename, &|| format!("mapping {id}: filename"))?;
        check(mapping.build_id, &|| format!("mapping {id}: build_id"))?;
    }
    for function in &profile.function {
        let id = function.id;
        check(function.name, &|| format!("function {id}: name"))?;
        check(function.system_name, &|| {
            format!("function {id}: system_name")
        })?;
        check(function.filename, &|| format!("function {id}: filename"))?;
    }
    check(profile.drop_frames, &|| "profile: drop_frames".to_owned())?;
    check(profile.keep_frames, &|| "profile: keep_frames".to_owned())?;
    if let Some(period_type) = &profile.period_type {
        check(period_type.r#type, &|| "period_type: type".to_owned())?;
        check(period_type.unit, &|| "period_type: unit".to_owned())?;
    }
    for (i, &comment) in profile.comment.iter().enumerate() {
        check(comment, &|| format!("profile: comment {i}"))?;
    }
    check(profile.default_sample_type, &|| {
        "profile: default_sample_type".to_owned()
    })?;
    check(profile.doc_url, &|| "profile: doc_url".to_owned())?;
    Ok(())
}
