//! The samples of a group of OTLP profiles (one per pprof sample type),
//! merged into rows: one per sample identity, or per run of timestamped
//! samples, with a value for every column. Rows keep their attribute
//! indexes, values and timestamps in shared vectors, so that a row costs
//! no allocation of its own.

use std::hash::{Hash, Hasher};
use std::ops::Range;

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHasher};

use crate::otlp::{Profile, Sample};

pub(super) struct Row {
    pub stack: i32,
    pub link: i32,
    /// Its sorted attribute indexes, in [`Rows::attributes`].
    attributes: Range<usize>,
    /// In [`Rows::values`]: `width` values when untimed, `width` per
    /// observation when timed.
    pub values: Range<usize>,
    /// Its observations' timestamps, in [`Rows::timestamps`]; empty for a
    /// row of untimed samples.
    pub timestamps: Range<usize>,
}

#[derive(Default)]
pub(super) struct Rows {
    pub rows: Vec<Row>,
    attributes: Vec<i32>,
    pub values: Vec<i64>,
    pub timestamps: Vec<u64>,
}

impl Rows {
    pub fn attributes(&self, row: &Row) -> &[i32] {
        self.attributes_in(&row.attributes)
    }

    /// Empties the rows, keeping their memory for the next
    /// [`collect_rows`].
    pub fn clear(&mut self) {
        self.rows.clear();
        self.attributes.clear();
        self.values.clear();
        self.timestamps.clear();
    }

    /// The bytes the rows hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<Row>()
            + self.attributes.capacity() * size_of::<i32>()
            + self.values.capacity() * size_of::<i64>()
            + self.timestamps.capacity() * size_of::<u64>()
    }

    /// Room for `samples` rows of `observations` timestamps in all.
    fn reserve(&mut self, samples: usize, observations: usize, width: usize) {
        self.rows.reserve(samples);
        self.attributes.reserve(samples);
        self.values.reserve(observations.max(samples) * width);
        self.timestamps.reserve(observations);
    }

    /// Copies a sample's attribute indexes in, sorted.
    fn push_attributes(&mut self, sample: &Sample) -> Range<usize> {
        let start = self.attributes.len();
        self.attributes.extend_from_slice(&sample.attribute_indices);
        if let Some(added) = self.attributes.get_mut(start..) {
            added.sort_unstable();
        }
        start..self.attributes.len()
    }

    /// `width` zeros, with `value` in `column`.
    fn push_values(&mut self, width: usize, column: Option<usize>, value: i64) -> Range<usize> {
        let start = self.values.len();
        self.values.resize(start + width, 0);
        if let Some(slot) = column.and_then(|c| self.values.get_mut(start + c)) {
            *slot = value;
        }
        start..self.values.len()
    }

    fn attributes_in(&self, range: &Range<usize>) -> &[i32] {
        self.attributes.get(range.clone()).unwrap_or_default()
    }
}

fn hash_identity(stack: i32, link: i32, attributes: &[i32]) -> u64 {
    let mut hasher = FxHasher::default();
    (stack, link).hash(&mut hasher);
    attributes.hash(&mut hasher);
    hasher.finish()
}

/// Stack, sorted attribute indexes, link.
type Identity = (i32, Vec<i32>, i32);

/// A row while several columns are merged into it.
struct MergedRow {
    identity: Identity,
    values: Vec<i64>,
    /// (timestamp, value per column) per observation.
    observations: Vec<(u64, Vec<i64>)>,
    observation_index: FxHashMap<(u64, usize), usize>,
}

/// `columns` pairs each profile with its pprof column (`None` when the
/// pprof has no sample types). The rows are built in `spare`'s memory.
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
    let mut rows: Vec<MergedRow> = Vec::new();
    let mut index: FxHashMap<(Identity, Option<usize>), usize> = FxHashMap::default();
    for &(profile, column) in columns {
        let mut runs: FxHashMap<Identity, usize> = FxHashMap::default();
        for sample in &profile.samples {
            let mut attributes = sample.attribute_indices.clone();
            attributes.sort_unstable();
            let identity = (sample.stack_index, attributes, sample.link_index);
            let timed = !sample.timestamps_unix_nano.is_empty() && !aggregate_timestamps;
            let occurrence = timed.then(|| {
                let n = runs.entry(identity.clone()).or_default();
                *n += 1;
                *n - 1
            });
            let row = *index
                .entry((identity.clone(), occurrence))
                .or_insert_with(|| {
                    rows.push(MergedRow {
                        identity,
                        values: vec![0; width],
                        observations: Vec::new(),
                        observation_index: FxHashMap::default(),
                    });
                    rows.len() - 1
                });
            let Some(row) = rows.get_mut(row) else {
                continue;
            };
            if timed {
                row.observe(
                    sample.timestamps_unix_nano.as_slice(),
                    &sample.values,
                    column,
                    width,
                );
            } else if let Some(total) = column.and_then(|c| row.values.get_mut(c)) {
                *total = total.wrapping_add(untimed_value(sample));
            }
        }
    }
    flatten(rows, spare)
}

