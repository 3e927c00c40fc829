//! The Pyroscope exporter: each pprof that `otlp_to_pprof` makes of a
//! request (one per scope, more when a scope's profiles disagree on time
//! or period) goes to Pyroscope through one of its two APIs.
//!
//! `api: push` (the default): one Connect call to the push API for the
//! whole request, each pprof one series named by its labels:
//!
//! ```text
//! POST {endpoint}/push.v1.PusherService/Push
//! Content-Type: application/proto
//! Connect-Protocol-Version: 1
//!
//! <PushRequest: series { labels: __name__, service_name, …; samples { raw_profile: <gzipped pprof> } } …>
//! ```
//!
//! Pyroscope checks every profile of a push before it stores any, so a
//! retry after a failure does not store anything twice (unless the
//! answer was lost).
//!
//! `api: ingest`: one push per pprof to the HTTP ingest API:
//!
//! ```text
//! POST {endpoint}/ingest?name=APP{label=value,…}&from=SECONDS&until=SECONDS&format=pprof&spyName=profbridge
//! Content-Type: application/octet-stream
//!
//! <gzipped pprof>
//! ```
//!
//! The body is the pprof itself, the form Pyroscope documents for
//! `format=pprof` (its handler reads the whole body as the profile when
//! `format=pprof`; the multipart form with a `profile` part is only read
//! without `format`, and only adds a `sample_type_config`, which profbridge
//! has no use for). The name and time window are made as [`naming`] says.
//! The pushes go one after the other; when one fails, the export fails
//! with its error, and a retry pushes every pprof of the request again
//! (Pyroscope adds up what it is sent twice).
//!
//! Profiles without samples are not pushed. The CPU work (conversion,
//! encoding) runs on the blocking pool.

pub mod config;
mod factory;
mod naming;
mod response;

pub use factory::PyroscopeExporterFactory;
use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Client, RequestBuilder, Url};

use profbridge_pprof::{compress, EncodeOptions};
use profbridge_translate::{PprofConverter, ToPprofOptions};

use super::http_reply::{read_reply, send_error};
use super::to_pprof::batch_to_pprofs;
use super::{ExportCause, ExportError};
use crate::client::http::client;
use crate::client::tls::{split_scheme, uses_tls, ClientTlsError};
use crate::pipeline::Profiles;
use crate::protocol::push_v1::{LabelPair, PushRequest, RawProfileSeries, RawSample, PUSH_PATH};
use crate::settings::Problem;
use crate::tls::BearerAuth;
use config::{BasicAuthConfig, PyroscopeApi, PyroscopeExporterConfig, INGEST_PATH, TENANT_HEADER};
pub use naming::UNKNOWN_SERVICE;
use naming::{time_window, Naming};

/// How much of a reply's body is read.
const MAX_REPLY_BYTES: usize = 64 << 10;

/// What `spyName` says (and the `pyroscope_spy` label of a push): the
/// agent the profiles came through.
pub const SPY_NAME: &str = "profbridge";

/// One pprof ready to push.
#[derive(Debug)]
struct Push {
    /// `name` of `/ingest`.
    name: String,
    from: u64,
    until: u64,
    /// The series labels of the push API.
    labels: Vec<LabelPair>,
    body: Vec<u8>,
}

/// Pushes batches to Pyroscope. Safe to share between tasks.
#[derive(Debug)]
pub struct PyroscopeExporter {
    api: PyroscopeApi,
    url: Url,
    client: Client,
    headers: HeaderMap,
    basic_auth: Option<BasicAuthConfig>,
    /// An authenticator extension's credentials, sent with every push.
    auth: Option<BearerAuth>,
    /// `None`: no limit.
    timeout: Option<Duration>,
    naming: Arc<Naming>,
}

