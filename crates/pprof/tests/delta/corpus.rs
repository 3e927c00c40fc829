//! The corpus's profiles with counters (gperftools contention profiles, a
//! Go heap profile) give back their own counts from a scrape with every
//! value doubled, and the gauges of that scrape; the others have no
//! counters and are refused.

use profbridge_pprof::delta::{value_kinds, ValueKind};
use profbridge_pprof::{
    canonical_diff, canonicalize, parse_any, DecodeOptions, DeltaError, DeltaOutcome, DeltaTracker,
    Profile,
};
use profbridge_testkit::corpus_files;

fn respelled_and_doubled(profile: &Profile) -> Profile {
    // New ids and string table; the canonical form keeps sample order,
    // which the comparison below relies on.
    let mut next = canonicalize(profile).unwrap();
    for value in next.sample.iter_mut().flat_map(|s| &mut s.value) {
        *value *= 2;
    }
    next.time_nanos += 10_000_000_000;
    next
}

#[test]
fn cumulative_profiles_give_back_their_counts_and_the_others_are_refused() {
    let mut cumulative = 0;
    for file in corpus_files() {
        let Ok((profile, _)) = parse_any(&file.bytes, &DecodeOptions::default()) else {
            continue;
        };
        let mut tracker = DeltaTracker::default();
        if !value_kinds(&profile).contains(&ValueKind::Cumulative) {
            assert!(
                matches!(tracker.next(profile), Err(DeltaError::NotCumulative { .. })),
                "{}",
                file.name
            );
            continue;
        }
        cumulative += 1;
        assert_eq!(
            tracker.next(profile.clone()).unwrap(),
            DeltaOutcome::Baseline
        );
        let next = respelled_and_doubled(&profile);
        let DeltaOutcome::Delta(delta) = tracker.next(next).unwrap() else {
            panic!("{}: no delta", file.name);
        };
        assert_eq!(delta.duration_nanos, 10_000_000_000, "{}", file.name);
        // Counters give back the first scrape's values, gauges are the
        // second scrape's.
        let kinds = value_kinds(&profile);
        let mut expected = profile.clone();
        for sample in &mut expected.sample {
            for (value, kind) in sample.value.iter_mut().zip(&kinds) {
                if *kind == ValueKind::Gauge {
                    *value *= 2;
                }
            }
        }
        expected.sample.retain(|s| s.value.iter().any(|&v| v != 0));
        expected.time_nanos = delta.time_nanos;
        expected.duration_nanos = delta.duration_nanos;
        assert_eq!(
            canonical_diff(&delta, &expected).unwrap(),
            None,
            "{}",
            file.name
        );
    }
    if !corpus_files().is_empty() {
        assert_eq!(
            cumulative, 3,
            "cppbench.contention, cppbench.small.contention, go.nomappings.crash"
        );
    }
}
