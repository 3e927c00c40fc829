//! Durations (`5s`, `250ms`, `1m30s`) and sizes (`20MiB`, `512KB`, `1048576`)
//! as configuration values.

use serde::{Deserialize, Deserializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const fn from_secs(secs: u64) -> Self {
        Self(std::time::Duration::from_secs(secs))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// A text that is not a duration; each names the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("an empty duration")]
    Empty,
    #[error("{0:?} is not a duration (like 5s, 250ms, 1m30s)")]
    NotADuration(String),
    #[error("{text:?} has unit {unit:?}; use ns, us, ms, s, m or h")]
    UnknownUnit { text: String, unit: String },
    #[error("{0:?} is out of range")]
    OutOfRange(String),
}

/// A text that is not a size; each names the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?} is not a size (like 20MiB, 512KB or 1048576)")]
    NotASize(String),
    #[error("{text:?} has unit {unit:?}; use B, KB, MB, GB, KiB, MiB or GiB")]
    UnknownUnit { text: String, unit: String },
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Parses `1h2m3s4ms`-style durations; units ns, us, µs, ms, s, m, h.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let mut total = std::time::Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let value: f64 = number
            .parse()
            .map_err(|_| DurationError::NotADuration(text.to_owned()))?;
        let seconds_per_unit = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(DurationError::UnknownUnit {
                    text: text.to_owned(),
                    unit: unit.to_owned(),
                })
            }
        };
        total += std::time::Duration::try_from_secs_f64(value * seconds_per_unit)
            .map_err(|_| DurationError::OutOfRange(text.to_owned()))?;
        rest = next;
    }
    Ok(total)
}

/// Parses sizes: a byte count, or a number with B, KB, MB, GB (powers of
/// 1000) or KiB, MiB, GiB (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| SizeError::NotASize(text.to_owned()))?;
    let multiplier: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(SizeError::UnknownUnit {
                text: text.to_owned(),
                unit: other.to_owned(),
            })
        }
    };
    number
        .checked_mul(multiplier)
        .ok_or_else(|| SizeError::TooLarge(text.to_owned()))
}

/// A number or a text, for options that take either; anything else gets
/// a message saying what was expected.
enum NumberOrText {
    Number(u64),
    Text(String),
}

struct NumberOrTextVisitor(&'static str);

impl serde::de::Visitor<'_> for NumberOrTextVisitor {
    type Value = NumberOrText;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(NumberOrText::Number(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        u64::try_from(v)
            .map(NumberOrText::Number)
            .map_err(|_| E::custom(format!("{v} is negative; expected {}", self.0)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(NumberOrText::Text(v.to_owned()))
    }
}

fn number_or_text<'de, D: Deserializer<'de>>(
    deserializer: D,
    expecting: &'static str,
) -> Result<NumberOrText, D::Error> {
    deserializer.deserialize_any(NumberOrTextVisitor(expecting))
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match number_or_text(deserializer, "a duration like 5s, 250ms or 1m30s")? {
            NumberOrText::Number(0) => Ok(Self(std::time::Duration::ZERO)),
            NumberOrText::Number(n) => Err(serde::de::Error::custom(format!(
                "{n} has no unit; write a duration like {n}s or {n}ms"
            ))),
            NumberOrText::Text(text) => parse_duration(&text)
                .map(Self)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match number_or_text(deserializer, "a size like 20MiB, 512KB or 1048576")? {
            NumberOrText::Number(n) => Ok(Self(n)),
            NumberOrText::Text(text) => parse_size(&text)
                .map(Self)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_parse_or_explain() {
        assert_eq!(
            parse_duration("1m30s"),
            Ok(std::time::Duration::from_secs(90))
        );
        assert_eq!(
            parse_duration("250ms"),
            Ok(std::time::Duration::from_millis(250))
        );
        assert!(parse_duration("5 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unit"));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_size("20MiB"), Ok(20 << 20));
        assert_eq!(parse_size("512KB"), Ok(512_000));
        assert_eq!(parse_size("1048576"), Ok(1_048_576));
        assert!(parse_size("20 apples")
            .unwrap_err()
            .to_string()
            .contains("unit"));
    }
}
