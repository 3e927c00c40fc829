//! A profile and its samples.

use super::wire::{field_counts, fields, int32, int64, uint32};
use super::{emptied, set_once, Fast, Refill};
use crate::otlp::{Profile, Sample, ValueType};

/// Decodes into `profile`, reusing its samples' memory.
pub(super) fn profile(message: &[u8], profile: &mut Profile) -> Fast<()> {
    let [_, _, samples] = field_counts(message)?;
    *profile = Profile {
        samples: std::mem::take(&mut profile.samples),
        attribute_indices: emptied(&mut profile.attribute_indices),
        ..Profile::default()
    };
    let mut kept_samples = Refill::new(&mut profile.samples, samples);
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => set_once(&mut profile.sample_type, value_type(field.bytes()?)?)?,
            2 => sample(field.bytes()?, kept_samples.next()?)?,
            3 => profile.time_unix_nano = field.fixed64()?,
            4 => profile.duration_nano = field.varint()?,
            5 => set_once(&mut profile.period_type, value_type(field.bytes()?)?)?,
            6 => profile.period = int64(field.varint()?),
            7 => profile.profile_id = field.bytes()?.to_vec(),
            8 => profile.dropped_attributes_count = uint32(field.varint()?),
            9 => profile.original_payload_format = field.string()?,
            10 => profile.original_payload = field.bytes()?.to_vec(),
            11 => field.append_int32s(&mut profile.attribute_indices)?,
            _ => {}
        }
    }
    Ok(())
}

fn value_type(message: &[u8]) -> Fast<ValueType> {
    let mut value_type = ValueType::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => value_type.type_strindex = int32(field.varint()?),
            2 => value_type.unit_strindex = int32(field.varint()?),
            _ => {}
        }
    }
    Ok(value_type)
}

fn sample(message: &[u8], sample: &mut Sample) -> Fast<()> {
    *sample = Sample {
        attribute_indices: emptied(&mut sample.attribute_indices),
        values: emptied(&mut sample.values),
        timestamps_unix_nano: emptied(&mut sample.timestamps_unix_nano),
        ..Sample::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => sample.stack_index = int32(field.varint()?),
            2 => field.append_int32s(&mut sample.attribute_indices)?,
            3 => sample.link_index = int32(field.varint()?),
            4 => field.append_int64s(&mut sample.values)?,
            5 => field.append_fixed64s(&mut sample.timestamps_unix_nano)?,
            _ => {}
        }
    }
    Ok(())
}
