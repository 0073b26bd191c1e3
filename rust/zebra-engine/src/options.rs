//! Socket options as `zmq_setsockopt` receives them: raw option numbers
//! and native-endian value bytes, checked as libzmq 4.3 checks them.
//!
//! Options the engine acts on are typed fields of [`SocketOptions`];
//! options that have no effect here (kernel buffer sizes, keep-alives,
//! heartbeats, ...) are accepted, remembered for `zmq_getsockopt`, and
//! logged at debug level. Unknown options fail with `EINVAL` and a warning
//! naming the number.

use std::collections::HashMap;

use bytes::Bytes;
use zebra_zmtp::SocketType;

use crate::consts::opt;
use crate::error::{Error, Result};

/// Options that are accepted and stored but change nothing here, with
/// libzmq's defaults. `true` marks 8-byte values.
const IGNORED: &[(i32, &str, bool, i64)] = &[
    (opt::AFFINITY, "ZMQ_AFFINITY", true, 0),
    (opt::RATE, "ZMQ_RATE", false, 100),
    (opt::RECOVERY_IVL, "ZMQ_RECOVERY_IVL", false, 10_000),
    (opt::SNDBUF, "ZMQ_SNDBUF", false, -1),
    (opt::RCVBUF, "ZMQ_RCVBUF", false, -1),
    (opt::BACKLOG, "ZMQ_BACKLOG", false, 100),
    (opt::RECONNECT_IVL_MAX, "ZMQ_RECONNECT_IVL_MAX", false, 0),
    (opt::MULTICAST_HOPS, "ZMQ_MULTICAST_HOPS", false, 1),
    (opt::TCP_KEEPALIVE, "ZMQ_TCP_KEEPALIVE", false, -1),
    (opt::TCP_KEEPALIVE_CNT, "ZMQ_TCP_KEEPALIVE_CNT", false, -1),
    (opt::TCP_KEEPALIVE_IDLE, "ZMQ_TCP_KEEPALIVE_IDLE", false, -1),
    (
        opt::TCP_KEEPALIVE_INTVL,
        "ZMQ_TCP_KEEPALIVE_INTVL",
        false,
        -1,
    ),
    (opt::IMMEDIATE, "ZMQ_IMMEDIATE", false, 0),
    (opt::IPV6, "ZMQ_IPV6", false, 0),
    (opt::TOS, "ZMQ_TOS", false, 0),
    (opt::HEARTBEAT_IVL, "ZMQ_HEARTBEAT_IVL", false, 0),
    (opt::HEARTBEAT_TTL, "ZMQ_HEARTBEAT_TTL", false, 0),
    (opt::HEARTBEAT_TIMEOUT, "ZMQ_HEARTBEAT_TIMEOUT", false, -1),
    (opt::CONNECT_TIMEOUT, "ZMQ_CONNECT_TIMEOUT", false, 0),
    (opt::TCP_MAXRT, "ZMQ_TCP_MAXRT", false, 0),
];

/// Largest routing id (ZMTP carries its length in one byte).
pub const MAX_ROUTING_ID: usize = 255;

/// The options of one socket.
#[derive(Debug, Clone)]
pub(crate) struct SocketOptions {
    pub socket_type: SocketType,
    /// `ZMQ_ROUTING_ID`; empty when unset.
    pub routing_id: Bytes,
    /// `ZMQ_LINGER` in ms; -1 forever.
    pub linger: i32,
    /// `ZMQ_RECONNECT_IVL` in ms; -1 never reconnect.
    pub reconnect_ivl: i32,
    /// `ZMQ_MAXMSGSIZE`; -1 unlimited.
    pub maxmsgsize: i64,
    /// `ZMQ_SNDHWM`; 0 unlimited.
    pub sndhwm: i32,
    /// `ZMQ_RCVHWM`; 0 unlimited.
    pub rcvhwm: i32,
    /// `ZMQ_RCVTIMEO` in ms; -1 forever.
    pub rcvtimeo: i32,
    /// `ZMQ_SNDTIMEO` in ms; -1 forever.
    pub sndtimeo: i32,
    /// `ZMQ_ROUTER_MANDATORY`.
    pub router_mandatory: bool,
    /// `ZMQ_ROUTER_HANDOVER`.
    pub router_handover: bool,
    /// `ZMQ_HANDSHAKE_IVL` in ms; 0 no limit.
    pub handshake_ivl: i32,
    ignored: HashMap<i32, i64>,
}

fn int(option: i32, value: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = value.try_into().map_err(|_| {
        Error::Invalid(format!(
            "option {option} takes a 4-byte int, got {} bytes",
            value.len()
        ))
    })?;
    Ok(i32::from_ne_bytes(bytes))
}

