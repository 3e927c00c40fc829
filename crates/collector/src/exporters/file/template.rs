//! Path templates: `{service.name}/{profile_type}/{time}-{seq}.pb.gz`.
//!
//! The literal text comes from the configuration and is trusted, but is
//! still checked when the template is parsed: it must be relative, use `/`
//! between directories, and have no empty, `.` or `..` components. Every
//! placeholder value is made one safe component by [`sanitize_component`],
//! and a component never gets longer than [`MAX_COMPONENT_BYTES`].

use std::path::{Component, Path, PathBuf};

use super::sanitize::{sanitize_component, MAX_VALUE_BYTES, MIN_VALUE_BYTES};

/// The longest file or directory name most file systems accept.
pub const MAX_COMPONENT_BYTES: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Placeholder(String),
}

/// One `/`-separated part of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TemplateComponent {
    pieces: Vec<Piece>,
    /// The most bytes each placeholder value may take here.
    value_budget: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    components: Vec<TemplateComponent>,
}

/// What is wrong with a path template; each but `Empty` names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the path template is empty")]
    Empty,
    #[error("the path template {0:?} is absolute; it must be relative to the exporter's path")]
    Absolute(String),
    #[error("the path template {0:?} has a backslash; separate directories with /")]
    Backslash(String),
    #[error("the path template {0:?} has a control character")]
    ControlCharacter(String),
    #[error("the path template {0:?} has an empty {{}}")]
    EmptyPlaceholder(String),
    #[error("the path template {0:?} has a {{ that is not closed by }}")]
    UnclosedPlaceholder(String),
    #[error("the path template {0:?} has an empty component (// or a trailing /)")]
    EmptyComponent(String),
    #[error("the path template {template:?} has a {component:?} component; it may not leave or name its directory")]
    DotComponent { template: String, component: String },
    #[error(
        "the path template {template:?} has a component {component:?} that is not a plain name"
    )]
    NotAPlainName { template: String, component: String },
    #[error("the path template {0:?} has a component that could exceed {MAX_COMPONENT_BYTES} bytes; use fewer placeholders or less text in it")]
    TooLong(String),
}

impl PathTemplate {
    /// Parses and checks a template; the error says what is wrong with it.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        if template.is_empty() {
            return Err(TemplateError::Empty);
        }
        if template.starts_with('/') || Path::new(template).has_root() {
            return Err(TemplateError::Absolute(template.to_owned()));
        }
        let components = split_components(template)?
            .into_iter()
            .map(|pieces| checked_component(template, pieces))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { components })
    }

    /// The relative path for these values: `lookup` gives a placeholder's
    /// value, `None` when it has none (which becomes `unknown`).
    pub fn expand(&self, lookup: impl Fn(&str) -> Option<String>) -> PathBuf {
        self.components
            .iter()
            .map(|component| {
                component
                    .pieces
                    .iter()
                    .map(|piece| match piece {
                        Piece::Literal(text) => text.clone(),
                        Piece::Placeholder(name) => sanitize_component(
                            &lookup(name).unwrap_or_default(),
                            component.value_budget,
                        ),
                    })
                    .collect::<String>()
            })
            .collect()
    }
}

/// The template's pieces, split into components at each `/` outside braces.
fn split_components(template: &str) -> Result<Vec<Vec<Piece>>, TemplateError> {
    let mut components = Vec::new();
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Placeholder(placeholder_name(template, &mut chars)?));
            }
            '/' => {
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                components.push(std::mem::take(&mut pieces));
            }
            '\\' => return Err(TemplateError::Backslash(template.to_owned())),
            c if c.is_control() => {
                return Err(TemplateError::ControlCharacter(template.to_owned()))
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    components.push(pieces);
    Ok(components)
}

/// Reads a placeholder's name up to its `}`.
fn placeholder_name(
    template: &str,
    chars: &mut std::str::Chars<'_>,
) -> Result<String, TemplateError> {
    let mut name = String::new();
    for c in chars.by_ref() {
        match c {
            '}' if name.is_empty() => {
                return Err(TemplateError::EmptyPlaceholder(template.to_owned()))
            }
            '}' => return Ok(name),
            '{' => break,
            c => name.push(c),
        }
    }
    Err(TemplateError::UnclosedPlaceholder(template.to_owned()))
}

/// Checks one component's literal text and works out its value budget.
fn checked_component(
    template: &str,
    pieces: Vec<Piece>,
) -> Result<TemplateComponent, TemplateError> {
    let mut literal_bytes = 0;
    let mut placeholders = 0;
    for piece in &pieces {
        match piece {
            Piece::Literal(text) => literal_bytes += text.len(),
            Piece::Placeholder(_) => placeholders += 1,
        }
    }
    let text: String = pieces
        .iter()
        .filter_map(|piece| match piece {
            Piece::Literal(text) => Some(text.as_str()),
            Piece::Placeholder(_) => None,
        })
        .collect();
    if placeholders == 0 {
        if text.is_empty() {
            return Err(TemplateError::EmptyComponent(template.to_owned()));
        }
        if text.chars().all(|c| c == '.') {
            return Err(TemplateError::DotComponent {
                template: template.to_owned(),
                component: text,
            });
        }
        if !matches!(
            Path::new(&text).components().next(),
            Some(Component::Normal(_))
        ) {
            return Err(TemplateError::NotAPlainName {
                template: template.to_owned(),
                component: text,
            });
        }
    }
    let value_budget = match MAX_COMPONENT_BYTES.checked_sub(literal_bytes) {
        Some(room) if placeholders > 0 => (room / placeholders).min(MAX_VALUE_BYTES),
        Some(_) => MAX_VALUE_BYTES,
        None => 0,
    };
    if value_budget < MIN_VALUE_BYTES {
        return Err(TemplateError::TooLong(template.to_owned()));
    }
    Ok(TemplateComponent {
        pieces,
        value_budget,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(template: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
        PathTemplate::parse(template)
            .ok()
            .map(|t| t.expand(lookup).to_string_lossy().into_owned())
    }

    #[test]
    fn placeholders_expand_and_missing_ones_are_unknown() {
        let lookup = |name: &str| (name == "service.name").then(|| "checkout".to_owned());
        assert_eq!(
            expand("{service.name}/{nope}/x-{service.name}.pb", lookup).as_deref(),
            Some("checkout/unknown/x-checkout.pb")
        );
    }

    #[test]
    fn bad_templates_are_rejected() {
        for bad in [
            "",
            "/abs/{seq}",
            "a/../{seq}",
            "../{seq}",
            "./{seq}",
            "a//{seq}",
            "a/",
            "{unclosed",
            "a/{b{c}",
            "{}",
            "a\\{seq}",
            "a\n{seq}",
        ] {
            assert!(
                PathTemplate::parse(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn components_stay_within_the_name_limit() {
        let template = "{a}-{b}-{c}-{d}-{e}.pb.gz";
        let long = |_: &str| Some("v".repeat(10_000));
        let path = expand(template, long).unwrap_or_default();
        assert!(path.len() <= MAX_COMPONENT_BYTES, "{} bytes", path.len());
        assert!(PathTemplate::parse(&format!("{}{{a}}", "x".repeat(240))).is_err());
    }
}
