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
}

/// Pyroscope's default `sampleRate`.
const DEFAULT_SAMPLE_RATE: u32 = 100;

impl IngestQuery {
    pub fn parse(query: &[(String, String)]) -> Result<Self, String> {
        let value = |names: &[&str]| {
            query
                .iter()
                .rev()
                .find(|(name, _)| names.contains(&name.as_str()))
                .map(|(_, value)| value.trim())
                .filter(|value| !value.is_empty())
        };
        let name = value(&["name"])
            .ok_or("the query parameter name (the application name) is required")?;
        let (app_name, labels) = parse_name(name)?;
        let from = value(&["from"]).map(|v| seconds("from", v)).transpose()?;
        let until = value(&["until"]).map(|v| seconds("until", v)).transpose()?;
        if let (Some(from), Some(until)) = (from, until) {
            if until < from {
                return Err(format!("until ({until}) is before from ({from})"));
            }
        }
        let format = value(&["format"]).map(parse_format).transpose()?;
        let sample_rate = match value(&["sampleRate"]) {
            None => DEFAULT_SAMPLE_RATE,
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|rate| *rate > 0)
                .ok_or_else(|| format!("sampleRate {text:?} is not a rate in Hz above 0"))?,
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
fn parse_name(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let (app, labels) = match text.split_once('{') {
        None => (text, ""),
        Some((app, rest)) => {
            let inner = rest
                .strip_suffix('}')
                .ok_or_else(|| format!("name {text:?} opens {{ but does not end with }}"))?;
            (app, inner)
        }
    };
    let app = app.trim();
    if app.is_empty() {
        return Err(format!(
            "name {text:?} has no application name before its labels"
        ));
    }
    let mut pairs = Vec::new();
    for item in labels
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("name {text:?}: label {item:?} is not key=value"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("name {text:?}: label {item:?} has an empty key"));
        }
        pairs.push((key.to_owned(), value.trim().to_owned()));
    }
    Ok((app.to_owned(), pairs))
}

fn seconds(name: &str, text: &str) -> Result<i64, String> {
    text.parse::<i64>()
        .ok()
        .filter(|seconds| *seconds >= 0)
        .ok_or_else(|| format!("{name} {text:?} is not a time in Unix seconds"))
}

fn parse_format(text: &str) -> Result<IngestFormat, String> {
    match text {
        "pprof" => Ok(IngestFormat::Pprof),
        "folded" => Ok(IngestFormat::Folded),
        "lines" => Ok(IngestFormat::Lines),
        other => Err(format!(
            "format {other:?} is not supported; use pprof, folded or lines"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<IngestQuery, String> {
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
    }

    #[test]
    fn mistakes_are_named() {
        let error = |pairs: &[(&str, &str)]| query(pairs).err().unwrap_or_default();
        assert!(error(&[]).contains("name"));
        assert!(error(&[("name", "app{env=x")]).contains("does not end with }"));
        assert!(error(&[("name", "{env=x}")]).contains("no application name"));
        assert!(error(&[("name", "app{env}")]).contains("not key=value"));
        assert!(error(&[("name", "a"), ("from", "yesterday")]).contains("from \"yesterday\""));
        assert!(error(&[("name", "a"), ("from", "10"), ("until", "5")]).contains("before from"));
        assert!(error(&[("name", "a"), ("format", "jfr")]).contains("\"jfr\" is not supported"));
        assert!(error(&[("name", "a"), ("sampleRate", "0")]).contains("sampleRate"));
    }
}