/// Merged rows in the shared vectors of [`Rows`] (`rows`, empty).
fn flatten(merged: Vec<MergedRow>, mut rows: Rows) -> Rows {
    for row in merged {
        let (stack, attributes, link) = row.identity;
        let attributes_start = rows.attributes.len();
        rows.attributes.extend(attributes);
        let values_start = rows.values.len();
        let timestamps_start = rows.timestamps.len();
        if row.observations.is_empty() {
            rows.values.extend(row.values);
        }
        for (timestamp, values) in row.observations {
            rows.timestamps.push(timestamp);
            rows.values.extend(values);
        }
        rows.rows.push(Row {
            stack,
            link,
            attributes: attributes_start..rows.attributes.len(),
            values: values_start..rows.values.len(),
            timestamps: timestamps_start..rows.timestamps.len(),
        });
    }
    rows
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
    let observations = if aggregate_timestamps {
        0
    } else {
        profile
            .samples
            .iter()
            .map(|s| s.timestamps_unix_nano.len())
            .sum()
    };
    rows.reserve(profile.samples.len(), observations, width);
    let mut untimed: HashTable<usize> = HashTable::new();
    for sample in &profile.samples {
        let attributes = rows.push_attributes(sample);
        let (stack, link) = (sample.stack_index, sample.link_index);
        if !sample.timestamps_unix_nano.is_empty() && !aggregate_timestamps {
            let values_start = rows.values.len();
            for i in 0..sample.timestamps_unix_nano.len() {
                let value = if sample.values.is_empty() {
                    1
                } else {
                    sample.values.get(i).copied().unwrap_or(0)
                };
                rows.push_values(width, column, value);
            }
            let timestamps_start = rows.timestamps.len();
            rows.timestamps
                .extend_from_slice(&sample.timestamps_unix_nano);
            rows.rows.push(Row {
                stack,
                link,
                attributes,
                values: values_start..rows.values.len(),
                timestamps: timestamps_start..rows.timestamps.len(),
            });
            continue;
        }
        let value = untimed_value(sample);
        let hash = hash_identity(stack, link, rows.attributes_in(&attributes));
        let known = untimed
            .find(hash, |&r| {
                rows.rows.get(r).is_some_and(|row| {
                    (row.stack, row.link) == (stack, link)
                        && rows.attributes(row) == rows.attributes_in(&attributes)
                })
            })
            .and_then(|&r| rows.rows.get(r))
            .map(|row| row.values.start);
        match known {
            Some(values_start) => {
                rows.attributes.truncate(attributes.start);
                if let Some(total) = column.and_then(|c| rows.values.get_mut(values_start + c)) {
                    *total = total.wrapping_add(value);
                }
            }
            None => {
                let values = rows.push_values(width, column, value);
                rows.rows.push(Row {
                    stack,
                    link,
                    attributes,
                    values,
                    timestamps: 0..0,
                });
                let Rows {
                    rows: all,
                    attributes,
                    ..
                } = &rows;
                untimed.insert_unique(hash, rows.rows.len() - 1, |&r| {
                    all.get(r).map_or(0, |row| {
                        let row_attributes = attributes.get(row.attributes.clone());
                        hash_identity(row.stack, row.link, row_attributes.unwrap_or_default())
                    })
                });
            }
        }
    }
    rows
}

impl MergedRow {
    /// Adds a column's observations; the n-th observation at a timestamp
    /// pairs with the n-th at that timestamp in the other columns. Without
    /// values, each timestamp counts 1.
    fn observe(&mut self, timestamps: &[u64], values: &[i64], column: Option<usize>, width: usize) {
        let mut seen: FxHashMap<u64, usize> = FxHashMap::default();
        for (i, &timestamp) in timestamps.iter().enumerate() {
            let nth = seen.entry(timestamp).or_default();
            let key = (timestamp, *nth);
            *nth += 1;
            let observation = *self.observation_index.entry(key).or_insert_with(|| {
                self.observations.push((timestamp, vec![0; width]));
                self.observations.len() - 1
            });
            let value = if values.is_empty() {
                1
            } else {
                values.get(i).copied().unwrap_or(0)
            };
            let slot = column.and_then(|c| {
                self.observations
                    .get_mut(observation)
                    .and_then(|(_, v)| v.get_mut(c))
            });
            if let Some(slot) = slot {
                *slot = slot.wrapping_add(value);
            }
        }
    }
}
