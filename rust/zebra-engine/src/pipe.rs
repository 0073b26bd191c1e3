//! A pipe is one peer of a socket: the queue of messages for that peer and
//! the transport that carries them, a kernel stream ([`NetConn`]) or a
//! direct link to another socket of the same context (inproc).
//!
//! A connecting pipe outlives its connections: messages queue in it while
//! the peer is away and go out after the next handshake, as in libzmq. An
//! accepted pipe lives and dies with its connection.
//!
//! Lock order: a pipe's state lock is taken after socket-level locks and
//! before only leaf locks (a receiving socket's queue, a reactor's command
//! list), never the other way round.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mio::{Registry, Token};

use crate::context::CtxState;
use crate::endpoint::Endpoint;
use crate::reactor::{Command, ReactorHandle};
use crate::socket::SocketCore;
use crate::stream::{msg_len, Failure, Msg, NetConn, OutQueue, Parts, ReadBuf, Turn};
use crate::tuning::TcpTuning;

/// Where a pipe came from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// `zmq_connect` to a TCP or IPC endpoint (reconnects).
    Connect { uri: String, endpoint: Endpoint },
    /// Accepted by the listener with this id.
    Accept { listener: u64, uri: String },
    /// One side of an inproc link.
    Inproc { uri: String },
}

impl Origin {
    /// The endpoint string monitor events carry.
    pub fn uri(&self) -> &str {
        match self {
            Origin::Connect { uri, .. }
            | Origin::Accept { uri, .. }
            | Origin::Inproc { uri, .. } => uri,
        }
    }
}

/// Options a pipe takes from its socket when it is made.
#[derive(Debug, Clone)]
pub(crate) struct PipeOptions {
    pub zmtp: zebra_zmtp::Config,
    /// `ZMQ_SNDHWM` (0: no limit).
    pub sndhwm: usize,
    /// `ZMQ_RCVHWM` (0: no limit).
    pub rcvhwm: usize,
    pub reconnect_ivl: i32,
    /// `ZMQ_RECONNECT_IVL_MAX` (0: no back-off).
    pub reconnect_ivl_max: i32,
    /// `ZMQ_IMMEDIATE`: a connecting DEALER or PAIR pipe takes messages only
    /// while connected.
    pub immediate: bool,
    pub handshake_ivl: i32,
    /// Kernel settings of a connecting pipe's TCP sockets.
    pub tcp: TcpTuning,
}

/// What carries a pipe's messages.
#[derive(Debug)]
pub(crate) enum Link {
    /// Nothing yet (connecting pipe between attempts, inproc before bind).
    Idle,
    /// A kernel stream.
    Net(Box<NetConn>),
    /// The peer socket's pipe for this link.
    Inproc(Weak<Pipe>),
}

/// The mutable part of a pipe.
#[derive(Debug)]
pub(crate) struct PipeState {
    /// Messages not yet handed to the transport.
    pub out: OutQueue,
    pub link: Link,
    /// The owner let go of the pipe; it ends once its queue is flushed.
    pub closing: bool,
    /// Counted in the context's lingering pipes (from `close` until the
    /// pipe ends), so that `zmq_ctx_term` waits for it.
    pub lingering: bool,
    /// Finished: nothing more goes in or out.
    pub terminated: bool,
    /// The I/O thread has been asked to write the queue.
    pub flush_scheduled: bool,
    /// When a write was last attempted (see [`Pipe::push`]).
    pub last_write: Option<Instant>,
    /// Senders waiting for the writer to finish (see [`Pipe::push`]).
    pub write_waiters: usize,
    /// Messages handed to the connection's encoder since its output was
    /// last all written to the kernel: they still take memory here, and
    /// count against `ZMQ_SNDHWM` with those in `out` (see
    /// [`PipeState::queued`]).
    pub encoding: usize,
}

impl PipeState {
    /// Whether messages or bytes are still waiting to go out.
    pub fn has_pending_output(&self) -> bool {
        !self.out.is_empty() || matches!(&self.link, Link::Net(c) if c.has_pending_output())
    }

