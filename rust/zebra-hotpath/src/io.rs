//! The I/O thread every node runs.
//!
//! One UDP socket (a kernel socket, or one of Zebra's user-level stack with
//! `ZEBRA_NET`: [`HotSocket`]), one state machine behind a mutex, and a thread that
//! sleeps in `epoll` (through mio) until a datagram arrives, the machine's
//! next timer (`poll_at`) or a held (delayed) datagram is due, or another
//! thread wakes it. Other threads reach the machine through
//! [`Shared::with`] (a worker's `push`, a server's `add_fallback`): the call
//! runs under the lock, its datagrams are sent from the calling thread, and
//! the I/O thread is woken to see the new timers. Nothing spins: an idle
//! node makes no system call until something happens. On a kernel socket the
//! thread receives with one `recvmmsg` per wake-up (up to [`BATCH`] datagrams)
//! and sends what the machine answered to all of them with `sendmmsg`.

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use zebra_net::sys::Received;
use zebra_net::Stack;
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
/// Datagrams handled per lock hold, so other threads' calls interleave, and
/// received by one `recvmmsg`: a round's burst from every worker at once is
/// taken in a few calls, while the reply to the first datagram waits for at
/// most this many others to be handled (tens of microseconds).
const BATCH: usize = 64;
/// Longest sleep without any timer (a safety net; wake-ups are explicit).
const IDLE: Duration = Duration::from_secs(1);
/// Shortest sleep when a timer did not move after it ran.
const MIN_SLEEP: Duration = Duration::from_micros(100);
/// Receive buffer of each datagram: any UDP datagram fits, so no size is
/// hidden by truncation (the [`BATCH`] slots are one allocation whose pages
/// the kernel maps only as datagrams are written to them).
const RECV_BUFFER: usize = 65_536;

/// A machine, its fault injector and its counters.
#[derive(Debug)]
pub(crate) struct Core<M> {
    pub machine: M,
    faults: Option<FaultInjector>,
    io: IoStats,
    /// Datagrams queued by [`transmit`](Self::transmit) until [`flush`](Self::flush).
    queued: Sends,
}

impl<M> Core<M> {
    pub fn io_stats(&self) -> IoStats {
        let mut io = self.io;
        if let Some(f) = &self.faults {
            io.faults = f.stats();
        }
        io
    }

    /// Queues `out` (through the fault injector, if any) for the next
    /// [`flush`](Self::flush).
    fn transmit(&mut self, now: Timestamp, out: Sends) {
        match &mut self.faults {
            Some(f) => {
                for (to, bytes) in out {
                    self.queued.extend(f.admit(now, to, bytes));
                }
            }
            None if self.queued.is_empty() => self.queued = out,
            None => self.queued.extend(out),
        }
    }

    fn release_held(&mut self, now: Timestamp) {
        if let Some(f) = self.faults.as_mut() {
            self.queued.extend(f.take_due(now));
        }
    }

    /// Sends every queued datagram, in order.
    fn flush(&mut self, socket: &HotSocket) {
        let mut at = 0;
        while at < self.queued.len() {
            match socket.send_batch(&self.queued[at..]) {
                Ok(n) => {
                    self.io.tx_datagrams += n as u64;
                    self.io.tx_bytes += self.queued[at..at + n]
                        .iter()
                        .map(|(_, b)| b.len() as u64)
                        .sum::<u64>();
                    at += n;
                }
                Err(e) => {
                    self.io.send_errors += 1;
                    log::debug!("hot path: send to {} failed: {e}", self.queued[at].0);
                    at += 1;
                }
            }
        }
        self.queued.clear();
    }
}

