//! The samples of a group of OTLP profiles (one per pprof sample type),
//! merged into rows: one per sample identity, or per run of timestamped
//! samples, with a value for every column. Rows keep their attribute
//! indexes, values and timestamps in shared vectors, so that a row costs
//! no allocation of its own.

use std::hash::{Hash, Hasher};
use std::ops::Range;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::otlp::{Profile, Sample};

mod timed;

use timed::TimedRows;

/// A range of one of the shared vectors rows and samples keep their parts
/// in, in half the room of a `Range<usize>`. Those vectors hold far fewer
/// than 2^32 items: their counts are bounded by the request's (a protobuf
/// message, under 2 GiB), or, for values, 2^32 of them would take 32 GiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    pub fn new(range: Range<usize>) -> Self {
        Self {
            start: index32(range.start),
            end: index32(range.end),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn start(self) -> usize {
        self.start as usize
    }

    pub fn len(self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.start >= self.end
    }
}

/// An index (or a handle, or a count) that is far below 2^32, as
/// [`Span`] says.
pub(super) fn index32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Row {
    pub stack: i32,
    pub link: i32,
    /// Its sorted attribute indexes, in [`Rows::attributes`].
    attributes: Span,
    /// In [`Rows::values`]: `width` values when untimed, `width` per
    /// observation when timed.
    pub values: Span,
    /// Its observations' timestamps, in [`Rows::timestamps`]; empty for a
    /// row of untimed samples.
    pub timestamps: Span,
}

#[derive(Default)]
pub(super) struct Rows {
    pub rows: Vec<Row>,
    attributes: Vec<i32>,
    pub values: Vec<i64>,
    pub timestamps: Vec<u64>,
    /// Rows of untimed samples by identity, while they are collected.
    untimed: HashTable<u32>,
}

impl Rows {
    pub fn attributes(&self, row: &Row) -> &[i32] {
        self.attributes_in(row.attributes)
    }

    /// The attribute indexes of all rows, for estimating their labels.
    pub fn attribute_count(&self) -> usize {
        self.attributes.len()
    }

    /// Empties the rows, keeping their memory for the next
    /// [`collect_rows`].
    pub fn clear(&mut self) {
        self.rows.clear();
        self.attributes.clear();
        self.values.clear();
        self.timestamps.clear();
        self.untimed.clear();
    }

    /// Keeps the larger of its values (and timestamps) vectors and those
    /// given, emptied: samples that took the rows' vectors give them back.
    pub fn keep_larger(&mut self, mut values: Vec<i64>, mut timestamps: Vec<u64>) {
        if values.capacity() > self.values.capacity() {
            values.clear();
            self.values = values;
        }
        if timestamps.capacity() > self.timestamps.capacity() {
            timestamps.clear();
            self.timestamps = timestamps;
        }
    }

    /// The bytes the rows hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<Row>()
            + self.attributes.capacity() * size_of::<i32>()
            + self.values.capacity() * size_of::<i64>()
            + self.timestamps.capacity() * size_of::<u64>()
            + self.untimed.capacity() * (size_of::<u32>() + 1)
    }

    /// Room for `rows` rows with `observations` timestamps in all, and for
    /// looking up `untimed` rows of untimed samples.
    fn reserve(&mut self, rows: usize, observations: usize, width: usize, untimed: usize) {
        self.rows.reserve(rows);
        self.attributes.reserve(rows);
        self.values.reserve(observations.max(rows) * width);
        self.timestamps.reserve(observations);
        // Empty, so nothing is rehashed.
        self.untimed.reserve(untimed, |_| 0);
    }

    /// Copies a sample's attribute indexes in, sorted.
    fn push_attributes(&mut self, sample: &Sample) -> Span {
        let start = self.attributes.len();
        self.attributes.extend_from_slice(&sample.attribute_indices);
        if let Some(added) = self.attributes.get_mut(start..) {
            added.sort_unstable();
        }
        Span::new(start..self.attributes.len())
    }

    /// `width` zeros, with `value` in `column`.
    fn push_values(&mut self, width: usize, column: Option<usize>, value: i64) -> Span {
        let start = self.values.len();
        self.values.resize(start + width, 0);
        if let Some(slot) = column.and_then(|c| self.values.get_mut(start + c)) {
            *slot = value;
        }
        Span::new(start..self.values.len())
    }

    fn attributes_in(&self, span: Span) -> &[i32] {
        self.attributes.get(span.range()).unwrap_or_default()
    }

    /// Whether `row` has this identity.
    fn is(&self, row: usize, stack: i32, link: i32, attributes: Span) -> bool {
        self.rows.get(row).is_some_and(|row| {
            (row.stack, row.link) == (stack, link)
                && self.attributes(row) == self.attributes_in(attributes)
        })
    }

    /// Adds an untimed sample's `value` to the untimed row of its identity
    /// (whose attributes were just pushed as `attributes`, and hash to
    /// `hash`), which is added when new.
    fn add_untimed(
        &mut self,
        (stack, link, attributes): (i32, i32, Span),
        hash: u64,
        width: usize,
        column: Option<usize>,
        value: i64,
    ) {
        let known = self
            .untimed
            .find(hash, |&r| self.is(r as usize, stack, link, attributes))
            .and_then(|&r| self.rows.get(r as usize))
            .map(|row| row.values.start());
        match known {
            Some(values_start) => {
                self.attributes.truncate(attributes.start());
                if let Some(total) = column.and_then(|c| self.values.get_mut(values_start + c)) {
                    *total = total.wrapping_add(value);
                }
            }
            None => {
                let values = self.push_values(width, column, value);
                self.rows.push(Row {
                    stack,
                    link,
                    attributes,
                    values,
                    timestamps: Span::default(),
                });
                let Self {
                    rows,
                    attributes,
                    untimed,
                    ..
                } = self;
                untimed.insert_unique(hash, index32(rows.len() - 1), |&r| {
                    rows.get(r as usize).map_or(0, |row| {
                        let row_attributes = attributes.get(row.attributes.range());
                        hash_identity(row.stack, row.link, row_attributes.unwrap_or_default())
                    })
                });
            }
        }
    }
}

