//! A worker's end of the hot path: [`zebra_proto::Worker`] on a UDP socket.
//!
//! [`WorkerLink::push`] packs a round's hot pairs and sends them to the
//! switch from the calling thread; the link's I/O thread takes the switch's
//! answers and retransmits on `worker_rto`. What comes back is a
//! [`WorkerEvent`]: pairs to send to a server directly (the switch refused
//! them, or never answered), and, once every packet of a round is settled,
//! `RoundDone`. A round's fallbacks always come before its `RoundDone`.
//!
//! The pull half (`docs/PULL.md`): the link also takes the server's updates
//! the switch copies to it ([`zebra_proto::UpdateReceiver`]: each part
//! acknowledged, updates handed up whole and in order), reported as
//! [`WorkerEvent::Update`], and gaps as [`WorkerEvent::UpdateGap`].

use std::net::SocketAddr;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use zebra_proto::consts::packet_type;
use zebra_proto::{
    Fallback, JobConfig, RoundSummary, SwitchChoice, Timestamp, Update, UpdateEvent,
    UpdateReceiver, UpdateReceiverStats, Worker, WorkerAction, WorkerError, WorkerStats,
};

use crate::fault::{self, FaultInjector};
use crate::io::{IoStats, Machine, Node, Sends};
use crate::link::{Events, LinkConfig, Switches};
use crate::StartError;

/// What a worker link reports.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerEvent {
    /// Send these pairs to server `server` directly (with the cold part of
    /// the push, or on their own); the server passes them to
    /// [`ServerLink::add_fallback`](crate::ServerLink::add_fallback).
    Fallback {
        /// Owning server of every pair.
        server: u16,
        /// The pairs, with the `(round, worker, seq, cause)` the server
        /// reconciles by.
        fallback: Fallback,
    },
    /// Every hot packet of this round is settled at the switch.
    RoundDone(RoundSummary),
    /// After [`WorkerLink::restart`]: what the lost switch had added of a
    /// round settled before, for `server` (`zebra_proto::WorkerAction::Resettle`).
    Resettle {
        /// Destination server index.
        server: u16,
        /// Round.
        round: u32,
        /// Uncertain batches, this server's pairs.
        batches: Vec<Fallback>,
    },
    /// The job's server sent its updated hot values (the next of its chain).
    Update(Update),
    /// Updates of the job's server that will not come: drop what is held
    /// of its rows.
    UpdateGap,
}

/// The receipt of a push: its round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket {
    round: u32,
}

impl Ticket {
    /// The round pushed; its [`WorkerEvent::RoundDone`] carries the same.
    pub fn round(self) -> u32 {
        self.round
    }
}

/// A snapshot of a worker link's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerLinkStats {
    /// The worker state machine's counters.
    pub worker: WorkerStats,
    /// Rounds pushed and not yet settled.
    pub unsettled_rounds: usize,
    /// The pull half's updates.
    pub updates: UpdateReceiverStats,
    /// Socket counters.
    pub io: IoStats,
    /// Moves to the other switch its server announced, and whether the
    /// standby is the one in use.
    pub switch_moves: u64,
    pub on_standby: bool,
    /// Datagrams from the switch the job moved away from, dropped.
    pub from_left_switch: u64,
}

#[derive(Debug)]
struct WorkerMachine {
    worker: Worker,
    job: JobConfig,
    switch: SocketAddr,
    switches: Switches,
    current: SwitchChoice,
    moves: u64,
    from_left: u64,
    events: Sender<WorkerEvent>,
    updates: UpdateReceiver,
}

impl WorkerMachine {
    fn updates(&mut self, events: Vec<UpdateEvent>) {
        for e in events {
            self.emit(match e {
                UpdateEvent::Update(u) => WorkerEvent::Update(u),
                UpdateEvent::Gap { .. } => WorkerEvent::UpdateGap,
            });
        }
    }

    fn act(&mut self, actions: Vec<WorkerAction>, out: &mut Sends) {
        for a in actions {
            match a {
                WorkerAction::Send(b) => out.push((self.switch, b)),
                WorkerAction::Fallback(f) => {
                    for (server, fallback) in f.split_by_server(&self.job) {
                        self.emit(WorkerEvent::Fallback { server, fallback });
                    }
                }
                WorkerAction::RoundDone(s) => self.emit(WorkerEvent::RoundDone(s)),
                WorkerAction::Resettle { round, batches } => {
                    let mut by: std::collections::BTreeMap<u16, Vec<Fallback>> = Default::default();
                    for b in batches {
                        for (server, f) in b.split_by_server(&self.job) {
                            by.entry(server).or_default().push(f);
                        }
                    }
                    for (server, batches) in by {
                        self.emit(WorkerEvent::Resettle {
                            server,
                            round,
                            batches,
                        });
                    }
                }
            }
        }
    }

    fn emit(&self, e: WorkerEvent) {
        if self.events.send(e).is_err() {
            log::debug!("worker link: event dropped, nobody is listening");
        }
    }
}

impl Machine for WorkerMachine {
    fn on_datagram(&mut self, now: Timestamp, src: SocketAddr, bytes: &[u8], out: &mut Sends) {
        if self.switches.is_left(self.current, src) {
            self.from_left += 1;
            return;
        }
        if bytes.get(3) == Some(&packet_type::UPDATE) {
            let (ack, events) = self.updates.handle_packet(now, bytes);
            if let Some(ack) = ack {
                out.push((self.switch, ack));
            }
            self.updates(events);
            return;
        }
        let actions = self.worker.handle_packet(now, bytes);
        self.act(actions, out);
    }

