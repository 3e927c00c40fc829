//! `service: telemetry: metrics:`: which metrics, and where the Prometheus
//! endpoint listens: the older `address`, or the Collector's `readers`.

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::super::parts::EmbeddedPart;
use super::super::server::HttpConnectionSettings;
use super::super::units::Duration;
use super::super::{Options, Problem};

/// Where the endpoint listens when neither `address` nor `readers` is set:
/// the Collector's `localhost:8888`.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8888";

/// The Collector's metrics levels. `none` serves no metrics; the others
/// serve every metric profbridge has (it has none that the Collector keeps
/// for `detailed` only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetricsLevel {
    None,
    Basic,
    #[default]
    Normal,
    Detailed,
}

impl<'de> Deserialize<'de> for MetricsLevel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "basic" => Ok(Self::Basic),
            "normal" => Ok(Self::Normal),
            "detailed" => Ok(Self::Detailed),
            _ => Err(serde::de::Error::custom(format!(
                "unknown metrics level {text:?}; expected one of none, basic, normal, detailed"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    pub level: MetricsLevel,
    /// host:port of the Prometheus /metrics, /health and /ready endpoint;
    /// empty turns it off. The Collector's older spelling of `readers`.
    pub address: Option<String>,
    /// The Collector's metric readers; one `pull` Prometheus reader sets
    /// the endpoint, none turns it off.
    pub readers: Option<Vec<ReaderConfig>>,
    pub views: Option<IgnoredAny>,
    /// The endpoint's `read_header_timeout`, `idle_timeout` and
    /// `max_connections`, beside the Collector's keys.
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
}

/// One of `readers:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReaderConfig {
    pub pull: Option<PullReader>,
    pub periodic: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PullReader {
    pub exporter: PullExporter,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PullExporter {
    pub prometheus: Option<PrometheusConfig>,
}

/// `readers: [{pull: {exporter: {prometheus: …}}}]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrometheusConfig {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub without_scope_info: Option<bool>,
    pub without_units: Option<bool>,
    pub without_type_suffix: Option<bool>,
    pub with_resource_constant_labels: Option<IgnoredAny>,
}

impl PrometheusConfig {
    /// `host:port`, with brackets around an IPv6 host; `None` without both.
    pub fn address(&self) -> Option<String> {
        let host = self.host.as_deref()?;
        let port = self.port?;
        let bare = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        Some(if bare.contains(':') {
            format!("[{bare}]:{port}")
        } else {
            format!("{bare}:{port}")
        })
    }

    fn problems(&self, path: &str) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (key, missing) in [("host", self.host.is_none()), ("port", self.port.is_none())] {
            if missing {
                problems.push(Problem::new(
                    format!("{path}.{key}"),
                    "must be set: the Prometheus endpoint needs a host and a port",
                ));
            }
        }
        for (key, value) in [
            ("without_scope_info", self.without_scope_info),
            ("without_units", self.without_units),
            ("without_type_suffix", self.without_type_suffix),
        ] {
            if value == Some(false) {
                problems.push(Problem::new(
                    format!("{path}.{key}"),
                    "only true is supported: profbridge serves the names a Collector \
                     serves by default (no unit or _total suffixes on otelcol_* names, \
                     no scope labels)",
                ));
            }
        }
        if self.with_resource_constant_labels.is_some() {
            problems.push(Problem::new(
                format!("{path}.with_resource_constant_labels"),
                "not supported: profbridge's metrics carry no resource attributes",
            ));
        }
        problems
    }
}

impl MetricsConfig {
    /// Where the telemetry endpoint listens, `None` when it is off: the
    /// `address`, else the Prometheus reader's host and port, else the
    /// default. [`Self::problems`] reports settings this cannot honour.
    pub fn endpoint(&self) -> Option<String> {
        self.endpoint_at().map(|(_, address)| address)
    }

    /// [`Self::endpoint`] and the key (under `metrics`) that set it.
    pub fn endpoint_at(&self) -> Option<(String, String)> {
        if let Some(address) = &self.address {
            return (!address.is_empty()).then(|| ("address".to_owned(), address.clone()));
        }
        let Some(readers) = &self.readers else {
            return Some(("address".to_owned(), DEFAULT_ADDRESS.to_owned()));
        };
        readers.iter().enumerate().find_map(|(index, reader)| {
            let address = reader
                .pull
                .as_ref()?
                .exporter
                .prometheus
                .as_ref()?
                .address()?;
            Some((
                format!("readers[{index}].pull.exporter.prometheus"),
                address,
            ))
        })
    }

    /// Whether `/metrics` serves anything.
    pub fn serves_metrics(&self) -> bool {
        self.level != MetricsLevel::None
    }

    /// Every problem, with paths from `metrics`.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.address.is_some() && self.readers.is_some() {
            problems.push(Problem::new(
                "address",
                "set either address or readers, not both: both set the one Prometheus \
                 endpoint profbridge serves",
            ));
        }
        if let Some(readers) = &self.readers {
            problems.extend(self.reader_problems(readers));
        }
        if self.views.is_some() {
            problems.push(Problem::new(
                "views",
                "not supported: profbridge's metrics are fixed; drop series in the \
                 scraper (Prometheus metric_relabel_configs) instead",
            ));
        }
        if self.endpoint().is_some() {
            problems.extend(self.connection.problems());
        }
        problems
    }

    fn reader_problems(&self, readers: &[ReaderConfig]) -> Vec<Problem> {
        let mut problems = Vec::new();
        if readers.is_empty() && self.level != MetricsLevel::None {
            problems.push(Problem::new(
                "readers",
                "is empty while level is not none: add a pull Prometheus reader, or set \
                 level: none to serve no metrics",
            ));
        }
        let mut prometheus_seen = false;
        for (index, reader) in readers.iter().enumerate() {
            let path = format!("readers[{index}]");
            if reader.periodic.is_some() {
                problems.push(Problem::new(
                    format!("{path}.periodic"),
                    "not supported: profbridge does not push its metrics; use a pull \
                     reader (pull: {exporter: {prometheus: {host, port}}}) and scrape it",
                ));
            }
            match (&reader.pull, reader.periodic.is_some()) {
                (Some(pull), _) => match &pull.exporter.prometheus {
                    Some(prometheus) => {
                        if prometheus_seen {
                            problems.push(Problem::new(
                                format!("{path}.pull"),
                                "profbridge serves one Prometheus endpoint; keep one pull reader",
                            ));
                        }
                        prometheus_seen = true;
                        problems.extend(
                            prometheus.problems(&format!("{path}.pull.exporter.prometheus")),
                        );
                    }
                    None => problems.push(Problem::new(
                        format!("{path}.pull.exporter"),
                        "must have prometheus: {host, port}",
                    )),
                },
                (None, false) => problems.push(Problem::new(
                    path,
                    "must have pull: {exporter: {prometheus: {host, port}}}",
                )),
                (None, true) => {}
            }
        }
        problems
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            level: MetricsLevel::default(),
            address: None,
            readers: None,
            views: None,
            connection: HttpConnectionSettings::for_endpoint(Duration::from_secs(60)),
        }
    }
}

impl Options for MetricsConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.connection]
    }
}
