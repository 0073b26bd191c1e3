//! TCP over the user-level stack: non-blocking streams and listeners with the shape of
//! `std::net`'s, each with an eventfd that signals "may have changed" (see the crate doc).

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;
use smoltcp::wire::{IpAddress, IpEndpoint};

use crate::stack::{tcp_readiness, ListenerState, Shared, Stack};
use crate::sys::EventFd;

fn os_err(what: &'static str) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn v4(ep: IpEndpoint) -> SocketAddr {
    let IpAddress::Ipv4(a) = ep.addr;
    SocketAddr::V4(SocketAddrV4::new(a, ep.port))
}

/// A TCP connection of the user-level stack.
#[derive(Debug)]
pub struct TcpStream {
    shared: Arc<Shared>,
    handle: SocketHandle,
    event: Arc<EventFd>,
    /// The connection was established at some point (a close before means refused).
    established: AtomicBool,
}

impl TcpStream {
    /// Starts connecting to `addr` (non-blocking: see [`poll_connected`](Self::poll_connected)).
    pub fn connect(stack: &Stack, addr: SocketAddrV4) -> io::Result<TcpStream> {
        let shared = stack.shared.clone();
        let event = Arc::new(EventFd::new().map_err(os_err("eventfd"))?);
        let handle = {
            let mut st = shared.lock();
            let local = st
                .ephemeral_port()
                .ok_or_else(|| io::Error::new(io::ErrorKind::AddrInUse, "no free local port"))?;
            let mut sock = st.new_tcp_socket(&shared.cfg);
            let remote = (IpAddress::Ipv4(*addr.ip()), addr.port());
            sock.connect(st.iface.context(), remote, local)
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("connect to {addr}: {e}"),
                    )
                })?;
            let handle = st.sockets.add(sock);
            st.watch(handle, event.clone(), false);
            st.want_neighbour(*addr.ip());
            handle
        };
        shared.kick();
        Ok(TcpStream {
            shared,
            handle,
            event,
            established: AtomicBool::new(false),
        })
    }

    fn accepted(shared: Arc<Shared>, handle: SocketHandle, event: Arc<EventFd>) -> TcpStream {
        TcpStream {
            shared,
            handle,
            event,
            established: AtomicBool::new(true),
        }
    }

    /// The descriptor to poll for readiness changes (readable when the stream may have
    /// become readable, writable, connected or closed).
    pub fn fd(&self) -> RawFd {
        self.event.fd()
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut tcp::Socket<'static>, &mut crate::stack::Readiness) -> R,
    ) -> R {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let sock = st.sockets.get_mut::<tcp::Socket>(self.handle);
        let mut scratch = crate::stack::Readiness::default();
        let last = st
            .watches
            .get_mut(&self.handle)
            .map_or(&mut scratch, |w| &mut w.last);
        f(sock, last)
    }

    /// Whether the connect has completed; `ConnectionRefused` if it failed (reset, or
    /// timed out).
    pub fn poll_connected(&self) -> io::Result<bool> {
        if self.established.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let state = self.with(|s, _| {
            if matches!(s.state(), tcp::State::SynSent | tcp::State::SynReceived) {
                self.event.drain();
            }
            s.state()
        });
        match state {
            tcp::State::SynSent | tcp::State::SynReceived => Ok(false),
            tcp::State::Closed | tcp::State::Listen => Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "connection refused or timed out",
            )),
            _ => {
                self.established.store(true, Ordering::Relaxed);
                Ok(true)
            }
        }
    }

    /// Reads what is received: `Ok(0)` at the peer's FIN, `WouldBlock` when nothing is
    /// there (the next rise is signalled on [`fd`](Self::fd)).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.with(|s, last| match s.recv_slice(buf) {
            Ok(0) if !buf.is_empty() => {
                if s.may_recv()
                    || matches!(s.state(), tcp::State::SynSent | tcp::State::SynReceived)
                {
                    *last = tcp_readiness(s);
                    last.readable = false;
                    self.event.drain();
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(0)
                }
            }
            Ok(n) => Ok(n),
            Err(tcp::RecvError::Finished) => Ok(0),
            Err(tcp::RecvError::InvalidState) => match s.state() {
                tcp::State::SynSent | tcp::State::SynReceived => {
                    last.readable = false;
                    self.event.drain();
                    Err(io::ErrorKind::WouldBlock.into())
                }
                _ => Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "connection reset",
                )),
            },
        });
        if matches!(r, Ok(n) if n > 0) {
            self.shared.kick();
        }
        r
    }

    /// Queues as much of `bufs` as the send buffer takes; `WouldBlock` when it is full.
    pub fn send_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let r = self.with(|s, last| {
            if !s.may_send() {
                return match s.state() {
                    tcp::State::SynSent | tcp::State::SynReceived => {
                        last.writable = false;
                        self.event.drain();
                        Err(io::ErrorKind::WouldBlock.into())
                    }
                    _ => Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "connection closed",
                    )),
                };
            }
            let mut total = 0;
            for b in bufs {
                let n = s
                    .send_slice(b)
                    .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"))?;
                total += n;
                if n < b.len() {
                    break;
                }
            }
            if total == 0 && bufs.iter().any(|b| !b.is_empty()) {
                *last = tcp_readiness(s);
                last.writable = false;
                self.event.drain();
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(total)
        });
        if matches!(r, Ok(n) if n > 0) {
            self.shared.kick();
        }
        r
    }

    /// Sends FIN after what is queued.
    pub fn shutdown_write(&self) {
        self.with(|s, _| s.close());
        self.shared.kick();
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.with(|s, _| s.remote_endpoint())
            .map(v4)
            .ok_or_else(|| io::ErrorKind::NotConnected.into())
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.with(|s, _| s.local_endpoint())
            .map(v4)
            .ok_or_else(|| io::ErrorKind::NotConnected.into())
    }

    /// Bytes queued to send and not yet acknowledged.
    pub fn send_queue(&self) -> usize {
        self.with(|s, _| s.send_queue())
    }
}

impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv(buf)
    }
}

impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.send_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        self.shared.lock().orphan(self.handle);
        self.shared.kick();
    }
}

/// A listening TCP port of the user-level stack, with `backlog` sockets listening.
#[derive(Debug)]
pub struct TcpListener {
    shared: Arc<Shared>,
    id: u64,
    port: u16,
    event: Arc<EventFd>,
}

impl TcpListener {
    /// Listens on `port` of the stack's address (0: a free port).
    pub fn bind(stack: &Stack, port: u16) -> io::Result<TcpListener> {
        let shared = stack.shared.clone();
        let event = Arc::new(EventFd::new().map_err(os_err("eventfd"))?);
        let (id, port) = {
            let mut st = shared.lock();
            let port = match port {
                0 => st.ephemeral_port().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::AddrInUse, "no free local port")
                })?,
                p if st.listeners.values().any(|l| l.port == p) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("port {p} is already listening"),
                    ))
                }
                p => p,
            };
            let id = st.add_listener(ListenerState {
                port,
                event: event.clone(),
                listening: Vec::new(),
                ready: Default::default(),
                notified: false,
            });
            st.refill_listener(id, &shared.cfg);
            (id, port)
        };
        shared.kick();
        Ok(TcpListener {
            shared,
            id,
            port,
            event,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.shared.cfg.ip, self.port))
    }

    /// The descriptor to poll: readable when a connection may be ready.
    pub fn fd(&self) -> RawFd {
        self.event.fd()
    }

    /// An established connection, or `WouldBlock`.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let event = Arc::new(EventFd::new().map_err(os_err("eventfd"))?);
        let (handle, peer) = {
            let mut st = self.shared.lock();
            let st = &mut *st;
            let l = st
                .listeners
                .get_mut(&self.id)
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
            let Some(handle) = l.ready.pop_front() else {
                l.notified = false;
                self.event.drain();
                return Err(io::ErrorKind::WouldBlock.into());
            };
            let peer = st.sockets.get::<tcp::Socket>(handle).remote_endpoint();
            st.watch(handle, event.clone(), false);
            (handle, peer)
        };
        event.notify();
        let stream = TcpStream::accepted(self.shared.clone(), handle, event);
        match peer {
            Some(p) => Ok((stream, v4(p))),
            None => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection reset before accept",
            )),
        }
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(l) = st.listeners.remove(&self.id) {
            for h in l.listening.into_iter().chain(l.ready) {
                st.sockets.get_mut::<tcp::Socket>(h).abort();
                st.orphan(h);
            }
        }
        drop(st);
        self.shared.kick();
    }
}
