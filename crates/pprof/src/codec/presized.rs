//! An empty profile whose tables have room for what the encoding holds,
//! counted from its top-level fields before prost decodes it: grown by
//! doubling instead, the samples and locations of a large profile are
//! copied at every step and the pages of every copy touched.

use crate::Profile;

/// A default profile with its repeated messages reserved; a default one
/// when the bytes do not scan (prost then says what is wrong with them).
pub(super) fn profile_for(bytes: &[u8]) -> Profile {
    let mut profile = Profile::default();
    if let Some(counts) = count_tables(bytes) {
        profile.sample_type.reserve_exact(counts.sample_types);
        profile.sample.reserve_exact(counts.samples);
        profile.mapping.reserve_exact(counts.mappings);
        profile.location.reserve_exact(counts.locations);
        profile.function.reserve_exact(counts.functions);
        profile.string_table.reserve_exact(counts.strings);
    }
    profile
}

/// How many entries each repeated message field of a profile has.
pub(super) struct TableCounts {
    pub sample_types: usize,
    pub samples: usize,
    pub mappings: usize,
    pub locations: usize,
    pub functions: usize,
    pub strings: usize,
}

/// The entries of fields 1 to 6 of profile.proto's Profile; `None` when
/// the bytes do not scan.
pub(super) fn count_tables(bytes: &[u8]) -> Option<TableCounts> {
    let [_, sample_types, samples, mappings, locations, functions, strings] = count_fields(bytes)?;
    Some(TableCounts {
        sample_types,
        samples,
        mappings,
        locations,
        functions,
        strings,
    })
}

/// How many times each of fields 0 to 6 occurs at the top level.
fn count_fields(mut bytes: &[u8]) -> Option<[usize; 7]> {
    let mut counts = [0; 7];
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let (field, wire_type) = (key >> 3, key & 7);
        let skip = match wire_type {
            0 => varint(&mut bytes).map(|_| 0)?,
            1 => 8,
            2 => usize::try_from(varint(&mut bytes)?).ok()?,
            5 => 4,
            _ => return None,
        };
        bytes = bytes.get(skip..)?;
        if let Some(count) = usize::try_from(field).ok().and_then(|f| counts.get_mut(f)) {
            *count += 1;
        }
    }
    Some(counts)
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::{Location, Sample};

    #[test]
    fn counts_every_table_and_decodes_the_same() {
        let profile = Profile {
            sample: vec![Sample::default(); 5],
            location: vec![Location::default(); 3],
            string_table: vec![String::new(), "a".to_owned()],
            duration_nanos: 7,
            period: 3,
            ..Profile::default()
        };
        let bytes = profile.encode_to_vec();
        let presized = profile_for(&bytes);
        assert!(presized.sample.capacity() >= 5);
        assert!(presized.location.capacity() >= 3);
        assert!(presized.string_table.capacity() >= 2);
        let mut decoded = presized;
        decoded.merge(bytes.as_slice()).unwrap();
        assert_eq!(decoded, profile);
    }

    #[test]
    fn bytes_that_do_not_scan_give_an_empty_profile() {
        for bytes in [&[0x12, 0x05, 0x00][..], &[0x0f], &[0x80]] {
            assert_eq!(count_fields(bytes), None);
            assert_eq!(profile_for(bytes), Profile::default());
        }
    }
}