impl PyroscopeExporter {
    /// Checks the configuration and reads TLS files; does not connect.
    pub fn new(config: &PyroscopeExporterConfig) -> Result<Self, ExportError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(unusable(InvalidOptions(problems)));
        }
        let (url, tls) = api_url(config).map_err(unusable)?;
        let timeout = Some(config.helper.timeout.0).filter(|timeout| !timeout.is_zero());
        Ok(Self {
            api: config.api,
            url,
            client: client(&config.client.tls, tls, timeout).map_err(unusable)?,
            headers: headers(config).map_err(unusable)?,
            basic_auth: config.basic_auth.clone(),
            auth: None,
            timeout,
            naming: Arc::new(Naming::new(
                &config.application_name_attribute,
                &config.labels_from_resource_attributes,
            )),
        })
    }

    /// The URL pushed to: the push method's or `/ingest` (without query).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// One export attempt. Copies the request for the blocking pool; the
    /// pipeline uses [`Self::export_shared`], which does not.
    pub async fn export(&self, batch: &Profiles) -> Result<(), ExportError> {
        self.export_shared(&Arc::new(batch.clone())).await
    }

    /// One export attempt: converts and encodes on the blocking pool, then
    /// pushes the pprofs, in one call (push API) or each in turn (ingest).
    pub async fn export_shared(&self, batch: &Arc<Profiles>) -> Result<(), ExportError> {
        let (naming, shared, api) = (Arc::clone(&self.naming), Arc::clone(batch), self.api);
        let pushes = tokio::task::spawn_blocking(move || prepare(&naming, &shared, api))
            .await
            .map_err(|error| {
                let task = "pyroscope conversion";
                if error.is_cancelled() {
                    ExportError::retryable(ExportCause::TaskStopped { task, error })
                } else {
                    ExportError::Permanent(ExportCause::TaskFailed { task, error })
                }
            })??;
        if pushes.is_empty() {
            return Ok(());
        }
        match self.api {
            PyroscopeApi::Push => self.push(pushes).await,
            PyroscopeApi::Ingest => {
                for push in pushes {
                    self.ingest(push).await?;
                }
                Ok(())
            }
        }
    }

    /// Sends `auth`'s credentials with every push.
    #[must_use]
    pub fn with_auth(mut self, auth: Option<BearerAuth>) -> Self {
        self.auth = auth;
        self
    }

    /// The request with the headers, credentials and timeout every push
    /// carries.
    fn request(&self, url: Url, body: Vec<u8>) -> RequestBuilder {
        let mut request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .body(body);
        if let Some(timeout) = self.timeout {
            request = request.timeout(timeout);
        }
        if let Some(auth) = &self.basic_auth {
            request = request.basic_auth(&auth.username, Some(&auth.password));
        }
        if let Some((name, value)) = self.auth.as_ref().and_then(BearerAuth::credentials) {
            request = request.header(name, value);
        }
        request
    }

    /// Sends `request`: the status, headers and the start of the body.
    async fn send(
        &self,
        request: RequestBuilder,
    ) -> Result<(reqwest::StatusCode, HeaderMap, Vec<u8>), ExportError> {
        let limit = self.timeout.unwrap_or_default();
        let response = request
            .send()
            .await
            .map_err(|error| send_error(&self.url, limit, error))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_reply(response, MAX_REPLY_BYTES)
            .await
            .map_err(|error| send_error(&self.url, limit, error))?;
        Ok((status, headers, body))
    }

    /// Every pprof as one series of one `PushRequest`.
    async fn push(&self, pushes: Vec<Push>) -> Result<(), ExportError> {
        let count = pushes.len();
        let services = response::services(pushes.iter().map(|push| push.labels.as_slice()));
        let request = PushRequest {
            series: pushes
                .into_iter()
                .map(|push| RawProfileSeries {
                    labels: push.labels,
                    samples: vec![RawSample {
                        raw_profile: push.body,
                        id: String::new(),
                    }],
                })
                .collect(),
        };
        let body = request.encode_to_vec();
        drop(request);
        let (status, headers, reply) = self.send(self.request(self.url.clone(), body)).await?;
        response::push_outcome(
            self.url.as_str(),
            count,
            &services,
            status,
            &headers,
            &reply,
        )?;
        tracing::debug!(endpoint = %self.url, series = count, "pushed pprofs to Pyroscope");
        Ok(())
    }

    async fn ingest(&self, push: Push) -> Result<(), ExportError> {
        let mut url = self.url.clone();
        url.query_pairs_mut()
            .append_pair("name", &push.name)
            .append_pair("from", &push.from.to_string())
            .append_pair("until", &push.until.to_string())
            .append_pair("format", "pprof")
            .append_pair("spyName", SPY_NAME);
        let (status, headers, body) = self.send(self.request(url, push.body)).await?;
        response::outcome(self.url.as_str(), &push.name, status, &headers, &body)?;
        tracing::debug!(endpoint = %self.url, name = %push.name, "pushed a pprof to Pyroscope");
        Ok(())
    }
}

