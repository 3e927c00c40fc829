//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::input::InputFormat;
use crate::key_value::parse_key_value;

#[derive(Debug, Parser)]
#[command(
    name = "profbridge",
    version,
    about = "Move profiles between formats and systems: pprof, legacy profiles, folded stacks and OTLP Profiles",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the collector: receive OTLP profiles and write or forward them.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(crate::serve::ServeArgs),
    /// Check a collector configuration and explain every problem.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(crate::validate::ValidateArgs),
    /// Convert profiles between pprof, OTLP (protobuf or JSON) and folded stacks.
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(ConvertArgs),
    /// Resolve native addresses to functions, files and lines from ELF files
    /// and their debug files, writing any format `convert` writes.
    #[command(after_help = SYMBOLIZE_EXAMPLES)]
    Symbolize(SymbolizeArgs),
    /// Show what a profile holds: types, totals, top functions, frame types.
    #[command(after_help = INSPECT_EXAMPLES)]
    Inspect(InspectArgs),
    /// Send profiles to an OTLP endpoint (gRPC or HTTP), one request per file.
    #[command(after_help = SEND_EXAMPLES)]
    Send(crate::send::SendArgs),
}

const SERVE_EXAMPLES: &str = "Examples:
  profbridge serve                                   # the embedded default configuration
  profbridge serve --config /etc/profbridge/profbridge.yaml
  PROFBRIDGE__SERVICE__TELEMETRY__LOGS__LEVEL=debug profbridge serve

SIGINT or SIGTERM stops accepting, exports what was accepted, and exits.";

const VALIDATE_EXAMPLES: &str = "Examples:
  profbridge validate --config profbridge.yaml
  profbridge validate                                # the embedded default

Exit codes: 0 valid (warnings are printed), 1 invalid (every problem is printed).";

const CONVERT_EXAMPLES: &str = "Examples:
  profbridge convert cpu.pb.gz -o cpu.otlp.pb
  profbridge convert heap.prof --to otlp-json -o heap.json --resource-attr service.name=api
  profbridge convert *.pb.gz --out-dir otlp/ --to otlp
  profbridge convert a.pb.gz b.pb.gz --merge -o both.otlp.pb
  cat cpu.pb.gz | profbridge convert - --to otlp | profbridge convert - --to pprof -o back.pb.gz
  profbridge convert cpu.pb.gz --to folded --sample-type cpu -o cpu.folded

Exit codes: 0 all inputs converted, 1 some inputs failed (each is named, the
others are still converted), 2 usage error.";

const SYMBOLIZE_EXAMPLES: &str = "Examples:
  profbridge symbolize cpu.prof -o cpu.pb.gz
  profbridge symbolize cpu.pb.gz -o cpu.otlp.pb --debug-dir /usr/lib/debug
  profbridge symbolize request.otlp.pb -o out.otlp.pb --root /proc/4242/root --debug-dir /debug
  profbridge symbolize node.otlp.pb -o out.otlp.pb --process-roots /proc
  profbridge symbolize cpu.pb.gz -o out.pb.gz --debuginfod \"$DEBUGINFOD_URLS\"
  profbridge symbolize perf.pb.gz -o out.pb.gz --kallsyms /proc/kallsyms

Files are looked for at the mapping's path under --root, then by build id in each
--debug-dir (.build-id/xx/rest, .build-id/xx/rest.debug), then by .gnu_debuglink,
then from each --debuginfod server by build id (docs/symbolize.md). Kernel frames
are named from --kallsyms when it is given.
A file that cannot be used is named once on stderr; its frames stay addresses.

Exit codes: 0 all inputs written, 1 some inputs failed (each is named, the
others are still written), 2 usage error.";

const INSPECT_EXAMPLES: &str = "Examples:
  profbridge inspect cpu.pb.gz
  profbridge inspect heap.prof --sample-type inuse_space --top 20
  profbridge inspect request.otlp.pb --format json
  profbridge inspect cpu.pb.gz --format raw
  profbridge inspect cpu.pb.gz --flamegraph cpu.svg";

const SEND_EXAMPLES: &str = "Examples:
  profbridge send cpu.pb.gz --endpoint localhost:4317
  profbridge send *.pb.gz heap.prof --endpoint https://otlp.example.com --protocol http \\
      --header authorization='Bearer TOKEN' --resource-attr service.name=api
  profbridge send request.otlp.json --endpoint http://127.0.0.1:4318 --protocol http --encoding json

Retryable failures (unavailable, throttled, timed out) are retried with exponential
backoff, honouring the wait the endpoint asks for, up to --retries and --max-elapsed-time.