/// What the I/O thread and the handle share.
#[derive(Debug)]
pub(crate) struct Shared<M> {
    core: Mutex<Core<M>>,
    socket: HotSocket,
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
            core.transmit(now, out);
            core.flush(&self.socket);
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
            core.transmit(now, out);
        }
        core.release_held(now);
        core.flush(&self.socket);
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

    /// Handles up to [`BATCH`] datagrams and sends the answers; true if more
    /// may be waiting.
    fn receive(&self, buf: &mut [u8], got: &mut Vec<Received>) -> bool {
        let mut core = self.lock();
        let mut more = true;
        match self.socket.recv_batch(buf, got) {
            Ok(()) => {
                let now = self.clock.now();
                for (i, r) in got.iter().enumerate() {
                    match r {
                        Ok((n, src)) => {
                            core.io.rx_datagrams += 1;
                            core.io.rx_bytes += *n as u64;
                            let at = i * RECV_BUFFER;
                            let mut out = Vec::new();
                            core.machine
                                .on_datagram(now, *src, &buf[at..at + n], &mut out);
                            core.transmit(now, out);
                        }
                        Err(e) => {
                            core.io.recv_errors += 1;
                            log::debug!("hot path: receive on {} failed: {e}", self.local);
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => more = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                core.io.recv_errors += 1;
                log::debug!("hot path: receive on {} failed: {e}", self.local);
            }
        }
        core.flush(&self.socket);
        more
    }

    fn run(&self, mut poll: Poll) {
        let mut events = Events::with_capacity(4);
        let mut buf = vec![0u8; BATCH * RECV_BUFFER];
        let mut got = Vec::with_capacity(BATCH);
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
            backlog = self.receive(&mut buf, &mut got);
        }
        self.running.store(false, Ordering::Release);
    }
}

/// A running node: the shared state and its I/O thread, stopped and
/// joined on [`Node::stop`] or drop.
#[derive(Debug)]
pub(crate) struct Node<M: Machine> {
    shared: Arc<Shared<M>>,
    thread: Option<zebra_thread::Handle<()>>,
}

impl<M: Machine> Node<M> {
    /// Starts the I/O thread `name` on `socket` (already bound).
    pub fn spawn(
        name: String,
        mut socket: HotSocket,
        machine: M,
        faults: Option<FaultInjector>,
    ) -> io::Result<Node<M>> {
        let local = socket.local_addr()?;
        let poll = Poll::new()?;
        socket.register(&poll)?;
        let waker = Waker::new(poll.registry(), WAKE)?;
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                machine,
                faults,
                io: IoStats::default(),
                queued: Vec::new(),
            }),
            socket,
            waker,
            stop: AtomicBool::new(false),
            running: AtomicBool::new(true),
            clock: Clock::new(),
            local,
        });
        let on_thread = Arc::clone(&shared);
        let thread = zebra_thread::spawn(name, move || on_thread.run(poll))?;
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
            t.join();
        }
    }
}

impl<M: Machine> Drop for Node<M> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A hot-path socket: a kernel UDP socket, or a UDP socket of the process's
/// user-level stack (smoltcp over DPDK or a raw socket, `ZEBRA_NET`). Both
/// are non-blocking and wake the I/O thread's `epoll` (the stack's through
/// its eventfd, edge-triggered like mio's: the thread reads until
/// `WouldBlock`).
#[derive(Debug)]
pub(crate) enum HotSocket {
    Kernel(mio::net::UdpSocket),
    Stack(zebra_net::UdpSocket),
}

