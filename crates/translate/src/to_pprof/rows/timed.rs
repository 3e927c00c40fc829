//! Timed samples of several columns merged into rows: the n-th timed
//! sample of an identity in one column shares a row with the n-th of that
//! identity in each other column, and observations pair by timestamp.

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use super::{hash_identity, observed_value, Row, Rows, Span};
use crate::otlp::Sample;

/// No observation: the end of a list of them.
const NONE: usize = usize::MAX;

/// The rows of timed samples while several columns are merged, with their
/// observations: each timed row's observations are a list, which
/// [`TimedRows::flatten`] copies into [`Rows`] once all columns are in.
#[derive(Default)]
pub(super) struct TimedRows {
    /// Identities of timed samples, as indexes into `identity_counts`.
    identities: HashTable<usize>,
    identity_counts: Vec<IdentityCount>,
    /// The timed row of each identity's n-th timed sample in a column, by
    /// (identity, n).
    by_occurrence: FxHashMap<(usize, usize), usize>,
    rows: Vec<TimedRow>,
    observations: Vec<Observation>,
    /// `width` per observation.
    values: Vec<i64>,
    /// Observations by timed row, timestamp, and n: the n-th observation
    /// at a timestamp in each column's sample.
    by_key: FxHashMap<(usize, u64, usize), usize>,
    /// For long runs of timestamps: by timestamp, the sample (`samples`
    /// when it was seen) and how many times it was seen in it.
    seen: FxHashMap<u64, (usize, usize)>,
    /// How many timed samples were observed.
    samples: usize,
}

/// How many timed samples of one identity a column has had so far.
struct IdentityCount {
    /// The row (in [`Rows`]) of its first timed sample, whose identity it is.
    row: usize,
    /// The ordinal of the column being counted.
    ordinal: usize,
    count: usize,
}

impl IdentityCount {
    /// Counts a sample of column `ordinal`; returns how many that column
    /// had before it.
    fn next_occurrence(&mut self, ordinal: usize) -> usize {
        if self.ordinal != ordinal {
            self.ordinal = ordinal;
            self.count = 0;
        }
        self.count += 1;
        self.count - 1
    }
}

struct TimedRow {
    /// In [`Rows::rows`].
    row: usize,
    /// Its first and last observations ([`NONE`] before it has any).
    first: usize,
    last: usize,
}

struct Observation {
    timestamp: u64,
    /// The row's next observation, or [`NONE`].
    next: usize,
}

/// Runs of timestamps up to this long are searched for repeats rather than
/// counted in a map.
const SHORT_RUN: usize = 16;

impl TimedRows {
    /// The timed row of a timed sample of `identity` (whose attributes
    /// were just pushed, and hash to `hash`) in column `ordinal`; added,
    /// to `rows` too, when new.
    pub(super) fn row_of(
        &mut self,
        rows: &mut Rows,
        identity: (i32, i32, Span),
        hash: u64,
        ordinal: usize,
    ) -> usize {
        let counted = self.identity_index(rows, identity, hash);
        let occurrence = self
            .identity_counts
            .get_mut(counted)
            .map_or(0, |count| count.next_occurrence(ordinal));
        let (stack, link, attributes) = identity;
        if let Some(&known) = self.by_occurrence.get(&(counted, occurrence)) {
            rows.attributes.truncate(attributes.start());
            return known;
        }
        self.rows.push(TimedRow {
            row: rows.rows.len(),
            first: NONE,
            last: NONE,
        });
        rows.rows.push(Row {
            stack,
            link,
            attributes,
            values: Span::default(),
            timestamps: Span::default(),
        });
        self.by_occurrence
            .insert((counted, occurrence), self.rows.len() - 1);
        self.rows.len() - 1
    }

