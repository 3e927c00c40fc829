//! Merges requests into one request with one deduplicated dictionary.
//!
//! Each input dictionary is interned into a shared `DictionaryBuilder` in
//! dependency order (strings, attributes, mappings, functions, locations,
//! stacks, links), which yields an old → new index map per table; every
//! reference in the input's profiles is then rewritten through those maps.
//! Each entry and each reference is visited once and interning is a hash
//! lookup, so the work is linear in the size of the input.
//!
//! Inputs are expected to have passed `validate_request`. Index 0 always
//! stays the zero entry: an input's entry 0 is not interned (it is the zero
//! value in a valid request), and an index outside its table becomes 0
//! rather than panicking.

use std::cell::Cell;

use crate::dictionary::DictionaryBuilder;
use crate::otlp::{
    any_value, AnyValue, ExportProfilesServiceRequest, KeyValue, Profile, ProfilesDictionary,
    ResourceProfiles,
};

pub fn merge_requests(requests: Vec<ExportProfilesServiceRequest>) -> ExportProfilesServiceRequest {
    merge_counting_work(requests).0
}

/// What a merge did: builder calls (one per input entry) and index
/// rewrites (one per reference). Linear merging means both are sums over
/// the inputs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Work {
    interned: usize,
    rewritten: usize,
}

fn merge_counting_work(
    requests: Vec<ExportProfilesServiceRequest>,
) -> (ExportProfilesServiceRequest, Work) {
    let mut builder = DictionaryBuilder::new();
    let mut work = Work::default();
    let mut resource_profiles = Vec::new();
    for request in requests {
        let dictionary = request.dictionary.unwrap_or_default();
        let remap = Remap::intern(dictionary, &mut builder, &mut work.interned);
        for mut resource in request.resource_profiles {
            remap.resource_profiles(&mut resource);
            resource_profiles.push(resource);
        }
        work.rewritten += remap.rewritten.get();
    }
    let merged = ExportProfilesServiceRequest {
        resource_profiles,
        dictionary: Some(builder.finish()),
    };
    (merged, work)
}

/// One input dictionary's old → new indexes, per table.
#[derive(Default)]
struct Remap {
    strings: Vec<i32>,
    attributes: Vec<i32>,
    mappings: Vec<i32>,
    functions: Vec<i32>,
    locations: Vec<i32>,
    stacks: Vec<i32>,
    links: Vec<i32>,
    rewritten: Cell<usize>,
}

/// The new index of each of `table`'s entries: 0 for the zero entry, which
/// is not interned, and `intern`'s result for the others.
fn intern_table<T>(
    table: Vec<T>,
    interned: &mut usize,
    mut intern: impl FnMut(T) -> i32,
) -> Vec<i32> {
    let mut new_indexes = Vec::with_capacity(table.len().max(1));
    new_indexes.push(0);
    for entry in table.into_iter().skip(1) {
        *interned += 1;
        new_indexes.push(intern(entry));
    }
    new_indexes
}

impl Remap {
    fn intern(
        d: ProfilesDictionary,
        builder: &mut DictionaryBuilder,
        interned: &mut usize,
    ) -> Self {
        let mut remap = Remap::default();
        remap.strings = intern_table(d.string_table, interned, |s| builder.string(&s));
        remap.attributes = intern_table(d.attribute_table, interned, |mut a| {
            a.key_strindex = remap.string(a.key_strindex);
            a.unit_strindex = remap.string(a.unit_strindex);
            if let Some(value) = &mut a.value {
                remap.any_value(value);
            }
            builder.attribute_entry(a)
        });
        remap.mappings = intern_table(d.mapping_table, interned, |mut m| {
            m.filename_strindex = remap.string(m.filename_strindex);
            remap.attribute_indices(&mut m.attribute_indices);
            builder.mapping(m)
        });
        remap.functions = intern_table(d.function_table, interned, |mut f| {
            f.name_strindex = remap.string(f.name_strindex);
            f.system_name_strindex = remap.string(f.system_name_strindex);
            f.filename_strindex = remap.string(f.filename_strindex);
            builder.function(f)
        });
        remap.locations = intern_table(d.location_table, interned, |mut l| {
            l.mapping_index = remap.index(&remap.mappings, l.mapping_index);
            for line in &mut l.lines {
                line.function_index = remap.index(&remap.functions, line.function_index);
            }
            remap.attribute_indices(&mut l.attribute_indices);
            builder.location(l)
        });
        remap.stacks = intern_table(d.stack_table, interned, |mut s| {
            for location in &mut s.location_indices {
                *location = remap.index(&remap.locations, *location);
            }
            builder.stack(&s.location_indices)
        });
        remap.links = intern_table(d.link_table, interned, |l| builder.link(l));
        remap
    }

