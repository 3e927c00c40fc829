//! Deltas of cumulative profiles: what a process did between two scrapes.
//!
//! Go's heap (and allocs), mutex and block profiles hold totals since the
//! process started. A [`DeltaTracker`], one per target and profile type,
//! turns each scrape into its difference from the scrape before
//! (docs/pprof.md, "Deltas of cumulative profiles"):
//!
//! - **Which values.** [`value_kinds`]: `alloc_objects/count`,
//!   `alloc_space/bytes`, `contentions/count` and `delay/nanoseconds` are
//!   cumulative; every other sample type (`inuse_*`, cpu, goroutine,
//!   threadcreate) is a gauge. A profile with no cumulative value is an
//!   error, [`DeltaError::NotCumulative`].
//! - **Identity.** A sample is its stack and its labels. The stack is its
//!   frames, leaf first: each line's function name, system name, file
//!   name, line and column, or, for a location without lines, its
//!   mapping's file and build id and the address as a file offset. Location,
//!   function and mapping ids and string indexes play no part, so a
//!   producer may renumber them between scrapes. Labels are string and
//!   numeric ones with their units, in any order; labels with only a key
//!   carry nothing and are ignored. Samples of a scrape with the same
//!   identity are summed first.
//! - **The delta.** For each identity of the new scrape, each cumulative
//!   value less its value in the previous scrape (0 when it was absent),
//!   and each gauge as it is now. Rows whose values are all zero are left
//!   out; a row whose counters did not move but whose gauges are not zero
//!   stays, so the `inuse_*` values of every delta are the whole heap in
//!   use at the time of the scrape.
//! - **Resets.** When any cumulative value of any identity is lower than
//!   in the previous scrape, or an identity with a non-zero cumulative
//!   value is gone, the process restarted: nothing is sent, and the scrape
//!   is the new baseline ([`DeltaOutcome::Reset`]). So are scrapes whose
//!   sample types differ from the previous one's.
//! - **Time.** The delta's `time_nanos` is the scrape's own, and its
//!   `duration_nanos` the scrape's `time_nanos` less the previous scrape's
//!   (0 when that is not positive): the interval the delta covers.
//!   Callers set `time_nanos` of scrapes that lack it.
//!
//! For any sequence of scrapes without a reset, the deltas of each identity
//! add up to its last cumulative values less its first, exactly: every
//! scrape is compared with the last one taken, and a scrape that fails
//! with an error is not taken.

mod dictionary;
mod error;
mod kinds;
mod output;
mod previous;
mod rows;

pub use error::DeltaError;
pub use kinds::{value_kinds, ValueKind};

use dictionary::Dictionary;
use previous::{Comparison, Previous};

use crate::strings::resolve;
use crate::validate::validate;
use crate::Profile;

/// The most distinct stacks and label sets a scrape may have for
/// [`DeltaTracker::default`].
pub const DEFAULT_MAX_IDENTITIES: usize = 1 << 18;

/// What to do with a scrape.
#[derive(Debug, Clone, PartialEq)]
pub enum DeltaOutcome {
    /// The first scrape: kept as the baseline, nothing to send.
    Baseline,
    /// The process restarted, or the sample types changed: the scrape is
    /// the new baseline, nothing to send.
    Reset(ResetReason),
    /// The difference from the previous scrape, to send. Its samples may be
    /// none, when nothing changed.
    Delta(Box<Profile>),
}

/// Why a scrape started a new baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// A cumulative value went down, or a stack with one vanished.
    ValueDecreased,
    /// The sample types are not those of the previous scrape.
    SampleTypesChanged,
}

/// The state of one target and profile type: the last scrape taken.
#[derive(Debug)]
pub struct DeltaTracker {
    max_identities: usize,
    dictionary: Dictionary,
    previous: Option<Previous>,
}

impl Default for DeltaTracker {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_IDENTITIES)
    }
}

impl DeltaTracker {
    /// A tracker that refuses scrapes with more than `max_identities`
    /// distinct stacks and label sets ([`DeltaError::TooManyIdentities`]).
    pub fn new(max_identities: usize) -> Self {
        Self {
            max_identities,
            dictionary: Dictionary::new(),
            previous: None,
        }
    }

