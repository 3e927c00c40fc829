#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The `kafka` exporter and receiver log in and connect securely, end to
//! end: `profbridge serve` processes with `auth` and `tls` against tansu
//! requiring SASL/SCRAM logins, behind TLS that checks the client's
//! certificate, and on the other side of each topic Python's
//! confluent-kafka logging in with its own credentials.
//!
//! tansu 0.6.0 offers SCRAM-SHA-256 and SCRAM-SHA-512 but not PLAIN, and
//! has no TLS of its own; a TLS terminator stands in front of it
//! (profbridge_testkit::kafka::SecureBroker says why and how). It runs on
//! SQLite storage, the one that keeps SCRAM credentials, and creates no
//! topic by itself: the tests name theirs up front.

use std::path::{Path, PathBuf};
use std::time::Duration;

use profbridge_testkit::kafka::{
    self, BrokerSecurity, BrokerTls, ClientSecurity, Encoding, SaslLogin, SecureBroker,
};
use profbridge_testkit::{venv_python, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

use crate::forwarding::{
    export_all_ok, generated, metric, profile_count, runtime, scrape, wait_until, PATIENCE,
    RETRY_FOREVER,
};
use crate::kafka::{distinct_requests, encoded, sorted, totals, TELEMETRY};
use crate::support::collector::Collector;

/// (user, password) of the agents, the gateways and the Python client.
const AGENT: (&str, &str) = ("agent", "agent-secret");
const GATEWAY: (&str, &str) = ("gateway", "gateway-secret");
const PYTHON: (&str, &str) = ("python", "python-secret");

const SCRAM_256: &str = "SCRAM-SHA-256";
const SCRAM_512: &str = "SCRAM-SHA-512";

/// Whether Python's confluent-kafka is there to be the other side (else a
/// loud note, or a panic when interop is required).
fn other_side_available() -> bool {
    venv_python(
        "confluent_kafka",
        "confluent-kafka",
        "a Kafka client on the other side of the topics",
    )
    .is_some()
}

// ---- certificates ----

/// A CA (`ca`) and the broker's certificate for 127.0.0.1 and localhost;
/// a second CA (`client_ca`) and a client certificate it signed; a third
/// CA (`stranger_ca`) that signed nothing used here. PEM files.
struct Certificates {
    ca: PathBuf,
    server: PathBuf,
    server_key: PathBuf,
    client_ca: PathBuf,
    client: PathBuf,
    client_key: PathBuf,
    stranger_ca: PathBuf,
    _dir: TempDir,
}

impl Certificates {
    fn generate() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DistinguishedName, DnType,
            ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        };
        let dir = TempDir::new("kafka-certificates");
        let write = |name: &str, pem: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };
        let ca = |name: &str| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let mut subject = DistinguishedName::new();
            subject.push(DnType::CommonName, name);
            params.distinguished_name = subject;
            let certificate = params.self_signed(&key).unwrap();
            (certificate.pem(), Issuer::new(params, key))
        };
        let leaf = |names: Vec<String>, purpose, issuer: &Issuer<'_, KeyPair>| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params.extended_key_usages = vec![purpose];
            let certificate = params.signed_by(&key, issuer).unwrap();
            (certificate.pem(), key.serialize_pem())
        };

        let (broker_ca, broker_issuer) = ca("profbridge test broker CA");
        let (server, server_key) = leaf(
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            ExtendedKeyUsagePurpose::ServerAuth,
            &broker_issuer,
        );
        let (client_ca, client_issuer) = ca("profbridge test client CA");
        let (client, client_key) = leaf(
            vec!["profbridge-agent".to_owned()],
            ExtendedKeyUsagePurpose::ClientAuth,
            &client_issuer,
        );
        Self {
            ca: write("ca.pem", broker_ca),
            server: write("server.pem", server),
            server_key: write("server.key", server_key),
            client_ca: write("client-ca.pem", client_ca),
            client: write("client.pem", client),
            client_key: write("client.key", client_key),
            stranger_ca: write("stranger-ca.pem", ca("a CA nobody here uses").0),
            _dir: dir,
        }
    }

    /// The broker's side; it asks clients for a certificate that
    /// `client_ca` signed when `check_clients`.
    fn broker(&self, check_clients: bool) -> BrokerTls<'_> {
        BrokerTls {
            cert_file: &self.server,
            key_file: &self.server_key,
            client_ca_file: check_clients.then_some(self.client_ca.as_path()),
        }
    }

    fn client_certificate(&self) -> Option<(&Path, &Path)> {
        Some((&self.client, &self.client_key))
    }
}

