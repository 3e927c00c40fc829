//! How much memory a decoded request holds. Queue budgets count this: a
//! decoded request takes several times its encoded size (every sample,
//! location and string is its own allocation).

use std::mem::size_of;

use profbridge_translate::otlp::{
    any_value, AnyValue, ExportProfilesServiceRequest, Function, KeyValue, KeyValueAndUnit, Line,
    Link, Location, Mapping, Profile, ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles,
    Stack,
};

/// Bytes a small allocation costs beyond its contents (allocator rounding
/// and bookkeeping), a rough average.
const PER_ALLOCATION: usize = 16;

fn vec_bytes<T>(v: &Vec<T>) -> usize {
    if v.capacity() == 0 {
        0
    } else {
        v.capacity() * size_of::<T>() + PER_ALLOCATION
    }
}

fn string_bytes(s: &String) -> usize {
    if s.capacity() == 0 {
        0
    } else {
        s.capacity() + PER_ALLOCATION
    }
}

/// The heap a request owns, estimated from its vectors and strings.
pub fn memory_estimate(request: &ExportProfilesServiceRequest) -> usize {
    let mut total =
        size_of::<ExportProfilesServiceRequest>() + vec_bytes(&request.resource_profiles);
    total += request
        .resource_profiles
        .iter()
        .map(resource_bytes)
        .sum::<usize>();
    if let Some(dictionary) = &request.dictionary {
        total += dictionary_bytes(dictionary);
    }
    total
}

fn resource_bytes(resource: &ResourceProfiles) -> usize {
    let attributes = resource
        .resource
        .as_ref()
        .map_or(0, |r| key_values_bytes(&r.attributes));
    attributes
        + string_bytes(&resource.schema_url)
        + vec_bytes(&resource.scope_profiles)
        + resource
            .scope_profiles
            .iter()
            .map(scope_bytes)
            .sum::<usize>()
}

fn scope_bytes(scope: &ScopeProfiles) -> usize {
    let header = scope.scope.as_ref().map_or(0, |s| {
        string_bytes(&s.name) + string_bytes(&s.version) + key_values_bytes(&s.attributes)
    });
    header
        + string_bytes(&scope.schema_url)
        + vec_bytes(&scope.profiles)
        + scope.profiles.iter().map(profile_bytes).sum::<usize>()
}

fn profile_bytes(profile: &Profile) -> usize {
    vec_bytes(&profile.samples)
        + profile.samples.iter().map(sample_bytes).sum::<usize>()
        + vec_bytes(&profile.profile_id)
        + string_bytes(&profile.original_payload_format)
        + vec_bytes(&profile.original_payload)
        + vec_bytes(&profile.attribute_indices)
}

fn sample_bytes(sample: &Sample) -> usize {
    vec_bytes(&sample.attribute_indices)
        + vec_bytes(&sample.values)
        + vec_bytes(&sample.timestamps_unix_nano)
}

fn dictionary_bytes(d: &ProfilesDictionary) -> usize {
    vec_bytes::<Mapping>(&d.mapping_table)
        + d.mapping_table
            .iter()
            .map(|m| vec_bytes(&m.attribute_indices))
            .sum::<usize>()
        + vec_bytes::<Location>(&d.location_table)
        + d.location_table
            .iter()
            .map(|l| vec_bytes::<Line>(&l.lines) + vec_bytes(&l.attribute_indices))
            .sum::<usize>()
        + vec_bytes::<Function>(&d.function_table)
        + vec_bytes::<Link>(&d.link_table)
        + d.link_table
            .iter()
            .map(|l| vec_bytes(&l.trace_id) + vec_bytes(&l.span_id))
            .sum::<usize>()
        + vec_bytes(&d.string_table)
        + d.string_table.iter().map(string_bytes).sum::<usize>()
        + vec_bytes::<KeyValueAndUnit>(&d.attribute_table)
        + d.attribute_table
            .iter()
            .map(|a| a.value.as_ref().map_or(0, any_value_bytes))
            .sum::<usize>()
        + vec_bytes::<Stack>(&d.stack_table)
        + d.stack_table
            .iter()
            .map(|s| vec_bytes(&s.location_indices))
            .sum::<usize>()
}

fn key_values_bytes(values: &Vec<KeyValue>) -> usize {
    vec_bytes(values)
        + values
            .iter()
            .map(|kv| string_bytes(&kv.key) + kv.value.as_ref().map_or(0, any_value_bytes))
            .sum::<usize>()
}

fn any_value_bytes(value: &AnyValue) -> usize {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => string_bytes(s),
        Some(any_value::Value::BytesValue(b)) => vec_bytes(b),
        Some(any_value::Value::ArrayValue(a)) => {
            vec_bytes(&a.values) + a.values.iter().map(any_value_bytes).sum::<usize>()
        }
        Some(any_value::Value::KvlistValue(list)) => key_values_bytes(&list.values),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_decoded_request_is_estimated_larger_than_its_encoding() {
        let request = profbridge_testkit::ebpf_like_request(500, 3);
        let encoded = request.encode_to_vec();
        let decoded = ExportProfilesServiceRequest::decode(encoded.as_slice()).unwrap();
        let estimate = memory_estimate(&decoded);
        assert!(estimate > encoded.len(), "{estimate} vs {}", encoded.len());
        let bigger = profbridge_testkit::ebpf_like_request(1000, 3);
        assert!(memory_estimate(&bigger) > memory_estimate(&request));
    }
}
