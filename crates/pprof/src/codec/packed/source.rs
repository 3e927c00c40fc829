//! What the readers of a profile's samples take: a decoded [`Profile`],
//! or a [`PackedProfile`] whose samples stay in their protobuf.

use crate::{Profile, Sample};

/// A profile's tables and its samples, one at a time.
pub trait SampleSource {
    /// Every field but the samples: what readers take the tables from.
    /// A [`Profile`] gives itself, samples included; do not read them here.
    fn tables(&self) -> &Profile;

    fn sample_count(&self) -> usize;

    /// Calls `visit` with each sample in order, with its position; stops
    /// at the first error `visit` returns.
    fn try_for_each_sample<E>(
        &self,
        visit: impl FnMut(usize, &Sample) -> Result<(), E>,
    ) -> Result<(), E>;

    /// Whether the profile is known to be valid already, so that
    /// [`crate::validate`] need not run again.
    fn validated(&self) -> bool {
        false
    }
}

impl SampleSource for Profile {
    fn tables(&self) -> &Profile {
        self
    }

    fn sample_count(&self) -> usize {
        self.sample.len()
    }

    fn try_for_each_sample<E>(
        &self,
        mut visit: impl FnMut(usize, &Sample) -> Result<(), E>,
    ) -> Result<(), E> {
        self.sample
            .iter()
            .enumerate()
            .try_for_each(|(index, sample)| visit(index, sample))
    }
}
