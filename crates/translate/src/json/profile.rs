//! Profiles and their samples.

use serde_json::Value;

use super::path::Path;
use super::read::{key, Fields, Key};
use super::scalar::{i32_from_json, i64_from_json, u64_from_json};
use super::write::Object;
use super::JsonError;
use crate::otlp::{Profile, Sample, ValueType};

const SAMPLE_TYPE: Key = key("sampleType", "sample_type");
const SAMPLES: Key = key("samples", "samples");
const TIME_UNIX_NANO: Key = key("timeUnixNano", "time_unix_nano");
const DURATION_NANO: Key = key("durationNano", "duration_nano");
const PERIOD_TYPE: Key = key("periodType", "period_type");
const PERIOD: Key = key("period", "period");
const PROFILE_ID: Key = key("profileId", "profile_id");
const DROPPED_ATTRIBUTES_COUNT: Key = key("droppedAttributesCount", "dropped_attributes_count");
const ORIGINAL_PAYLOAD_FORMAT: Key = key("originalPayloadFormat", "original_payload_format");
const ORIGINAL_PAYLOAD: Key = key("originalPayload", "original_payload");
const ATTRIBUTE_INDICES: Key = key("attributeIndices", "attribute_indices");
const TYPE_STRINDEX: Key = key("typeStrindex", "type_strindex");
const UNIT_STRINDEX: Key = key("unitStrindex", "unit_strindex");
const STACK_INDEX: Key = key("stackIndex", "stack_index");
const LINK_INDEX: Key = key("linkIndex", "link_index");
const VALUES: Key = key("values", "values");
const TIMESTAMPS_UNIX_NANO: Key = key("timestampsUnixNano", "timestamps_unix_nano");

/// Profile ids are 16 bytes.
const PROFILE_ID_BYTES: usize = 16;

pub(crate) fn profile_to_json(p: &Profile) -> Value {
    Object::new()
        .message(SAMPLE_TYPE, p.sample_type.as_ref(), value_type_to_json)
        .list(SAMPLES, &p.samples, sample_to_json)
        .int64(TIME_UNIX_NANO, p.time_unix_nano)
        .int64(DURATION_NANO, p.duration_nano)
        .message(PERIOD_TYPE, p.period_type.as_ref(), value_type_to_json)
        .int64(PERIOD, p.period)
        .hex(PROFILE_ID, &p.profile_id)
        .number(DROPPED_ATTRIBUTES_COUNT, p.dropped_attributes_count)
        .string(ORIGINAL_PAYLOAD_FORMAT, &p.original_payload_format)
        .base64(ORIGINAL_PAYLOAD, &p.original_payload)
        .numbers(ATTRIBUTE_INDICES, &p.attribute_indices)
        .finish()
}

pub(crate) fn profile_from_json(value: &Value, at: Path<'_>) -> Result<Profile, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Profile {
        sample_type: fields.message(SAMPLE_TYPE, value_type_from_json)?,
        samples: fields.list(SAMPLES, sample_from_json)?,
        time_unix_nano: fields.u64(TIME_UNIX_NANO)?,
        duration_nano: fields.u64(DURATION_NANO)?,
        period_type: fields.message(PERIOD_TYPE, value_type_from_json)?,
        period: fields.i64(PERIOD)?,
        profile_id: fields.hex_id(PROFILE_ID, PROFILE_ID_BYTES)?,
        dropped_attributes_count: fields.u32(DROPPED_ATTRIBUTES_COUNT)?,
        original_payload_format: fields.string(ORIGINAL_PAYLOAD_FORMAT)?,
        original_payload: fields.base64(ORIGINAL_PAYLOAD)?,
        attribute_indices: fields.scalars(ATTRIBUTE_INDICES, i32_from_json)?,
    })
}

fn value_type_to_json(v: &ValueType) -> Value {
    Object::new()
        .number(TYPE_STRINDEX, v.type_strindex)
        .number(UNIT_STRINDEX, v.unit_strindex)
        .finish()
}

fn value_type_from_json(value: &Value, at: Path<'_>) -> Result<ValueType, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(ValueType {
        type_strindex: fields.i32(TYPE_STRINDEX)?,
        unit_strindex: fields.i32(UNIT_STRINDEX)?,
    })
}

fn sample_to_json(s: &Sample) -> Value {
    Object::new()
        .number(STACK_INDEX, s.stack_index)
        .numbers(ATTRIBUTE_INDICES, &s.attribute_indices)
        .number(LINK_INDEX, s.link_index)
        .int64s(VALUES, &s.values)
        .int64s(TIMESTAMPS_UNIX_NANO, &s.timestamps_unix_nano)
        .finish()
}

fn sample_from_json(value: &Value, at: Path<'_>) -> Result<Sample, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Sample {
        stack_index: fields.i32(STACK_INDEX)?,
        attribute_indices: fields.scalars(ATTRIBUTE_INDICES, i32_from_json)?,
        link_index: fields.i32(LINK_INDEX)?,
        values: fields.scalars(VALUES, i64_from_json)?,
        timestamps_unix_nano: fields.scalars(TIMESTAMPS_UNIX_NANO, u64_from_json)?,
    })
}
