//! What a worker or server link is started with, and the event queue it
//! hands results through.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use zebra_config::HotLoss;
use zebra_net::Stack;
use zebra_proto::wire::Admission;
use zebra_proto::{Config, SwitchChoice};

use crate::io::HotSocket;
use crate::StartError;

/// Configuration of one [`WorkerLink`](crate::WorkerLink) or
/// [`ServerLink`](crate::ServerLink).
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The protocol configuration all parties share.
    pub proto: Config,
    /// Job id.
    pub job: u16,
    /// Worker rank or server index within the job.
    pub rank: u16,
    /// The switch's UDP address.
    pub switch: SocketAddr,
    /// A standby switch's UDP address (`ZEBRA_SWITCH_STANDBY`): a server's
    /// link moves its job there when the switch in use leaves its REGISTER
    /// unanswered for [`failover`](Self::failover); a worker's link moves
    /// when its server says so ([`WorkerLink::move_to`](crate::WorkerLink::move_to)).
    pub standby: Option<SocketAddr>,
    /// `failover_ms`.
    pub failover: Duration,
    /// Local address to bind; the default is the unspecified address of the
    /// switch's family with port 0 (any).
    pub bind: SocketAddr,
    /// Faults injected on every send.
    pub loss: Option<HotLoss>,
    /// The process's user-level stack (`ZEBRA_NET`), if it has one: the
    /// socket is then bound on it unless the switch is on loopback.
    pub stack: Option<Arc<Stack>>,
    /// A server's link only: ask the switch to admit the job with this size
    /// (a REGISTER with admission); `None`: the switch has the job already.
    pub admission: Option<Admission>,
    /// A worker's link only: keep at most the congestion window of hot
    /// packets in flight (`worker_window`, default `true`); `false`: every
    /// packet up to `worker_max_in_flight` at once (for measurements).
    pub window: bool,
}

impl LinkConfig {
    /// A link for `(job, rank)` towards `switch`, bound to any local port.
    pub fn new(proto: Config, job: u16, rank: u16, switch: SocketAddr) -> LinkConfig {
        let any: IpAddr = if switch.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        LinkConfig {
            proto,
            job,
            rank,
            switch,
            standby: None,
            failover: crate::settings::FAILOVER,
            bind: SocketAddr::new(any, 0),
            loss: None,
            stack: None,
            admission: None,
            window: true,
        }
    }

    /// The job's switches: the primary, and the standby (the primary again
    /// without one), indexed by [`SwitchChoice`].
    pub(crate) fn switches(&self) -> Switches {
        Switches {
            primary: self.switch,
            standby: self.standby.unwrap_or(self.switch),
        }
    }

    pub(crate) fn bind(&self, role: &str) -> Result<HotSocket, StartError> {
        let stack = self
            .stack
            .as_ref()
            .filter(|_| !self.switch.ip().is_loopback());
        HotSocket::bind(self.bind, stack).map_err(|source| StartError::Io {
            what: format!(
                "bind the {role} socket of job {} rank {} to {}",
                self.job, self.rank, self.bind
            ),
            source,
        })
    }
}

/// A job's two switches' addresses (the same twice without a standby).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Switches {
    primary: SocketAddr,
    standby: SocketAddr,
}

impl Switches {
    /// The address of `which`.
    pub fn addr(&self, which: SwitchChoice) -> SocketAddr {
        match which {
            SwitchChoice::Primary => self.primary,
            SwitchChoice::Standby => self.standby,
        }
    }

    /// Whether a datagram from `src` comes from the switch the job left
    /// (the other one than `current`, when there are two): dropped, so that
    /// a switch the job moved away from changes nothing.
    pub fn is_left(&self, current: SwitchChoice, src: SocketAddr) -> bool {
        let other = self.addr(current.other());
        other != self.addr(current) && src == other
    }
}

/// The receiving end of a link's events; shared by reference between
/// threads.
#[derive(Debug)]
pub(crate) struct Events<E> {
    rx: Mutex<Receiver<E>>,
}

impl<E> Events<E> {
    pub fn new(rx: Receiver<E>) -> Events<E> {
        Events { rx: Mutex::new(rx) }
    }

    fn rx(&self) -> std::sync::MutexGuard<'_, Receiver<E>> {
        self.rx.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn try_recv(&self) -> Option<E> {
        self.rx().try_recv().ok()
    }

    pub fn recv_timeout(&self, timeout: Duration) -> Option<E> {
        self.rx().recv_timeout(timeout).ok()
    }
}
