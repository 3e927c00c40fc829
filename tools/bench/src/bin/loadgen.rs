//! Load generator for scripts/bench-collector.sh: sends OTLP
//! `ExportProfilesServiceRequest`s over gRPC, gzip-compressed, and prints
//! what came back.
//!
//! Usage:
//!   loadgen --endpoint http://127.0.0.1:PORT --connections N --duration SECS
//!           [--rate REQ_PER_SEC] [--stacks K] [--shape tree|random]
//!           [--pprof FILE] [--variants V]
//!
//! Each connection is one tonic channel (one HTTP/2 connection) with one
//! request in flight. Without `--rate` each connection sends its next
//! request as soon as the last one is answered; with it, requests are paced
//! to that total rate (split evenly between the connections, never more
//! than one in flight per connection, so a slow server lowers the rate).
//!
//! The requests are `profbridge_testkit::generated_request(SHAPE, K, seed)`
//! for `V` seeds (default K = 2000, V = 4, SHAPE tree: stacks from a call
//! tree, `profiler_like_request`; random is `ebpf_like_request`), or the
//! pprof FILE converted with
//! `pprof_to_otlp`. Each is encoded and gzipped (level 6, as tonic and the
//! OpenTelemetry exporters do) once, before the clock starts, and sent as a
//! ready-made gRPC frame, so that the client's own CPU use (which shares
//! the machine with the server) stays small.
//!
//! Prints one line:
//! `requests=… ok=… refused_retryable=… errors=… req_per_s=… ok_req_per_s=…
//! mb_per_s=… ok_mb_per_s=… p50_ms=… p99_ms=… request_bytes=… gzip_bytes=…`
//! where MB/s counts encoded (uncompressed) request bytes, 10^6 a MB, and
//! the latencies cover every answered request. Retryable refusals are
//! UNAVAILABLE and RESOURCE_EXHAUSTED; every other failure is an error
//! (the first few are printed to stderr).

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use prost::Message;
use tonic::client::GrpcService;
use tonic::transport::{Channel, Endpoint};

use profbridge_testkit::StackShape;
use profbridge_translate::otlp::{ExportProfilesServiceRequest, ExportProfilesServiceResponse};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

const PATH: &str = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
/// No request waits longer than this for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Errors printed to stderr, at most.
const ERRORS_SHOWN: usize = 5;

struct Args {
    endpoint: String,
    connections: usize,
    duration: Duration,
    rate: Option<f64>,
    stacks: usize,
    shape: StackShape,
    pprof: Option<String>,
    variants: u64,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        endpoint: String::new(),
        connections: 1,
        duration: Duration::from_secs(10),
        rate: None,
        stacks: 2000,
        shape: StackShape::CallTree,
        pprof: None,
        variants: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => args.endpoint = value()?,
            "--connections" => args.connections = value()?.parse()?,
            "--duration" => args.duration = Duration::from_secs_f64(value()?.parse()?),
            "--rate" => args.rate = Some(value()?.parse()?),
            "--stacks" => args.stacks = value()?.parse()?,
            "--shape" => {
                args.shape = match value()?.as_str() {
                    "tree" => StackShape::CallTree,
                    "random" => StackShape::Random,
                    other => return Err(format!("--shape {other:?}: use tree or random").into()),
                }
            }
            "--pprof" => args.pprof = Some(value()?),
            "--variants" => args.variants = value()?.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    if args.endpoint.is_empty() {
        return Err("--endpoint is required".into());
    }
    if args.connections == 0 || args.variants == 0 {
        return Err("--connections and --variants must be at least 1".into());
    }
    if args.rate.is_some_and(|rate| rate.is_nan() || rate <= 0.0) {
        return Err("--rate must be positive".into());
    }
    Ok(args)
}

