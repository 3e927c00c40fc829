//! An error's text with its innermost cause.

/// `text`, followed by the innermost cause of `error` unless it says
/// nothing new (error chains repeat themselves at each layer).
pub(crate) fn with_root_cause(text: String, error: &dyn std::error::Error) -> String {
    let mut root = None;
    let mut source = error.source();
    while let Some(cause) = source {
        root = Some(cause);
        source = cause.source();
    }
    match root.map(ToString::to_string) {
        Some(cause) if !text.contains(&cause) => format!("{text}: {cause}"),
        _ => text,
    }
}
