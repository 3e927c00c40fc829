//! The seam to profbridge-pprof's delta module: one tracker per job of a
//! cumulative profile. Until that module lands, a stand-in with its API
//! keeps every scrape as a baseline, so nothing cumulative is sent.

pub use stand_in::{DeltaOutcome, DeltaTracker, ResetReason};

// Has the real module's variants; it makes only `Baseline`.
#[allow(dead_code)]
mod stand_in {
    use profbridge_pprof::Profile;

    #[derive(Debug, Clone, PartialEq)]
    pub enum DeltaOutcome {
        Baseline,
        Reset(ResetReason),
        Delta(Box<Profile>),
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ResetReason {
        ValueDecreased,
        SampleTypesChanged,
    }

    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("deltas are not available in this build")]
    pub struct DeltaError;

    #[derive(Debug, Default)]
    pub struct DeltaTracker;

    impl DeltaTracker {
        pub fn next(&mut self, _scrape: Profile) -> Result<DeltaOutcome, DeltaError> {
            Ok(DeltaOutcome::Baseline)
        }
    }
}
