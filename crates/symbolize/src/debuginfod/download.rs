//! One GET of a debuginfod file through ureq (blocking: the symbolizer is
//! called from synchronous code, sometimes inside an async runtime),
//! bounded in time and size, streamed into a temporary file that is
//! renamed into the cache once complete.

use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::Agent;

use super::{Debuginfod, FetchError};

/// An agent for `config`'s servers: its timeouts, no error for statuses
/// (404 is an answer), and for `https://` (redirects included) the
/// platform's root certificates (`SSL_CERT_FILE` and `SSL_CERT_DIR` are
/// honoured), or Mozilla's where the platform has none.
pub(super) fn agent(config: &Debuginfod) -> Agent {
    let within = |timeout: std::time::Duration| Some(timeout.min(config.timeout));
    let roots = platform_roots().unwrap_or(RootCerts::WebPki);
    Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(concat!("profbridge/", env!("CARGO_PKG_VERSION")))
        .timeout_global(Some(config.timeout))
        .timeout_resolve(within(config.connect_timeout))
        .timeout_connect(within(config.connect_timeout))
        .timeout_per_read(within(config.read_timeout))
        .tls_config(TlsConfig::builder().root_certs(roots).build())
        .build()
        .into()
}

fn platform_roots() -> Option<RootCerts> {
    let found = rustls_native_certs::load_native_certs();
    let certificates: Vec<Certificate<'static>> = found
        .certs
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()).to_owned())
        .collect();
    (!certificates.is_empty()).then(|| RootCerts::new_with_certs(&certificates))
}

/// `URL/buildid/HEX/KIND`.
pub(super) fn file_url(server: &str, id: &str, kind: &str) -> String {
    format!("{}/buildid/{id}/{kind}", server.trim_end_matches('/'))
}

/// GETs `url` into `destination` within `timeout` (all of it, from
/// resolving the name to the last byte): `Some(destination)` on 200,
/// `None` on 404. A body longer than `max_bytes` is not kept.
pub(super) fn fetch(
    agent: &Agent,
    url: &str,
    timeout: Duration,
    max_bytes: u64,
    destination: &Path,
) -> Result<Option<PathBuf>, FetchError> {
    let response = agent
        .get(url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .call()?;
    match response.status().as_u16() {
        200 => {}
        404 => return Ok(None),
        other => return Err(FetchError::Status(other)),
    }
    let body = response.into_body();
    if body
        .content_length()
        .is_some_and(|length| length > max_bytes)
    {
        return Err(FetchError::TooLarge(max_bytes));
    }
    let folder = destination
        .parent()
        .ok_or_else(|| FetchError::Cache(ErrorKind::InvalidInput.into()))?;
    std::fs::create_dir_all(folder).map_err(FetchError::Cache)?;
    // Removed when dropped, if the download does not complete.
    let mut partial = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(folder)
        .map_err(FetchError::Cache)?;
    let mut reader = body.into_with_config().limit(max_bytes).reader();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(ureq::Error::from(error).into()),
        };
        partial
            .write_all(buffer.get(..read).unwrap_or_default())
            .map_err(FetchError::Cache)?;
    }
    partial
        .persist(destination)
        .map_err(|error| FetchError::Cache(error.error))?;
    Ok(Some(destination.to_path_buf()))
}
