//! Turning a value a client sent into one safe path component.

/// What an empty or missing value becomes.
pub const UNKNOWN: &str = "unknown";

/// The longest a single expanded value may be, in bytes.
pub const MAX_VALUE_BYTES: usize = 100;

/// `-` and 16 hex digits: what replaces the cut end of a long value.
const HASH_SUFFIX_BYTES: usize = 17;

/// The shortest value budget a template may leave: a cut value must keep
/// some of its text besides the hash suffix.
pub const MIN_VALUE_BYTES: usize = HASH_SUFFIX_BYTES + 15;

/// Makes `value` one path component of at most `budget` bytes (at least
/// [`MIN_VALUE_BYTES`]) made only of `[A-Za-z0-9._-]`:
/// - every other character (`/`, `\`, NUL, controls, non-ASCII) becomes `_`;
/// - an empty value becomes [`UNKNOWN`];
/// - a value starting with `.` (so `.`, `..`, hidden names, and names like
///   the exporter's temporary files) gets a `_` in front;
/// - a longer value is cut, and ends with `-` and a hash of the whole
///   original value, so that long values differing only at the end stay
///   apart.
pub fn sanitize_component(value: &str, budget: usize) -> String {
    let mut safe: String = value
        .chars()
        .map(|c| if is_safe_char(c) { c } else { '_' })
        .collect();
    if safe.is_empty() {
        return UNKNOWN.to_owned();
    }
    if safe.starts_with('.') {
        safe.insert(0, '_');
    }
    let budget = budget.max(MIN_VALUE_BYTES);
    if safe.len() > budget {
        // Only ASCII is left, so any byte offset is a character boundary.
        safe.truncate(budget - HASH_SUFFIX_BYTES);
        safe.push('-');
        safe.push_str(&format!("{:016x}", fnv1a(value.as_bytes())));
    }
    safe
}

/// Whether `c` may appear in a path component as it is.
pub fn is_safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// 64-bit FNV-1a: small, stable across runs and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_values_become_plain_names() {
        assert_eq!(
            sanitize_component("../../etc/passwd", 100),
            "_.._.._etc_passwd"
        );
        assert_eq!(sanitize_component("/abs/path", 100), "_abs_path");
        assert_eq!(sanitize_component("a\\b", 100), "a_b");
        assert_eq!(sanitize_component("\n\t\0", 100), "___");
        assert_eq!(sanitize_component("..", 100), "_..");
        assert_eq!(sanitize_component(".", 100), "_.");
        assert_eq!(sanitize_component("", 100), "unknown");
        assert_eq!(sanitize_component("café", 100), "caf_");
        assert_eq!(
            sanitize_component("checkout-v1.2_x", 100),
            "checkout-v1.2_x"
        );
    }

    #[test]
    fn long_values_are_cut_with_a_hash_that_keeps_them_apart() {
        let a = format!("{}a", "x".repeat(10_000));
        let b = format!("{}b", "x".repeat(10_000));
        let cut_a = sanitize_component(&a, 100);
        let cut_b = sanitize_component(&b, 100);
        assert_eq!(cut_a.len(), 100);
        assert_eq!(cut_b.len(), 100);
        assert_ne!(cut_a, cut_b);
        assert!(cut_a.starts_with("xxxx"));
    }
}
