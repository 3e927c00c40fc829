//! The HTTP side of a scrape: one client for every target (TLS, headers
//! and credentials from the client settings), and a body read in chunks
//! up to a hard cap, its buffer held in the pipelines' budget before it
//! grows, as the receivers hold the bodies they read.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, StatusCode, Url};

use super::config::RemoteConfig;
use super::metrics::ScrapeFailure;
use crate::client::http::{any_scheme_client, HttpClientError};
use crate::pipeline::PipelineHandle;
use crate::receivers::intake::{admit, Admission};
use crate::telemetry::ReceiverMetrics;
use crate::tls::BearerAuth;

/// Why the client cannot be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    #[error(transparent)]
    Http(#[from] HttpClientError),
    #[error("headers: {0:?} is not a valid header name")]
    HeaderName(String),
    #[error("headers: the value of {0:?} is not a valid header value")]
    HeaderValue(String),
}

/// Why a fetch gave no body.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot reach the target: {0}")]
    Connect(reqwest::Error),
    #[error("the target answered {0}")]
    Status(StatusCode),
    #[error("the profile is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the pipelines had no room for the profile while it arrived; it was dropped")]
    NoRoom,
}

impl FetchError {
    pub fn reason(&self) -> ScrapeFailure {
        match self {
            Self::Connect(_) => ScrapeFailure::Connect,
            Self::Status(_) => ScrapeFailure::HttpStatus,
            Self::TooLarge { .. } => ScrapeFailure::TooLarge,
            Self::NoRoom => ScrapeFailure::Refused,
        }
    }
}

/// What every scrape sends with.
pub struct Fetcher {
    client: Client,
    headers: HeaderMap,
    auth: Option<BearerAuth>,
}

impl Fetcher {
    /// TLS is used for `https://` URLs, with the `tls` options' CA and
    /// client certificate.
    pub fn new(config: &RemoteConfig, auth: Option<BearerAuth>) -> Result<Self, ClientError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &config.client.headers {
            let header = HeaderName::try_from(name.as_str())
                .map_err(|_| ClientError::HeaderName(name.clone()))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| ClientError::HeaderValue(name.clone()))?;
            headers.insert(header, value);
        }
        Ok(Self {
            client: any_scheme_client(&config.client.tls)?,
            headers,
            auth,
        })
    }

    /// The body at `url`, refused past `limit` bytes without reading on,
    /// with the admission that holds its buffer in every pipeline.
    pub async fn fetch(
        &self,
        url: &Url,
        limit: usize,
        budget: (&[PipelineHandle], &ReceiverMetrics),
        read: impl Fn(usize),
    ) -> Result<(Vec<u8>, Admission), FetchError> {
        let mut headers = self.headers.clone();
        if let Some((name, value)) = self.auth.as_ref().and_then(BearerAuth::credentials) {
            headers.insert(name, value);
        }
        let mut response = self
            .client
            .get(url.clone())
            .headers(headers)
            .send()
            .await
            .map_err(FetchError::Connect)?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status()));
        }
        let declared = response
            .content_length()
            .and_then(|length| usize::try_from(length).ok());
        if declared.is_some_and(|length| length > limit) {
            return Err(FetchError::TooLarge { limit });
        }
        let (pipelines, metrics) = budget;
        let mut admission = admit(pipelines, 0, metrics).ok_or(FetchError::NoRoom)?;
        let mut body: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(FetchError::Connect)? {
            read(chunk.len());
            let total = body.len().saturating_add(chunk.len());
            if total > limit {
                return Err(FetchError::TooLarge { limit });
            }
            if total > body.capacity() {
                // The buffer doubles up to the declared length; while it
                // moves, the old buffer and the new one are both alive.
                let most = declared.unwrap_or(limit).max(total);
                let capacity = body.capacity().saturating_mul(2).max(total).min(most);
                if !admission.cover(body.capacity().saturating_add(capacity), metrics) {
                    return Err(FetchError::NoRoom);
                }
                body.reserve_exact(capacity - body.len());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, admission))
    }
}
