//! I/O threads (libzmq's `ZMQ_IO_THREADS`): each runs a `mio` poll loop
//! over its listeners and connections, with timers for reconnects,
//! handshake limits and linger, and a command list other threads append to.
//!
//! Application threads write to a connection directly while its socket
//! buffer has room (see [`Pipe::push`]); the I/O thread reads, finishes
//! connects and handshakes, and writes whatever an application thread left
//! when the kernel buffer filled up.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use zebra_zmtp::Connection;

use crate::consts::event;
use crate::endpoint::{self, Endpoint};
use crate::filters::AcceptFilter;
use crate::ipc::IpcFile;
use crate::pipe::{Origin, Pipe};
use crate::socket::SocketCore;
use crate::stream::{Failure, Listener, NetConn, Parts, ReadBuf, Stream};
use crate::tuning::TcpTuning;

/// Bytes read from one connection before others get a turn.
const READ_BUDGET: usize = 4 << 20;
const WAKER: Token = Token(usize::MAX);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A bound listener handed to an I/O thread.
#[derive(Debug)]
pub(crate) struct ListenerEntry {
    pub id: u64,
    pub listener: Listener,
    pub socket: Weak<SocketCore>,
    /// The resolved endpoint (`ZMQ_LAST_ENDPOINT`).
    pub uri: String,
    /// The IPC socket file to remove when the listener closes.
    pub unlink: Option<IpcFile>,
    /// The connections it keeps (the socket's accept filters at bind).
    pub filter: AcceptFilter,
    /// Kernel settings of the connections it accepts (the socket's at bind).
    pub tuning: TcpTuning,
}

/// Work for an I/O thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// Start accepting on a bound listener.
    Listen(Box<ListenerEntry>),
    /// Close a listener; the sender, if any, is told when it is closed.
    StopListener(u64, Option<Sender<()>>),
    /// Start connecting a connecting pipe.
    Connect(Arc<Pipe>),
    /// Take over a stream accepted by another I/O thread.
    Adopt(Arc<Pipe>, Stream),
    /// The receiver drained below the low-water mark: read again.
    Resume(Arc<Pipe>),
    /// A write outside a turn (an application thread's, a deferred flush) saw
    /// the connection fail, or found no room on a stream not watched for room
    /// (`NetConn::wants_write_interest`): the next turn acts on it.
    Kick(Arc<Pipe>),
    /// Write the pipe's queue (messages pushed in a stream).
    Flush(Arc<Pipe>),
    /// The pipe's socket let go of it: flush for up to `linger` ms, then end.
    Close(Arc<Pipe>, i32),
    /// Exit the thread.
    Stop,
}

/// The handle other threads use to reach an I/O thread.
#[derive(Debug)]
pub(crate) struct ReactorHandle {
    registry: Registry,
    waker: Waker,
    commands: Mutex<Vec<Command>>,
    /// Pipes served, for choosing the least loaded thread.
    load: AtomicUsize,
}

impl ReactorHandle {
    /// A pipe given by [`Reactors::assign`] ended.
    pub fn unassign(&self) {
        self.load.fetch_sub(1, Ordering::Relaxed);
    }

    /// Queues a command and wakes the thread.
    pub fn send(&self, command: Command) {
        let mut commands = lock(&self.commands);
        let was_empty = commands.is_empty();
        commands.push(command);
        drop(commands);
        if was_empty {
            if let Err(e) = self.waker.wake() {
                log::error!("zebra-engine: cannot wake I/O thread: {e}");
            }
        }
    }
}

/// A context's I/O threads.
#[derive(Debug)]
pub(crate) struct Reactors {
    handles: Vec<Arc<ReactorHandle>>,
    threads: Mutex<Vec<zebra_thread::Handle<()>>>,
}

