//! pprof → OTLP, as docs/mapping.md specifies.

mod labels;
mod tables;

use std::convert::Infallible;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use thiserror::Error;

use profbridge_pprof::{validate_source, Profile as Pprof, SampleSource, ValidationError};

use crate::dictionary::{DictionaryBuilder, Room};
use crate::keys::{
    COMMENT, DEFAULT_SAMPLE_TYPE, DOC_URL, DROP_FRAMES, KEEP_FRAMES, SAMPLE_TYPE_ORDER,
};
use crate::otlp::{
    array_value, int_value, string_value, ExportProfilesServiceRequest, InstrumentationScope,
    KeyValue, Profile, Resource, ResourceProfiles, Sample, ScopeProfiles, ValueType,
};
pub use labels::LabelError;
use labels::{LabelValue, SampleLabels};
use tables::Tables;

use crate::reserved::otlp_data::{self, OtlpData};

/// One pprof profile to convert, with the resource it comes from: a
/// decoded [`Pprof`], or any [`SampleSource`] (such as a
/// `profbridge_pprof::PackedProfile`, whose samples stay packed).
#[derive(Debug)]
pub struct PprofInput<'a, P: ?Sized = Pprof> {
    pub profile: &'a P,
    pub resource_attributes: &'a [KeyValue],
    /// The instrumentation scope to report, when it is not profbridge's
    /// (for example the one an OTLP → pprof conversion handed back).
    pub scope: Option<&'a InstrumentationScope>,
    /// The bytes the profile was read from, kept when the options ask.
    pub original_payload: Option<&'a [u8]>,
}

impl<P: ?Sized> Clone for PprofInput<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: ?Sized> Copy for PprofInput<'_, P> {}

#[derive(Debug, Clone)]
pub struct ToOtlpOptions {
    pub scope_name: String,
    pub scope_version: String,
    /// Drop `timestamp_ns` labels and sum the samples they split.
    pub aggregate_timestamps: bool,
    /// Keep the input bytes as `original_payload`.
    pub original_payload: bool,
    /// `original_payload_format` of what is kept: "pprof", or "jfr" for
    /// profiles read from a JFR recording.
    pub original_payload_format: String,
}

impl Default for ToOtlpOptions {
    fn default() -> Self {
        Self {
            scope_name: "profbridge".to_owned(),
            scope_version: env!("CARGO_PKG_VERSION").to_owned(),
            aggregate_timestamps: false,
            original_payload: false,
            original_payload_format: "pprof".to_owned(),
        }
    }
}

/// The text of each variant includes the error it wraps, which is
/// therefore not a `source()` (docs/architecture.md).
#[derive(Debug, Error)]
pub enum ToOtlpError {
    #[error("invalid pprof: {0}")]
    Invalid(ValidationError),
    #[error("sample {sample}: {error}")]
    Label { sample: usize, error: LabelError },
}

impl From<ValidationError> for ToOtlpError {
    fn from(error: ValidationError) -> Self {
        Self::Invalid(error)
    }
}

/// The request, and the inputs (by position) that could not be converted.
#[derive(Debug, Default)]
pub struct PprofToOtlp {
    pub request: ExportProfilesServiceRequest,
    pub rejected: Vec<(usize, ToOtlpError)>,
}

