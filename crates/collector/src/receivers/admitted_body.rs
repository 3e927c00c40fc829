//! Request bodies read under the pipeline budget and a deadline: the
//! bytes a body holds while it arrives are reserved in every pipeline
//! before they are buffered (the declared Content-Length up front when
//! there is one within the limit, else chunk by chunk), in the same
//! [`Admission`] that decoding later grows. A client that stalls holds at
//! most what the budget allowed it, and only until the deadline.

use bytes::Bytes;
use http_body_util::BodyExt;
use tonic::codegen::{Body, StdError};

use crate::pipeline::PipelineHandle;
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
    let declared = declared.and_then(|length| usize::try_from(length).ok());
    if declared.is_some_and(|length| length > budget.limit) {
        return Err(BodyError::TooLarge {
            limit: budget.limit,
        });
    }
    // Held as bytes arrive, not as declared: a client that declares a large
    // body and stalls must not hold the budget for nothing.
    let Some(mut admission) = admit(budget.pipelines, 0, budget.metrics) else {
        return Err(BodyError::Unavailable);
    };
    // The buffer grows by doubling, up to the declared length, and the
    // budget holds its capacity, not only what arrived: that is the memory.
    let most = declared.unwrap_or(budget.limit);
    let mut buffer: Vec<u8> = Vec::new();
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
        let total = buffer.len().saturating_add(data.len());
        if total > budget.limit {
            return Err(BodyError::TooLarge {
                limit: budget.limit,
            });
        }
        if total > buffer.capacity() {
            let capacity = buffer.capacity().saturating_mul(2).min(most).max(total);
            if !admission.cover(capacity, budget.metrics) {
                return Err(BodyError::Unavailable);
            }
            buffer.reserve_exact(capacity.saturating_sub(buffer.len()));
        }
        buffer.extend_from_slice(&data);
    }
    Ok((Bytes::from(buffer), admission))
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
        let pipeline = Pipeline::start("profiles", Vec::new(), Vec::new(), 100, 8);
        let handles = [pipeline.handle()];
        let metrics = ReceiverMetrics::new(&Registry::new(), "otlp", "http");
        let held = handles[0].budget().try_reserve(60).unwrap();
        let spec = budget(&handles, &metrics, 1000, Duration::from_secs(5));
        let (bytes, admission) =
            read_admitted(&mut Full::new(Bytes::from(vec![1u8; 30])), None, &spec)
                .await
                .unwrap();
        assert_eq!(bytes.len(), 30);
        assert_eq!(handles[0].budget().used(), 90);
        drop(admission);
        let error =
            refused(read_admitted(&mut Full::new(Bytes::from(vec![1u8; 50])), None, &spec).await);
        assert!(matches!(error, BodyError::Unavailable), "{error:?}");
        // A declared length is not held before its bytes come: a client
        // that declares more than there is room for and stalls holds nothing.
        let (bytes, admission) = read_admitted(&mut Full::new(Bytes::new()), Some(50), &spec)
            .await
            .unwrap();
        assert!(bytes.is_empty());
        assert_eq!(handles[0].budget().used(), 60);
        drop(admission);
        drop(held);
        assert_eq!(handles[0].budget().used(), 0);
        let error = refused(read_admitted(&mut Full::new(Bytes::new()), Some(1001), &spec).await);
        assert!(
            matches!(error, BodyError::TooLarge { limit: 1000 }),
            "{error:?}"
        );
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
