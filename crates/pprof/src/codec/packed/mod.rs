//! A decoded profile whose samples stay in the protobuf they were read
//! from: prost decodes every table (through `ProfileSampleBytes`, the
//! schema's `Profile` with `sample` read as bytes, which shares the input
//! buffer), and each sample is decoded by prost again, into one reused
//! [`Sample`], whenever it is read. A large profile's samples are most of
//! its decoded size (a `Vec` of location ids, values and labels each), so
//! this holds a profile in about the size of its protobuf plus its tables
//! (docs/benchmarks.md, "Where convert's memory goes").

mod source;

use std::cell::Cell;

use prost::bytes::Bytes;
use prost::Message;

use super::{presized, DecodeError, DecodeOptions, RawStrings};
use crate::proto::ProfileSampleBytes;
use crate::validate::validate_source;
use crate::{Profile, Sample};
pub use source::SampleSource;

/// A profile whose samples are decoded as they are read.
#[derive(Debug, Clone, Default)]
pub struct PackedProfile {
    /// Every field but `sample`; or every field, samples too, for a
    /// profile that was not decoded here (or not by the fast path).
    tables: Profile,
    /// Each sample's message, slices of the protobuf's buffer.
    samples: Vec<Bytes>,
    validated: bool,
}

impl PackedProfile {
    /// A decoded profile as it is; [`crate::validate`] still checks it
    /// where the readers of a source validate.
    pub fn from_profile(profile: Profile) -> Self {
        Self {
            tables: profile,
            ..Self::default()
        }
    }

    /// The profile with every sample decoded.
    pub fn into_profile(self) -> Profile {
        let mut profile = self.tables;
        if !self.samples.is_empty() {
            profile.sample = self
                .samples
                .iter()
                .map(|bytes| decode_again(bytes.as_ref()))
                .collect();
        }
        profile
    }

    /// The protobuf bytes of each sample, when they are kept (the profile
    /// was decoded here), else nothing.
    pub fn sample_bytes(&self) -> &[Bytes] {
        &self.samples
    }
}

impl From<Profile> for PackedProfile {
    fn from(profile: Profile) -> Self {
        Self::from_profile(profile)
    }
}

impl SampleSource for PackedProfile {
    fn tables(&self) -> &Profile {
        &self.tables
    }

    fn sample_count(&self) -> usize {
        self.samples.len() + self.tables.sample.len()
    }

    fn try_for_each_sample<E>(
        &self,
        mut visit: impl FnMut(usize, &Sample) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.samples.is_empty() {
            return self.tables.try_for_each_sample(visit);
        }
        let mut scratch = Sample::default();
        for (index, bytes) in self.samples.iter().enumerate() {
            scratch.clear();
            // These bytes decoded when the profile was made; prost decodes
            // the same bytes the same way.
            if scratch.merge(bytes.as_ref()).is_err() {
                scratch.clear();
            }
            visit(index, &scratch)?;
        }
        Ok(())
    }

    fn validated(&self) -> bool {
        self.validated
    }
}

/// Room for `profile`'s encoding: its tables' prost length, and each
/// sample's bytes with [`SAMPLE_SLACK`] more, so that a profile written as
/// Go writes it is written without growing the buffer (pages reserved and
/// never written are never touched).
pub(super) fn encoded_len_hint(profile: &PackedProfile) -> usize {
    let samples: usize = profile
        .samples
        .iter()
        .map(|bytes| {
            let len = bytes.len() + SAMPLE_SLACK;
            1 + prost::encoding::encoded_len_varint(len as u64) + len
        })
        .sum();
    profile.tables.encoded_len() + samples
}

/// How much longer than its input a sample may re-encode: Go writes a
/// repeated field of one element unpacked, a byte shorter than packed,
/// and a sample has two such fields.
const SAMPLE_SLACK: usize = 2;

/// A sample's bytes decoded once more (they decoded when the profile was
/// made); an empty sample if prost ever refused them.
fn decode_again(bytes: &[u8]) -> Sample {
    Sample::decode(bytes).unwrap_or_default()
}

