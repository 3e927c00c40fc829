//! The `{time}` placeholder: UTC as `YYYYMMDDTHHMMSS.mmmZ`.

use std::time::{SystemTime, UNIX_EPOCH};

const SECONDS_PER_DAY: u64 = 86_400;

/// `time` in UTC with milliseconds, e.g. `20261121T061500.123Z`; a time
/// before 1970 is written as 1970.
pub fn utc_timestamp(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (year, month, day) = civil_from_days(seconds / SECONDS_PER_DAY);
    let of_day = seconds % SECONDS_PER_DAY;
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        since_epoch.subsec_millis()
    )
}

/// `time` in UTC as RFC 3339 with as many fraction digits as needed
/// (none for a whole second), e.g. `2026-11-21T06:15:00.5Z`: how Go
/// writes a UTC time in JSON.
pub fn rfc3339(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (year, month, day) = civil_from_days(seconds / SECONDS_PER_DAY);
    let of_day = seconds % SECONDS_PER_DAY;
    let fraction = format!("{:09}", since_epoch.subsec_nanos());
    let fraction = fraction.trim_end_matches('0');
    let dot = if fraction.is_empty() { "" } else { "." };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{dot}{fraction}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
    )
}

/// (year, month, day) of the day `days` after 1970-01-01, by Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468; // days since 0000-03-01
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_based_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_based_month + 2) / 5 + 1;
    let month = if march_based_month < 10 {
        march_based_month + 3
    } else {
        march_based_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(seconds: u64, millis: u64) -> String {
        utc_timestamp(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
    }

    #[test]
    fn rfc3339_trims_the_fraction_like_go() {
        let at = |seconds: u64, nanos: u32| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_nanos(nanos.into()))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_795_241_700, 500_000_000), "2026-11-21T06:15:00.5Z");
        assert_eq!(
            at(951_868_799, 123_456_789),
            "2000-02-29T23:59:59.123456789Z"
        );
    }

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(at(0, 0), "19700101T000000.000Z");
        assert_eq!(at(1_795_241_700, 123), "20261121T061500.123Z");
        assert_eq!(at(951_868_799, 999), "20000229T235959.999Z");
        assert_eq!(
            utc_timestamp(UNIX_EPOCH - Duration::from_secs(5)),
            "19700101T000000.000Z"
        );
    }
}
