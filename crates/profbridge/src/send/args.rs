//! `profbridge send`'s arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use profbridge_collector::config::units::parse_duration;

use crate::input::InputFormat;
use crate::key_value::parse_key_value;

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// OTLP/gRPC, `ProfilesService/Export`.
    Grpc,
    /// OTLP/HTTP, `POST /v1development/profiles`.
    Http,
}

/// OTLP/HTTP body encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BodyEncoding {
    Proto,
    Json,
}

/// Request compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    Gzip,
    Zstd,
    None,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Profiles to send, one request each; `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
    /// Where to send: host:port, http://host:port or https://host:port (gRPC);
    /// a base URL for HTTP, to which /v1development/profiles is appended.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// OTLP transport.
    #[arg(long, value_enum, default_value = "grpc")]
    pub protocol: Protocol,
    /// A header (gRPC metadata) sent with every request, e.g.
    /// authorization=Bearer… (repeatable).
    #[arg(long = "header", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub headers: Vec<(String, String)>,
    /// A resource attribute, e.g. service.name=checkout (repeatable).
    #[arg(long = "resource-attr", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub resource_attrs: Vec<(String, String)>,
    /// Input format.
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub from: InputFormat,
    /// The sample type of folded input: TYPE or TYPE/UNIT (default samples/count).
    #[arg(long, value_name = "TYPE[/UNIT]")]
    pub sample_type: Option<String>,
    /// Instrumentation scope name for converted profiles.
    #[arg(long, default_value = "profbridge", value_name = "NAME")]
    pub scope_name: String,
    /// Body encoding (HTTP only).
    #[arg(long, value_enum, value_name = "ENCODING")]
    pub encoding: Option<BodyEncoding>,
    /// Request compression.
    #[arg(long, value_enum, default_value = "gzip")]
    pub compression: CompressionArg,
    /// How long one attempt may take.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Retries of a retryable failure, per file, after the first attempt.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub retries: u32,
    /// Stop retrying a file once this much time has passed since its first attempt.
    #[arg(long, default_value = "1m", value_name = "DURATION", value_parser = parse_duration)]
    pub max_elapsed_time: Duration,
    /// PEM CA certificates to trust instead of the built-in roots (TLS).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<String>,
    /// PEM client certificate for mutual TLS (with --key-file).
    #[arg(long, value_name = "FILE", requires = "key_file")]
    pub cert_file: Option<String>,
    /// PEM private key of --cert-file.
    #[arg(long, value_name = "FILE", requires = "cert_file")]
    pub key_file: Option<String>,
    /// Accept any server certificate (HTTP only; for tests).
    #[arg(long)]
    pub insecure_skip_verify: bool,
}
