//! A server's end of the hot path: [`zebra_proto::Server`] on a UDP socket.
//!
//! The link registers with the switch (REGISTER from its socket, repeated
//! with back-off until REGISTER_ACK, then every
//! [`REGISTER_KEEPALIVE`] so a restarted switch learns the address again),
//! acknowledges aggregate parts, and reports each round once as
//! [`ServerEvent::Round`]. Fallback pairs that workers sent directly go in
//! through [`ServerLink::add_fallback`]; what to apply comes back as
//! [`ServerEvent::Apply`] (at once for certain fallbacks; for uncertain ones
//! once the round's coverage shows the switch does not hold them, or after
//! `uncertain_timeout`).
//!
//! The pull half (`docs/PULL.md`): [`ServerLink::send_update`] sends a
//! round's updated hot values, or a BREAK, once through the switch to every
//! worker ([`zebra_proto::UpdateSender`]: resends to each worker still
//! missing, gives up after the retry limit); a BREAK that every worker
//! acknowledged (or was given up) comes back as
//! [`ServerEvent::BreakSettled`].

use std::net::SocketAddr;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use zebra_proto::consts::packet_type;
use zebra_proto::wire::{Admission, Message, RegisterRepr};
use zebra_proto::{
    Fallback, RoundAggregate, Server, ServerAction, ServerError, ServerStats, SwitchChoice,
    SwitchWatch, Timestamp, UpdateAction, UpdateError, UpdateSender, UpdateSenderStats,
};

use crate::fault::{self, FaultInjector};
use crate::io::{IoStats, Machine, Node, Sends};
use crate::link::{Events, LinkConfig, Switches};
use crate::StartError;

/// First wait before a REGISTER is repeated (doubling up to
/// [`REGISTER_KEEPALIVE`]).
pub const REGISTER_RETRY: Duration = Duration::from_millis(10);
/// Interval of REGISTER once acknowledged.
pub const REGISTER_KEEPALIVE: Duration = Duration::from_secs(1);

/// What a server link reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A round's aggregate for this server, reported once.
    Round(RoundAggregate),
    /// Fallback pairs to apply as if pushed directly.
    Apply(Fallback),
    /// A BREAK sent with [`ServerLink::send_update`] reached every worker
    /// (or was given up on those that did not answer).
    BreakSettled,
    /// The switch answered REGISTER with an epoch other than the one
    /// before (or its first epoch came after aggregate parts had): it was
    /// started again and lost what it held. The job recovers it: the server
    /// agent tells every worker (`zebra_agent::ServerAgent::on_switch_restarted`).
    SwitchRestarted {
        /// The new epoch.
        epoch: u32,
    },
    /// The job moved to the other switch (`zebra_proto::SwitchWatch`: the
    /// one before left the REGISTER unanswered for `failover_ms`), and that
    /// one answered: the server agent tells every worker, as after a restart,
    /// naming the switch (`zebra_agent::ServerAgent::on_switch_moved`).
    SwitchMoved {
        /// The epoch of the switch now in use.
        epoch: u32,
        /// The switch now in use.
        to: SwitchChoice,
    },
}

/// A snapshot of a server link's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerLinkStats {
    /// The server state machine's counters.
    pub server: ServerStats,
    /// Whether the switch acknowledged a REGISTER.
    pub registered: bool,
    /// REGISTER datagrams sent.
    pub registers_sent: u64,
    /// With admission: the hot values the switch granted this server's job
    /// (0: refused), once it answered.
    pub granted: Option<u32>,
    /// Uncertain fallback batches waiting for their round's aggregate.
    pub held_fallbacks: usize,
    /// The switch's epoch in its latest REGISTER_ACK (0: none yet).
    pub epoch: u32,
    /// Changes of the switch's epoch seen (restarts).
    pub switch_restarts: u64,
    /// Moves of the job to the other switch (failover), and whether the
    /// standby is the one in use.
    pub switch_moves: u64,
    pub on_standby: bool,
    /// Datagrams from the switch the job moved away from, dropped.
    pub from_left_switch: u64,
    /// The pull half's updates.
    pub updates: UpdateSenderStats,
    /// Socket counters.
    pub io: IoStats,
}

