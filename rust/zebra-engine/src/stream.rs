//! One kernel stream (TCP or Unix) carrying one ZMTP connection: reads
//! feed [`zebra_zmtp::Connection`], its output is written with `sendmsg`
//! without copying large bodies, and a bounded batch of queued messages is
//! handed to it whenever the wire is idle.
//!
//! Receiving copies nothing in user space: the I/O thread reads into a
//! shared [`ReadBuf`], and every message body that arrives whole in one
//! read is a slice of it; the rest of a large body is read by the kernel
//! straight into the body's own buffer.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use socket2::SockRef;
use zebra_zmtp::{Connection, Event, PeerInfo};

/// A message to send: its parts in order (up to four without an
/// allocation).
pub(crate) type Msg = smallvec::SmallVec<[Bytes; 4]>;

/// Received message parts with their MORE flags: whole messages, in order.
pub(crate) type Parts = Vec<(Bytes, bool)>;

/// Messages waiting for the encoder, with their size in bytes.
#[derive(Debug, Default)]
pub(crate) struct OutQueue {
    msgs: VecDeque<Msg>,
    bytes: usize,
}

/// The size of a message's parts.
pub(crate) fn msg_len(msg: &Msg) -> usize {
    msg.iter().map(Bytes::len).sum()
}

impl OutQueue {
    pub fn push_back(&mut self, msg: Msg) {
        self.bytes += msg_len(&msg);
        self.msgs.push_back(msg);
    }

    pub fn pop_front(&mut self) -> Option<Msg> {
        let msg = self.msgs.pop_front()?;
        self.bytes -= msg_len(&msg);
        Some(msg)
    }

    /// Messages queued.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Bytes of the messages queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Drops every message.
    pub fn clear(&mut self) {
        self.take_all();
    }

    /// Takes every message out.
    pub fn take_all(&mut self) -> VecDeque<Msg> {
        self.bytes = 0;
        std::mem::take(&mut self.msgs)
    }
}

/// Bytes of queued messages handed to the encoder at once.
const BATCH_BYTES: usize = 256 * 1024;
/// Most chunks in one `sendmsg`.
const MAX_IOV: usize = 64;
/// Size of each read buffer allocation. Small bodies are slices of it, so
/// one that the application keeps alive keeps (at most) this much memory.
const READ_CHUNK: usize = 64 * 1024;
/// A read buffer with less room than this is replaced before reading.
const MIN_READ: usize = 8 * 1024;
/// A body missing at least this much is read straight into its buffer.
const DIRECT_READ_MIN: usize = 16 * 1024;
/// The read after at least [`SHORT_READ_AFTER`] bytes of a body were read
/// straight into it is at most this long: such messages tend to follow
/// each other, and the part of the next body that this read brings in is
/// copied once (and the read buffer is used up, and zero-filled again,
/// that much slower).
const READ_AFTER_DIRECT: usize = 8 * 1024;
/// See [`READ_AFTER_DIRECT`].
const SHORT_READ_AFTER: usize = 32 * 1024;
/// Most bytes a TCP stream waits for (`SO_RCVLOWAT`) before waking its
/// reader while a large body is missing (see [`NetConn::await_input`]): a
/// larger body is read in steps of this, its copy overlapping the arrival
/// of the rest (4 MiB messages on loopback: faster than with one wake-up
/// for the whole body).
const LOWAT_MAX: usize = 1 << 20;
/// How far ahead of the bytes received a large body reserves memory (see
/// [`zebra_zmtp::Config::reserve_ahead`]): bodies up to this size are read
/// into one buffer, allocated once.
pub(crate) const RESERVE_AHEAD: usize = 64 << 20;

/// An I/O thread's read buffer. Each read fills the front of the spare
/// room, and the bytes read are split off as shared [`Bytes`] that message
/// bodies slice; the allocation is reused once every slice is gone.
#[derive(Debug, Default)]
pub(crate) struct ReadBuf {
    /// Zero-filled room for the next reads (its length is the room).
    room: BytesMut,
}