fn int64(option: i32, value: &[u8]) -> Result<i64> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| {
        Error::Invalid(format!(
            "option {option} takes an 8-byte int, got {} bytes",
            value.len()
        ))
    })?;
    Ok(i64::from_ne_bytes(bytes))
}

fn at_least(option: i32, v: i32, min: i32) -> Result<i32> {
    if v < min {
        return Err(Error::Invalid(format!(
            "option {option} must be >= {min}, got {v}"
        )));
    }
    Ok(v)
}

/// An int as `zmq_getsockopt` writes it.
pub(crate) fn int_bytes(v: i32) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

impl SocketOptions {
    /// libzmq's defaults for a socket of this type.
    pub fn new(socket_type: SocketType) -> SocketOptions {
        SocketOptions {
            socket_type,
            routing_id: Bytes::new(),
            linger: -1,
            reconnect_ivl: 100,
            maxmsgsize: -1,
            sndhwm: 1000,
            rcvhwm: 1000,
            rcvtimeo: -1,
            sndtimeo: -1,
            router_mandatory: false,
            router_handover: false,
            handshake_ivl: 30_000,
            ignored: HashMap::new(),
        }
    }

    fn router_only(&self, option: i32) -> Result<()> {
        if self.socket_type != SocketType::Router {
            log::warn!(
                "zebra-engine: option {option} applies to ROUTER sockets only, not {}",
                self.socket_type
            );
            return Err(Error::Invalid(format!(
                "option {option} is for ROUTER sockets"
            )));
        }
        Ok(())
    }

    /// Sets an option from `zmq_setsockopt` arguments.
    pub fn set(&mut self, option: i32, value: &[u8]) -> Result<()> {
        match option {
            opt::ROUTING_ID => {
                if value.is_empty() || value.len() > MAX_ROUTING_ID {
                    return Err(Error::Invalid(format!(
                        "routing id must be 1..=255 bytes, got {}",
                        value.len()
                    )));
                }
                self.routing_id = Bytes::copy_from_slice(value);
            }
            opt::LINGER => self.linger = at_least(option, int(option, value)?, -1)?,
            opt::RECONNECT_IVL => self.reconnect_ivl = at_least(option, int(option, value)?, -1)?,
            opt::MAXMSGSIZE => self.maxmsgsize = int64(option, value)?,
            opt::SNDHWM => self.sndhwm = at_least(option, int(option, value)?, 0)?,
            opt::RCVHWM => self.rcvhwm = at_least(option, int(option, value)?, 0)?,
            opt::RCVTIMEO => self.rcvtimeo = at_least(option, int(option, value)?, -1)?,
            opt::SNDTIMEO => self.sndtimeo = at_least(option, int(option, value)?, -1)?,
            opt::HANDSHAKE_IVL => self.handshake_ivl = at_least(option, int(option, value)?, 0)?,
            opt::ROUTER_MANDATORY => {
                self.router_only(option)?;
                self.router_mandatory = at_least(option, int(option, value)?, 0)? != 0;
            }
            opt::ROUTER_HANDOVER => {
                self.router_only(option)?;
                self.router_handover = at_least(option, int(option, value)?, 0)? != 0;
            }
            _ => {
                let Some(&(_, name, wide, _)) = IGNORED.iter().find(|e| e.0 == option) else {
                    log::warn!("zebra-engine: zmq_setsockopt: unsupported socket option {option}");
                    return Err(Error::Invalid(format!(
                        "unsupported socket option {option}"
                    )));
                };
                let v = if wide {
                    int64(option, value)?
                } else {
                    i64::from(int(option, value)?)
                };
                log::debug!("zebra-engine: {name} = {v} accepted and ignored");
                self.ignored.insert(option, v);
            }
        }
        Ok(())
    }

    /// Reads a stored option as `zmq_getsockopt` writes it. Options that
    /// depend on the socket's state (`ZMQ_EVENTS`, ...) are answered by
    /// the socket; `None` means "not a stored option".
    pub fn get(&self, option: i32) -> Option<Vec<u8>> {
        let v = match option {
            opt::ROUTING_ID => return Some(self.routing_id.to_vec()),
            opt::LINGER => self.linger,
            opt::RECONNECT_IVL => self.reconnect_ivl,
            opt::MAXMSGSIZE => return Some(self.maxmsgsize.to_ne_bytes().to_vec()),
            opt::SNDHWM => self.sndhwm,
            opt::RCVHWM => self.rcvhwm,
            opt::RCVTIMEO => self.rcvtimeo,
            opt::SNDTIMEO => self.sndtimeo,
            opt::HANDSHAKE_IVL => self.handshake_ivl,
            opt::ROUTER_MANDATORY if self.socket_type == SocketType::Router => {
                i32::from(self.router_mandatory)
            }
            opt::ROUTER_HANDOVER if self.socket_type == SocketType::Router => {
                i32::from(self.router_handover)
            }
            opt::MECHANISM | opt::THREAD_SAFE => 0,
            opt::TYPE => self.socket_type.raw(),
            _ => {
                let &(_, _, wide, default) = IGNORED.iter().find(|e| e.0 == option)?;
                let v = self.ignored.get(&option).copied().unwrap_or(default);
                return Some(if wide {
                    v.to_ne_bytes().to_vec()
                } else {
                    (v as i32).to_ne_bytes().to_vec()
                });
            }
        };
        Some(int_bytes(v))
    }

