//! The I/O thread every node runs.
//!
//! One UDP socket, one state machine behind a mutex, and a thread that
//! sleeps in `epoll` (through mio) until a datagram arrives, the machine's
//! next timer (`poll_at`) or a held (delayed) datagram is due, or another
//! thread wakes it. Other threads reach the machine through
//! [`Shared::with`] (a worker's `push`, a server's `add_fallback`): the call
//! runs under the lock, its datagrams are sent from the calling thread, and
//! the I/O thread is woken to see the new timers. Nothing spins: an idle
//! node makes no system call until something happens.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};
use zebra_proto::Timestamp;

use crate::clock::Clock;
use crate::fault::{FaultInjector, FaultStats};

/// Datagrams to send: `(destination, bytes)`.
pub(crate) type Sends = Vec<(SocketAddr, Vec<u8>)>;

/// What a node's I/O thread drives.
pub(crate) trait Machine: Send + 'static {
    /// One datagram from `src`.
    fn on_datagram(&mut self, now: Timestamp, src: SocketAddr, bytes: &[u8], out: &mut Sends);
    /// `poll_at` has passed.
    fn on_timer(&mut self, now: Timestamp, out: &mut Sends);
    /// When [`on_timer`](Self::on_timer) is next needed.
    fn poll_at(&self) -> Option<Timestamp>;
}

/// Datagram counters of one node's socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Datagrams received.
    pub rx_datagrams: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Datagrams sent (fault-injected copies included, drops excluded).
    pub tx_datagrams: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Sends the kernel refused (the protocol's retransmissions cover them).
    pub send_errors: u64,
    /// Receive errors.
    pub recv_errors: u64,
    /// What the fault injector did (all zero without one).
    pub faults: FaultStats,
}

const SOCKET: Token = Token(0);
const WAKE: Token = Token(1);
/// Datagrams handled per lock hold, so other threads' calls interleave.
const BATCH: usize = 64;
/// Longest sleep without any timer (a safety net; wake-ups are explicit).
const IDLE: Duration = Duration::from_secs(1);
/// Shortest sleep when a timer did not move after it ran.
const MIN_SLEEP: Duration = Duration::from_micros(100);
/// Receive buffer: any UDP datagram fits, so no size is hidden by truncation.
const RECV_BUFFER: usize = 65_536;

/// A machine, its fault injector and its counters.
#[derive(Debug)]
pub(crate) struct Core<M> {
    pub machine: M,
    faults: Option<FaultInjector>,
    io: IoStats,
}

impl<M> Core<M> {
    pub fn io_stats(&self) -> IoStats {
        let mut io = self.io;
        if let Some(f) = &self.faults {
            io.faults = f.stats();
        }
        io
    }

    fn transmit(&mut self, socket: &UdpSocket, now: Timestamp, out: Sends) {
        for (to, bytes) in out {
            match &mut self.faults {
                Some(f) => {
                    for (to, b) in f.admit(now, to, bytes) {
                        send(&mut self.io, socket, to, &b);
                    }
                }
                None => send(&mut self.io, socket, to, &bytes),
            }
        }
    }

    fn release_held(&mut self, socket: &UdpSocket, now: Timestamp) {
        let due = self
            .faults
            .as_mut()
            .map(|f| f.take_due(now))
            .unwrap_or_default();
        for (to, b) in due {
            send(&mut self.io, socket, to, &b);
        }
    }
}

fn send(io: &mut IoStats, socket: &UdpSocket, to: SocketAddr, bytes: &[u8]) {
    match socket.send_to(bytes, to) {
        Ok(_) => {
            io.tx_datagrams += 1;
            io.tx_bytes += bytes.len() as u64;
        }
        Err(e) => {
            io.send_errors += 1;
            log::debug!("hot path: send to {to} failed: {e}");
        }
    }
}

/// What the I/O thread and the handle share.
#[derive(Debug)]
pub(crate) struct Shared<M> {
    core: Mutex<Core<M>>,
    socket: UdpSocket,
    waker: Waker,
    stop: AtomicBool,
    running: AtomicBool,
    clock: Clock,
    local: SocketAddr,
}

impl<M: Machine> Shared<M> {
    fn lock(&self) -> MutexGuard<'_, Core<M>> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the machine at the current time, sends what it queued
    /// and wakes the I/O thread so it sees any new timer.
    pub fn with<R>(&self, f: impl FnOnce(&mut M, Timestamp, &mut Sends) -> R) -> R {
        let mut out = Vec::new();
        let r = {
            let mut core = self.lock();
            let now = self.clock.now();
            let r = f(&mut core.machine, now, &mut out);
            core.transmit(&self.socket, now, out);
            r
        };
        if let Err(e) = self.waker.wake() {
            log::warn!("hot path: cannot wake the I/O thread: {e}");
        }
        r
    }

