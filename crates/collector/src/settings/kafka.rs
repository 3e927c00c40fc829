//! What the kafka exporter and receiver connect with, in the shape of the
//! OpenTelemetry Collector's `configkafka.ClientConfig`: [`KafkaClientSettings`],
//! whose keys sit beside each component's own. `client::kafka` turns them
//! into librdkafka's properties.

use serde::Deserialize;

use super::client::TlsConfig;
use super::parts::{Embedded, Written};
use super::tls::file_problem;
use super::units::Duration;
use super::Problem;
use crate::keep_unwritten;

/// The brokers, who the client says it is, and how it authenticates.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaClientSettings {
    /// Bootstrap brokers, `host:port`.
    pub brokers: Vec<String>,
    pub client_id: String,
    /// Accepted for the Collector's configurations; librdkafka asks each
    /// broker which protocol versions it speaks.
    pub protocol_version: Option<String>,
    /// librdkafka's `client.dns.lookup=resolve_canonical_bootstrap_servers_only`.
    pub resolve_canonical_bootstrap_servers_only: bool,
    /// TLS to the brokers, when present (unless `insecure: true`).
    pub tls: Option<TlsConfig>,
    pub auth: KafkaAuth,
    pub metadata: MetadataSettings,
    /// librdkafka's `client.rack`.
    pub rack_id: String,
}

impl Default for KafkaClientSettings {
    fn default() -> Self {
        Self {
            brokers: vec!["localhost:9092".to_owned()],
            client_id: "otel-collector".to_owned(),
            protocol_version: None,
            resolve_canonical_bootstrap_servers_only: false,
            tls: None,
            auth: KafkaAuth::default(),
            metadata: MetadataSettings::default(),
            rack_id: String::new(),
        }
    }
}

impl Embedded for KafkaClientSettings {
    fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
        keep_unwritten!(self, defaults, written;
            brokers, client_id, protocol_version, resolve_canonical_bootstrap_servers_only,
            tls, auth, metadata, rack_id);
    }
}

/// `auth:`: SASL, and TLS where the Collector's older configurations put it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaAuth {
    /// SASL/PLAIN, in the Collector's older shape.
    pub plain_text: Option<PlainText>,
    pub sasl: Option<Sasl>,
    /// The Collector's older place for `tls`, used when `tls` is not set.
    pub tls: Option<TlsConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlainText {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sasl {
    pub username: String,
    pub password: String,
    pub mechanism: String,
    /// The SASL handshake version, 0 or 1; librdkafka negotiates it.
    pub version: i32,
}

impl Default for Sasl {
    fn default() -> Self {
        Self {
            username: String::new(),
            password: String::new(),
            mechanism: "PLAIN".to_owned(),
            version: 0,
        }
    }
}

/// The SASL mechanisms librdkafka is built with here.
pub const SASL_MECHANISMS: [&str; 3] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// `metadata:`; only `refresh_interval` changes what librdkafka does, the
/// others are accepted for the Collector's configurations.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataSettings {
    pub full: bool,
    pub refresh_interval: Duration,
    pub retry: MetadataRetry,
}

impl Default for MetadataSettings {
    fn default() -> Self {
        Self {
            full: true,
            refresh_interval: Duration::from_secs(600),
            retry: MetadataRetry::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataRetry {
    pub max: u32,
    pub backoff: Duration,
}

impl Default for MetadataRetry {
    fn default() -> Self {
        Self {
            max: 3,
            backoff: Duration(std::time::Duration::from_millis(250)),
        }
    }
}

/// A SASL login: (mechanism, username, password).
pub struct SaslLogin<'a> {
    pub mechanism: &'a str,
    pub username: &'a str,
    pub password: &'a str,
}

impl KafkaClientSettings {
    /// `tls`, or the older `auth.tls`, when it turns TLS on.
    pub fn tls(&self) -> Option<&TlsConfig> {
        self.tls
            .as_ref()
            .or(self.auth.tls.as_ref())
            .filter(|tls| tls.insecure != Some(true))
    }

    /// `auth.sasl`, or the older `auth.plain_text`.
    pub fn sasl(&self) -> Option<SaslLogin<'_>> {
        if let Some(sasl) = &self.auth.sasl {
            return Some(SaslLogin {
                mechanism: &sasl.mechanism,
                username: &sasl.username,
                password: &sasl.password,
            });
        }
        self.auth.plain_text.as_ref().map(|plain| SaslLogin {
            mechanism: "PLAIN",
            username: &plain.username,
            password: &plain.password,
        })
    }

    /// Every problem in the options, at its key path.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.brokers.iter().all(|broker| broker.trim().is_empty()) {
            problems.push(Problem::new(
                "brokers",
                "is empty; list the bootstrap brokers, like [kafka:9092]",
            ));
        }
        for (i, broker) in self.brokers.iter().enumerate() {
            if broker.contains("://") {
                problems.push(Problem::new(
                    format!("brokers[{i}]"),
                    format!("{broker:?} has a scheme; write host:port"),
                ));
            }
        }
        if let Some(sasl) = &self.auth.sasl {
            if !SASL_MECHANISMS.contains(&sasl.mechanism.as_str()) {
                problems.push(Problem::new(
                    "auth.sasl.mechanism",
                    format!(
                        "{:?} is not available; use one of {}",
                        sasl.mechanism,
                        SASL_MECHANISMS.join(", ")
                    ),
                ));
            }
            if !(0..=1).contains(&sasl.version) {
                problems.push(Problem::new("auth.sasl.version", "must be 0 or 1"));
            }
        }
        if let Some(login) = self.sasl() {
            let at = if self.auth.sasl.is_some() {
                "auth.sasl"
            } else {
                "auth.plain_text"
            };
            if login.username.is_empty() {
                problems.push(Problem::new(format!("{at}.username"), "is empty"));
            }
            if login.password.is_empty() {
                problems.push(Problem::new(format!("{at}.password"), "is empty"));
            }
        }
        if let Some(tls) = self.tls() {
            let at = if self.tls.is_some() {
                "tls"
            } else {
                "auth.tls"
            };
            if tls.cert_file.is_some() != tls.key_file.is_some() {
                problems.push(Problem::new(
                    format!("{at}.cert_file"),
                    "cert_file and key_file go together; set both or neither",
                ));
            }
            for (option, path) in [
                ("ca_file", &tls.ca_file),
                ("cert_file", &tls.cert_file),
                ("key_file", &tls.key_file),
            ] {
                if let Some(problem) = path.as_deref().and_then(file_problem) {
                    problems.push(Problem::new(format!("{at}.{option}"), problem));
                }
            }
        }
        problems
    }
}

