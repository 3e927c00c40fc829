//! Folded stacks (`frame;frame;frame value` per line, root first), as
//! Brendan Gregg's stackcollapse tools and Pyroscope's `format=folded` write
//! them. docs/pprof.md describes the mapping to and from pprof.

mod error;
mod parse;
mod write;

pub use error::FoldedError;
pub use parse::parse_folded;
pub use write::write_folded;

use crate::Profile;

/// The sample type folded input gets unless the caller names another.
pub const DEFAULT_FOLDED_SAMPLE_TYPE: (&str, &str) = ("samples", "count");

/// pprof's default sample type: the first whose type string is
/// `default_sample_type`, else the last; `None` without sample types.
pub fn default_sample_type_index(profile: &Profile) -> Option<usize> {
    let default_name = usize::try_from(profile.default_sample_type)
        .ok()
        .and_then(|i| profile.string_table.get(i))
        .filter(|name| !name.is_empty());
    default_name
        .and_then(|name| sample_type_index(profile, name))
        .or_else(|| profile.sample_type.len().checked_sub(1))
}

/// The index of the first sample type whose type string is `name`.
pub fn sample_type_index(profile: &Profile, name: &str) -> Option<usize> {
    profile.sample_type.iter().position(|value_type| {
        usize::try_from(value_type.r#type)
            .ok()
            .and_then(|index| profile.string_table.get(index))
            .is_some_and(|type_name| type_name == name)
    })
}
