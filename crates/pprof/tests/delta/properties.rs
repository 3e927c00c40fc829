//! Properties over random sequences of scrapes, each spelled differently:
//! deltas add up to the last scrape less the first, never go negative, and
//! each step is what a plain model of the rules says.

use std::collections::{BTreeMap, BTreeSet};

use profbridge_pprof::{validate, DeltaOutcome, DeltaTracker, ResetReason};
use profbridge_testkit::sweep::proptest_cases;
use proptest::prelude::*;

use super::build::{by_key, scrape, ByKey, Key, Row, Tag, HEAP};

/// One scrape: each present identity's values (alloc_objects, alloc_space,
/// inuse_objects, inuse_space), the layout seed and the time.
#[derive(Debug, Clone)]
struct Step {
    rows: BTreeMap<Key, [i64; 4]>,
    seed: u64,
    time: i64,
}

fn key() -> impl Strategy<Value = Key> {
    let frame = prop::sample::select(vec!["main", "run", "alloc", "grow", "lock"]);
    let tag = prop_oneof![
        Just(None),
        prop::sample::select(vec!["a", "b"]).prop_map(|v| Some(Tag::Str("span".into(), v.into()))),
        (1i64..3).prop_map(|n| Some(Tag::Num("bytes".into(), n * 64, "bytes".into()))),
    ];
    (prop::collection::vec(frame, 1..4), tag).prop_map(|(stack, tag)| {
        (
            stack.into_iter().map(String::from).collect(),
            tag.into_iter().collect(),
        )
    })
}

/// Scrapes of up to 8 identities. With `restarts`, a scrape now and then
/// starts over from small values, as a restarted process does, or loses
/// some of its stacks.
fn history(restarts: bool) -> impl Strategy<Value = Vec<Step>> {
    let keys = prop::collection::btree_set(key(), 1..8);
    let steps = 2usize..7;
    (keys, steps).prop_flat_map(move |(keys, steps)| {
        let keys: Vec<Key> = keys.into_iter().collect();
        let n = keys.len();
        let changes = prop::collection::vec(
            (
                prop::collection::vec((0i64..3, 0i64..200, 0i64..3, 0i64..2), n),
                any::<u64>(),
                1i64..1_000,
                if restarts { 0u8..6 } else { 2u8..3 },
            ),
            steps,
        );
        changes.prop_map(move |changes| build_history(&keys, changes))
    })
}

type Change = (Vec<(i64, i64, i64, i64)>, u64, i64, u8);

fn build_history(keys: &[Key], changes: Vec<Change>) -> Vec<Step> {
    let mut totals = vec![[0i64; 2]; keys.len()];
    let mut time = 1_000_000;
    let mut steps = Vec::new();
    for (per_key, seed, elapsed, restart) in changes {
        time += elapsed;
        let mut rows = BTreeMap::new();
        for (i, ((key, total), &(objects, bytes, inuse, absent))) in
            keys.iter().zip(&mut totals).zip(&per_key).enumerate()
        {
            // 0: all stacks start over; 1: some vanish while others grow.
            if restart == 0 || (restart == 1 && (seed >> (i % 64)) & 1 == 1) {
                *total = [0; 2];
                if restart == 1 {
                    continue;
                }
            }
            total[0] += objects;
            total[1] += if objects > 0 { bytes } else { 0 };
            let values = [total[0], total[1], inuse, inuse * 16];
            // A row with nothing in it may be left out, as Go never does
            // but other producers may.
            if absent == 1 && values == [0; 4] {
                continue;
            }
            rows.insert(key.clone(), values);
        }
        steps.push(Step { rows, seed, time });
    }
    steps
}

fn profile_of(step: &Step) -> profbridge_pprof::Profile {
    let rows: Vec<Row> = step
        .rows
        .iter()
        .map(|((stack, tags), values)| Row {
            stack: stack.clone(),
            tags: tags.clone(),
            values: values.to_vec(),
        })
        .collect();
    scrape(&HEAP, &rows, step.time, step.seed)
}

/// What the rules say the next step is: a reset when a counter of an
/// identity (0 when absent) is lower than before, else each identity's
/// counter increases and current gauges, rows of zeros left out.
fn model(previous: &Step, next: &Step) -> Option<ByKey> {
    let keys: BTreeSet<&Key> = previous.rows.keys().chain(next.rows.keys()).collect();
    let mut expected = ByKey::new();
    for key in keys {
        let before = previous.rows.get(key).copied().unwrap_or([0; 4]);
        let now = next.rows.get(key).copied().unwrap_or([0; 4]);
        if now[0] < before[0] || now[1] < before[1] {
            return None;
        }
        let delta = vec![now[0] - before[0], now[1] - before[1], now[2], now[3]];
        if delta.iter().any(|&v| v != 0) {
            expected.insert(key.clone(), delta);
        }
    }
    Some(expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512, 64)))]

    #[test]
    fn deltas_add_up_to_the_last_scrape_less_the_first(steps in history(false)) {
        let mut tracker = DeltaTracker::default();
        let mut sums: BTreeMap<Key, [i64; 2]> = BTreeMap::new();
        for (i, step) in steps.iter().enumerate() {
            match tracker.next(profile_of(step)).unwrap() {
                DeltaOutcome::Baseline => prop_assert_eq!(i, 0),
                DeltaOutcome::Delta(delta) => {
                    prop_assert!(i > 0);
                    for (key, values) in by_key(&delta) {
                        prop_assert!(values[0] >= 0 && values[1] >= 0, "negative: {:?}", values);
                        let sum = sums.entry(key).or_default();
                        sum[0] += values[0];
                        sum[1] += values[1];
                    }
                }
                other => prop_assert!(false, "step {}: {:?}", i, other),
            }
        }
        let (first, last) = (&steps[0], &steps[steps.len() - 1]);
        let keys: BTreeSet<&Key> = first.rows.keys().chain(last.rows.keys()).collect();
        for key in keys {
            let before = first.rows.get(key).copied().unwrap_or([0; 4]);
            let after = last.rows.get(key).copied().unwrap_or([0; 4]);
            let sum = sums.get(key).copied().unwrap_or([0; 2]);
            prop_assert_eq!(sum, [after[0] - before[0], after[1] - before[1]], "{:?}", key);
        }
    }

    #[test]
    fn every_scrape_is_what_the_rules_say(steps in history(true)) {
        let mut tracker = DeltaTracker::default();
        let mut baseline: Option<&Step> = None;
        for (i, step) in steps.iter().enumerate() {
            let outcome = tracker.next(profile_of(step)).unwrap();
            let Some(previous) = baseline else {
                prop_assert_eq!(outcome, DeltaOutcome::Baseline);
                baseline = Some(step);
                continue;
            };
            match (model(previous, step), outcome) {
                (None, DeltaOutcome::Reset(ResetReason::ValueDecreased)) => {}
                (Some(expected), DeltaOutcome::Delta(delta)) => {
                    validate(&delta).unwrap();
                    prop_assert_eq!(by_key(&delta), expected, "step {}", i);
                    prop_assert!(delta.sample.iter().all(|s| s.value.iter().any(|&v| v != 0)));
                    prop_assert_eq!(delta.time_nanos, step.time);
                    prop_assert_eq!(delta.duration_nanos, step.time - previous.time);
                }
                (expected, outcome) => {
                    prop_assert!(false, "step {}: expected {:?}, got {:?}", i, expected, outcome);
                }
            }
            baseline = Some(step);
        }
    }
}
