//! Which connections a listener accepts: `ZMQ_TCP_ACCEPT_FILTER` (peer
//! addresses) and `ZMQ_IPC_FILTER_PID`/`_UID`/`_GID` (peer credentials),
//! as libzmq applies them. A listener takes the filters its socket had when
//! it was bound; a connection that matches none is closed at once.

use std::collections::BTreeSet;
use std::net::IpAddr;

use crate::consts::opt;
use crate::stream::Stream;

/// An address with a prefix length (`127.0.0.0/8`; no `/bits`: the whole
/// address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddrMask {
    addr: IpAddr,
    bits: u8,
}

/// The leading decimal digits of `s` as a number (`strtol` without a
/// sign: libzmq reads masks so); 0 if there are none.
fn leading_number(s: &str) -> u32 {
    s.bytes().take_while(u8::is_ascii_digit).fold(0u32, |n, d| {
        n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
    })
}

impl AddrMask {
    /// Parses a filter as libzmq does: a numeric address (IPv6 only with
    /// `ZMQ_IPV6`; an IPv4-mapped IPv6 address stands for its IPv4 address
    /// without it), then optionally `/` and a prefix length of 1 to the
    /// address's bits, or exactly `0`.
    pub fn parse(text: &str, ipv6: bool) -> Option<AddrMask> {
        let (addr, mask) = match text.rsplit_once('/') {
            Some((a, m)) => (a, Some(m)),
            None => (text, None),
        };
        let addr: IpAddr = match addr.parse().ok()? {
            IpAddr::V6(v6) if !ipv6 => IpAddr::V4(v6.to_ipv4_mapped()?),
            a => a,
        };
        let full: u32 = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match mask {
            None => full,
            Some("") => return None,
            Some("0") => 0,
            Some(m) => {
                let n = leading_number(m);
                if !(1..=full).contains(&n) {
                    return None;
                }
                n
            }
        };
        Some(AddrMask {
            addr,
            bits: bits as u8,
        })
    }

    /// Whether `peer` is in this network (an IPv4 peer never matches an
    /// IPv6 filter, nor the other way round, as in libzmq).
    pub fn matches(&self, peer: IpAddr) -> bool {
        fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
            let whole = usize::from(bits / 8);
            let rest = bits % 8;
            a[..whole] == b[..whole]
                && (rest == 0 || (a[whole] ^ b[whole]) & (0xFF << (8 - rest)) == 0)
        }
        match (self.addr, peer) {
            (IpAddr::V4(f), IpAddr::V4(p)) => prefix_eq(&f.octets(), &p.octets(), self.bits),
            (IpAddr::V6(f), IpAddr::V6(p)) => prefix_eq(&f.octets(), &p.octets(), self.bits),
            _ => false,
        }
    }
}

/// The credentials an IPC listener accepts: a peer passes if its process,
/// user or group is listed, or if its user is listed as a member of a
/// listed group. Empty: every peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IpcFilter {
    pids: BTreeSet<i32>,
    uids: BTreeSet<u32>,
    gids: BTreeSet<u32>,
}

impl IpcFilter {
    /// Adds `value` to the set of `option` (`ZMQ_IPC_FILTER_PID`/`_UID`/`_GID`).
    pub fn add(&mut self, option: i32, value: i32) {
        match option {
            opt::IPC_FILTER_PID => {
                self.pids.insert(value);
            }
            opt::IPC_FILTER_UID => {
                self.uids.insert(value as u32);
            }
            _ => {
                self.gids.insert(value as u32);
            }
        }
    }

