//! OTLP profiles validation: the dictionary's zero entries and indexes
//! (request-wide), then each profile on its own, so that an invalid profile
//! is rejected alone and the rest of the request still converts.

use std::collections::HashSet;

use thiserror::Error;

mod zero_entries;

pub use zero_entries::{is_empty_value, is_zero_link, Table, ZeroEntryError};

use crate::otlp::{
    any_value, AnyValue, ExportProfilesServiceRequest, KeyValue, KeyValueAndUnit, Profile,
    ProfilesDictionary,
};

/// Where a profile sits in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileRef {
    pub resource: usize,
    pub scope: usize,
    pub profile: usize,
}

impl std::fmt::Display for ProfileRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "resource {}, scope {}, profile {}",
            self.resource, self.scope, self.profile
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OtlpError {
    #[error("the request has profiles but no dictionary")]
    NoDictionary,
    /// Entry 0 of a table is missing or holds data.
    #[error("dictionary: {0}")]
    ZeroEntry(ZeroEntryError),
    #[error("dictionary: {place}: {problem}")]
    Dictionary { place: String, problem: EntryError },
    #[error("{at}: {problem}")]
    Profile { at: ProfileRef, problem: EntryError },
}

/// What is wrong with one entry of the dictionary or one profile.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EntryError {
    #[error("{field} {index} is out of range ({table} has {len} entries)")]
    OutOfRange {
        field: String,
        index: i32,
        table: &'static str,
        len: usize,
    },
    #[error("attribute key {0:?} appears twice")]
    DuplicateAttributeKey(String),
    #[error("key {0:?} appears twice")]
    DuplicateKey(String),
    #[error("{values} values but {timestamps} timestamps; with both, their counts must be equal")]
    CountMismatch { values: usize, timestamps: usize },
    #[error("trace_id has {trace_id} bytes and span_id {span_id}; they must have 16 and 8")]
    LinkIdLengths { trace_id: usize, span_id: usize },
    /// A problem in a part of the entry, named by `part`.
    #[error("{part}: {problem}")]
    In {
        part: String,
        problem: Box<EntryError>,
    },
}

impl EntryError {
    fn within(self, part: impl Into<String>) -> Self {
        Self::In {
            part: part.into(),
            problem: Box::new(self),
        }
    }
}

impl From<ZeroEntryError> for OtlpError {
    fn from(error: ZeroEntryError) -> Self {
        Self::ZeroEntry(error)
    }
}

/// The profiles a request holds that are invalid, each with its reason.
#[derive(Debug, Clone, Default)]
pub struct Validated {
    pub invalid: Vec<(ProfileRef, OtlpError)>,
    pub total_profiles: usize,
}

impl Validated {
    pub fn is_valid(&self, at: ProfileRef) -> bool {
        !self.invalid.iter().any(|(r, _)| *r == at)
    }
}

/// Checks the dictionary (an error there rejects the whole request) and
/// every profile (an error there rejects that profile).
pub fn validate_request(request: &ExportProfilesServiceRequest) -> Result<Validated, OtlpError> {
    let total_profiles = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .map(|s| s.profiles.len())
        .sum();
    let mut validated = Validated {
        invalid: Vec::new(),
        total_profiles,
    };
    if total_profiles == 0 {
        return Ok(validated);
    }
    let dictionary = request.dictionary.as_ref().ok_or(OtlpError::NoDictionary)?;
    check_dictionary(dictionary)?;
    let sizes = Sizes::of(dictionary);
    for (r, resource) in request.resource_profiles.iter().enumerate() {
        let resource_attributes = resource
            .resource
            .as_ref()
            .map_or(&[][..], |res| &res.attributes[..]);
        for (s, scope) in resource.scope_profiles.iter().enumerate() {
            let scope_attributes = scope
                .scope
                .as_ref()
                .map_or(&[][..], |sc| &sc.attributes[..]);
            for (p, profile) in scope.profiles.iter().enumerate() {
                let at = ProfileRef {
                    resource: r,
                    scope: s,
                    profile: p,
                };
                let result = check_key_values("resource attributes", resource_attributes, &sizes)
                    .and_then(|()| check_key_values("scope attributes", scope_attributes, &sizes))
                    .and_then(|()| check_profile(profile, dictionary, &sizes));
                if let Err(problem) = result {
                    validated
                        .invalid
                        .push((at, OtlpError::Profile { at, problem }));
                }
            }
        }
    }
    Ok(validated)
}

