//! The stack: smoltcp's interface and sockets behind one lock, and the network thread
//! that polls them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint};

use crate::device::raw::RawPort;
use crate::device::selfloop::SelfLoop;
use crate::device::{Counters, Port};
use crate::neighbours::{Neighbours, Subnet};
use crate::sys::{self, EventFd};
use crate::{Backend, Error, StackConfig};

/// First local port a connect or an unbound listener/UDP socket picks from.
const EPHEMERAL_FIRST: u16 = 49152;
/// How long a closed stream may take to finish sending before it is aborted.
const LINGER: Duration = Duration::from_secs(10);

/// What the network thread has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackStats {
    pub rx_frames: u64,
    pub tx_frames: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    /// Frames to the stack's own address, looped back without the device.
    pub looped: u64,
    /// ARP requests the stack sent on its own ([`crate::neighbours`]).
    pub arp_probes: u64,
    /// DPDK: mbufs of the pool taken right now.
    pub buffers_in_use: Option<u32>,
    /// Poll rounds, and of them those after which the thread slept.
    pub polls: u64,
    pub sleeps: u64,
}

impl std::fmt::Display for StackStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rx_frames {} tx_frames {} rx_dropped {} tx_dropped {} looped {} arp_probes {} polls {} sleeps {}",
            self.rx_frames,
            self.tx_frames,
            self.rx_dropped,
            self.tx_dropped,
            self.looped,
            self.arp_probes,
            self.polls,
            self.sleeps
        )?;
        match self.buffers_in_use {
            Some(n) => write!(f, " mbufs_in_use {n}"),
            None => Ok(()),
        }
    }
}

/// A readiness snapshot: readable, writable, and the TCP state (any change notifies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Readiness {
    pub readable: bool,
    pub writable: bool,
    pub state: u8,
}

#[derive(Debug)]
pub(crate) struct Watch {
    pub event: Arc<EventFd>,
    pub last: Readiness,
    /// A UDP socket (else TCP).
    pub udp: bool,
}

/// A listener's sockets: those listening and those established, not yet accepted.
#[derive(Debug)]
pub(crate) struct ListenerState {
    pub port: u16,
    pub event: Arc<EventFd>,
    pub listening: Vec<SocketHandle>,
    pub ready: VecDeque<SocketHandle>,
    pub notified: bool,
}

/// Everything behind the stack's lock.
pub(crate) struct State {
    pub iface: Interface,
    pub sockets: SocketSet<'static>,
    pub watches: HashMap<SocketHandle, Watch>,
    pub listeners: HashMap<u64, ListenerState>,
    next_listener: u64,
    /// Streams dropped by their owner, closing, with the time they are aborted at.
    orphans: Vec<(SocketHandle, Instant)>,
    next_port: u16,
    pub stats: StackStats,
    pub mtu: usize,
    pub neighbours: Neighbours,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    wake: EventFd,
    sleeping: AtomicBool,
    dirty: AtomicBool,
    stop: AtomicBool,
    pub cfg: StackConfig,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the network thread to poll soon (after a socket operation).
    pub fn kick(&self) {
        self.dirty.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.wake.notify();
        }
    }
}

fn tcp_state_code(s: tcp::State) -> u8 {
    s as u8
}

pub(crate) fn tcp_readiness(sock: &tcp::Socket<'_>) -> Readiness {
    use tcp::State::*;
    let state = sock.state();
    let opening = matches!(state, Listen | SynSent | SynReceived);
    Readiness {
        readable: sock.can_recv() || (!opening && !sock.may_recv()),
        writable: sock.can_send() || (!opening && !sock.may_send()),
        state: tcp_state_code(state),
    }
}

pub(crate) fn udp_readiness(sock: &udp::Socket<'_>) -> Readiness {
    Readiness {
        readable: sock.can_recv(),
        writable: sock.can_send(),
        state: 0,
    }
}

