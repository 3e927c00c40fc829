#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use rustc_hash::FxHashMap;

use super::*;

/// A row spelled out: stack, link, attributes, values, timestamps.
type Spelled = (i32, i32, Vec<i32>, Vec<i64>, Vec<u64>);

fn spelled(rows: &Rows) -> Vec<Spelled> {
    rows.rows
        .iter()
        .map(|row| {
            (
                row.stack,
                row.link,
                rows.attributes(row).to_vec(),
                rows.values[row.values.range()].to_vec(),
                rows.timestamps[row.timestamps.range()].to_vec(),
            )
        })
        .collect()
}

fn sample(stack: i32, attributes: &[i32], values: &[i64], timestamps: &[u64]) -> Sample {
    Sample {
        stack_index: stack,
        attribute_indices: attributes.to_vec(),
        link_index: 0,
        values: values.to_vec(),
        timestamps_unix_nano: timestamps.to_vec(),
    }
}

fn profile(samples: Vec<Sample>) -> Profile {
    Profile {
        samples,
        ..Profile::default()
    }
}

/// Rows of `profiles`, column i for the i-th, collected in memory that
/// held other rows.
fn collect(profiles: &[Profile], aggregate_timestamps: bool) -> Vec<Spelled> {
    let columns: Vec<_> = profiles
        .iter()
        .zip(0..)
        .map(|(p, c)| (p, Some(c)))
        .collect();
    let other = profile(vec![
        sample(9, &[9, 8], &[1], &[]),
        sample(8, &[], &[], &[5]),
    ]);
    let spare = collect_rows(
        &[(&other, Some(0)), (&other, Some(1))],
        2,
        false,
        Rows::default(),
    );
    spelled(&collect_rows(
        &columns,
        profiles.len(),
        aggregate_timestamps,
        spare,
    ))
}

#[test]
fn untimed_samples_of_one_identity_sum_across_columns() {
    let cpu = profile(vec![
        sample(1, &[3, 2], &[10], &[]),
        sample(2, &[], &[1, 2], &[]),
        // The first identity again, its attributes in another order.
        sample(1, &[2, 3], &[5], &[]),
        // Another link: another identity.
        Sample {
            link_index: 1,
            ..sample(2, &[], &[7], &[])
        },
    ]);
    let count = profile(vec![
        sample(2, &[], &[4], &[]),
        sample(3, &[1], &[6], &[]),
        sample(1, &[3, 2], &[1], &[]),
        sample(3, &[1], &[2], &[]),
        // Neither values nor timestamps: a row, that adds nothing.
        sample(4, &[], &[], &[]),
    ]);
    assert_eq!(
        collect(&[cpu, count], false),
        vec![
            (1, 0, vec![2, 3], vec![15, 1], vec![]),
            (2, 0, vec![], vec![3, 4], vec![]),
            (2, 1, vec![], vec![7, 0], vec![]),
            (3, 0, vec![1], vec![0, 8], vec![]),
            (4, 0, vec![], vec![0, 0], vec![]),
        ]
    );
}

#[test]
fn timed_samples_pair_by_occurrence_and_observations_by_timestamp() {
    let cpu = profile(vec![
        sample(1, &[4, 5], &[1, 2, 3], &[10, 10, 20]),
        sample(1, &[5, 4], &[4], &[]),
        sample(1, &[4, 5], &[], &[30]),
    ]);
    let count = profile(vec![
        sample(1, &[5, 4], &[5, 6, 7, 8], &[10, 20, 10, 40]),
        sample(1, &[4, 5], &[9], &[30]),
        sample(1, &[4, 5], &[6], &[]),
        // A third timed sample of the identity: a row of its own.
        sample(1, &[5, 4], &[4], &[50]),
    ]);
    assert_eq!(
        collect(&[cpu, count], false),
        vec![
            (
                1,
                0,
                vec![4, 5],
                vec![1, 5, 2, 7, 3, 6, 0, 8],
                vec![10, 10, 20, 40]
            ),
            (1, 0, vec![4, 5], vec![4, 6], vec![]),
            (1, 0, vec![4, 5], vec![1, 9], vec![30]),
            (1, 0, vec![4, 5], vec![0, 4], vec![50]),
        ]
    );
}

