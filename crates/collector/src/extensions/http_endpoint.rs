//! What the extensions that answer HTTP share (health_check, pprof,
//! zpages): binding their endpoint, the start-up line, the connection
//! limits, and serving a router until the extension stops.

use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use crate::component::listen::wait_for;
use crate::component::{CannotListen, Endpoint, ExtensionContext, StartError, StartedExtension};
use crate::net::{serve_http, ConnectionLimits, HttpLimits, Incoming};

/// Connections an extension's endpoint keeps open at once.
const MAX_CONNECTIONS: usize = 64;
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CONCURRENT_STREAMS: u32 = 16;

/// The extension's socket, bound at start so that a taken port stops it.
pub async fn bind(
    context: &ExtensionContext<'_>,
    endpoint: &str,
) -> Result<TcpListener, StartError> {
    TcpListener::bind(endpoint).await.map_err(|error| {
        StartError::extension(
            context.id,
            CannotListen {
                endpoint: endpoint.to_owned(),
                error,
            },
        )
    })
}

/// Notes `listener` as `what` for the start-up message and serves `router`
/// on it until the extension stops; a connection idle for `idle_timeout`
/// is closed.
pub fn serve(
    context: &ExtensionContext<'_>,
    started: &mut StartedExtension,
    listener: TcpListener,
    (what, idle_timeout): (String, Duration),
    router: Router,
) {
    if let Ok(address) = listener.local_addr() {
        started.listening.push(Endpoint {
            what: what.clone(),
            address,
        });
    }
    let incoming = Incoming::new(
        listener,
        ConnectionLimits {
            max_connections: MAX_CONNECTIONS,
            idle_timeout,
        },
        None,
    );
    let limits = HttpLimits {
        read_header_timeout: READ_HEADER_TIMEOUT,
        max_concurrent_streams: MAX_CONCURRENT_STREAMS,
    };
    let shutdown = wait_for(context.stopped.clone());
    let id = context.id.to_owned();
    started.tasks.push(tokio::spawn(async move {
        if let Err(error) = serve_http(incoming, router, limits, shutdown).await {
            tracing::error!(%error, extension = id, "{what} failed");
        }
    }));
}
