//! `file_sd_configs`: target groups read from JSON or YAML files
//! (Prometheus' file_sd format: a list of `{targets: [...], labels: {...}}`),
//! re-read when a file's modification time or size changes and every
//! `refresh_interval`. A file that cannot be read or parsed keeps the
//! groups it gave last.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use yaml_rust2::{Yaml, YamlLoader};

use super::config::FileSdConfig;
use super::target::LabelSet;
use crate::settings::aliases::{expanded_nodes, MAX_EXPANDED_NODES};

/// The largest targets file read.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A group of targets and the labels they share.
pub type Group = (LabelSet, Vec<String>);

/// Why a targets file gives no groups this time.
#[derive(Debug, thiserror::Error)]
pub enum FileSdError {
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { path: String },
    #[error("{path}: {error}")]
    Parse { path: String, error: String },
    #[error("{path}: more than {MAX_EXPANDED_NODES} nodes once aliases are expanded")]
    Aliases { path: String },
    #[error(
        "{path}: {what}; expected a list of {{targets: [host:port, ...], labels: {{name: value}}}}"
    )]
    Shape { path: String, what: &'static str },
    #[error("{pattern:?}: {error}")]
    Pattern {
        pattern: String,
        error: glob::PatternError,
    },
}

/// What a file gave when last read.
struct Seen {
    stamp: (Option<SystemTime>, u64),
    read_at: Instant,
    refresh: Duration,
    groups: Vec<Group>,
}

/// The files of every `file_sd_configs` entry and the groups they hold.
pub struct FileSd {
    configs: Vec<FileSdConfig>,
    files: BTreeMap<PathBuf, Seen>,
}

impl FileSd {
    pub fn new(configs: &[FileSdConfig]) -> Self {
        Self {
            configs: configs.to_vec(),
            files: BTreeMap::new(),
        }
    }

    /// Looks at every file: reads those that changed or are due. Returns
    /// whether the groups changed, and the problems met.
    pub fn poll(&mut self, now: Instant) -> (bool, Vec<FileSdError>) {
        let mut problems = Vec::new();
        let mut found: BTreeMap<PathBuf, Duration> = BTreeMap::new();
        for config in &self.configs {
            for pattern in &config.files {
                match glob::glob(pattern) {
                    Ok(paths) => found.extend(
                        paths
                            .flatten()
                            .map(|path| (path, config.refresh_interval.0)),
                    ),
                    Err(error) => problems.push(FileSdError::Pattern {
                        pattern: pattern.clone(),
                        error,
                    }),
                }
            }
        }
        let before = self.files.len();
        self.files.retain(|path, _| found.contains_key(path));
        let mut changed = self.files.len() != before;
        for (path, refresh) in found {
            let stamp = match std::fs::metadata(&path) {
                Ok(metadata) => (metadata.modified().ok(), metadata.len()),
                Err(_) => continue,
            };
            let due = self.files.get(&path).is_none_or(|seen| {
                seen.stamp != stamp || now.saturating_duration_since(seen.read_at) >= seen.refresh
            });
            if !due {
                continue;
            }
            let groups = match read_groups(&path) {
                Ok(groups) => groups,
                Err(error) => {
                    problems.push(error);
                    // Keeps what it gave, and tries again at the next change.
                    if let Some(seen) = self.files.get_mut(&path) {
                        seen.stamp = stamp;
                        seen.read_at = now;
                    }
                    continue;
                }
            };
            changed |= self
                .files
                .get(&path)
                .is_none_or(|seen| seen.groups != groups);
            self.files.insert(
                path,
                Seen {
                    stamp,
                    read_at: now,
                    refresh,
                    groups,
                },
            );
        }
        (changed, problems)
    }

    /// Every group of every file, in path order.
    pub fn groups(&self) -> Vec<Group> {
        self.files
            .values()
            .flat_map(|seen| seen.groups.iter().cloned())
            .collect()
    }
}

