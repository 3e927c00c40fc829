//! Binary CPU profiles: gperftools' (C++) and the Java agent's.
//!
//! A header of five slots (0, 3, 0 for C++ or 1 for Java, the sampling
//! period in µs, 0), records (count, number of PCs, the PCs), a trailer
//! record (0, 1, 0), then text: the memory map (C++) or the symbols (Java).
//! Slots are 32- or 64-bit, little- or big-endian, tried in that order.

use super::maps::parse_memory_map;
use super::model::LegacyProfile;
use super::scanner::Scanner;
use super::{java, LegacyError};

#[derive(Debug, Clone, Copy)]
struct Slots {
    bytes: usize,
    big_endian: bool,
}

const SLOT_KINDS: [Slots; 4] = [
    Slots {
        bytes: 4,
        big_endian: false,
    },
    Slots {
        bytes: 4,
        big_endian: true,
    },
    Slots {
        bytes: 8,
        big_endian: false,
    },
    Slots {
        bytes: 8,
        big_endian: true,
    },
];

impl Slots {
    fn read(self, data: &[u8], offset: usize) -> Option<u64> {
        let bytes = data.get(offset..offset.checked_add(self.bytes)?)?;
        let fold = |acc: u64, &b: &u8| (acc << 8) | u64::from(b);
        Some(if self.big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        })
    }
}

enum Language {
    Cpp,
    Java,
}

/// Which binary CPU profile `data` starts with, from its header alone.
pub(super) fn recognizes(data: &[u8]) -> Option<super::LegacyKind> {
    SLOT_KINDS.iter().find_map(|&slots| {
        let word = |i: usize| slots.read(data, i * slots.bytes);
        match (word(0)?, word(1)?, word(2)?, word(3)?, word(4)?) {
            (0, 3, 0, period, 0) if period > 0 => Some(super::LegacyKind::GperftoolsCpu),
            (0, 3, 1, period, 0) if period > 0 => Some(super::LegacyKind::JavaCpu),
            _ => None,
        }
    })
}

pub(super) fn parse(data: &[u8]) -> Result<LegacyProfile, LegacyError> {
    let header = SLOT_KINDS.iter().find_map(|&slots| {
        let word = |i: usize| slots.read(data, i * slots.bytes);
        match (word(0)?, word(1)?, word(2)?, word(3)?, word(4)?) {
            (0, 3, 0, period, 0) if period > 0 => Some((slots, period, Language::Cpp)),
            (0, 3, 1, period, 0) if period > 0 => Some((slots, period, Language::Java)),
            _ => None,
        }
    });
    let Some((slots, period_us, language)) = header else {
        return Err(truncated_header(data).unwrap_or(LegacyError::Unrecognized));
    };
    let period = i64::try_from(period_us)
        .unwrap_or(i64::MAX)
        .wrapping_mul(1000);
    let mut profile = LegacyProfile::new(
        &[("samples", "count"), ("cpu", "nanoseconds")],
        ("cpu", "nanoseconds"),
        period,
    );
    let adjust = matches!(language, Language::Cpp);
    let text_start = parse_records(data, slots, 5 * slots.bytes, adjust, &mut profile)?;
    let text = String::from_utf8_lossy(data.get(text_start..).unwrap_or_default());
    match language {
        Language::Cpp => {
            strip_signal_frames(&mut profile);
            parse_memory_map(&mut Scanner::new(&text), &mut profile)?;
            super::remove_duplicated_leaf(&mut profile);
        }
        Language::Java => java::parse_locations(&text, &mut profile)?,
    }
    Ok(profile)
}

/// A file that starts like a header in some slot size but ends inside it.
fn truncated_header(data: &[u8]) -> Option<LegacyError> {
    SLOT_KINDS.iter().find_map(|&slots| {
        let header_len = 5 * slots.bytes;
        let starts_like_header = slots.read(data, 0) == Some(0)
            && slots.read(data, slots.bytes) == Some(3)
            && data.len() < header_len;
        starts_like_header.then(|| LegacyError::Gperftools {
            offset: data.len(),
            problem: format!(
                "header truncated: {header_len} bytes needed for five {}-bit slots, the file has {}",
                slots.bytes * 8,
                data.len()
            ),
        })
    })
}

/// Reads records up to the trailer; returns the offset of the text after it.
fn parse_records(
    data: &[u8],
    slots: Slots,
    mut offset: usize,
    adjust: bool,
    profile: &mut LegacyProfile,
) -> Result<usize, LegacyError> {
    let error = |offset: usize, problem: String| LegacyError::Gperftools { offset, problem };
    loop {
        if offset >= data.len() {
            return Err(error(
                offset,
                "the file ends without the trailer record (0, 1, 0)".to_owned(),
            ));
        }
        let record = offset;
        let (Some(count), Some(pcs)) = (
            slots.read(data, offset),
            slots.read(data, offset + slots.bytes),
        ) else {
            return Err(error(
                record,
                format!(
                    "record truncated: the file ends {} bytes in",
                    data.len() - record
                ),
            ));
        };
        offset += 2 * slots.bytes;
        let available = (data.len() - offset) / slots.bytes;
        let pcs = match usize::try_from(pcs) {
            Ok(pcs) if pcs <= available => pcs,
            _ => {
                return Err(error(
                    record,
                    format!(
                        "record has {pcs} PCs, past the end of the file ({available} slots remain)"
                    ),
                ))
            }
        };
        let addresses: Vec<u64> = (0..pcs)
            .filter_map(|i| slots.read(data, offset + i * slots.bytes))
            .collect();
        offset += pcs * slots.bytes;
        if count == 0 && addresses == [0] {
            return Ok(offset);
        }
        // Return addresses point after the call; step back onto it, except
        // for the leaf, which is where the signal landed.
        let stack = profile.stack(&addresses, |i, address| {
            if adjust && i > 0 {
                address.wrapping_sub(1)
            } else {
                address
            }
        });
        let count = count as i64;
        profile.add_sample(stack, vec![count, count.wrapping_mul(profile.period)]);
    }
}

/// When nearly every sample has the same second frame, it is the signal
/// handler's, not the program's: remove it (at most twice).
fn strip_signal_frames(profile: &mut LegacyProfile) {
    let total = profile.samples.len();
    let margin = total / 32;
    for _ in 0..2 {
        let mut counts: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
        for sample in &profile.samples {
            if let Some(address) = second_frame_address(profile, &sample.locations) {
                *counts.entry(address).or_default() += 1;
            }
        }
        let Some(frame) = counts
            .into_iter()
            .find(|&(_, count)| count >= total - margin)
            .map(|(address, _)| address)
        else {
            continue;
        };
        let locations = &profile.locations;
        for sample in &mut profile.samples {
            let second = sample.locations.get(1).and_then(|&l| locations.get(l));
            if second.is_some_and(|l| l.address == frame) {
                sample.locations.remove(1);
            }
        }
    }
}

fn second_frame_address(profile: &LegacyProfile, stack: &[usize]) -> Option<u64> {
    if stack.len() < 2 {
        return None;
    }
    let &location = stack.get(1)?;
    profile.locations.get(location).map(|l| l.address)
}