#[derive(Debug)]
struct Registration {
    datagram: Vec<u8>,
    next: Timestamp,
    backoff: Duration,
    acked: bool,
    sent: u64,
    /// With admission: the capacity of the last answer (0: refused).
    granted: Option<u32>,
    /// The switch's epoch in the latest REGISTER_ACK (0: none yet).
    epoch: u32,
    /// Epoch changes seen.
    restarts: u64,
    /// The job moved to another switch, which has not answered yet: its
    /// first REGISTER_ACK is reported as [`ServerEvent::SwitchMoved`].
    moved: bool,
}

impl Registration {
    fn due(&mut self, now: Timestamp) -> Option<Vec<u8>> {
        if now < self.next {
            return None;
        }
        self.sent += 1;
        if self.acked {
            self.next = now + REGISTER_KEEPALIVE;
        } else {
            self.next = now + self.backoff;
            self.backoff = (self.backoff * 2).min(REGISTER_KEEPALIVE);
        }
        Some(self.datagram.clone())
    }

    /// Records the epoch of a REGISTER_ACK; `true` when the switch was
    /// started again: another epoch than before, or a first one after
    /// aggregate parts came (`had_parts`: an earlier switch may have sent
    /// them and died before its REGISTER_ACK arrived).
    fn on_epoch(&mut self, epoch: u32, had_parts: bool) -> bool {
        if std::mem::take(&mut self.moved) {
            self.epoch = epoch;
            return false;
        }
        let before = std::mem::replace(&mut self.epoch, epoch);
        let restarted = before != epoch && (before != 0 || had_parts);
        if restarted {
            self.restarts += 1;
            log::warn!(
                "server link: the switch's epoch is {epoch:#010x} (was {before:#010x}): it was \
                 started again and lost what it held; the workers resend it"
            );
        }
        restarted
    }

    /// Shows `token` (the job's, from a REGISTER_ACK) in the REGISTERs
    /// sent from now on.
    fn set_token(&mut self, token: u32) {
        let at = zebra_proto::wire::register::field::TOKEN;
        self.datagram[at].copy_from_slice(&token.to_be_bytes());
    }

    /// The job moves to another switch: REGISTER there at once, as at the
    /// start (still showing the token the switch before handed out, as to a
    /// switch started again: one that admits the job hands out its own).
    fn on_move(&mut self, now: Timestamp) {
        self.acked = false;
        self.moved = true;
        self.granted = None;
        self.next = now;
        self.backoff = REGISTER_RETRY;
    }

    fn on_ack(&mut self, now: Timestamp, admit: Option<Admission>) {
        if let Some(a) = admit {
            if a.capacity == 0 && self.granted != Some(0) {
                log::warn!("server link: the switch refused to admit the job (no room, or another job of that id)");
            }
            self.granted = Some(a.capacity);
            if a.capacity == 0 {
                // Asked again now and then: the switch may have room later.
                self.next = now + REGISTER_KEEPALIVE;
                return;
            }
        }
        if !self.acked {
            self.acked = true;
            self.next = now + REGISTER_KEEPALIVE;
        }
    }
}

#[derive(Debug)]
struct ServerMachine {
    server: Server,
    job: u16,
    index: u16,
    switch: SocketAddr,
    switches: Switches,
    watch: SwitchWatch,
    from_left: u64,
    registration: Registration,
    events: Sender<ServerEvent>,
    updates: UpdateSender,
    /// BREAKs sent and not yet settled.
    breaks: Vec<u32>,
}

impl ServerMachine {
    /// Sends what the update sender has due, and reports settled BREAKs.
    fn pump_updates(&mut self, now: Timestamp, out: &mut Sends) {
        for a in self.updates.poll(now) {
            match a {
                UpdateAction::Send(b) => out.push((self.switch, b)),
                UpdateAction::GivenUp {
                    seq,
                    round,
                    workers,
                } => log::debug!(
                    "server link: update {seq} (round {round}) given up for workers {workers:#x}"
                ),
            }
        }
        let updates = &self.updates;
        let before = self.breaks.len();
        self.breaks.retain(|&seq| updates.holds(seq));
        for _ in self.breaks.len()..before {
            if self.events.send(ServerEvent::BreakSettled).is_err() {
                log::debug!("server link: event dropped, nobody is listening");
            }
        }
    }

    /// The watch moved the job to `to`: register there; what the switch
    /// left sends is dropped from now on.
    fn move_to(&mut self, now: Timestamp, to: SwitchChoice) {
        let (from, addr) = (self.switch, self.switches.addr(to));
        log::warn!(
            "server link: job {}: the switch at {from} left REGISTER unanswered; moving the job \
             to the {} at {addr}",
            self.job,
            if to.is_standby() {
                "standby"
            } else {
                "primary"
            }
        );
        self.switch = addr;
        self.registration.on_move(now);
    }

