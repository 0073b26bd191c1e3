//! UDP over the user-level stack: a non-blocking socket bound to a port, with an eventfd
//! that signals "may have changed" (see the crate doc).

use std::io;
use std::net::SocketAddrV4;
use std::os::fd::RawFd;
use std::sync::Arc;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::udp;
use smoltcp::wire::{IpAddress, IpEndpoint};

use crate::stack::{udp_readiness, Shared, Stack};
use crate::sys::EventFd;

/// IPv4 and UDP headers: a datagram's payload is at most the MTU less these.
const HEADERS: usize = 20 + 8;

#[derive(Debug)]
pub struct UdpSocket {
    shared: Arc<Shared>,
    handle: SocketHandle,
    event: Arc<EventFd>,
    port: u16,
}

impl UdpSocket {
    /// Binds `port` of the stack's address (0: a free port).
    pub fn bind(stack: &Stack, port: u16) -> io::Result<UdpSocket> {
        let shared = stack.shared.clone();
        let event = Arc::new(EventFd::new()?);
        let (handle, port) = {
            let mut st = shared.lock();
            let port = match port {
                0 => st.ephemeral_port().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::AddrInUse, "no free local port")
                })?,
                p => p,
            };
            let mut sock = st.new_udp_socket(&shared.cfg);
            sock.bind(port).map_err(|e| {
                io::Error::new(io::ErrorKind::AddrInUse, format!("UDP port {port}: {e}"))
            })?;
            let handle = st.sockets.add(sock);
            st.watch(handle, event.clone(), true);
            (handle, port)
        };
        event.notify();
        Ok(UdpSocket {
            shared,
            handle,
            event,
            port,
        })
    }

    pub fn local_addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.shared.cfg.ip, self.port)
    }

    /// The descriptor to poll: readable when a datagram may be waiting or room may have
    /// come free.
    pub fn fd(&self) -> RawFd {
        self.event.fd()
    }

    /// The largest payload one datagram carries (no IP fragmentation).
    pub fn max_payload(&self) -> usize {
        self.shared.lock().mtu - HEADERS
    }

    /// Queues one datagram; `WouldBlock` when the send buffer is full.
    pub fn send_to(&self, buf: &[u8], to: SocketAddrV4) -> io::Result<usize> {
        let r = {
            let mut st = self.shared.lock();
            let st = &mut *st;
            if buf.len() > st.mtu - HEADERS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "datagram of {} bytes exceeds the MTU payload {}",
                        buf.len(),
                        st.mtu - HEADERS
                    ),
                ));
            }
            st.want_neighbour(*to.ip());
            let ep = IpEndpoint::new(IpAddress::Ipv4(*to.ip()), to.port());
            let sock = st.sockets.get_mut::<udp::Socket>(self.handle);
            match sock.send_slice(buf, ep) {
                Ok(()) => Ok(buf.len()),
                Err(udp::SendError::BufferFull) => {
                    if let Some(w) = st.watches.get_mut(&self.handle) {
                        w.last = udp_readiness(sock);
                        w.last.writable = false;
                        self.event.drain();
                    }
                    Err(io::ErrorKind::WouldBlock.into())
                }
                Err(udp::SendError::Unaddressable) => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("cannot send to {to}"),
                )),
            }
        };
        if r.is_ok() {
            self.shared.kick();
        }
        r
    }

    /// One datagram and its sender; `WouldBlock` when none is waiting.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddrV4)> {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let sock = st.sockets.get_mut::<udp::Socket>(self.handle);
        match sock.recv_slice(buf) {
            Ok((n, meta)) => {
                let IpAddress::Ipv4(a) = meta.endpoint.addr;
                Ok((n, SocketAddrV4::new(a, meta.endpoint.port)))
            }
            Err(udp::RecvError::Exhausted) => {
                if let Some(w) = st.watches.get_mut(&self.handle) {
                    w.last = udp_readiness(sock);
                    w.last.readable = false;
                    self.event.drain();
                }
                Err(io::ErrorKind::WouldBlock.into())
            }
            Err(udp::RecvError::Truncated) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "datagram larger than the {}-byte buffer (dropped)",
                    buf.len()
                ),
            )),
        }
    }
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.watches.remove(&self.handle);
        st.sockets.remove(self.handle);
    }
}
