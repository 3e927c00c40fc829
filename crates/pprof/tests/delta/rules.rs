use profbridge_pprof::{validate, DeltaError, DeltaOutcome, DeltaTracker, Profile, ResetReason};

use super::build::{by_key, row, scrape, Row, HEAP, MUTEX};

const SECOND: i64 = 1_000_000_000;

fn delta(outcome: DeltaOutcome) -> Profile {
    match outcome {
        DeltaOutcome::Delta(profile) => {
            validate(&profile).unwrap();
            *profile
        }
        other => panic!("expected a delta, got {other:?}"),
    }
}

fn values_of(profile: &Profile, row: &Row) -> Option<Vec<i64>> {
    by_key(profile).get(&row.key()).cloned()
}

#[test]
fn the_first_scrape_is_the_baseline_and_the_next_its_difference() {
    let mut tracker = DeltaTracker::default();
    let first = [
        row(&["malloc", "main"], &[10, 1000, 4, 400]),
        row(&["malloc", "work", "main"], &[5, 50, 0, 0]),
        row(&["idle", "main"], &[3, 30, 3, 30]),
    ];
    let second = [
        row(&["malloc", "main"], &[12, 1200, 5, 500]),
        row(&["malloc", "work", "main"], &[5, 50, 0, 0]),
        row(&["idle", "main"], &[3, 30, 2, 20]),
        row(&["fresh", "main"], &[1, 8, 1, 8]),
    ];
    let at = 1_700_000_000 * SECOND;
    assert_eq!(
        tracker.next(scrape(&HEAP, &first, at, 0)).unwrap(),
        DeltaOutcome::Baseline
    );
    assert_eq!(tracker.identities(), 3);
    let out = delta(
        tracker
            .next(scrape(&HEAP, &second, at + 15 * SECOND, 7))
            .unwrap(),
    );

    assert_eq!(values_of(&out, &second[0]), Some(vec![2, 200, 5, 500]));
    // Counters that did not move and gauges at zero: left out.
    assert_eq!(values_of(&out, &second[1]), None);
    // Counters that did not move, but memory still in use: kept, so the
    // inuse values of a delta are the whole heap in use.
    assert_eq!(values_of(&out, &second[2]), Some(vec![0, 0, 2, 20]));
    assert_eq!(values_of(&out, &second[3]), Some(vec![1, 8, 1, 8]));
    assert_eq!(out.sample.len(), 3);
    assert_eq!(out.time_nanos, at + 15 * SECOND);
    assert_eq!(out.duration_nanos, 15 * SECOND);
}

#[test]
fn identity_is_frames_and_labels_not_ids_order_or_spelling() {
    let rows = |n: i64| {
        vec![
            row(&["lock", "a"], &[n, 10 * n])
                .str_tag("span", "x")
                .num_tag("bytes", 64, "bytes"),
            row(&["lock", "a"], &[2 * n, 20 * n]).str_tag("span", "y"),
            row(&["lock", "a"], &[3 * n, 30 * n]).num_tag("bytes", 64, ""),
            row(&["lock", "b"], &[4 * n, 40 * n]),
        ]
    };
    let mut tracker = DeltaTracker::default();
    tracker.next(scrape(&MUTEX, &rows(1), 1, 0)).unwrap();
    for (step, seed) in [(2, 11), (3, 12), (4, 13)] {
        let out = delta(
            tracker
                .next(scrape(&MUTEX, &rows(step), step, seed))
                .unwrap(),
        );
        let expected = rows(1);
        let got = by_key(&out);
        assert_eq!(got.len(), 4);
        for row in &expected {
            assert_eq!(got[&row.key()], row.values, "step {step}: {row:?}");
        }
    }
    assert_eq!(tracker.identities(), 4);
}

#[test]
fn samples_of_one_identity_are_summed_before_subtracting() {
    let mut tracker = DeltaTracker::default();
    let one = |values: &[i64]| row(&["f"], values);
    tracker
        .next(scrape(&MUTEX, &[one(&[1, 10]), one(&[2, 20])], 1, 0))
        .unwrap();
    let out = delta(
        tracker
            .next(scrape(&MUTEX, &[one(&[4, 40]), one(&[0, 1])], 2, 0))
            .unwrap(),
    );
    assert_eq!(out.sample.len(), 1);
    assert_eq!(out.sample[0].value, [1, 11]);
}

#[test]
fn a_value_that_goes_down_starts_a_new_baseline() {
    let mut tracker = DeltaTracker::default();
    let rows = |a: i64, b: i64| [row(&["a"], &[a, a]), row(&["b"], &[b, b])];
    tracker.next(scrape(&MUTEX, &rows(5, 5), 1, 0)).unwrap();
    assert_eq!(
        tracker.next(scrape(&MUTEX, &rows(7, 4), 2, 0)).unwrap(),
        DeltaOutcome::Reset(ResetReason::ValueDecreased)
    );
    let out = delta(tracker.next(scrape(&MUTEX, &rows(8, 6), 3, 0)).unwrap());
    assert_eq!(by_key(&out)[&row(&["a"], &[]).key()], [1, 1]);
    assert_eq!(by_key(&out)[&row(&["b"], &[]).key()], [2, 2]);
    assert_eq!(out.duration_nanos, 1);
}