#[test]
fn aggregated_timestamps_sum_with_untimed_samples() {
    let cpu = profile(vec![
        sample(1, &[], &[1, 2], &[10, 20]),
        sample(1, &[], &[4], &[]),
    ]);
    let count = profile(vec![sample(1, &[], &[], &[10, 20, 30])]);
    let profiles = [cpu, count];
    assert_eq!(
        collect(&profiles, true),
        vec![(1, 0, vec![], vec![7, 3], vec![])]
    );
    // Not aggregated, the same samples keep their timestamps.
    assert_eq!(
        collect(&profiles, false),
        vec![
            (1, 0, vec![], vec![1, 1, 2, 1, 0, 1], vec![10, 20, 30]),
            (1, 0, vec![], vec![4, 0], vec![]),
        ]
    );
}

#[test]
fn a_single_profile_keeps_each_timed_sample_as_a_row() {
    let cpu = profile(vec![
        sample(1, &[2, 1], &[5, 6, 7], &[10, 10, 20]),
        sample(1, &[1, 2], &[3], &[]),
        sample(1, &[1, 2], &[], &[10]),
        sample(1, &[2, 1], &[4], &[]),
        sample(2, &[], &[], &[30, 40]),
    ]);
    let profiles = [cpu];
    assert_eq!(
        collect(&profiles, false),
        vec![
            (1, 0, vec![1, 2], vec![5, 6, 7], vec![10, 10, 20]),
            (1, 0, vec![1, 2], vec![7], vec![]),
            (1, 0, vec![1, 2], vec![1], vec![10]),
            (2, 0, vec![], vec![1, 1], vec![30, 40]),
        ]
    );
    assert_eq!(
        collect(&profiles, true),
        vec![
            (1, 0, vec![1, 2], vec![26], vec![]),
            (2, 0, vec![], vec![2], vec![]),
        ]
    );
}

#[test]
fn long_runs_of_timestamps_pair_their_repeats() {
    let ticks: Vec<u64> = (0..40).map(|i| i % 3).collect();
    let a: Vec<i64> = (0..40).collect();
    let b: Vec<i64> = (100..140).collect();
    let cpu = profile(vec![sample(1, &[], &a, &ticks), sample(2, &[], &a, &ticks)]);
    let mut reversed = ticks.clone();
    reversed.reverse();
    let count = profile(vec![
        sample(2, &[], &b, &ticks),
        sample(1, &[], &b, &reversed),
    ]);
    let rows = collect(&[cpu, count], false);
    assert_eq!(rows.len(), 2);
    // Stack 2: the same timestamps in the same order pair one to one.
    let paired: Vec<i64> = a.iter().zip(&b).flat_map(|(&x, &y)| [x, y]).collect();
    assert_eq!(rows[1], (2, 0, vec![], paired, ticks.clone()));
    // Stack 1: the n-th 0 (1, 2) of one pairs with the n-th 0 (1, 2)
    // of the other.
    let nth = |ts: &[u64], i: usize| ts[..i].iter().filter(|&&t| t == ts[i]).count();
    let mut expected = Vec::new();
    for i in 0..40 {
        let j = (0..40)
            .find(|&j| reversed[j] == ticks[i] && nth(&reversed, j) == nth(&ticks, i))
            .unwrap();
        expected.extend([a[i], b[j]]);
    }
    assert_eq!(rows[0], (1, 0, vec![], expected, ticks));
}

#[test]
fn without_sample_types_rows_have_no_values() {
    let one = profile(vec![
        sample(1, &[], &[3], &[]),
        sample(2, &[], &[], &[7, 7]),
    ]);
    let two = profile(vec![sample(2, &[], &[], &[7]), sample(3, &[], &[1], &[])]);
    let rows = collect_rows(&[(&one, None), (&two, None)], 0, false, Rows::default());
    assert_eq!(
        spelled(&rows),
        vec![
            (1, 0, vec![], vec![], vec![]),
            (2, 0, vec![], vec![], vec![7, 7]),
            (3, 0, vec![], vec![], vec![]),
        ]
    );
}

