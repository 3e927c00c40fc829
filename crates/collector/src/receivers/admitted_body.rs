//! Request bodies read under the pipeline budget and a deadline: the
//! memory a body takes while it arrives is reserved in every pipeline
//! before it is allocated, in the same [`Admission`] that decoding later
//! grows. A client that stalls holds at most what the budget allowed it,
//! and only until the deadline.
//!
//! A body is collected in blocks of at most [`BLOCK`] bytes that are never
//! reallocated, and joined into one buffer once it has all arrived. A
//! buffer that doubled instead would hold its old and new copies at once
//! while growing, hand the old one back to an allocator that keeps it for
//! a while, and keep up to half its capacity empty while a client stalls.

use bytes::Bytes;
use http_body_util::BodyExt;
use tonic::codegen::{Body, StdError};

use crate::pipeline::PipelineHandle;
use crate::protocol::grpc_unary::{message_length, PREFIX_LEN};
use crate::receivers::intake::{admit, Admission};
use crate::telemetry::ReceiverMetrics;

/// Why a body was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the body is larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// A pipeline has no room for it (counted and logged by the intake).
    #[error("a pipeline has no room for the body; retry later")]
    Unavailable,
    #[error("the body did not arrive within {}s", .0.as_secs_f64())]
    TimedOut(std::time::Duration),
    #[error("reading the body: {0}")]
    Failed(String),
}

/// Where a body goes and how long it may take.
pub struct BodyBudget<'a> {
    pub pipelines: &'a [PipelineHandle],
    pub metrics: &'a ReceiverMetrics,
    /// Largest body taken, as sent.
    pub limit: usize,
    /// The whole body must have arrived by then.
    pub deadline: tokio::time::Instant,
    /// For the error's text.
    pub timeout: std::time::Duration,
}

/// Reads `body` whole, holding its bytes in every pipeline as they come.
pub async fn read_admitted<B>(
    body: &mut B,
    declared: Option<u64>,
    budget: &BodyBudget<'_>,
) -> Result<(Bytes, Admission), BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<StdError>,
{
    read(body, declared, Framing::Plain, budget).await
}

/// [`read_admitted`] for the body of a unary gRPC call: without a declared
/// length, the message prefix sizes its blocks once it has arrived.
pub async fn read_admitted_grpc<B>(
    body: &mut B,
    declared: Option<u64>,
    budget: &BodyBudget<'_>,
) -> Result<(Bytes, Admission), BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<StdError>,
{
    read(body, declared, Framing::GrpcUnary, budget).await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Plain,
    GrpcUnary,
}

