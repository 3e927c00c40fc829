//! The acknowledgement log beside each segment: one entry per record that
//! was exported or dead-lettered, `offset (u64 LE) | crc32 of it (u32 LE)`.
//! Entries are appended without fsync: an acknowledgement lost in a crash
//! only means the record is exported again.

pub const ENTRY_BYTES: usize = 12;

pub fn entry(offset: u64) -> [u8; ENTRY_BYTES] {
    let offset_bytes = offset.to_le_bytes();
    let crc = crc32fast::hash(&offset_bytes).to_le_bytes();
    let mut entry = [0_u8; ENTRY_BYTES];
    for (slot, byte) in entry.iter_mut().zip(offset_bytes.iter().chain(&crc)) {
        *slot = *byte;
    }
    entry
}

/// The offsets acknowledged, and how many bytes at the end or in bad
/// entries were ignored.
pub fn parse(bytes: &[u8]) -> (Vec<u64>, usize) {
    let mut offsets = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
    let mut ignored = bytes.len() % ENTRY_BYTES;
    for chunk in bytes.chunks_exact(ENTRY_BYTES) {
        let Some((offset_bytes, crc_bytes)) = chunk.split_first_chunk::<8>() else {
            continue;
        };
        let crc = <[u8; 4]>::try_from(crc_bytes).ok().map(u32::from_le_bytes);
        if crc == Some(crc32fast::hash(offset_bytes)) {
            offsets.push(u64::from_le_bytes(*offset_bytes));
        } else {
            ignored += ENTRY_BYTES;
        }
    }
    (offsets, ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_and_damage_is_ignored() {
        let mut log: Vec<u8> = [0_u64, 77, 1 << 40]
            .iter()
            .flat_map(|o| entry(*o))
            .collect();
        assert_eq!(parse(&log), (vec![0, 77, 1 << 40], 0));
        log[13] ^= 1;
        log.extend_from_slice(&entry(5)[..7]);
        assert_eq!(parse(&log), (vec![0, 1 << 40], ENTRY_BYTES + 7));
    }
}
