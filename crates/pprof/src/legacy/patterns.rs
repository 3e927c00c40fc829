//! Regular expressions written as google/pprof writes them (RE2 syntax),
//! compiled with RE2's ASCII meaning of `\d`, `\s`, `\S` and `\w`.

use regex::Regex;

/// Compiles an RE2 pattern; `None` only if the pattern itself is broken,
/// which the unit tests rule out.
pub(super) fn go_regex(pattern: &str) -> Option<Regex> {
    let translated = pattern
        .replace(r"\d", "[0-9]")
        .replace(r"\s", r"[\t\n\x0C\r ]")
        .replace(r"\S", r"[^\t\n\x0C\r ]")
        .replace(r"\w", "[0-9A-Za-z_]");
    Regex::new(&translated).ok()
}

/// Text of capture group `i`, "" when it did not take part.
pub(super) fn group<'t>(captures: &regex::Captures<'t>, i: usize) -> &'t str {
    captures.get(i).map_or("", |m| m.as_str())
}