    /// The messages this pipe holds in memory for its peer, counted
    /// against `ZMQ_SNDHWM`: those queued and those in the encoder, until
    /// their last byte is in the kernel's buffer. libzmq counts the
    /// messages in its pipe (and one batch in its encoder besides), so a
    /// sender's memory follows the high-water mark whatever the kernel
    /// buffers hold. A message partly written keeps the count of the
    /// messages encoded with it until the encoder's output is all
    /// written: at most one batch counts a little longer than it lives.
    pub fn queued(&self) -> usize {
        self.out.len() + self.encoding
    }

    /// Forgets the encoder's messages once its output is all written (or
    /// the connection gone).
    fn settle_encoding(&mut self) {
        if !matches!(&self.link, Link::Net(c) if c.has_pending_output()) {
            self.encoding = 0;
        }
    }
}

/// One peer of a socket.
#[derive(Debug)]
pub(crate) struct Pipe {
    pub id: u64,
    pub owner: Weak<SocketCore>,
    pub origin: Origin,
    pub options: PipeOptions,
    /// The I/O thread that owns this pipe's connections (TCP/IPC only),
    /// given by [`crate::reactor::Reactors::assign`].
    pub reactor: Option<Arc<ReactorHandle>>,
    pub ctx: Arc<CtxState>,
    /// The peer's routing id as the owning ROUTER knows it.
    pub identity: OnceLock<Bytes>,
    /// Messages from this pipe waiting in the owner's receive queue.
    pub in_flight: AtomicUsize,
    /// Most messages of this pipe the owner's queue may hold (0: no limit).
    pub in_limit: AtomicUsize,
    /// Reading stopped at `in_limit`; the receiver resumes it.
    pub read_paused: AtomicBool,
    /// The reconnect interval without its jitter (see
    /// [`Pipe::next_reconnect_interval`]).
    reconnect_current: AtomicI32,
    /// [`PipeState::queued`], for [`Pipe::can_write`] without the lock.
    queued: AtomicUsize,
    state: Mutex<PipeState>,
    /// Signalled when a writer puts its chunks back.
    write_done: Condvar,
}

/// Messages pushed closer together than this are written by the I/O
/// thread in batches rather than one system call each.
pub(crate) const STREAM_GAP: Duration = Duration::from_micros(20);

/// Past this many bytes waiting to be written, a sender of a large message
/// writes them itself (after the current writer, if there is one) rather
/// than queuing more: a sender that runs far ahead of the wire with large
/// messages keeps touching fresh memory, which costs more than the writing
/// it would leave to others. Small messages keep being queued (their
/// memory is recycled at once, and the I/O thread writes in parallel).
pub(crate) const BACKLOG_BYTES: usize = 1 << 20;

/// A message of at least this many bytes is large (see [`BACKLOG_BYTES`]).
pub(crate) const LARGE_MSG: usize = 16 * 1024;

/// Longest a sender of a large message waits, past [`BACKLOG_BYTES`], for
/// a connection whose kernel buffer is full to take bytes again (see
/// [`Pipe::push`]): about what a 10 Gbit/s link takes to drain a third of
/// a 4 MiB buffer, when the kernel reports room again. A peer that reads
/// slower than that costs its senders this much per large message, no
/// more.
pub(crate) const WIRE_WAIT: Duration = Duration::from_millis(2);

/// After a quiet spell, the calling thread writes at most this much
/// itself; more is left to the I/O thread, so that the caller can prepare
/// its next messages while the kernel copies these.
pub(crate) const DIRECT_WRITE_MAX: usize = 256 * 1024;

fn low_water_mark(limit: usize) -> usize {
    limit.div_ceil(2)
}

impl Pipe {
    /// A new pipe owned by `owner`.
    pub fn new(
        owner: &Arc<SocketCore>,
        origin: Origin,
        options: PipeOptions,
        reactor: Option<Arc<ReactorHandle>>,
    ) -> Arc<Pipe> {
        let in_limit = options.rcvhwm;
        let reconnect_ivl = options.reconnect_ivl;
        Arc::new(Pipe {
            id: owner.ctx.next_id(),
            owner: Arc::downgrade(owner),
            origin,
            options,
            reactor,
            ctx: owner.ctx.state.clone(),
            identity: OnceLock::new(),
            in_flight: AtomicUsize::new(0),
            in_limit: AtomicUsize::new(in_limit),
            reconnect_current: AtomicI32::new(reconnect_ivl),
            read_paused: AtomicBool::new(false),
            queued: AtomicUsize::new(0),
            state: Mutex::new(PipeState {
                out: OutQueue::default(),
                link: Link::Idle,
                closing: false,
                lingering: false,
                terminated: false,
                flush_scheduled: false,
                last_write: None,
                write_waiters: 0,
                encoding: 0,
            }),
            write_done: Condvar::new(),
        })
    }

