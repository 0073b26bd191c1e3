//! The raw packet rate of a stack's device, for the perf pair (`netns_perf pmd`): one
//! prebuilt Ethernet/IPv4/UDP frame handed to the device's transmit path again and
//! again, with no stack, no socket and no network thread in between (for DPDK: bursts
//! of the same size the stack uses, through the same `rte_eth_tx_burst`). What the stack
//! reaches on the same device in the same run is then a ratio of this.

use std::net::SocketAddrV4;
use std::time::Instant;

use smoltcp::phy::TxToken;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpProtocol, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

use crate::device::raw::RawPort;
use crate::device::Port;
use crate::{Backend, Error, StackConfig};

/// What [`blast`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blast {
    /// Frames the device took.
    pub sent: u64,
    /// Frames it refused (queue full, no buffer).
    pub dropped: u64,
    /// Seconds from the first frame to the last flush.
    pub secs: f64,
}

/// What [`blast`] sends: `count` UDP datagrams of `payload` bytes from the
/// stack's address (port `from_port`) to `to` at Ethernet address `to_mac`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagrams {
    pub to_mac: [u8; 6],
    pub to: SocketAddrV4,
    pub from_port: u16,
    pub payload: usize,
    pub count: u64,
}

/// Sends `what` through the device of `cfg.backend` alone (from `cfg.ip`), and
/// closes it (an error if it leaked buffers).
pub fn blast(cfg: &StackConfig, what: &Datagrams) -> Result<Blast, Error> {
    cfg.validate()?;
    match &cfg.backend {
        Backend::Raw { iface } => run(RawPort::open(iface)?, cfg, what),
        #[cfg(dpdk)]
        Backend::Dpdk { eal_args } => run(
            crate::device::dpdk::DpdkPort::open(cfg, eal_args)?,
            cfg,
            what,
        ),
        #[cfg(not(dpdk))]
        Backend::Dpdk { .. } => Err(Error::DpdkNotBuilt),
    }
}

fn run<P: Port>(mut port: P, cfg: &StackConfig, what: &Datagrams) -> Result<Blast, Error> {
    let frame = udp_frame(port.mac(), cfg.ip, what);
    let started = Instant::now();
    let mut no_token = 0;
    for _ in 0..what.count {
        let took = port
            .transmit(smoltcp::time::Instant::now())
            .map(|token| token.consume(frame.len(), |buf| buf.copy_from_slice(&frame)));
        no_token += u64::from(took.is_none());
    }
    port.flush();
    let secs = started.elapsed().as_secs_f64();
    let c = port.counters();
    port.close()?;
    Ok(Blast {
        sent: c.tx_frames,
        dropped: c.tx_dropped + no_token,
        secs,
    })
}

/// One Ethernet frame of a UDP datagram (IPv4 header checksummed; UDP checksum 0,
/// which IPv4 allows).
fn udp_frame(from_mac: [u8; 6], from: std::net::Ipv4Addr, what: &Datagrams) -> Vec<u8> {
    let (to, payload) = (what.to, what.payload);
    let udp = UdpRepr {
        src_port: what.from_port,
        dst_port: to.port(),
    };
    let ip = Ipv4Repr {
        src_addr: from,
        dst_addr: *to.ip(),
        next_header: IpProtocol::Udp,
        payload_len: udp.header_len() + payload,
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(from_mac),
        dst_addr: EthernetAddress(what.to_mac),
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut bytes = vec![0u8; eth.buffer_len() + ip.buffer_len() + ip.payload_len];
    let mut f = EthernetFrame::new_unchecked(&mut bytes[..]);
    eth.emit(&mut f);
    let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p, &smoltcp::phy::ChecksumCapabilities::default());
    let mut u = UdpPacket::new_unchecked(p.payload_mut());
    u.set_src_port(udp.src_port);
    u.set_dst_port(udp.dst_port);
    u.set_len((udp.header_len() + payload) as u16);
    u.set_checksum(0);
    u.payload_mut().fill(5);
    bytes
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn the_frame_is_a_well_formed_udp_datagram() {
        let from = Ipv4Addr::new(10, 0, 0, 2);
        let to = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 9000);
        let what = Datagrams {
            to_mac: [2, 0, 0, 0, 0, 1],
            to,
            from_port: 7000,
            payload: 192,
            count: 1,
        };
        let frame = udp_frame([2, 0, 0, 0, 0, 2], from, &what);
        assert_eq!(frame.len(), 14 + 20 + 8 + 192);
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert_eq!(eth.dst_addr(), EthernetAddress([2, 0, 0, 0, 0, 1]));
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!((ip.src_addr(), ip.dst_addr()), (from, *to.ip()));
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!((udp.src_port(), udp.dst_port()), (7000, 9000));
        assert_eq!(udp.payload().len(), 192);
    }
}