impl ReadBuf {
    /// Room to read into: at least [`MIN_READ`] bytes.
    fn room(&mut self) -> &mut [u8] {
        if self.room.len() < MIN_READ {
            self.room.clear();
            if !self.room.try_reclaim(READ_CHUNK) {
                self.room = BytesMut::with_capacity(READ_CHUNK);
            }
            self.room.resize(READ_CHUNK, 0);
        }
        &mut self.room
    }

    /// Takes the first `n` bytes of the room, which a read just filled.
    fn take(&mut self, n: usize) -> Bytes {
        self.room.split_to(n).freeze()
    }
}

/// A connected (or connecting) stream. The `std` types (made from `mio`'s,
/// registered by file descriptor) let a large body be read into memory
/// that is not zero-filled first.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
    /// A connection of the user-level stack (`crate::transport`).
    Smol(zebra_net::TcpStream),
}

impl From<mio::net::TcpStream> for Stream {
    fn from(s: mio::net::TcpStream) -> Stream {
        Stream::Tcp(s.into())
    }
}

impl From<mio::net::UnixStream> for Stream {
    fn from(s: mio::net::UnixStream) -> Stream {
        Stream::Unix(s.into())
    }
}

impl Stream {
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&mut &*s).read(buf),
            Stream::Unix(s) => (&mut &*s).read(buf),
            Stream::Smol(s) => s.recv(buf),
        }
    }

    /// Reads the rest of the body `zmtp` is receiving straight into it,
    /// at most `max` bytes.
    fn read_body(&self, zmtp: &mut Connection, max: usize) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => zmtp.read_body_from(&mut s.take(max as u64)),
            Stream::Unix(s) => zmtp.read_body_from(&mut s.take(max as u64)),
            Stream::Smol(s) => zmtp.read_body_from(&mut s.take(max as u64)),
        }
    }

    /// Sets `SO_RCVLOWAT` on TCP; a no-op on the others (whose readiness
    /// does not follow it).
    fn set_recv_lowat(&self, bytes: usize) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => zebra_net::sys::set_recv_lowat(s, bytes),
            Stream::Unix(_) | Stream::Smol(_) => Ok(()),
        }
    }

    /// Writes kernel streams with `sendmsg(MSG_NOSIGNAL)`: a peer that is gone is an
    /// error (`EPIPE`), never a SIGPIPE, whose default action kills the process (a C++
    /// PS-lite process keeps it; `writev` would raise it). The user-level stack's
    /// streams raise no signal.
    fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => SockRef::from(s).send_vectored_with_flags(bufs, libc::MSG_NOSIGNAL),
            Stream::Unix(s) => SockRef::from(s).send_vectored_with_flags(bufs, libc::MSG_NOSIGNAL),
            Stream::Smol(s) => s.send_vectored(bufs),
        }
    }

    /// Stops polling the stream (which `Source` does through `&mut`).
    pub fn deregister_from(&self, registry: &Registry) -> io::Result<()> {
        SourceFd(&self.fd()).deregister(registry)
    }

    /// The file descriptor, as monitor events report it.
    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Smol(s) => s.fd(),
        }
    }

    /// Whether a non-blocking connect has completed; an error if it failed.
    fn poll_connected(&self) -> io::Result<bool> {
        let error = match self {
            Stream::Tcp(s) => s.take_error()?,
            Stream::Unix(s) => s.take_error()?,
            Stream::Smol(s) => return s.poll_connected(),
        };
        if let Some(e) = error {
            return Err(e);
        }
        let peer = match self {
            Stream::Tcp(s) => s.peer_addr().map(|_| ()),
            Stream::Unix(s) => s.peer_addr().map(|_| ()),
            Stream::Smol(_) => Ok(()),
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
            Stream::Smol(s) => s
                .peer_addr()
                .map_or_else(|_| "tcp peer".to_owned(), |a| a.to_string()),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        SourceFd(&self.fd()).register(r, t, i)
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        SourceFd(&self.fd()).reregister(r, t, i)
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        SourceFd(&self.fd()).deregister(r)
    }
}