// ---- configurations ----

/// An agent: OTLP gRPC in, each of `exporters` (id, YAML lines at the
/// exporter's indentation) a `kafka` exporter to `broker`, retrying
/// forever, all in one pipeline.
fn agent_config(broker: &SecureBroker, exporters: &[(&str, String)]) -> String {
    let mut config =
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
                      exporters:\n"
            .to_owned();
    for (id, options) in exporters {
        config.push_str(&format!(
            "  {id}:\n    brokers: [{}]\n{options}{RETRY_FOREVER}",
            broker.bootstrap()
        ));
    }
    let ids: Vec<&str> = exporters.iter().map(|(id, _)| *id).collect();
    config.push_str(&format!(
        "service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{}]\n{TELEMETRY}",
        ids.join(", ")
    ));
    config
}

/// A gateway: each of `receivers` (id, YAML lines at the receiver's
/// indentation) a `kafka` receiver from `broker` in a consumer group of
/// its own, every request taken written as an OTLP protobuf file under
/// `{data}`.
fn gateway_config(broker: &SecureBroker, receivers: &[(&str, String)]) -> String {
    let mut config = "receivers:\n".to_owned();
    for (id, options) in receivers {
        config.push_str(&format!(
            "  {id}:\n    brokers: [{}]\n    initial_offset: earliest\n    group_id: {}\n{options}",
            broker.bootstrap(),
            id.replace('/', "-")
        ));
    }
    let ids: Vec<&str> = receivers.iter().map(|(id, _)| *id).collect();
    config.push_str(&format!(
        "exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [{}]\n      exporters: [file]\n{TELEMETRY}",
        ids.join(", ")
    ));
    config
}

fn topic(name: &str) -> String {
    format!("    profiles:\n      topic: {name}\n")
}

/// `auth.sasl` with `mechanism` and `login`.
fn sasl(mechanism: &str, login: (&str, &str)) -> String {
    format!("    auth:\n{}", sasl_lines(mechanism, login))
}

/// `sasl` at `auth`'s indentation plus two.
fn sasl_lines(mechanism: &str, (username, password): (&str, &str)) -> String {
    format!(
        "      sasl:\n        mechanism: {mechanism}\n        username: {username}\n        password: {password}\n"
    )
}

/// `tls` trusting `ca_file`, presenting `certificate` (cert, key) if any.
fn tls(ca_file: &Path, certificate: Option<(&Path, &Path)>) -> String {
    let mut yaml = format!("    tls:\n      ca_file: {}\n", ca_file.display());
    if let Some((cert, key)) = certificate {
        yaml.push_str(&format!(
            "      cert_file: {}\n      key_file: {}\n",
            cert.display(),
            key.display()
        ));
    }
    yaml
}

fn login(mechanism: &str, (username, password): (&str, &str)) -> SaslLogin {
    SaslLogin {
        mechanism: mechanism.to_owned(),
        username: username.to_owned(),
        password: password.to_owned(),
    }
}

// ---- metrics ----

fn exporter_metric(collector: &Collector, exporter: &str, name: &str) -> f64 {
    metric(
        &scrape(collector.telemetry),
        &format!("profbridge_exporter_{name}{{exporter=\"{exporter}\"}}"),
    )
}

fn receiver_metric(collector: &Collector, receiver: &str, name: &str) -> f64 {
    metric(
        &scrape(collector.telemetry),
        &format!("profbridge_receiver_{name}{{receiver=\"{receiver}\",transport=\"kafka\"}}"),
    )
}

// ---- what the other side sees ----

/// Reads `sent.len()` messages from `topic` as `security` logs in, and
/// checks that they are the requests of `sent`, byte for byte, and that
/// opentelemetry-proto finds the same samples in them.
fn assert_topic_holds(
    broker: &SecureBroker,
    topic: &str,
    security: &ClientSecurity,
    sent: &[ExportProfilesServiceRequest],
) {
    let messages =
        kafka::consume_with(&broker.bootstrap(), topic, sent.len(), PATIENCE, security).unwrap();
    let values: Vec<Vec<u8>> = messages.into_iter().map(|m| m.value).collect();
    assert_eq!(
        totals(&values, Encoding::Proto),
        totals(&encoded(sent), Encoding::Proto),
        "{topic}: the sample totals per type of what was sent"
    );
    assert_eq!(
        sorted(values),
        sorted(encoded(sent)),
        "{topic}: every request exactly"
    );
}

