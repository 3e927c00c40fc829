//! Which process each location was sampled in, from `process.pid` on the
//! sample, its profile or its resource (the innermost one wins), so that a
//! mapping path can be opened in that process's root.

use profbridge_translate::otlp::{any_value, AnyValue, ExportProfilesServiceRequest};
use rustc_hash::FxHashMap;

const PROCESS_PID: &str = "process.pid";

/// The process of each location index reached by a sample that names one;
/// a location sampled in several processes keeps the first.
pub(crate) fn pids_of_locations(request: &ExportProfilesServiceRequest) -> FxHashMap<usize, u32> {
    let mut pids = FxHashMap::default();
    let Some(dictionary) = request.dictionary.as_ref() else {
        return pids;
    };
    let text = |index: i32| {
        usize::try_from(index)
            .ok()
            .and_then(|i| dictionary.string_table.get(i))
            .map_or("", String::as_str)
    };
    let pid_in_table = |indices: &[i32]| {
        indices.iter().find_map(|&index| {
            let entry = dictionary
                .attribute_table
                .get(usize::try_from(index).ok()?)?;
            if text(entry.key_strindex) != PROCESS_PID {
                return None;
            }
            match entry.value.as_ref()?.value.as_ref()? {
                any_value::Value::StringValueStrindex(i) => text(*i).parse().ok(),
                _ => pid_of(entry.value.as_ref()?),
            }
        })
    };
    for resource_profiles in &request.resource_profiles {
        let resource_pid = resource_profiles.resource.as_ref().and_then(|resource| {
            resource
                .attributes
                .iter()
                .filter(|kv| kv.key == PROCESS_PID)
                .find_map(|kv| kv.value.as_ref().and_then(pid_of))
        });
        for scope in &resource_profiles.scope_profiles {
            for profile in &scope.profiles {
                let profile_pid = pid_in_table(&profile.attribute_indices).or(resource_pid);
                for sample in &profile.samples {
                    let Some(pid) = pid_in_table(&sample.attribute_indices).or(profile_pid) else {
                        continue;
                    };
                    let stack = usize::try_from(sample.stack_index)
                        .ok()
                        .and_then(|i| dictionary.stack_table.get(i));
                    for &location in stack.map_or(&[][..], |s| &s.location_indices) {
                        if let Ok(location) = usize::try_from(location) {
                            pids.entry(location).or_insert(pid);
                        }
                    }
                }
            }
        }
    }
    pids
}

fn pid_of(value: &AnyValue) -> Option<u32> {
    match value.value.as_ref()? {
        any_value::Value::IntValue(pid) => u32::try_from(*pid).ok(),
        any_value::Value::StringValue(pid) => pid.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use profbridge_translate::otlp::{
        int_value, key_value, string_value, KeyValueAndUnit, Profile, ProfilesDictionary, Resource,
        ResourceProfiles, Sample, ScopeProfiles, Stack,
    };

    use super::*;

    /// One resource (pid 1) with two profiles: the first says pid 2, the
    /// second nothing. Each has a sample per stack given, with the pid
    /// attribute given (as an index into the attribute table) or none.
    fn request(samples: [(i32, Option<i32>); 4]) -> ExportProfilesServiceRequest {
        let dictionary = ProfilesDictionary {
            string_table: vec![String::new(), PROCESS_PID.to_owned(), "4".to_owned()],
            attribute_table: vec![
                KeyValueAndUnit::default(),
                KeyValueAndUnit {
                    key_strindex: 1,
                    value: Some(int_value(2)),
                    unit_strindex: 0,
                },
                KeyValueAndUnit {
                    key_strindex: 1,
                    value: Some(string_value("3")),
                    unit_strindex: 0,
                },
                KeyValueAndUnit {
                    key_strindex: 1,
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValueStrindex(2)),
                    }),
                    unit_strindex: 0,
                },
            ],
            // Stack i holds location i.
            stack_table: (0..6)
                .map(|i| Stack {
                    location_indices: vec![i],
                })
                .collect(),
            ..ProfilesDictionary::default()
        };
        let sample = |(stack, pid): (i32, Option<i32>)| Sample {
            stack_index: stack,
            attribute_indices: pid.into_iter().collect(),
            ..Sample::default()
        };
        let [a, b, c, d] = samples;
        ExportProfilesServiceRequest {
            resource_profiles: vec![ResourceProfiles {
                resource: Some(Resource {
                    attributes: vec![key_value(PROCESS_PID, int_value(1))],
                    ..Resource::default()
                }),
                scope_profiles: vec![ScopeProfiles {
                    profiles: vec![
                        Profile {
                            attribute_indices: vec![1],
                            samples: vec![sample(a), sample(b)],
                            ..Profile::default()
                        },
                        Profile {
                            samples: vec![sample(c), sample(d)],
                            ..Profile::default()
                        },
                    ],
                    ..ScopeProfiles::default()
                }],
                ..ResourceProfiles::default()
            }],
            dictionary: Some(dictionary),
        }
    }

    #[test]
    fn the_innermost_process_pid_wins_in_every_spelling() {
        let pids = pids_of_locations(&request([(1, Some(2)), (2, None), (3, Some(3)), (4, None)]));
        let mut found: Vec<(usize, u32)> = pids.into_iter().collect();
        found.sort_unstable();
        // Sample (a string), profile (an int), sample (a string index),
        // resource (an int).
        assert_eq!(found, [(1, 3), (2, 2), (3, 4), (4, 1)]);
    }

    #[test]
    fn stacks_and_attributes_out_of_range_name_no_process() {
        let pids = pids_of_locations(&request([
            (99, Some(2)),
            (-1, None),
            (3, Some(42)),
            (4, Some(0)),
        ]));
        let mut found: Vec<(usize, u32)> = pids.into_iter().collect();
        found.sort_unstable();
        // Stacks 99 and -1 do not exist. Attribute 42 does not exist and
        // attribute 0 is not process.pid: those samples take their
        // resource's pid (their profile names none).
        assert_eq!(found, [(3, 1), (4, 1)]);
    }
}
