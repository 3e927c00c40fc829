//! Binding a listener with the accept queue Go's net package asks for:
//! the kernel's own maximum (`net.core.somaxconn`) rather than the 128
//! Rust's standard library passes, so that a burst of connections waits
//! for fair admission instead of having its SYNs dropped.

use std::io;

use tokio::net::{TcpListener, TcpSocket};

/// The backlog asked for; the kernel lowers it to `net.core.somaxconn`
/// (4096 by default since Linux 5.4).
const LISTEN_BACKLOG: u32 = 65_535;

/// Binds `endpoint` (host:port; a name is resolved, its addresses tried
/// in turn), with SO_REUSEADDR as tokio sets it.
pub async fn bind(endpoint: &str) -> io::Result<TcpListener> {
    let mut last_error = None;
    for address in tokio::net::lookup_host(endpoint).await? {
        let socket = if address.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        let bound = socket
            .set_reuseaddr(true)
            .and_then(|()| socket.bind(address))
            .and_then(|()| socket.listen(LISTEN_BACKLOG));
        match bound {
            Ok(listener) => return Ok(listener),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{endpoint} resolves to no address"),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_accept_queue_is_the_kernels_maximum_not_128() {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // /proc/net/tcp has no backlog column; `ss -ltn` shows it as the
        // listening socket's Send-Q.
        let purpose = "reads a listener's accept queue";
        let Some(ss) = profbridge_testkit::require_tool("ss", &["-V"], purpose) else {
            return;
        };
        let ss = std::process::Command::new(ss)
            .args(["-ltnH", &format!("sport = :{port}")])
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&ss.stdout).into_owned();
        let send_q: u32 = line
            .split_whitespace()
            .nth(2)
            .and_then(|field| field.parse().ok())
            .unwrap_or_else(|| panic!("ss printed {line:?}"));
        assert_eq!(send_q, somaxconn.min(LISTEN_BACKLOG), "{line}");
    }
}