impl State {
    pub fn new_tcp_socket(&self, cfg: &StackConfig) -> tcp::Socket<'static> {
        let mut sock = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; cfg.tcp_buffer]),
            tcp::SocketBuffer::new(vec![0; cfg.tcp_buffer]),
        );
        sock.set_nagle_enabled(false);
        sock
    }

    pub fn new_udp_socket(&self, cfg: &StackConfig) -> udp::Socket<'static> {
        let buffer = || {
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; cfg.udp_datagrams],
                vec![0; cfg.udp_buffer],
            )
        };
        udp::Socket::new(buffer(), buffer())
    }

    /// A local port no TCP or UDP socket of this stack uses.
    pub fn ephemeral_port(&mut self) -> Option<u16> {
        let used: std::collections::HashSet<u16> = self
            .sockets
            .iter()
            .filter_map(|(_, s)| match s {
                smoltcp::socket::Socket::Tcp(t) => t
                    .local_endpoint()
                    .map(|e| e.port)
                    .or(Some(t.listen_endpoint().port).filter(|&p| p != 0)),
                smoltcp::socket::Socket::Udp(u) => Some(u.endpoint().port).filter(|&p| p != 0),
                #[allow(unreachable_patterns)]
                _ => None,
            })
            .collect();
        let span = u32::from(u16::MAX - EPHEMERAL_FIRST) + 1;
        for _ in 0..span {
            let port = self.next_port;
            self.next_port = if port == u16::MAX {
                EPHEMERAL_FIRST
            } else {
                port + 1
            };
            if !used.contains(&port) {
                return Some(port);
            }
        }
        None
    }

    /// A frame to `dst` will be needed: make sure its next hop gets resolved
    /// ([`crate::neighbours`]).
    pub fn want_neighbour(&mut self, dst: std::net::Ipv4Addr) {
        self.neighbours.want(dst, Instant::now());
    }

    /// Before a poll: asks for the TCP peers' next hops (once per sweep interval) and sends
    /// the ARP requests that are due.
    fn probe_neighbours<D: Device>(&mut self, device: &mut D, now: Instant) {
        if self.neighbours.sweep_due(now) {
            for (_, sock) in self.sockets.iter() {
                if let smoltcp::socket::Socket::Tcp(t) = sock {
                    if let Some(IpEndpoint {
                        addr: IpAddress::Ipv4(a),
                        ..
                    }) = t.remote_endpoint()
                    {
                        self.neighbours.want(a, now);
                    }
                }
            }
        }
        self.neighbours.send(device, now);
        self.stats.arp_probes = self.neighbours.sent;
    }

    pub fn watch(&mut self, handle: SocketHandle, event: Arc<EventFd>, udp: bool) {
        self.watches.insert(
            handle,
            Watch {
                event,
                last: Readiness::default(),
                udp,
            },
        );
    }

    pub fn add_listener(&mut self, l: ListenerState) -> u64 {
        self.next_listener += 1;
        self.listeners.insert(self.next_listener, l);
        self.next_listener
    }

    /// A stream's owner dropped it: close it, and remove it once closed (or aborted
    /// after [`LINGER`]).
    pub fn orphan(&mut self, handle: SocketHandle) {
        self.watches.remove(&handle);
        self.sockets.get_mut::<tcp::Socket>(handle).close();
        self.orphans.push((handle, Instant::now() + LINGER.into()));
    }

    /// After a poll: reaps closed orphans, refills listeners, notifies changed sockets.
    fn after_poll(&mut self, cfg: &StackConfig, now: Instant) {
        let sockets = &mut self.sockets;
        self.orphans.retain(|&(h, deadline)| {
            let sock = sockets.get_mut::<tcp::Socket>(h);
            if now >= deadline {
                sock.abort();
            }
            let done = matches!(sock.state(), tcp::State::Closed | tcp::State::TimeWait);
            if done {
                sockets.remove(h);
            }
            !done
        });
        let ids: Vec<u64> = self.listeners.keys().copied().collect();
        for id in ids {
            self.refill_listener(id, cfg);
        }
        for (&h, w) in self.watches.iter_mut() {
            let now_ready = if w.udp {
                udp_readiness(self.sockets.get::<udp::Socket>(h))
            } else {
                tcp_readiness(self.sockets.get::<tcp::Socket>(h))
            };
            if now_ready != w.last {
                let rising = (now_ready.readable && !w.last.readable)
                    || (now_ready.writable && !w.last.writable)
                    || now_ready.state != w.last.state;
                w.last = now_ready;
                if rising {
                    w.event.notify();
                }
            }
        }
    }

    /// Moves a listener's established sockets to its ready queue and keeps `backlog`
    /// sockets listening.
    pub fn refill_listener(&mut self, id: u64, cfg: &StackConfig) {
        let Some(l) = self.listeners.get_mut(&id) else {
            return;
        };
        let sockets = &mut self.sockets;
        let mut arrived = false;
        l.listening.retain(|&h| {
            let sock = sockets.get_mut::<tcp::Socket>(h);
            match sock.state() {
                tcp::State::Listen | tcp::State::SynReceived => true,
                tcp::State::Closed => {
                    sockets.remove(h);
                    false
                }
                _ => {
                    l.ready.push_back(h);
                    arrived = true;
                    false
                }
            }
        });
        while l.listening.len() < cfg.backlog {
            let mut sock = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; cfg.tcp_buffer]),
                tcp::SocketBuffer::new(vec![0; cfg.tcp_buffer]),
            );
            sock.set_nagle_enabled(false);
            if let Err(e) = sock.listen(l.port) {
                log::error!("zebra-net: listen on port {}: {e}", l.port);
                break;
            }
            l.listening.push(sockets.add(sock));
        }
        if arrived || (!l.ready.is_empty() && !l.notified) {
            l.notified = true;
            l.event.notify();
        }
    }
}

