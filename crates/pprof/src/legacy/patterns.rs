//! Regular expressions written as google/pprof writes them (RE2 syntax),
//! compiled with RE2's ASCII meaning of `\d`, `\s`, `\S` and `\w`.

use std::sync::OnceLock;

use regex::Regex;

use super::LegacyError;

/// A constant pattern of a legacy parser, compiled on first use. A pattern
/// that does not compile is a [`LegacyError::BrokenPattern`] naming it,
/// never "not this format"; each parser's tests compile all of its patterns.
pub(super) struct Pattern {
    name: &'static str,
    source: Source,
    compiled: OnceLock<Result<Regex, regex::Error>>,
}

enum Source {
    /// RE2 text, as google/pprof writes it.
    Re2(&'static str),
    /// Text for the `regex` crate, put together at run time.
    Built(fn() -> String),
}

impl Pattern {
    /// A pattern in RE2 syntax.
    pub(super) const fn re2(name: &'static str, text: &'static str) -> Self {
        Self::new(name, Source::Re2(text))
    }

    /// A pattern in the `regex` crate's syntax, built by `build`.
    pub(super) const fn built(name: &'static str, build: fn() -> String) -> Self {
        Self::new(name, Source::Built(build))
    }

    const fn new(name: &'static str, source: Source) -> Self {
        Self {
            name,
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled pattern.
    pub(super) fn regex(&self) -> Result<&Regex, LegacyError> {
        self.compiled()
            .as_ref()
            .map_err(|error| LegacyError::BrokenPattern {
                pattern: self.name,
                problem: error.to_string(),
            })
    }

    /// Whether `text` matches, for format detection. A pattern that does
    /// not compile claims every text, so that the parser runs and reports
    /// it instead of detection passing its format over.
    pub(super) fn claims(&self, text: &str) -> bool {
        self.compiled()
            .as_ref()
            .map_or(true, |regex| regex.is_match(text))
    }

    fn compiled(&self) -> &Result<Regex, regex::Error> {
        self.compiled.get_or_init(|| match self.source {
            Source::Re2(text) => Regex::new(&ascii_classes(text)),
            Source::Built(build) => Regex::new(&build()),
        })
    }
}

/// RE2's `\d`, `\s`, `\S` and `\w` are ASCII; the `regex` crate's are
/// Unicode.
fn ascii_classes(pattern: &str) -> String {
    pattern
        .replace(r"\d", "[0-9]")
        .replace(r"\s", r"[\t\n\x0C\r ]")
        .replace(r"\S", r"[^\t\n\x0C\r ]")
        .replace(r"\w", "[0-9A-Za-z_]")
}

/// Text of capture group `i`, "" when it did not take part.
pub(super) fn group<'t>(captures: &regex::Captures<'t>, i: usize) -> &'t str {
    captures.get(i).map_or("", |m| m.as_str())
}

/// Fails naming the first of `patterns` that does not compile.
#[cfg(test)]
pub(super) fn assert_compile(patterns: &[&Pattern]) {
    for pattern in patterns {
        if let Err(error) = pattern.regex() {
            panic!("{error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BROKEN: Pattern = Pattern::re2("test pattern", r"(\d+");

    #[test]
    fn a_broken_pattern_is_an_error_that_names_it() {
        match BROKEN.regex() {
            Err(LegacyError::BrokenPattern { pattern, problem }) => {
                assert_eq!(pattern, "test pattern");
                assert!(problem.contains("unclosed group"), "{problem}");
            }
            other => panic!("expected BrokenPattern, got {other:?}"),
        }
        assert!(BROKEN.claims("anything"));
    }

    #[test]
    fn re2_classes_are_ascii() {
        let digits = Pattern::re2("digits", r"\A\d+\z");
        assert!(digits.claims("0123456789"));
        assert!(!digits.claims("٣"));
        let word = Pattern::re2("word", r"\A\w+\z");
        assert!(!word.claims("é"));
    }
}
