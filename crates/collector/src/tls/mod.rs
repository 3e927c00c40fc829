//! What the network receivers share to protect themselves: server TLS
//! (optionally requiring client certificates), reloaded when its files
//! change, and bearer-token authentication.

mod auth;
mod reload;
mod server;

pub(crate) use auth::{protect_router, refused as refused_unauthenticated};
pub use auth::{AuthError, BearerAuth, TokenSource};
pub(crate) use server::ReloadingAcceptor;
pub use server::{Alpn, TlsError};

use std::sync::Arc;
use std::time::Duration;

use crate::settings::tls::{AuthConfig, ServerTlsConfig};

/// Limits on the TLS handshakes of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandshakeLimits {
    /// How long a client gets to finish its handshake.
    pub timeout: Duration,
    /// Handshakes in progress at once; a new connection past this evicts
    /// the oldest one.
    pub max_in_progress: usize,
}

impl Default for HandshakeLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            max_in_progress: 64,
        }
    }
}

/// Why a listener's TLS or authentication files cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("tls: {0}")]
    Tls(TlsError),
    #[error("auth: {0}")]
    Auth(AuthError),
}

/// TLS and authentication for one listener; the default is neither.
#[derive(Clone, Default)]
pub struct Security {
    pub(crate) tls: Option<Arc<ReloadingAcceptor>>,
    pub(crate) auth: Option<BearerAuth>,
    /// How TLS handshakes are limited (unused without TLS).
    pub(crate) handshakes: HandshakeLimits,
}

impl Security {
    /// Reads the files the options name (an error names the bad one);
    /// `alpn` is what the server offers in the TLS handshake.
    pub fn new(
        tls: Option<&ServerTlsConfig>,
        auth: Option<&AuthConfig>,
        alpn: Alpn,
    ) -> Result<Self, SecurityError> {
        let auth = auth
            .map(BearerAuth::new)
            .transpose()
            .map_err(SecurityError::Auth)?;
        Self::with_auth(tls, auth, alpn)
    }

    /// [`Self::new`] with the token check already made, like an
    /// authenticator extension's.
    pub fn with_auth(
        tls: Option<&ServerTlsConfig>,
        auth: Option<BearerAuth>,
        alpn: Alpn,
    ) -> Result<Self, SecurityError> {
        let tls_config = tls;
        let tls = tls
            .map(|tls| ReloadingAcceptor::new(tls, alpn).map(Arc::new))
            .transpose()
            .map_err(SecurityError::Tls)?;
        let handshakes = tls_config.map_or_else(HandshakeLimits::default, |tls| HandshakeLimits {
            timeout: tls.handshake_timeout.0,
            max_in_progress: usize::try_from(tls.max_concurrent_handshakes).unwrap_or(usize::MAX),
        });
        Ok(Self {
            tls,
            auth,
            handshakes,
        })
    }

    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }
}
