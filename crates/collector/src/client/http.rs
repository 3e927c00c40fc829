//! The reqwest client HTTP clients send with: TLS from the shared
//! `tls` options (CA, client certificate, skip verification).

use std::time::Duration;

use reqwest::Client;

use super::tls::{ClientTlsError, TlsFiles};
use crate::settings::client::TlsConfig;
use crate::shared::root_cause::with_root_cause;

/// Why an HTTP client cannot be built; reqwest's errors are
/// shown with their innermost cause.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpClientError {
    #[error(transparent)]
    Tls(#[from] ClientTlsError),
    #[error("cannot build the HTTP client: {}", error_chain(.0))]
    Build(reqwest::Error),
    #[error("tls.ca_file: {}", error_chain(.0))]
    CaFile(reqwest::Error),
    #[error("tls.cert_file/key_file: {}", error_chain(.0))]
    Identity(reqwest::Error),
}

/// A client, over TLS when `tls`; `timeout` bounds connecting.
pub(crate) fn client(
    config: &TlsConfig,
    tls: bool,
    timeout: Option<Duration>,
) -> Result<Client, HttpClientError> {
    let mut builder =
        Client::builder().user_agent(concat!("profbridge/", env!("CARGO_PKG_VERSION")));
    if let Some(timeout) = timeout {
        builder = builder.connect_timeout(timeout);
    }
    if tls {
        builder = with_tls(builder.https_only(true), config)?;
    }
    builder.build().map_err(HttpClientError::Build)
}

/// A client for `http://` and `https://` URLs alike, the latter with
/// the `tls` options' CA and client certificate (the pprof receiver's
/// scrapes).
pub(crate) fn any_scheme_client(config: &TlsConfig) -> Result<Client, HttpClientError> {
    let builder = Client::builder().user_agent(concat!("profbridge/", env!("CARGO_PKG_VERSION")));
    with_tls(builder, config)?
        .build()
        .map_err(HttpClientError::Build)
}

fn with_tls(
    mut builder: reqwest::ClientBuilder,
    config: &TlsConfig,
) -> Result<reqwest::ClientBuilder, HttpClientError> {
    let files = TlsFiles::read(config)?;
    if let Some(ca) = files.ca {
        let certificates =
            reqwest::Certificate::from_pem_bundle(&ca).map_err(HttpClientError::CaFile)?;
        builder = builder.tls_built_in_root_certs(false);
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    if let Some((mut pem, key)) = files.identity {
        pem.push(b'\n');
        pem.extend_from_slice(&key);
        let identity = reqwest::Identity::from_pem(&pem).map_err(HttpClientError::Identity)?;
        builder = builder.identity(identity);
    }
    Ok(builder.danger_accept_invalid_certs(config.insecure_skip_verify))
}

/// An error and its innermost cause.
fn error_chain(error: &dyn std::error::Error) -> String {
    with_root_cause(error.to_string(), error)
}
