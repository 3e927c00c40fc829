//! A plain HTTP/1.0 GET over a TCP stream, bounded in time and size: what
//! a debuginfod request needs, without an async runtime (the symbolizer is
//! called from synchronous code, sometimes inside one).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::FetchError;

/// `http://host[:port][/prefix]`, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerUrl {
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

impl ServerUrl {
    pub fn parse(url: &str) -> Result<Self, FetchError> {
        let unsupported = || FetchError::UnsupportedUrl(url.to_owned());
        let rest = url.strip_prefix("http://").ok_or_else(unsupported)?;
        let (authority, prefix) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        let port_of = |port: &str| port.parse::<u16>().map_err(|_| unsupported());
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(unsupported)?;
            match after.strip_prefix(':') {
                Some(port) => (host, port_of(port)?),
                None if after.is_empty() => (host, 80),
                None => return Err(unsupported()),
            }
        } else {
            match authority.split_once(':') {
                Some((host, port)) => (host, port_of(port)?),
                None => (authority, 80),
            }
        };
        if host.is_empty() {
            return Err(unsupported());
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            prefix: prefix.trim_end_matches('/').to_owned(),
        })
    }
}

/// What a GET answered.
pub(crate) enum Answer {
    Found,
    NotFound,
}

/// GETs `prefix/path` from `server`, writing the body to `out` when the
/// status is 200; fails once `timeout` has passed since the call or when
/// the body is longer than `max_bytes`.
pub(crate) fn get(
    server: &ServerUrl,
    path: &str,
    timeout: Duration,
    max_bytes: u64,
    out: &mut impl Write,
) -> Result<Answer, FetchError> {
    let deadline = Instant::now() + timeout;
    let mut stream = connect(server, deadline)?;
    let request = format!(
        "GET {}{path} HTTP/1.0\r\nHost: {}:{}\r\nUser-Agent: profbridge\r\nAccept: */*\r\n\r\n",
        server.prefix, server.host, server.port
    );
    set_timeouts(&stream, deadline)?;
    stream.write_all(request.as_bytes())?;
    let mut head = Vec::new();
    let mut buffer = vec![0; 1 << 16];
    let body_start = loop {
        let read = read_some(&mut stream, &mut buffer, deadline)?;
        if read == 0 {
            return Err(FetchError::BadResponse("the connection closed early"));
        }
        head.extend_from_slice(buffer.get(..read).unwrap_or_default());
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if head.len() > 64 * 1024 {
            return Err(FetchError::BadResponse("headers longer than 64 KiB"));
        }
    };
    let (status, content_length) = parse_head(head.get(..body_start).unwrap_or_default())?;
    match status {
        200 => {}
        404 => return Ok(Answer::NotFound),
        other => return Err(FetchError::Status(other)),
    }
    let mut written = 0u64;
    let mut keep = |bytes: &[u8]| -> Result<(), FetchError> {
        written += bytes.len() as u64;
        if written > max_bytes {
            return Err(FetchError::TooLarge(max_bytes));
        }
        out.write_all(bytes)?;
        Ok(())
    };
    keep(head.get(body_start..).unwrap_or_default())?;
    loop {
        let read = read_some(&mut stream, &mut buffer, deadline)?;
        if read == 0 {
            break;
        }
        keep(buffer.get(..read).unwrap_or_default())?;
    }
    if content_length.is_some_and(|length| length != written) {
        return Err(FetchError::BadResponse(
            "the body is shorter than Content-Length",
        ));
    }
    Ok(Answer::Found)
}

fn connect(server: &ServerUrl, deadline: Instant) -> Result<TcpStream, FetchError> {
    let addresses: Vec<SocketAddr> = (server.host.as_str(), server.port)
        .to_socket_addrs()?
        .collect();
    let mut last_error = None;
    for address in addresses {
        let left = remaining(deadline)?;
        match TcpStream::connect_timeout(&address, left) {
            Ok(stream) => return Ok(stream),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.map_or(
        FetchError::BadResponse("the host has no address"),
        FetchError::Io,
    ))
}

fn remaining(deadline: Instant) -> Result<Duration, FetchError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(FetchError::TimedOut);
    }
    Ok(left)
}

fn set_timeouts(stream: &TcpStream, deadline: Instant) -> Result<(), FetchError> {
    let left = remaining(deadline)?;
    stream.set_read_timeout(Some(left))?;
    stream.set_write_timeout(Some(left))?;
    Ok(())
}

fn read_some(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
) -> Result<usize, FetchError> {
    set_timeouts(stream, deadline)?;
    match stream.read(buffer) {
        Ok(read) => Ok(read),
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(FetchError::TimedOut)
        }
        Err(error) => Err(FetchError::Io(error)),
    }
}

/// The status code and the Content-Length, if any.
fn parse_head(head: &[u8]) -> Result<(u16, Option<u64>), FetchError> {
    let text =
        std::str::from_utf8(head).map_err(|_| FetchError::BadResponse("headers are not text"))?;
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or(FetchError::BadResponse("no status line"))?;
    let content_length = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())
            .flatten()
    });
    Ok((status, content_length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_host_a_port_and_a_prefix() {
        assert_eq!(
            ServerUrl::parse("http://127.0.0.1:8002/").unwrap(),
            ServerUrl {
                host: "127.0.0.1".to_owned(),
                port: 8002,
                prefix: String::new()
            }
        );
        assert_eq!(
            ServerUrl::parse("http://debuginfod.example/mirror").unwrap(),
            ServerUrl {
                host: "debuginfod.example".to_owned(),
                port: 80,
                prefix: "/mirror".to_owned()
            }
        );
        assert!(matches!(
            ServerUrl::parse("https://debuginfod.debian.net"),
            Err(FetchError::UnsupportedUrl(_))
        ));
    }

    #[test]
    fn heads_give_the_status_and_length() {
        let (status, length) =
            parse_head(b"HTTP/1.0 200 OK\r\ncontent-length: 12\r\nX: y\r\n\r\n").unwrap();
        assert_eq!((status, length), (200, Some(12)));
        assert_eq!(
            parse_head(b"HTTP/1.1 404 Not Found\r\n\r\n").unwrap(),
            (404, None)
        );
    }
}
