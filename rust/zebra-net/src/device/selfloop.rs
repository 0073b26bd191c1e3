//! Frames a stack sends to itself: the user-level stack's answer to the kernel's `lo`.
//!
//! A process may connect to its own address (PS-lite's scheduler connects to its own
//! ROUTER). smoltcp has no loopback on an Ethernet interface: it would ask ARP for its own
//! address, and nobody on the wire answers. [`SelfLoop`] wraps the device: every frame is
//! built in a scratch buffer first, and one addressed to the stack itself — an ARP request
//! for its own IP, or a frame to its own MAC — goes back into the receive queue instead of
//! onto the wire (smoltcp then answers its own ARP and accepts its own segments, as from a
//! neighbour). Every other frame is copied into the device's buffer and sent as before.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;

use smoltcp::phy::{self, Device, DeviceCapabilities};
use smoltcp::time::Instant;
use smoltcp::wire::{ArpOperation, ArpPacket, ArpRepr, EthernetFrame, EthernetProtocol};

use super::{Counters, Port};

/// Looped frames waiting for `receive`, at most this many (more are dropped and counted,
/// as a full device queue would drop them).
const QUEUE: usize = 1024;

/// The stack's own addresses.
#[derive(Debug, Clone, Copy)]
struct Me {
    mac: [u8; 6],
    ip: Ipv4Addr,
}

impl Me {
    /// Whether `frame` (Ethernet) is addressed to this stack: to its MAC, or an ARP request
    /// (broadcast) for its IP.
    fn addressed_by(&self, frame: &[u8]) -> bool {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return false;
        };
        if eth.dst_addr().as_bytes() == self.mac {
            return true;
        }
        if eth.ethertype() != EthernetProtocol::Arp || !eth.dst_addr().is_broadcast() {
            return false;
        }
        let Ok(arp) = ArpPacket::new_checked(eth.payload()) else {
            return false;
        };
        matches!(
            ArpRepr::parse(&arp),
            Ok(ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                target_protocol_addr,
                ..
            }) if target_protocol_addr == self.ip
        )
    }
}

/// The loop's queue and counters (borrowed by a transmit token).
#[derive(Debug, Default)]
struct Loop {
    frames: VecDeque<Vec<u8>>,
    scratch: Vec<u8>,
    looped: u64,
    dropped: u64,
}

/// A device whose frames to itself come back (see the module documentation).
pub(crate) struct SelfLoop<P> {
    inner: P,
    me: Me,
    lp: Loop,
}

impl<P: Port> SelfLoop<P> {
    pub fn new(inner: P, ip: Ipv4Addr) -> SelfLoop<P> {
        let me = Me {
            mac: inner.mac(),
            ip,
        };
        SelfLoop {
            inner,
            me,
            lp: Loop::default(),
        }
    }
}

pub(crate) enum RxToken<T> {
    Device(T),
    Looped(Vec<u8>),
}

impl<T: phy::RxToken> phy::RxToken for RxToken<T> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        match self {
            RxToken::Device(t) => t.consume(f),
            RxToken::Looped(frame) => f(&frame),
        }
    }
}

pub(crate) struct TxToken<'a, T> {
    /// The device's token: `None` when the device had no room (a looped frame needs none;
    /// any other frame is then dropped and counted, as the device would).
    device: Option<T>,
    me: Me,
    lp: &'a mut Loop,
}

impl<T: phy::TxToken> phy::TxToken for TxToken<'_, T> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let lp = self.lp;
        lp.scratch.clear();
        lp.scratch.resize(len, 0);
        let r = f(&mut lp.scratch);
        if self.me.addressed_by(&lp.scratch) {
            if lp.frames.len() < QUEUE {
                lp.frames.push_back(lp.scratch.clone());
                lp.looped += 1;
            } else {
                lp.dropped += 1;
            }
        } else if let Some(t) = self.device {
            let frame = &lp.scratch;
            t.consume(len, |buf| buf.copy_from_slice(frame));
        } else {
            lp.dropped += 1;
        }
        r
    }
}

impl<P: Port> Device for SelfLoop<P> {
    type RxToken<'a>
        = RxToken<P::RxToken<'a>>
    where
        P: 'a;
    type TxToken<'a>
        = TxToken<'a, P::TxToken<'a>>
    where
        P: 'a;

    fn receive(&mut self, now: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let me = self.me;
        if let Some(frame) = self.lp.frames.pop_front() {
            let tx = TxToken {
                device: self.inner.transmit(now),
                me,
                lp: &mut self.lp,
            };
            return Some((RxToken::Looped(frame), tx));
        }
        let (rx, tx) = self.inner.receive(now)?;
        let tx = TxToken {
            device: Some(tx),
            me,
            lp: &mut self.lp,
        };
        Some((RxToken::Device(rx), tx))
    }

    fn transmit(&mut self, now: Instant) -> Option<Self::TxToken<'_>> {
        let device = self.inner.transmit(now)?;
        Some(TxToken {
            device: Some(device),
            me: self.me,
            lp: &mut self.lp,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.inner.capabilities()
    }
}

impl<P: Port> Port for SelfLoop<P> {
    fn mac(&self) -> [u8; 6] {
        self.me.mac
    }

    fn flush(&mut self) {
        self.inner.flush();
    }

    fn wait_fd(&self) -> Option<RawFd> {
        self.inner.wait_fd()
    }

    fn counters(&self) -> Counters {
        let mut c = self.inner.counters();
        c.looped += self.lp.looped;
        c.tx_dropped += self.lp.dropped;
        c
    }

    fn buffers_in_use(&self) -> Option<u32> {
        self.inner.buffers_in_use()
    }

    fn close(self) -> Result<(), crate::Error> {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    fn arp_request(target: Ipv4Addr) -> Vec<u8> {
        crate::neighbours::request([2, 0, 0, 0, 0, 9], Ipv4Addr::new(10, 0, 0, 9), target)
    }

    #[test]
    fn loops_only_frames_addressed_to_the_stack() {
        let me = Me { mac: MAC, ip: IP };
        assert!(me.addressed_by(&arp_request(IP)));
        assert!(!me.addressed_by(&arp_request(Ipv4Addr::new(10, 0, 0, 2))));
        let mut to_me = vec![0u8; 60];
        to_me[..6].copy_from_slice(&MAC);
        assert!(me.addressed_by(&to_me));
        let mut to_other = to_me.clone();
        to_other[5] = 7;
        assert!(!me.addressed_by(&to_other));
        // Truncated or garbage bytes are not ours (and do not panic).
        assert!(!me.addressed_by(&[]));
        assert!(!me.addressed_by(&to_me[..5]));
        let mut bad_arp = arp_request(IP);
        bad_arp.truncate(20);
        assert!(!me.addressed_by(&bad_arp));
    }
}
