//! Which sample values are counters and which are gauges.

use crate::strings::resolve;
use crate::Profile;

/// How one sample value (one sample type) behaves from scrape to scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A total since the process started: sent as its increase.
    Cumulative,
    /// A current level (or a count a scrape makes afresh): sent as it is.
    Gauge,
}

/// The sample types (type, unit) whose values are totals since the process
/// started: Go's heap and allocs profiles count allocations, and its mutex
/// and block profiles (and gperftools' contention profiles) contentions and
/// the time spent in them.
const CUMULATIVE: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("contentions", "count"),
    ("delay", "nanoseconds"),
];

/// The kind of each of `profile`'s sample types, in order.
pub fn value_kinds(profile: &Profile) -> Vec<ValueKind> {
    let text = |index| resolve(&profile.string_table, index);
    profile
        .sample_type
        .iter()
        .map(|value_type| {
            let name = (text(value_type.r#type), text(value_type.unit));
            if CUMULATIVE.contains(&name) {
                ValueKind::Cumulative
            } else {
                ValueKind::Gauge
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValueType;

    fn with_sample_types(types: &[(&str, &str)]) -> Profile {
        let mut strings = vec![String::new()];
        let mut index = |s: &str| {
            strings.push(s.to_owned());
            i64::try_from(strings.len() - 1).unwrap()
        };
        let sample_type = types
            .iter()
            .map(|(kind, unit)| ValueType {
                r#type: index(kind),
                unit: index(unit),
            })
            .collect();
        Profile {
            sample_type,
            string_table: strings,
            ..Profile::default()
        }
    }

    #[test]
    fn go_heap_counts_allocations_and_measures_what_is_in_use() {
        use ValueKind::{Cumulative, Gauge};
        let heap = with_sample_types(&[
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ]);
        assert_eq!(value_kinds(&heap), [Cumulative, Cumulative, Gauge, Gauge]);
    }

    #[test]
    fn mutex_and_block_are_counters_and_the_rest_are_not() {
        use ValueKind::{Cumulative, Gauge};
        let contention = with_sample_types(&[("contentions", "count"), ("delay", "nanoseconds")]);
        assert_eq!(value_kinds(&contention), [Cumulative, Cumulative]);
        for types in [
            &[("samples", "count"), ("cpu", "nanoseconds")][..],
            &[("goroutine", "count")],
            &[("threadcreate", "count")],
            &[("delay", "microseconds")],
        ] {
            assert!(value_kinds(&with_sample_types(types))
                .iter()
                .all(|&kind| kind == Gauge));
        }
    }
}
