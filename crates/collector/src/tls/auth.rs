//! Bearer-token authentication: `Authorization: Bearer TOKEN`, compared
//! in constant time with a token from a file (re-read when it changes) or
//! from an environment variable (read at start).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tonic::codegen::tokio_stream::StreamExt;

use super::reload::Reloading;
use crate::settings::tls::AuthConfig;
use crate::telemetry::{ReceiverMetrics, RefusedReason};

/// How often, at most, the token file's modification time is checked.
const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// The tokens a server accepts and a client sends, in
/// `HEADER: SCHEME TOKEN`; cheap to clone.
#[derive(Clone)]
pub struct BearerAuth {
    tokens: Arc<Tokens>,
    /// `Bearer` for `auth:`; the extension's `scheme` (may be empty: the
    /// header is the token alone).
    scheme: Arc<str>,
    header: HeaderName,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The tokens are credentials: never printed.
        f.debug_struct("BearerAuth")
            .field("header", &self.header)
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

enum Tokens {
    Fixed(Vec<Vec<u8>>),
    File(Reloading<Vec<Vec<u8>>, AuthError>),
}

/// Why the bearer token cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("the environment variable {0} is not set")]
    Unset(String),
    #[error("set bearer_token_file or bearer_token_env")]
    NoTokenSource,
    /// `.0` names the file or the variable.
    #[error("the bearer token in {0} is empty")]
    Empty(String),
    #[error("{0:?} is not a valid header name")]
    HeaderName(String),
}

/// Where [`BearerAuth::with_scheme`] takes its tokens from.
pub enum TokenSource {
    /// Tokens given in the configuration.
    Fixed(Vec<String>),
    /// A file holding one token per line, read again when it changes.
    File(String),
}

impl BearerAuth {
    /// `auth:`: `Authorization: Bearer TOKEN`, the token in its file (read
    /// as the extension reads one) or variable.
    pub fn new(config: &AuthConfig) -> Result<Self, AuthError> {
        let source = match (&config.bearer_token_file, &config.bearer_token_env) {
            (Some(path), None) => TokenSource::File(path.clone()),
            (None, Some(variable)) => {
                let value =
                    std::env::var(variable).map_err(|_| AuthError::Unset(variable.clone()))?;
                non_empty(value.trim(), variable)?;
                TokenSource::Fixed(vec![value])
            }
            _ => return Err(AuthError::NoTokenSource),
        };
        Self::with_scheme(source, "Bearer", header::AUTHORIZATION.as_str())
    }

    /// The `bearertokenauth` extension's: any of the tokens in `header`,
    /// after `scheme` when it is not empty.
    pub fn with_scheme(source: TokenSource, scheme: &str, header: &str) -> Result<Self, AuthError> {
        let tokens = match source {
            TokenSource::Fixed(tokens) => Tokens::Fixed(
                tokens
                    .iter()
                    .map(|token| non_empty(token.trim(), "token"))
                    .collect::<Result<_, _>>()?,
            ),
            TokenSource::File(path) => {
                let file = path.clone();
                let load = move || {
                    let text = std::fs::read_to_string(&file).map_err(|error| AuthError::Read {
                        path: file.clone(),
                        error,
                    })?;
                    let tokens: Vec<Vec<u8>> = text
                        .lines()
                        .map(str::trim)
                        .filter(|line| !line.is_empty())
                        .map(|line| line.as_bytes().to_vec())
                        .collect();
                    if tokens.is_empty() {
                        Err(AuthError::Empty(file.clone()))
                    } else {
                        Ok(tokens)
                    }
                };
                reloading(&path, Box::new(load))?
            }
        };
        let header = HeaderName::from_bytes(header.trim().as_bytes())
            .map_err(|_| AuthError::HeaderName(header.to_owned()))?;
        Ok(Self {
            tokens: Arc::new(tokens),
            scheme: Arc::from(scheme.trim()),
            header,
        })
    }

    /// Whether the headers carry one of the tokens.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers
            .get(&self.header)
            .and_then(|value| scheme_token(value.as_bytes(), &self.scheme))
        else {
            return false;
        };
        let check = |tokens: &[Vec<u8>]| {
            // Every token is compared, so the time does not tell which.
            tokens
                .iter()
                .fold(false, |found, token| constant_time_eq(given, token) | found)
        };
        match &*self.tokens {
            Tokens::Fixed(tokens) => check(tokens),
            Tokens::File(tokens) => check(&tokens.current()),
        }
    }

    /// What a client sends: the header and `SCHEME TOKEN` with the first
    /// token; `None` when that is not a valid header value.
    pub fn credentials(&self) -> Option<(HeaderName, HeaderValue)> {
        let first = |tokens: &[Vec<u8>]| tokens.first().cloned();
        let token = match &*self.tokens {
            Tokens::Fixed(tokens) => first(tokens),
            Tokens::File(tokens) => first(&tokens.current()),
        }?;
        let mut value = Vec::with_capacity(self.scheme.len() + 1 + token.len());
        if !self.scheme.is_empty() {
            value.extend_from_slice(self.scheme.as_bytes());
            value.push(b' ');
        }
        value.extend_from_slice(&token);
        let mut value = HeaderValue::from_bytes(&value).ok()?;
        value.set_sensitive(true);
        Some((self.header.clone(), value))
    }
}