Exit codes: 0 all files delivered (one line each on stdout), 1 some files not delivered
(each is named, with why), 2 usage error.";

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Gzipped pprof (one file per profile).
    Pprof,
    /// OTLP ExportProfilesServiceRequest, protobuf.
    Otlp,
    /// OTLP ExportProfilesServiceRequest, JSON.
    OtlpJson,
    /// Folded stacks, root first, for one sample type.
    Folded,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input files; `-` reads standard input.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Output file; `-` writes standard output (the default for one input).
    #[arg(short, long, value_name = "OUT", conflicts_with = "out_dir")]
    pub output: Option<PathBuf>,
    /// Write one output per input into this folder, named after the input.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Output format; default: from the output's extension (.json → otlp-json,
    /// .otlp/.otlp.pb/.binpb → otlp, .folded/.txt → folded), else pprof.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub to: Option<OutputFormat>,
    /// Input format.
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub from: InputFormat,
    /// A resource attribute for OTLP output, e.g. service.name=checkout (repeatable).
    #[arg(long = "resource-attr", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub resource_attrs: Vec<(String, String)>,
    /// Instrumentation scope name for OTLP output.
    #[arg(long, default_value = "profbridge", value_name = "NAME")]
    pub scope_name: String,
    /// Sum samples that differ only in their timestamps.
    #[arg(long)]
    pub aggregate_timestamps: bool,
    /// Keep each input's bytes as the OTLP profile's original_payload.
    #[arg(long)]
    pub original_payload: bool,
    /// Folded stacks: the sample type to write (e.g. `cpu`), or the type of
    /// folded input (`TYPE` or `TYPE/UNIT`; default samples/count).
    #[arg(long, value_name = "TYPE[/UNIT]")]
    pub sample_type: Option<String>,
    /// Put every input into one OTLP request with one shared dictionary.
    #[arg(long)]
    pub merge: bool,
    /// gzip level for pprof output, 0 (none) to 9 (smallest).
    #[arg(long, default_value_t = profbridge_pprof::DEFAULT_GZIP_LEVEL, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub gzip_level: u32,
}

#[derive(Debug, Args)]
pub struct SymbolizeArgs {
    #[command(flatten)]
    pub convert: ConvertArgs,
    /// Open mapping paths under this folder (`/proc/PID/root` for a process
    /// in another mount namespace).
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// A /proc folder: locations sampled in a process named by
    /// `process.pid` open mapping paths under DIR/PID/root instead of --root.
    #[arg(long, value_name = "DIR")]
    pub process_roots: Option<PathBuf>,
    /// A folder of separate debug files, such as /usr/lib/debug (repeatable).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// debuginfod servers, `http://host:port[/prefix]` or `https://…`,
    /// separated by spaces as in DEBUGINFOD_URLS (repeatable; asked in
    /// order, by build id, after the local files).
    #[arg(long = "debuginfod", value_name = "URLS", value_parser = parse_server_list)]
    pub debuginfod: Vec<String>,
    /// How long one debuginfod request may take, from resolving the
    /// server's name to the last byte, in seconds.
    #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_seconds)]
    pub debuginfod_timeout: Duration,
    /// How long resolving a debuginfod server's name and connecting to it
    /// (TLS included) may take, in seconds.
    #[arg(long, default_value = "2", value_name = "SECONDS", value_parser = parse_seconds)]
    pub debuginfod_connect_timeout: Duration,
    /// How long a debuginfod server may stay silent while answering, in
    /// seconds.
    #[arg(long, default_value = "2", value_name = "SECONDS", value_parser = parse_seconds)]
    pub debuginfod_read_timeout: Duration,
    /// Where files fetched from debuginfod are kept (default:
    /// $XDG_CACHE_HOME/profbridge/debuginfod, or ~/.cache/profbridge/debuginfod).
    #[arg(long, value_name = "DIR")]
    pub debuginfod_cache: Option<PathBuf>,
    /// How many bytes the debuginfod cache may hold; the oldest files go
    /// first, and a larger file is not downloaded.
    #[arg(long, default_value_t = profbridge_symbolize::DEFAULT_CACHE_MAX_BYTES, value_name = "BYTES")]
    pub debuginfod_cache_bytes: u64,
    /// Name kernel frames from this kallsyms file (/proc/kallsyms of the
    /// machine and boot the profile comes from); without it, kernel frames
    /// are left alone.
    #[arg(long, value_name = "PATH")]
    pub kallsyms: Option<PathBuf>,
    /// The notes of the kernel --kallsyms describes (/sys/kernel/notes):
    /// kernel frames whose mapping has another build id are left alone.
    #[arg(long, value_name = "PATH")]
    pub kernel_notes: Option<PathBuf>,
}

/// Not a positive number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a positive number of seconds")]
pub struct NotSeconds(String);

/// `text` when it is a list of debuginfod servers.
fn parse_server_list(text: &str) -> Result<String, profbridge_symbolize::UnsupportedUrl> {
    profbridge_symbolize::server_urls(text).map(|_| text.to_owned())
}

/// A positive number of seconds, such as `0.5`.
fn parse_seconds(text: &str) -> Result<Duration, NotSeconds> {
    text.parse::<f64>()
        .ok()
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| NotSeconds(text.to_owned()))
}

/// How `inspect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InspectFormat {
    /// A summary for people.
    Text,
    /// The text google/pprof's Profile.String() prints.
    Raw,
    /// The summary as JSON, for scripts.
    Json,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The profile to inspect; `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Input format.
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub from: InputFormat,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: InspectFormat,
    /// Sample type for the top functions and the flame graph (default: the
    /// profile's default sample type).
    #[arg(long, value_name = "TYPE")]
    pub sample_type: Option<String>,
    /// How many functions to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Draw an SVG flame graph of the chosen sample type into this file.
    #[arg(long, value_name = "OUT.svg")]
    pub flamegraph: Option<PathBuf>,
}