/// A listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(mio::net::TcpListener),
    Unix(mio::net::UnixListener),
    /// A listening port of the user-level stack (`crate::transport`).
    Smol(zebra_net::TcpListener),
}

impl Listener {
    /// Accepts one pending connection.
    pub fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| s.into()),
            Listener::Unix(l) => l.accept().map(|(s, _)| s.into()),
            Listener::Smol(l) => l.accept().map(|(s, _)| Stream::Smol(s)),
        }
    }

    /// The file descriptor, as monitor events report it.
    pub fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Smol(l) => l.fd(),
        }
    }
}

impl Source for Listener {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.register(r, t, i),
            Listener::Unix(l) => l.register(r, t, i),
            Listener::Smol(l) => SourceFd(&l.fd()).register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.reregister(r, t, i),
            Listener::Unix(l) => l.reregister(r, t, i),
            Listener::Smol(l) => SourceFd(&l.fd()).reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.deregister(r),
            Listener::Unix(l) => l.deregister(r),
            Listener::Smol(l) => SourceFd(&l.fd()).deregister(r),
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
    /// Complete messages received (their parts go to the caller's
    /// [`Parts`]).
    pub messages: usize,
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
    /// The stream's registration must change to this (`true`: READABLE and
    /// WRITABLE; [`NetConn::interest_change`]).
    pub interest: Option<bool>,
}

/// A stream with its ZMTP state.
///
/// Writing happens without the pipe's lock: the writer takes chunks out
/// ([`prepare_write`](Self::prepare_write)), releases the lock for the
/// `sendmsg` ([`WriteJob::write`]), and puts back what the kernel did not
/// take ([`finish_write`](Self::finish_write)); meanwhile other threads
/// may encode more output but do not write.
#[derive(Debug)]
pub(crate) struct NetConn {
    /// Shared with a writer that runs without the pipe lock.
    pub stream: Arc<Stream>,
    pub token: Token,
    pub connected: bool,
    /// The last write hit `EWOULDBLOCK`; the reactor resumes on writable.
    pub blocked: bool,
    /// A thread is writing chunks taken out of this connection.
    pub writing: bool,
    /// Writable events seen: a write that would block does not mark the
    /// connection blocked if one came while it was under way.
    pub writable_events: u64,
    /// A write failure seen outside the reactor, for the reactor to act on.
    pub failed: Option<io::Error>,
    /// The stream is registered for WRITABLE as well as READABLE
    /// ([`wants_write_interest`](Self::wants_write_interest)).
    pub write_interest: bool,
    pub peer: String,
    pub fd: RawFd,
    /// The handshake completed at some point (the ZMTP state forgets it
    /// once the stream ends).
    pub handshaken: bool,
    zmtp: Connection,
    wbuf: VecDeque<Bytes>,
    /// The chunk list a write job takes, kept for reuse.
    spare: Vec<Bytes>,
    /// The last read that brought bytes went straight into a body, for at
    /// least [`SHORT_READ_AFTER`] bytes.
    read_direct: bool,
    /// The stream's `SO_RCVLOWAT` (1: the kernel's default).
    recv_lowat: usize,
}

/// Chunks taken out of a connection to be written without the pipe lock.
#[derive(Debug)]
pub(crate) struct WriteJob {
    stream: Arc<Stream>,
    chunks: Vec<Bytes>,
    writable_events: u64,
}

