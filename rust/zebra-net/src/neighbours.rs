//! ARP requests the stack sends on its own, beside smoltcp's.
//!
//! smoltcp 0.13 sends at most one ARP request per second for all unresolved addresses
//! together (one rate limit for the whole neighbour cache), drops the packet that needed
//! it, and forgets a neighbour 60 s after its last ARP packet. A PS-lite process connects
//! to several peers at once at start-up: all but one of them then wait a second for their
//! SYN (measured: a 2-worker job's first rounds took 0.4 s each instead of 3 ms), and every
//! minute each busy peer's entry expires and the next packet to it waits again.
//!
//! [`Neighbours`] closes both gaps: the stack asks for a next hop when a connection opens,
//! when a datagram is sent, and (swept every second) for every TCP peer, and sends its own
//! ARP request for any next hop not asked for within [`REPROBE`]. The answers fill
//! smoltcp's cache (smoltcp fills it from every ARP packet aimed at it), so the entries of
//! live peers never expire and new peers resolve in one round trip.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use smoltcp::phy::{Device, TxToken};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr,
};

/// How often a next hop in use is asked for again: well inside smoltcp's 60 s lifetime.
pub(crate) const REPROBE: Duration = Duration::from_secs(20);
/// How often the TCP peers are swept.
pub(crate) const SWEEP: Duration = Duration::from_secs(1);
/// Next hops remembered at most (a stale one is forgotten when the table is full).
const CAPACITY: usize = 4096;

/// The stack's own address, prefix and gateway: what decides the next hop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subnet {
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    pub gateway: Option<Ipv4Addr>,
}

impl Subnet {
    /// The address whose Ethernet address a frame to `dst` needs.
    pub fn next_hop(&self, dst: Ipv4Addr) -> Option<Ipv4Addr> {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        let on_link = u32::from(dst) & mask == u32::from(self.ip) & mask;
        if dst.is_broadcast() || dst.is_multicast() || dst.is_unspecified() {
            None
        } else if on_link {
            Some(dst)
        } else {
            self.gateway
        }
    }
}

#[derive(Debug)]
pub(crate) struct Neighbours {
    /// The stack's addresses: what decides a next hop, and where requests come from.
    subnet: Subnet,
    mac: [u8; 6],
    /// Next hop -> when it was last asked for.
    asked: HashMap<Ipv4Addr, Instant>,
    due: Vec<Ipv4Addr>,
    last_sweep: Option<Instant>,
    /// ARP requests sent by this module.
    pub sent: u64,
}

impl Neighbours {
    pub fn new(subnet: Subnet, mac: [u8; 6]) -> Neighbours {
        Neighbours {
            subnet,
            mac,
            asked: HashMap::new(),
            due: Vec::new(),
            last_sweep: None,
            sent: 0,
        }
    }

    /// Notes that a frame to `dst` is about to be needed.
    pub fn want(&mut self, dst: Ipv4Addr, now: Instant) {
        let Some(hop) = self.subnet.next_hop(dst) else {
            return;
        };
        match self.asked.get(&hop) {
            Some(&at) if now < at + REPROBE => {}
            _ => {
                if self.asked.len() >= CAPACITY {
                    self.asked.retain(|_, &mut at| now < at + REPROBE);
                }
                self.asked.insert(hop, now);
                self.due.push(hop);
            }
        }
    }

    /// Whether the TCP peers should be swept now (then `want` each of them).
    pub fn sweep_due(&mut self, now: Instant) -> bool {
        match self.last_sweep {
            Some(at) if now < at + SWEEP => false,
            _ => {
                self.last_sweep = Some(now);
                true
            }
        }
    }

    /// Sends the ARP requests that are due through `device`.
    pub fn send<D: Device>(&mut self, device: &mut D, now: Instant) {
        for target in std::mem::take(&mut self.due) {
            let Some(token) = device.transmit(now) else {
                // The device is full: ask again at the next chance.
                self.asked.remove(&target);
                continue;
            };
            let frame = request(self.mac, self.subnet.ip, target);
            token.consume(frame.len(), |buf| buf.copy_from_slice(&frame));
            self.sent += 1;
        }
    }
}

/// An Ethernet frame carrying the ARP request "who has `target`? tell `ip`".
pub(crate) fn request(mac: [u8; 6], ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(mac),
        source_protocol_addr: ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: target,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EthernetProtocol::Arp,
    };
    let mut buf = vec![0u8; eth.buffer_len() + arp.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBNET: Subnet = Subnet {
        ip: Ipv4Addr::new(10, 0, 0, 2),
        prefix_len: 24,
        gateway: Some(Ipv4Addr::new(10, 0, 0, 1)),
    };

    #[test]
    fn next_hop_is_the_peer_on_link_else_the_gateway() {
        assert_eq!(
            SUBNET.next_hop(Ipv4Addr::new(10, 0, 0, 9)),
            Some(Ipv4Addr::new(10, 0, 0, 9))
        );
        assert_eq!(
            SUBNET.next_hop(Ipv4Addr::new(10, 0, 1, 9)),
            Some(Ipv4Addr::new(10, 0, 0, 1))
        );
        assert_eq!(SUBNET.next_hop(Ipv4Addr::BROADCAST), None);
        let no_gw = Subnet {
            gateway: None,
            ..SUBNET
        };
        assert_eq!(no_gw.next_hop(Ipv4Addr::new(192, 168, 0, 1)), None);
        let host = Subnet {
            prefix_len: 32,
            ..no_gw
        };
        assert_eq!(host.next_hop(SUBNET.ip), Some(SUBNET.ip));
    }

    #[test]
    fn asks_once_per_reprobe_interval() {
        let mut n = Neighbours::new(SUBNET, [2, 0, 0, 0, 0, 5]);
        let t0 = Instant::from_secs(100);
        let peer = Ipv4Addr::new(10, 0, 0, 7);
        n.want(peer, t0);
        n.want(peer, t0 + Duration::from_secs(5));
        assert_eq!(n.due, vec![peer]);
        n.due.clear();
        n.want(peer, t0 + REPROBE);
        assert_eq!(n.due, vec![peer], "asked again after REPROBE");
    }

    #[test]
    fn request_is_a_well_formed_arp_request() {
        let mac = [2, 0, 0, 0, 0, 5];
        let frame = request(mac, SUBNET.ip, Ipv4Addr::new(10, 0, 0, 7));
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert!(eth.dst_addr().is_broadcast());
        assert_eq!(eth.ethertype(), EthernetProtocol::Arp);
        let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
        assert_eq!(
            arp,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: EthernetAddress(mac),
                source_protocol_addr: SUBNET.ip,
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: Ipv4Addr::new(10, 0, 0, 7),
            }
        );
    }
}
