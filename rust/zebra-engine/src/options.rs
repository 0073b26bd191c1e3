//! Socket options as `zmq_setsockopt` and `zmq_getsockopt` pass them: raw
//! option numbers and native-endian value bytes, checked as libzmq 4.3
//! checks them (the table in `options_table.rs`: sizes, ranges, socket
//! types, read-only and write-only options, `NULL` values).
//!
//! Options the engine acts on are typed fields of [`SocketOptions`]; the
//! others are kept for `zmq_getsockopt` and logged at debug level, or
//! refused with `EINVAL` and a warning that says why.

use std::collections::HashMap;

use bytes::Bytes;
use zebra_zmtp::SocketType;

use crate::consts::opt;
use crate::error::{Error, Result};
use crate::filters::{AddrMask, IpcFilter};
use crate::options_table::{self as table, default_of, Engine, Kind, Spec};
use crate::tuning::TcpTuning;

/// Longest string option libzmq takes.
const MAX_STR: usize = 255;

/// The options of one socket.
#[derive(Debug, Clone)]
pub(crate) struct SocketOptions {
    pub socket_type: SocketType,
    /// `ZMQ_ROUTING_ID`; empty when unset.
    pub routing_id: Bytes,
    /// `ZMQ_LINGER` in ms; -1 forever.
    pub linger: i32,
    /// `ZMQ_RECONNECT_IVL` in ms; -1 (and 0) never reconnect.
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
    /// `ZMQ_PROBE_ROUTER`: an empty message to each peer connected to.
    pub probe_router: bool,
    /// `ZMQ_CONNECT_ROUTING_ID`: the routing id a ROUTER gives the peer of
    /// its next `zmq_connect` (taken by it).
    pub connect_routing_id: Option<Bytes>,
    /// `ZMQ_HANDSHAKE_IVL` in ms; 0 no limit.
    pub handshake_ivl: i32,
    /// `ZMQ_TCP_ACCEPT_FILTER`: the addresses a TCP listener accepts
    /// (empty: any).
    pub tcp_accept_filters: Vec<AddrMask>,
    /// `ZMQ_IPC_FILTER_PID`, `_UID`, `_GID`: the peers an IPC listener
    /// accepts (empty: any).
    pub ipc_filter: IpcFilter,
    /// `ZMQ_BINDTODEVICE`.
    bind_device: Option<String>,
    /// Options kept for `zmq_getsockopt` only: integers, and strings
    /// (which only keep their empty default).
    kept: HashMap<i32, i64>,
}

fn invalid(spec: &Spec, why: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{} ({}): {why}", spec.name, spec.id))
}

fn int(spec: &Spec, value: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = value.try_into().map_err(|_| {
        invalid(
            spec,
            format!("takes a 4-byte int, got {} bytes", value.len()),
        )
    })?;
    Ok(i32::from_ne_bytes(bytes))
}

fn int64(spec: &Spec, value: &[u8]) -> Result<i64> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| {
        invalid(
            spec,
            format!("takes an 8-byte int, got {} bytes", value.len()),
        )
    })?;
    Ok(i64::from_ne_bytes(bytes))
}

/// An int as `zmq_getsockopt` writes it.
pub(crate) fn int_bytes(v: i32) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

fn type_bit(t: SocketType) -> u8 {
    match t {
        SocketType::Pair => table::PAIR,
        SocketType::Dealer => table::DEALER,
        SocketType::Router => table::ROUTER,
        _ => 0,
    }
}

/// Checks that `zmq_getsockopt`'s buffer of `capacity` bytes fits `value`
/// as libzmq checks it for `option`: exactly the size of an integer read
/// by libzmq's option store, at least the size of the value otherwise
/// (strings with their NUL).
pub(crate) fn fit(option: i32, capacity: usize, value: Vec<u8>) -> Result<Vec<u8>> {
    let exact = table::spec(option).is_some_and(|s| match s.kind {
        Kind::Int { .. } | Kind::Flag | Kind::Int64 => true,
        Kind::State { exact } => exact,
        _ => false,
    });
    let fits = if exact {
        capacity == value.len()
    } else {
        capacity >= value.len()
    };
    if !fits {
        return Err(Error::Invalid(format!(
            "zmq_getsockopt({option}): a {capacity}-byte buffer for a {}-byte value",
            value.len()
        )));
    }
    Ok(value)
}

