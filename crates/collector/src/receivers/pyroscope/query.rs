//! The query string of `POST /ingest`, as Pyroscope documents it.

/// What the query string says about the uploaded profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IngestQuery {
    /// `name` before its `{labels}`.
    pub app_name: String,
    /// The `{k=v,k2=v2}` labels of `name`, in order.
    pub labels: Vec<(String, String)>,
    /// `from` and `until`, in Unix seconds.
    pub from: Option<i64>,
    pub until: Option<i64>,
    /// `None`: told by the Content-Type and the bytes.
    pub format: Option<IngestFormat>,
    /// `sampleRate`, in Hz.
    pub sample_rate: u32,
    pub spy_name: Option<String>,
    pub units: Option<String>,
    pub aggregation: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IngestFormat {
    Pprof,
    /// `frame;frame value` lines.
    Folded,
    /// `frame;frame` lines, one sample each.
    Lines,
    /// A JFR recording, bare or as the `jfr` part of a form.
    Jfr,
}

/// A query string `/ingest` cannot take; each names the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum QueryError {
    #[error("the query parameter name (the application name) is required")]
    NoName,
    #[error("until ({until}) is before from ({from})")]
    UntilBeforeFrom { from: i64, until: i64 },
    #[error("sampleRate {0:?} is not a rate in Hz above 0")]
    BadSampleRate(String),
    #[error("name {0:?} opens {{ but does not end with }}")]
    UnclosedLabels(String),
    #[error("name {0:?} has no application name before its labels")]
    NoApplicationName(String),
    #[error("name {name:?}: label {label:?} is not key=value")]
    NotKeyValue { name: String, label: String },
    #[error("name {name:?}: label {label:?} has an empty key")]
    EmptyKey { name: String, label: String },
    #[error("{parameter} {text:?} is not a time in Unix seconds")]
    BadTime {
        parameter: &'static str,
        text: String,
    },
    #[error("format {0:?} is not supported; use pprof, folded, lines or jfr")]
    UnsupportedFormat(String),
}

/// Pyroscope's default `sampleRate`.
const DEFAULT_SAMPLE_RATE: u32 = 100;

impl IngestQuery {
    pub fn parse(query: &[(String, String)]) -> Result<Self, QueryError> {
        let value = |names: &[&str]| {
            query
                .iter()
                .rev()
                .find(|(name, _)| names.contains(&name.as_str()))
                .map(|(_, value)| value.trim())
                .filter(|value| !value.is_empty())
        };
        let name = value(&["name"]).ok_or(QueryError::NoName)?;
        let (app_name, labels) = parse_name(name)?;
        let from = value(&["from"]).map(|v| seconds("from", v)).transpose()?;
        let until = value(&["until"]).map(|v| seconds("until", v)).transpose()?;
        if let (Some(from), Some(until)) = (from, until) {
            if until < from {
                return Err(QueryError::UntilBeforeFrom { from, until });
            }
        }
        let format = value(&["format"]).map(parse_format).transpose()?;
        let sample_rate = match value(&["sampleRate"]) {
            None => DEFAULT_SAMPLE_RATE,
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|rate| *rate > 0)
                .ok_or_else(|| QueryError::BadSampleRate(text.to_owned()))?,
        };
        Ok(Self {
            app_name,
            labels,
            from,
            until,
            format,
            sample_rate,
            spy_name: value(&["spyName"]).map(str::to_owned),
            units: value(&["units"]).map(str::to_owned),
            aggregation: value(&["aggregationType", "aggregrationType"]).map(str::to_owned),
        })
    }
}

/// `app.name{k=v,k2=v2}` into the name and its labels.
fn parse_name(text: &str) -> Result<(String, Vec<(String, String)>), QueryError> {
    let (app, labels) = match text.split_once('{') {
        None => (text, ""),
        Some((app, rest)) => {
            let inner = rest
                .strip_suffix('}')
                .ok_or_else(|| QueryError::UnclosedLabels(text.to_owned()))?;
            (app, inner)
        }
    };
    let app = app.trim();
    if app.is_empty() {
        return Err(QueryError::NoApplicationName(text.to_owned()));
    }
    let mut pairs = Vec::new();
    for item in labels
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| QueryError::NotKeyValue {
                name: text.to_owned(),
                label: item.to_owned(),
            })?;
        let key = key.trim();
        if key.is_empty() {
            return Err(QueryError::EmptyKey {
                name: text.to_owned(),
                label: item.to_owned(),
            });
        }
        pairs.push((key.to_owned(), value.trim().to_owned()));
    }
    Ok((app.to_owned(), pairs))
}

fn seconds(parameter: &'static str, text: &str) -> Result<i64, QueryError> {
    text.parse::<i64>()
        .ok()
        .filter(|seconds| *seconds >= 0)
        .ok_or_else(|| QueryError::BadTime {
            parameter,
            text: text.to_owned(),
        })
}

fn parse_format(text: &str) -> Result<IngestFormat, QueryError> {
    match text {
        "pprof" => Ok(IngestFormat::Pprof),
        "folded" => Ok(IngestFormat::Folded),
        "lines" => Ok(IngestFormat::Lines),
        "jfr" => Ok(IngestFormat::Jfr),
        other => Err(QueryError::UnsupportedFormat(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<IngestQuery, QueryError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        IngestQuery::parse(&pairs)
    }

    #[test]
    fn names_labels_and_defaults() {
        let parsed = query(&[
            ("name", "my.app.cpu{env=staging, region=us-west-1}"),
            ("from", "1700000000"),
            ("until", "1700000010"),
        ]);
        let Ok(parsed) = parsed else {
            unreachable!("{parsed:?}");
        };
        assert_eq!(parsed.app_name, "my.app.cpu");
        assert_eq!(
            parsed.labels,
            [
                ("env".to_owned(), "staging".to_owned()),
                ("region".to_owned(), "us-west-1".to_owned())
            ]
        );
        assert_eq!(
            (parsed.from, parsed.until),
            (Some(1_700_000_000), Some(1_700_000_010))
        );
        assert_eq!(parsed.sample_rate, 100);
        assert_eq!(parsed.format, None);
        let plain = query(&[("name", "app"), ("format", "lines"), ("sampleRate", "250")]);
        assert!(plain.is_ok_and(|q| q.labels.is_empty()
            && q.format == Some(IngestFormat::Lines)
            && q.sample_rate == 250));
        let jfr = query(&[("name", "app"), ("format", "jfr")]);
        assert!(jfr.is_ok_and(|q| q.format == Some(IngestFormat::Jfr)));
    }

    #[test]
    fn mistakes_are_named() {
        let error = |pairs: &[(&str, &str)]| {
            query(pairs)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error(&[]).contains("name"));
        assert!(error(&[("name", "app{env=x")]).contains("does not end with }"));
        assert!(error(&[("name", "{env=x}")]).contains("no application name"));
        assert!(error(&[("name", "app{env}")]).contains("not key=value"));
        assert!(error(&[("name", "a"), ("from", "yesterday")]).contains("from \"yesterday\""));
        assert!(error(&[("name", "a"), ("from", "10"), ("until", "5")]).contains("before from"));
        assert!(error(&[("name", "a"), ("format", "trie")]).contains("\"trie\" is not supported"));
        assert!(error(&[("name", "a"), ("sampleRate", "0")]).contains("sampleRate"));
    }
}