/// Produces `requests` to `topic` as `security` logs in.
fn produce(
    broker: &SecureBroker,
    topic: &str,
    security: &ClientSecurity,
    requests: &[ExportProfilesServiceRequest],
) {
    let records: Vec<kafka::Record> = requests
        .iter()
        .map(|request| (None, request.encode_to_vec()))
        .collect();
    kafka::produce_with(&broker.bootstrap(), topic, &records, PATIENCE, security).unwrap();
}

/// Waits until `gateway` wrote as many distinct requests as `expected`
/// holds, then checks they are exactly those.
fn assert_gateway_wrote(gateway: &Collector, expected: &[ExportProfilesServiceRequest]) {
    wait_until("every request written by the gateway", || {
        distinct_requests(&gateway.data).0.len() >= expected.len()
    });
    let (written, duplicates) = distinct_requests(&gateway.data);
    assert_eq!(duplicates, 0);
    assert_eq!(written, sorted(encoded(expected)), "every request, exactly");
}

// ---- SASL ----

#[test]
fn scram_sha_256_and_512_logins_carry_requests_both_ways() {
    if !other_side_available() {
        return;
    }
    let Some(broker) = SecureBroker::start(
        "kafka-scram",
        &BrokerSecurity {
            scram_users: &[AGENT, GATEWAY, PYTHON],
            topics: &[("out-256", 2), ("out-512", 2), ("in-256", 1), ("in-512", 1)],
            tls: None,
        },
    ) else {
        return;
    };
    let python = |mechanism| ClientSecurity {
        sasl: Some(login(mechanism, PYTHON)),
        ..ClientSecurity::default()
    };

    let agent = Collector::start(
        "kafka-scram-agent",
        &agent_config(
            &broker,
            &[
                ("kafka/sha256", topic("out-256") + &sasl(SCRAM_256, AGENT)),
                ("kafka/sha512", topic("out-512") + &sasl(SCRAM_512, AGENT)),
            ],
        ),
    );
    let sent = generated(5, 100);
    export_all_ok(&runtime(), agent.grpc.unwrap(), &sent);
    assert_topic_holds(&broker, "out-256", &python(SCRAM_256), &sent);
    assert_topic_holds(&broker, "out-512", &python(SCRAM_512), &sent);

    let to_256 = generated(4, 200);
    let to_512 = generated(3, 300);
    produce(&broker, "in-256", &python(SCRAM_256), &to_256);
    produce(&broker, "in-512", &python(SCRAM_512), &to_512);
    let gateway = Collector::start(
        "kafka-scram-gateway",
        &gateway_config(
            &broker,
            &[
                ("kafka/sha256", topic("in-256") + &sasl(SCRAM_256, GATEWAY)),
                ("kafka/sha512", topic("in-512") + &sasl(SCRAM_512, GATEWAY)),
            ],
        ),
    );
    let both: Vec<_> = to_256.iter().chain(&to_512).cloned().collect();
    assert_gateway_wrote(&gateway, &both);
    for (receiver, requests) in [("kafka/sha256", &to_256), ("kafka/sha512", &to_512)] {
        assert_eq!(
            receiver_metric(&gateway, receiver, "accepted_profiles_total"),
            profile_count(requests),
            "{receiver} took its topic"
        );
    }
}