impl Reactors {
    /// Starts `n` I/O threads.
    pub fn start(n: usize) -> io::Result<Arc<Reactors>> {
        let mut polls = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for _ in 0..n {
            let poll = Poll::new()?;
            let registry = poll.registry().try_clone()?;
            let waker = Waker::new(poll.registry(), WAKER)?;
            handles.push(Arc::new(ReactorHandle {
                registry,
                waker,
                commands: Mutex::new(Vec::new()),
                load: AtomicUsize::new(0),
            }));
            polls.push(poll);
        }
        let reactors = Arc::new(Reactors {
            handles,
            threads: Mutex::new(Vec::new()),
        });
        for (i, poll) in polls.into_iter().enumerate() {
            let reactor = Reactor::new(reactors.handles[i].clone(), reactors.clone(), poll);
            let thread = zebra_thread::spawn(format!("zebra-io-{i}"), move || reactor.run())?;
            lock(&reactors.threads).push(thread);
        }
        Ok(reactors)
    }

    /// The least loaded I/O thread.
    pub fn pick(&self) -> Arc<ReactorHandle> {
        self.handles
            .iter()
            .min_by_key(|h| h.load.load(Ordering::Relaxed))
            .cloned()
            .unwrap_or_else(|| self.handles[0].clone())
    }

    /// The least loaded I/O thread, counted as serving one more pipe until
    /// [`ReactorHandle::unassign`].
    pub fn assign(&self) -> Arc<ReactorHandle> {
        let h = self.pick();
        h.load.fetch_add(1, Ordering::Relaxed);
        h
    }

    /// Asks every thread to exit.
    pub fn stop(&self) {
        for h in &self.handles {
            h.send(Command::Stop);
        }
    }

    /// Asks every thread to exit and waits for them.
    pub fn stop_and_join(&self) {
        self.stop();
        let threads = std::mem::take(&mut *lock(&self.threads));
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() == me {
                continue;
            }
            t.join();
        }
    }
}

#[derive(Debug)]
enum Entry {
    Listener(Box<ListenerEntry>),
    Conn(Arc<Pipe>),
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

#[derive(Debug)]
enum TimerKind {
    Reconnect(Arc<Pipe>),
    Handshake(Arc<Pipe>, Token),
    Linger(Arc<Pipe>),
}

#[derive(Debug)]
struct Timer {
    at: Instant,
    seq: u64,
    kind: TimerKind,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Timer {}

impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

fn ms(v: i32) -> Duration {
    Duration::from_millis(u64::try_from(v).unwrap_or(0))
}

/// One I/O thread's state.
struct Reactor {
    handle: Arc<ReactorHandle>,
    all: Arc<Reactors>,
    poll: Poll,
    slots: Vec<Slot>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    pending: Vec<Token>,
    buf: ReadBuf,
    /// Parts received in one turn, on their way to the socket's queue.
    parts: Parts,
    stopping: bool,
    /// xorshift state for the reconnect jitter.
    rng: u64,
}

impl Reactor {
    fn new(handle: Arc<ReactorHandle>, all: Arc<Reactors>, poll: Poll) -> Reactor {
        Reactor {
            handle,
            all,
            poll,
            slots: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            pending: Vec::new(),
            buf: ReadBuf::default(),
            parts: Parts::new(),
            stopping: false,
            rng: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
                | 1,
        }
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        while !self.stopping {
            let timeout = if self.pending.is_empty() {
                self.timers
                    .peek()
                    .map(|t| t.0.at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    log::error!("zebra-engine: I/O thread poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            for ev in events.iter() {
                if ev.token() == WAKER {
                    continue;
                }
                self.dispatch(ev.token(), ev.is_writable() || ev.is_error());
            }
            self.run_commands();
            self.run_timers();
            for token in std::mem::take(&mut self.pending) {
                if let Some(pipe) = self.conn(token) {
                    self.conn_turn(&pipe, token, false);
                }
            }
        }
        self.shut_down();
    }

    // ----- slots -----

    fn alloc(&mut self, entry: Entry) -> Token {
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.slots.len() - 1
        });
        let slot = &mut self.slots[index];
        slot.entry = Some(entry);
        Token(((slot.generation as usize) << 32) | index)
    }

    fn slot_of(&self, token: Token) -> Option<usize> {
        let index = token.0 & 0xFFFF_FFFF;
        let generation = (token.0 >> 32) as u32;
        let slot = self.slots.get(index)?;
        (slot.generation == generation && slot.entry.is_some()).then_some(index)
    }

