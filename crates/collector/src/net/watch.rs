//! The I/O-level limits of an accepted connection: a read or write fails
//! (so that the server holding the stream closes it) when the connection
//!
//! - was evicted by its listener's admission table,
//! - has not greeted within its greeting timeout after it was accepted
//!   (a silent client: raw TCP, a TLS handshake or an HTTP/2 preface
//!   never finished, a first request head never sent), or
//! - moved no byte either way for its idle timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::activity::Activity;

pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
    idle_timeout: Duration,
    /// When the connection must have greeted; `None` once it has.
    greet_by: Option<(Instant, Duration)>,
    /// When a byte last moved; the timer is moved on lazily from it.
    last_activity: Instant,
    timer: Pin<Box<Sleep>>,
}

impl<S> Watched<S> {
    pub fn new(
        inner: S,
        activity: Arc<Activity>,
        idle_timeout: Duration,
        greeting_timeout: Duration,
    ) -> Self {
        let now = Instant::now();
        let greet_by = now + greeting_timeout;
        Self {
            inner,
            activity,
            idle_timeout,
            greet_by: Some((greet_by, greeting_timeout)),
            last_activity: now,
            timer: Box::pin(tokio::time::sleep_until(greet_by.min(now + idle_timeout))),
        }
    }

    /// Why the connection must close now, if it must; otherwise the
    /// task is woken when it may have to.
    fn must_close(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if self.activity.evicted(cx.waker()) {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed at max_connections to make room for a new connection",
            ));
        }
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return None;
            }
            let now = Instant::now();
            if let Some((due, timeout)) = self.greet_by {
                if self.activity.greeted() {
                    self.greet_by = None;
                } else if due <= now {
                    return Some(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no request head or HTTP/2 preface within {}s of connecting",
                            timeout.as_secs_f64()
                        ),
                    ));
                }
            }
            let idle_due = self.last_activity + self.idle_timeout;
            if idle_due <= now {
                return Some(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the connection was idle for longer than its idle timeout",
                ));
            }
            let next = self.greet_by.map_or(idle_due, |(due, _)| due.min(idle_due));
            self.timer.as_mut().reset(next);
        }
    }

    /// The inner stream's answer, with the idle clock moved on when bytes
    /// went through, or an error once the connection must close.
    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
        progressed: impl FnOnce(&T) -> bool,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(Ok(value)) => {
                if progressed(&value) {
                    self.last_activity = Instant::now();
                }
                Poll::Ready(Ok(value))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => match self.must_close(cx) {
                Some(error) => Poll::Ready(Err(error)),
                None => Poll::Pending,
            },
        }
    }

    /// An error when the connection was evicted, before any I/O.
    fn evicted(&self, cx: &Context<'_>) -> Option<io::Error> {
        self.activity.evicted(cx.waker()).then(|| {
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed at max_connections to make room for a new connection",
            )
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(error) = this.evicted(cx) {
            return Poll::Ready(Err(error));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let grew = buf.filled().len() > before;
        this.settle(cx, polled, |()| grew)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(error) = this.evicted(cx) {
            return Poll::Ready(Err(error));
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.settle(cx, polled, |written| *written > 0)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(error) = this.evicted(cx) {
            return Poll::Ready(Err(error));
        }
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.settle(cx, polled, |written| *written > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::admission::Admission;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn watched(
        server: tokio::io::DuplexStream,
        idle: u64,
        greeting: u64,
    ) -> (
        Watched<tokio::io::DuplexStream>,
        crate::net::admission::Ticket,
    ) {
        let ticket = Admission::new("test".to_owned(), 8)
            .admit("127.0.0.1:1".parse().unwrap())
            .unwrap();
        let stream = Watched::new(
            server,
            Arc::clone(ticket.activity()),
            Duration::from_millis(idle),
            Duration::from_millis(greeting),
        );
        (stream, ticket)
    }

    #[tokio::test]
    async fn a_silent_stream_times_out_and_traffic_keeps_it_open() {
        let (mut client, server) = tokio::io::duplex(64);
        let (mut server, ticket) = watched(server, 300, 10_000);
        ticket.activity().greet();
        let mut byte = [0u8; 1];
        tokio::time::sleep(Duration::from_millis(200)).await;
        client.write_all(b"a").await.unwrap();
        server.read_exact(&mut byte).await.unwrap();
        let started = Instant::now();
        let error = server.read_exact(&mut byte).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        // Counted from the last byte, not from the start.
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    #[tokio::test]
    async fn a_stream_that_does_not_greet_in_time_is_closed_though_bytes_move() {
        let (mut client, server) = tokio::io::duplex(64);
        let (mut server, _ticket) = watched(server, 10_000, 300);
        let trickle = tokio::spawn(async move {
            while client.write_all(b"a").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let started = Instant::now();
        let mut byte = [0u8; 1];
        let error = loop {
            if let Err(error) = server.read_exact(&mut byte).await {
                break error;
            }
        };
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(started.elapsed() >= Duration::from_millis(250));
        drop(server);
        trickle.await.unwrap();
    }

    #[tokio::test]
    async fn an_evicted_stream_fails_its_pending_read() {
        let (_client, server) = tokio::io::duplex(64);
        let (mut server, ticket) = watched(server, 10_000, 10_000);
        let activity = Arc::clone(ticket.activity());
        let read = tokio::spawn(async move {
            let mut byte = [0u8; 1];
            server.read_exact(&mut byte).await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        activity.evict();
        let error = read.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
    }
}
