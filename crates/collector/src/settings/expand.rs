//! `${env:NAME}` and `${env:NAME:-default}` in text values; `$$` is a
//! literal `$`.

use std::collections::BTreeMap;

use config::{Value, ValueKind};

use super::problems::{join, Problem};

/// Expands the references in every text value under `value`, which sits at
/// key path `path`; each failure becomes a problem at its value's path.
pub(crate) fn expand_tree(
    value: &mut Value,
    path: &str,
    vars: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    match &mut value.kind {
        ValueKind::String(text) => match expand(text, vars) {
            Ok(expanded) => *text = expanded,
            Err(error) => problems.push(Problem::new(path, error.to_string())),
        },
        ValueKind::Table(table) => {
            for (key, child) in table.iter_mut() {
                expand_tree(child, &join(path, key), vars, problems);
            }
        }
        ValueKind::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                expand_tree(item, &format!("{path}[{index}]"), vars, problems);
            }
        }
        _ => {}
    }
}

/// A reference in a text value that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    #[error("{0:?} has a ${{ without its closing }} (write $$ for a literal $)")]
    Unclosed(String),
    #[error("${{{0}}} is not supported; write ${{env:NAME}} or ${{env:NAME:-default}} (and $$ for a literal $)")]
    Unsupported(String),
    #[error("${{{reference}}}: {name:?} is not an environment variable name (letters, digits and _, not starting with a digit)")]
    BadName { reference: String, name: String },
    #[error(
        "environment variable {0} is not set; set it or give a default: ${{env:{0}:-default}}"
    )]
    Unset(String),
}

/// Expands one text. A `$` followed by neither `$` nor `{` stays as it is.
pub(crate) fn expand(text: &str, vars: &BTreeMap<String, String>) -> Result<String, ExpandError> {
    let mut expanded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        let (before, from_dollar) = rest.split_at(dollar);
        expanded.push_str(before);
        let after_dollar = from_dollar.get(1..).unwrap_or_default();
        if let Some(after) = after_dollar.strip_prefix('$') {
            expanded.push('$');
            rest = after;
        } else if let Some(inside) = after_dollar.strip_prefix('{') {
            let Some((reference, after)) = inside.split_once('}') else {
                return Err(ExpandError::Unclosed(text.to_owned()));
            };
            expanded.push_str(&resolve(reference, vars)?);
            rest = after;
        } else {
            expanded.push('$');
            rest = after_dollar;
        }
    }
    expanded.push_str(rest);
    Ok(expanded)
}

/// The value of `env:NAME` or `env:NAME:-default`; the default applies when
/// NAME is unset or empty, as in the shell.
fn resolve(reference: &str, vars: &BTreeMap<String, String>) -> Result<String, ExpandError> {
    let Some(variable) = reference.strip_prefix("env:") else {
        return Err(ExpandError::Unsupported(reference.to_owned()));
    };
    let (name, default) = match variable.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (variable, None),
    };
    if !is_variable_name(name) {
        return Err(ExpandError::BadName {
            reference: reference.to_owned(),
            name: name.to_owned(),
        });
    }
    match (vars.get(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
        (Some(value), _) => Ok(value.clone()),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) => Err(ExpandError::Unset(name.to_owned())),
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [("HOME", "/home/me"), ("EMPTY", "")]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }

    #[test]
    fn references_expand() {
        let expand = |text: &str| expand(text, &vars());
        assert_eq!(expand("${env:HOME}/data"), Ok("/home/me/data".to_owned()));
        assert_eq!(expand("${env:NOPE:-/tmp}/x"), Ok("/tmp/x".to_owned()));
        assert_eq!(expand("${env:EMPTY:-fallback}"), Ok("fallback".to_owned()));
        assert_eq!(expand("${env:EMPTY}"), Ok(String::new()));
        assert_eq!(expand("${env:HOME:-}"), Ok("/home/me".to_owned()));
        assert_eq!(
            expand("cost: $$5 and $HOME"),
            Ok("cost: $5 and $HOME".to_owned())
        );
        assert_eq!(expand("$${env:HOME}"), Ok("${env:HOME}".to_owned()));
        assert_eq!(expand("trailing $"), Ok("trailing $".to_owned()));
    }

    #[test]
    fn bad_references_explain() {
        let error = |text: &str| {
            expand(text, &vars())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            error("${env:NOPE}"),
            "environment variable NOPE is not set; set it or give a default: ${env:NOPE:-default}"
        );
        assert!(error("${env:HOME").contains("without its closing }"));
        assert!(error("${HOME}").contains("is not supported"));
        assert!(error("${file:/etc/x}").contains("is not supported"));
        assert!(error("${env:1X}").contains("not an environment variable name"));
    }
}