#[test]
fn a_gauge_that_goes_down_is_no_reset() {
    let mut tracker = DeltaTracker::default();
    tracker
        .next(scrape(&HEAP, &[row(&["a"], &[1, 8, 1, 8])], 1, 0))
        .unwrap();
    let out = delta(
        tracker
            .next(scrape(&HEAP, &[row(&["a"], &[2, 16, 0, 0])], 2, 0))
            .unwrap(),
    );
    assert_eq!(out.sample[0].value, [1, 8, 0, 0]);
}

#[test]
fn a_vanished_stack_with_counts_is_a_restart_and_one_without_is_not() {
    let mut tracker = DeltaTracker::default();
    tracker
        .next(scrape(
            &MUTEX,
            &[row(&["a"], &[1, 1]), row(&["zero"], &[0, 0])],
            1,
            0,
        ))
        .unwrap();
    let out = delta(
        tracker
            .next(scrape(&MUTEX, &[row(&["a"], &[2, 2])], 2, 0))
            .unwrap(),
    );
    assert_eq!(out.sample.len(), 1);
    assert_eq!(
        tracker
            .next(scrape(&MUTEX, &[row(&["b"], &[1, 1])], 3, 0))
            .unwrap(),
        DeltaOutcome::Reset(ResetReason::ValueDecreased)
    );
}

#[test]
fn other_sample_types_start_a_new_baseline() {
    let mut tracker = DeltaTracker::default();
    let heap = [row(&["a"], &[1, 8, 1, 8])];
    tracker.next(scrape(&HEAP, &heap, 1, 0)).unwrap();
    assert_eq!(
        tracker
            .next(scrape(&HEAP[..2], &[row(&["a"], &[2, 16])], 2, 0))
            .unwrap(),
        DeltaOutcome::Reset(ResetReason::SampleTypesChanged)
    );
    let out = delta(
        tracker
            .next(scrape(&HEAP[..2], &[row(&["a"], &[3, 24])], 3, 0))
            .unwrap(),
    );
    assert_eq!(out.sample[0].value, [1, 8]);
}

#[test]
fn duration_is_the_interval_between_the_scrapes_own_times() {
    let mut tracker = DeltaTracker::default();
    let rows = |n| [row(&["a"], &[n, n])];
    tracker.next(scrape(&MUTEX, &rows(1), 100, 0)).unwrap();
    let out = delta(tracker.next(scrape(&MUTEX, &rows(2), 160, 0)).unwrap());
    assert_eq!((out.time_nanos, out.duration_nanos), (160, 60));
    // A clock that went back gives no interval, and the values still count.
    let out = delta(tracker.next(scrape(&MUTEX, &rows(3), 150, 0)).unwrap());
    assert_eq!((out.time_nanos, out.duration_nanos), (150, 0));
    assert_eq!(out.sample[0].value, [1, 1]);
}

#[test]
fn the_delta_keeps_only_what_its_samples_use() {
    let mut tracker = DeltaTracker::default();
    let rows = |n| {
        [
            row(&["moves", "main"], &[n, n]).str_tag("k", "v"),
            row(&["still", "other_root"], &[5, 5]).str_tag("k2", "v2"),
        ]
    };
    tracker.next(scrape(&MUTEX, &rows(1), 1, 0)).unwrap();
    let out = delta(tracker.next(scrape(&MUTEX, &rows(2), 2, 3)).unwrap());
    assert_eq!(out.sample.len(), 1);
    assert_eq!(out.location.len(), 2);
    assert_eq!(out.function.len(), 2);
    for gone in ["still", "other_root", "k2", "v2"] {
        assert!(!out.string_table.iter().any(|s| s == gone), "{gone} stayed");
    }
    for kept in [
        "moves",
        "main",
        "k",
        "v",
        "contentions",
        "delay",
        "nanoseconds",
    ] {
        assert!(out.string_table.iter().any(|s| s == kept), "{kept} went");
    }
}

#[test]
fn nothing_changed_is_an_empty_delta() {
    let mut tracker = DeltaTracker::default();
    let rows = [row(&["a"], &[1, 1])];
    tracker.next(scrape(&MUTEX, &rows, 1, 0)).unwrap();
    let out = delta(tracker.next(scrape(&MUTEX, &rows, 2, 0)).unwrap());
    assert!(out.sample.is_empty());
    assert_eq!(out.duration_nanos, 1);
}

