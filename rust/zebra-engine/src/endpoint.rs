//! Endpoint strings (`tcp://host:port`, `ipc:///path`, `inproc://name`):
//! syntax checks with libzmq's errno classes, and address resolution.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};

/// Longest Unix socket path (`sun_path` less its NUL).
const MAX_IPC_PATH: usize = 107;

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `tcp://host:port`; `port` is `None` for `*` (bind to an ephemeral port).
    Tcp { host: String, port: Option<u16> },
    /// `ipc://path`; `*` asks bind for a fresh path.
    Ipc { path: String },
    /// `inproc://name`.
    Inproc { name: String },
}

/// Whether the endpoint is to be bound or connected: wildcards are for
/// binding only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Bind,
    Connect,
}

fn invalid(endpoint: &str, why: &str) -> Error {
    Error::Invalid(format!("endpoint {endpoint:?}: {why}"))
}

fn host_chars_ok(host: &str) -> bool {
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:%[]_*".contains(c))
}

/// Parses an endpoint string for bind or connect.
pub(crate) fn parse(endpoint: &str, role: Role) -> Result<Endpoint> {
    let Some((protocol, address)) = endpoint.split_once("://") else {
        return Err(invalid(endpoint, "expected transport://address"));
    };
    match protocol {
        "tcp" => parse_tcp(endpoint, address, role),
        "ipc" => {
            if address.is_empty() || address == "@" {
                return Err(invalid(endpoint, "empty path"));
            }
            if address == "*" && role == Role::Connect {
                return Err(invalid(endpoint, "cannot connect to a wildcard path"));
            }
            if address.len() > MAX_IPC_PATH {
                return Err(Error::Io(std::io::Error::from_raw_os_error(
                    libc::ENAMETOOLONG,
                )));
            }
            Ok(Endpoint::Ipc {
                path: address.to_owned(),
            })
        }
        "inproc" => {
            if address.is_empty() {
                return Err(invalid(endpoint, "empty name"));
            }
            Ok(Endpoint::Inproc {
                name: address.to_owned(),
            })
        }
        "pgm" | "epgm" | "norm" | "udp" | "tipc" | "vmci" | "ws" | "wss" => Err(
            Error::ProtocolNotSupported(format!("{protocol}:// is not implemented by zebra")),
        ),
        _ => Err(Error::ProtocolNotSupported(format!(
            "unknown transport {protocol:?} in {endpoint:?}"
        ))),
    }
}

fn parse_tcp(endpoint: &str, address: &str, role: Role) -> Result<Endpoint> {
    if address.contains(';') {
        return Err(invalid(endpoint, "source addresses are not supported"));
    }
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(invalid(endpoint, "expected host:port"));
    };
    if !host_chars_ok(host) {
        return Err(invalid(endpoint, "bad host"));
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(invalid(endpoint, "empty host"));
    }
    let port = match (port, role) {
        ("*", Role::Bind) => None,
        (p, _) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u16 = p
                .parse()
                .map_err(|_| invalid(endpoint, "port out of range"))?;
            match (n, role) {
                (0, Role::Bind) => None,
                (0, Role::Connect) => return Err(invalid(endpoint, "port 0")),
                (n, _) => Some(n),
            }
        }
        _ => return Err(invalid(endpoint, "bad port")),
    };
    if host == "*" && role == Role::Connect {
        return Err(invalid(endpoint, "cannot connect to a wildcard host"));
    }
    Ok(Endpoint::Tcp {
        host: host.to_owned(),
        port,
    })
}

/// The local address to bind for `tcp://host:port` (`*`: every IPv4
/// interface, as libzmq without `ZMQ_IPV6`).
pub(crate) fn resolve_bind(host: &str, port: Option<u16>) -> Result<SocketAddr> {
    let port = port.unwrap_or(0);
    if host == "*" {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    lookup(host, port).ok_or_else(|| Error::NoDevice(format!("cannot resolve {host:?}")))
}

/// The remote address for `tcp://host:port`, resolved at each attempt
/// (hostnames prefer IPv4, as libzmq without `ZMQ_IPV6`).
pub(crate) fn resolve_connect(host: &str, port: u16) -> std::io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    lookup(host, port).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("cannot resolve {host:?}"),
        )
    })
}