struct Sizes {
    strings: usize,
    mappings: usize,
    locations: usize,
    functions: usize,
    links: usize,
    attributes: usize,
    stacks: usize,
}

impl Sizes {
    fn of(d: &ProfilesDictionary) -> Self {
        Self {
            strings: d.string_table.len(),
            mappings: d.mapping_table.len(),
            locations: d.location_table.len(),
            functions: d.function_table.len(),
            links: d.link_table.len(),
            attributes: d.attribute_table.len(),
            stacks: d.stack_table.len(),
        }
    }
}

fn in_range(index: i32, len: usize) -> bool {
    usize::try_from(index).is_ok_and(|i| i < len)
}

fn range_error(field: &str, index: i32, table: &'static str, len: usize) -> EntryError {
    EntryError::OutOfRange {
        field: field.to_owned(),
        index,
        table,
        len,
    }
}

#[inline]
fn check(field: &str, index: i32, table: &'static str, len: usize) -> Result<(), EntryError> {
    if in_range(index, len) {
        Ok(())
    } else {
        Err(range_error(field, index, table, len))
    }
}

fn check_dictionary(d: &ProfilesDictionary) -> Result<(), OtlpError> {
    zero_entries::check_zero_entries(d)?;
    let sizes = Sizes::of(d);
    let fail = |table: &str, i: usize| {
        let place = format!("{table}[{i}]");
        move |problem: EntryError| OtlpError::Dictionary { place, problem }
    };

    for (i, a) in d.attribute_table.iter().enumerate() {
        check_attribute(a, &sizes).map_err(|e| fail("attribute_table", i)(e))?;
    }
    for (i, m) in d.mapping_table.iter().enumerate() {
        check(
            "filename_strindex",
            m.filename_strindex,
            "string_table",
            sizes.strings,
        )
        .and_then(|()| check_attribute_list(&m.attribute_indices, d))
        .map_err(|e| fail("mapping_table", i)(e))?;
    }
    for (i, l) in d.location_table.iter().enumerate() {
        check(
            "mapping_index",
            l.mapping_index,
            "mapping_table",
            sizes.mappings,
        )
        .and_then(|()| check_attribute_list(&l.attribute_indices, d))
        .map_err(|e| fail("location_table", i)(e))?;
        for (j, line) in l.lines.iter().enumerate() {
            check(
                "function_index",
                line.function_index,
                "function_table",
                sizes.functions,
            )
            .map_err(|e| fail("location_table", i)(e.within(format!("line {j}"))))?;
        }
    }
    for (i, f) in d.function_table.iter().enumerate() {
        [
            ("name_strindex", f.name_strindex),
            ("system_name_strindex", f.system_name_strindex),
            ("filename_strindex", f.filename_strindex),
        ]
        .iter()
        .try_for_each(|&(field, index)| check(field, index, "string_table", sizes.strings))
        .map_err(|e| fail("function_table", i)(e))?;
    }
    for (i, stack) in d.stack_table.iter().enumerate() {
        for (j, &index) in stack.location_indices.iter().enumerate() {
            if !in_range(index, sizes.locations) {
                let problem = range_error(
                    &format!("location_indices[{j}]"),
                    index,
                    "location_table",
                    sizes.locations,
                );
                return Err(fail("stack_table", i)(problem));
            }
        }
    }
    for (i, link) in d.link_table.iter().enumerate().skip(1) {
        if link.trace_id.len() != 16 || link.span_id.len() != 8 {
            return Err(OtlpError::Dictionary {
                place: format!("link_table[{i}]"),
                problem: EntryError::LinkIdLengths {
                    trace_id: link.trace_id.len(),
                    span_id: link.span_id.len(),
                },
            });
        }
    }
    Ok(())
}

fn check_attribute(a: &KeyValueAndUnit, sizes: &Sizes) -> Result<(), EntryError> {
    check(
        "key_strindex",
        a.key_strindex,
        "string_table",
        sizes.strings,
    )?;
    check(
        "unit_strindex",
        a.unit_strindex,
        "string_table",
        sizes.strings,
    )?;
    match &a.value {
        Some(value) => check_value(value, sizes),
        None => Ok(()),
    }
}