#[test]
fn locations_without_lines_are_told_apart_by_mapping_file_and_offset() {
    use profbridge_pprof::{Location, Mapping, Sample, ValueType};
    // Two scrapes of one process whose mapping and locations were renumbered
    // (and the mapping reported at another address: the offset is the same).
    let build = |start: u64, ids: [u64; 2], values: [i64; 2]| Profile {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        mapping: vec![Mapping {
            id: ids[0],
            memory_start: start,
            memory_limit: start + 0x10000,
            filename: 5,
            ..Mapping::default()
        }],
        location: [0x100u64, 0x200]
            .iter()
            .enumerate()
            .map(|(i, offset)| Location {
                id: ids[1] + i as u64,
                mapping_id: ids[0],
                address: start + offset,
                ..Location::default()
            })
            .collect(),
        sample: (0..2)
            .map(|i| Sample {
                location_id: vec![ids[1] + i],
                value: vec![values[i as usize]; 2],
                label: vec![],
            })
            .collect(),
        string_table: [
            "",
            "contentions",
            "count",
            "delay",
            "nanoseconds",
            "/bin/app",
        ]
        .map(String::from)
        .to_vec(),
        ..Profile::default()
    };
    let mut tracker = DeltaTracker::default();
    tracker.next(build(0x400000, [1, 1], [1, 2])).unwrap();
    let out = delta(tracker.next(build(0x800000, [9, 20], [1, 5])).unwrap());
    assert_eq!(out.sample.len(), 1);
    assert_eq!(out.sample[0].value, [3, 3]);
    assert_eq!(out.location[0].address, 0x800200);
}

#[test]
fn profiles_without_counters_are_refused() {
    let mut tracker = DeltaTracker::default();
    let cpu = scrape(
        &[("samples", "count"), ("cpu", "nanoseconds")],
        &[row(&["a"], &[1, 1])],
        1,
        0,
    );
    let error = tracker.next(cpu).unwrap_err();
    assert!(matches!(error, DeltaError::NotCumulative { .. }));
    assert_eq!(
        error.to_string(),
        "no sample type is cumulative (the profile has samples/count, cpu/nanoseconds); \
         only alloc_objects/count, alloc_space/bytes, contentions/count and \
         delay/nanoseconds are"
    );
}

#[test]
fn a_scrape_that_fails_is_not_taken() {
    let mut tracker = DeltaTracker::new(2);
    let ok = |n| scrape(&MUTEX, &[row(&["a"], &[n, n])], n, 0);
    tracker.next(ok(1)).unwrap();

    let negative = scrape(&MUTEX, &[row(&["a"], &[-1, 5])], 2, 0);
    assert_eq!(
        tracker.next(negative).unwrap_err().to_string(),
        "sample 0: its contentions/count value -1 is negative, which a total cannot be"
    );
    let overflow = scrape(
        &MUTEX,
        &[row(&["a"], &[i64::MAX, 1]), row(&["a"], &[1, 1])],
        2,
        0,
    );
    assert_eq!(
        tracker.next(overflow).unwrap_err(),
        DeltaError::Overflow {
            sample_type: "contentions/count".to_owned()
        }
    );
    let wide = scrape(
        &MUTEX,
        &[
            row(&["a"], &[3, 3]),
            row(&["b"], &[1, 1]),
            row(&["c"], &[1, 1]),
        ],
        2,
        0,
    );
    assert_eq!(
        tracker.next(wide).unwrap_err().to_string(),
        "the profile has more than 2 distinct stacks and label sets"
    );
    let mut invalid = ok(2);
    invalid.sample[0].value.pop();
    assert!(matches!(tracker.next(invalid), Err(DeltaError::Invalid(_))));

    // Compared with the last scrape taken: nothing lost in between.
    let out = delta(tracker.next(ok(4)).unwrap());
    assert_eq!(out.sample[0].value, [3, 3]);
    assert_eq!(out.duration_nanos, 3);
}

#[test]
fn clear_forgets_the_baseline() {
    let mut tracker = DeltaTracker::default();
    let rows = [row(&["a"], &[1, 1])];
    tracker.next(scrape(&MUTEX, &rows, 1, 0)).unwrap();
    tracker.clear();
    assert_eq!(tracker.identities(), 0);
    assert_eq!(
        tracker.next(scrape(&MUTEX, &rows, 2, 0)).unwrap(),
        DeltaOutcome::Baseline
    );
}

#[test]
fn stacks_that_change_every_scrape_stay_exact_while_the_dictionary_is_rebuilt() {
    // Each scrape has 300 stacks of its own and one that lasts: the
    // dictionary's unused tokens pile up and are dropped along the way.
    let mut tracker = DeltaTracker::default();
    let lasting = |n: i64| row(&["lasting", "main"], &[n, n]);
    let mut total = 0;
    for step in 1..=20i64 {
        let names: Vec<String> = (0..300).map(|i| format!("f{step}_{i}")).collect();
        let mut rows = vec![lasting(step * step)];
        // Each scrape's own stacks are new with zero values, so they vanish
        // without being a restart.
        rows.extend(names.iter().map(|n| row(&[n.as_str(), "main"], &[0, 0])));
        match tracker
            .next(scrape(&MUTEX, &rows, step, step as u64))
            .unwrap()
        {
            DeltaOutcome::Baseline => assert_eq!(step, 1),
            DeltaOutcome::Delta(out) => {
                let by = by_key(&out);
                assert_eq!(by.len(), 1);
                total += by[&lasting(0).key()][0];
            }
            other => panic!("step {step}: {other:?}"),
        }
        assert_eq!(tracker.identities(), 301);
    }
    assert_eq!(total, 20 * 20 - 1);
}
