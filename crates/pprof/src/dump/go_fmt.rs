//! The parts of Go's `fmt` and `time` output that the dump reproduces.

/// Go's `time.Unix(0, nanos).String()` in UTC:
/// `2006-01-02 15:04:05.999999999 +0000 UTC`, trailing zeros of the fraction
/// trimmed.
pub(super) fn time_utc(nanos: i64) -> String {
    let seconds = nanos.div_euclid(1_000_000_000);
    let fraction = nanos.rem_euclid(1_000_000_000);
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let year_text = if year < 0 {
        format!("-{:04}", year.unsigned_abs())
    } else {
        format!("{year:04}")
    };
    let mut out = format!(
        "{year_text}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    if fraction != 0 {
        let digits = format!("{fraction:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

/// Gregorian (year, month, day) of a count of days since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(0),
        u32::try_from(day).unwrap_or(0),
    )
}

/// Go's `time.Duration(nanos).String()`, e.g. `4m0.5s`, `1.5µs`, `0s`.
pub(super) fn duration(nanos: i64) -> String {
    let mut magnitude = nanos.unsigned_abs();
    let sign = if nanos < 0 { "-" } else { "" };
    if magnitude == 0 {
        return "0s".to_owned();
    }
    if magnitude < 1_000_000_000 {
        let (precision, unit) = match magnitude {
            m if m < 1_000 => (0, "ns"),
            m if m < 1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let (whole, fraction) = split_fraction(magnitude, precision);
        return format!("{sign}{whole}{fraction}{unit}");
    }
    let (whole_seconds, fraction) = split_fraction(magnitude, 9);
    magnitude = whole_seconds;
    let seconds = magnitude % 60;
    let minutes = magnitude / 60 % 60;
    let hours = magnitude / 3600;
    let mut out = sign.to_owned();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}{fraction}s"));
    out
}

/// Splits `value / 10^precision` into its whole part and its fraction as
/// `.ddd` with trailing zeros trimmed (empty when the fraction is zero).
fn split_fraction(value: u64, precision: u32) -> (u64, String) {
    let scale = 10u64.pow(precision);
    let fraction = value % scale;
    if fraction == 0 {
        return (value / scale, String::new());
    }
    let digits = format!("{fraction:0width$}", width = precision as usize);
    (value / scale, format!(".{}", digits.trim_end_matches('0')))
}

/// Go's `%.N` precision on a string: the first `n` characters.
/// Go's `strings.TrimSpace` on bytes: Unicode white space at both ends,
/// where invalid UTF-8 counts as text.
pub(super) fn trim_space(bytes: &[u8]) -> &[u8] {
    let valid_prefix = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => std::str::from_utf8(bytes.get(..error.valid_up_to()).unwrap_or_default())
            .unwrap_or_default(),
    };
    let leading = valid_prefix.len() - valid_prefix.trim_start().len();
    let bytes = bytes.get(leading..).unwrap_or_default();
    // The last chunk's valid part ends the bytes when it has no invalid
    // part; white space before an invalid byte is not at the end.
    let trailing = match bytes.utf8_chunks().last() {
        Some(chunk) if chunk.invalid().is_empty() => {
            chunk.valid().len() - chunk.valid().trim_end().len()
        }
        _ => 0,
    };
    bytes.get(..bytes.len() - trailing).unwrap_or_default()
}

pub(super) fn truncate_chars(text: &str, n: usize) -> &str {
    text.char_indices()
        .nth(n)
        .map_or(text, |(end, _)| text.get(..end).unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_matches_go_time_string_in_utc() {
        assert_eq!(time_utc(0), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            time_utc(1_666_107_597_086_748_038),
            "2022-10-18 15:39:57.086748038 +0000 UTC"
        );
        assert_eq!(
            time_utc(951_782_400_500_000_000),
            "2000-02-29 00:00:00.5 +0000 UTC"
        );
        assert_eq!(time_utc(-1), "1969-12-31 23:59:59.999999999 +0000 UTC");
    }

    #[test]
    fn duration_matches_go_duration_string() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(999), "999ns");
        assert_eq!(duration(1_500), "1.5µs");
        assert_eq!(duration(1_200_000), "1.2ms");
        assert_eq!(duration(1_000_000_000), "1s");
        assert_eq!(duration(240_123_000_000), "4m0.123s");
        assert_eq!(duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(duration(-90_000_000_000), "-1m30s");
        assert_eq!(truncate_chars(&duration(240_123_000_000), 4), "4m0.");
        assert_eq!(truncate_chars(&duration(1_500), 4), "1.5µ");
        assert_eq!(truncate_chars("1s", 4), "1s");
    }
}
