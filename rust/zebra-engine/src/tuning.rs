//! Kernel TCP sockets set up as libzmq sets them up from a socket's options:
//! buffer sizes (`ZMQ_SNDBUF`, `ZMQ_RCVBUF`), the listen backlog
//! (`ZMQ_BACKLOG`), the IP type of service (`ZMQ_TOS`), keep-alives
//! (`ZMQ_TCP_KEEPALIVE*`), the retransmission limit (`ZMQ_TCP_MAXRT`), the
//! device (`ZMQ_BINDTODEVICE`), and a connect's source address
//! (`tcp://source;host:port`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};

/// The kernel settings a socket's options ask for; -1 (0 for `tos` and
/// `maxrt`) leaves the kernel's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TcpTuning {
    pub sndbuf: i32,
    pub rcvbuf: i32,
    pub backlog: i32,
    pub tos: i32,
    /// -1 the kernel's, 0 off, 1 on (with the three below where not -1).
    pub keepalive: i32,
    pub keepalive_cnt: i32,
    pub keepalive_idle: i32,
    pub keepalive_intvl: i32,
    /// `TCP_USER_TIMEOUT` in ms.
    pub maxrt: i32,
    /// `SO_BINDTODEVICE`: the interface listeners and connections are bound
    /// to (a device that does not exist fails the bind with `ENODEV`, and
    /// every connect).
    pub device: Option<String>,
}

/// Logs a setting the kernel refused; libzmq goes on without it too.
fn note(what: &str, r: io::Result<()>) {
    if let Err(e) = r {
        log::debug!("zebra-engine: {what}: {e}");
    }
}

impl TcpTuning {
    fn buffers(&self, s: &SockRef<'_>) {
        if self.sndbuf >= 0 {
            note("SO_SNDBUF", s.set_send_buffer_size(self.sndbuf as usize));
        }
        if self.rcvbuf >= 0 {
            note("SO_RCVBUF", s.set_recv_buffer_size(self.rcvbuf as usize));
        }
    }

    fn tos(&self, s: &SockRef<'_>, addr: &SocketAddr) {
        if self.tos != 0 {
            let r = if addr.is_ipv4() {
                s.set_tos(self.tos as u32)
            } else {
                s.set_tclass_v6(self.tos as u32)
            };
            note("IP_TOS", r);
        }
    }

    /// Keep-alives and the retransmission limit of a connection.
    fn connection(&self, s: &SockRef<'_>) {
        match self.keepalive {
            0 => note("SO_KEEPALIVE", s.set_keepalive(false)),
            1 => {
                let mut k = TcpKeepalive::new();
                if self.keepalive_idle > 0 {
                    k = k.with_time(Duration::from_secs(self.keepalive_idle as u64));
                }
                if self.keepalive_intvl > 0 {
                    k = k.with_interval(Duration::from_secs(self.keepalive_intvl as u64));
                }
                if self.keepalive_cnt > 0 {
                    k = k.with_retries(self.keepalive_cnt as u32);
                }
                note("TCP keep-alive", s.set_tcp_keepalive(&k));
            }
            _ => {}
        }
        if self.maxrt > 0 {
            let maxrt = Duration::from_millis(self.maxrt as u64);
            note("TCP_USER_TIMEOUT", s.set_tcp_user_timeout(Some(maxrt)));
        }
    }

    fn device(&self, socket: &Socket) -> io::Result<()> {
        match &self.device {
            Some(d) => socket.bind_device(Some(d.as_bytes())),
            None => Ok(()),
        }
    }

    /// Sets up a connection a listener accepted (its buffer sizes came
    /// from the listener).
    pub fn accepted(&self, stream: &impl AsFd) {
        let s = SockRef::from(stream);
        if let Some(addr) = s.local_addr().ok().and_then(|a| a.as_socket()) {
            self.tos(&s, &addr);
        }
        self.connection(&s);
    }

    /// A listening socket on `addr`, set up before it listens.
    pub fn listen(&self, addr: SocketAddr) -> io::Result<mio::net::TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        let s = SockRef::from(&socket);
        self.tos(&s, &addr);
        self.buffers(&s);
        self.device(&socket)?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(self.backlog)?;
        Ok(mio::net::TcpListener::from_std(socket.into()))
    }

    /// Starts connecting to `addr`, set up before it connects, from
    /// `source` if given (bound with `SO_REUSEADDR` first, as libzmq).
    pub fn connect(
        &self,
        addr: SocketAddr,
        source: Option<SocketAddr>,
    ) -> io::Result<mio::net::TcpStream> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        let s = SockRef::from(&socket);
        self.tos(&s, &addr);
        self.buffers(&s);
        self.connection(&s);
        self.device(&socket)?;
        if let Some(source) = source {
            socket.set_reuse_address(true)?;
            socket.bind(&source.into())?;
        }
        match socket.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        Ok(mio::net::TcpStream::from_std(socket.into()))
    }
}
