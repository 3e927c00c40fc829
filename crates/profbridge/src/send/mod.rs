//! `profbridge send`: profiles in any format profbridge reads, converted to
//! OTLP and exported over gRPC or HTTP, one request per file, with retries.

mod args;
mod deliver;
mod request;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use prost::Message;

use profbridge_collector::config::units;
use profbridge_collector::exporters::helper::ExporterHelperConfig;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::exporters::otlp_http::config::{Encoding, OtlpHttpExporterConfig};
use profbridge_collector::exporters::otlp_http::OtlpHttpExporter;
use profbridge_collector::exporters::ExportError;
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::settings::client::{ClientSettings, Compression, TlsConfig};

pub use args::SendArgs;
use args::{BodyEncoding, CompressionArg, Protocol};
use deliver::{deliver, Destination, RetryLimits};

use crate::input::Input;
use crate::{EXIT_SOME_FAILED, EXIT_USAGE};

pub fn run(args: &SendArgs) -> Result<ExitCode> {
    init_logs();
    let destination = match destination(args) {
        Ok(destination) => destination,
        Err(message) => {
            eprintln!("profbridge send: {message}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let limits = RetryLimits {
        retries: args.retries,
        max_elapsed: args.max_elapsed_time,
    };
    let mut failed = 0_usize;
    for path in &args.inputs {
        let name = path.display().to_string();
        let outcome = match Input::read(path).and_then(|input| request::request_for(&input, args)) {
            Ok(request) => {
                let size = request.encoded_len();
                let batch = Profiles::new(request, size);
                runtime
                    .block_on(deliver(&destination, &batch, limits))
                    .map(|()| batch)
                    .map_err(|error| error.to_string())
            }
            Err(error) => Err(format!("{error:#}")),
        };
        match outcome {
            Ok(batch) => {
                let mut stdout = std::io::stdout().lock();
                writeln!(
                    stdout,
                    "sent {name}: {} profiles, {} samples",
                    batch.profile_count(),
                    batch.sample_count()
                )?;
            }
            Err(reason) => {
                failed += 1;
                let reason = reason.strip_prefix(&format!("{name}: ")).unwrap_or(&reason);
                eprintln!("profbridge: {name}: not delivered: {reason}");
            }
        }
    }
    if failed == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "profbridge send: {failed} of {} files not delivered",
        args.inputs.len()
    );
    Ok(ExitCode::from(EXIT_SOME_FAILED))
}

/// Options of `send` that describe no exporter.
#[derive(Debug, thiserror::Error)]
enum DestinationError {
    #[error("--encoding is for --protocol http; gRPC sends protobuf")]
    EncodingOverGrpc,
    #[error(transparent)]
    Exporter(#[from] ExportError),
}

/// The exporter the options describe, or why they do not describe one.
fn destination(args: &SendArgs) -> Result<Destination, DestinationError> {
    let headers: BTreeMap<String, String> = args.headers.iter().cloned().collect();
    let tls = TlsConfig {
        insecure: None,
        ca_file: args.ca_file.clone(),
        cert_file: args.cert_file.clone(),
        key_file: args.key_file.clone(),
        insecure_skip_verify: args.insecure_skip_verify,
    };
    let compression = match args.compression {
        CompressionArg::Gzip => Compression::Gzip,
        CompressionArg::Zstd => Compression::Zstd,
        CompressionArg::None => Compression::None,
    };
    let client = ClientSettings {
        endpoint: args.endpoint.clone(),
        tls,
        headers,
        auth: None,
    };
    let timeout = units::Duration(args.timeout);
    match args.protocol {
        Protocol::Grpc => {
            if args.encoding.is_some() {
                return Err(DestinationError::EncodingOverGrpc);
            }
            let config = OtlpExporterConfig {
                client,
                compression,
                helper: ExporterHelperConfig {
                    timeout,
                    ..ExporterHelperConfig::default()
                },
            };
            Ok(Destination::Grpc(Box::new(OtlpGrpcExporter::new(&config)?)))
        }
        Protocol::Http => {
            let config = OtlpHttpExporterConfig {
                client,
                profiles_endpoint: None,
                encoding: match args.encoding {
                    Some(BodyEncoding::Json) => Encoding::Json,
                    Some(BodyEncoding::Proto) | None => Encoding::Proto,
                },
                compression,
                helper: ExporterHelperConfig {
                    timeout,
                    ..ExporterHelperConfig::default()
                },
            };
            Ok(Destination::Http(Box::new(OtlpHttpExporter::new(&config)?)))
        }
    }
}

/// Warnings (such as profiles the destination rejected) go to stderr;
/// `RUST_LOG` can ask for more.
fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}
