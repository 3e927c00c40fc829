//! Durations as text, as Go writes them.

use std::time::Duration;

/// A duration as Go's `time.Duration.String` writes it: `1h2m3.5s`,
/// `4.25s`, `150ms`, `0s`.
pub fn go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let seconds = duration.as_secs();
    let (hours, minutes) = (seconds / 3600, seconds % 3600 / 60);
    let rest = fraction(
        u128::from(seconds % 60) * 1_000_000_000 + u128::from(duration.subsec_nanos()),
        1_000_000_000,
    );
    match (hours, minutes) {
        (0, 0) => format!("{rest}s"),
        (0, _) => format!("{minutes}m{rest}s"),
        _ => format!("{hours}h{minutes}m{rest}s"),
    }
}

/// `value / unit` in decimal, without trailing zeros.
fn fraction(value: u128, unit: u128) -> String {
    let whole = value / unit;
    let digits = unit.ilog10() as usize;
    let part = format!("{:0digits$}", value % unit);
    let part = part.trim_end_matches('0');
    if part.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{part}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(45), "45ns"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_nanos(123_000), "123µs"),
            (Duration::from_millis(4250), "4.25s"),
            (Duration::from_secs(62), "1m2s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(3_723_500), "1h2m3.5s"),
        ];
        for (duration, written) in cases {
            assert_eq!(go_duration(duration), written);
        }
    }
}
