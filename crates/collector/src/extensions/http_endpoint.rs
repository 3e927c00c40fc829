//! What the extensions that answer HTTP share (health_check, pprof,
//! zpages): binding their endpoint, the start-up line, the connection
//! limits, and serving a router until the extension stops.

use axum::Router;
use tokio::net::TcpListener;

use crate::component::listen::wait_for;
use crate::component::{CannotListen, Endpoint, ExtensionContext, StartError, StartedExtension};
use crate::net::{endpoint_limits, serve_http, Incoming};
use crate::settings::server::HttpConnectionSettings;

/// The extension's socket, bound at start so that a taken port stops it.
pub async fn bind(
    context: &ExtensionContext<'_>,
    endpoint: &str,
) -> Result<TcpListener, StartError> {
    crate::net::bind(endpoint).await.map_err(|error| {
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
/// on it, within `connection`'s limits, until the extension stops.
pub fn serve(
    context: &ExtensionContext<'_>,
    started: &mut StartedExtension,
    listener: TcpListener,
    (what, connection): (String, &HttpConnectionSettings),
    router: Router,
) {
    if let Ok(address) = listener.local_addr() {
        started.listening.push(Endpoint {
            what: what.clone(),
            address,
        });
    }
    let (connection_limits, limits) = endpoint_limits(connection);
    let incoming = Incoming::new(listener, connection_limits, None);
    let shutdown = wait_for(context.stopped.clone());
    let id = context.id.to_owned();
    started.tasks.push(tokio::spawn(async move {
        if let Err(error) = serve_http(incoming, router, limits, shutdown).await {
            tracing::error!(%error, extension = id, "{what} failed");
        }
    }));
}