fn read_groups(path: &Path) -> Result<Vec<Group>, FileSdError> {
    let shown = || path.display().to_string();
    let read = |error| FileSdError::Read {
        path: shown(),
        error,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read)?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(FileSdError::TooLarge { path: shown() });
    }
    parse_groups(&text).map_err(|error| match error {
        ParseError::Yaml(error) => FileSdError::Parse {
            path: shown(),
            error,
        },
        ParseError::Aliases => FileSdError::Aliases { path: shown() },
        ParseError::Shape(what) => FileSdError::Shape {
            path: shown(),
            what,
        },
    })
}

#[derive(Debug, PartialEq)]
enum ParseError {
    Yaml(String),
    Aliases,
    Shape(&'static str),
}

/// JSON is read as the YAML it also is.
fn parse_groups(text: &str) -> Result<Vec<Group>, ParseError> {
    if expanded_nodes(text).is_some_and(|nodes| nodes > MAX_EXPANDED_NODES) {
        return Err(ParseError::Aliases);
    }
    let documents =
        YamlLoader::load_from_str(text).map_err(|error| ParseError::Yaml(error.to_string()))?;
    let Some(document) = documents.into_iter().next() else {
        return Ok(Vec::new());
    };
    let entries = match document {
        Yaml::Array(entries) => entries,
        Yaml::Null => return Ok(Vec::new()),
        _ => return Err(ParseError::Shape("not a list")),
    };
    entries.iter().map(group).collect()
}

fn group(entry: &Yaml) -> Result<Group, ParseError> {
    let Yaml::Hash(entry) = entry else {
        return Err(ParseError::Shape("an entry is not a mapping"));
    };
    let mut targets = Vec::new();
    let mut labels = LabelSet::new();
    for (key, value) in entry {
        match (key.as_str(), value) {
            (Some("targets"), Yaml::Array(list)) => {
                for target in list {
                    let target = target
                        .as_str()
                        .ok_or(ParseError::Shape("a target is not a string"))?;
                    targets.push(target.to_owned());
                }
            }
            (Some("labels"), Yaml::Hash(pairs)) => {
                for (name, value) in pairs {
                    let (Some(name), Some(value)) = (name.as_str(), scalar(value)) else {
                        return Err(ParseError::Shape("a label is not a name and a value"));
                    };
                    labels.insert(name.to_owned(), value);
                }
            }
            (Some("labels"), Yaml::Null) => {}
            (Some("targets" | "labels"), _) => {
                return Err(ParseError::Shape(
                    "targets is not a list or labels not a mapping",
                ))
            }
            _ => {
                return Err(ParseError::Shape(
                    "an entry has a key other than targets and labels",
                ))
            }
        }
    }
    Ok((labels, targets))
}

fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(text) | Yaml::Real(text) => Some(text.clone()),
        Yaml::Integer(number) => Some(number.to_string()),
        Yaml::Boolean(flag) => Some(flag.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_give_the_same_groups() {
        let json = r#"[{"targets": ["a:1", "b:2"], "labels": {"job": "api", "port": 8}}]"#;
        let yaml = "- targets: [a:1, b:2]\n  labels:\n    job: api\n    port: 8\n";
        let expected = vec![(
            LabelSet::from([
                ("job".to_owned(), "api".to_owned()),
                ("port".to_owned(), "8".to_owned()),
            ]),
            vec!["a:1".to_owned(), "b:2".to_owned()],
        )];
        assert_eq!(parse_groups(json).unwrap(), expected);
        assert_eq!(parse_groups(yaml).unwrap(), expected);
        assert_eq!(parse_groups("").unwrap(), Vec::new());
    }

    #[test]
    fn wrong_shapes_and_alias_bombs_are_errors() {
        assert!(matches!(parse_groups("{a: 1}"), Err(ParseError::Shape(_))));
        assert!(matches!(
            parse_groups("- targets: a"),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(
            parse_groups("- [unclosed"),
            Err(ParseError::Yaml(_))
        ));
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 0..8 {
            let (name, previous) = (
                format!("l{level}"),
                if level == 0 {
                    "a".to_owned()
                } else {
                    format!("l{}", level - 1)
                },
            );
            bomb.push_str(&format!("{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"));
        }
        assert_eq!(parse_groups(&bomb), Err(ParseError::Aliases));
    }
}
