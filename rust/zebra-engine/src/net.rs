//! One kernel stream (TCP or Unix) carrying one ZMTP connection: reads
//! feed [`zebra_zmtp::Connection`], its output is written with `writev`
//! without copying large bodies, and a bounded batch of queued messages is
//! handed to it whenever the wire is idle.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

use bytes::{Buf, Bytes};
use mio::event::Source;
use mio::{Interest, Registry, Token};
use zebra_zmtp::{Connection, Event, PeerInfo};

/// A message: its parts in order.
pub(crate) type Msg = Vec<Bytes>;

/// Bytes of queued messages handed to the encoder at once.
const BATCH_BYTES: usize = 256 * 1024;
/// Most chunks in one `writev`.
const MAX_IOV: usize = 64;

/// A connected (or connecting) stream.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    /// The file descriptor, as monitor events report it.
    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    /// Whether a non-blocking connect has completed; an error if it failed.
    fn poll_connected(&self) -> io::Result<bool> {
        let error = match self {
            Stream::Tcp(s) => s.take_error()?,
            Stream::Unix(s) => s.take_error()?,
        };
        if let Some(e) = error {
            return Err(e);
        }
        let peer = match self {
            Stream::Tcp(s) => s.peer_addr().map(|_| ()),
            Stream::Unix(s) => s.peer_addr().map(|_| ()),
        };
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Turns Nagle off on TCP (no-op on Unix sockets).
    pub fn set_nodelay(&self) {
        if let Stream::Tcp(s) = self {
            if let Err(e) = s.set_nodelay(true) {
                log::debug!("zebra-engine: TCP_NODELAY: {e}");
            }
        }
    }

    /// The peer's address for log lines.
    pub fn describe_peer(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map_or_else(|_| "tcp peer".to_owned(), |a| a.to_string()),
            Stream::Unix(_) => "ipc peer".to_owned(),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
        }
    }
}

/// A listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(mio::net::TcpListener),
    Unix(mio::net::UnixListener),
}

impl Listener {
    /// Accepts one pending connection.
    pub fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
        }
    }

    /// The file descriptor, as monitor events report it.
    pub fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }
}

impl Source for Listener {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.register(r, t, i),
            Listener::Unix(l) => l.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.reregister(r, t, i),
            Listener::Unix(l) => l.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.deregister(r),
            Listener::Unix(l) => l.deregister(r),
        }
    }
}

/// Why a connection ends.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The peer closed the stream at a message boundary.
    Eof,
    /// A read or write failed.
    Io(io::Error),
    /// A non-blocking connect failed.
    ConnectFailed(io::Error),
    /// The peer broke the protocol.
    Protocol(zebra_zmtp::Error),
    /// The peer sent an ERROR command.
    PeerError(Bytes),
    /// No handshake within `ZMQ_HANDSHAKE_IVL`.
    HandshakeTimeout,
    /// The socket refused the peer (PAIR already paired, routing id taken).
    Rejected(&'static str),
}

impl Failure {
    /// Whether the peer misbehaved (logged as a warning).
    pub fn is_peer_fault(&self) -> bool {
        matches!(
            self,
            Failure::Protocol(_) | Failure::PeerError(_) | Failure::HandshakeTimeout
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Eof => f.write_str("closed by peer"),
            Failure::Io(e) => write!(f, "I/O error: {e}"),
            Failure::ConnectFailed(e) => write!(f, "connect failed: {e}"),
            Failure::Protocol(e) => write!(f, "protocol error: {e}"),
            Failure::PeerError(r) => write!(f, "peer sent ERROR {:?}", String::from_utf8_lossy(r)),
            Failure::HandshakeTimeout => f.write_str("handshake timed out"),
            Failure::Rejected(why) => write!(f, "refused: {why}"),
        }
    }
}

/// What one turn of I/O on a connection produced.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// The connect completed in this turn.
    pub connected_now: bool,
    /// The handshake completed in this turn.
    pub handshake: Option<PeerInfo>,
    /// Complete messages received, in order.
    pub messages: Vec<Msg>,
    /// The connection must be closed.
    pub failure: Option<Failure>,
    /// Reading stopped before the stream was drained.
    pub more: bool,
    /// Reading stopped because the receiver's queue is at its limit.
    pub paused: bool,
    /// Messages taken from the pipe's queue.
    pub moved: usize,
    /// The pipe is closing and everything is written.
    pub drained: bool,
}

/// A stream with its ZMTP state.
#[derive(Debug)]
pub(crate) struct NetConn {
    pub stream: Stream,
    pub token: Token,
    pub connected: bool,
    /// The last write hit `EWOULDBLOCK`; the reactor resumes on writable.
    pub blocked: bool,
    /// A write failure seen outside the reactor, for the reactor to act on.
    pub failed: Option<io::Error>,
    pub peer: String,
    pub fd: RawFd,
    /// The handshake completed at some point (the ZMTP state forgets it
    /// once the stream ends).
    pub handshaken: bool,
    zmtp: Connection,
    wbuf: VecDeque<Bytes>,
}