impl SocketOptions {
    /// libzmq's defaults for a socket of this type.
    pub fn new(socket_type: SocketType) -> SocketOptions {
        let d = |id| default_of(id) as i32;
        SocketOptions {
            socket_type,
            routing_id: Bytes::new(),
            linger: d(opt::LINGER),
            reconnect_ivl: d(opt::RECONNECT_IVL),
            maxmsgsize: default_of(opt::MAXMSGSIZE),
            sndhwm: d(opt::SNDHWM),
            rcvhwm: d(opt::RCVHWM),
            rcvtimeo: d(opt::RCVTIMEO),
            sndtimeo: d(opt::SNDTIMEO),
            router_mandatory: false,
            router_handover: false,
            probe_router: false,
            connect_routing_id: None,
            handshake_ivl: d(opt::HANDSHAKE_IVL),
            tcp_accept_filters: Vec::new(),
            ipc_filter: IpcFilter::default(),
            bind_device: None,
            kept: HashMap::new(),
        }
    }

    /// The option, if this socket type has it.
    fn spec(&self, option: i32) -> Result<&'static Spec> {
        let Some(spec) = table::spec(option) else {
            log::warn!("zebra-engine: unknown socket option {option}");
            return Err(Error::Invalid(format!("unknown socket option {option}")));
        };
        if spec.types & type_bit(self.socket_type) == 0 {
            log::warn!(
                "zebra-engine: {} ({option}) does not apply to {} sockets",
                spec.name,
                self.socket_type
            );
            return Err(invalid(
                spec,
                format!("not for {} sockets", self.socket_type),
            ));
        }
        Ok(spec)
    }

    fn refuse(spec: &Spec, why: &str) -> Error {
        log::warn!(
            "zebra-engine: zmq_setsockopt {} ({}): {why}",
            spec.name,
            spec.id
        );
        invalid(spec, why)
    }

    /// `zmq_setsockopt(option, value, len)` with a non-NULL value.
    pub fn set(&mut self, option: i32, value: &[u8]) -> Result<()> {
        let spec = self.spec(option)?;
        if !spec.set {
            return Err(invalid(spec, "read only"));
        }
        if let Engine::Refused(why) = spec.engine {
            return Err(Self::refuse(spec, why));
        }
        match spec.kind {
            Kind::Int { min, max } => {
                let v = int(spec, value)?;
                if !(min..=max).contains(&v) {
                    return Err(invalid(spec, format!("{v} is outside {min}..={max}")));
                }
                self.set_int(spec, v)
            }
            Kind::Flag => {
                let v = int(spec, value)?;
                self.keep(spec, i64::from(v != 0))
            }
            Kind::Int64 => {
                let v = int64(spec, value)?;
                match option {
                    opt::MAXMSGSIZE => self.maxmsgsize = v,
                    _ => self.keep(spec, v)?,
                }
                Ok(())
            }
            Kind::Id { max } => {
                if value.is_empty() || value.len() > max {
                    return Err(invalid(
                        spec,
                        format!("takes 1 to {max} bytes, got {}", value.len()),
                    ));
                }
                let id = Bytes::copy_from_slice(value);
                match option {
                    opt::ROUTING_ID => self.routing_id = id,
                    _ => self.connect_routing_id = Some(id),
                }
                Ok(())
            }
            Kind::Str { empty, .. } => {
                if value.len() > MAX_STR || (value.is_empty() && !empty) {
                    return Err(invalid(spec, format!("{} bytes", value.len())));
                }
                match spec.engine {
                    Engine::OffOnly(why) if !value.is_empty() => Err(Self::refuse(spec, why)),
                    _ if option == opt::BINDTODEVICE => {
                        let name = String::from_utf8_lossy(value).into_owned();
                        self.bind_device = Some(name).filter(|n| !n.is_empty());
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
            Kind::IntSet => {
                let v = int(spec, value)?;
                self.ipc_filter.add(option, v);
                Ok(())
            }
            Kind::Cidr => {
                if value.is_empty() || value.len() >= MAX_STR {
                    return Err(invalid(spec, format!("{} bytes", value.len())));
                }
                let text = std::str::from_utf8(value).map_err(|_| invalid(spec, "not text"))?;
                let mask = AddrMask::parse(text, self.ipv6())
                    .ok_or_else(|| invalid(spec, format!("{text:?} is not address[/bits]")))?;
                self.tcp_accept_filters.push(mask);
                Ok(())
            }
            Kind::State { .. } | Kind::Key => Err(invalid(spec, "not settable")),
        }
    }

    /// `zmq_setsockopt(option, NULL, 0)`: empties a filter or a string that
    /// takes it, as libzmq; `EINVAL` for other options.
    pub fn reset(&mut self, option: i32) -> Result<()> {
        let spec = self.spec(option)?;
        match spec.kind {
            Kind::IntSet => self.ipc_filter.clear(option),
            Kind::Cidr => self.tcp_accept_filters.clear(),
            Kind::Str { null: true, .. } => {
                if option == opt::BINDTODEVICE {
                    self.bind_device = None;
                }
            }
            _ => return self.set(option, &[]),
        }
        Ok(())
    }

    fn set_int(&mut self, spec: &Spec, v: i32) -> Result<()> {
        match spec.id {
            opt::LINGER => self.linger = v,
            opt::RECONNECT_IVL => self.reconnect_ivl = v,
            opt::SNDHWM => self.sndhwm = v,
            opt::RCVHWM => self.rcvhwm = v,
            opt::RCVTIMEO => self.rcvtimeo = v,
            opt::SNDTIMEO => self.sndtimeo = v,
            opt::HANDSHAKE_IVL => self.handshake_ivl = v,
            opt::ROUTER_MANDATORY => self.router_mandatory = v != 0,
            opt::ROUTER_HANDOVER => self.router_handover = v != 0,
            opt::PROBE_ROUTER => self.probe_router = v != 0,
            // libzmq keeps whole deciseconds.
            opt::HEARTBEAT_TTL => self.keep(spec, i64::from(v / 100 * 100))?,
            opt::IPV4ONLY => self.keep_ipv6(v == 0),
            opt::IPV6 => self.keep_ipv6(v != 0),
            _ => self.keep(spec, i64::from(v))?,
        }
        Ok(())
    }

    /// Keeps a value the engine does not act on, or refuses it.
    fn keep(&mut self, spec: &Spec, v: i64) -> Result<()> {
        if let Engine::OffOnly(why) = spec.engine {
            if v != spec.default {
                return Err(Self::refuse(spec, why));
            }
        }
        log::debug!("zebra-engine: {} = {v} kept", spec.name);
        self.kept.insert(spec.id, v);
        Ok(())
    }

    /// `ZMQ_IPV6` and its inverse `ZMQ_IPV4ONLY` are one setting.
    fn keep_ipv6(&mut self, on: bool) {
        self.kept.insert(opt::IPV6, i64::from(on));
        self.kept.insert(opt::IPV4ONLY, i64::from(!on));
    }

    /// `ZMQ_IPV6`.
    pub fn ipv6(&self) -> bool {
        self.kept.get(&opt::IPV6).is_some_and(|&v| v != 0)
    }

    /// Reads a stored option as `zmq_getsockopt` writes it (not yet
    /// checked against the caller's buffer: [`fit`]). Options read from
    /// the socket's state (`ZMQ_EVENTS`, ...) are the socket's to answer:
    /// `None`.
    pub fn get(&self, option: i32) -> Result<Option<Vec<u8>>> {
        let spec = self.spec(option)?;
        if !spec.get {
            return Err(invalid(spec, "write only"));
        }
        if let Engine::Refused(why) = spec.engine {
            log::warn!("zebra-engine: zmq_getsockopt {}: {why}", spec.name);
            return Err(invalid(spec, why));
        }
        let v = match spec.kind {
            Kind::Id { .. } => return Ok(Some(self.routing_id.to_vec())),
            Kind::Str { .. } => {
                let mut v = match option {
                    opt::BINDTODEVICE => self.bind_device.clone().unwrap_or_default().into_bytes(),
                    _ => Vec::new(),
                };
                v.push(0);
                return Ok(Some(v));
            }
            Kind::State { .. } => {
                return Ok(match option {
                    opt::TYPE => Some(int_bytes(self.socket_type.raw())),
                    opt::MECHANISM | opt::THREAD_SAFE => Some(int_bytes(0)),
                    _ => None,
                })
            }
            Kind::Int64 if option == opt::MAXMSGSIZE => {
                return Ok(Some(self.maxmsgsize.to_ne_bytes().to_vec()))
            }
            Kind::Int64 => {
                let v = self.kept.get(&option).copied().unwrap_or(spec.default);
                return Ok(Some(v.to_ne_bytes().to_vec()));
            }
            _ => match option {
                opt::LINGER => self.linger,
                opt::RECONNECT_IVL => self.reconnect_ivl,
                opt::SNDHWM => self.sndhwm,
                opt::RCVHWM => self.rcvhwm,
                opt::RCVTIMEO => self.rcvtimeo,
                opt::SNDTIMEO => self.sndtimeo,
                opt::HANDSHAKE_IVL => self.handshake_ivl,
                _ => self.kept.get(&option).copied().unwrap_or(spec.default) as i32,
            },
        };
        Ok(Some(int_bytes(v)))
    }

    /// `ZMQ_IMMEDIATE`.
    pub fn immediate(&self) -> bool {
        self.kept.get(&opt::IMMEDIATE).is_some_and(|&v| v != 0)
    }

    /// `ZMQ_RECONNECT_IVL_MAX`.
    pub fn reconnect_ivl_max(&self) -> i32 {
        self.kept
            .get(&opt::RECONNECT_IVL_MAX)
            .map_or(0, |&v| v as i32)
    }

    /// The kernel settings of this socket's TCP connections and listeners.
    pub fn tcp_tuning(&self) -> TcpTuning {
        let k = |id| self.kept.get(&id).copied().unwrap_or(default_of(id)) as i32;
        TcpTuning {
            sndbuf: k(opt::SNDBUF),
            rcvbuf: k(opt::RCVBUF),
            backlog: k(opt::BACKLOG),
            tos: k(opt::TOS),
            keepalive: k(opt::TCP_KEEPALIVE),
            keepalive_cnt: k(opt::TCP_KEEPALIVE_CNT),
            keepalive_idle: k(opt::TCP_KEEPALIVE_IDLE),
            keepalive_intvl: k(opt::TCP_KEEPALIVE_INTVL),
            maxrt: k(opt::TCP_MAXRT),
            device: self.bind_device.clone(),
        }
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
        config.reserve_ahead = crate::stream::RESERVE_AHEAD;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: i32) -> Vec<u8> {
        v.to_ne_bytes().to_vec()
    }

    fn get(o: &SocketOptions, option: i32) -> Option<Vec<u8>> {
        o.get(option).ok().flatten()
    }

    #[test]
    fn defaults_are_libzmqs() {
        let o = SocketOptions::new(SocketType::Dealer);
        assert_eq!(get(&o, opt::LINGER), Some(i(-1)));
        assert_eq!(get(&o, opt::SNDHWM), Some(i(1000)));
        assert_eq!(get(&o, opt::RCVHWM), Some(i(1000)));
        assert_eq!(get(&o, opt::RECONNECT_IVL), Some(i(100)));
        assert_eq!(
            get(&o, opt::MAXMSGSIZE),
            Some((-1i64).to_ne_bytes().to_vec())
        );
        assert_eq!(get(&o, opt::TYPE), Some(i(5)));
        assert_eq!(get(&o, opt::ROUTING_ID), Some(vec![]));
        assert_eq!(get(&o, opt::TCP_KEEPALIVE), Some(i(-1)));
        assert_eq!(get(&o, opt::IPV4ONLY), Some(i(1)));
        assert_eq!(get(&o, opt::PLAIN_USERNAME), Some(vec![0]));
        assert_eq!(get(&o, opt::AFFINITY), Some(0u64.to_ne_bytes().to_vec()));
        assert!(o.get(opt::ROUTER_MANDATORY).is_err(), "ROUTER only");
        assert!(o.get(opt::PROBE_ROUTER).is_err(), "write only");
        assert!(o.get(9999).is_err());
    }

    #[test]
    fn set_checks_sizes_and_ranges_as_libzmq() {
        let mut o = SocketOptions::new(SocketType::Router);
        o.set(opt::LINGER, &i(0)).unwrap();
        assert_eq!(o.linger, 0);
        assert!(o.set(opt::LINGER, &i(-2)).is_err());
        assert!(o.set(opt::LINGER, &[0, 0]).is_err());
        assert!(o.set(opt::SNDHWM, &i(-1)).is_err());
        assert!(o.set(opt::RATE, &i(0)).is_err());
        assert!(o.set(opt::IMMEDIATE, &i(2)).is_err());
        o.set(opt::ROUTER_MANDATORY, &i(7)).unwrap();
        assert!(o.router_mandatory);
        o.set(opt::MAXMSGSIZE, &1234i64.to_ne_bytes()).unwrap();
        assert_eq!(o.maxmsgsize, 1234);
        assert!(o.set(opt::MAXMSGSIZE, &i(5)).is_err());
        assert!(o.set(opt::ROUTING_ID, b"").is_err());
        assert!(o.set(opt::ROUTING_ID, &[7; 256]).is_err());
        o.set(opt::ROUTING_ID, b"ps9").unwrap();
        assert_eq!(get(&o, opt::ROUTING_ID), Some(b"ps9".to_vec()));
        o.set(opt::TCP_KEEPALIVE, &i(1)).unwrap();
        assert_eq!(get(&o, opt::TCP_KEEPALIVE), Some(i(1)));
        o.set(opt::HEARTBEAT_TTL, &i(150)).unwrap();
        assert_eq!(get(&o, opt::HEARTBEAT_TTL), Some(i(100)));
        assert!(o.set(opt::EVENTS, &i(1)).is_err(), "read only");
        assert!(matches!(o.set(4242, &i(1)), Err(Error::Invalid(_))));
    }

    #[test]
    fn ipv6_and_ipv4only_are_one_setting() {
        let mut o = SocketOptions::new(SocketType::Pair);
        o.set(opt::IPV6, &i(1)).unwrap();
        assert!(o.ipv6());
        assert_eq!(get(&o, opt::IPV4ONLY), Some(i(0)));
        o.set(opt::IPV4ONLY, &i(1)).unwrap();
        assert!(!o.ipv6());
    }

    #[test]
    fn router_options_only_on_routers() {
        let mut d = SocketOptions::new(SocketType::Dealer);
        assert!(d.set(opt::ROUTER_MANDATORY, &i(1)).is_err());
        d.set(opt::PROBE_ROUTER, &i(1)).unwrap();
        let mut p = SocketOptions::new(SocketType::Pair);
        assert!(p.set(opt::ROUTER_HANDOVER, &i(1)).is_err());
        assert!(p.set(opt::PROBE_ROUTER, &i(1)).is_err());
    }

    #[test]
    fn security_stays_off() {
        let mut o = SocketOptions::new(SocketType::Dealer);
        o.set(opt::PLAIN_SERVER, &i(0)).unwrap();
        assert!(o.set(opt::PLAIN_SERVER, &i(1)).is_err());
        o.reset(opt::PLAIN_USERNAME).unwrap();
        assert!(o.set(opt::PLAIN_USERNAME, b"admin").is_err());
        assert!(o.set(opt::CURVE_SERVERKEY, &[0; 32]).is_err());
        assert!(o.get(opt::CURVE_SERVERKEY).is_err());
        assert!(
            o.reset(opt::ZAP_DOMAIN).is_err(),
            "NULL is EINVAL for ZAP_DOMAIN"
        );
    }

    #[test]
    fn filters_add_and_clear() {
        let mut o = SocketOptions::new(SocketType::Router);
        o.set(opt::TCP_ACCEPT_FILTER, b"127.0.0.0/8").unwrap();
        o.set(opt::TCP_ACCEPT_FILTER, b"10.1.2.3").unwrap();
        assert_eq!(o.tcp_accept_filters.len(), 2);
        assert!(o.set(opt::TCP_ACCEPT_FILTER, b"127.0.0.1/33").is_err());
        assert!(o.set(opt::TCP_ACCEPT_FILTER, b"").is_err());
        o.reset(opt::TCP_ACCEPT_FILTER).unwrap();
        assert!(o.tcp_accept_filters.is_empty());
        o.set(opt::IPC_FILTER_UID, &i(0)).unwrap();
        assert!(!o.ipc_filter.is_empty());
        assert!(o.set(opt::IPC_FILTER_UID, &[0; 8]).is_err());
        o.reset(opt::IPC_FILTER_UID).unwrap();
        assert!(o.ipc_filter.is_empty());
        assert!(o.get(opt::TCP_ACCEPT_FILTER).is_err(), "write only");
    }

    #[test]
    fn buffers_are_checked_as_libzmq() {
        assert!(fit(opt::LINGER, 4, i(0)).is_ok());
        assert!(
            fit(opt::LINGER, 8, i(0)).is_err(),
            "ints take exactly 4 bytes"
        );
        assert!(
            fit(opt::EVENTS, 8, i(0)).is_ok(),
            "state ints take at least 4"
        );
        assert!(fit(opt::TYPE, 8, i(0)).is_err());
        assert!(fit(opt::LAST_ENDPOINT, 10, b"ipc://a\0".to_vec()).is_ok());
        assert!(fit(opt::LAST_ENDPOINT, 7, b"ipc://a\0".to_vec()).is_err());
        assert!(fit(opt::ROUTING_ID, 255, b"ps1".to_vec()).is_ok());
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