/// The topic profiles go to unless the configuration names another.
pub const DEFAULT_TOPIC: &str = "otlp_profiles";

/// How each message's value encodes its `ExportProfilesServiceRequest`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageEncoding {
    #[default]
    OtlpProto,
    OtlpJson,
}

impl MessageEncoding {
    pub fn name(self) -> &'static str {
        match self {
            Self::OtlpProto => "otlp_proto",
            Self::OtlpJson => "otlp_json",
        }
    }
}

/// `profiles:`: the topic and encoding of profiles, as the Collector's
/// per-signal section; the top-level `topic` and `encoding` (the
/// Collector's older shape, deprecated there since v0.124) apply where it
/// is silent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfilesSignal {
    pub topic: Option<String>,
    pub encoding: Option<MessageEncoding>,
}

/// The topic and encoding that `profiles` and the top-level keys give.
pub fn signal_choice(
    profiles: &ProfilesSignal,
    topic: Option<&String>,
    encoding: Option<MessageEncoding>,
) -> (String, MessageEncoding) {
    let topic = profiles
        .topic
        .as_ref()
        .or(topic)
        .map_or_else(|| DEFAULT_TOPIC.to_owned(), Clone::clone);
    let encoding = profiles.encoding.or(encoding).unwrap_or_default();
    (topic, encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_sasl_plain_and_sasl_wins() {
        let mut settings = KafkaClientSettings::default();
        settings.auth.plain_text = Some(PlainText {
            username: "u".into(),
            password: "p".into(),
        });
        assert_eq!(settings.sasl().map(|login| login.mechanism), Some("PLAIN"));
        settings.auth.sasl = Some(Sasl {
            mechanism: "SCRAM-SHA-512".into(),
            username: "s".into(),
            password: "t".into(),
            version: 1,
        });
        let login = settings.sasl().unwrap();
        assert_eq!((login.mechanism, login.username), ("SCRAM-SHA-512", "s"));
        assert!(settings.problems().is_empty());
    }

    #[test]
    fn problems_name_their_keys() {
        let mut settings = KafkaClientSettings {
            brokers: vec!["kafka://a:9092".into()],
            ..KafkaClientSettings::default()
        };
        settings.auth.sasl = Some(Sasl {
            mechanism: "GSSAPI".into(),
            ..Sasl::default()
        });
        settings.tls = Some(TlsConfig {
            cert_file: Some("/nonexistent/cert.pem".into()),
            ..TlsConfig::default()
        });
        let keys: Vec<String> = settings
            .problems()
            .iter()
            .map(|problem| problem.path.clone())
            .collect();
        assert_eq!(
            keys,
            [
                "brokers[0]",
                "auth.sasl.mechanism",
                "auth.sasl.username",
                "auth.sasl.password",
                "tls.cert_file",
                "tls.cert_file"
            ]
        );
    }

    #[test]
    fn insecure_tls_is_no_tls() {
        let settings = KafkaClientSettings {
            tls: Some(TlsConfig {
                insecure: Some(true),
                ..TlsConfig::default()
            }),
            ..KafkaClientSettings::default()
        };
        assert!(settings.tls().is_none());
    }
}