fn reloading(path: &str, load: ReloadTokens) -> Result<Tokens, AuthError> {
    Ok(Tokens::File(Reloading::new(
        "bearer token",
        vec![PathBuf::from(path)],
        TOKEN_RECHECK,
        load,
    )?))
}

type ReloadTokens = Box<dyn Fn() -> Result<Vec<Vec<u8>>, AuthError> + Send + Sync>;

fn non_empty(token: &str, source: &str) -> Result<Vec<u8>, AuthError> {
    if token.is_empty() {
        Err(AuthError::Empty(source.to_owned()))
    } else {
        Ok(token.as_bytes().to_vec())
    }
}

/// The token in `SCHEME TOKEN` (the scheme in any case); the whole value
/// when `scheme` is empty.
fn scheme_token<'a>(value: &'a [u8], scheme: &str) -> Option<&'a [u8]> {
    if scheme.is_empty() {
        let token = value.trim_ascii();
        return (!token.is_empty()).then_some(token);
    }
    let (given, token) = value.split_at_checked(scheme.len())?;
    if !given.eq_ignore_ascii_case(scheme.as_bytes()) {
        return None;
    }
    let token = token.strip_prefix(b" ")?.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Equality whose time depends on the lengths only, not on where the
/// bytes differ.
fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = u8::from(given.len() != expected.len());
    for (index, byte) in given.iter().enumerate() {
        let other = expected
            .get(index % expected.len().max(1))
            .copied()
            .unwrap_or(0);
        difference |= byte ^ other;
    }
    std::hint::black_box(difference) == 0
}

/// How long a refused request's body is read before the 401 is sent
/// anyway.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Clone)]
struct Guard {
    auth: BearerAuth,
    metrics: ReceiverMetrics,
    /// How much of a refused request's body is read and dropped.
    drain_limit: usize,
}

/// `router`, answering 401 to every request without the right token when
/// `auth` is set. Up to `drain_limit` bytes of a refused body are read and
/// dropped first, so that HTTP/1 clients still sending it get the 401
/// rather than a reset connection.
pub(crate) fn protect_router(
    router: Router,
    auth: Option<BearerAuth>,
    metrics: ReceiverMetrics,
    drain_limit: usize,
) -> Router {
    match auth {
        None => router,
        Some(auth) => router.layer(axum::middleware::from_fn_with_state(
            Guard {
                auth,
                metrics,
                drain_limit,
            },
            check,
        )),
    }
}

async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if guard.auth.allows(request.headers()) {
        return next.run(request).await;
    }
    refused(&guard.metrics);
    // A client waiting for 100 Continue has not sent its body: no need.
    let expects_continue = request
        .headers()
        .get(header::EXPECT)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if !expects_continue {
        // An unauthenticated client gets no more time than this, however
        // slowly it sends.
        let _ =
            tokio::time::timeout(DRAIN_TIME, drain(request.into_body(), guard.drain_limit)).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
        "missing or wrong bearer token\n",
    )
        .into_response()
}

/// Reads and drops up to `limit` bytes of `body`, without keeping them.
async fn drain(body: axum::body::Body, limit: usize) {
    let mut chunks = body.into_data_stream();
    let mut read = 0usize;
    while let Some(Ok(chunk)) = chunks.next().await {
        read = read.saturating_add(chunk.len());
        if read > limit {
            break;
        }
    }
}

/// Counts and logs a request refused for its credentials.
pub(crate) fn refused(metrics: &ReceiverMetrics) {
    metrics.refused_request(RefusedReason::Unauthenticated);
    metrics.note_refusal(
        RefusedReason::Unauthenticated,
        "a request without the right bearer token",
    );
    tracing::debug!(
        receiver = %metrics.receiver,
        transport = metrics.transport,
        reason = "unauthenticated",
        "refused a request without the right bearer token"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_taken_from_the_bearer_scheme_only() {
        let bearer_token = |value: &'static [u8]| scheme_token(value, "Bearer");
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearerabc"), None);
        assert_eq!(scheme_token(b" abc ", ""), Some(&b"abc"[..]));
        assert_eq!(scheme_token(b"Token abc", "Token"), Some(&b"abc"[..]));
        assert_eq!(scheme_token(b"Bearer abc", "Token"), None);
    }

    #[test]
    fn comparison_needs_equal_bytes_and_lengths() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secreT", b"secret"));
        assert!(!constant_time_eq(b"secret1", b"secret"));
        assert!(!constant_time_eq(b"secre", b"secret"));
        assert!(!constant_time_eq(b"", b"secret"));
    }
}