/// A running user-level stack: its network thread and sockets.
#[derive(Debug)]
pub struct Stack {
    pub(crate) shared: Arc<Shared>,
    thread: Mutex<Option<zebra_thread::Handle<Result<(), Error>>>>,
    mac: [u8; 6],
    /// The process that started the stack: a child forked from it has a copy of this value
    /// but neither the network thread nor the port (see [`Stack::shutdown`]).
    owner: u32,
}

impl Stack {
    /// Opens the device and starts the network thread; the errors say why a device could
    /// not be opened (no permission, no port, EAL failure, a bad address).
    pub fn start(cfg: StackConfig) -> Result<Stack, Error> {
        cfg.validate()?;
        let (tx, rx) = mpsc::channel();
        let thread = zebra_thread::spawn("zebra-net", move || match cfg.backend.clone() {
            Backend::Raw { iface } => run(RawPort::open(&iface), cfg, tx),
            #[cfg(dpdk)]
            Backend::Dpdk { eal_args } => run(
                crate::device::dpdk::DpdkPort::open(&cfg, &eal_args),
                cfg,
                tx,
            ),
            #[cfg(not(dpdk))]
            Backend::Dpdk { .. } => {
                let e: Result<RawPort, Error> = Err(Error::DpdkNotBuilt);
                run(e, cfg, tx)
            }
        })
        .map_err(|source| Error::Os {
            what: "spawning the network thread",
            source,
        })?;
        match rx.recv() {
            Ok(Ok((shared, mac))) => Ok(Stack {
                shared,
                thread: Mutex::new(Some(thread)),
                mac,
                owner: std::process::id(),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(match thread.join() {
                Err(e) => e,
                Ok(()) => Error::Os {
                    what: "network thread",
                    source: std::io::Error::other("ended while starting"),
                },
            }),
        }
    }

    /// Starts the stack a checked Zebra configuration asks for (`ZEBRA_NET`, `ZEBRA_IP`,
    /// ...); `None` on the kernel's network. Errors are prefixed with `ZEBRA_NET: `.
    pub fn start_configured(cfg: &zebra_config::Config) -> Result<Option<Stack>, String> {
        let net = StackConfig::from_zebra(cfg).map_err(|e| format!("ZEBRA_NET: {e}"))?;
        net.map(|net| Stack::start(net).map_err(|e| format!("ZEBRA_NET: {e}")))
            .transpose()
    }

    /// Whether this is the process that started the stack (not a child forked from it).
    pub fn in_owner_process(&self) -> bool {
        std::process::id() == self.owner
    }

    /// The stack's Ethernet address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    pub fn ip(&self) -> std::net::Ipv4Addr {
        self.shared.cfg.ip
    }

    /// Counters and, for DPDK, the pool's mbufs in use.
    pub fn stats(&self) -> StackStats {
        self.shared.lock().stats
    }

    /// Stops the network thread and closes the device; an error if the device reported a
    /// leak (DPDK: mbufs still in use) or had already failed. Idempotent.
    ///
    /// In a child forked after the stack started (a Python data loader, say) this does
    /// nothing: the child has no network thread to join, and the port and the EAL belong to
    /// the parent, which closes them at its own exit.
    pub fn shutdown(&self) -> Result<(), Error> {
        if !self.in_owner_process() {
            log::debug!("zebra-net: not shutting down the parent's stack in a forked child");
            return Ok(());
        }
        let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(());
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify();
        thread.join()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            log::error!("zebra-net: {e}");
        }
    }
}

type Started = Result<(Arc<Shared>, [u8; 6]), Error>;

