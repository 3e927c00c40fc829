use std::fmt;

use serde::Deserialize;

use super::naming::{label_name, RESERVED_LABEL_NAMES};
use crate::client::tls::{split_scheme, uses_tls};
use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::client::ClientSettings;
use crate::settings::units::Duration;
use crate::settings::Problem;
use crate::settings::{EmbeddedPart, ExtensionRef, Options};

/// The path appended to `endpoint` for `api: ingest`.
pub const INGEST_PATH: &str = "/ingest";

/// Which of Pyroscope's APIs the exporter pushes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PyroscopeApi {
    /// `POST /push.v1.PusherService/Push` (Connect, protobuf): what the
    /// current SDKs and Alloy use; one call per export.
    #[default]
    Push,
    /// `POST /ingest?name=…&format=pprof`: one call per pprof.
    Ingest,
}

/// Default time one export attempt may take: a request may become several
/// pushes, one per pprof.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The resource attribute that names the application by default.
pub const DEFAULT_APPLICATION_NAME_ATTRIBUTE: &str = "service.name";

/// The resource attributes that become labels by default.
pub const DEFAULT_LABEL_ATTRIBUTES: [&str; 3] =
    ["service.namespace", "deployment.environment", "host.name"];

/// The header `tenant_id` sets.
pub const TENANT_HEADER: &str = "x-scope-orgid";

/// `exporters: pyroscope:` — pprof pushed to Pyroscope's push API or its
/// `/ingest` endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PyroscopeExporterConfig {
    /// `push` (default) or `ingest`.
    pub api: PyroscopeApi,
    /// HTTP basic authentication (Grafana Cloud: the stack's user and a
    /// token).
    pub basic_auth: Option<BasicAuthConfig>,
    /// Sent as `X-Scope-OrgID`, which multi-tenant Pyroscope requires.
    pub tenant_id: Option<String>,
    /// The resource attribute whose value is the application name
    /// (`unknown_service` when a resource does not have it).
    pub application_name_attribute: String,
    /// Resource attributes that become labels (`host.name` → `host_name`).
    pub labels_from_resource_attributes: Vec<String>,
    /// `endpoint` (the Pyroscope server's base URL, e.g.
    /// `http://pyroscope:4040`, to which the API's path is appended;
    /// without a scheme, `http://`, or `https://` when `tls` asks for
    /// TLS), `tls`, `headers` (e.g. `authorization`) and `auth`, whose
    /// keys sit beside the others.
    #[serde(skip)]
    pub client: ClientSettings,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for PyroscopeExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

impl Default for PyroscopeExporterConfig {
    fn default() -> Self {
        Self {
            api: PyroscopeApi::default(),
            basic_auth: None,
            tenant_id: None,
            application_name_attribute: DEFAULT_APPLICATION_NAME_ATTRIBUTE.to_owned(),
            labels_from_resource_attributes: DEFAULT_LABEL_ATTRIBUTES
                .iter()
                .map(|key| (*key).to_owned())
                .collect(),
            client: ClientSettings::default(),
            helper: ExporterHelperConfig::with_timeout(DEFAULT_TIMEOUT),
        }
    }
}

/// `basic_auth:` — sent as `Authorization: Basic …`.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BasicAuthConfig {
    pub username: String,
    pub password: String,
}

/// Keeps the password out of logs and error messages.
impl fmt::Debug for BasicAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuthConfig")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl PyroscopeExporterConfig {
    /// What is wrong with the options, each at its path under the
    /// exporter's own key. TLS files are read only when the exporter starts.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.basic_auth.is_some() && self.client.auth.is_some() {
            problems.push(Problem::new(
                "auth",
                "set basic_auth or auth, not both: each is the Authorization header",
            ));
        }
        if self.client.endpoint.trim().is_empty() {
            problems.push(Problem::new(
                "endpoint",
                "is empty; name the Pyroscope server, like http://pyroscope:4040",
            ));
        } else if let Err(error) = split_scheme(&self.client.endpoint)
            .and_then(|(scheme, _)| uses_tls(scheme, &self.client.tls).map(|_| ()))
        {
            problems.push(Problem::new("endpoint", error.to_string()));
        }
        for (name, value) in &self.client.headers {
            let path = format!("headers.{name}");
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                problems.push(Problem::new(path, "is not a valid header name"));
            } else if reqwest::header::HeaderValue::from_str(value).is_err() {
                problems.push(Problem::new(path, "is not a valid header value"));
            } else if name.eq_ignore_ascii_case("authorization") && self.basic_auth.is_some() {
                problems.push(Problem::new(
                    path,
                    "conflicts with basic_auth, which sets authorization; keep one",
                ));
            } else if name.eq_ignore_ascii_case(TENANT_HEADER) && self.tenant_id.is_some() {
                problems.push(Problem::new(
                    path,
                    "conflicts with tenant_id, which sets X-Scope-OrgID; keep one",
                ));
            }
        }
        if let Some(auth) = &self.basic_auth {
            if auth.username.is_empty() {
                problems.push(Problem::new("basic_auth.username", "is empty"));
            } else if auth.username.contains(':') {
                problems.push(Problem::new(
                    "basic_auth.username",
                    "contains ':', which basic authentication cannot carry",
                ));
            }
        }
        if let Some(tenant) = &self.tenant_id {
            if tenant.trim().is_empty() {
                problems.push(Problem::new(
                    "tenant_id",
                    "is empty; leave it out for a single-tenant Pyroscope",
                ));
            } else if reqwest::header::HeaderValue::from_str(tenant).is_err() {
                problems.push(Problem::new("tenant_id", "is not a valid header value"));
            }
        }
        if self.application_name_attribute.trim().is_empty() {
            problems.push(Problem::new(
                "application_name_attribute",
                "is empty; name a resource attribute, like service.name",
            ));
        }
        self.label_problems(&mut problems);
        problems
    }

    fn label_problems(&self, problems: &mut Vec<Problem>) {
        let keys = &self.labels_from_resource_attributes;
        for (index, key) in keys.iter().enumerate() {
            let path = format!("labels_from_resource_attributes[{index}]");
            if key.trim().is_empty() {
                problems.push(Problem::new(path, "is empty"));
                continue;
            }
            let name = label_name(key);
            if name.starts_with("__") || RESERVED_LABEL_NAMES.contains(&name.as_str()) {
                problems.push(Problem::new(
                    path,
                    format!("{key:?} would become label {name}, which Pyroscope reserves"),
                ));
            } else if let Some(earlier) = keys
                .iter()
                .take(index)
                .position(|other| label_name(other) == name)
            {
                problems.push(Problem::new(
                    path,
                    format!(
                        "{key:?} would become label {name}, as labels_from_resource_attributes[{earlier}] does"
                    ),
                ));
            }
        }
    }
}

impl Options for PyroscopeExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client, &mut self.helper]
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.client.extension_refs()
    }

    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }
}
