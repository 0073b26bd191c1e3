//! The stack over an `AF_PACKET` raw socket: one `recv`/`send` per frame into buffers that
//! are reused, for hosts without DPDK.

use std::io;
use std::os::fd::RawFd;

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

use super::{Counters, Port};
use crate::sys::PacketSocket;

const ETH_HEADER: usize = 14;

#[derive(Debug)]
pub(crate) struct RawPort {
    sock: PacketSocket,
    rx_buf: Vec<u8>,
    tx_buf: Vec<u8>,
    counters: Counters,
}

impl RawPort {
    pub fn open(iface: &str) -> Result<RawPort, crate::Error> {
        let sock = PacketSocket::open(iface).map_err(|source| crate::Error::Raw {
            iface: iface.to_owned(),
            source,
        })?;
        let frame = sock.mtu + ETH_HEADER;
        Ok(RawPort {
            sock,
            rx_buf: vec![0; frame],
            tx_buf: vec![0; frame],
            counters: Counters::default(),
        })
    }
}

pub(crate) struct RxToken<'a> {
    frame: &'a [u8],
}

pub(crate) struct TxToken<'a> {
    sock: &'a PacketSocket,
    buf: &'a mut Vec<u8>,
    counters: &'a mut Counters,
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.frame)
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let out = f(&mut self.buf[..len]);
        match self.sock.send(&self.buf[..len]) {
            Ok(_) => self.counters.tx_frames += 1,
            Err(e) => {
                self.counters.tx_dropped += 1;
                if e.kind() != io::ErrorKind::WouldBlock {
                    log::debug!("zebra-net: raw send: {e}");
                }
            }
        }
        out
    }
}

impl Device for RawPort {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken<'_>, TxToken<'_>)> {
        loop {
            match self.sock.recv(&mut self.rx_buf) {
                Ok(n) if n > self.rx_buf.len() => self.counters.rx_dropped += 1,
                Ok(n) => {
                    self.counters.rx_frames += 1;
                    let rx = RxToken {
                        frame: &self.rx_buf[..n],
                    };
                    let tx = TxToken {
                        sock: &self.sock,
                        buf: &mut self.tx_buf,
                        counters: &mut self.counters,
                    };
                    return Some((rx, tx));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        log::warn!("zebra-net: raw receive: {e}");
                    }
                    return None;
                }
            }
        }
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        Some(TxToken {
            sock: &self.sock,
            buf: &mut self.tx_buf,
            counters: &mut self.counters,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.sock.mtu + ETH_HEADER;
        caps
    }
}

impl Port for RawPort {
    fn mac(&self) -> [u8; 6] {
        self.sock.mac
    }

    fn flush(&mut self) {}

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.sock.fd())
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn close(self) -> Result<(), crate::Error> {
        Ok(())
    }
}
