//! An accepted connection as the servers see it: plain or TLS, watched
//! for eviction, its greeting and idleness ([`Watched`]), holding its
//! place in the listener's admission table until dropped.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::activity::Activity;
use super::admission::Ticket;
use super::preface::PrefaceProgress;
use super::watch::Watched;

pub struct Conn {
    io: ConnIo,
    peer: SocketAddr,
    ticket: Ticket,
    /// For a gRPC listener, the HTTP/2 preface until it has arrived.
    preface: Option<PrefaceProgress>,
}

pub(super) enum ConnIo {
    Plain(Watched<TcpStream>),
    Tls(Box<TlsStream<Watched<TcpStream>>>),
}

impl Conn {
    pub(super) fn new(io: ConnIo, peer: SocketAddr, ticket: Ticket, greeting: Greeting) -> Self {
        let preface = match greeting {
            Greeting::RequestHead => None,
            Greeting::Http2Preface => Some(PrefaceProgress::default()),
        };
        Self {
            io,
            peer,
            ticket,
            preface,
        }
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn activity(&self) -> Arc<Activity> {
        Arc::clone(self.ticket.activity())
    }
}

/// What a connection must send, within its greeting timeout, to count as
/// a client rather than a silent socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Greeting {
    /// A whole request head (the HTTP listeners; HTTP/1 or HTTP/2).
    RequestHead,
    /// The HTTP/2 preface and SETTINGS (gRPC).
    Http2Preface,
}

/// What tonic puts in each request's extensions: the connection's
/// activity, so that its requests count as in flight
/// ([`super::in_flight`]).
#[derive(Clone)]
pub struct ConnInfo {
    pub(super) activity: Arc<Activity>,
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        ConnInfo {
            activity: self.activity(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = match &mut this.io {
            ConnIo::Plain(io) => Pin::new(io).poll_read(cx, buf),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        };
        if let Some(preface) = &mut this.preface {
            let read = buf.filled().get(before..).unwrap_or_default();
            if preface.read(read) {
                this.ticket.activity().greet();
                this.preface = None;
            }
        }
        polled
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_write(cx, buf),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            ConnIo::Plain(io) => io.is_write_vectored(),
            ConnIo::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_flush(cx),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_shutdown(cx),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}