    /// The index in `identity_counts` of `identity`, added (for the row
    /// `rows` gets next) when new.
    fn identity_index(
        &mut self,
        rows: &Rows,
        (stack, link, attributes): (i32, i32, Span),
        hash: u64,
    ) -> usize {
        let Self {
            identities,
            identity_counts: counts,
            ..
        } = self;
        let known = identities.find(hash, |&i| {
            counts
                .get(i)
                .is_some_and(|count| rows.is(count.row, stack, link, attributes))
        });
        if let Some(&known) = known {
            return known;
        }
        counts.push(IdentityCount {
            row: rows.rows.len(),
            ordinal: 0,
            count: 0,
        });
        identities.insert_unique(hash, counts.len() - 1, |&i| {
            counts
                .get(i)
                .and_then(|count| rows.rows.get(count.row))
                .map_or(0, |row| {
                    hash_identity(row.stack, row.link, rows.attributes(row))
                })
        });
        counts.len() - 1
    }

    /// Adds the observations of a timed sample, in `column`, to timed row
    /// `row`: the n-th observation at a timestamp pairs with the n-th at
    /// that timestamp in the other columns.
    pub(super) fn observe(
        &mut self,
        row: usize,
        sample: &Sample,
        width: usize,
        column: Option<usize>,
    ) {
        let timestamps = sample.timestamps_unix_nano.as_slice();
        self.samples += 1;
        for (i, &timestamp) in timestamps.iter().enumerate() {
            let nth = self.repeats(timestamps, i, timestamp);
            let observation = match self.by_key.get(&(row, timestamp, nth)) {
                Some(&known) => known,
                None => self.add_observation(row, timestamp, nth, width),
            };
            let slot = column.and_then(|c| self.values.get_mut(observation * width + c));
            if let Some(slot) = slot {
                *slot = slot.wrapping_add(observed_value(sample, i));
            }
        }
    }

    /// How many times `timestamp`, the `i`-th of `timestamps`, comes
    /// before it there.
    fn repeats(&mut self, timestamps: &[u64], i: usize, timestamp: u64) -> usize {
        if timestamps.len() <= SHORT_RUN {
            let before = timestamps.get(..i).unwrap_or_default();
            return before.iter().filter(|&&t| t == timestamp).count();
        }
        let sample = self.samples;
        let (seen_in, count) = self.seen.entry(timestamp).or_insert((sample, 0));
        if *seen_in != sample {
            (*seen_in, *count) = (sample, 0);
        }
        *count += 1;
        *count - 1
    }

    fn add_observation(&mut self, row: usize, timestamp: u64, nth: usize, width: usize) -> usize {
        let observation = self.observations.len();
        self.observations.push(Observation {
            timestamp,
            next: NONE,
        });
        self.values.resize(self.values.len() + width, 0);
        if let Some(timed) = self.rows.get_mut(row) {
            let last = std::mem::replace(&mut timed.last, observation);
            match self.observations.get_mut(last) {
                Some(last) => last.next = observation,
                None => timed.first = observation,
            }
        }
        self.by_key.insert((row, timestamp, nth), observation);
        observation
    }

    /// Gives each timed row its observations' values and timestamps.
    pub(super) fn flatten(&self, rows: &mut Rows, width: usize) {
        rows.values.reserve(self.values.len());
        rows.timestamps.reserve(self.observations.len());
        for timed in &self.rows {
            let values_start = rows.values.len();
            let timestamps_start = rows.timestamps.len();
            let mut next = timed.first;
            while let Some(observation) = self.observations.get(next) {
                rows.timestamps.push(observation.timestamp);
                let start = next * width;
                let values = self.values.get(start..start + width);
                rows.values.extend_from_slice(values.unwrap_or_default());
                next = observation.next;
            }
            let values = Span::new(values_start..rows.values.len());
            let timestamps = Span::new(timestamps_start..rows.timestamps.len());
            if let Some(row) = rows.rows.get_mut(timed.row) {
                row.values = values;
                row.timestamps = timestamps;
            }
        }
    }
}