    /// Takes the next scrape of the target. On an error the scrape is not
    /// taken, and the next one is compared with the one before it.
    pub fn next(&mut self, scrape: Profile) -> Result<DeltaOutcome, DeltaError> {
        validate(&scrape)?;
        let kinds = value_kinds(&scrape);
        if !kinds.contains(&ValueKind::Cumulative) {
            return Err(DeltaError::NotCumulative {
                sample_types: sample_types_text(&scrape),
            });
        }
        let rows = rows::collect(&scrape, &kinds, &mut self.dictionary, self.max_identities)?;
        let sample_types = sample_types(&scrape);
        let time_nanos = scrape.time_nanos;
        let outcome = match &self.previous {
            None => DeltaOutcome::Baseline,
            Some(previous) if previous.sample_types != sample_types => {
                DeltaOutcome::Reset(ResetReason::SampleTypesChanged)
            }
            Some(previous) => match previous.compare(&rows, &kinds) {
                Comparison::Decreased => DeltaOutcome::Reset(ResetReason::ValueDecreased),
                Comparison::Deltas(deltas) => {
                    let duration = time_nanos.saturating_sub(previous.time_nanos).max(0);
                    DeltaOutcome::Delta(Box::new(output::delta_profile(
                        scrape, &rows, &deltas, duration,
                    )))
                }
            },
        };
        let previous = self
            .previous
            .insert(Previous::keep(rows, &kinds, sample_types, time_nanos));
        previous.compact(&mut self.dictionary);
        Ok(outcome)
    }

    /// The distinct stacks and label sets of the baseline (0 before the
    /// first scrape): what the tracker holds.
    pub fn identities(&self) -> usize {
        self.previous.as_ref().map_or(0, Previous::identities)
    }

    /// Forgets the baseline: the next scrape is a first one.
    pub fn clear(&mut self) {
        *self = Self::new(self.max_identities);
    }
}

fn sample_types(profile: &Profile) -> Vec<(String, String)> {
    let text = |index| resolve(&profile.string_table, index).to_owned();
    profile
        .sample_type
        .iter()
        .map(|value_type| (text(value_type.r#type), text(value_type.unit)))
        .collect()
}

fn sample_types_text(profile: &Profile) -> String {
    let names: Vec<String> = (0..profile.sample_type.len())
        .map(|column| rows::sample_type_name(profile, column))
        .collect();
    if names.is_empty() {
        "no sample types".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Function, Line, Location, Sample, ValueType};

    /// A contention profile of one stack per name, each one frame deep.
    fn scrape(names: &[String], value: i64) -> Profile {
        let mut string_table = vec![String::new(), "contentions".into(), "count".into()];
        string_table.extend(names.iter().cloned());
        let ids = 1..=names.len() as u64;
        Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            function: ids
                .clone()
                .map(|id| Function {
                    id,
                    name: id as i64 + 2,
                    ..Function::default()
                })
                .collect(),
            location: ids
                .clone()
                .map(|id| Location {
                    id,
                    line: vec![Line {
                        function_id: id,
                        ..Line::default()
                    }],
                    ..Location::default()
                })
                .collect(),
            sample: ids
                .map(|id| Sample {
                    location_id: vec![id],
                    value: vec![if id == 1 { value } else { 0 }],
                    label: vec![],
                })
                .collect(),
            string_table,
            ..Profile::default()
        }
    }

    #[test]
    fn the_dictionary_drops_what_no_identity_uses_any_more() {
        let mut tracker = DeltaTracker::default();
        let mut most = 0;
        for step in 0..50 {
            let mut names = vec!["lasting".to_owned()];
            names.extend((0..500).map(|i| format!("f{step}_{i}")));
            tracker.next(scrape(&names, step)).unwrap();
            most = most.max(tracker.dictionary.len());
        }
        // Each scrape interns 501 tokens; without compaction there would
        // be 50 times that.
        assert!(most < 3 * 501 + 1024, "{most} tokens");
        assert_eq!(tracker.identities(), 501);
    }
}
