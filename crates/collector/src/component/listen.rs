//! What receivers that listen share: a server's TLS and tokens, its
//! socket, its line in the start-up message, its metrics, its task, and
//! the wait for shutdown.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::{Endpoint, Extensions, ReceiverContext, StartError, StartedReceiver};
use crate::pipeline::PipelineHandle;
use crate::settings::server::HttpListener;
use crate::settings::tls::{AuthConfig, ServerTlsConfig};
use crate::telemetry::ReceiverMetrics;
use crate::tls::{Alpn, Security};

/// Resolves when the collector stops: a server's cue to drain and return.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One server a receiver listens with, as its configuration describes it.
pub struct Server<'a> {
    pub endpoint: &'a str,
    pub tls: Option<&'a ServerTlsConfig>,
    pub auth: Option<&'a AuthConfig>,
    pub alpn: Alpn,
    /// The `transport` label of its metrics.
    pub transport: &'static str,
    /// Its line in the start-up message (" over TLS" is added).
    pub what: String,
}

impl<'a> Server<'a> {
    /// An HTTP receiver's server on `listener`, announced as `what`.
    pub fn http(listener: &'a HttpListener, what: String) -> Self {
        Self {
            endpoint: &listener.server.endpoint,
            tls: listener.server.tls.as_deref(),
            auth: listener.server.auth.as_deref(),
            alpn: Alpn::Http1,
            transport: "http",
            what,
        }
    }

    /// What [`Self::start`] would refuse before binding: TLS files that do
    /// not load, a token file that cannot be read. An authenticator
    /// extension is checked as an extension.
    pub fn check(&self, id: &str) -> Option<StartError> {
        security(id, self.tls, self.auth, self.alpn, None).err()
    }

    /// Secures and binds the server, notes where it listens, and spawns
    /// `serve` on the bound socket; its failure is logged.
    pub async fn start<Serve, Served, Failure>(
        self,
        context: &ReceiverContext<'_>,
        started: &mut StartedReceiver,
        serve: Serve,
    ) -> Result<(), StartError>
    where
        Serve: FnOnce(
            TcpListener,
            Arc<[PipelineHandle]>,
            ReceiverMetrics,
            Security,
            Shutdown,
        ) -> Served,
        Served: Future<Output = Result<(), Failure>> + Send + 'static,
        Failure: Display,
    {
        let id = context.id;
        let security = security(id, self.tls, self.auth, self.alpn, Some(context.extensions))?;
        let listener = bind(id, self.endpoint).await?;
        if let Ok(address) = listener.local_addr() {
            let what = format!("{}{}", self.what, over_tls(&security));
            started.listening.push(Endpoint { what, address });
        }
        let shutdown: Shutdown = Box::pin(wait_for(context.stopped.clone()));
        let metrics = ReceiverMetrics::new(context.metrics, id, self.transport);
        let pipelines = Arc::clone(&context.pipelines);
        let served = serve(listener, pipelines, metrics, security, shutdown);
        let what = self.what;
        started.tasks.push(tokio::spawn(async move {
            if let Err(error) = served.await {
                tracing::error!(%error, "{what} failed");
            }
        }));
        Ok(())
    }
}

/// A receiver's TLS acceptor and token check, its files read now so that
/// a bad one stops the start. The check of an authenticator extension is
/// the running extension's; without `extensions` (a check before start)
/// it is left out.
fn security(
    id: &str,
    tls: Option<&ServerTlsConfig>,
    auth: Option<&AuthConfig>,
    alpn: Alpn,
    extensions: Option<&Extensions>,
) -> Result<Security, StartError> {
    let Some(authenticator) = auth.and_then(|auth| auth.authenticator.as_ref()) else {
        return Security::new(tls, auth, alpn).map_err(|reason| StartError::receiver(id, reason));
    };
    let check = match extensions {
        Some(extensions) => Some(
            extensions
                .authenticator(authenticator)
                .cloned()
                .ok_or_else(|| {
                    StartError::receiver(id, NoAuthenticator(authenticator.to_string()))
                })?,
        ),
        None => None,
    };
    Security::with_auth(tls, check, alpn).map_err(|reason| StartError::receiver(id, reason))
}

/// `auth.authenticator` names no running authenticator extension.
#[derive(Debug, thiserror::Error)]
#[error("auth.authenticator: {0} is not a running authenticator extension")]
struct NoAuthenticator(String);

fn over_tls(security: &Security) -> &'static str {
    if security.uses_tls() {
        " over TLS"
    } else {
        ""
    }
}

async fn bind(id: &str, endpoint: &str) -> Result<TcpListener, StartError> {
    crate::net::bind(endpoint)
        .await
        .map_err(|error| StartError::Listen {
            id: id.to_owned(),
            endpoint: endpoint.to_owned(),
            error,
        })
}

/// Resolves once `stopped` turns true, or its sender is gone.
pub async fn wait_for(mut stopped: watch::Receiver<bool>) {
    while !*stopped.borrow() {
        if stopped.changed().await.is_err() {
            return;
        }
    }
}