async fn read<B>(
    body: &mut B,
    declared: Option<u64>,
    framing: Framing,
    budget: &BodyBudget<'_>,
) -> Result<(Bytes, Admission), BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<StdError>,
{
    let mut declared = declared.and_then(|length| usize::try_from(length).ok());
    if declared.is_some_and(|length| length > budget.limit) {
        return Err(BodyError::TooLarge {
            limit: budget.limit,
        });
    }
    // Held as bytes arrive, not as declared: a client that declares a large
    // body and stalls must not hold the budget for nothing.
    let Some(admission) = admit(budget.pipelines, 0, budget.metrics) else {
        return Err(BodyError::Unavailable);
    };
    let mut blocks = Blocks {
        admission,
        full: Vec::new(),
        current: Vec::new(),
        len: 0,
        capacity: 0,
    };
    loop {
        let frame = tokio::time::timeout_at(budget.deadline, body.frame()).await;
        let frame = match frame {
            Err(_) => return Err(BodyError::TimedOut(budget.timeout)),
            Ok(None) => break,
            Ok(Some(Err(error))) => return Err(BodyError::Failed(error.into().to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            // Trailers: nothing to hold.
            continue;
        };
        if blocks.len.saturating_add(data.len()) > budget.limit {
            return Err(BodyError::TooLarge {
                limit: budget.limit,
            });
        }
        blocks.extend(&data, declared, budget)?;
        if declared.is_none() && framing == Framing::GrpcUnary {
            declared = blocks
                .prefix()
                .map(|prefix| message_length(&prefix).saturating_add(PREFIX_LEN));
        }
    }
    blocks.join(budget.metrics)
}

/// Largest block a body is collected in. Blocks this large get pages of
/// their own from the allocator, so that one freed is reused whole by the
/// next body instead of leaving holes in pages shared with other blocks.
const BLOCK: usize = 1 << 20;

/// Smallest block, unless the declared length is shorter: what a body's
/// first bytes may hold. Blocks from this size up are each given pages of
/// their own by mimalloc (its medium objects, up to 128 KiB, share pages).
const FIRST_BLOCK: usize = 256 << 10;

/// A body as it arrives, and the room its blocks hold.
struct Blocks {
    admission: Admission,
    full: Vec<Vec<u8>>,
    /// The block being filled.
    current: Vec<u8>,
    len: usize,
    /// Of all the blocks, as held in the admission.
    capacity: usize,
}

impl Blocks {
    /// Appends `data`, within the limit already checked, holding each new
    /// block in the budget before allocating it.
    fn extend(
        &mut self,
        mut data: &[u8],
        declared: Option<usize>,
        budget: &BodyBudget<'_>,
    ) -> Result<(), BodyError> {
        while !data.is_empty() {
            if self.current.len() == self.current.capacity() {
                let size = self.next_block(data.len(), declared, budget.limit);
                let capacity = self.capacity.saturating_add(size);
                if !self.admission.cover(capacity, budget.metrics) {
                    return Err(BodyError::Unavailable);
                }
                self.capacity = capacity;
                let full = std::mem::replace(&mut self.current, Vec::with_capacity(size));
                if !full.is_empty() {
                    self.full.push(full);
                }
            }
            let room = self.current.capacity() - self.current.len();
            let (now, rest) = data.split_at(data.len().min(room));
            self.current.extend_from_slice(now);
            self.len += now.len();
            data = rest;
        }
        Ok(())
    }

    /// The size of the next block: as much as has arrived so far
    /// (doubling the total, as a growing buffer would), the chunk at hand
    /// if larger, and at least [`FIRST_BLOCK`]; never past the declared
    /// length, [`BLOCK`] or the limit (which `pending` is within). A
    /// declared length only caps a block: a client that declares 20 MB
    /// and sends one byte holds one small block, not a large one.
    fn next_block(&self, pending: usize, declared: Option<usize>, limit: usize) -> usize {
        let grown = self.len.max(pending).max(FIRST_BLOCK);
        let wanted = match declared {
            Some(declared) if declared > self.len => grown.min(declared - self.len),
            _ => grown,
        };
        wanted.min(BLOCK).min(limit.saturating_sub(self.len))
    }

    /// The first bytes of the body, once they have arrived.
    fn prefix(&self) -> Option<[u8; PREFIX_LEN]> {
        let mut prefix = [0; PREFIX_LEN];
        let mut arrived = self.full.iter().chain([&self.current]).flatten();
        for byte in &mut prefix {
            *byte = *arrived.next()?;
        }
        Some(prefix)
    }

    /// The body in one buffer. Joining blocks holds the blocks and the
    /// joined copy at once, so both are held in the budget first.
    fn join(mut self, metrics: &ReceiverMetrics) -> Result<(Bytes, Admission), BodyError> {
        if self.full.is_empty() {
            return Ok((Bytes::from(self.current), self.admission));
        }
        if !self
            .admission
            .cover(self.capacity.saturating_add(self.len), metrics)
        {
            return Err(BodyError::Unavailable);
        }
        let mut whole = Vec::with_capacity(self.len);
        for block in self.full.drain(..) {
            whole.extend_from_slice(&block);
        }
        whole.extend_from_slice(&self.current);
        Ok((Bytes::from(whole), self.admission))
    }
}

/// Reads what is left of a refused body and drops it, up to `limit`
/// bytes and until `deadline`, so that an HTTP/1 client still sending it
/// gets the answer rather than a reset connection. Holds no memory.
pub async fn drain<B>(body: &mut B, limit: usize, deadline: tokio::time::Instant)
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<StdError>,
{
    let mut read = 0usize;
    while read <= limit {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                read = read.saturating_add(frame.data_ref().map_or(0, Bytes::len));
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;
    use crate::telemetry::Registry;
    use http_body_util::Full;
    use std::time::Duration;

    fn refused<T>(result: Result<T, BodyError>) -> BodyError {
        match result {
            Ok(_) => panic!("read"),
            Err(error) => error,
        }
    }

    fn budget<'a>(
        pipelines: &'a [PipelineHandle],
        metrics: &'a ReceiverMetrics,
        limit: usize,
        timeout: Duration,
    ) -> BodyBudget<'a> {
        BodyBudget {
            pipelines,
            metrics,
            limit,
            deadline: tokio::time::Instant::now() + timeout,
            timeout,
        }
    }

    #[tokio::test]
    async fn bytes_are_held_as_they_arrive_and_refused_past_the_budget() {
        let room = FIRST_BLOCK + 100;
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), room, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        let held = handles[0].budget().try_reserve(60).unwrap();
        let spec = budget(&handles, &metrics, 1 << 20, Duration::from_secs(5));
        // Undeclared, the first bytes take a first block.
        let (bytes, admission) =
            read_admitted(&mut Full::new(Bytes::from(vec![1u8; 30])), None, &spec)
                .await
                .unwrap();
        assert_eq!(bytes.len(), 30);
        assert_eq!(handles[0].budget().used(), 60 + FIRST_BLOCK);
        let error =
            refused(read_admitted(&mut Full::new(Bytes::from(vec![1u8; 50])), None, &spec).await);
        assert!(matches!(error, BodyError::Unavailable), "{error:?}");
        drop(admission);
        // A declared length caps the block, and is not held before its
        // bytes come: a client that declares more than there is room for
        // and stalls holds nothing.
        let (bytes, admission) =
            read_admitted(&mut Full::new(Bytes::from(vec![1u8; 30])), Some(30), &spec)
                .await
                .unwrap();
        assert_eq!(bytes.len(), 30);
        assert_eq!(handles[0].budget().used(), 90);
        drop(admission);
        let (bytes, admission) = read_admitted(&mut Full::new(Bytes::new()), Some(50), &spec)
            .await
            .unwrap();
        assert!(bytes.is_empty());
        assert_eq!(handles[0].budget().used(), 60);
        drop(admission);
        drop(held);
        assert_eq!(handles[0].budget().used(), 0);
        let error =
            refused(read_admitted(&mut Full::new(Bytes::new()), Some((1 << 20) + 1), &spec).await);
        assert!(
            matches!(error, BodyError::TooLarge { limit: 1_048_576 }),
            "{error:?}"
        );
    }

    /// A body sent in `chunks` chunks of 64 KiB, and its bytes.
    fn chunked(chunks: usize) -> (axum::body::Body, Vec<u8>) {
        let whole: Vec<u8> = (0..chunks << 16).map(|i| (i % 251) as u8).collect();
        let parts: Vec<Result<Bytes, std::io::Error>> = whole
            .chunks(1 << 16)
            .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
            .collect();
        let body = axum::body::Body::from_stream(tonic::codegen::tokio_stream::iter(parts));
        (body, whole)
    }

    #[tokio::test]
    async fn blocks_and_their_joined_copy_are_held_before_they_are_allocated() {
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 64 << 20, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        let spec = budget(&handles, &metrics, 32 << 20, Duration::from_secs(5));
        // Undeclared, blocks double the total so far up to a megabyte, from
        // 256 KiB: 256 KiB twice, then 512 KiB, then two of 1 MiB, which are
        // then joined in a copy of 3 MiB.
        let (mut body, whole) = chunked(48);
        let (bytes, admission) = read_admitted(&mut body, None, &spec).await.unwrap();
        assert_eq!(bytes, whole);
        assert_eq!(handles[0].budget().used(), 6 << 20);
        drop(admission);
        // Declared: blocks of a megabyte and the rest.
        let (mut body, whole) = chunked(40);
        let (bytes, admission) = read_admitted(&mut body, Some(40 << 16), &spec)
            .await
            .unwrap();
        assert_eq!(bytes, whole);
        assert_eq!(handles[0].budget().used(), 2 * (40 << 16));
        drop(admission);
        // A body that fits in its first block is not copied.
        let (mut body, whole) = chunked(1);
        let (bytes, admission) = read_admitted(&mut body, Some(1 << 16), &spec)
            .await
            .unwrap();
        assert_eq!(bytes, whole);
        assert_eq!(handles[0].budget().used(), 1 << 16);
        drop(admission);
        assert_eq!(handles[0].budget().used(), 0);
    }

    #[tokio::test]
    async fn a_grpc_message_prefix_sizes_the_blocks_after_it() {
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 64 << 20, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "grpc");
        let spec = budget(&handles, &metrics, 32 << 20, Duration::from_secs(5));
        let message = 2usize << 20;
        let mut parts: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from(
            [&[0u8][..], &u32::try_from(message).unwrap().to_be_bytes()].concat(),
        ))];
        parts.extend((0..message >> 16).map(|_| Ok(Bytes::from(vec![7u8; 1 << 16]))));
        let mut body = axum::body::Body::from_stream(tonic::codegen::tokio_stream::iter(parts));
        let (bytes, admission) = read_admitted_grpc(&mut body, None, &spec).await.unwrap();
        assert_eq!(bytes.len(), PREFIX_LEN + message);
        // The prefix's own block, then two of a megabyte; joined.
        assert_eq!(handles[0].budget().used(), 2 * (PREFIX_LEN + message));
        drop(admission);
    }

    #[tokio::test]
    async fn a_body_whose_joined_copy_has_no_room_is_refused() {
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 5 << 20, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        // Else a lone body may pass the budget.
        let held = handles[0].budget().try_reserve(1 << 20).unwrap();
        let spec = budget(&handles, &metrics, 32 << 20, Duration::from_secs(5));
        // Its 3 MiB of blocks fit, not the 3 MiB they are joined into.
        let (mut body, _) = chunked(48);
        let error = refused(read_admitted(&mut body, Some(48 << 16), &spec).await);
        assert!(matches!(error, BodyError::Unavailable), "{error:?}");
        assert_eq!(handles[0].budget().used(), 1 << 20);
        drop(held);
    }

    #[tokio::test]
    async fn a_large_declared_length_holds_only_a_first_block_for_one_byte() {
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 64 << 20, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        let spec = budget(&handles, &metrics, 32 << 20, Duration::from_millis(300));
        let first: Result<Bytes, std::io::Error> = Ok(Bytes::from_static(b"a"));
        let stalled = tonic::codegen::tokio_stream::StreamExt::chain(
            tonic::codegen::tokio_stream::iter(vec![first]),
            tonic::codegen::tokio_stream::pending(),
        );
        let mut body = axum::body::Body::from_stream(stalled);
        let (read, held) = tokio::join!(read_admitted(&mut body, Some(20_000_000), &spec), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            handles[0].budget().used()
        });
        assert!(matches!(read, Err(BodyError::TimedOut(_))));
        assert_eq!(held, FIRST_BLOCK);
        assert_eq!(handles[0].budget().used(), 0);
    }

    #[tokio::test]
    async fn a_stalled_body_times_out_and_gives_its_bytes_back() {
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 1000, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        let spec = budget(&handles, &metrics, 1000, Duration::from_millis(200));
        let first: Result<Bytes, std::io::Error> = Ok(Bytes::from_static(b"abc"));
        let stalled = tonic::codegen::tokio_stream::StreamExt::chain(
            tonic::codegen::tokio_stream::iter(vec![first]),
            tonic::codegen::tokio_stream::pending(),
        );
        let mut body = axum::body::Body::from_stream(stalled);
        let error = refused(read_admitted(&mut body, Some(100), &spec).await);
        assert!(matches!(error, BodyError::TimedOut(_)), "{error:?}");
        assert_eq!(handles[0].budget().used(), 0);
    }
}