fn lookup(host: &str, port: u16) -> Option<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().ok()?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
}

/// `tcp://ip:port` as `ZMQ_LAST_ENDPOINT` shows it.
pub(crate) fn tcp_uri(addr: SocketAddr) -> String {
    format!("tcp://{addr}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: Option<u16>) -> Endpoint {
        Endpoint::Tcp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn good_endpoints() {
        assert_eq!(
            parse("tcp://127.0.0.1:5555", Role::Connect).unwrap(),
            tcp("127.0.0.1", Some(5555))
        );
        assert_eq!(
            parse("tcp://*:5555", Role::Bind).unwrap(),
            tcp("*", Some(5555))
        );
        assert_eq!(
            parse("tcp://127.0.0.1:*", Role::Bind).unwrap(),
            tcp("127.0.0.1", None)
        );
        assert_eq!(
            parse("tcp://[::1]:7", Role::Connect).unwrap(),
            tcp("::1", Some(7))
        );
        assert_eq!(
            parse("tcp://node-1.example:80", Role::Connect).unwrap(),
            tcp("node-1.example", Some(80))
        );
        assert_eq!(
            parse("ipc:///tmp/8000", Role::Connect).unwrap(),
            Endpoint::Ipc {
                path: "/tmp/8000".into()
            }
        );
        assert_eq!(
            parse("inproc://monitor", Role::Bind).unwrap(),
            Endpoint::Inproc {
                name: "monitor".into()
            }
        );
    }

    #[test]
    fn bad_endpoints_fail_like_libzmq() {
        let einval = [
            "tcp:/127.0.0.1:5",
            "127.0.0.1:5555",
            "tcp://127.0.0.1",
            "tcp://127.0.0.1:",
            "tcp://127.0.0.1:abc",
            "tcp://127.0.0.1:70000",
            "tcp://:5555",
            "tcp://[]:5555",
            "tcp://a b:5",
            "inproc://",
            "ipc://",
        ];
        for e in einval {
            assert!(
                matches!(parse(e, Role::Connect), Err(Error::Invalid(_))),
                "{e}"
            );
        }
        assert!(matches!(
            parse("tcp://*:5", Role::Connect),
            Err(Error::Invalid(_))
        ));
        assert!(matches!(
            parse("tcp://h:*", Role::Connect),
            Err(Error::Invalid(_))
        ));
        assert!(matches!(
            parse("pgm://eth0;239.1.1.1:5555", Role::Connect),
            Err(Error::ProtocolNotSupported(_))
        ));
        assert!(matches!(
            parse("carrier-pigeon://x", Role::Bind),
            Err(Error::ProtocolNotSupported(_))
        ));
        let long = format!("ipc:///{}", "x".repeat(200));
        assert_eq!(
            parse(&long, Role::Bind).unwrap_err().errno(),
            libc::ENAMETOOLONG
        );
    }

    #[test]
    fn arbitrary_strings_never_panic() {
        let alphabet = b"tcpiproc:/*[]0123456789.-;%_ab\x00\xff";
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            let len = (x % 24) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            let s = String::from_utf8_lossy(&bytes);
            for role in [Role::Bind, Role::Connect] {
                if let Ok(Endpoint::Tcp { host, .. }) = parse(&s, role) {
                    assert!(!host.is_empty());
                }
            }
        }
    }

    #[test]
    fn resolution() {
        assert_eq!(
            resolve_bind("*", Some(5)).unwrap(),
            "0.0.0.0:5".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            resolve_bind("127.0.0.1", None).unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        assert!(resolve_bind("localhost", Some(1))
            .unwrap()
            .ip()
            .is_loopback());
        assert!(matches!(
            resolve_bind("no-such-host.invalid", Some(1)),
            Err(Error::NoDevice(_))
        ));
        assert_eq!(
            tcp_uri("[::1]:80".parse().unwrap()),
            "tcp://[::1]:80".to_owned()
        );
    }
}
