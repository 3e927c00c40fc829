//! `extensions: bearertokenauth:` options, as contrib's
//! bearertokenauthextension has them.

use serde::Deserialize;

use crate::settings::tls::file_problem;
use crate::settings::{ExtensionRole, Options, Problem};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BearerTokenAuthConfig {
    /// Written before the token, with a space; empty: the token alone.
    pub scheme: String,
    /// The header the credentials travel in.
    pub header: String,
    /// One token, given here.
    pub token: Option<String>,
    /// Several tokens a server accepts (a client sends the first).
    pub tokens: Vec<String>,
    /// A file with one token per line, read again when it changes; it
    /// wins over `token` and `tokens`, as in the Collector.
    pub filename: Option<String>,
}

impl Default for BearerTokenAuthConfig {
    fn default() -> Self {
        Self {
            scheme: "Bearer".to_owned(),
            header: "Authorization".to_owned(),
            token: None,
            tokens: Vec::new(),
            filename: None,
        }
    }
}

impl Options for BearerTokenAuthConfig {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(path) = &self.filename {
            if let Some(problem) = file_problem(path) {
                problems.push(Problem::new("filename", problem));
            }
        } else {
            match (&self.token, self.tokens.is_empty()) {
                (None, true) => problems.push(Problem::new(
                    "token",
                    "no bearer token: set token, tokens or filename",
                )),
                (Some(_), false) => {
                    problems.push(Problem::new("tokens", "set token or tokens, not both"))
                }
                _ => {}
            }
            if self
                .token
                .as_deref()
                .is_some_and(|token| token.trim().is_empty())
            {
                problems.push(Problem::new("token", "is empty"));
            }
            if self.tokens.iter().any(|token| token.trim().is_empty()) {
                problems.push(Problem::new("tokens", "a token is empty"));
            }
        }
        if axum::http::HeaderName::from_bytes(self.header.trim().as_bytes()).is_err() {
            problems.push(Problem::new(
                "header",
                format!("{:?} is not a valid header name", self.header),
            ));
        }
        problems
    }

    fn roles(&self) -> &'static [ExtensionRole] {
        &[ExtensionRole::Authenticator]
    }
}
