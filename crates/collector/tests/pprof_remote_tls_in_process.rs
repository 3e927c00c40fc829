#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The pprof receiver's `remote` source scrapes an `https://` target whose
//! certificate a private CA signed, trusting that CA through `tls.ca_file`;
//! without it, the scrape fails as `connect`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::service;
use profbridge_testkit::{corpus_file, TempDir};

/// A CA (written to `ca.pem` under `dir`) and a certificate and key it
/// signed for localhost.
fn pki(dir: &std::path::Path) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Answers every request over TLS with `body`, one per connection.
async fn serve_tls(cert: &str, key: &str, body: Vec<u8>) -> SocketAddr {
    let chain = vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let body = Arc::new(body);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, body) = (acceptor.clone(), Arc::clone(&body));
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&body).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    address
}

fn count(
    registry: &profbridge_collector::telemetry::Registry,
    name: &str,
    target: &str,
    reason: Option<&str>,
) -> u64 {
    registry
        .series(name)
        .into_iter()
        .filter(|(labels, _)| {
            labels.iter().any(|(k, v)| k == "target" && v == target)
                && reason
                    .is_none_or(|reason| labels.iter().any(|(k, v)| k == "reason" && v == reason))
        })
        .map(|(_, value)| value as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_are_scraped_with_the_tls_options_ca() {
    let Some(profile) = corpus_file("go.crc32.cpu") else {
        return;
    };
    let dir = TempDir::new("pprof-remote-tls");
    let (cert, key) = pki(dir.path());
    let address = serve_tls(&cert, &key, profile.bytes).await;
    let trusted = format!("https://localhost:{}/trusted", address.port());
    let yaml = |tls: &str, target: &str| {
        format!(
            "receivers:\n  pprof:\n    remote:\n      collection_interval: 200ms\n      initial_delay: 0s\n      profiles: [goroutine]\n{tls}\
             \x20     targets:\n        - targets: [{target}]\n\
             exporters:\n  debug: {{}}\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [debug]\n  telemetry:\n    metrics:\n      address: \"\"\n"
        )
    };
    let ca = format!(
        "      tls:\n        ca_file: {}\n",
        dir.path().join("ca.pem").display()
    );
    for (tls, reason) in [(ca.as_str(), None), ("", Some("connect"))] {
        let config =
            parse_yaml(&yaml(tls, &trusted), &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
        let running = service::start(&config).await.unwrap();
        let registry = Arc::clone(&running.metrics);
        for _ in 0..1200 {
            let done = match reason {
                Some(reason) => {
                    count(
                        &registry,
                        "profbridge_scraper_errors_total",
                        &trusted,
                        Some(reason),
                    ) >= 2
                }
                None => {
                    count(&registry, "profbridge_scraper_up", &trusted, None) == 1
                        && count(
                            &registry,
                            "profbridge_scraper_scrapes_total",
                            &trusted,
                            None,
                        ) >= 2
                }
            };
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match reason {
            Some(reason) => assert!(
                count(
                    &registry,
                    "profbridge_scraper_errors_total",
                    &trusted,
                    Some(reason)
                ) >= 2,
                "untrusted: {reason}"
            ),
            None => {
                assert_eq!(count(&registry, "profbridge_scraper_up", &trusted, None), 1);
                assert_eq!(
                    count(&registry, "profbridge_scraper_errors_total", &trusted, None),
                    0
                );
            }
        }
        assert!(running.shutdown(Duration::from_secs(10)).await);
    }
}