/// The pprofs of a batch, named and encoded. Requests that cannot become
/// pprof fail permanently; when only some profiles cannot, the rest go. A
/// pprof without a time gets the time the batch was received, for the
/// push API (`/ingest` gets the time window instead).
fn prepare(naming: &Naming, batch: &Profiles, api: PyroscopeApi) -> Result<Vec<Push>, ExportError> {
    let mut converter = PprofConverter::new(ToPprofOptions::default());
    let mut converted = batch_to_pprofs(&mut converter, batch, "pyroscope")?;
    let received = batch
        .received_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
        });
    Ok(converted
        .profiles
        .iter_mut()
        .filter(|output| output.profile.sample_count() > 0)
        .map(|output| {
            let head = &mut output.profile.head;
            let (from, until) =
                time_window(head.time_nanos, head.duration_nanos, batch.received_at);
            let (name, labels) = match api {
                PyroscopeApi::Ingest => (naming.name(&output.resource_attributes), Vec::new()),
                PyroscopeApi::Push => {
                    if head.time_nanos <= 0 {
                        head.time_nanos = received;
                    }
                    (
                        String::new(),
                        naming.push_labels(&output.resource_attributes, head),
                    )
                }
            };
            Push {
                name,
                from,
                until,
                labels,
                body: compress(output.profile.encode(), &EncodeOptions::default()),
            }
        })
        .collect())
}

fn unusable(error: impl std::error::Error + Send + Sync + 'static) -> ExportError {
    ExportError::Permanent(ExportCause::exporter("pyroscope", error))
}

/// The problems `validate` reports for the options, one after the other.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
struct InvalidOptions(Vec<Problem>);

/// A Pyroscope exporter configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error(transparent)]
    Tls(#[from] ClientTlsError),
    #[error("{given:?} is not a URL: {error}")]
    NotAUrl {
        given: String,
        error: <Url as std::str::FromStr>::Err,
    },
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error("{0:?} has a query or fragment; give the base URL only")]
    QueryOrFragment(String),
    #[error("headers: {0:?} is not a valid header name")]
    HeaderName(String),
    #[error("a header value is not valid in HTTP")]
    HeaderValue,
}

/// `{endpoint}/push.v1.PusherService/Push` or `{endpoint}/ingest`, and
/// whether it uses TLS.
fn api_url(config: &PyroscopeExporterConfig) -> Result<(Url, bool), SetupError> {
    let path = match config.api {
        PyroscopeApi::Push => PUSH_PATH,
        PyroscopeApi::Ingest => INGEST_PATH,
    };
    let given = config.client.endpoint.trim();
    let (scheme, rest) = split_scheme(given)?;
    let tls = uses_tls(scheme, &config.client.tls)?;
    let text = format!(
        "{}://{}{path}",
        if tls { "https" } else { "http" },
        rest.trim_end_matches('/')
    );
    let url = Url::parse(&text).map_err(|error| SetupError::NotAUrl {
        given: given.to_owned(),
        error,
    })?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(SetupError::NoHost(given.to_owned()));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(SetupError::QueryOrFragment(given.to_owned()));
    }
    Ok((url, tls))
}

fn headers(config: &PyroscopeExporterConfig) -> Result<HeaderMap, SetupError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &config.client.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| SetupError::HeaderName(name.clone()))?;
        headers.insert(name, sensitive(value)?);
    }
    if let Some(tenant) = &config.tenant_id {
        headers.insert(HeaderName::from_static(TENANT_HEADER), sensitive(tenant)?);
    }
    match config.api {
        PyroscopeApi::Push => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/proto"));
            headers.insert(
                HeaderName::from_static("connect-protocol-version"),
                HeaderValue::from_static("1"),
            );
        }
        PyroscopeApi::Ingest => {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
        }
    }
    Ok(headers)
}

