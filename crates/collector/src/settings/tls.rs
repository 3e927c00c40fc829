//! `tls:` and `auth:` on network receivers, in the shape of the
//! OpenTelemetry Collector's server `tls` settings and its
//! `bearertokenauth` extension.

use std::path::Path;

use serde::Deserialize;

use super::refs::{ExtensionRef, ExtensionRole};
use super::units::Duration;
use super::{ComponentId, Problem};

/// `tls:` on a receiver: the server's certificate chain and key, and
/// optionally the CAs client certificates must chain to (mutual TLS).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerTlsConfig {
    /// PEM certificate chain, the server's own certificate first.
    pub cert_file: Option<String>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<String>,
    /// PEM CA certificates; when set, clients must present a certificate
    /// that chains to one of them.
    pub client_ca_file: Option<String>,
    /// How often, at most, the files' modification times are checked on
    /// new connections; changed files are loaded again. 0 never reloads.
    pub reload_interval: Duration,
    /// How long a client gets to finish its TLS handshake.
    pub handshake_timeout: Duration,
    /// Handshakes in progress at once on the listener; past this, a new
    /// connection evicts the oldest handshake in progress.
    pub max_concurrent_handshakes: u32,
}

impl Default for ServerTlsConfig {
    fn default() -> Self {
        Self {
            cert_file: None,
            key_file: None,
            client_ca_file: None,
            reload_interval: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(5),
            max_concurrent_handshakes: 64,
        }
    }
}

impl ServerTlsConfig {
    /// Every problem in the options, named under `prefix` (e.g. `tls`).
    pub fn problems(&self, prefix: &str) -> Vec<Problem> {
        let mut problems = Vec::new();
        match (&self.cert_file, &self.key_file) {
            (Some(_), Some(_)) => {}
            (None, None) => problems.push(Problem::new(
                format!("{prefix}.cert_file"),
                "a TLS server needs cert_file and key_file",
            )),
            (Some(_), None) => problems.push(Problem::new(
                format!("{prefix}.key_file"),
                "cert_file is set without key_file; set both",
            )),
            (None, Some(_)) => problems.push(Problem::new(
                format!("{prefix}.cert_file"),
                "key_file is set without cert_file; set both",
            )),
        }
        for (option, path) in [
            ("cert_file", &self.cert_file),
            ("key_file", &self.key_file),
            ("client_ca_file", &self.client_ca_file),
        ] {
            if let Some(problem) = path.as_deref().and_then(file_problem) {
                problems.push(Problem::new(format!("{prefix}.{option}"), problem));
            }
        }
        if self.handshake_timeout.0.is_zero() {
            problems.push(Problem::new(
                format!("{prefix}.handshake_timeout"),
                "must be more than 0",
            ));
        }
        if self.max_concurrent_handshakes == 0 {
            problems.push(Problem::new(
                format!("{prefix}.max_concurrent_handshakes"),
                "must be more than 0",
            ));
        }
        problems
    }
}

/// `auth:` on a receiver: requests must carry `Authorization: Bearer
/// TOKEN`, the token read from a file (re-read when it changes) or from
/// an environment variable at start; or, in the Collector's spelling, the
/// check of an authenticator extension (`authenticator:
/// bearertokenauth/NAME`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub bearer_token_file: Option<String>,
    pub bearer_token_env: Option<String>,
    pub authenticator: Option<ComponentId>,
}

impl AuthConfig {
    /// The authenticator extension it names, with its key under `prefix`.
    pub fn extension_ref(&self, prefix: &str) -> Option<ExtensionRef> {
        self.authenticator.as_ref().map(|id| ExtensionRef {
            key: format!("{prefix}.authenticator"),
            id: id.clone(),
            role: ExtensionRole::Authenticator,
        })
    }

    /// Every problem in the options, named under `prefix` (e.g. `auth`).
    pub fn problems(&self, prefix: &str) -> Vec<Problem> {
        if self.authenticator.is_some() {
            let own = self.bearer_token_file.is_some() || self.bearer_token_env.is_some();
            return if own {
                vec![Problem::new(
                    prefix,
                    "set authenticator, or bearer_token_file or bearer_token_env, not both",
                )]
            } else {
                Vec::new()
            };
        }
        match (&self.bearer_token_file, &self.bearer_token_env) {
            (Some(_), Some(_)) => vec![Problem::new(
                prefix,
                "set bearer_token_file or bearer_token_env, not both",
            )],
            (None, None) => vec![Problem::new(
                prefix,
                "set bearer_token_file or bearer_token_env, or authenticator: bearertokenauth/NAME",
            )],
            (Some(path), None) => file_problem(path)
                .map(|problem| Problem::new(format!("{prefix}.bearer_token_file"), problem))
                .into_iter()
                .collect(),
            (None, Some(variable)) => match std::env::var(variable) {
                Ok(value) if !value.trim().is_empty() => Vec::new(),
                Ok(_) => vec![Problem::new(
                    format!("{prefix}.bearer_token_env"),
                    format!("the environment variable {variable} is empty"),
                )],
                Err(_) => vec![Problem::new(
                    format!("{prefix}.bearer_token_env"),
                    format!("the environment variable {variable} is not set"),
                )],
            },
        }
    }
}

/// `auth:` on an exporter, in the Collector's shape: the authenticator
/// extension whose credentials every request carries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientAuthConfig {
    pub authenticator: ComponentId,
}

impl ClientAuthConfig {
    /// The extension it names, with its key under `prefix`.
    pub fn extension_ref(&self, prefix: &str) -> ExtensionRef {
        ExtensionRef {
            key: format!("{prefix}.authenticator"),
            id: self.authenticator.clone(),
            role: ExtensionRole::Authenticator,
        }
    }
}

/// Why a file an option names cannot be used, if it cannot.
pub fn file_problem(path: &str) -> Option<String> {
    if path.trim().is_empty() {
        return Some("is empty; name a file".to_owned());
    }
    match std::fs::metadata(Path::new(path)) {
        Err(error) => Some(format!("cannot read {path}: {error}")),
        Ok(metadata) if !metadata.is_file() => Some(format!("{path} is not a file")),
        Ok(metadata) if metadata.len() == 0 => Some(format!("{path} is empty")),
        Ok(_) => None,
    }
}

/// The problems in a receiver's `tls:` and `auth:` options.
pub fn security_problems(tls: Option<&ServerTlsConfig>, auth: Option<&AuthConfig>) -> Vec<Problem> {
    let mut problems = tls.map(|tls| tls.problems("tls")).unwrap_or_default();
    problems.extend(auth.map(|auth| auth.problems("auth")).unwrap_or_default());
    problems
}