/// The merge as first written, one allocation after another: what
/// the rows must stay.
fn reference(columns: &[(&Profile, Option<usize>)], width: usize, aggregate: bool) -> Vec<Spelled> {
    type Identity = (i32, Vec<i32>, i32);
    struct Merged {
        identity: Identity,
        values: Vec<i64>,
        observations: Vec<(u64, Vec<i64>)>,
        index: FxHashMap<(u64, usize), usize>,
    }
    let mut rows: Vec<Merged> = Vec::new();
    let mut index: FxHashMap<(Identity, Option<usize>), usize> = FxHashMap::default();
    for &(profile, column) in columns {
        let mut runs: FxHashMap<Identity, usize> = FxHashMap::default();
        for sample in &profile.samples {
            let mut attributes = sample.attribute_indices.clone();
            attributes.sort_unstable();
            let identity = (sample.stack_index, attributes, sample.link_index);
            let timed = is_timed(sample, aggregate);
            let occurrence = timed.then(|| {
                let n = runs.entry(identity.clone()).or_default();
                *n += 1;
                *n - 1
            });
            let row = *index
                .entry((identity.clone(), occurrence))
                .or_insert_with(|| {
                    rows.push(Merged {
                        identity,
                        values: vec![0; width],
                        observations: Vec::new(),
                        index: FxHashMap::default(),
                    });
                    rows.len() - 1
                });
            let row = &mut rows[row];
            if !timed {
                if let Some(c) = column {
                    row.values[c] = row.values[c].wrapping_add(untimed_value(sample));
                }
                continue;
            }
            let mut seen: FxHashMap<u64, usize> = FxHashMap::default();
            for (i, &t) in sample.timestamps_unix_nano.iter().enumerate() {
                let nth = seen.entry(t).or_default();
                let key = (t, *nth);
                *nth += 1;
                let o = *row.index.entry(key).or_insert_with(|| {
                    row.observations.push((t, vec![0; width]));
                    row.observations.len() - 1
                });
                if let Some(c) = column {
                    let slot = &mut row.observations[o].1[c];
                    *slot = slot.wrapping_add(observed_value(sample, i));
                }
            }
        }
    }
    rows.into_iter()
        .map(|row| {
            let (stack, attributes, link) = row.identity;
            if row.observations.is_empty() {
                return (stack, link, attributes, row.values, vec![]);
            }
            let timestamps = row.observations.iter().map(|(t, _)| *t).collect();
            let values = row.observations.into_iter().flat_map(|(_, v)| v).collect();
            (stack, link, attributes, values, timestamps)
        })
        .collect()
}

/// A few hundred samples over few identities: many repeats, in and
/// across columns, timed and untimed, with repeated timestamps.
fn arbitrary_profile(seed: &mut u64, samples: usize) -> Profile {
    let mut next = |n: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % n
    };
    let mut all = Vec::new();
    for _ in 0..samples {
        let mut attributes: Vec<i32> = [1, 2, 3].into_iter().filter(|_| next(2) == 0).collect();
        if next(2) == 0 {
            attributes.reverse();
        }
        let timestamps: Vec<u64> = match next(4) {
            0 => vec![],
            1 => (0..next(40)).map(|_| next(6)).collect(),
            _ => (0..1 + next(4)).map(|_| next(3)).collect(),
        };
        let values: Vec<i64> = match next(3) {
            0 => vec![],
            _ if timestamps.is_empty() => (0..1 + next(3)).map(|_| next(100) as i64).collect(),
            _ => timestamps.iter().map(|_| next(100) as i64).collect(),
        };
        all.push(Sample {
            stack_index: next(5) as i32,
            attribute_indices: attributes,
            link_index: next(2) as i32,
            values,
            timestamps_unix_nano: timestamps,
        });
    }
    profile(all)
}

#[test]
fn merged_rows_are_those_of_the_reference_merge() {
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut spare = Rows::default();
    for round in 0..60 {
        let count = 1 + round % 4;
        let profiles: Vec<Profile> = (0..count)
            .map(|_| arbitrary_profile(&mut seed, 50 + round * 5))
            .collect();
        let typed = round % 5 != 4;
        let width = if typed { count } else { 0 };
        // Columns in another order than the profiles, as
        // `pprof.scope.sample_type_order` may ask.
        let columns: Vec<_> = profiles
            .iter()
            .zip(0..)
            .map(|(p, i)| (p, typed.then_some((i + round) % count)))
            .collect();
        for aggregate in [false, true] {
            let expected = reference(&columns, width, aggregate);
            spare = collect_rows(&columns, width, aggregate, spare);
            assert_eq!(
                spelled(&spare),
                expected,
                "round {round}, aggregate {aggregate}"
            );
        }
    }
}