    fn emit(&self, event: ServerEvent) {
        if self.events.send(event).is_err() {
            log::debug!("server link: event dropped, nobody is listening");
        }
    }

    fn act(&mut self, actions: Vec<ServerAction>, out: &mut Sends) {
        for a in actions {
            let event = match a {
                ServerAction::Send(b) => {
                    out.push((self.switch, b));
                    continue;
                }
                ServerAction::Round(r) => ServerEvent::Round(r),
                ServerAction::Apply(f) => ServerEvent::Apply(f),
            };
            if self.events.send(event).is_err() {
                log::debug!("server link: event dropped, nobody is listening");
            }
        }
    }
}

impl Machine for ServerMachine {
    fn on_datagram(&mut self, now: Timestamp, src: SocketAddr, bytes: &[u8], out: &mut Sends) {
        if self.switches.is_left(self.watch.current(), src) {
            self.from_left += 1;
            return;
        }
        if bytes.get(3) == Some(&packet_type::REGISTER_ACK) {
            if let Ok(Message::Register(r)) = Message::parse(bytes) {
                if r.ack && r.job == self.job && r.server == self.index {
                    let moved = self.registration.moved;
                    self.watch.on_heard(now);
                    self.registration.on_ack(now, r.admit);
                    // The job's token, which the server shows from now on
                    // (`docs/SECURITY.md`); none in a refused admission.
                    if r.token != 0 {
                        self.server.set_token(r.token);
                        self.registration.set_token(self.server.token());
                    }
                    let had_parts = self.server.stats().parts > 0;
                    if self.registration.on_epoch(r.epoch, had_parts) {
                        self.emit(ServerEvent::SwitchRestarted { epoch: r.epoch });
                    } else if moved {
                        let to = self.watch.current();
                        self.emit(ServerEvent::SwitchMoved { epoch: r.epoch, to });
                    }
                    return;
                }
            }
        }
        if bytes.get(3) == Some(&packet_type::UPDATE_ACK) {
            self.updates.handle_packet(now, bytes);
            self.pump_updates(now, out);
            return;
        }
        let actions = self.server.handle_packet(now, bytes);
        self.act(actions, out);
    }

    fn on_timer(&mut self, now: Timestamp, out: &mut Sends) {
        if let Some(to) = self.watch.poll(now) {
            self.move_to(now, to);
        }
        if self.server.poll_at().is_some_and(|t| t <= now) {
            let actions = self.server.poll(now);
            self.act(actions, out);
        }
        if self.updates.poll_at().is_some_and(|t| t <= now) {
            self.pump_updates(now, out);
        }
        if let Some(d) = self.registration.due(now) {
            out.push((self.switch, d));
        }
    }

    fn poll_at(&self) -> Option<Timestamp> {
        [
            self.server.poll_at(),
            self.updates.poll_at(),
            self.watch.poll_at(),
        ]
        .into_iter()
        .flatten()
        .chain([self.registration.next])
        .min()
    }
}

/// A server's hot-path link (see the module documentation). `Sync`: any
/// thread may add fallbacks and receive. Stopped on
/// [`shutdown`](Self::shutdown) or drop.
#[derive(Debug)]
pub struct ServerLink {
    node: Node<ServerMachine>,
    events: Events<ServerEvent>,
}

impl ServerLink {
    /// Validates the configuration, binds the socket, starts the thread
    /// (which registers with the switch at once).
    pub fn start(config: LinkConfig) -> Result<ServerLink, StartError> {
        let server = Server::new(&config.proto, config.job, config.rank)?;
        let updates = UpdateSender::new(&config.proto, config.job, config.rank)?;
        let socket = config.bind("server")?;
        let faults = config
            .loss
            .filter(zebra_config::HotLoss::is_active)
            .map(|l| FaultInjector::new(l, fault::stream(b'v', config.job, config.rank)));
        let (tx, rx) = mpsc::channel();
        let token = server.token();
        let machine = ServerMachine {
            server,
            job: config.job,
            index: config.rank,
            switch: config.switch,
            switches: config.switches(),
            watch: SwitchWatch::new(Timestamp::ZERO, config.standby.is_some(), config.failover),
            from_left: 0,
            registration: Registration {
                datagram: RegisterRepr {
                    job: config.job,
                    server: config.rank,
                    ack: false,
                    admit: config.admission,
                    epoch: 0,
                    token,
                }
                .to_bytes(),
                next: Timestamp::ZERO,
                backoff: REGISTER_RETRY,
                acked: false,
                sent: 0,
                granted: None,
                epoch: 0,
                restarts: 0,
                moved: false,
            },
            events: tx,
            updates,
            breaks: Vec::new(),
        };
        let name = format!("zebra-server-{}", config.rank);
        let node = Node::spawn(name, socket, machine, faults).map_err(|source| StartError::Io {
            what: "start the server I/O thread".into(),
            source,
        })?;
        Ok(ServerLink {
            node,
            events: Events::new(rx),
        })
    }