    /// Empties the set of `option`.
    pub fn clear(&mut self, option: i32) {
        match option {
            opt::IPC_FILTER_PID => self.pids.clear(),
            opt::IPC_FILTER_UID => self.uids.clear(),
            _ => self.gids.clear(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.uids.is_empty() && self.gids.is_empty()
    }

    /// Whether a peer with these credentials passes.
    pub fn allows(&self, pid: i32, uid: u32, gid: u32) -> bool {
        self.is_empty()
            || self.pids.contains(&pid)
            || self.uids.contains(&uid)
            || self.gids.contains(&gid)
            || self
                .gids
                .iter()
                .any(|&g| zebra_net::sys::user_listed_in_group(uid, g))
    }
}

/// What a listener checks of each connection it accepts, fixed at bind.
#[derive(Debug, Clone, Default)]
pub(crate) enum AcceptFilter {
    /// Every connection.
    #[default]
    Any,
    /// TCP peers whose address one of these matches.
    Tcp(Vec<AddrMask>),
    /// IPC peers the filter allows.
    Ipc(IpcFilter),
}

impl AcceptFilter {
    /// Whether the listener keeps `stream`; `Err` says why not.
    pub fn check(&self, stream: &Stream) -> Result<(), String> {
        match self {
            AcceptFilter::Any => Ok(()),
            AcceptFilter::Tcp(masks) => {
                let peer = match stream {
                    Stream::Tcp(s) => s.peer_addr().ok(),
                    Stream::Smol(s) => s.peer_addr().ok(),
                    Stream::Unix(_) => return Ok(()),
                };
                match peer {
                    Some(p) if masks.iter().any(|m| m.matches(p.ip())) => Ok(()),
                    Some(p) => Err(format!("{} matches no ZMQ_TCP_ACCEPT_FILTER", p.ip())),
                    None => Err("peer address unknown".to_owned()),
                }
            }
            AcceptFilter::Ipc(filter) => {
                let Stream::Unix(s) = stream else {
                    return Ok(());
                };
                match zebra_net::sys::peer_cred(s) {
                    Ok((pid, uid, gid)) if filter.allows(pid, uid, gid) => Ok(()),
                    Ok((pid, uid, gid)) => Err(format!(
                        "pid {pid}, uid {uid}, gid {gid} pass no ZMQ_IPC_FILTER_*"
                    )),
                    Err(e) => Err(format!("peer credentials: {e}")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn masks_parse_as_libzmq() {
        assert!(AddrMask::parse("127.0.0.1", false).is_some());
        assert!(AddrMask::parse("127.0.0.0/8", false).is_some());
        assert!(AddrMask::parse("127.0.0.1/0", false).is_some());
        assert!(AddrMask::parse("127.0.0.1/33", false).is_none());
        assert!(AddrMask::parse("127.0.0.1/", false).is_none());
        assert!(AddrMask::parse("127.0.0.1/x", false).is_none());
        assert!(
            AddrMask::parse("::1", false).is_none(),
            "IPv6 needs ZMQ_IPV6"
        );
        assert!(AddrMask::parse("::1", true).is_some());
        assert!(AddrMask::parse("::ffff:127.0.0.1", false).is_some());
        assert!(AddrMask::parse("localhost", false).is_none(), "no DNS");
        assert!(AddrMask::parse(" 127.0.0.1", false).is_none());
        assert!(AddrMask::parse("", false).is_none());
    }

    #[test]
    fn masks_match_prefixes_of_their_family() {
        let m = AddrMask::parse("10.1.0.0/16", false).unwrap();
        assert!(m.matches(ip("10.1.200.3")));
        assert!(!m.matches(ip("10.2.0.1")));
        assert!(!m.matches(ip("::ffff:10.1.0.1")));
        let m = AddrMask::parse("10.1.2.3/31", false).unwrap();
        assert!(m.matches(ip("10.1.2.2")));
        assert!(!m.matches(ip("10.1.2.4")));
        assert!(AddrMask::parse("1.2.3.4/0", false)
            .unwrap()
            .matches(ip("9.9.9.9")));
        let m = AddrMask::parse("fe80::/10", true).unwrap();
        assert!(m.matches(ip("febf::1")));
        assert!(!m.matches(ip("fec0::1")));
        assert!(AddrMask::parse("::ffff:127.0.0.1", false)
            .unwrap()
            .matches(ip("127.0.0.1")));
    }

    #[test]
    fn ipc_filter_is_a_union() {
        let mut f = IpcFilter::default();
        assert!(f.allows(1, 2, 3));
        f.add(opt::IPC_FILTER_UID, 1000);
        assert!(f.allows(5, 1000, 5));
        assert!(!f.allows(5, 1001, 5));
        f.add(opt::IPC_FILTER_PID, 5);
        assert!(f.allows(5, 1001, 5));
        f.clear(opt::IPC_FILTER_PID);
        f.clear(opt::IPC_FILTER_UID);
        assert!(f.is_empty());
    }
}