impl WriteJob {
    /// One `sendmsg` of the chunks (retried if interrupted).
    pub fn write(&self) -> io::Result<usize> {
        let mut slices = [IoSlice::new(&[]); MAX_IOV];
        for (slot, chunk) in slices.iter_mut().zip(&self.chunks) {
            *slot = IoSlice::new(chunk);
        }
        loop {
            match self.stream.write_vectored(&slices[..self.chunks.len()]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
}

impl NetConn {
    /// Whether the reactor should watch this stream for write space: always for
    /// TCP and the user-level stack's streams (their writable edges come only
    /// after a write found the buffer full, or share one event descriptor);
    /// for a Unix stream only until it is connected and while a write waits
    /// for room, because the kernel signals a Unix stream's writer whenever
    /// its reader takes data: with WRITABLE always on, every message woke the
    /// sender's I/O thread once for nothing (an `epoll_wait` return and a
    /// `recvfrom` with `EAGAIN`, 2-3 us of small-message latency on two cores).
    pub fn wants_write_interest(&self) -> bool {
        !matches!(*self.stream, Stream::Unix(_)) || !self.connected || self.blocked
    }

    /// The registered interest is not the one wanted now.
    pub fn interest_stale(&self) -> bool {
        self.wants_write_interest() != self.write_interest
    }

    /// The interest to register now, if it differs from the registered one
    /// (which it then becomes; the caller registers it).
    pub fn interest_change(&mut self) -> Option<bool> {
        self.interest_stale().then(|| {
            self.write_interest = !self.write_interest;
            self.write_interest
        })
    }

    /// A connection over `stream` (connected already, or connecting).
    pub fn new(stream: Stream, token: Token, zmtp: Connection, connected: bool) -> NetConn {
        let fd = stream.fd();
        let peer = if connected {
            stream.describe_peer()
        } else {
            "peer".to_owned()
        };
        NetConn {
            stream: Arc::new(stream),
            token,
            connected,
            blocked: false,
            writing: false,
            writable_events: 0,
            failed: None,
            write_interest: true,
            peer,
            fd,
            handshaken: false,
            zmtp,
            wbuf: VecDeque::new(),
            spare: Vec::with_capacity(MAX_IOV),
            read_direct: false,
            recv_lowat: 1,
        }
    }

    /// Whether bytes are still waiting to be written (or being written).
    pub fn has_pending_output(&self) -> bool {
        self.writing || !self.wbuf.is_empty() || self.zmtp.pending_output() > 0
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

    /// Takes the next chunks to write, handing queued messages to the
    /// encoder in batches once the handshake is done (`moved` counts the
    /// messages taken from `out`). `None`: nothing to write, or writing is
    /// not possible now (not connected, kernel buffer full, another writer).
    pub fn prepare_write(
        &mut self,
        out: &mut OutQueue,
        moved: &mut usize,
    ) -> io::Result<Option<WriteJob>> {
        if !self.connected || self.blocked || self.writing || self.failed.is_some() {
            return Ok(None);
        }
        loop {
            while self.wbuf.len() < MAX_IOV {
                match self.zmtp.poll_output() {
                    Some(chunk) if chunk.is_empty() => {}
                    Some(chunk) => self.wbuf.push_back(chunk),
                    None => break,
                }
            }
            if !self.wbuf.is_empty() {
                break;
            }
            if !self.zmtp.is_handshake_done() || out.is_empty() {
                return Ok(None);
            }
            let mut bytes = 0;
            while let Some(mut msg) = out.pop_front() {
                bytes += msg_len(&msg);
                *moved += 1;
                self.encode(&mut msg)?;
                if bytes >= BATCH_BYTES {
                    break;
                }
            }
        }
        let mut chunks = std::mem::take(&mut self.spare);
        let n = self.wbuf.len().min(MAX_IOV);
        chunks.extend(self.wbuf.drain(..n));
        self.writing = true;
        Ok(Some(WriteJob {
            stream: self.stream.clone(),
            chunks,
            writable_events: self.writable_events,
        }))
    }

    /// Takes back a write job with what its `sendmsg` returned: the chunks
    /// the kernel did not take go back to the front of the output.
    pub fn finish_write(&mut self, job: WriteJob, result: io::Result<usize>) -> io::Result<()> {
        self.writing = false;
        let mut chunks = job.chunks;
        let (mut left, result) = match result {
            Ok(0) => (0, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => (n, Ok(())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.blocked = self.writable_events == job.writable_events;
                (0, Ok(()))
            }
            Err(e) => (0, Err(e)),
        };
        let mut done = 0;
        while done < chunks.len() && left >= chunks[done].len() {
            left -= chunks[done].len();
            done += 1;
        }
        if let Some(partial) = chunks.get_mut(done) {
            partial.advance(left);
        }
        for chunk in chunks.drain(done..).rev() {
            self.wbuf.push_front(chunk);
        }
        chunks.clear();
        self.spare = chunks;
        result
    }

    /// Whether a message can go to the encoder at once: the handshake is
    /// done and the encoder's backlog is below a batch.
    pub fn can_encode(&self) -> bool {
        self.zmtp.is_handshake_done() && self.zmtp.pending_output() < BATCH_BYTES
    }

    /// Bytes encoded and not yet taken for writing.
    pub fn encoded(&self) -> usize {
        self.zmtp.pending_output()
    }

    /// Hands a message to the encoder (see [`can_encode`](Self::can_encode)),
    /// taking its parts out of `msg`; small parts are copied into the
    /// output, and released here.
    pub fn encode(&mut self, msg: &mut Msg) -> io::Result<()> {
        self.zmtp
            .send_message(msg.drain(..))
            .map_err(io::Error::other)
    }

    /// Reads until the stream would block, `budget` bytes were read, or
    /// `room` more messages would overflow the receiver (`None`: no limit).
    /// The parts of whole messages received are appended to `parts`.
    pub fn read(
        &mut self,
        buf: &mut ReadBuf,
        parts: &mut Parts,
        budget: usize,
        room: Option<usize>,
        turn: &mut Turn,
    ) {
        let mut left = budget;
        loop {
            if room.is_some_and(|r| turn.messages >= r) {
                turn.paused = true;
                return;
            }
            if left == 0 {
                turn.more = true;
                return;
            }
            let missing = self.zmtp.body_missing();
            let direct = missing >= DIRECT_READ_MIN;
            let read = if direct {
                self.stream.read_body(&mut self.zmtp, left)
            } else {
                let room = buf.room();
                let len = if self.read_direct {
                    READ_AFTER_DIRECT
                } else {
                    room.len()
                };
                self.stream.read(&mut room[..len])
            };
            let n = match read {
                Ok(0) => {
                    turn.failure = Some(match self.zmtp.handle_eof() {
                        Ok(()) => Failure::Eof,
                        Err(e) => Failure::Protocol(e),
                    });
                    self.drain_events(parts, turn);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = self.await_input() {
                        turn.failure = Some(Failure::Io(e));
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    turn.failure = Some(Failure::Io(e));
                    return;
                }
            };
            left = left.saturating_sub(n);
            self.read_direct = direct && missing >= SHORT_READ_AFTER;
            let result = if direct {
                Ok(())
            } else {
                self.zmtp.handle_input_bytes(buf.take(n))
            };
            self.drain_events(parts, turn);
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

    /// Sets how much input wakes the reader next: while a large body is
    /// missing, the rest of it (at most [`LOWAT_MAX`]), else any byte. The
    /// body is read in one go instead of one read (and one wake-up) per
    /// burst of segments, and, what matters more, the kernel acknowledges
    /// each segment at once while fewer bytes than the mark wait unread,
    /// instead of when the reader next reads: with BBR (paced, and this
    /// machine's default) late acknowledgements lower the sender's
    /// bandwidth estimate and so its pace, and a reader that keeps catching
    /// up with a slowed sender keeps it slow (1 MiB messages on loopback:
    /// docs/BENCHMARKS.md, run 7). Only bytes the decoder needs for the
    /// current frame are waited for, so nothing stalls; a peer that closes
    /// or fails wakes the reader regardless.
    fn await_input(&mut self) -> io::Result<()> {
        let missing = self.zmtp.body_missing();
        let lowat = if missing >= DIRECT_READ_MIN {
            missing.min(LOWAT_MAX)
        } else {
            1
        };
        if lowat != self.recv_lowat {
            self.stream.set_recv_lowat(lowat)?;
            self.recv_lowat = lowat;
        }
        Ok(())
    }

    fn drain_events(&mut self, parts: &mut Parts, turn: &mut Turn) {
        loop {
            while let Some((part, more)) = self.zmtp.poll_message_part() {
                turn.messages += usize::from(!more);
                parts.push((part, more));
            }
            match self.zmtp.poll_event() {
                Some(Event::HandshakeDone(peer)) => {
                    self.handshaken = true;
                    turn.handshake = Some(peer);
                }
                Some(Event::PeerError { reason }) => {
                    turn.failure.get_or_insert(Failure::PeerError(reason));
                }
                Some(Event::Message(_) | Event::Ping { .. } | Event::Pong { .. }) => {}
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    /// Writes to `stream` until a write fails with `EPIPE`, the error that comes with a
    /// SIGPIPE (a reset TCP connection's first failed write reports the reset instead).
    fn write_until_broken_pipe(stream: &Stream) {
        let data = [7u8; 1024];
        for _ in 0..1000 {
            match stream.write_vectored(&[IoSlice::new(&data), IoSlice::new(&data)]) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return,
                Ok(_) | Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        panic!("1000 writes to a stream whose peer is gone, and no EPIPE");
    }

    fn conn(stream: Stream) -> NetConn {
        let zmtp =
            zebra_zmtp::Connection::new(zebra_zmtp::Config::new(zebra_zmtp::SocketType::Dealer))
                .expect("a ZMTP connection");
        NetConn::new(stream, mio::Token(1), zmtp, true)
    }

    /// A connected Unix stream is watched for write space only while a write waits for
    /// it (its writer is signalled whenever the reader takes data); TCP always.
    #[test]
    fn only_a_blocked_unix_stream_wants_write_space() {
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let mut unix = conn(Stream::Unix(ours));
        assert_eq!(
            unix.interest_change(),
            Some(false),
            "registered with both at first"
        );
        assert_eq!(unix.interest_change(), None);
        unix.blocked = true;
        assert_eq!(unix.interest_change(), Some(true));
        unix.blocked = false;
        assert_eq!(unix.interest_change(), Some(false));
        unix.connected = false;
        assert!(
            unix.wants_write_interest(),
            "a connect completes on write space"
        );

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let mut tcp = conn(Stream::Tcp(client));
        assert_eq!(tcp.interest_change(), None);
        assert!(tcp.wants_write_interest());
    }

    /// A write to a stream whose peer is gone fails with an error instead of raising
    /// SIGPIPE, whose default action kills the process: a C++ PS-lite process keeps that
    /// action. The Rust runtime ignores SIGPIPE, so the writes run in a child process that
    /// puts the default action back.
    #[test]
    fn a_write_after_the_peer_is_gone_is_an_error_not_a_sigpipe() {
        let Some(child) = zebra_thread::testing::in_child(Duration::from_secs(30), || {
            signal_hook::flag::register_conditional_default(
                signal_hook::consts::SIGPIPE,
                Arc::new(AtomicBool::new(true)),
            )
            .expect("SIGPIPE's default action");

            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
            let client = std::net::TcpStream::connect(listener.local_addr().expect("address"))
                .expect("connect");
            let (server, _) = listener.accept().expect("accept");
            // Closing with a zero linger time resets the connection.
            socket2::SockRef::from(&server)
                .set_linger(Some(Duration::ZERO))
                .expect("SO_LINGER");
            drop(server);
            write_until_broken_pipe(&Stream::Tcp(client));

            let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
            drop(theirs);
            write_until_broken_pipe(&Stream::Unix(ours));
        }) else {
            return;
        };
        assert!(child.passed(), "{child}");
    }
}