/// Converts several pprof profiles into one request with a shared
/// dictionary. An input that cannot be converted is reported and skipped.
pub fn pprof_to_otlp<P: SampleSource>(
    inputs: &[PprofInput<'_, P>],
    options: &ToOtlpOptions,
) -> PprofToOtlp {
    let mut dictionary = DictionaryBuilder::new();
    let mut out = PprofToOtlp::default();
    for (index, input) in inputs.iter().enumerate() {
        match convert(input, options, &mut dictionary) {
            Ok(resource) => push_resource(&mut out.request.resource_profiles, resource),
            Err(error) => out.rejected.push((index, error)),
        }
    }
    out.request.dictionary = Some(dictionary.finish());
    out
}

/// Consecutive inputs from the same resource share one ResourceProfiles.
fn push_resource(resources: &mut Vec<ResourceProfiles>, resource: ResourceProfiles) {
    match resources.last_mut() {
        Some(last)
            if last.resource == resource.resource && last.schema_url == resource.schema_url =>
        {
            last.scope_profiles.extend(resource.scope_profiles);
        }
        _ => resources.push(resource),
    }
}

/// One OTLP sample identity: stack, attributes, link.
type Identity = (i32, Vec<i32>, i32);

/// pprof samples merged by identity; timestamped ones keep one observation
/// per pprof sample, and only consecutive ones share a row, so that the
/// pprof sample order survives the round trip.
/// Untimed rows sum their samples' values into [`Rows::totals`].
struct Row {
    identity: Identity,
    observations: Vec<(u64, Vec<i64>)>,
}

/// The rows, and every row's value totals in one array (a row's at
/// `row * types`), so that a row of a large profile costs no allocation.
struct Rows {
    rows: Vec<Row>,
    totals: Vec<i64>,
    types: usize,
}

impl Rows {
    fn with_capacity(rows: usize, types: usize) -> Self {
        Self {
            rows: Vec::with_capacity(rows),
            totals: Vec::with_capacity(rows.saturating_mul(types)),
            types,
        }
    }

    fn push(&mut self, identity: Identity) -> usize {
        self.rows.push(Row {
            identity,
            observations: Vec::new(),
        });
        self.totals.resize(self.totals.len() + self.types, 0);
        self.rows.len() - 1
    }

    fn totals(&self, row: usize) -> &[i64] {
        let start = row.saturating_mul(self.types);
        self.totals
            .get(start..start.saturating_add(self.types))
            .unwrap_or_default()
    }

    fn add(&mut self, row: usize, values: &[i64]) {
        let start = row.saturating_mul(self.types);
        let end = start.saturating_add(self.types);
        if let Some(totals) = self.totals.get_mut(start..end) {
            for (total, value) in totals.iter_mut().zip(values) {
                *total = total.wrapping_add(*value);
            }
        }
    }
}

fn convert<P: SampleSource>(
    input: &PprofInput<'_, P>,
    options: &ToOtlpOptions,
    dictionary: &mut DictionaryBuilder,
) -> Result<ResourceProfiles, ToOtlpError> {
    let source = input.profile;
    if !source.validated() {
        validate_source(source)?;
    }
    let p = source.tables();
    let sample_count = source.sample_count();
    let text = |index: i64| {
        usize::try_from(index)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map_or("", String::as_str)
    };

    // Key-only labels carry nothing and are left out.
    let resolve_label = |label: &profbridge_pprof::Label| {
        let (key, value, unit) = (text(label.key), text(label.str), text(label.num_unit));
        if !value.is_empty() {
            Some((key, LabelValue::Str(value)))
        } else if label.num != 0 || !unit.is_empty() {
            Some((key, LabelValue::Num(label.num, unit)))
        } else {
            None
        }
    };
    let mut label_buffer: Vec<(&str, LabelValue<'_>)> = Vec::new();

    // A reserved string that does not decode is ignored (docs/mapping.md).
    let data = OtlpData::of_pprof(source)
        .and_then(Result::ok)
        .unwrap_or_default();
    dictionary.reserve(&Room {
        strings: p.string_table.len(),
        mappings: p.mapping.len(),
        functions: p.function.len(),
        locations: p.location.len(),
        stacks: sample_count,
    });
    let mut tables = Tables::new(p, &text, dictionary, &data);
    // Most samples of a large profile have no labels: theirs are not kept.
    let mut converted: Vec<Option<Box<SampleLabels>>> = Vec::with_capacity(sample_count);
    let mut cache = labels::LabelCache::default();
    source.try_for_each_sample(|index, sample| {
        label_buffer.clear();
        label_buffer.extend(sample.label.iter().filter_map(resolve_label));
        let labels = &label_buffer;
        let labels = labels::convert(
            labels,
            sample.location_id.len(),
            options.aggregate_timestamps,
            tables.dictionary(),
            &mut cache,
        )
        .map_err(|error| ToOtlpError::Label {
            sample: index,
            error,
        })?;
        tables.note_frame_types(&sample.location_id, labels.frame_types.as_deref());
        converted.push((!labels.is_empty()).then(|| Box::new(labels)));
        Ok::<(), ToOtlpError>(())
    })?;
    tables.intern_in_table_order(&cache.frame_type_names);

    let types = p.sample_type.len();
    // At most a row a sample; the room not used is never touched.
    let mut rows = Rows::with_capacity(sample_count, types);
    // Untimed rows by identity, as positions in `rows`.
    let mut plain_rows: HashTable<usize> = HashTable::with_capacity(sample_count);
    let mut last_row: Option<usize> = None;
    let mut scratch = Vec::new();
    let mut converted = converted.into_iter();
    source
        .try_for_each_sample(|_, sample| {
            let Some(labels) = converted.next() else {
                return Ok(());
            };
            let labels = labels.map_or_else(SampleLabels::default, |labels| *labels);
            let stack = tables.stack(
                &sample.location_id,
                labels.frame_types.as_deref(),
                &mut scratch,
            );
            let link = labels.link.map_or(0, |link| tables.dictionary().link(link));
            let identity = (stack, labels.attributes, link);
            let row = match labels.timestamp {
                None => {
                    let hash = FxBuildHasher.hash_one(&identity);
                    let identity_of = |row: &usize| rows.rows.get(*row).map(|r| &r.identity);
                    let found = plain_rows
                        .find(hash, |row| identity_of(row) == Some(&identity))
                        .copied();
                    let row = match found {
                        Some(row) => row,
                        None => {
                            let row = rows.push(identity);
                            let identity_hash = |row: &usize| {
                                rows.rows
                                    .get(*row)
                                    .map_or(0, |r| FxBuildHasher.hash_one(&r.identity))
                            };
                            plain_rows.insert_unique(hash, row, identity_hash);
                            row
                        }
                    };
                    rows.add(row, &sample.value);
                    row
                }
                Some(timestamp) => {
                    let continues = last_row
                        .and_then(|r| rows.rows.get(r))
                        .is_some_and(|r| !r.observations.is_empty() && r.identity == identity);
                    let row = match last_row {
                        Some(r) if continues => r,
                        _ => rows.push(identity),
                    };
                    if let Some(r) = rows.rows.get_mut(row) {
                        r.observations.push((timestamp, sample.value.clone()));
                    }
                    row
                }
            };
            last_row = Some(row);
            Ok::<(), Infallible>(())
        })
        .unwrap_or_else(|never| match never {});

    let dictionary = tables.into_dictionary();
    let order = sample_type_order(p, &text);
    let profile_attributes = profile_attributes(p, &text, dictionary);
    let attributes_of_column = |column: Option<usize>, dictionary: &mut DictionaryBuilder| {
        otlp_data::entry(&data.profiles, column.unwrap_or(0) as u64)
            .map(|attributes| tables::intern_attributes(dictionary, attributes))
            .unwrap_or_else(|| profile_attributes.clone())
    };
    let period_type = p.period_type.map(|vt| ValueType {
        type_strindex: dictionary.string(text(vt.r#type)),
        unit_strindex: dictionary.string(text(vt.unit)),
    });
    let columns: Vec<Option<usize>> = if order.is_empty() {
        vec![None]
    } else {
        order.iter().copied().map(Some).collect()
    };
    let profiles = columns
        .iter()
        .enumerate()
        .map(|(position, &column)| {
            let sample_type = column
                .and_then(|c| p.sample_type.get(c))
                .map(|vt| ValueType {
                    type_strindex: dictionary.string(text(vt.r#type)),
                    unit_strindex: dictionary.string(text(vt.unit)),
                });
            let value_of = |values: &[i64]| column.and_then(|c| values.get(c).copied());
            let samples = rows
                .rows
                .iter()
                .enumerate()
                .map(|(index, row)| Sample {
                    stack_index: row.identity.0,
                    attribute_indices: row.identity.1.clone(),
                    link_index: row.identity.2,
                    values: if row.observations.is_empty() {
                        value_of(rows.totals(index)).into_iter().collect()
                    } else {
                        row.observations
                            .iter()
                            .filter_map(|(_, v)| value_of(v))
                            .collect()
                    },
                    timestamps_unix_nano: row.observations.iter().map(|(t, _)| *t).collect(),
                })
                .collect();
            let payload = input
                .original_payload
                .filter(|_| options.original_payload && position == 0);
            Profile {
                sample_type,
                samples,
                time_unix_nano: p.time_nanos as u64,
                duration_nano: p.duration_nanos as u64,
                period_type,
                period: p.period,
                original_payload_format: if payload.is_some() {
                    options.original_payload_format.clone()
                } else {
                    String::new()
                },
                original_payload: payload.map(<[u8]>::to_vec).unwrap_or_default(),
                attribute_indices: attributes_of_column(column, dictionary),
                ..Profile::default()
            }
        })
        .collect();

    Ok(ResourceProfiles {
        resource: Some(Resource {
            attributes: input.resource_attributes.to_vec(),
            ..Resource::default()
        }),
        scope_profiles: vec![ScopeProfiles {
            scope: Some(instrumentation_scope(
                input.scope,
                options,
                scope_attributes(p, &text, &order),
            )),
            profiles,
            schema_url: data.scope_schema_url,
        }],
        schema_url: data.resource_schema_url,
    })
}

/// The given scope (or profbridge's), with the `pprof.scope.*` attributes
/// of this profile in place of any it had.
fn instrumentation_scope(
    given: Option<&InstrumentationScope>,
    options: &ToOtlpOptions,
    pprof_attributes: Vec<KeyValue>,
) -> InstrumentationScope {
    let mut scope = given.cloned().unwrap_or_else(|| InstrumentationScope {
        name: options.scope_name.clone(),
        version: options.scope_version.clone(),
        ..InstrumentationScope::default()
    });
    scope
        .attributes
        .retain(|kv| kv.key != DEFAULT_SAMPLE_TYPE && kv.key != SAMPLE_TYPE_ORDER);
    scope.attributes.extend(pprof_attributes);
    scope
}

/// pprof indexes of the OTLP profiles: the default sample type first (the
/// first type named `default_sample_type`, else the last), then the others
/// in pprof order.
fn sample_type_order<'a>(p: &Pprof, text: &impl Fn(i64) -> &'a str) -> Vec<usize> {
    let n = p.sample_type.len();
    if n == 0 {
        return Vec::new();
    }
    let default_name = text(p.default_sample_type);
    let default = p
        .sample_type
        .iter()
        .position(|vt| !default_name.is_empty() && text(vt.r#type) == default_name)
        .unwrap_or(n - 1);
    std::iter::once(default)
        .chain((0..n).filter(|&i| i != default))
        .collect()
}

fn scope_attributes<'a>(
    p: &Pprof,
    text: &impl Fn(i64) -> &'a str,
    order: &[usize],
) -> Vec<KeyValue> {
    let mut attributes = Vec::new();
    let default_name = text(p.default_sample_type);
    if !default_name.is_empty() {
        attributes.push(crate::otlp::key_value(
            DEFAULT_SAMPLE_TYPE,
            string_value(default_name),
        ));
    }
    if order
        .iter()
        .enumerate()
        .any(|(i, &pprof_index)| i != pprof_index)
    {
        let perm = order.iter().map(|&i| int_value(i as i64)).collect();
        attributes.push(crate::otlp::key_value(SAMPLE_TYPE_ORDER, array_value(perm)));
    }
    attributes
}

fn profile_attributes<'a>(
    p: &Pprof,
    text: &impl Fn(i64) -> &'a str,
    dictionary: &mut DictionaryBuilder,
) -> Vec<i32> {
    let mut attributes = Vec::new();
    if !p.comment.is_empty() {
        let comments = p.comment.iter().map(|&c| string_value(text(c))).collect();
        attributes.push(dictionary.attribute(COMMENT, array_value(comments), ""));
    }
    for (key, index) in [
        (DROP_FRAMES, p.drop_frames),
        (KEEP_FRAMES, p.keep_frames),
        (DOC_URL, p.doc_url),
    ] {
        let value = text(index);
        if !value.is_empty() {
            attributes.push(dictionary.attribute(key, string_value(value), ""));
        }
    }
    attributes
}
