//! Endpoint strings (`tcp://host:port`, `ipc:///path`, `inproc://name`):
//! syntax checks with libzmq's errno classes, and address resolution, as
//! libzmq 4.3 does them (`zmq_tcp(7)`, `zmq_ipc(7)`, `zmq_inproc(7)`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};

/// Longest Unix socket path (`sun_path` less its NUL).
const MAX_IPC_PATH: usize = 107;

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `tcp://[source;]host:port`; `port` is `None` for `*` or `0` (bind to
    /// an ephemeral port); `source` (connect only) is the local
    /// `host:port` to connect from.
    Tcp {
        host: String,
        port: Option<u16>,
        source: Option<String>,
    },
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
        "pgm" | "epgm" | "norm" => Err(Error::NoCompatProto(format!(
            "{protocol}:// is for PUB/SUB sockets"
        ))),
        "udp" => Err(Error::NoCompatProto(
            "udp:// is for RADIO/DISH sockets".to_owned(),
        )),
        "tipc" | "vmci" | "ws" | "wss" => Err(Error::ProtocolNotSupported(format!(
            "{protocol}:// is not implemented by zebra"
        ))),
        _ => Err(Error::ProtocolNotSupported(format!(
            "unknown transport {protocol:?} in {endpoint:?}"
        ))),
    }
}

/// A port as libzmq reads it: decimal digits taken modulo 65536 (`strtoul`
/// then a 16-bit port), `None` if it is not all digits.
fn port_number(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = text.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Some((n % 65536) as u16)
}

/// Splits `host:port` (the host may be empty or `[an IPv6 address]`).
fn host_port<'a>(endpoint: &str, address: &'a str) -> Result<(&'a str, &'a str)> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(invalid(endpoint, "expected host:port"));
    };
    if !host.is_empty() && !host_chars_ok(host) {
        return Err(invalid(endpoint, "bad host"));
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Ok((host, port))
}

/// `tcp://` as libzmq 4.3 reads it: `[source;]host:port`. A bind takes `*`
/// or `0` for an ephemeral port (another port that comes to 0 modulo 65536
/// is `EINVAL`) and ignores a source; a connect takes any port, 0 too (the
/// connection then fails, and is retried, in the background), and a source
/// address to connect from. An empty host is the bind's `ENODEV`, and a
/// connect that never succeeds.
fn parse_tcp(endpoint: &str, address: &str, role: Role) -> Result<Endpoint> {
    let (source, address) = match address.split_once(';') {
        Some((source, destination)) => (Some(source), destination),
        None => (None, address),
    };
    let (host, port_text) = host_port(endpoint, address)?;
    let port = match (port_text, role) {
        ("*", Role::Bind) => None,
        ("0", Role::Bind) => None,
        (p, _) => match (port_number(p), role) {
            (None, _) => return Err(invalid(endpoint, "bad port")),
            (Some(0), Role::Bind) => return Err(invalid(endpoint, "port 0")),
            (Some(n), _) => Some(n),
        },
    };
    if host == "*" && role == Role::Connect {
        return Err(invalid(endpoint, "cannot connect to a wildcard host"));
    }
    let source = match (source, role) {
        (Some(s), Role::Connect) => {
            let (_, p) = host_port(endpoint, s)?;
            if p != "*" && port_number(p).is_none() {
                return Err(invalid(endpoint, "bad source port"));
            }
            Some(s.to_owned())
        }
        _ => None,
    };
    Ok(Endpoint::Tcp {
        host: host.to_owned(),
        port,
        source,
    })
}

/// The local address to bind for `tcp://host:port`, as libzmq resolves it:
/// `*` (every IPv4 interface, or every interface with `ZMQ_IPV6`), a
/// numeric address (IPv6 only with `ZMQ_IPV6`), or an interface's name;
/// host names are not looked up (`ENODEV`).
pub(crate) fn resolve_bind(host: &str, port: Option<u16>, ipv6: bool) -> Result<SocketAddr> {
    let port = port.unwrap_or(0);
    let ip =
        match host.parse::<IpAddr>() {
            _ if host == "*" && ipv6 => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            _ if host == "*" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Ok(IpAddr::V6(_)) if !ipv6 => {
                return Err(Error::NoDevice(format!(
                    "{host} is IPv6 and ZMQ_IPV6 is off"
                )))
            }
            Ok(ip) => ip,
            Err(_) => IpAddr::V4(zebra_net::sys::interface_ipv4(host).ok_or_else(|| {
                Error::NoDevice(format!("{host:?} is no interface or address here"))
            })?),
        };
    Ok(SocketAddr::new(ip, port))
}

