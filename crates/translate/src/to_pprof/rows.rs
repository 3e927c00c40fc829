//! The samples of a group of OTLP profiles (one per pprof sample type),
//! merged into rows: one per sample identity, or per run of timestamped
//! samples, with a value for every column.

use rustc_hash::FxHashMap;

use crate::otlp::Profile;

/// Stack, sorted attribute indexes, link.
pub(super) type Identity = (i32, Vec<i32>, i32);

pub(super) struct Row {
    pub identity: Identity,
    pub values: Vec<i64>,
    /// (timestamp, value per column) per observation; empty for a row of
    /// untimed samples.
    pub observations: Vec<(u64, Vec<i64>)>,
    observation_index: FxHashMap<(u64, usize), usize>,
}

/// `columns` pairs each profile with its pprof column (`None` when the
/// pprof has no sample types).
pub(super) fn collect_rows(
    columns: &[(&Profile, Option<usize>)],
    width: usize,
    aggregate_timestamps: bool,
) -> Vec<Row> {
    if let [(profile, column)] = columns {
        return rows_of_one_profile(profile, *column, width, aggregate_timestamps);
    }
    let mut rows: Vec<Row> = Vec::new();
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
                    rows.push(Row {
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
                let value = if sample.values.is_empty() {
                    sample.timestamps_unix_nano.len() as i64
                } else {
                    sample.values.iter().fold(0i64, |a, v| a.wrapping_add(*v))
                };
                *total = total.wrapping_add(value);
            }
        }
    }
    rows
}

/// [`collect_rows`] for a single profile, where nothing pairs across
/// columns: each timed sample is a row of its own, with one observation per
/// timestamp, and untimed samples of one identity sum into one row.
fn rows_of_one_profile(
    profile: &Profile,
    column: Option<usize>,
    width: usize,
    aggregate_timestamps: bool,
) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::with_capacity(profile.samples.len());
    let mut untimed: FxHashMap<Identity, usize> = FxHashMap::default();
    let in_column = |value: i64| {
        let mut values = vec![0; width];
        if let Some(slot) = column.and_then(|c| values.get_mut(c)) {
            *slot = value;
        }
        values
    };
    for sample in &profile.samples {
        let mut attributes = sample.attribute_indices.clone();
        attributes.sort_unstable();
        let identity = (sample.stack_index, attributes, sample.link_index);
        if !sample.timestamps_unix_nano.is_empty() && !aggregate_timestamps {
            let observations = sample
                .timestamps_unix_nano
                .iter()
                .enumerate()
                .map(|(i, &timestamp)| {
                    let value = if sample.values.is_empty() {
                        1
                    } else {
                        sample.values.get(i).copied().unwrap_or(0)
                    };
                    (timestamp, in_column(value))
                })
                .collect();
            rows.push(Row {
                identity,
                values: vec![0; width],
                observations,
                observation_index: FxHashMap::default(),
            });
            continue;
        }
        let value = if sample.values.is_empty() {
            sample.timestamps_unix_nano.len() as i64
        } else {
            sample.values.iter().fold(0i64, |a, v| a.wrapping_add(*v))
        };
        let row = *untimed.entry(identity.clone()).or_insert_with(|| {
            rows.push(Row {
                identity,
                values: vec![0; width],
                observations: Vec::new(),
                observation_index: FxHashMap::default(),
            });
            rows.len() - 1
        });
        if let Some(total) = rows
            .get_mut(row)
            .and_then(|row| column.and_then(|c| row.values.get_mut(c)))
        {
            *total = total.wrapping_add(value);
        }
    }
    rows
}

impl Row {
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
