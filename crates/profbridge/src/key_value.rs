//! `KEY=VALUE` option values, which several commands take.

/// An option value that is not `KEY=VALUE` with a key.
#[derive(Debug, thiserror::Error)]
#[error("expected KEY=VALUE, got {0:?}")]
pub struct NotKeyValue(String);

/// `KEY=VALUE`; the value may itself hold `=`.
pub fn parse_key_value(text: &str) -> Result<(String, String), NotKeyValue> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(NotKeyValue(text.to_owned())),
    }
}