impl NetConn {
    /// A connection over `stream` (connected already, or connecting).
    pub fn new(stream: Stream, token: Token, zmtp: Connection, connected: bool) -> NetConn {
        let fd = stream.fd();
        let peer = if connected {
            stream.describe_peer()
        } else {
            "peer".to_owned()
        };
        NetConn {
            stream,
            token,
            connected,
            blocked: false,
            failed: None,
            peer,
            fd,
            handshaken: false,
            zmtp,
            wbuf: VecDeque::new(),
        }
    }

    /// Whether bytes are still waiting to be written.
    pub fn has_pending_output(&self) -> bool {
        !self.wbuf.is_empty() || self.zmtp.pending_output() > 0
    }

    /// Checks a non-blocking connect; true once connected.
    pub fn poll_connected(&mut self) -> io::Result<bool> {
        if self.connected {
            return Ok(true);
        }
        if self.stream.poll_connected()? {
            self.connected = true;
            self.stream.set_nodelay();
            self.peer = self.stream.describe_peer();
        }
        Ok(self.connected)
    }

    /// Writes what can be written without blocking, handing queued
    /// messages to the encoder in batches once the handshake is done.
    /// Returns the number of messages taken from `out`.
    pub fn flush(&mut self, out: &mut VecDeque<Msg>) -> io::Result<usize> {
        let mut moved = 0;
        if !self.connected || self.blocked {
            return Ok(0);
        }
        loop {
            while self.wbuf.len() < MAX_IOV {
                match self.zmtp.poll_output() {
                    Some(chunk) if chunk.is_empty() => {}
                    Some(chunk) => self.wbuf.push_back(chunk),
                    None => break,
                }
            }
            if self.wbuf.is_empty() {
                if !self.zmtp.is_handshake_done() || out.is_empty() {
                    return Ok(moved);
                }
                let mut bytes = 0;
                while let Some(msg) = out.pop_front() {
                    bytes += msg.iter().map(Bytes::len).sum::<usize>();
                    moved += 1;
                    if let Err(e) = self.zmtp.send_message(msg) {
                        return Err(io::Error::other(e));
                    }
                    if bytes >= BATCH_BYTES {
                        break;
                    }
                }
                continue;
            }
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = self.wbuf.len().min(MAX_IOV);
            for (slot, chunk) in slices.iter_mut().zip(self.wbuf.iter()) {
                *slot = IoSlice::new(chunk);
            }
            match self.stream.write_vectored(&slices[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(mut written) => {
                    while written > 0 {
                        let Some(front) = self.wbuf.front_mut() else {
                            break;
                        };
                        if written >= front.len() {
                            written -= front.len();
                            self.wbuf.pop_front();
                        } else {
                            front.advance(written);
                            written = 0;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.blocked = true;
                    return Ok(moved);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads until the stream would block, `budget` bytes were read, or
    /// `room` more messages would overflow the receiver (`None`: no limit).
    pub fn read(&mut self, buf: &mut [u8], budget: usize, room: Option<usize>, turn: &mut Turn) {
        let mut left = budget;
        loop {
            if room.is_some_and(|r| turn.messages.len() >= r) {
                turn.paused = true;
                return;
            }
            if left == 0 {
                turn.more = true;
                return;
            }
            let n = match self.stream.read(buf) {
                Ok(0) => {
                    turn.failure = Some(match self.zmtp.handle_eof() {
                        Ok(()) => Failure::Eof,
                        Err(e) => Failure::Protocol(e),
                    });
                    self.drain_events(turn);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    turn.failure = Some(Failure::Io(e));
                    return;
                }
            };
            left = left.saturating_sub(n);
            let result = self.zmtp.handle_input(&buf[..n]);
            self.drain_events(turn);
            if let Err(e) = result {
                turn.failure.get_or_insert(Failure::Protocol(e));
            }
            if turn.failure.is_some() {
                return;
            }
            if turn.handshake.is_some() {
                turn.more = true;
                return;
            }
        }
    }

    fn drain_events(&mut self, turn: &mut Turn) {
        while let Some(event) = self.zmtp.poll_event() {
            match event {
                Event::HandshakeDone(peer) => {
                    self.handshaken = true;
                    turn.handshake = Some(peer);
                }
                Event::Message(parts) => turn.messages.push(parts),
                Event::PeerError { reason } => {
                    turn.failure.get_or_insert(Failure::PeerError(reason));
                }
                Event::Ping { .. } | Event::Pong { .. } => {}
            }
        }
    }
}
