//! Facts about this process: resident memory and CPU time.

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

/// User and system CPU time in seconds, from `/proc/self/stat`; 0 where
/// that is not available.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name, in parentheses, may hold spaces: count fields
    // after its closing parenthesis, where field 3 (the state) begins.
    let Some((_, fields)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let ticks: u64 = fields
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse::<u64>().ok())
        .sum();
    ticks as f64 / clock_ticks_per_second() as f64
}

/// The page size from the auxiliary vector (`AT_PAGESZ`), else 4 KiB.
fn page_size() -> u64 {
    const AT_PAGESZ: u64 = 6;
    auxiliary_value(AT_PAGESZ).unwrap_or(4096)
}

/// Clock ticks per second (`AT_CLKTCK`), else the usual 100.
fn clock_ticks_per_second() -> u64 {
    const AT_CLKTCK: u64 = 17;
    auxiliary_value(AT_CLKTCK).unwrap_or(100)
}

/// A non-zero entry of the auxiliary vector.
fn auxiliary_value(wanted: u64) -> Option<u64> {
    const WORD: usize = std::mem::size_of::<usize>();
    let auxv = std::fs::read("/proc/self/auxv").ok()?;
    let word = |bytes: &[u8]| -> Option<u64> {
        let bytes: [u8; WORD] = bytes.try_into().ok()?;
        u64::try_from(usize::from_ne_bytes(bytes)).ok()
    };
    auxv.chunks_exact(2 * WORD)
        .find_map(|entry| {
            let (key, value) = entry.split_at(WORD);
            (word(key)? == wanted).then(|| word(value)).flatten()
        })
        .filter(|value| *value > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_has_resident_memory_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes() > 0);
            assert!(page_size().is_power_of_two());
            assert!(clock_ticks_per_second() > 0);
        }
    }

    #[test]
    fn cpu_time_grows_while_the_process_works() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let before = cpu_seconds();
        // Reading /proc is the work: each read costs system time.
        let grew = (0..1_000_000).any(|_| cpu_seconds() > before);
        assert!(grew, "CPU time stayed at {before} s");
    }
}
