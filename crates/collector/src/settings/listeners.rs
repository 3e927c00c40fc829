//! Listen addresses (`host:port`): that each parses, and that no two
//! listeners want the same port.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::problems::Problem;

/// A parsed `host:port`; IPv6 hosts without their brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPort {
    pub host: String,
    pub port: u16,
}

/// A listen address that does not parse; each names the address as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostPortError {
    #[error("{0:?} is not host:port (like 127.0.0.1:4317, or 0.0.0.0:4317 for every interface, or [::1]:4317)")]
    NotHostPortBracketed(String),
    #[error("{text:?} has {host:?} in brackets, which is not an IPv6 address")]
    NotIpv6 { text: String, host: String },
    #[error("{0:?} is not host:port (like 127.0.0.1:4317, or 0.0.0.0:4317 for every interface)")]
    NotHostPort(String),
    #[error("{0:?}: write an IPv6 address in brackets, like [::1]:4317")]
    UnbracketedIpv6(String),
    #[error("{0:?} has no host; write 0.0.0.0{0} for every interface or 127.0.0.1{0} for this machine only")]
    NoHost(String),
    #[error("{text:?} has host {host:?}, which is neither an IP address nor a host name")]
    BadHost { text: String, host: String },
    #[error("{text:?} has port {port:?}; a port is a number from 0 to 65535")]
    BadPort { text: String, port: String },
}

/// Parses `127.0.0.1:4317`, `localhost:4317`, `0.0.0.0:4317`, `[::1]:4317`.
pub(crate) fn parse_host_port(text: &str) -> Result<HostPort, HostPortError> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((host, port)) = bracketed.split_once("]:") else {
            return Err(HostPortError::NotHostPortBracketed(text.to_owned()));
        };
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(HostPortError::NotIpv6 {
                text: text.to_owned(),
                host: host.to_owned(),
            });
        }
        (host, port)
    } else {
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(HostPortError::NotHostPort(text.to_owned()));
        };
        if host.contains(':') {
            return Err(HostPortError::UnbracketedIpv6(text.to_owned()));
        }
        if host.is_empty() {
            return Err(HostPortError::NoHost(text.to_owned()));
        }
        if !is_host_name_or_ipv4(host) {
            return Err(HostPortError::BadHost {
                text: text.to_owned(),
                host: host.to_owned(),
            });
        }
        (host, port)
    };
    let port = port.parse::<u16>().map_err(|_| HostPortError::BadPort {
        text: text.to_owned(),
        port: port.to_owned(),
    })?;
    Ok(HostPort {
        host: host.to_owned(),
        port,
    })
}

fn is_host_name_or_ipv4(host: &str) -> bool {
    if host.parse::<Ipv4Addr>().is_ok() {
        return true;
    }
    let looks_numeric = host.chars().all(|c| c.is_ascii_digit() || c == '.');
    !looks_numeric
        && host.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// One thing that listens, by the key path of its address option.
#[derive(Debug, Clone)]
pub(crate) struct Listener {
    pub path: String,
    pub address: String,
}

/// A problem for each listener whose address does not parse, and for each
/// that wants a port an earlier one already has: same host and port, or the
/// same port where either listens on every interface. Port 0 (any free
/// port) never conflicts.
pub(crate) fn check_listeners(listeners: &[Listener], problems: &mut Vec<Problem>) {
    let mut bound: Vec<(&Listener, HostPort)> = Vec::new();
    for listener in listeners {
        let parsed = match parse_host_port(&listener.address) {
            Ok(parsed) => parsed,
            Err(error) => {
                problems.push(Problem::new(listener.path.as_str(), error.to_string()));
                continue;
            }
        };
        let clash = bound
            .iter()
            .find(|(_, earlier)| conflicts(earlier, &parsed));
        if let Some((earlier, _)) = clash {
            problems.push(Problem::new(
                listener.path.as_str(),
                format!(
                    "port {} is already used by {} ({})",
                    parsed.port, earlier.path, earlier.address
                ),
            ));
        }
        bound.push((listener, parsed));
    }
}

fn conflicts(a: &HostPort, b: &HostPort) -> bool {
    if a.port != b.port || a.port == 0 {
        return false;
    }
    let (host_a, host_b) = (normalized_host(&a.host), normalized_host(&b.host));
    host_a == host_b || is_every_interface(&host_a) || is_every_interface(&host_b)
}

fn normalized_host(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    if host == "localhost" {
        "127.0.0.1".to_owned()
    } else {
        host
    }
}

fn is_every_interface(host: &str) -> bool {
    host == "0.0.0.0" || host.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_explain() {
        let ok = |text: &str| parse_host_port(text).map(|hp| (hp.host, hp.port));
        assert_eq!(ok("127.0.0.1:4317"), Ok(("127.0.0.1".to_owned(), 4317)));
        assert_eq!(ok("localhost:0"), Ok(("localhost".to_owned(), 0)));
        assert_eq!(ok("[::1]:4318"), Ok(("::1".to_owned(), 4318)));
        assert_eq!(
            ok("collector.internal:80"),
            Ok(("collector.internal".to_owned(), 80))
        );
        let error = |text: &str| {
            parse_host_port(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error("4317").contains("is not host:port"));
        assert!(error(":4317").contains("has no host"));
        assert!(error("localhost:http").contains("a port is a number"));
        assert!(error("localhost:70000").contains("a port is a number"));
        assert!(error("::1:4317").contains("in brackets"));
        assert!(error("[nope]:1").contains("not an IPv6 address"));
        assert!(error("bad host:1").contains("neither an IP address nor a host name"));
        assert!(error("300.1.1.1:1").contains("neither an IP address nor a host name"));
    }

    #[test]
    fn shared_ports_conflict() {
        let listener = |path: &str, address: &str| Listener {
            path: path.to_owned(),
            address: address.to_owned(),
        };
        let mut problems = Vec::new();
        check_listeners(
            &[
                listener("a", "127.0.0.1:4317"),
                listener("b", "10.0.0.1:4317"),
                listener("c", "0.0.0.0:4318"),
                listener("d", "localhost:4318"),
                listener("e", "localhost:4317"),
                listener("f", "127.0.0.1:0"),
                listener("g", "127.0.0.1:0"),
            ],
            &mut problems,
        );
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "d: port 4318 is already used by c (0.0.0.0:4318)",
                "e: port 4317 is already used by a (127.0.0.1:4317)",
            ]
        );
    }
}
