//! Line scanning and number parsing with the semantics of Go's
//! bufio.Scanner and strconv that google/pprof's legacy parsers rely on.

/// Lines split on `\n` with a trailing `\r` dropped; after the last line,
/// `text()` is empty, as bufio.Scanner's is.
pub(super) struct Scanner<'a> {
    rest: &'a str,
    current: &'a str,
    line_number: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            rest: text,
            current: "",
            line_number: 0,
        }
    }

    pub fn scan(&mut self) -> bool {
        if self.rest.is_empty() {
            self.current = "";
            return false;
        }
        let (line, rest) = self.rest.split_once('\n').unwrap_or((self.rest, ""));
        self.rest = rest;
        self.current = line.strip_suffix('\r').unwrap_or(line);
        self.line_number += 1;
        true
    }

    pub fn text(&self) -> &'a str {
        self.current
    }

    /// 1-based number of the current line.
    pub fn line_number(&self) -> usize {
        self.line_number
    }
}

pub(super) fn is_space_or_comment(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

pub(super) fn is_memory_map_sentinel(line: &str) -> bool {
    line.contains("--- Memory map: ---") || line.contains("MAPPED_LIBRARIES:")
}

/// A `0x…` address with more than 64 bits; `.0` is its digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse as hex 64-bit number: 0x{0}")]
pub(super) struct HexOverflow(String);

/// Every `0x[0-9a-f]+` in `text`, as numbers; `Err` names one that overflows.
pub(super) fn hex_addresses(text: &str) -> Result<Vec<u64>, HexOverflow> {
    let bytes = text.as_bytes();
    let mut addresses = Vec::new();
    let mut i = 0;
    while let Some(found) = text.get(i..).and_then(|rest| rest.find("0x")) {
        let digits_start = i + found + 2;
        let digits = bytes
            .get(digits_start..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .count();
        if digits == 0 {
            i += found + 1;
            continue;
        }
        let end = digits_start + digits;
        let hex = text.get(digits_start..end).unwrap_or_default();
        let address = u64::from_str_radix(hex, 16).map_err(|_| HexOverflow(hex.to_owned()))?;
        addresses.push(address);
        i = end;
    }
    Ok(addresses)
}

/// Go's `strconv.ParseInt(text, 0, 64)`: optional sign, then a `0x`, `0o`,
/// `0b` or `0` (octal) prefix, or decimal.
pub(super) fn parse_int_auto(text: &str) -> Option<i64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex)
    } else if let Some(octal) = lower.strip_prefix("0o") {
        (8, octal)
    } else if let Some(binary) = lower.strip_prefix("0b") {
        (2, binary)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower.get(1..)?)
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseInt(text, 10, 64)`.
pub(super) fn parse_decimal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanner_splits_lines_like_bufio() {
        let mut s = Scanner::new("a\r\nb\n\nc");
        let mut lines = Vec::new();
        while s.scan() {
            lines.push((s.line_number(), s.text()));
        }
        assert_eq!(lines, [(1, "a"), (2, "b"), (3, ""), (4, "c")]);
        assert_eq!(s.text(), "");
        let mut s = Scanner::new("x\n");
        assert!(s.scan());
        assert!(!s.scan());
    }

    #[test]
    fn hex_addresses_are_found_and_overflow_is_named() {
        assert_eq!(
            hex_addresses("@ 0x10 0xfF 0x 0x0a"),
            Ok(vec![0x10, 0xf, 0xa])
        );
        assert_eq!(
            hex_addresses("0x11112222333344445").map_err(|e| e.to_string()),
            Err("failed to parse as hex 64-bit number: 0x11112222333344445".to_owned())
        );
    }

    #[test]
    fn integers_parse_like_go_strconv() {
        assert_eq!(parse_int_auto("0x1F"), Some(31));
        assert_eq!(parse_int_auto("010"), Some(8));
        assert_eq!(parse_int_auto("-12"), Some(-12));
        assert_eq!(parse_int_auto("0"), Some(0));
        assert_eq!(parse_int_auto("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int_auto("9223372036854775808"), None);
        assert_eq!(parse_int_auto("1a"), None);
        assert_eq!(parse_decimal("+5"), Some(5));
        assert_eq!(parse_decimal("0x5"), None);
    }
}