#[test]
fn a_wrong_password_delivers_nothing_keeps_the_requests_and_logs_why() {
    if !other_side_available() {
        return;
    }
    let Some(broker) = SecureBroker::start(
        "kafka-wrong-password",
        &BrokerSecurity {
            scram_users: &[AGENT, GATEWAY, PYTHON],
            topics: &[("profiles", 1)],
            tls: None,
        },
    ) else {
        return;
    };
    let python = ClientSecurity {
        sasl: Some(login(SCRAM_512, PYTHON)),
        ..ClientSecurity::default()
    };
    let produced = generated(3, 400);
    produce(&broker, "profiles", &python, &produced);

    let wrong = (AGENT.0, "not-the-password");
    let agent = Collector::start_logged(
        "kafka-wrong-password-agent",
        &agent_config(
            &broker,
            &[("kafka", topic("profiles") + &sasl(SCRAM_512, wrong))],
        ),
    );
    let gateway = Collector::start_logged(
        "kafka-wrong-password-gateway",
        &gateway_config(
            &broker,
            &[(
                "kafka",
                topic("profiles") + &sasl(SCRAM_256, (GATEWAY.0, "wrong")),
            )],
        ),
    );
    let exported = generated(2, 500);
    export_all_ok(&runtime(), agent.grpc.unwrap(), &exported);

    // librdkafka's words for a SCRAM proof the broker did not accept.
    let refused = |log: String| log.contains("SASL SCRAM authentication failed");
    wait_until("the agent's log saying the login failed", || {
        refused(agent.log())
    });
    wait_until("the gateway's log saying the login failed", || {
        refused(gateway.log())
    });
    wait_until("the agent retrying, saying why", || {
        agent.log().lines().any(|line| {
            line.contains("export failed; will retry")
                && line.contains("the client's last error")
                && refused(line.to_owned())
        })
    });
    assert_eq!(exporter_metric(&agent, "kafka", "sent_profiles_total"), 0.0);
    assert_eq!(
        exporter_metric(&agent, "kafka", "send_failed_profiles_total"),
        0.0,
        "nothing given up: the requests wait for a login that works"
    );
    assert_eq!(
        exporter_metric(&agent, "kafka", "queue_size"),
        exported.len() as f64
    );
    assert_eq!(
        receiver_metric(&gateway, "kafka", "accepted_profiles_total"),
        0.0
    );
    assert!(distinct_requests(&gateway.data).0.is_empty());
    // Far more than there are: every message on the topic, after a pause.
    let on_topic: Vec<Vec<u8>> = kafka::consume_with(
        &broker.bootstrap(),
        "profiles",
        100,
        Duration::from_secs(10),
        &python,
    )
    .unwrap()
    .into_iter()
    .map(|m| m.value)
    .collect();
    assert_eq!(
        on_topic,
        encoded(&produced),
        "only what Python produced is on the topic"
    );
}

// ---- TLS ----

#[test]
fn tls_checks_the_broker_and_presents_a_client_certificate() {
    if !other_side_available() {
        return;
    }
    let certificates = Certificates::generate();
    let Some(broker) = SecureBroker::start(
        "kafka-tls",
        &BrokerSecurity {
            scram_users: &[],
            topics: &[("out", 2), ("in", 1)],
            tls: Some(certificates.broker(true)),
        },
    ) else {
        return;
    };
    let python = ClientSecurity {
        ca_file: Some(certificates.ca.clone()),
        certificate: Some((certificates.client.clone(), certificates.client_key.clone())),
        ..ClientSecurity::default()
    };
    let options = |name| topic(name) + &tls(&certificates.ca, certificates.client_certificate());

    let agent = Collector::start(
        "kafka-tls-agent",
        &agent_config(&broker, &[("kafka", options("out"))]),
    );
    let sent = generated(5, 600);
    export_all_ok(&runtime(), agent.grpc.unwrap(), &sent);
    assert_topic_holds(&broker, "out", &python, &sent);

    let produced = generated(4, 700);
    produce(&broker, "in", &python, &produced);
    let gateway = Collector::start(
        "kafka-tls-gateway",
        &gateway_config(&broker, &[("kafka", options("in"))]),
    );
    assert_gateway_wrote(&gateway, &produced);
    assert!(
        broker.refused_handshakes().is_empty(),
        "{:?}",
        broker.refused_handshakes()
    );
}

#[test]
fn tls_without_the_client_certificate_or_with_another_ca_delivers_nothing() {
    if !other_side_available() {
        return;
    }
    let certificates = Certificates::generate();
    let Some(broker) = SecureBroker::start(
        "kafka-tls-refused",
        &BrokerSecurity {
            scram_users: &[],
            topics: &[("out", 1)],
            tls: Some(certificates.broker(true)),
        },
    ) else {
        return;
    };
    let without_certificate = Collector::start_logged(
        "kafka-tls-no-certificate",
        &agent_config(
            &broker,
            &[("kafka", topic("out") + &tls(&certificates.ca, None))],
        ),
    );
    let stranger = Collector::start_logged(
        "kafka-tls-stranger-ca",
        &agent_config(
            &broker,
            &[(
                "kafka",
                topic("out") + &tls(&certificates.stranger_ca, certificates.client_certificate()),
            )],
        ),
    );
    let runtime = runtime();
    export_all_ok(
        &runtime,
        without_certificate.grpc.unwrap(),
        &generated(2, 800),
    );
    export_all_ok(&runtime, stranger.grpc.unwrap(), &generated(2, 900));

    wait_until("the broker refusing a client without a certificate", || {
        broker
            .refused_handshakes()
            .iter()
            .any(|why| why.contains("no certificates"))
    });
    wait_until("the agent's log saying the broker refused it", || {
        without_certificate
            .log()
            .contains("alert certificate required")
    });
    wait_until(
        "the other agent's log saying it does not trust the broker",
        || stranger.log().contains("certificate verify failed"),
    );
    for agent in [&without_certificate, &stranger] {
        wait_until("a failed attempt", || {
            agent.log().contains("export failed; will retry")
        });
        assert_eq!(exporter_metric(agent, "kafka", "sent_profiles_total"), 0.0);
        assert_eq!(exporter_metric(agent, "kafka", "queue_size"), 2.0);
    }
    let python = ClientSecurity {
        ca_file: Some(certificates.ca.clone()),
        certificate: Some((certificates.client.clone(), certificates.client_key.clone())),
        ..ClientSecurity::default()
    };
    // Far more than there are: every message on the topic, after a pause.
    let on_topic = kafka::consume_with(
        &broker.bootstrap(),
        "out",
        100,
        Duration::from_secs(10),
        &python,
    )
    .unwrap();
    assert!(on_topic.is_empty(), "{} messages", on_topic.len());
}