/// A header value kept out of Debug output: headers often carry
/// credentials.
fn sensitive(value: &str) -> Result<HeaderValue, SetupError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| SetupError::HeaderValue)?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::client::{ClientSettings, TlsConfig};

    fn client_of(endpoint: &str) -> ClientSettings {
        ClientSettings {
            endpoint: endpoint.to_owned(),
            ..ClientSettings::default()
        }
    }

    fn url_of(endpoint: &str, tls: TlsConfig) -> Result<String, SetupError> {
        let config = PyroscopeExporterConfig {
            client: ClientSettings {
                tls,
                ..client_of(endpoint)
            },
            api: PyroscopeApi::Ingest,
            ..PyroscopeExporterConfig::default()
        };
        api_url(&config).map(|(url, _)| url.to_string())
    }

    #[test]
    fn urls_get_the_ingest_path() {
        let plain = TlsConfig::default;
        assert_eq!(
            url_of("http://pyroscope:4040", plain()).unwrap(),
            "http://pyroscope:4040/ingest"
        );
        assert_eq!(
            url_of("https://profiles.example.com/prefix/", plain()).unwrap(),
            "https://profiles.example.com/prefix/ingest"
        );
        assert_eq!(
            url_of("127.0.0.1:4040", plain()).unwrap(),
            "http://127.0.0.1:4040/ingest"
        );
        let tls = TlsConfig {
            insecure: Some(false),
            ..TlsConfig::default()
        };
        assert_eq!(
            url_of("pyroscope:4040", tls).unwrap(),
            "https://pyroscope:4040/ingest"
        );
        assert!(url_of("", plain()).is_err());
        assert!(url_of("ftp://x", plain()).is_err());
        assert!(url_of("http://p:4040/?x=1", plain()).is_err());
        let push = PyroscopeExporterConfig {
            client: client_of("http://pyroscope:4040/prefix/"),
            ..PyroscopeExporterConfig::default()
        };
        assert_eq!(
            api_url(&push).unwrap().0.as_str(),
            "http://pyroscope:4040/prefix/push.v1.PusherService/Push"
        );
    }

    #[test]
    fn problems_are_reported_at_their_keys() {
        let config = PyroscopeExporterConfig {
            client: ClientSettings {
                tls: TlsConfig {
                    insecure: Some(true),
                    ..TlsConfig::default()
                },
                headers: [
                    ("Authorization".to_owned(), "Bearer x".to_owned()),
                    ("X-Scope-OrgID".to_owned(), "a".to_owned()),
                    ("bad name".to_owned(), "v".to_owned()),
                ]
                .into(),
                ..client_of("https://p")
            },
            basic_auth: Some(BasicAuthConfig {
                username: String::new(),
                password: "p".to_owned(),
            }),
            tenant_id: Some("t".to_owned()),
            application_name_attribute: " ".to_owned(),
            labels_from_resource_attributes: vec![
                "host.name".to_owned(),
                "host-name".to_owned(),
                "service.name".to_owned(),
                "__meta".to_owned(),
                String::new(),
            ],
            ..PyroscopeExporterConfig::default()
        };
        let paths: Vec<String> = config
            .problems()
            .into_iter()
            .map(|problem| problem.path)
            .collect();
        assert_eq!(
            paths,
            [
                "endpoint",
                "headers.Authorization",
                "headers.X-Scope-OrgID",
                "headers.bad name",
                "basic_auth.username",
                "application_name_attribute",
                "labels_from_resource_attributes[1]",
                "labels_from_resource_attributes[2]",
                "labels_from_resource_attributes[3]",
                "labels_from_resource_attributes[4]",
            ]
        );
        assert!(PyroscopeExporterConfig {
            client: client_of("http://p:4040"),
            ..PyroscopeExporterConfig::default()
        }
        .problems()
        .is_empty());
    }

    #[test]
    fn the_password_stays_out_of_debug_output() {
        let auth = BasicAuthConfig {
            username: "u".to_owned(),
            password: "hunter2".to_owned(),
        };
        assert!(!format!("{auth:?}").contains("hunter2"));
    }
}