    /// How long to wait before the next connect attempt, as libzmq: the
    /// current interval plus a jitter below `ZMQ_RECONNECT_IVL` (from
    /// `random`); with `ZMQ_RECONNECT_IVL_MAX` above `ZMQ_RECONNECT_IVL`,
    /// the current interval then doubles, up to it.
    pub fn next_reconnect_interval(&self, random: u64) -> i32 {
        let ivl = self.options.reconnect_ivl.max(1);
        let max = self.options.reconnect_ivl_max;
        let current = self.reconnect_current.load(Ordering::Relaxed);
        let jitter = (random % ivl as u64) as i32;
        if max > ivl {
            let next = if current < i32::MAX / 2 {
                (current * 2).min(max)
            } else {
                max
            };
            self.reconnect_current.store(next, Ordering::Relaxed);
        }
        current.saturating_add(jitter)
    }

    /// A connection was made: the next lost one is retried after
    /// `ZMQ_RECONNECT_IVL` again.
    pub fn reset_reconnect_interval(&self) {
        self.reconnect_current
            .store(self.options.reconnect_ivl, Ordering::Relaxed);
    }

    /// Drops the messages queued for the peer (a connection with
    /// `ZMQ_IMMEDIATE` was lost: libzmq ends its pipe).
    pub fn drop_queue(&self) {
        let mut st = self.lock();
        st.out.clear();
        st.settle_encoding();
        self.queued.store(st.queued(), Ordering::Release);
    }