    fn on_timer(&mut self, now: Timestamp, out: &mut Sends) {
        let actions = self.worker.poll(now);
        self.act(actions, out);
        if self.updates.poll_at().is_some_and(|t| t <= now) {
            let events = self.updates.poll(now);
            self.updates(events);
        }
    }

    fn poll_at(&self) -> Option<Timestamp> {
        [self.worker.poll_at(), self.updates.poll_at()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// A worker's hot-path link (see the module documentation). `Sync`: any
/// thread may push and receive. Stopped on [`shutdown`](Self::shutdown)
/// or drop.
#[derive(Debug)]
pub struct WorkerLink {
    node: Node<WorkerMachine>,
    events: Events<WorkerEvent>,
}

impl WorkerLink {
    /// Validates the configuration, binds the socket, starts the thread.
    pub fn start(config: LinkConfig) -> Result<WorkerLink, StartError> {
        let mut worker = Worker::new(&config.proto, config.job, config.rank)?;
        if !config.window {
            // `worker_window = false`, for measurements (scripts/shared-switch.py
            // window): the rule's effect on jobs sharing a link.
            log::warn!(
                "zebra: worker {} of job {}: worker_window = false: no congestion window, up \
                 to worker_max_in_flight hot packets in flight at once",
                config.rank,
                config.job
            );
            worker.set_congestion_control(false);
        }
        let job = config
            .proto
            .job(config.job)
            .cloned()
            .ok_or(StartError::Config(
                zebra_proto::ConfigError::UnknownMember {
                    job: config.job,
                    rank: config.rank,
                },
            ))?;
        let updates = UpdateReceiver::new(&config.proto, config.job, 0, config.rank)?;
        let socket = config.bind("worker")?;
        let faults = config
            .loss
            .filter(zebra_config::HotLoss::is_active)
            .map(|l| FaultInjector::new(l, fault::stream(b'w', config.job, config.rank)));
        let (tx, rx) = mpsc::channel();
        let machine = WorkerMachine {
            worker,
            job,
            switch: config.switch,
            switches: config.switches(),
            current: SwitchChoice::Primary,
            moves: 0,
            from_left: 0,
            events: tx,
            updates,
        };
        let name = format!("zebra-worker-{}", config.rank);
        let node = Node::spawn(name, socket, machine, faults).map_err(|source| StartError::Io {
            what: "start the worker I/O thread".into(),
            source,
        })?;
        Ok(WorkerLink {
            node,
            events: Events::new(rx),
        })
    }

    /// The switch was started again and lost what it held; the servers had
    /// aggregates up to round `through` and may need this worker's rounds
    /// from `resend_from` on (`zebra_proto::Worker::restart`).
    /// What it hands back comes as events: [`WorkerEvent::Resettle`] for
    /// rounds settled before, fallbacks and `RoundDone` for rounds going.
    pub fn restart(&self, through: u32, resend_from: u32) {
        self.node.shared().with(|m, now, out| {
            let actions = m.worker.restart(now, through, resend_from);
            m.act(actions, out);
        })
    }

    /// The job's server moved the job to switch `to` (`ZEBRA_SWITCH_STANDBY`)
    /// and has aggregates up to round `through`: from now on hot packets go
    /// there and what the switch left sends is dropped; then as
    /// [`restart`](Self::restart), which settles the rounds going (their
    /// pairs to the servers) and hands back what the switch left may have
    /// held, so that each round is aggregated by one switch or by the
    /// servers. Without a standby (or to the switch in use) it is a restart.
    pub fn move_to(&self, to: SwitchChoice, through: u32, resend_from: u32) {
        self.node.shared().with(|m, now, out| {
            if to != m.current {
                m.current = to;
                m.moves += 1;
                m.switch = m.switches.addr(to);
            }
            let actions = m.worker.restart(now, through, resend_from);
            m.act(actions, out);
        })
    }

    /// Starts the hot part of round `round`: `(hot rank, value)` pairs.
    /// Rounds start at 1 and increase; the k-th push of every worker of a
    /// job is the same round.
    pub fn push(&self, round: u32, pairs: Vec<(u32, f32)>) -> Result<Ticket, WorkerError> {
        self.node.shared().with(|m, now, out| {
            let actions = m.worker.push(now, round, pairs)?;
            m.act(actions, out);
            Ok(Ticket { round })
        })
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<WorkerEvent> {
        self.events.try_recv()
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<WorkerEvent> {
        self.events.recv_timeout(timeout)
    }

    /// Whether every pushed round is settled.
    pub fn is_idle(&self) -> bool {
        self.node.shared().read(|c| c.machine.worker.is_idle())
    }

    /// The local address of the socket.
    pub fn local_addr(&self) -> SocketAddr {
        self.node.shared().local_addr()
    }

    /// The counters now.
    pub fn stats(&self) -> WorkerLinkStats {
        self.node.shared().read(|c| WorkerLinkStats {
            worker: c.machine.worker.stats().clone(),
            unsettled_rounds: c.machine.worker.unsettled_rounds(),
            updates: c.machine.updates.stats().clone(),
            io: c.io_stats(),
            switch_moves: c.machine.moves,
            on_standby: c.machine.current.is_standby(),
            from_left_switch: c.machine.from_left,
        })
    }

    /// Stops the thread and returns the final counters. Rounds not yet
    /// settled stay unsettled: wait for their `RoundDone` first.
    pub fn shutdown(mut self) -> WorkerLinkStats {
        self.node.stop();
        self.stats()
    }
}
