//! librdkafka's properties from the shared Kafka options
//! (`settings::kafka`), and the client context that sends librdkafka's
//! log lines and errors to our log, labelled with the component.

use std::sync::{Arc, Mutex, PoisonError};

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientConfig;

use crate::settings::kafka::KafkaClientSettings;

/// The properties every Kafka client of the component `id` starts with.
pub(crate) fn client_config(id: &str, settings: &KafkaClientSettings) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", settings.brokers.join(","))
        .set("client.id", &settings.client_id)
        .set(
            "topic.metadata.refresh.interval.ms",
            millis(settings.metadata.refresh_interval.0).to_string(),
        )
        .set_log_level(RDKafkaLogLevel::Warning);
    if settings.resolve_canonical_bootstrap_servers_only {
        config.set(
            "client.dns.lookup",
            "resolve_canonical_bootstrap_servers_only",
        );
    }
    if !settings.rack_id.is_empty() {
        config.set("client.rack", &settings.rack_id);
    }
    let tls = settings.tls();
    let sasl = settings.sasl();
    let protocol = match (tls.is_some(), sasl.is_some()) {
        (false, false) => "plaintext",
        (true, false) => "ssl",
        (false, true) => "sasl_plaintext",
        (true, true) => "sasl_ssl",
    };
    config.set("security.protocol", protocol);
    if let Some(login) = sasl {
        config
            .set("sasl.mechanisms", login.mechanism)
            .set("sasl.username", login.username)
            .set("sasl.password", login.password);
    }
    if let Some(tls) = tls {
        if let Some(ca) = &tls.ca_file {
            config.set("ssl.ca.location", ca);
        }
        if let Some(cert) = &tls.cert_file {
            config.set("ssl.certificate.location", cert);
        }
        if let Some(key) = &tls.key_file {
            config.set("ssl.key.location", key);
        }
        if tls.insecure_skip_verify {
            config
                .set("enable.ssl.certificate.verification", "false")
                .set("ssl.endpoint.identification.algorithm", "none");
        }
    }
    tracing::debug!(component = id, brokers = %settings.brokers.join(","), protocol, "kafka client");
    config
}

/// A duration as librdkafka's milliseconds, at least 1.
pub(crate) fn millis(duration: std::time::Duration) -> u128 {
    duration.as_millis().max(1)
}

/// Sends librdkafka's log lines and client errors to our log, and keeps
/// the last client error (a refused login, a failed TLS handshake), which
/// no message's delivery report names.
#[derive(Debug, Clone)]
pub(crate) struct LoggingContext {
    /// The component's id.
    pub component: String,
    pub last_error: Arc<Mutex<Option<String>>>,
}

impl LoggingContext {
    pub(crate) fn new(component: &str) -> Self {
        Self {
            component: component.to_owned(),
            last_error: Arc::default(),
        }
    }

    /// Forgets the last client error: everything since went through.
    pub(crate) fn forget_last_error(&self) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The last client error, if there was one.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ClientContext for LoggingContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        let component = self.component.as_str();
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(component, facility, message, "librdkafka");
            }
            RDKafkaLogLevel::Warning => tracing::warn!(component, facility, message, "librdkafka"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(component, facility, message, "librdkafka");
            }
            RDKafkaLogLevel::Debug => tracing::debug!(component, facility, message, "librdkafka"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(component = self.component.as_str(), %error, reason, "kafka client error");
        // "1/1 brokers are down" follows each broker's own error, which says why.
        if error.rdkafka_error_code() != Some(RDKafkaErrorCode::AllBrokersDown) {
            *self
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(reason.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::client::TlsConfig;
    use crate::settings::kafka::Sasl;

    #[test]
    fn sasl_over_tls_sets_librdkafka_properties() {
        let mut settings = KafkaClientSettings {
            brokers: vec!["a:9092".into(), "b:9093".into()],
            tls: Some(TlsConfig {
                ca_file: Some("/ca.pem".into()),
                insecure_skip_verify: true,
                ..TlsConfig::default()
            }),
            ..KafkaClientSettings::default()
        };
        settings.auth.sasl = Some(Sasl {
            mechanism: "SCRAM-SHA-256".into(),
            username: "u".into(),
            password: "p".into(),
            version: 0,
        });
        let config = client_config("kafka", &settings);
        for (key, value) in [
            ("bootstrap.servers", "a:9092,b:9093"),
            ("client.id", "otel-collector"),
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanisms", "SCRAM-SHA-256"),
            ("sasl.username", "u"),
            ("ssl.ca.location", "/ca.pem"),
            ("enable.ssl.certificate.verification", "false"),
        ] {
            assert_eq!(config.get(key), Some(value), "{key}");
        }
        assert_eq!(
            client_config("kafka", &KafkaClientSettings::default()).get("security.protocol"),
            Some("plaintext")
        );
    }
}
