use thiserror::Error;

use crate::ValidationError;

/// Why a scrape could not be taken. The tracker keeps its baseline: the
/// next scrape it takes is compared with the last one it took.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DeltaError {
    #[error("invalid profile: {0}")]
    Invalid(ValidationError),
    #[error(
        "no sample type is cumulative (the profile has {sample_types}); \
         only alloc_objects/count, alloc_space/bytes, contentions/count and \
         delay/nanoseconds are"
    )]
    NotCumulative { sample_types: String },
    #[error(
        "sample {sample}: its {sample_type} value {value} is negative, which a total cannot be"
    )]
    Negative {
        sample: usize,
        sample_type: String,
        value: i64,
    },
    #[error("the {sample_type} values of one stack and label set add up to more than a 64-bit integer holds")]
    Overflow { sample_type: String },
    #[error("the profile has more than {limit} distinct stacks and label sets")]
    TooManyIdentities { limit: usize },
    #[error("more than {} distinct frames, labels and strings", u32::MAX)]
    DictionaryFull,
}

impl From<ValidationError> for DeltaError {
    fn from(error: ValidationError) -> Self {
        Self::Invalid(error)
    }
}