/// [`crate::decode_keeping_raw`] into a [`PackedProfile`]: gzipped or raw
/// protobuf, within the limits, validated. `input` is shared, not copied,
/// when it is not gzipped.
pub fn decode_packed_keeping_raw(
    input: Bytes,
    options: &DecodeOptions,
) -> Result<(PackedProfile, RawStrings), DecodeError> {
    if input.is_empty() {
        return Err(DecodeError::Empty);
    }
    if input.len() > options.max_input_bytes {
        return Err(DecodeError::InputTooLarge {
            size: input.len(),
            limit: options.max_input_bytes,
        });
    }
    let protobuf = if super::is_gzip(&input) {
        Bytes::from(super::gunzip(&input, options)?)
    } else {
        input
    };
    decode_packed_protobuf(protobuf)
}

/// [`decode_packed_keeping_raw`] of protobuf already taken out of gzip
/// within the limits.
pub fn decode_packed_gunzipped(
    protobuf: Bytes,
) -> Result<(PackedProfile, RawStrings), DecodeError> {
    decode_packed_protobuf(protobuf)
}

fn decode_packed_protobuf(protobuf: Bytes) -> Result<(PackedProfile, RawStrings), DecodeError> {
    if let Some(mut profile) = decode_tables(&protobuf) {
        // Validation reads every sample (when it finds nothing wrong), so
        // it also finds whether prost takes each one.
        let checking = Checking::new(&profile);
        let validated = validate_source(&checking);
        let every_sample_decodes = !checking.undecodable.get()
            && (validated.is_ok() || profile.samples.iter().all(|bytes| decodes(bytes)));
        if every_sample_decodes {
            validated?;
            profile.validated = true;
            return Ok((profile, RawStrings::default()));
        }
    }
    // prost refused the bytes (or a sample in them): the eager path says
    // why, or reads strings that are not UTF-8 lossily.
    let (profile, raw) = super::decode_protobuf(&protobuf)?;
    let mut profile = PackedProfile::from_profile(profile);
    validate_source(&profile)?;
    profile.validated = true;
    Ok((profile, raw))
}

fn decodes(bytes: &[u8]) -> bool {
    Sample::decode(bytes).is_ok()
}

/// A packed profile read by validation before it is known that prost
/// takes every sample: one it refuses is read as an empty sample, and
/// noted.
struct Checking<'a> {
    profile: &'a PackedProfile,
    undecodable: Cell<bool>,
}

impl<'a> Checking<'a> {
    fn new(profile: &'a PackedProfile) -> Self {
        Self {
            profile,
            undecodable: Cell::new(false),
        }
    }
}

impl SampleSource for Checking<'_> {
    fn tables(&self) -> &Profile {
        &self.profile.tables
    }

    fn sample_count(&self) -> usize {
        self.profile.sample_count()
    }

    fn try_for_each_sample<E>(
        &self,
        mut visit: impl FnMut(usize, &Sample) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut scratch = Sample::default();
        for (index, bytes) in self.profile.samples.iter().enumerate() {
            scratch.clear();
            if scratch.merge(bytes.as_ref()).is_err() {
                self.undecodable.set(true);
                scratch.clear();
            }
            visit(index, &scratch)?;
        }
        Ok(())
    }
}

/// The tables, and each sample's bytes (not yet decoded); `None` where
/// prost refuses the tables.
fn decode_tables(protobuf: &Bytes) -> Option<PackedProfile> {
    let mut decoded = ProfileSampleBytes::default();
    if let Some(counts) = presized::count_tables(protobuf) {
        decoded.sample_type.reserve_exact(counts.sample_types);
        decoded.sample.reserve_exact(counts.samples);
        decoded.mapping.reserve_exact(counts.mappings);
        decoded.location.reserve_exact(counts.locations);
        decoded.function.reserve_exact(counts.functions);
        decoded.string_table.reserve_exact(counts.strings);
    }
    decoded.merge(protobuf.clone()).ok()?;
    let ProfileSampleBytes {
        sample_type,
        sample,
        mapping,
        location,
        function,
        string_table,
        drop_frames,
        keep_frames,
        time_nanos,
        duration_nanos,
        period_type,
        period,
        comment,
        default_sample_type,
        doc_url,
    } = decoded;
    let tables = Profile {
        sample_type,
        sample: Vec::new(),
        mapping,
        location,
        function,
        string_table,
        drop_frames,
        keep_frames,
        time_nanos,
        duration_nanos,
        period_type,
        period,
        comment,
        default_sample_type,
        doc_url,
    };
    Some(PackedProfile {
        tables,
        samples: sample,
        validated: false,
    })
}