fn requests(args: &Args) -> Result<Vec<ExportProfilesServiceRequest>> {
    let Some(path) = &args.pprof else {
        return Ok((1..=args.variants)
            .map(|seed| profbridge_testkit::generated_request(args.shape, args.stacks, seed))
            .collect());
    };
    let data = std::fs::read(path)?;
    let (profile, _) =
        profbridge_pprof::parse_any(&data, &profbridge_pprof::DecodeOptions::default())?;
    let converted = profbridge_translate::pprof_to_otlp(
        &[profbridge_translate::PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &profbridge_translate::ToOtlpOptions::default(),
    );
    if let Some((_, error)) = converted.rejected.first() {
        return Err(format!("{path}: {error}").into());
    }
    Ok(vec![converted.request])
}

/// A gRPC message frame holding `request` gzipped: flag 1, length, bytes.
fn frame(request: &ExportProfilesServiceRequest) -> Result<(usize, Bytes)> {
    let encoded = request.encode_to_vec();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gzip.write_all(&encoded)?;
    let compressed = gzip.finish()?;
    let mut frame = BytesMut::with_capacity(compressed.len() + 5);
    frame.put_u8(1);
    frame.put_u32(u32::try_from(compressed.len())?);
    frame.put_slice(&compressed);
    Ok((encoded.len(), frame.freeze()))
}

enum Answer {
    Ok,
    Retryable,
    Error(String),
}

fn grpc_status(headers: &http::HeaderMap) -> Option<(i32, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Some((code, message))
}

async fn export(channel: &mut Channel, frame: Bytes) -> Result<Answer> {
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(PATH)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-encoding", "gzip")
        .body(tonic::body::Body::new(Full::new(frame)))?;
    std::future::poll_fn(|cx| GrpcService::poll_ready(channel, cx)).await?;
    let response = GrpcService::call(channel, request).await?;
    if response.status() != http::StatusCode::OK {
        return Ok(Answer::Error(format!("HTTP {}", response.status())));
    }
    let (parts, body) = response.into_parts();
    // A trailers-only answer carries the status in its headers.
    let (status, body) = match grpc_status(&parts.headers) {
        Some(status) => (status, Bytes::new()),
        None => {
            let collected = body.collect().await?;
            let status = collected.trailers().and_then(grpc_status);
            match status {
                Some(status) => (status, collected.to_bytes()),
                None => return Ok(Answer::Error("no grpc-status".to_owned())),
            }
        }
    };
    Ok(match status {
        (0, _) => {
            // One uncompressed frame (the request did not offer
            // grpc-accept-encoding), or none.
            let message = body.get(5..).unwrap_or_default();
            let response = ExportProfilesServiceResponse::decode(message)?;
            match response.partial_success {
                Some(partial) if partial.rejected_profiles > 0 => Answer::Error(format!(
                    "partial success: {} rejected: {}",
                    partial.rejected_profiles, partial.error_message
                )),
                _ => Answer::Ok,
            }
        }
        // RESOURCE_EXHAUSTED, UNAVAILABLE
        (8 | 14, _) => Answer::Retryable,
        (code, message) => Answer::Error(format!("grpc-status {code}: {message}")),
    })
}

#[derive(Default)]
struct Tally {
    ok: u64,
    retryable: u64,
    errors: u64,
    ok_bytes: u64,
    bytes: u64,
    latencies: Vec<Duration>,
}

async fn connection(
    mut channel: Channel,
    frames: Arc<[(usize, Bytes)]>,
    first: usize,
    interval: Option<Duration>,
    start: Instant,
    deadline: Instant,
    errors_shown: Arc<AtomicUsize>,
) -> Tally {
    let mut tally = Tally::default();
    let mut next = start;
    let mut index = first;
    while Instant::now() < deadline {
        if let Some(interval) = interval {
            if next >= deadline {
                break;
            }
            tokio::time::sleep_until(next.into()).await;
            next += interval;
        }
        let Some((size, frame)) = frames.get(index % frames.len()).cloned() else {
            break;
        };
        index += 1;
        let sent = Instant::now();
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, export(&mut channel, frame)).await;
        let answer = match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => Answer::Error(error.to_string()),
            Err(_) => Answer::Error(format!("no answer within {REQUEST_TIMEOUT:?}")),
        };
        tally.latencies.push(sent.elapsed());
        let size = u64::try_from(size).unwrap_or(u64::MAX);
        tally.bytes += size;
        match answer {
            Answer::Ok => {
                tally.ok += 1;
                tally.ok_bytes += size;
            }
            Answer::Retryable => tally.retryable += 1,
            Answer::Error(message) => {
                tally.errors += 1;
                if errors_shown.fetch_add(1, Ordering::Relaxed) < ERRORS_SHOWN {
                    eprintln!("loadgen: error: {message}");
                }
            }
        }
    }
    tally
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    let index = rank.clamp(1, sorted.len()) - 1;
    sorted
        .get(index)
        .map_or(0.0, |latency| latency.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = parse_args()?;
    let frames = requests(&args)?
        .iter()
        .map(frame)
        .collect::<Result<Vec<_>>>()?;
    let request_bytes = frames.first().map_or(0, |(size, _)| *size);
    let gzip_bytes = frames.first().map_or(0, |(_, frame)| frame.len() - 5);
    let frames: Arc<[(usize, Bytes)]> = frames.into();

    let endpoint = Endpoint::from_shared(args.endpoint.clone())?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    let mut channels = Vec::with_capacity(args.connections);
    for _ in 0..args.connections {
        channels.push(endpoint.connect().await?);
    }

    let interval = args
        .rate
        .map(|rate| Duration::from_secs_f64(args.connections as f64 / rate));
    let start = Instant::now();
    let deadline = start + args.duration;
    let errors_shown = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(args.connections);
    for (n, channel) in channels.into_iter().enumerate() {
        // Spread the connections' first sends over one interval.
        let offset = interval.map_or(Duration::ZERO, |i| {
            i.mul_f64(n as f64 / args.connections as f64)
        });
        tasks.push(tokio::spawn(connection(
            channel,
            Arc::clone(&frames),
            n,
            interval,
            start + offset,
            deadline,
            Arc::clone(&errors_shown),
        )));
    }
    let mut total = Tally::default();
    for task in tasks {
        let tally = task.await?;
        total.ok += tally.ok;
        total.retryable += tally.retryable;
        total.errors += tally.errors;
        total.ok_bytes += tally.ok_bytes;
        total.bytes += tally.bytes;
        total.latencies.extend(tally.latencies);
    }
    let elapsed = start.elapsed().as_secs_f64();
    total.latencies.sort_unstable();
    let requests = total.ok + total.retryable + total.errors;
    println!(
        "requests={requests} ok={} refused_retryable={} errors={} req_per_s={:.1} ok_req_per_s={:.1} \
         mb_per_s={:.1} ok_mb_per_s={:.1} p50_ms={:.2} p99_ms={:.2} request_bytes={request_bytes} \
         gzip_bytes={gzip_bytes}",
        total.ok,
        total.retryable,
        total.errors,
        requests as f64 / elapsed,
        total.ok as f64 / elapsed,
        total.bytes as f64 / elapsed / 1e6,
        total.ok_bytes as f64 / elapsed / 1e6,
        percentile(&total.latencies, 0.50),
        percentile(&total.latencies, 0.99),
    );
    Ok(())
}
