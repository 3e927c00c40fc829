//! Recording settings that change how samples are weighed.

/// The sampling interval a setting value states, in nanoseconds: the
/// JDK's `"10 ms"` (a number and a unit), or async-profiler's
/// `interval` in plain nanoseconds. `None` for other values
/// (`"beginChunk"`, `"0"`...).
pub(crate) fn interval_nanos(value: &str) -> Option<i64> {
    let value = value.trim();
    let (number, unit) = match value.split_once(' ') {
        Some((number, unit)) => (number, unit.trim()),
        None => (value, "ns"),
    };
    let number: i64 = number.parse().ok()?;
    let scale: i64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|nanos| *nanos > 0)
}

/// Ticks (the chunk's clock) to nanoseconds.
pub(crate) fn ticks_to_nanos(ticks: i64, ticks_per_second: i64) -> i64 {
    if ticks_per_second <= 0 || ticks_per_second == 1_000_000_000 {
        return ticks;
    }
    let nanos = i128::from(ticks) * 1_000_000_000 / i128::from(ticks_per_second);
    i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_in_jdk_and_async_profiler_notation() {
        assert_eq!(interval_nanos("10 ms"), Some(10_000_000));
        assert_eq!(interval_nanos("20 ms"), Some(20_000_000));
        assert_eq!(interval_nanos("1 s"), Some(1_000_000_000));
        assert_eq!(interval_nanos("10000000"), Some(10_000_000));
        assert_eq!(interval_nanos("0"), None);
        assert_eq!(interval_nanos("beginChunk"), None);
        assert_eq!(interval_nanos("10 fortnights"), None);
    }

    #[test]
    fn ticks_become_nanoseconds() {
        assert_eq!(ticks_to_nanos(5, 1_000_000_000), 5);
        assert_eq!(ticks_to_nanos(2_800_000_000, 2_800_000_000), 1_000_000_000);
        assert_eq!(ticks_to_nanos(i64::MAX, 1), i64::MAX);
    }
}