    fn release(&mut self, token: Token) -> Option<Entry> {
        let index = self.slot_of(token)?;
        let slot = &mut self.slots[index];
        slot.generation = slot.generation.wrapping_add(1);
        let entry = slot.entry.take();
        self.free.push(index);
        entry
    }

    fn conn(&self, token: Token) -> Option<Arc<Pipe>> {
        match self.slots[self.slot_of(token)?].entry.as_ref()? {
            Entry::Conn(p) => Some(p.clone()),
            Entry::Listener(_) => None,
        }
    }

    fn add_timer(&mut self, after: Duration, kind: TimerKind) {
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            at: Instant::now() + after,
            seq: self.timer_seq,
            kind,
        }));
    }

    // ----- events -----

    fn dispatch(&mut self, token: Token, writable: bool) {
        let Some(index) = self.slot_of(token) else {
            return;
        };
        match &self.slots[index].entry {
            Some(Entry::Listener(_)) => self.accept_all(token),
            Some(Entry::Conn(pipe)) => {
                let pipe = pipe.clone();
                self.conn_turn(&pipe, token, writable);
            }
            None => {}
        }
    }

    fn accept_all(&mut self, token: Token) {
        loop {
            let Some(index) = self.slot_of(token) else {
                return;
            };
            let Some(Entry::Listener(l)) = &self.slots[index].entry else {
                return;
            };
            let (id, uri, socket) = (l.id, l.uri.clone(), l.socket.upgrade());
            match l.listener.accept() {
                Ok(stream) => {
                    let Some(socket) = socket.filter(|s| !s.is_closed()) else {
                        continue;
                    };
                    if let Err(why) = l.filter.check(&stream) {
                        log::debug!("zebra-engine: {uri}: connection refused: {why}");
                        socket.monitor_event(event::ACCEPT_FAILED, libc::EACCES, &uri);
                        continue;
                    }
                    stream.set_nodelay();
                    if let Stream::Tcp(s) = &stream {
                        l.tuning.accepted(s);
                    }
                    let target = self.all.assign();
                    let Some(pipe) = socket.new_accepted_pipe(id, &uri, target.clone()) else {
                        target.unassign();
                        continue;
                    };
                    socket.monitor_event(event::ACCEPTED, stream.fd(), &uri);
                    if Arc::ptr_eq(&target, &self.handle) {
                        self.adopt(pipe, stream);
                    } else {
                        target.send(Command::Adopt(pipe, stream));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::warn!("zebra-engine: accept on {uri}: {e}");
                    if let Some(s) = socket {
                        s.monitor_event(event::ACCEPT_FAILED, e.raw_os_error().unwrap_or(0), &uri);
                    }
                    return;
                }
            }
        }
    }

    /// Registers a stream for `pipe` and starts its handshake.
    fn install(&mut self, pipe: &Arc<Pipe>, mut stream: Stream, connected: bool) -> bool {
        let zmtp = match Connection::new(pipe.options.zmtp.clone()) {
            Ok(z) => z,
            Err(e) => {
                log::error!("zebra-engine: {}: {e}", pipe.origin.uri());
                return false;
            }
        };
        let token = self.alloc(Entry::Conn(pipe.clone()));
        if let Err(e) = stream.register(
            &self.handle.registry,
            token,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            log::warn!(
                "zebra-engine: cannot poll a connection on {}: {e}",
                pipe.origin.uri()
            );
            self.release(token);
            return false;
        }
        if let Err(conn) = pipe.set_conn(NetConn::new(stream, token, zmtp, connected)) {
            if let Err(e) = conn.stream.deregister_from(&self.handle.registry) {
                log::debug!("zebra-engine: deregister: {e}");
            }
            self.release(token);
            return true;
        }
        if connected {
            self.handshake_timer(pipe, token);
        }
        self.conn_turn(pipe, token, true);
        true
    }

    /// Limits the handshake of a connection to `ZMQ_HANDSHAKE_IVL`.
    fn handshake_timer(&mut self, pipe: &Arc<Pipe>, token: Token) {
        if pipe.options.handshake_ivl > 0 {
            self.add_timer(
                ms(pipe.options.handshake_ivl),
                TimerKind::Handshake(pipe.clone(), token),
            );
        }
    }

    fn adopt(&mut self, pipe: Arc<Pipe>, stream: Stream) {
        if !self.install(&pipe, stream, true) {
            self.finish(&pipe);
        }
    }

    fn start_connect(&mut self, pipe: Arc<Pipe>) {
        {
            let st = pipe.lock();
            if st.terminated || !matches!(st.link, crate::pipe::Link::Idle) {
                return;
            }
            if st.closing && !st.has_pending_output() {
                drop(st);
                self.finish(&pipe);
                return;
            }
        }
        let Origin::Connect { endpoint, uri } = &pipe.origin else {
            return;
        };
        let stream = match endpoint {
            Endpoint::Tcp {
                host,
                port: Some(port),
                source,
            } => endpoint::resolve_connect(host, *port).and_then(|addr| match source {
                Some(s) => crate::transport::connect(
                    addr,
                    Some(endpoint::resolve_source(s)?),
                    &pipe.options.tcp,
                ),
                None => crate::transport::connect(addr, None, &pipe.options.tcp),
            }),
            Endpoint::Ipc { path } => crate::ipc::connect_ipc(path),
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        };
        match stream {
            Ok(stream) => {
                if let Some(owner) = pipe.owner.upgrade() {
                    owner.monitor_event(event::CONNECT_DELAYED, libc::EINPROGRESS, uri);
                }
                if !self.install(&pipe, stream, false) {
                    self.retry(&pipe);
                }
            }
            Err(e) => {
                log::debug!("zebra-engine: connect {uri}: {e}");
                self.retry(&pipe);
            }
        }
    }

    /// Schedules the next connect attempt after `ZMQ_RECONNECT_IVL`; with
    /// -1 or 0 there is none (libzmq 4.3 treats both as "no reconnection"),
    /// and the pipe keeps its messages until the socket lets go of it.
    fn retry(&mut self, pipe: &Arc<Pipe>) {
        let ivl = pipe.options.reconnect_ivl;
        if ivl <= 0 {
            if pipe.lock().closing {
                self.finish(pipe);
            }
            return;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let interval = pipe.next_reconnect_interval(self.rng);
        if let Some(owner) = pipe.owner.upgrade() {
            owner.monitor_event(event::CONNECT_RETRIED, interval, pipe.origin.uri());
        }
        self.add_timer(ms(interval), TimerKind::Reconnect(pipe.clone()));
    }

    fn conn_turn(&mut self, pipe: &Arc<Pipe>, token: Token, writable: bool) {
        self.parts.clear();
        let Some((mut turn, fd)) =
            pipe.io_turn(token, writable, &mut self.buf, &mut self.parts, READ_BUDGET)
        else {
            return;
        };
        let owner = pipe.owner.upgrade();
        let uri = pipe.origin.uri();
        if turn.connected_now {
            pipe.reset_reconnect_interval();
            self.handshake_timer(pipe, token);
            if let Some(o) = &owner {
                o.monitor_event(event::CONNECTED, fd, uri);
            }
        }
        if let Some(peer) = turn.handshake.take() {
            if let Some(o) = &owner {
                match o.on_handshake(pipe, &peer) {
                    Ok(()) => o.monitor_event(event::HANDSHAKE_SUCCEEDED, 0, uri),
                    Err(refused) => turn.failure = Some(Failure::Rejected(refused.reason())),
                }
            }
        }
        if let Some(failure) = turn.failure.take() {
            if turn.messages > 0 && !matches!(failure, Failure::Rejected(_)) {
                if let Some(o) = &owner {
                    o.deliver(pipe, &mut self.parts, turn.messages);
                }
            }
            self.parts.clear();
            self.teardown(pipe, token, failure);
            return;
        }
        if let Some(o) = &owner {
            if turn.messages > 0 {
                o.deliver(pipe, &mut self.parts, turn.messages);
            }
            if turn.moved > 0 {
                o.changed();
            }
        }
        self.parts.clear();
        if let Some(write) = turn.interest {
            if !self.register_interest(pipe, token, fd, write) {
                return;
            }
        }
        if turn.drained {
            self.finish(pipe);
        } else if turn.paused {
            if pipe.pause_reading() {
                self.pending.push(token);
            }
        } else if turn.more {
            self.pending.push(token);
        }
    }

    /// Registers the interest a turn found the connection needs now (Unix
    /// streams watch for write space only while a write waits for it:
    /// [`NetConn::wants_write_interest`](crate::stream::NetConn::wants_write_interest)).
    /// A registration that fails ends the connection (`false`).
    fn register_interest(&mut self, pipe: &Arc<Pipe>, token: Token, fd: i32, write: bool) -> bool {
        let interest = if write {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        if let Err(e) = mio::unix::SourceFd(&fd).reregister(&self.handle.registry, token, interest)
        {
            log::warn!(
                "zebra-engine: cannot poll a connection on {}: {e}",
                pipe.origin.uri()
            );
            self.teardown(pipe, token, Failure::Io(e));
            return false;
        }
        true
    }

    /// Closes the connection behind `token`; a connecting pipe reconnects,
    /// an accepted one ends.
    fn teardown(&mut self, pipe: &Arc<Pipe>, token: Token, failure: Failure) {
        let Some(conn) = pipe.take_conn(token) else {
            return;
        };
        if let Err(e) = conn.stream.deregister_from(&self.handle.registry) {
            log::debug!("zebra-engine: deregister: {e}");
        }
        self.release(token);
        let uri = pipe.origin.uri();
        if failure.is_peer_fault() {
            log::warn!(
                "zebra-engine: closing connection with {} on {uri}: {failure}",
                conn.peer
            );
        } else {
            log::debug!(
                "zebra-engine: connection with {} on {uri} ended: {failure}",
                conn.peer
            );
        }
        if let Some(o) = pipe.owner.upgrade() {
            if !conn.connected {
                o.monitor_event(event::CLOSED, conn.fd, uri);
            } else {
                if !conn.handshaken {
                    let e = match failure {
                        Failure::Protocol(_) => event::HANDSHAKE_FAILED_PROTOCOL,
                        _ => event::HANDSHAKE_FAILED_NO_DETAIL,
                    };
                    o.monitor_event(e, 0, uri);
                }
                o.monitor_event(event::DISCONNECTED, conn.fd, uri);
            }
        }
        let was_connected = conn.connected;
        drop(conn);
        match pipe.origin {
            Origin::Connect { .. } => {
                let (closing, pending) = {
                    let st = pipe.lock();
                    (st.closing, st.has_pending_output())
                };
                // A lost connection with no reconnection ends the endpoint,
                // its queue and the socket's memory of it, as in libzmq
                // (a connect that never succeeded keeps its queue).
                let ends = was_connected && pipe.options.reconnect_ivl <= 0;
                if (closing && !pending) || ends {
                    self.finish(pipe);
                } else {
                    if was_connected {
                        if let Some(o) = pipe.owner.upgrade() {
                            o.connection_lost(pipe);
                        }
                    }
                    self.retry(pipe);
                }
            }
            Origin::Accept { .. } | Origin::Inproc { .. } => self.finish(pipe),
        }
    }

    fn finish(&mut self, pipe: &Arc<Pipe>) {
        if let Some(token) = pipe.finish(Some(&self.handle.registry)) {
            self.release(token);
        }
    }

    // ----- commands and timers -----

    fn run_commands(&mut self) {
        let commands = std::mem::take(&mut *lock(&self.handle.commands));
        for c in commands {
            match c {
                Command::Listen(l) => {
                    let uri = l.uri.clone();
                    let token = self.alloc(Entry::Listener(l));
                    let registry = &self.handle.registry;
                    if let Some(Slot {
                        entry: Some(Entry::Listener(l)),
                        ..
                    }) = self.slots.get_mut(token.0 & 0xFFFF_FFFF)
                    {
                        if let Err(e) = l.listener.register(registry, token, Interest::READABLE) {
                            log::error!("zebra-engine: cannot poll listener {uri}: {e}");
                        }
                    }
                    self.accept_all(token);
                }
                Command::StopListener(id, ack) => {
                    self.stop_listener(id);
                    if let Some(ack) = ack {
                        let _ = ack.send(());
                    }
                }
                Command::Connect(pipe) => self.start_connect(pipe),
                Command::Adopt(pipe, stream) => self.adopt(pipe, stream),
                Command::Resume(pipe) | Command::Kick(pipe) => {
                    if let Some(token) = pipe.conn_token() {
                        self.conn_turn(&pipe, token, false);
                    }
                }
                Command::Flush(pipe) => {
                    if pipe.flush_deferred() > 0 {
                        if let Some(owner) = pipe.owner.upgrade() {
                            owner.changed();
                        }
                    }
                }
                Command::Close(pipe, linger) => self.begin_close(pipe, linger),
                Command::Stop => self.stopping = true,
            }
        }
    }

    fn stop_listener(&mut self, id: u64) {
        let token = self
            .slots
            .iter()
            .enumerate()
            .find_map(|(i, s)| match &s.entry {
                Some(Entry::Listener(l)) if l.id == id => {
                    Some(Token(((s.generation as usize) << 32) | i))
                }
                _ => None,
            });
        if let Some(Entry::Listener(l)) = token.and_then(|t| self.release(t)) {
            self.close_listener(l);
        }
    }

    fn close_listener(&self, mut l: Box<ListenerEntry>) {
        if let Err(e) = l.listener.deregister(&self.handle.registry) {
            log::debug!("zebra-engine: deregister listener: {e}");
        }
        let fd = l.listener.fd();
        drop(l.listener);
        if let Some(file) = &l.unlink {
            file.remove();
        }
        if let Some(s) = l.socket.upgrade() {
            s.monitor_event(event::CLOSED, fd, &l.uri);
        }
    }

    fn begin_close(&mut self, pipe: Arc<Pipe>, linger: i32) {
        let mut st = pipe.lock();
        if st.terminated || st.closing {
            return;
        }
        st.closing = true;
        if linger == 0 || !st.has_pending_output() {
            drop(st);
            self.finish(&pipe);
            return;
        }
        drop(st);
        if linger > 0 {
            self.add_timer(ms(linger), TimerKind::Linger(pipe.clone()));
        }
        if let Some(token) = pipe.conn_token() {
            self.conn_turn(&pipe, token, false);
        }
    }

    fn run_timers(&mut self) {
        let now = Instant::now();
        while self.timers.peek().is_some_and(|t| t.0.at <= now) {
            let Some(Reverse(timer)) = self.timers.pop() else {
                break;
            };
            match timer.kind {
                TimerKind::Reconnect(pipe) => self.start_connect(pipe),
                TimerKind::Handshake(pipe, token) => {
                    if pipe.handshake_pending(token) {
                        self.teardown(&pipe, token, Failure::HandshakeTimeout);
                    }
                }
                TimerKind::Linger(pipe) => {
                    if !pipe.lock().terminated {
                        log::debug!(
                            "zebra-engine: linger expired on {}, dropping unsent messages",
                            pipe.origin.uri()
                        );
                        self.finish(&pipe);
                    }
                }
            }
        }
    }

    fn shut_down(&mut self) {
        let tokens: Vec<Token> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| Token(((s.generation as usize) << 32) | i))
            .collect();
        for token in tokens {
            match self.release(token) {
                Some(Entry::Listener(l)) => self.close_listener(l),
                Some(Entry::Conn(pipe)) => {
                    pipe.finish(Some(&self.handle.registry));
                }
                None => {}
            }
        }
        for Reverse(timer) in std::mem::take(&mut self.timers).into_vec() {
            match timer.kind {
                TimerKind::Reconnect(p) | TimerKind::Handshake(p, _) | TimerKind::Linger(p) => {
                    p.finish(None);
                }
            }
        }
        for c in std::mem::take(&mut *lock(&self.handle.commands)) {
            match c {
                Command::Connect(p)
                | Command::Adopt(p, _)
                | Command::Resume(p)
                | Command::Kick(p)
                | Command::Flush(p)
                | Command::Close(p, _) => {
                    p.finish(None);
                }
                Command::Listen(l) => self.close_listener(l),
                Command::StopListener(_, Some(ack)) => {
                    let _ = ack.send(());
                }
                Command::StopListener(_, None) | Command::Stop => {}
            }
        }
    }
}
