//! A profile and its samples.

use super::field;
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
            field::profile::SAMPLE_TYPE => {
                set_once(&mut profile.sample_type, value_type(field.bytes()?)?)?
            }
            field::profile::SAMPLES => sample(field.bytes()?, kept_samples.next()?)?,
            field::profile::TIME_UNIX_NANO => profile.time_unix_nano = field.fixed64()?,
            field::profile::DURATION_NANO => profile.duration_nano = field.varint()?,
            field::profile::PERIOD_TYPE => {
                set_once(&mut profile.period_type, value_type(field.bytes()?)?)?
            }
            field::profile::PERIOD => profile.period = int64(field.varint()?),
            field::profile::PROFILE_ID => profile.profile_id = field.bytes()?.to_vec(),
            field::profile::DROPPED_ATTRIBUTES_COUNT => {
                profile.dropped_attributes_count = uint32(field.varint()?)
            }
            field::profile::ORIGINAL_PAYLOAD_FORMAT => {
                profile.original_payload_format = field.string()?
            }
            field::profile::ORIGINAL_PAYLOAD => profile.original_payload = field.bytes()?.to_vec(),
            field::profile::ATTRIBUTE_INDICES => {
                field.append_int32s(&mut profile.attribute_indices)?
            }
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
            field::value_type::TYPE_STRINDEX => value_type.type_strindex = int32(field.varint()?),
            field::value_type::UNIT_STRINDEX => value_type.unit_strindex = int32(field.varint()?),
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
            field::sample::STACK_INDEX => sample.stack_index = int32(field.varint()?),
            field::sample::ATTRIBUTE_INDICES => {
                field.append_int32s(&mut sample.attribute_indices)?
            }
            field::sample::LINK_INDEX => sample.link_index = int32(field.varint()?),
            field::sample::VALUES => field.append_int64s(&mut sample.values)?,
            field::sample::TIMESTAMPS_UNIX_NANO => {
                field.append_fixed64s(&mut sample.timestamps_unix_nano)?
            }
            _ => {}
        }
    }
    Ok(())
}