fn check_value(value: &AnyValue, sizes: &Sizes) -> Result<(), EntryError> {
    match &value.value {
        Some(any_value::Value::StringValueStrindex(index)) => check(
            "string_value_strindex",
            *index,
            "string_table",
            sizes.strings,
        ),
        Some(any_value::Value::ArrayValue(array)) => {
            array.values.iter().try_for_each(|v| check_value(v, sizes))
        }
        Some(any_value::Value::KvlistValue(list)) => {
            check_key_values("kvlist", &list.values, sizes)
        }
        _ => Ok(()),
    }
}

/// Lists longer than this look for duplicate keys through a set; shorter
/// ones (nearly all: most have one entry) by scanning, without allocating.
const SCANNED_ATTRIBUTE_LIST_LEN: usize = 16;

/// Indexes in range and keys unique.
fn check_attribute_list(indices: &[i32], d: &ProfilesDictionary) -> Result<(), EntryError> {
    let attribute_at = |i: usize, index: i32| {
        usize::try_from(index)
            .ok()
            .and_then(|index| d.attribute_table.get(index))
            .ok_or_else(|| {
                range_error(
                    &format!("attribute_indices[{i}]"),
                    index,
                    "attribute_table",
                    d.attribute_table.len(),
                )
            })
    };
    let key_of = |attribute: &KeyValueAndUnit| {
        usize::try_from(attribute.key_strindex)
            .ok()
            .and_then(|k| d.string_table.get(k))
            .map_or("", String::as_str)
    };
    let duplicate = |key: &str| EntryError::DuplicateAttributeKey(key.to_owned());
    if indices.len() > SCANNED_ATTRIBUTE_LIST_LEN {
        let mut keys = HashSet::with_capacity(indices.len());
        for (i, &index) in indices.iter().enumerate() {
            let key = key_of(attribute_at(i, index)?);
            if !keys.insert(key) {
                return Err(duplicate(key));
            }
        }
        return Ok(());
    }
    for (i, &index) in indices.iter().enumerate() {
        let key = key_of(attribute_at(i, index)?);
        // The earlier entries are all in range: they were checked first.
        let earlier = indices
            .get(..i)
            .unwrap_or_default()
            .iter()
            .filter_map(|&e| {
                usize::try_from(e)
                    .ok()
                    .and_then(|e| d.attribute_table.get(e))
            });
        if earlier.map(key_of).any(|k| k == key) {
            return Err(duplicate(key));
        }
    }
    Ok(())
}

fn check_key_values(what: &str, values: &[KeyValue], sizes: &Sizes) -> Result<(), EntryError> {
    let mut keys = HashSet::new();
    for kv in values {
        if kv.key_strindex != 0 {
            check(
                &format!("{what}: key_strindex"),
                kv.key_strindex,
                "string_table",
                sizes.strings,
            )?;
        }
        let key = (kv.key.as_str(), kv.key_strindex);
        if !keys.insert(key) {
            return Err(EntryError::DuplicateKey(kv.key.clone()).within(what));
        }
        if let Some(value) = &kv.value {
            check_value(value, sizes).map_err(|e| e.within(what))?;
        }
    }
    Ok(())
}

fn check_profile(p: &Profile, d: &ProfilesDictionary, sizes: &Sizes) -> Result<(), EntryError> {
    for (field, value_type) in [
        ("sample_type", &p.sample_type),
        ("period_type", &p.period_type),
    ] {
        if let Some(vt) = value_type {
            check(
                &format!("{field}.type_strindex"),
                vt.type_strindex,
                "string_table",
                sizes.strings,
            )?;
            check(
                &format!("{field}.unit_strindex"),
                vt.unit_strindex,
                "string_table",
                sizes.strings,
            )?;
        }
    }
    check_attribute_list(&p.attribute_indices, d).map_err(|e| e.within("attributes"))?;
    for (i, sample) in p.samples.iter().enumerate() {
        let at = |e: EntryError| e.within(format!("sample {i}"));
        check(
            "stack_index",
            sample.stack_index,
            "stack_table",
            sizes.stacks,
        )
        .map_err(at)?;
        check("link_index", sample.link_index, "link_table", sizes.links).map_err(at)?;
        check_attribute_list(&sample.attribute_indices, d).map_err(at)?;
        let (values, timestamps) = (sample.values.len(), sample.timestamps_unix_nano.len());
        if values != 0 && timestamps != 0 && values != timestamps {
            return Err(at(EntryError::CountMismatch { values, timestamps }));
        }
    }
    let _ = sizes.attributes;
    Ok(())
}