    fn index(&self, new_indexes: &[i32], old: i32) -> i32 {
        self.rewritten.set(self.rewritten.get() + 1);
        usize::try_from(old)
            .ok()
            .and_then(|i| new_indexes.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn string(&self, old: i32) -> i32 {
        self.index(&self.strings, old)
    }

    fn attribute_indices(&self, indices: &mut [i32]) {
        for index in indices {
            *index = self.index(&self.attributes, *index);
        }
    }

    fn any_value(&self, value: &mut AnyValue) {
        match &mut value.value {
            Some(any_value::Value::StringValueStrindex(index)) => *index = self.string(*index),
            Some(any_value::Value::ArrayValue(array)) => {
                array.values.iter_mut().for_each(|v| self.any_value(v));
            }
            Some(any_value::Value::KvlistValue(list)) => self.key_values(&mut list.values),
            _ => {}
        }
    }

    fn key_values(&self, key_values: &mut [KeyValue]) {
        for kv in key_values {
            kv.key_strindex = self.string(kv.key_strindex);
            if let Some(value) = &mut kv.value {
                self.any_value(value);
            }
        }
    }

    fn resource_profiles(&self, resource: &mut ResourceProfiles) {
        if let Some(r) = &mut resource.resource {
            self.key_values(&mut r.attributes);
        }
        for scope in &mut resource.scope_profiles {
            if let Some(s) = &mut scope.scope {
                self.key_values(&mut s.attributes);
            }
            scope.profiles.iter_mut().for_each(|p| self.profile(p));
        }
    }

    fn profile(&self, p: &mut Profile) {
        for value_type in [&mut p.sample_type, &mut p.period_type]
            .into_iter()
            .flatten()
        {
            value_type.type_strindex = self.string(value_type.type_strindex);
            value_type.unit_strindex = self.string(value_type.unit_strindex);
        }
        self.attribute_indices(&mut p.attribute_indices);
        for sample in &mut p.samples {
            sample.stack_index = self.index(&self.stacks, sample.stack_index);
            sample.link_index = self.index(&self.links, sample.link_index);
            self.attribute_indices(&mut sample.attribute_indices);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::{
        string_value, Function, Line, Location, Mapping, Sample, ScopeProfiles, ValueType,
    };

    /// A request with `n` functions, locations, stacks and samples.
    fn request(n: i32) -> ExportProfilesServiceRequest {
        let mut b = DictionaryBuilder::new();
        let unit = b.string("ns");
        let filename = b.string("/bin/app");
        let mapping = b.mapping(Mapping {
            filename_strindex: filename,
            ..Default::default()
        });
        let mut samples = Vec::new();
        for i in 0..n {
            let name = b.string(&format!("f{i}"));
            let function = b.function(Function {
                name_strindex: name,
                ..Default::default()
            });
            let location = b.location(Location {
                mapping_index: mapping,
                address: u64::try_from(i).unwrap(),
                lines: vec![Line {
                    function_index: function,
                    line: 1,
                    column: 0,
                }],
                attribute_indices: vec![],
            });
            let attribute = b.attribute("thread", string_value(format!("t{i}")), "");
            samples.push(Sample {
                stack_index: b.stack(&[location, 1]),
                attribute_indices: vec![attribute],
                values: vec![1],
                ..Default::default()
            });
        }
        let profile = Profile {
            sample_type: Some(ValueType {
                type_strindex: unit,
                unit_strindex: unit,
            }),
            samples,
            ..Default::default()
        };
        ExportProfilesServiceRequest {
            resource_profiles: vec![ResourceProfiles {
                scope_profiles: vec![ScopeProfiles {
                    profiles: vec![profile],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            dictionary: Some(b.finish()),
        }
    }

    #[test]
    fn work_is_proportional_to_the_input() {
        for n in [1, 10, 100] {
            let single = merge_counting_work(vec![request(n)]).1;
            let dictionary = request(n).dictionary.unwrap();
            let entries = [
                dictionary.string_table.len(),
                dictionary.attribute_table.len(),
                dictionary.mapping_table.len(),
                dictionary.function_table.len(),
                dictionary.location_table.len(),
                dictionary.stack_table.len(),
                dictionary.link_table.len(),
            ];
            let without_zero_entries: usize = entries.iter().map(|len| len - 1).sum();
            assert_eq!(single.interned, without_zero_entries);
            for copies in [2, 4, 8, 16] {
                let merged = merge_counting_work(vec![request(n); copies]).1;
                assert_eq!(
                    merged.interned,
                    copies * single.interned,
                    "n={n} copies={copies}"
                );
                assert_eq!(
                    merged.rewritten,
                    copies * single.rewritten,
                    "n={n} copies={copies}"
                );
            }
        }
    }

    #[test]
    fn work_grows_linearly_with_the_request_size() {
        let base = merge_counting_work(vec![request(100)]).1;
        for factor in [2, 4, 8] {
            let scaled = merge_counting_work(vec![request(100 * factor)]).1;
            let factor = usize::try_from(factor).unwrap();
            assert!(
                scaled.interned <= factor * base.interned,
                "{scaled:?} vs {base:?}"
            );
            assert!(
                scaled.rewritten <= factor * base.rewritten,
                "{scaled:?} vs {base:?}"
            );
        }
    }
}
