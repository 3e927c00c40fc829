//! Reading resource attributes and sample types out of a request, with
//! dictionary references resolved.

use profbridge_translate::otlp::{
    any_value, resolve_strings, AnyValue, ExportProfilesServiceRequest, KeyValue, Profile,
    ProfilesDictionary, ResourceProfiles,
};

/// The string at `index` of the dictionary's string table, or "".
fn dictionary_string(dictionary: Option<&ProfilesDictionary>, index: i32) -> &str {
    dictionary
        .zip(usize::try_from(index).ok())
        .and_then(|(d, i)| d.string_table.get(i))
        .map_or("", String::as_str)
}

/// A resource's attributes with keys and string values taken out of the
/// dictionary where they are references.
pub(crate) fn resource_attributes(
    resource: &ResourceProfiles,
    dictionary: Option<&ProfilesDictionary>,
) -> Vec<KeyValue> {
    let strings = dictionary.map_or(&[][..], |d| &d.string_table[..]);
    resource
        .resource
        .as_ref()
        .map_or(&[][..], |r| &r.attributes[..])
        .iter()
        .map(|kv| KeyValue {
            key: if kv.key.is_empty() {
                dictionary_string(dictionary, kv.key_strindex).to_owned()
            } else {
                kv.key.clone()
            },
            value: kv.value.as_ref().map(|v| resolve_strings(v, strings)),
            key_strindex: 0,
        })
        .collect()
}

/// The first resource's attributes, resolved; empty when there is none.
pub(crate) fn first_resource_attributes(request: &ExportProfilesServiceRequest) -> Vec<KeyValue> {
    request
        .resource_profiles
        .first()
        .map(|resource| resource_attributes(resource, request.dictionary.as_ref()))
        .unwrap_or_default()
}

/// The text of the attribute named `key` among resolved attributes.
pub(crate) fn attribute_text(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(value_text)
}

/// A scalar value as text; arrays, maps and unset values have none.
fn value_text(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        any_value::Value::BytesValue(bytes) => {
            Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
        }
        any_value::Value::ArrayValue(_)
        | any_value::Value::KvlistValue(_)
        | any_value::Value::StringValueStrindex(_) => None,
    }
}

/// A profile's sample type as (type, unit).
pub(crate) fn sample_type<'a>(
    profile: &Profile,
    dictionary: Option<&'a ProfilesDictionary>,
) -> (&'a str, &'a str) {
    profile.sample_type.map_or(("", ""), |vt| {
        (
            dictionary_string(dictionary, vt.type_strindex),
            dictionary_string(dictionary, vt.unit_strindex),
        )
    })
}

/// The first profile's sample type name, if it has one.
pub(crate) fn first_sample_type(request: &ExportProfilesServiceRequest) -> Option<String> {
    let profile = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .next()?;
    let (name, _) = sample_type(profile, request.dictionary.as_ref());
    (!name.is_empty()).then(|| name.to_owned())
}

/// A pprof's default sample type name: the one `default_sample_type` names
/// when it names one, else the last (pprof's own rule, which also gives the
/// type of the first OTLP profile the pprof came from).
pub(crate) fn pprof_sample_type(profile: &profbridge_pprof::Profile) -> Option<String> {
    let index = profbridge_pprof::default_sample_type_index(profile)?;
    let value_type = profile.sample_type.get(index)?;
    let name = usize::try_from(value_type.r#type)
        .ok()
        .and_then(|i| profile.string_table.get(i))?;
    (!name.is_empty()).then(|| name.clone())
}
