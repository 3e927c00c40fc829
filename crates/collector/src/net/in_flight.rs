//! Counts each request as in flight on its connection from when its
//! head arrives until its response is ready, so that fair admission
//! never closes a connection that is serving one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::http::Request;
use tower_service::Service;

use super::activity::Activity;
use super::conn::ConnInfo;

/// Wraps a service: for the HTTP listeners one per connection, for gRPC
/// one for all, finding each request's connection in the [`ConnInfo`]
/// tonic puts in its extensions.
#[derive(Clone)]
pub struct TrackRequests<S> {
    inner: S,
    connection: Option<Arc<Activity>>,
}

impl<S> TrackRequests<S> {
    /// For the requests of one connection.
    pub fn on(connection: Arc<Activity>, inner: S) -> Self {
        Self {
            inner,
            connection: Some(connection),
        }
    }
}

impl<S, B> Service<Request<B>> for TrackRequests<S>
where
    S: Service<Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let connection = self.connection.clone().or_else(|| {
            request
                .extensions()
                .get::<ConnInfo>()
                .map(|info| Arc::clone(&info.activity))
        });
        let guard = connection.map(|activity| activity.request_started());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            drop(guard);
            response
        })
    }
}

/// The layer tonic's server wraps its routes in.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrackRequestsLayer;

impl<S> tower_layer::Layer<S> for TrackRequestsLayer {
    type Service = TrackRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TrackRequests {
            inner,
            connection: None,
        }
    }
}
