//! OTLP → pprof, as docs/mapping.md specifies.

mod converter;
mod group;
mod labels;
mod rows;
mod samples;

use profbridge_pprof::Profile as Pprof;
use prost::Message;

pub use converter::PprofConverter;

use crate::keys::{COMMENT, DOC_URL, DROP_FRAMES, KEEP_FRAMES};
use crate::otlp::{
    resolve_strings, AnyValue, ExportProfilesServiceRequest, InstrumentationScope, KeyValue,
    Profile, ProfilesDictionary,
};
use crate::validate::{OtlpError, ProfileRef};

#[derive(Debug, Clone, Default)]
pub struct ToPprofOptions {
    /// Copy resource attributes onto every sample as labels.
    pub resource_labels: bool,
    /// Copy scope attributes onto every sample as labels.
    pub scope_labels: bool,
    /// Drop timestamps, summing the observations of each sample.
    pub aggregate_timestamps: bool,
}

/// One pprof, with the resource and scope it came from.
#[derive(Debug, Clone)]
pub struct PprofOutput<P = Pprof> {
    pub profile: P,
    pub resource: usize,
    pub scope: usize,
    pub resource_attributes: Vec<KeyValue>,
    pub instrumentation_scope: Option<InstrumentationScope>,
    /// The `schema_url` of the `ResourceProfiles` and `ScopeProfiles` (the
    /// pprof's reserved string carries them too).
    pub resource_schema_url: String,
    pub scope_schema_url: String,
}

#[derive(Debug, Default)]
pub struct OtlpToPprof<P = Pprof> {
    pub profiles: Vec<PprofOutput<P>>,
    /// Profiles that failed validation, each with its reason; the others
    /// were converted.
    pub rejected: Vec<(ProfileRef, OtlpError)>,
}

/// A pprof whose samples are not spelled out yet: what a caller that only
/// writes the pprof needs. [`UnassembledPprof::encode`] gives the same
/// bytes as encoding [`UnassembledPprof::assemble`]'s profile, faster.
#[derive(Debug, Clone)]
pub struct UnassembledPprof {
    /// Everything but the samples and the locations.
    pub head: Pprof,
    /// The `Profile.location` fields, encoded as they were built.
    locations: Vec<u8>,
    samples: samples::Samples,
}

impl UnassembledPprof {
    pub fn sample_count(&self) -> usize {
        self.samples.count()
    }

    /// The profile, as protobuf (not compressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Replaces the contents of `out` with the profile as protobuf, reusing
    /// its allocation.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        self.encode_with(out, &mut samples::SampleFields::default());
    }

    fn encode_with(&self, out: &mut Vec<u8>, fields: &mut samples::SampleFields) {
        self.samples
            .encode_with(&self.head, &self.locations, out, fields);
    }

    pub fn assemble(self) -> Pprof {
        // Only location fields, which decode as a profile of only locations;
        // written here, they decode.
        let location = Pprof::decode(self.locations.as_slice())
            .map(|locations| locations.location)
            .unwrap_or_default();
        Pprof {
            sample: self.samples.into_samples(),
            location,
            ..self.head
        }
    }
}

impl<P> PprofOutput<P> {
    fn map<Q>(self, f: impl FnOnce(P) -> Q) -> PprofOutput<Q> {
        PprofOutput {
            profile: f(self.profile),
            resource: self.resource,
            scope: self.scope,
            resource_attributes: self.resource_attributes,
            instrumentation_scope: self.instrumentation_scope,
            resource_schema_url: self.resource_schema_url,
            scope_schema_url: self.scope_schema_url,
        }
    }
}

/// Converts a request into one pprof per scope (more when a scope's
/// profiles disagree on time, period or pprof.profile.* attributes).
/// An invalid dictionary rejects the whole request.
pub fn otlp_to_pprof(
    request: &ExportProfilesServiceRequest,
    options: &ToPprofOptions,
) -> Result<OtlpToPprof, OtlpError> {
    let unassembled = otlp_to_unassembled_pprof(request, options)?;
    Ok(OtlpToPprof {
        profiles: unassembled
            .profiles
            .into_iter()
            .map(|output| output.map(UnassembledPprof::assemble))
            .collect(),
        rejected: unassembled.rejected,
    })
}

/// [`otlp_to_pprof`] for callers that encode the pprofs and nothing else.
/// [`PprofConverter`] does the same for one request after another, reusing
/// its memory.
pub fn otlp_to_unassembled_pprof(
    request: &ExportProfilesServiceRequest,
    options: &ToPprofOptions,
) -> Result<OtlpToPprof<UnassembledPprof>, OtlpError> {
    PprofConverter::new(options.clone()).convert(request)
}

fn resolve_key_values(values: &[KeyValue], dictionary: &ProfilesDictionary) -> Vec<KeyValue> {
    let strings = &dictionary.string_table;
    values
        .iter()
        .map(|kv| KeyValue {
            key: if kv.key.is_empty() {
                string_at(strings, kv.key_strindex).to_owned()
            } else {
                kv.key.clone()
            },
            value: kv.value.as_ref().map(|v| resolve_strings(v, strings)),
            key_strindex: 0,
        })
        .collect()
}

pub(super) fn string_at(strings: &[String], index: i32) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| strings.get(i))
        .map_or("", String::as_str)
}

/// What profiles must share to become one pprof.
#[derive(PartialEq)]
struct GroupKey {
    time: u64,
    duration: u64,
    period_type: Option<(String, String)>,
    period: i64,
    pprof_attributes: Vec<(String, AnyValue)>,
}

fn group_key(profile: &Profile, dictionary: &ProfilesDictionary) -> GroupKey {
    let strings = &dictionary.string_table;
    let mut pprof_attributes: Vec<(String, AnyValue)> = profile_attributes(profile, dictionary)
        .into_iter()
        .filter(|(key, _)| [COMMENT, DROP_FRAMES, KEEP_FRAMES, DOC_URL].contains(&key.as_str()))
        .collect();
    pprof_attributes.sort_by(|a, b| a.0.cmp(&b.0));
    GroupKey {
        time: profile.time_unix_nano,
        duration: profile.duration_nano,
        period_type: profile.period_type.map(|vt| {
            (
                string_at(strings, vt.type_strindex).to_owned(),
                string_at(strings, vt.unit_strindex).to_owned(),
            )
        }),
        period: profile.period,
        pprof_attributes,
    }
}

/// A profile's attributes, resolved.
pub(super) fn profile_attributes(
    profile: &Profile,
    dictionary: &ProfilesDictionary,
) -> Vec<(String, AnyValue)> {
    profile
        .attribute_indices
        .iter()
        .filter_map(|&i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| dictionary.attribute_table.get(i))
        })
        .map(|a| {
            (
                string_at(&dictionary.string_table, a.key_strindex).to_owned(),
                a.value
                    .as_ref()
                    .map(|v| resolve_strings(v, &dictionary.string_table))
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Profiles grouped by what they must share, groups in first-seen order.
fn group_profiles<'a>(
    profiles: &[&'a Profile],
    dictionary: &ProfilesDictionary,
) -> Vec<Vec<&'a Profile>> {
    let mut groups: Vec<(GroupKey, Vec<&Profile>)> = Vec::new();
    for &profile in profiles {
        let key = group_key(profile, dictionary);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(profile),
            None => groups.push((key, vec![profile])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}
