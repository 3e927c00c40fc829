//! Facts about this process: resident memory and uptime.

/// Resident set size in bytes from `/proc/self/statm`; 0 where that is
/// not available.
pub fn resident_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse::<u64>().ok())
        .unwrap_or(0);
    pages.saturating_mul(page_size())
}

/// The page size from the auxiliary vector (`AT_PAGESZ`), else 4 KiB.
fn page_size() -> u64 {
    const AT_PAGESZ: u64 = 6;
    const WORD: usize = std::mem::size_of::<usize>();
    let Ok(auxv) = std::fs::read("/proc/self/auxv") else {
        return 4096;
    };
    let word = |bytes: &[u8]| -> Option<u64> {
        let bytes: [u8; WORD] = bytes.try_into().ok()?;
        u64::try_from(usize::from_ne_bytes(bytes)).ok()
    };
    auxv.chunks_exact(2 * WORD)
        .find_map(|entry| {
            let (key, value) = entry.split_at(WORD);
            (word(key)? == AT_PAGESZ).then(|| word(value)).flatten()
        })
        .filter(|size| *size > 0)
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_has_resident_memory_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes() > 0);
            assert!(page_size().is_power_of_two());
        }
    }
}