fn hash_identity(stack: i32, link: i32, attributes: &[i32]) -> u64 {
    let mut hasher = FxHasher::default();
    (stack, link).hash(&mut hasher);
    attributes.hash(&mut hasher);
    hasher.finish()
}

/// `columns` pairs each profile with its pprof column (`None` when the
/// pprof has no sample types). The rows are built in `spare`'s memory.
///
/// Untimed samples of one identity (stack, attributes in any order, link)
/// sum into one row, with a value per column. The n-th timed sample of an
/// identity in one column shares a row with the n-th of that identity in
/// each other column; in that row, the n-th observation at a timestamp in
/// one column's sample pairs with the n-th at that timestamp in the
/// others'. Rows come in the order their first sample comes, column after
/// column; a timed row's observations in the order their first
/// timestamps come.
pub(super) fn collect_rows(
    columns: &[(&Profile, Option<usize>)],
    width: usize,
    aggregate_timestamps: bool,
    mut spare: Rows,
) -> Rows {
    spare.clear();
    if let [(profile, column)] = columns {
        return rows_of_one_profile(profile, *column, width, aggregate_timestamps, spare);
    }
    merge_columns(columns, width, aggregate_timestamps, spare)
}

/// What an untimed sample adds to its column: the sum of its values, or
/// its timestamp count when it has no values.
fn untimed_value(sample: &Sample) -> i64 {
    if sample.values.is_empty() {
        sample.timestamps_unix_nano.len() as i64
    } else {
        sample.values.iter().fold(0i64, |a, v| a.wrapping_add(*v))
    }
}

/// The value of a timed sample's `i`-th observation: each timestamp counts
/// 1 when the sample has no values.
fn observed_value(sample: &Sample, i: usize) -> i64 {
    if sample.values.is_empty() {
        1
    } else {
        sample.values.get(i).copied().unwrap_or(0)
    }
}

fn is_timed(sample: &Sample, aggregate_timestamps: bool) -> bool {
    !sample.timestamps_unix_nano.is_empty() && !aggregate_timestamps
}

/// [`collect_rows`] for a single profile, where nothing pairs across
/// columns: each timed sample is a row of its own, with one observation per
/// timestamp, and untimed samples of one identity sum into one row.
fn rows_of_one_profile(
    profile: &Profile,
    column: Option<usize>,
    width: usize,
    aggregate_timestamps: bool,
    mut rows: Rows,
) -> Rows {
    let (observations, untimed) = observations_and_untimed(profile, aggregate_timestamps);
    rows.reserve(profile.samples.len(), observations, width, untimed);
    for sample in &profile.samples {
        let attributes = rows.push_attributes(sample);
        let (stack, link) = (sample.stack_index, sample.link_index);
        if is_timed(sample, aggregate_timestamps) {
            let values_start = rows.values.len();
            for i in 0..sample.timestamps_unix_nano.len() {
                rows.push_values(width, column, observed_value(sample, i));
            }
            let timestamps_start = rows.timestamps.len();
            rows.timestamps
                .extend_from_slice(&sample.timestamps_unix_nano);
            rows.rows.push(Row {
                stack,
                link,
                attributes,
                values: Span::new(values_start..rows.values.len()),
                timestamps: Span::new(timestamps_start..rows.timestamps.len()),
            });
            continue;
        }
        let hash = hash_identity(stack, link, rows.attributes_in(attributes));
        let value = untimed_value(sample);
        rows.add_untimed((stack, link, attributes), hash, width, column, value);
    }
    rows
}

/// A profile's timestamps (0 when they are aggregated) and untimed
/// samples.
fn observations_and_untimed(profile: &Profile, aggregate_timestamps: bool) -> (usize, usize) {
    profile
        .samples
        .iter()
        .fold((0, 0), |(observations, untimed), sample| {
            if is_timed(sample, aggregate_timestamps) {
                (observations + sample.timestamps_unix_nano.len(), untimed)
            } else {
                (observations, untimed + 1)
            }
        })
}

/// [`collect_rows`] for several profiles.
fn merge_columns(
    columns: &[(&Profile, Option<usize>)],
    width: usize,
    aggregate_timestamps: bool,
    mut rows: Rows,
) -> Rows {
    // Columns mostly have the same identities: the largest is about as
    // many rows as there will be.
    let (most_samples, most_untimed) = columns.iter().fold((0, 0), |(samples, untimed), (p, _)| {
        let (_, profile_untimed) = observations_and_untimed(p, aggregate_timestamps);
        (samples.max(p.samples.len()), untimed.max(profile_untimed))
    });
    rows.reserve(most_samples, 0, width, most_untimed);
    let mut timed = TimedRows::default();
    for (ordinal, &(profile, column)) in columns.iter().enumerate() {
        for sample in &profile.samples {
            let attributes = rows.push_attributes(sample);
            let (stack, link) = (sample.stack_index, sample.link_index);
            let hash = hash_identity(stack, link, rows.attributes_in(attributes));
            let identity = (stack, link, attributes);
            if is_timed(sample, aggregate_timestamps) {
                let row = timed.row_of(&mut rows, identity, hash, ordinal);
                timed.observe(row, sample, width, column);
            } else {
                rows.add_untimed(identity, hash, width, column, untimed_value(sample));
            }
        }
    }
    timed.flatten(&mut rows, width);
    rows
}

#[cfg(test)]
mod tests;
