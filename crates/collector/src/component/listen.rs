//! What receivers that listen share: their TLS and tokens, their socket,
//! their line in the start-up message, and the wait for shutdown.

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::{Endpoint, StartError};
use crate::tls::config::{AuthConfig, ServerTlsConfig};
use crate::tls::{Alpn, Security};

/// A receiver's TLS acceptor and token check, its files read now so that
/// a bad one stops the start.
pub fn security(
    id: &str,
    tls: Option<&ServerTlsConfig>,
    auth: Option<&AuthConfig>,
    alpn: Alpn,
) -> Result<Security, StartError> {
    Security::new(tls, auth, alpn).map_err(|reason| StartError::receiver(id, reason))
}

/// For the start-up message.
pub fn over_tls(security: &Security) -> &'static str {
    if security.uses_tls() {
        " over TLS"
    } else {
        ""
    }
}

pub async fn bind(id: &str, endpoint: &str) -> Result<TcpListener, StartError> {
    TcpListener::bind(endpoint)
        .await
        .map_err(|error| StartError::Listen {
            id: id.to_owned(),
            endpoint: endpoint.to_owned(),
            error,
        })
}

/// Records where `listener` listens, as `what`.
pub fn note_endpoint(listening: &mut Vec<Endpoint>, listener: &TcpListener, what: String) {
    if let Ok(address) = listener.local_addr() {
        listening.push(Endpoint { what, address });
    }
}

/// Resolves once `stopped` turns true, or its sender is gone.
pub async fn wait_for(mut stopped: watch::Receiver<bool>) {
    while !*stopped.borrow() {
        if stopped.changed().await.is_err() {
            return;
        }
    }
}