// ---- SASL over TLS, and the Collector's older `auth` shapes ----

/// `auth` in the Collector's older shape: `tls` trusting `ca_file` inside
/// it, and `login_yaml` (`plain_text` or `sasl`, at auth's indentation
/// plus two).
fn older_auth(ca_file: &Path, login_yaml: &str) -> String {
    format!(
        "    auth:\n      tls:\n        ca_file: {}\n{login_yaml}",
        ca_file.display()
    )
}

#[test]
fn scram_over_tls_in_the_newer_and_the_older_shapes() {
    if !other_side_available() {
        return;
    }
    let certificates = Certificates::generate();
    let Some(broker) = SecureBroker::start(
        "kafka-sasl-ssl",
        &BrokerSecurity {
            scram_users: &[AGENT, GATEWAY, PYTHON],
            topics: &[("newer", 2), ("older", 2), ("in", 1)],
            tls: Some(certificates.broker(false)),
        },
    ) else {
        return;
    };
    let ca = &certificates.ca;
    let python = ClientSecurity {
        sasl: Some(login(SCRAM_512, PYTHON)),
        ca_file: Some(ca.clone()),
        ..ClientSecurity::default()
    };
    let agent = Collector::start(
        "kafka-sasl-ssl-agent",
        &agent_config(
            &broker,
            &[
                (
                    "kafka/newer",
                    topic("newer") + &tls(ca, None) + &sasl(SCRAM_256, AGENT),
                ),
                (
                    "kafka/older",
                    topic("older") + &older_auth(ca, &sasl_lines(SCRAM_256, AGENT)),
                ),
            ],
        ),
    );
    let sent = generated(5, 1000);
    export_all_ok(&runtime(), agent.grpc.unwrap(), &sent);
    assert_topic_holds(&broker, "newer", &python, &sent);
    assert_topic_holds(&broker, "older", &python, &sent);

    let produced = generated(4, 1100);
    produce(&broker, "in", &python, &produced);
    let gateway = Collector::start(
        "kafka-sasl-ssl-gateway",
        &gateway_config(
            &broker,
            &[(
                "kafka",
                topic("in") + &older_auth(ca, &sasl_lines(SCRAM_512, GATEWAY)),
            )],
        ),
    );
    assert_gateway_wrote(&gateway, &produced);
}

#[test]
fn auth_plain_text_logs_in_with_sasl_plain_which_tansu_does_not_offer() {
    let certificates = Certificates::generate();
    let Some(broker) = SecureBroker::start(
        "kafka-plain-text",
        &BrokerSecurity {
            scram_users: &[AGENT],
            topics: &[("out", 1)],
            tls: Some(certificates.broker(false)),
        },
    ) else {
        return;
    };
    let (username, password) = AGENT;
    let plain_text =
        format!("      plain_text:\n        username: {username}\n        password: {password}\n");
    let agent = Collector::start_logged(
        "kafka-plain-text-agent",
        &agent_config(
            &broker,
            &[(
                "kafka",
                topic("out") + &older_auth(&certificates.ca, &plain_text),
            )],
        ),
    );
    export_all_ok(&runtime(), agent.grpc.unwrap(), &generated(1, 1200));
    // Over TLS (from auth.tls), the SASL handshake asks for PLAIN.
    wait_until(
        "the agent's log naming the PLAIN handshake over TLS",
        || {
            agent.log().lines().any(|line| {
                line.contains("sasl_ssl://")
                    && line.contains("SASL PLAIN mechanism handshake failed")
            })
        },
    );
    assert_eq!(exporter_metric(&agent, "kafka", "sent_profiles_total"), 0.0);
}