    /// Locks the pipe's state.
    pub fn lock(&self) -> MutexGuard<'_, PipeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_inproc(&self) -> bool {
        matches!(self.origin, Origin::Inproc { .. })
    }

    /// Whether one more message fits (`ZMQ_SNDHWM` against
    /// [`PipeState::queued`]; for inproc, the peer's queue against both
    /// high-water marks, as libzmq).
    pub fn can_write(&self) -> bool {
        if self.is_inproc() {
            let st = self.lock();
            if st.closing || st.terminated {
                return false;
            }
            if let Link::Inproc(peer) = &st.link {
                return peer.upgrade().is_some_and(|p| {
                    let limit = p.in_limit.load(Ordering::Relaxed);
                    limit == 0 || p.in_flight.load(Ordering::Acquire) < limit
                });
            }
        }
        let limit = self.options.sndhwm;
        limit == 0 || self.queued.load(Ordering::Acquire) < limit
    }

    /// Queues a whole message for the peer. While nothing is queued before
    /// it and the encoder's backlog is small, the calling thread encodes it
    /// at once (small parts are copied and released by the thread that made
    /// them). The first message after a quiet spell is also written by the
    /// calling thread (no hand-off, lowest latency) unless more than
    /// [`DIRECT_WRITE_MAX`] bytes are waiting; while messages follow
    /// each other closer than [`STREAM_GAP`], writing is left to the I/O
    /// thread, which sends what accumulated in one `sendmsg`, unless the
    /// message is large and more than [`BACKLOG_BYTES`] are waiting: then
    /// the calling thread writes (after waiting for the current writer, if
    /// any), and if the kernel's buffer is full, it first waits (unless
    /// `dontwait`) until the I/O thread writes again, at most [`WIRE_WAIT`]:
    /// a sender that outruns the wire piles up messages in memory it has to
    /// touch fresh (1 MiB messages on loopback: 200 to 500 MB queued, a
    /// page fault per 4 KiB as the allocator hands it back and forth, and
    /// about half the throughput lost). The parts are taken out of `msg`.
    pub fn push(self: &Arc<Self>, msg: &mut Msg, dontwait: bool) {
        let mut st = self.lock();
        if st.terminated || st.closing {
            return;
        }
        if let Link::Inproc(peer) = &st.link {
            if let Some(peer) = peer.upgrade() {
                deliver_inproc(&peer, std::mem::take(msg));
            }
            return;
        }
        let mut command = None;
        let large = msg_len(msg) >= LARGE_MSG;
        let mut waited_for_wire = false;
        let PipeState {
            out,
            link,
            encoding,
            ..
        } = &mut *st;
        match link {
            Link::Net(conn)
                if conn.failed.is_none()
                    && conn.connected
                    && out.is_empty()
                    && conn.can_encode() =>
            {
                match conn.encode(msg) {
                    Ok(()) => *encoding += 1,
                    Err(e) => {
                        conn.failed = Some(e);
                        command = Some(Command::Kick(self.clone()));
                    }
                }
            }
            _ => out.push_back(std::mem::take(msg)),
        }
        loop {
            let PipeState {
                out,
                link,
                flush_scheduled,
                last_write,
                write_waiters,
                ..
            } = &mut *st;
            let Link::Net(conn) = link else {
                break;
            };
            if conn.failed.is_some() || !conn.connected {
                break;
            }
            let backlog = large && out.bytes() + conn.encoded() > BACKLOG_BYTES;
            if conn.blocked {
                if !backlog || dontwait || waited_for_wire {
                    break;
                }
                waited_for_wire = true;
                *write_waiters += 1;
                st = self
                    .write_done
                    .wait_timeout(st, WIRE_WAIT)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                st.write_waiters -= 1;
                continue;
            }
            if conn.writing {
                if !backlog {
                    break;
                }
                *write_waiters += 1;
                st = self.write_done.wait(st).unwrap_or_else(|e| e.into_inner());
                st.write_waiters -= 1;
                continue;
            }
            if !backlog && *flush_scheduled {
                break;
            }
            let now = Instant::now();
            let recent = last_write.is_some_and(|t| now.duration_since(t) < STREAM_GAP);
            if !backlog && (recent || conn.encoded() > DIRECT_WRITE_MAX) {
                *flush_scheduled = true;
                command = Some(Command::Flush(self.clone()));
                break;
            }
            *last_write = Some(now);
            let (written, _) = self.write_out(st);
            st = written;
            // A failure, or a write that found no room on a stream the reactor
            // does not watch for room yet: the reactor takes a turn.
            if matches!(&st.link, Link::Net(c) if c.failed.is_some() || c.interest_stale()) {
                command = Some(Command::Kick(self.clone()));
            }
            break;
        }
        self.queued.store(st.queued(), Ordering::Release);
        drop(st);
        if let (Some(c), Some(r)) = (command, &self.reactor) {
            r.send(c);
        }
    }

    /// Writes the connection's output (and queued messages, in batches)
    /// until all is written, the kernel buffer is full or another thread
    /// is writing; the lock is released around each `sendmsg`. Returns the
    /// lock, taken again, and the number of messages that stopped counting
    /// against `ZMQ_SNDHWM` ([`PipeState::queued`]). A write error is left
    /// in the connection's `failed`.
    fn write_out<'a>(
        &'a self,
        mut st: MutexGuard<'a, PipeState>,
    ) -> (MutexGuard<'a, PipeState>, usize) {
        let before = st.queued();
        let Link::Net(conn) = &st.link else {
            return (st, 0);
        };
        let token = conn.token;
        loop {
            let PipeState {
                out,
                link,
                encoding,
                ..
            } = &mut *st;
            let Link::Net(conn) = link else {
                break;
            };
            if conn.token != token {
                break;
            }
            let mut taken = 0;
            let job = conn.prepare_write(out, &mut taken);
            *encoding += taken;
            let job = match job {
                Ok(Some(job)) => job,
                Ok(None) => break,
                Err(e) => {
                    conn.failed = Some(e);
                    break;
                }
            };
            drop(st);
            let result = job.write();
            st = self.lock();
            if st.write_waiters > 0 {
                self.write_done.notify_all();
            }
            match &mut st.link {
                Link::Net(conn) if conn.token == token => {
                    if let Err(e) = conn.finish_write(job, result) {
                        conn.failed = Some(e);
                        break;
                    }
                }
                _ => break,
            }
        }
        st.settle_encoding();
        let freed = before.saturating_sub(st.queued());
        self.queued.store(st.queued(), Ordering::Release);
        (st, freed)
    }

    /// Writes what `push` left to the I/O thread. Returns the number of
    /// messages that stopped counting against `ZMQ_SNDHWM`.
    pub fn flush_deferred(self: &Arc<Self>) -> usize {
        let mut st = self.lock();
        st.flush_scheduled = false;
        st.last_write = Some(Instant::now());
        let (st, freed) = self.write_out(st);
        // As for an application thread's write: a failure, or no room on a
        // stream not watched for room, is the next turn's.
        let kick = matches!(&st.link, Link::Net(c) if c.failed.is_some() || c.interest_stale());
        drop(st);
        if kick {
            if let Some(r) = &self.reactor {
                r.send(Command::Kick(self.clone()));
            }
        }
        freed
    }

    /// The owner took `n` of this pipe's messages off its queue.
    pub fn consumed(self: &Arc<Self>, n: usize) {
        let before = self.in_flight.fetch_sub(n, Ordering::SeqCst);
        let limit = self.in_limit.load(Ordering::Relaxed);
        if limit == 0 {
            return;
        }
        if self.is_inproc() {
            if before >= limit {
                let peer = match &self.lock().link {
                    Link::Inproc(p) => p.upgrade(),
                    _ => None,
                };
                if let Some(owner) = peer.and_then(|p| p.owner.upgrade()) {
                    owner.changed();
                }
            }
        } else if before - n <= low_water_mark(limit)
            && self.read_paused.load(Ordering::SeqCst)
            && self.read_paused.swap(false, Ordering::SeqCst)
        {
            if let Some(r) = &self.reactor {
                r.send(Command::Resume(self.clone()));
            }
        }
    }

    /// Marks reading as paused at the receive limit. Returns true if the
    /// receiver drained meanwhile and reading should go on at once.
    pub fn pause_reading(&self) -> bool {
        self.read_paused.store(true, Ordering::SeqCst);
        let limit = self.in_limit.load(Ordering::Relaxed);
        self.in_flight.load(Ordering::SeqCst) <= low_water_mark(limit)
            && self.read_paused.swap(false, Ordering::SeqCst)
    }

    /// One turn of I/O on the pipe's connection, if `token` is still its
    /// connection. Runs on the pipe's reactor.
    pub fn io_turn(
        &self,
        token: Token,
        writable: bool,
        buf: &mut ReadBuf,
        parts: &mut Parts,
        budget: usize,
    ) -> Option<(Turn, i32)> {
        let mut st = self.lock();
        let Link::Net(conn) = &mut st.link else {
            return None;
        };
        if conn.token != token {
            return None;
        }
        let mut turn = Turn::default();
        if let Some(e) = conn.failed.take() {
            turn.failure = Some(Failure::Io(e));
            return Some((turn, conn.fd));
        }
        if !conn.connected {
            match conn.poll_connected() {
                Ok(true) => turn.connected_now = true,
                Ok(false) => return Some((turn, conn.fd)),
                Err(e) => {
                    turn.failure = Some(Failure::ConnectFailed(e));
                    return Some((turn, conn.fd));
                }
            }
        }
        if writable {
            conn.blocked = false;
            conn.writable_events += 1;
        }
        let limit = self.in_limit.load(Ordering::Relaxed);
        let room =
            (limit > 0).then(|| limit.saturating_sub(self.in_flight.load(Ordering::Acquire)));
        conn.read(buf, parts, budget, room, &mut turn);
        let fd = conn.fd;
        if turn.failure.is_some() {
            return Some((turn, fd));
        }
        let (mut st, freed) = self.write_out(st);
        turn.moved = freed;
        let PipeState {
            out, link, closing, ..
        } = &mut *st;
        if let Link::Net(conn) = link {
            if conn.token == token {
                if let Some(e) = conn.failed.take() {
                    turn.failure = Some(Failure::Io(e));
                }
                turn.drained = *closing && out.is_empty() && !conn.has_pending_output();
                turn.interest = conn.interest_change();
            }
        }
        Some((turn, fd))
    }

    /// Takes the pipe's connection if it is the one behind `token`.
    pub fn take_conn(&self, token: Token) -> Option<Box<NetConn>> {
        let mut st = self.lock();
        match &st.link {
            Link::Net(c) if c.token == token => {
                let Link::Net(c) = std::mem::replace(&mut st.link, Link::Idle) else {
                    return None;
                };
                st.settle_encoding();
                self.queued.store(st.queued(), Ordering::Release);
                Some(c)
            }
            _ => None,
        }
    }

    /// Installs a new connection (reactor side). Refused, and handed
    /// back, if the pipe has ended meanwhile.
    pub fn set_conn(&self, conn: NetConn) -> Result<(), Box<NetConn>> {
        let mut st = self.lock();
        if st.terminated {
            return Err(Box::new(conn));
        }
        st.link = Link::Net(Box::new(conn));
        Ok(())
    }

    /// Ends the pipe now: drops its queue and its connection (deregistered
    /// from `registry`). Returns the dropped connection's token.
    pub fn finish(&self, registry: Option<&Registry>) -> Option<Token> {
        let mut st = self.lock();
        if st.terminated {
            return None;
        }
        st.terminated = true;
        st.out.clear();
        st.encoding = 0;
        self.queued.store(0, Ordering::Release);
        let link = std::mem::replace(&mut st.link, Link::Idle);
        let lingering = std::mem::take(&mut st.lingering);
        drop(st);
        let mut token = None;
        match link {
            Link::Net(conn) => {
                if let Some(r) = registry {
                    if let Err(e) = conn.stream.deregister_from(r) {
                        log::debug!("zebra-engine: deregister: {e}");
                    }
                }
                token = Some(conn.token);
            }
            Link::Inproc(peer) => {
                if let Some(peer) = peer.upgrade() {
                    peer.unlink_inproc(self);
                }
            }
            Link::Idle => {}
        }
        if lingering {
            self.ctx.linger_done();
        }
        if let Some(r) = &self.reactor {
            r.unassign();
        }
        if let Some(owner) = self.owner.upgrade() {
            owner.forget_pipe(self);
        }
        token
    }

    /// The token of the current connection, if any.
    pub fn conn_token(&self) -> Option<Token> {
        match &self.lock().link {
            Link::Net(c) => Some(c.token),
            _ => None,
        }
    }

    /// Whether the connection behind `token` has not finished its handshake.
    pub fn handshake_pending(&self, token: Token) -> bool {
        matches!(&self.lock().link, Link::Net(c) if c.token == token && !c.handshaken)
    }

    /// The inproc peer `gone` ended: this side ends too.
    fn unlink_inproc(&self, gone: &Pipe) {
        let mut st = self.lock();
        let linked_to_gone = matches!(&st.link, Link::Inproc(p) if std::ptr::eq(p.as_ptr(), gone));
        if !linked_to_gone || st.terminated {
            return;
        }
        st.link = Link::Idle;
        st.terminated = true;
        st.out.clear();
        drop(st);
        if let Some(owner) = self.owner.upgrade() {
            owner.forget_pipe(self);
        }
    }

    /// Links a pending inproc pipe to its peer pipe and delivers what was
    /// queued before the bind.
    pub fn link_inproc(&self, peer: &Arc<Pipe>) -> bool {
        let mut st = self.lock();
        if st.terminated || st.closing {
            return false;
        }
        st.link = Link::Inproc(Arc::downgrade(peer));
        let queued = st.out.take_all();
        self.queued.store(0, Ordering::Release);
        for msg in queued {
            deliver_inproc(peer, msg);
        }
        true
    }

    /// Starts closing with the owner's linger: inproc pipes end at once
    /// (what they sent is already in the peer's queue); stream pipes are
    /// handed to their reactor to flush.
    pub fn close(self: &Arc<Self>, linger: i32) {
        let Some(r) = &self.reactor else {
            self.finish(None);
            return;
        };
        {
            let mut st = self.lock();
            if st.terminated || st.lingering {
                return;
            }
            st.lingering = true;
            self.ctx.linger_started();
        }
        r.send(Command::Close(self.clone(), linger));
    }
}

/// Puts a message into the receive queue of `peer`'s owner.
pub(crate) fn deliver_inproc(peer: &Arc<Pipe>, msg: Msg) {
    let Some(owner) = peer.owner.upgrade() else {
        return;
    };
    let prefix = if owner.is_router() {
        match peer.identity.get() {
            Some(id) => Some(id.clone()),
            None => return,
        }
    } else {
        None
    };
    peer.in_flight.fetch_add(1, Ordering::SeqCst);
    owner.inbound.push(prefix, msg, Some(peer.clone()));
    owner.changed();
}
