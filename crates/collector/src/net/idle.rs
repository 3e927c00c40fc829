//! An I/O-level idle timeout: a stream on which no byte moved either way
//! for the timeout fails its pending read or write with `TimedOut`, so
//! that the server holding it closes the connection. A client that never
//! speaks (raw TCP, a TLS or HTTP/2 handshake never started) is closed
//! this way too.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub struct IdleTimeout<S> {
    inner: S,
    timeout: Duration,
    /// When a byte last moved; the timer is moved on lazily from it.
    last_activity: Instant,
    timer: Pin<Box<Sleep>>,
}

impl<S> IdleTimeout<S> {
    pub fn new(inner: S, timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            inner,
            timeout,
            last_activity: now,
            timer: Box::pin(tokio::time::sleep_until(now + timeout)),
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    fn moved(&mut self) {
        self.last_activity = Instant::now();
    }

    /// Whether the connection has been idle for the timeout; registers
    /// the timer's wake-up otherwise.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let due = self.last_activity + self.timeout;
            if due <= Instant::now() {
                return true;
            }
            self.timer.as_mut().reset(due);
        }
    }

    fn timed_out() -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the connection was idle for longer than its idle timeout",
        )
    }
}

impl<S> IdleTimeout<S> {
    /// The inner stream's answer, with the idle clock moved on when bytes
    /// went through, or `TimedOut` once the stream has been idle too long.
    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
        progressed: impl FnOnce(&T) -> bool,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(Ok(value)) => {
                if progressed(&value) {
                    self.moved();
                }
                Poll::Ready(Ok(value))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(Self::timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for IdleTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let grew = buf.filled().len() > before;
        this.settle(cx, polled, |()| grew)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.settle(cx, polled, |written| *written > 0)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_silent_stream_times_out_and_traffic_keeps_it_open() {
        let (client, server) = tokio::io::duplex(64);
        let mut server = IdleTimeout::new(server, Duration::from_millis(300));
        let mut client = client;
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
}
