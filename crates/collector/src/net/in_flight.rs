//! Counts each request as in flight on its connection from when its
//! head arrives until its response's body has been sent (or dropped), so
//! that fair admission never closes a connection that is serving one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use tonic::codegen::http::{Request, Response};
use tower_service::Service;

use super::activity::{Activity, RequestGuard};
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

impl<S, B, ResponseBody> Service<Request<B>> for TrackRequests<S>
where
    S: Service<Request<B>, Response = Response<ResponseBody>>,
    S::Future: Send + 'static,
{
    type Response = Response<Guarded<ResponseBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

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
            let response = response.await?;
            Ok(response.map(|body| Guarded {
                body,
                _request: guard,
            }))
        })
    }
}

/// A response body that keeps its request in flight until it is dropped:
/// sent whole, or abandoned.
pub struct Guarded<B> {
    body: B,
    _request: Option<RequestGuard>,
}

impl<B: Body + Unpin> Body for Guarded<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