    /// Takes pairs a worker sent directly (the `fallback` of a
    /// [`WorkerEvent::Fallback`](crate::WorkerEvent::Fallback) for this
    /// server). What to apply comes back as [`ServerEvent::Apply`].
    pub fn add_fallback(&self, fallback: Fallback) -> Result<(), ServerError> {
        self.node.shared().with(|m, now, out| {
            let actions = m.server.add_fallback(now, fallback)?;
            m.act(actions, out);
            Ok(())
        })
    }

    /// The pull half: sends the values after `round` (`(key, value bytes)`,
    /// `lens`: the server's pull answers carry a lens frame), or with `brk`
    /// a BREAK, once through the switch to every worker. Returns its seq.
    pub fn send_update(
        &self,
        round: u32,
        entries: Vec<(u64, Vec<u8>)>,
        lens: bool,
        brk: bool,
    ) -> Result<u32, UpdateError> {
        self.node.shared().with(|m, now, out| {
            let seq = if brk {
                let seq = m.updates.break_chain(now);
                m.breaks.push(seq);
                seq
            } else {
                m.updates.send(now, round, entries, lens)?
            };
            m.pump_updates(now, out);
            Ok(seq)
        })
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<ServerEvent> {
        self.events.try_recv()
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<ServerEvent> {
        self.events.recv_timeout(timeout)
    }

    /// The next round's aggregate, waiting at most `timeout`; fallback
    /// pairs to apply that come first are returned with it, in order.
    pub fn next_round(&self, timeout: Duration) -> (Vec<Fallback>, Option<RoundAggregate>) {
        let deadline = std::time::Instant::now() + timeout;
        let mut applied = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.events.recv_timeout(left) {
                Some(ServerEvent::Round(r)) => return (applied, Some(r)),
                Some(ServerEvent::Apply(f)) => applied.push(f),
                Some(
                    ServerEvent::BreakSettled
                    | ServerEvent::SwitchRestarted { .. }
                    | ServerEvent::SwitchMoved { .. },
                ) => {}
                None => return (applied, None),
            }
        }
    }

    /// With admission: the hot values the switch granted (0: refused), once
    /// it answered.
    pub fn granted(&self) -> Option<u32> {
        self.node.shared().read(|c| c.machine.registration.granted)
    }

    /// Moves of the job to the other switch so far (each starts a new wait
    /// for its REGISTER to be answered).
    pub fn switch_moves(&self) -> u64 {
        self.node.shared().read(|c| c.machine.watch.moves())
    }

    /// Whether the switch has acknowledged this server's REGISTER.
    pub fn is_registered(&self) -> bool {
        self.node.shared().read(|c| c.machine.registration.acked)
    }

    /// The local address of the socket (what the switch learns).
    pub fn local_addr(&self) -> SocketAddr {
        self.node.shared().local_addr()
    }

    /// The counters now.
    pub fn stats(&self) -> ServerLinkStats {
        self.node.shared().read(|c| ServerLinkStats {
            server: c.machine.server.stats().clone(),
            registered: c.machine.registration.acked,
            registers_sent: c.machine.registration.sent,
            granted: c.machine.registration.granted,
            held_fallbacks: c.machine.server.held_fallbacks(),
            epoch: c.machine.registration.epoch,
            switch_restarts: c.machine.registration.restarts,
            switch_moves: c.machine.watch.moves(),
            on_standby: c.machine.watch.current().is_standby(),
            from_left_switch: c.machine.from_left,
            updates: c.machine.updates.stats().clone(),
            io: c.io_stats(),
        })
    }

    /// Stops the thread and returns the final counters.
    pub fn shutdown(mut self) -> ServerLinkStats {
        self.node.stop();
        self.stats()
    }
}