/// The network thread: sets the interface up over `port`, reports back, then polls until
/// stopped, and closes the port.
fn run<P: Port>(
    port: Result<P, Error>,
    cfg: StackConfig,
    started: mpsc::Sender<Started>,
) -> Result<(), Error> {
    let mut port = match port {
        Ok(p) => SelfLoop::new(p, cfg.ip),
        Err(e) => {
            let _ = started.send(Err(e));
            return Ok(());
        }
    };
    let setup = (|| {
        let wake = EventFd::new().map_err(|source| Error::Os {
            what: "eventfd",
            source,
        })?;
        let mac = port.mac();
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        config.random_seed = seed();
        let mut iface = Interface::new(config, &mut port, Instant::now());
        let cidr = IpCidr::new(IpAddress::Ipv4(cfg.ip), cfg.prefix_len);
        let mut pushed = Ok(());
        iface.update_ip_addrs(|addrs| pushed = addrs.push(cidr));
        pushed.map_err(|_| Error::Config("no room for the address".into()))?;
        if let Some(gw) = cfg.gateway {
            iface
                .routes_mut()
                .add_default_ipv4_route(gw)
                .map_err(|_| Error::Config("route table full".into()))?;
        }
        let mtu = port.capabilities().max_transmission_unit - 14;
        let state = State {
            iface,
            sockets: SocketSet::new(vec![]),
            watches: HashMap::new(),
            listeners: HashMap::new(),
            next_listener: 0,
            orphans: Vec::new(),
            next_port: EPHEMERAL_FIRST + (std::process::id() % 1024) as u16,
            stats: StackStats::default(),
            mtu,
            neighbours: Neighbours::new(
                Subnet {
                    ip: cfg.ip,
                    prefix_len: cfg.prefix_len,
                    gateway: cfg.gateway,
                },
                mac,
            ),
        };
        Ok::<_, Error>((
            Arc::new(Shared {
                state: Mutex::new(state),
                wake,
                sleeping: AtomicBool::new(false),
                dirty: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                cfg,
            }),
            mac,
        ))
    })();
    let shared = match setup {
        Ok((shared, mac)) => {
            let _ = started.send(Ok((shared.clone(), mac)));
            shared
        }
        Err(e) => {
            let _ = started.send(Err(e));
            return port.close();
        }
    };
    poll_loop(&mut port, &shared);
    log::debug!(
        "zebra-net: network thread stopping: {:?}",
        shared.lock().stats
    );
    port.close()
}

fn poll_loop<P: Port>(port: &mut P, shared: &Shared) {
    let cfg = &shared.cfg;
    let mut idle: u32 = 0;
    while !shared.stop.load(Ordering::SeqCst) {
        let before: Counters = port.counters();
        let delay = {
            let mut st = shared.lock();
            let now = Instant::now();
            let st = &mut *st;
            st.probe_neighbours(port, now);
            st.iface.poll(now, port, &mut st.sockets);
            port.flush();
            st.after_poll(cfg, now);
            let c = port.counters();
            st.stats.rx_frames = c.rx_frames;
            st.stats.tx_frames = c.tx_frames;
            st.stats.rx_dropped = c.rx_dropped;
            st.stats.tx_dropped = c.tx_dropped;
            st.stats.looped = c.looped;
            st.stats.buffers_in_use = port.buffers_in_use();
            st.stats.polls += 1;
            st.iface.poll_delay(now, &st.sockets)
        };
        let active = port.counters() != before || shared.dirty.swap(false, Ordering::SeqCst);
        if active || delay == Some(Duration::ZERO.into()) {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < cfg.spin_rounds {
            std::thread::yield_now();
            continue;
        }
        shared.sleeping.store(true, Ordering::SeqCst);
        if !shared.dirty.load(Ordering::SeqCst) && !shared.stop.load(Ordering::SeqCst) {
            let delay: Option<Duration> = delay.map(Into::into);
            let (fds, timeout) = match port.wait_fd() {
                Some(fd) => (vec![shared.wake.fd(), fd], delay),
                None => (
                    vec![shared.wake.fd()],
                    Some(delay.map_or(cfg.idle_sleep, |d| d.min(cfg.idle_sleep))),
                ),
            };
            if let Err(e) = sys::wait_readable(&fds, timeout) {
                log::warn!("zebra-net: ppoll: {e}");
                std::thread::sleep(cfg.idle_sleep);
            }
            shared.lock().stats.sleeps += 1;
        }
        shared.sleeping.store(false, Ordering::SeqCst);
        shared.wake.drain();
    }
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}
