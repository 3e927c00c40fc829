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
