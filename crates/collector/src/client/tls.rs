//! Endpoint schemes, whether a connection uses TLS, and the PEM files TLS
//! options name. Shared by every client, over gRPC or HTTP.

use crate::settings::client::TlsConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

/// A client's endpoint and TLS options that do not fit together, or
/// TLS files that cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientTlsError {
    #[error("endpoint is empty")]
    EmptyEndpoint,
    #[error("endpoint {endpoint:?} has scheme {scheme:?}; use http://, https:// or none")]
    UnknownScheme { endpoint: String, scheme: String },
    #[error("endpoint {0:?} has no host")]
    NoHost(String),
    #[error("tls.cert_file and tls.key_file go together; set both or neither")]
    HalfIdentity,
    #[error("the endpoint is https:// but tls.insecure is true")]
    HttpsButInsecure,
    #[error("the endpoint is http:// but tls.insecure is false")]
    HttpButNotInsecure,
    #[error("TLS options are set but the endpoint is http://; use https:// or no scheme")]
    OptionsOverHttp,
    #[error("TLS options are set but tls.insecure is true")]
    OptionsButInsecure,
    #[error("cannot read {path}: {error}")]
    ReadPem { path: String, error: std::io::Error },
    #[error("{0} is not a PEM file")]
    NotPem(String),
    #[error("{0}")]
    Protocols(tokio_rustls::rustls::Error),
    #[error("tls.cert_file: {0}")]
    Certificate(tokio_rustls::rustls::pki_types::pem::Error),
    #[error("tls.key_file: {0}")]
    Key(tokio_rustls::rustls::pki_types::pem::Error),
    #[error("tls.cert_file and tls.key_file: {0}")]
    CertificateAndKey(tokio_rustls::rustls::Error),
}

/// The scheme an endpoint starts with, if any, and what follows it.
pub(crate) fn split_scheme(endpoint: &str) -> Result<(Option<Scheme>, &str), ClientTlsError> {
    let endpoint = endpoint.trim();
    if endpoint.is_empty() {
        return Err(ClientTlsError::EmptyEndpoint);
    }
    let (scheme, rest) = match endpoint.split_once("://") {
        None => (None, endpoint),
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "http" => (Some(Scheme::Http), rest),
            "https" => (Some(Scheme::Https), rest),
            other => {
                return Err(ClientTlsError::UnknownScheme {
                    endpoint: endpoint.to_owned(),
                    scheme: other.to_owned(),
                })
            }
        },
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(ClientTlsError::NoHost(endpoint.to_owned()));
    }
    Ok((scheme, rest))
}

/// Whether to connect with TLS: `https://` always, `http://` never, no
/// scheme when `insecure: false` or another TLS option is set.
pub(crate) fn uses_tls(scheme: Option<Scheme>, tls: &TlsConfig) -> Result<bool, ClientTlsError> {
    let options_set = tls.ca_file.is_some()
        || tls.cert_file.is_some()
        || tls.key_file.is_some()
        || tls.insecure_skip_verify;
    if tls.cert_file.is_some() != tls.key_file.is_some() {
        return Err(ClientTlsError::HalfIdentity);
    }
    match (scheme, tls.insecure) {
        (Some(Scheme::Https), Some(true)) => Err(ClientTlsError::HttpsButInsecure),
        (Some(Scheme::Https), _) => Ok(true),
        (Some(Scheme::Http), Some(false)) => Err(ClientTlsError::HttpButNotInsecure),
        (Some(Scheme::Http), _) if options_set => Err(ClientTlsError::OptionsOverHttp),
        (Some(Scheme::Http), _) => Ok(false),
        (None, Some(true)) if options_set => Err(ClientTlsError::OptionsButInsecure),
        (None, Some(insecure)) => Ok(!insecure),
        (None, None) => Ok(options_set),
    }
}

/// The contents of the PEM files TLS options name.
#[derive(Debug, Default)]
pub(crate) struct TlsFiles {
    pub ca: Option<Vec<u8>>,
    /// Certificate and key.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl TlsFiles {
    pub fn read(tls: &TlsConfig) -> Result<Self, ClientTlsError> {
        let ca = tls.ca_file.as_deref().map(read_pem).transpose()?;
        let identity = match (&tls.cert_file, &tls.key_file) {
            (Some(cert), Some(key)) => Some((read_pem(cert)?, read_pem(key)?)),
            _ => None,
        };
        Ok(Self { ca, identity })
    }
}

fn read_pem(path: &str) -> Result<Vec<u8>, ClientTlsError> {
    let bytes = std::fs::read(path).map_err(|error| ClientTlsError::ReadPem {
        path: path.to_owned(),
        error,
    })?;
    if !bytes.windows(11).any(|window| window == b"-----BEGIN ") {
        return Err(ClientTlsError::NotPem(path.to_owned()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(insecure: Option<bool>, ca: bool) -> TlsConfig {
        TlsConfig {
            insecure,
            ca_file: ca.then(|| "ca.pem".to_owned()),
            ..TlsConfig::default()
        }
    }

    #[test]
    fn the_scheme_decides_and_contradictions_are_errors() {
        let https = Some(Scheme::Https);
        let http = Some(Scheme::Http);
        assert_eq!(uses_tls(https, &tls(None, false)).ok(), Some(true));
        assert!(uses_tls(https, &tls(Some(true), false)).is_err());
        assert_eq!(uses_tls(http, &tls(None, false)).ok(), Some(false));
        assert!(uses_tls(http, &tls(None, true)).is_err());
        assert!(uses_tls(http, &tls(Some(false), false)).is_err());
        assert_eq!(uses_tls(None, &tls(None, false)).ok(), Some(false));
        assert_eq!(uses_tls(None, &tls(None, true)).ok(), Some(true));
        assert_eq!(uses_tls(None, &tls(Some(false), false)).ok(), Some(true));
        assert!(uses_tls(None, &tls(Some(true), true)).is_err());
        let half = TlsConfig {
            cert_file: Some("c.pem".to_owned()),
            ..TlsConfig::default()
        };
        assert!(uses_tls(None, &half).is_err());
    }

    #[test]
    fn schemes_are_split_off() {
        assert_eq!(
            split_scheme("localhost:4317").ok(),
            Some((None, "localhost:4317"))
        );
        assert_eq!(
            split_scheme("HTTPS://example.com:443").ok(),
            Some((Some(Scheme::Https), "example.com:443"))
        );
        assert!(split_scheme("ftp://example.com").is_err());
        assert!(split_scheme(" ").is_err());
        assert!(split_scheme("http://").is_err());
        assert!(split_scheme("https:///path").is_err());
    }
}