impl HotSocket {
    /// Binds `addr`: on `stack` when one is given and `addr` is not a loopback
    /// address (the user-level stack has none), on the kernel otherwise. On
    /// the stack, `addr` must be unspecified or the stack's own address.
    pub fn bind(addr: SocketAddr, stack: Option<&Arc<Stack>>) -> io::Result<HotSocket> {
        match (stack, addr) {
            (Some(stack), SocketAddr::V4(v4)) if !v4.ip().is_loopback() => {
                if !v4.ip().is_unspecified() && *v4.ip() != stack.ip() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrNotAvailable,
                        format!(
                            "{addr} is not the user-level stack's address {}",
                            stack.ip()
                        ),
                    ));
                }
                zebra_net::UdpSocket::bind(stack, v4.port()).map(HotSocket::Stack)
            }
            (Some(_), SocketAddr::V6(_)) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the user-level stack is IPv4 only",
            )),
            _ => {
                let socket = bind_kernel(addr)?;
                socket.set_nonblocking(true)?;
                Ok(HotSocket::Kernel(mio::net::UdpSocket::from_std(socket)))
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            HotSocket::Kernel(s) => s.local_addr(),
            HotSocket::Stack(s) => Ok(SocketAddr::V4(s.local_addr())),
        }
    }

    fn register(&mut self, poll: &Poll) -> io::Result<()> {
        match self {
            HotSocket::Kernel(s) => poll.registry().register(s, SOCKET, Interest::READABLE),
            HotSocket::Stack(s) => {
                poll.registry()
                    .register(&mut SourceFd(&s.fd()), SOCKET, Interest::READABLE)
            }
        }
    }

    /// Sends the first of `datagrams` (all that the kernel takes with one
    /// `sendmmsg`; one on the user-level stack): how many, or the first one's
    /// error.
    fn send_batch(&self, datagrams: &[(SocketAddr, Vec<u8>)]) -> io::Result<usize> {
        match (self, datagrams.first()) {
            (_, None) => Ok(0),
            (HotSocket::Kernel(s), _) => zebra_net::sys::send_batch(s, datagrams),
            (HotSocket::Stack(s), Some((SocketAddr::V4(v4), bytes))) => {
                s.send_to(bytes, *v4).map(|_| 1)
            }
            (HotSocket::Stack(_), Some((SocketAddr::V6(_), _))) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the user-level stack is IPv4 only",
            )),
        }
    }

    /// Receives into `buf`'s [`RECV_BUFFER`]-byte slots (all waiting, up to
    /// the slots, with one `recvmmsg`; one on the user-level stack).
    fn recv_batch(&self, buf: &mut [u8], got: &mut Vec<Received>) -> io::Result<()> {
        match self {
            HotSocket::Kernel(s) => zebra_net::sys::recv_batch(s, buf, RECV_BUFFER, got),
            HotSocket::Stack(s) => {
                got.clear();
                let (n, from): (usize, SocketAddrV4) = s.recv_from(&mut buf[..RECV_BUFFER])?;
                got.push(Ok((n, SocketAddr::V4(from))));
                Ok(())
            }
        }
    }
}

/// Socket buffers of every kernel hot-path socket: a round's burst from
/// several workers must not overflow the switch's receive buffer while its
/// thread waits for a core (the kernel caps this at `net.core.rmem_max` /
/// `wmem_max`, and counts each datagram with its overhead).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// A kernel UDP socket bound to `addr` with [`SOCKET_BUFFER`]-byte buffers
/// (or what the kernel allows).
fn bind_kernel(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Answers every datagram with its bytes behind a marker; holds the I/O
    /// thread in its first datagram until told to go on, so what is sent
    /// meanwhile waits in the socket.
    struct Echo {
        hold: Option<mpsc::Receiver<()>>,
    }

    impl Machine for Echo {
        fn on_datagram(&mut self, _: Timestamp, src: SocketAddr, bytes: &[u8], out: &mut Sends) {
            if let Some(go) = self.hold.take() {
                go.recv_timeout(Duration::from_secs(10)).unwrap();
            }
            out.push((src, [b"re:", bytes].concat()));
        }
        fn on_timer(&mut self, _: Timestamp, _: &mut Sends) {}
        fn poll_at(&self) -> Option<Timestamp> {
            None
        }
    }

    #[test]
    fn a_burst_of_several_batches_is_answered_exactly_in_order() {
        let (go, hold) = mpsc::channel();
        let socket = HotSocket::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let mut node = Node::spawn("echo".into(), socket, Echo { hold: Some(hold) }, None).unwrap();
        let to = node.shared().local_addr();
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let burst = 3 * BATCH + 7;
        let datagram = |i: usize| -> Vec<u8> {
            let mut b = (i as u32).to_be_bytes().to_vec();
            b.resize(4 + i % 300, i as u8);
            b
        };
        for i in 0..burst {
            peer.send_to(&datagram(i), to).unwrap();
        }
        go.send(()).unwrap();
        let mut reply = vec![0u8; RECV_BUFFER];
        for i in 0..burst {
            let (n, from) = peer.recv_from(&mut reply).unwrap();
            assert_eq!(from, to);
            assert_eq!(
                reply[..n],
                [b"re:".as_slice(), &datagram(i)].concat(),
                "reply {i}"
            );
        }
        let io = node.shared().read(Core::io_stats);
        node.stop();
        assert_eq!(
            (io.rx_datagrams, io.tx_datagrams),
            (burst as u64, burst as u64)
        );
        assert_eq!((io.recv_errors, io.send_errors), (0, 0));
    }
}