    /// Reads the core (for statistics).
    pub fn read<R>(&self, f: impl FnOnce(&Core<M>) -> R) -> R {
        f(&self.lock())
    }

    /// The socket's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Whether the I/O thread is still running.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Runs due timers and releases due held datagrams; returns how long
    /// the thread may sleep.
    fn on_timers(&self) -> Duration {
        let mut core = self.lock();
        let now = self.clock.now();
        if core.machine.poll_at().is_some_and(|t| t <= now) {
            let mut out = Vec::new();
            core.machine.on_timer(now, &mut out);
            core.transmit(&self.socket, now, out);
        }
        core.release_held(&self.socket, now);
        let next = [
            core.machine.poll_at(),
            core.faults.as_ref().and_then(FaultInjector::next_due),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            None => IDLE,
            Some(t) => self.clock.until(t).clamp(MIN_SLEEP, IDLE),
        }
    }

    /// Handles up to [`BATCH`] datagrams; true if more may be waiting.
    fn receive(&self, buf: &mut [u8]) -> bool {
        let mut core = self.lock();
        for _ in 0..BATCH {
            match self.socket.recv_from(buf) {
                Ok((n, src)) => {
                    core.io.rx_datagrams += 1;
                    core.io.rx_bytes += n as u64;
                    let now = self.clock.now();
                    let mut out = Vec::new();
                    core.machine.on_datagram(now, src, &buf[..n], &mut out);
                    core.transmit(&self.socket, now, out);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    core.io.recv_errors += 1;
                    log::debug!("hot path: receive on {} failed: {e}", self.local);
                }
            }
        }
        true
    }

    fn run(&self, mut poll: Poll) {
        let mut events = Events::with_capacity(4);
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut backlog = false;
        while !self.stop.load(Ordering::Acquire) {
            let sleep = self.on_timers();
            let timeout = if backlog { Duration::ZERO } else { sleep };
            if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                log::error!(
                    "hot path: poll on {} failed, I/O thread stops: {e}",
                    self.local
                );
                break;
            }
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            backlog = self.receive(&mut buf);
        }
        self.running.store(false, Ordering::Release);
    }
}

/// A running node: the shared state and its I/O thread, stopped and
/// joined on [`Node::stop`] or drop.
#[derive(Debug)]
pub(crate) struct Node<M: Machine> {
    shared: Arc<Shared<M>>,
    thread: Option<JoinHandle<()>>,
}

impl<M: Machine> Node<M> {
    /// Starts the I/O thread `name` on `socket` (already bound).
    pub fn spawn(
        name: String,
        socket: std::net::UdpSocket,
        machine: M,
        faults: Option<FaultInjector>,
    ) -> io::Result<Node<M>> {
        socket.set_nonblocking(true)?;
        let local = socket.local_addr()?;
        let mut socket = UdpSocket::from_std(socket);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE)?;
        let waker = Waker::new(poll.registry(), WAKE)?;
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                machine,
                faults,
                io: IoStats::default(),
            }),
            socket,
            waker,
            stop: AtomicBool::new(false),
            running: AtomicBool::new(true),
            clock: Clock::new(),
            local,
        });
        let on_thread = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(name)
            .spawn(move || on_thread.run(poll))?;
        Ok(Node {
            shared,
            thread: Some(thread),
        })
    }

    /// The shared state.
    pub fn shared(&self) -> &Shared<M> {
        &self.shared
    }

    /// Stops the I/O thread and waits for it.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            if let Err(e) = self.shared.waker.wake() {
                log::warn!("hot path: cannot wake the I/O thread to stop it: {e}");
            }
            if t.join().is_err() {
                log::error!("hot path: the I/O thread of {} panicked", self.shared.local);
            }
        }
    }
}

impl<M: Machine> Drop for Node<M> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Socket buffers of every hot-path socket: a round's burst from several
/// workers must not overflow the switch's receive buffer while its thread
/// waits for a core (the kernel caps this at `net.core.rmem_max` /
/// `wmem_max`, and counts each datagram with its overhead).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// A UDP socket bound to `addr` with [`SOCKET_BUFFER`]-byte buffers (or
/// what the kernel allows).
pub(crate) fn bind_udp(addr: std::net::SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // Smaller buffers only cost throughput: an error here is not fatal.
    if let Err(e) = socket.set_recv_buffer_size(SOCKET_BUFFER) {
        log::debug!("hot path: SO_RCVBUF {SOCKET_BUFFER}: {e}");
    }
    if let Err(e) = socket.set_send_buffer_size(SOCKET_BUFFER) {
        log::debug!("hot path: SO_SNDBUF {SOCKET_BUFFER}: {e}");
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}