/// The local address to connect from, for `tcp://source;host:port`.
pub(crate) fn resolve_source(source: &str) -> std::io::Result<SocketAddr> {
    let (host, port) = source
        .rsplit_once(':')
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let port = if port == "*" {
        0
    } else {
        port_number(port).unwrap_or(0)
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host == "*" {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    resolve_bind(host, Some(port), true).map_err(|e| std::io::Error::other(e.to_string()))
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
            source: None,
        }
    }

    #[test]
    fn tcp_forms_as_libzmq() {
        let bind = |e| parse(e, Role::Bind);
        let connect = |e| parse(e, Role::Connect);
        assert_eq!(bind("tcp://127.0.0.1:0").unwrap(), tcp("127.0.0.1", None));
        assert_eq!(
            connect("tcp://127.0.0.1:0").unwrap(),
            tcp("127.0.0.1", Some(0))
        );
        assert_eq!(connect("tcp://h:99999").unwrap(), tcp("h", Some(34463)));
        assert!(bind("tcp://h:65536").is_err(), "0 by the modulo is not 0");
        assert_eq!(connect("tcp://h:65536").unwrap(), tcp("h", Some(0)));
        assert_eq!(connect("tcp://:5555").unwrap(), tcp("", Some(5555)));
        assert_eq!(
            connect("tcp://10.0.0.1:0;10.0.0.2:80").unwrap(),
            Endpoint::Tcp {
                host: "10.0.0.2".into(),
                port: Some(80),
                source: Some("10.0.0.1:0".into()),
            }
        );
        assert_eq!(
            bind("tcp://10.0.0.1:0;127.0.0.1:*").unwrap(),
            tcp("127.0.0.1", None)
        );
        assert!(connect("tcp://10.0.0.1:x;10.0.0.2:80").is_err());
        assert_eq!(
            parse("udp://127.0.0.1:5555", Role::Bind)
                .unwrap_err()
                .errno(),
            crate::consts::ENOCOMPATPROTO
        );
    }

    #[test]
    fn bind_takes_addresses_and_interfaces_not_host_names() {
        assert!(resolve_bind("lo", None, false).unwrap().ip().is_loopback());
        for (host, ipv6) in [("localhost", false), ("", false), ("::1", false)] {
            assert!(
                matches!(resolve_bind(host, None, ipv6), Err(Error::NoDevice(_))),
                "{host}"
            );
        }
        assert_eq!(
            resolve_bind("::1", Some(5), true).unwrap(),
            "[::1]:5".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            resolve_bind("*", Some(5), true).unwrap(),
            "[::]:5".parse::<SocketAddr>().unwrap()
        );
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
            "tcp://127.0.0.1:-1",
            "tcp://a b:5",
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
            Err(Error::NoCompatProto(_))
        ));
        assert!(matches!(
            parse("ipc://@", Role::Bind),
            Err(Error::Invalid(_))
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
                if let Ok(Endpoint::Tcp { port, .. }) = parse(&s, role) {
                    assert!(role == Role::Bind || port.is_some());
                }
            }
        }
    }

    #[test]
    fn resolution() {
        assert_eq!(
            resolve_bind("*", Some(5), false).unwrap(),
            "0.0.0.0:5".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            resolve_bind("127.0.0.1", None, false).unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        assert!(matches!(
            resolve_bind("no-such-host.invalid", Some(1), false),
            Err(Error::NoDevice(_))
        ));
        assert_eq!(
            tcp_uri("[::1]:80".parse().unwrap()),
            "tcp://[::1]:80".to_owned()
        );
    }
}