    /// The ZMTP configuration for a new connection of this socket.
    pub fn zmtp_config(&self) -> zebra_zmtp::Config {
        let identity = if self.socket_type.sends_identity() {
            self.routing_id.clone()
        } else {
            Bytes::new()
        };
        let mut config = zebra_zmtp::Config::new(self.socket_type)
            .with_identity(identity)
            .with_zmq_maxmsgsize(self.maxmsgsize);
        config.reserve_ahead = crate::net::RESERVE_AHEAD;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: i32) -> Vec<u8> {
        v.to_ne_bytes().to_vec()
    }

    #[test]
    fn defaults_are_libzmqs() {
        let o = SocketOptions::new(SocketType::Dealer);
        assert_eq!(o.get(opt::LINGER), Some(i(-1)));
        assert_eq!(o.get(opt::SNDHWM), Some(i(1000)));
        assert_eq!(o.get(opt::RCVHWM), Some(i(1000)));
        assert_eq!(o.get(opt::RECONNECT_IVL), Some(i(100)));
        assert_eq!(o.get(opt::MAXMSGSIZE), Some((-1i64).to_ne_bytes().to_vec()));
        assert_eq!(o.get(opt::TYPE), Some(i(5)));
        assert_eq!(o.get(opt::ROUTING_ID), Some(vec![]));
        assert_eq!(o.get(opt::TCP_KEEPALIVE), Some(i(-1)));
        assert_eq!(o.get(opt::AFFINITY), Some(0u64.to_ne_bytes().to_vec()));
        assert_eq!(o.get(opt::ROUTER_MANDATORY), None);
        assert_eq!(o.get(9999), None);
    }

    #[test]
    fn set_checks_sizes_and_ranges() {
        let mut o = SocketOptions::new(SocketType::Router);
        o.set(opt::LINGER, &i(0)).unwrap();
        assert_eq!(o.linger, 0);
        assert!(o.set(opt::LINGER, &i(-2)).is_err());
        assert!(o.set(opt::LINGER, &[0, 0]).is_err());
        assert!(o.set(opt::SNDHWM, &i(-1)).is_err());
        o.set(opt::MAXMSGSIZE, &1234i64.to_ne_bytes()).unwrap();
        assert_eq!(o.maxmsgsize, 1234);
        assert!(o.set(opt::MAXMSGSIZE, &i(5)).is_err());
        o.set(opt::ROUTER_MANDATORY, &i(1)).unwrap();
        assert!(o.router_mandatory);
        assert!(o.set(opt::ROUTING_ID, b"").is_err());
        assert!(o.set(opt::ROUTING_ID, &[7; 256]).is_err());
        o.set(opt::ROUTING_ID, b"ps9").unwrap();
        assert_eq!(o.get(opt::ROUTING_ID), Some(b"ps9".to_vec()));
        o.set(opt::TCP_KEEPALIVE, &i(1)).unwrap();
        assert_eq!(o.get(opt::TCP_KEEPALIVE), Some(i(1)));
        assert!(matches!(o.set(4242, &i(1)), Err(Error::Invalid(_))));
    }

    #[test]
    fn router_options_only_on_routers() {
        let mut o = SocketOptions::new(SocketType::Dealer);
        assert!(o.set(opt::ROUTER_MANDATORY, &i(1)).is_err());
        let mut p = SocketOptions::new(SocketType::Pair);
        assert!(p.set(opt::ROUTER_HANDOVER, &i(1)).is_err());
    }

    #[test]
    fn identity_goes_to_zmtp_for_dealers_only() {
        let mut d = SocketOptions::new(SocketType::Dealer);
        d.set(opt::ROUTING_ID, b"w1").unwrap();
        assert_eq!(&d.zmtp_config().identity[..], b"w1");
        let mut p = SocketOptions::new(SocketType::Pair);
        p.set(opt::ROUTING_ID, b"w1").unwrap();
        assert!(p.zmtp_config().identity.is_empty());
    }
}
