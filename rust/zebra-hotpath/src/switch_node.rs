//! The software switch on a UDP socket (`zebra switch`).
//!
//! One thread runs [`zebra_proto::Switch`]: every datagram goes to
//! `handle_datagram` with its source address and the monotonic time; ACK
//! and FALLBACK go back to the datagram's source; AGGREGATE and COVERAGE
//! parts go to the address of their `(job, server)`, pinned in the
//! configuration or by the server's first REGISTER (the switch CPU's part).
//! A part for a server with no address yet is counted as unroutable and
//! stays pending in the switch, which resends it on `aggregate_rto`.
//!
//! Only a job's members take part (`docs/SECURITY.md`): the switch pins
//! each member to the address of its first datagram and hands it the job's
//! token, drawn here at random; a datagram for a member from another
//! address, or with a wrong token once the member has shown the right one,
//! is refused and counted.
//!
//! The pull half (`docs/PULL.md`): an UPDATE from a server is copied to every
//! worker of its job the switch has pinned (or to the one it targets), an
//! UPDATE_ACK goes to the server's pinned address.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use zebra_config::{HotLoss, JobKey};
use zebra_net::Stack;
use zebra_proto::consts::{packet_type, VALUE_LEN};
use zebra_proto::wire::{Admission, FallbackReason, Message, RegisterRepr};
use zebra_proto::{Config, JobConfig, Refusal, Role, Switch, SwitchAction, SwitchStats, Timestamp};

use crate::admission::{admission_request, AdmissionRequest};
use crate::fault::{self, FaultInjector};
use crate::io::{HotSocket, IoStats, Machine, Node, Sends};
use crate::server_link::REGISTER_KEEPALIVE;
use crate::StartError;

/// What a [`SwitchNode`] is started with.
#[derive(Debug, Clone)]
pub struct SwitchNodeConfig {
    /// Address to bind (`0.0.0.0:9950`, `127.0.0.1:0` for tests).
    pub listen: SocketAddr,
    /// The protocol configuration all parties share.
    pub proto: Config,
    /// Server addresses fixed in advance, by `(job, server)`: the servers
    /// are pinned to them before they speak.
    pub server_addrs: BTreeMap<(u16, u16), SocketAddr>,
    /// Faults injected on every send.
    pub loss: Option<HotLoss>,
    /// The user-level stack to listen on (`ZEBRA_NET`), if any; a loopback
    /// `listen` address stays on the kernel.
    pub stack: Option<Arc<Stack>>,
    /// Admit jobs as their servers register (`zebra switch --listen` alone):
    /// each admitted job is this one with the REGISTER's job id, workers and
    /// capacity, one server. `None`: only the jobs of `proto`.
    pub admit: Option<JobConfig>,
    /// An admitted job none of whose servers registered this long is
    /// retired and its memory given back ([`JOB_SILENCE`] by default).
    pub job_silence: std::time::Duration,
    /// The jobs' secret key (`job_key_file`, `ZEBRA_JOB_KEY`): an admitted
    /// job gets the token it derives for the job's id, and only a REGISTER
    /// showing that token is admitted (`docs/SECURITY.md`).
    pub job_key: Option<JobKey>,
    /// This incarnation's epoch, nonzero, sent in every REGISTER_ACK: drawn
    /// at random by [`new`](Self::new), so that a switch started again is
    /// told apart from the one before it.
    pub epoch: u32,
}

/// A switch that admits jobs gives an admitted job's memory back when its
/// server has not registered for this long: ten of the keep-alive REGISTERs
/// a server's link sends while it runs ([`REGISTER_KEEPALIVE`]).
pub const JOB_SILENCE: std::time::Duration = std::time::Duration::from_secs(10);

const _: () = assert!(JOB_SILENCE.as_secs() >= 10 * REGISTER_KEEPALIVE.as_secs());

impl SwitchNodeConfig {
    /// A switch on `listen` for `proto`, servers learned by registration.
    pub fn new(listen: SocketAddr, proto: Config) -> SwitchNodeConfig {
        SwitchNodeConfig {
            listen,
            proto,
            server_addrs: BTreeMap::new(),
            loss: None,
            stack: None,
            admit: None,
            job_silence: JOB_SILENCE,
            job_key: None,
            epoch: rand::random::<u32>().max(1),
        }
    }
}

/// A snapshot of the switch node's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchNodeStats {
    /// The switch model's counters (packets, pairs, recirculations, rounds,
    /// duplicates, fallbacks, bad packets, aggregate parts).
    pub switch: SwitchStats,
    /// Rounds open now.
    pub open_rounds: usize,
    /// Aggregate parts waiting for their server's ACK.
    pub pending_parts: usize,
    /// Server addresses, pinned: `(job, server, address)`.
    pub servers: Vec<(u16, u16, SocketAddr)>,
    /// REGISTER datagrams accepted (keep-alives included).
    pub registrations: u64,
    /// REGISTER datagrams refused (unknown job or server, or not from the
    /// server: another address than the one it is pinned to, or a wrong
    /// token; those are in the switch's `refused_*` counters too).
    pub register_refused: u64,
    /// Aggregate parts not sent for want of a server address (resent later).
    pub unroutable: u64,
    /// Jobs admitted as their servers registered.
    pub admitted: u64,
    /// Admitted jobs given back after [`JOB_SILENCE`] without a REGISTER.
    pub retired: u64,
    /// Worker addresses, pinned by their first datagram: `(job, rank,
    /// address)`.
    pub workers: Vec<(u16, u16, SocketAddr)>,
    /// UPDATE datagrams sent to workers (one part copied to `n` workers is `n`).
    pub update_copies: u64,
    /// UPDATE parts and UPDATE_ACKs not sent for want of an address (the
    /// server resends).
    pub update_unroutable: u64,
    /// Socket counters.
    pub io: IoStats,
    /// The switch's accumulator memory: `4 B × R × S × copies`.
    pub memory_bytes: u64,
    /// Each job's share of the counters, in job order.
    pub jobs: Vec<JobNodeStats>,
}

/// One job's counters on the switch ([`zebra_proto::Switch::job_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobNodeStats {
    /// Job id.
    pub job: u16,
    /// Its workers.
    pub workers: u16,
    /// Its servers.
    pub servers: u16,
    /// Hot values it holds (its share of the memory).
    pub hot_values: u32,
    /// Accumulator memory it takes: `4 B × R × its slots × copies`.
    pub memory_bytes: u64,
    /// What its datagrams and rounds counted.
    pub switch: SwitchStats,
    /// Its servers' REGISTER datagrams accepted (keep-alives included).
    pub registrations: u64,
    /// Its servers' REGISTER datagrams refused.
    pub register_refused: u64,
}

impl fmt::Display for SwitchNodeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.switch;
        writeln!(f, "zebra switch statistics")?;
        writeln!(
            f,
            "  packets          {} ({} bad), {} datagrams in / {} out",
            s.packets, s.bad_packets, self.io.rx_datagrams, self.io.tx_datagrams
        )?;
        writeln!(
            f,
            "  added            {} packets, {} pairs",
            s.added_packets, s.added_pairs
        )?;
        writeln!(
            f,
            "  recirculations   {} ({:.3} per added packet), {} readout passes",
            s.recirculations,
            s.recirculations_per_packet(),
            s.readout_passes
        )?;
        writeln!(
            f,
            "  rounds           {} completed, {} flushed, {} open",
            s.rounds_completed, s.rounds_flushed, self.open_rounds
        )?;
        writeln!(
            f,
            "  duplicates       {} answered from records, {} stale dropped",
            s.duplicates, s.stale
        )?;
        write!(f, "  fallbacks        {}", s.total_fallbacks())?;
        for r in FallbackReason::ALL {
            let n = s.fallback(r);
            if n > 0 {
                write!(f, ", {r:?} {n}")?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "  aggregate parts  {} sent, {} resent ({} shown lost, {} timed out), {} acked, {} \
             pending, {} abandoned, {} unroutable",
            s.aggregate_parts,
            s.aggregate_retransmits,
            s.aggregate_lost,
            s.aggregate_retransmits - s.aggregate_lost,
            s.aggregate_acked,
            self.pending_parts,
            s.aggregate_abandoned,
            self.unroutable
        )?;
        writeln!(
            f,
            "  registrations    {} accepted, {} refused, {} jobs admitted, {} retired",
            self.registrations, self.register_refused, self.admitted, self.retired
        )?;
        writeln!(
            f,
            "  refused          {} not from the member's address, {} with a wrong token",
            s.refused_address, s.refused_token
        )?;
        for (job, server, addr) in &self.servers {
            writeln!(f, "  server           job {job} server {server} at {addr}")?;
        }
        writeln!(
            f,
            "  workers          {} pinned (by their first datagram)",
            self.workers.len()
        )?;
        writeln!(
            f,
            "  updates          {} parts copied ({} datagrams to workers), {} acks forwarded, \
             {} refused, {} unroutable",
            s.updates_copied,
            self.update_copies,
            s.update_acks,
            s.updates_refused,
            self.update_unroutable
        )?;
        if s.saturations > 0 {
            writeln!(f, "  saturations      {}", s.saturations)?;
        }
        let fs = self.io.faults;
        if fs.offered > 0 {
            writeln!(
                f,
                "  injected faults  {} dropped, {} duplicated, {} delayed of {}",
                fs.dropped, fs.duplicated, fs.delayed, fs.offered
            )?;
        }
        write!(
            f,
            "  socket errors    {} send, {} receive",
            self.io.send_errors, self.io.recv_errors
        )
    }
}

/// Accumulator memory of `slots` slots in every register and copy.
fn accumulator_bytes(config: &Config, slots: u32) -> u64 {
    VALUE_LEN as u64 * u64::from(config.registers) * u64::from(slots) * u64::from(config.copies)
}

#[derive(Debug)]
struct SwitchMachine {
    switch: Switch,
    registrations: u64,
    register_refused: u64,
    unroutable: u64,
    /// The template of admitted jobs (`SwitchNodeConfig::admit`).
    admit: Option<JobConfig>,
    /// `SwitchNodeConfig::job_key`.
    job_key: Option<JobKey>,
    /// Jobs admitted.
    admitted: u64,
    /// Admitted jobs given back, and after what silence.
    retired: u64,
    job_silence: std::time::Duration,
    update_copies: u64,
    update_unroutable: u64,
    /// `SwitchNodeConfig::epoch`.
    epoch: u32,
    /// Per job the switch has: REGISTERs accepted and refused.
    job_registrations: BTreeMap<u16, (u64, u64)>,
}

impl SwitchMachine {
    fn route(&mut self, action: SwitchAction, src: Option<SocketAddr>, out: &mut Sends) {
        match action {
            // An answer goes back to the datagram's source: the worker's
            // pinned address, or anyone's for an unknown job or worker.
            SwitchAction::Ack { payload, .. } | SwitchAction::Fallback { payload, .. } => {
                if let Some(src) = src {
                    out.push((src, payload));
                }
            }
            SwitchAction::Update {
                job,
                target: Some(rank),
                payload,
            } => match self.switch.member_addr(job, Role::Worker, rank) {
                Some(addr) => {
                    self.update_copies += 1;
                    out.push((addr, payload));
                }
                None => self.update_unroutable += 1,
            },
            SwitchAction::Update {
                job,
                target: None,
                payload,
            } => {
                let before = out.len();
                for (_, addr) in self.switch.member_addrs(job, Role::Worker) {
                    out.push((addr, payload.clone()));
                }
                let copies = (out.len() - before) as u64;
                self.update_copies += copies;
                self.update_unroutable += u64::from(copies == 0);
            }
            SwitchAction::UpdateAck {
                job,
                server,
                payload,
            } => match self.switch.member_addr(job, Role::Server, server) {
                Some(addr) => out.push((addr, payload)),
                None => self.update_unroutable += 1,
            },
            SwitchAction::Aggregate {
                job,
                server,
                payload,
                ..
            } => match self.switch.member_addr(job, Role::Server, server) {
                Some(addr) => out.push((addr, payload)),
                None => {
                    self.unroutable += 1;
                    log::debug!("switch: no address for job {job} server {server} yet");
                }
            },
        }
    }

    /// Admits the job a REGISTER with admission asks for if the switch does
    /// not have it yet; the capacity to answer with (0: refused).
    fn admit(&mut self, src: SocketAddr, r: &RegisterRepr, a: Admission) -> u32 {
        let request = admission_request(
            self.switch.config(),
            self.admit.as_ref(),
            self.job_key.as_ref(),
            r,
            a,
        );
        let job = match request {
            Ok(AdmissionRequest::Known(capacity)) => return capacity,
            Ok(AdmissionRequest::New(job)) => job,
            Err(why) => {
                if self.admit.is_some() || self.switch.config().job(r.job).is_some() {
                    log::warn!("switch: REGISTER from {src} to admit {why}; refused");
                }
                return 0;
            }
        };
        match self.switch.admit(job) {
            Ok(()) => {
                log::info!(
                    "switch: admitted job {} ({} workers, {} hot values) for {src}",
                    r.job,
                    a.workers,
                    a.capacity
                );
                self.admitted += 1;
                a.capacity
            }
            Err(e) => {
                log::warn!(
                    "switch: job {} ({} workers, {} hot values) from {src} not admitted: {e}",
                    r.job,
                    a.workers,
                    a.capacity
                );
                0
            }
        }
    }

    fn on_register(&mut self, src: SocketAddr, r: RegisterRepr, out: &mut Sends) {
        if let Some(a) = r.admit {
            let capacity = self.admit(src, &r, a);
            if capacity == 0 {
                self.refuse(r.job);
                let refused = Admission { capacity: 0, ..a };
                out.push((
                    src,
                    RegisterRepr {
                        ack: true,
                        admit: Some(refused),
                        epoch: self.epoch,
                        token: 0,
                        ..r
                    }
                    .to_bytes(),
                ));
                return;
            }
        }
        let token = match self.switch.register(Some(src), &r) {
            Ok(token) => token,
            Err(None) => {
                self.refuse(r.job);
                log::warn!(
                    "switch: REGISTER from {src} for job {} server {}, which the configuration does not have",
                    r.job,
                    r.server
                );
                return;
            }
            Err(Some(refusal)) => {
                self.refuse(r.job);
                let pinned = self.switch.member_addr(r.job, Role::Server, r.server);
                log::warn!(
                    "switch: REGISTER from {src} for job {} server {} refused: {}{}",
                    r.job,
                    r.server,
                    match refusal {
                        Refusal::Address => format!(
                            "the server is pinned to {}",
                            pinned.map_or_else(|| "another place".into(), |a| a.to_string())
                        ),
                        Refusal::Token => "not the job's token".into(),
                    },
                    // Asking to be admitted for a job the switch admitted
                    // for someone else: two jobs of one id.
                    if r.admit.is_some() && refusal == Refusal::Address {
                        " (a second job with this job id? a zero-configuration job derives its \
                         id from its scheduler's address, or takes `job` from its settings \
                         file; the second runs without the switch until the first ends)"
                    } else {
                        ""
                    }
                );
                return;
            }
        };
        self.registrations += 1;
        self.job_registrations.entry(r.job).or_default().0 += 1;
        let admit = r.admit.map(|a| Admission {
            capacity: self.switch.config().job(r.job).map_or(0, |j| j.hot_keys),
            ..a
        });
        out.push((
            src,
            RegisterRepr {
                ack: true,
                admit,
                epoch: self.epoch,
                token,
                ..r
            }
            .to_bytes(),
        ));
    }

    /// Counts a refused REGISTER, for its job too when the switch has it.
    fn refuse(&mut self, job: u16) {
        self.register_refused += 1;
        if self.switch.config().job(job).is_some() {
            self.job_registrations.entry(job).or_default().1 += 1;
        }
    }

    fn job_stats(&self) -> Vec<JobNodeStats> {
        let config = self.switch.config();
        config
            .jobs
            .iter()
            .map(|j| {
                let (registrations, register_refused) = self
                    .job_registrations
                    .get(&j.id)
                    .copied()
                    .unwrap_or_default();
                JobNodeStats {
                    job: j.id,
                    workers: j.workers,
                    servers: j.servers,
                    hot_values: j.hot_keys,
                    memory_bytes: accumulator_bytes(config, config.region_slots(j)),
                    switch: self.switch.job_stats(j.id).cloned().unwrap_or_default(),
                    registrations,
                    register_refused,
                }
            })
            .collect()
    }

    /// Every job's pinned members of `role`: `(job, rank, address)`.
    fn members(&self, role: Role) -> Vec<(u16, u16, SocketAddr)> {
        self.switch
            .config()
            .jobs
            .iter()
            .flat_map(|j| {
                self.switch
                    .member_addrs(j.id, role)
                    .into_iter()
                    .map(move |(rank, addr)| (j.id, rank, addr))
            })
            .collect()
    }

    fn stats(&self, io: IoStats) -> SwitchNodeStats {
        SwitchNodeStats {
            switch: self.switch.stats().clone(),
            open_rounds: self.switch.open_rounds(),
            pending_parts: self.switch.pending_parts(),
            servers: self.members(Role::Server),
            registrations: self.registrations,
            register_refused: self.register_refused,
            unroutable: self.unroutable,
            admitted: self.admitted,
            retired: self.retired,
            workers: self.members(Role::Worker),
            update_copies: self.update_copies,
            update_unroutable: self.update_unroutable,
            io,
            memory_bytes: accumulator_bytes(self.switch.config(), self.switch.config().slots),
            jobs: self.job_stats(),
        }
    }
}

impl Machine for SwitchMachine {
    fn on_datagram(&mut self, now: Timestamp, src: SocketAddr, bytes: &[u8], out: &mut Sends) {
        if bytes.get(3) == Some(&packet_type::REGISTER) {
            if let Ok(Message::Register(r)) = Message::parse(bytes) {
                if !r.ack {
                    self.on_register(src, r, out);
                    return;
                }
            }
        }
        for a in self.switch.handle_datagram(now, Some(src), bytes) {
            self.route(a, Some(src), out);
        }
    }

    fn on_timer(&mut self, now: Timestamp, out: &mut Sends) {
        for a in self.switch.poll(now) {
            self.route(a, None, out);
        }
        if self.admit.is_some() {
            for job in self.switch.retire_silent(now, self.job_silence) {
                self.retired += 1;
                self.job_registrations.remove(&job);
                log::info!(
                    "switch: job {job} retired: no REGISTER of its server for {:.1} s (the job \
                     ended or its server is gone); its memory is free",
                    self.job_silence.as_secs_f64()
                );
            }
        }
    }

    fn poll_at(&self) -> Option<Timestamp> {
        let retire = self
            .admit
            .as_ref()
            .and_then(|_| self.switch.retire_at(self.job_silence));
        match (self.switch.poll_at(), retire) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The software switch on its own thread. Stopped on
/// [`shutdown`](Self::shutdown) or drop.
#[derive(Debug)]
pub struct SwitchNode {
    node: Node<SwitchMachine>,
}

impl SwitchNode {
    /// Validates the configuration, binds the socket and starts the thread.
    pub fn start(config: SwitchNodeConfig) -> Result<SwitchNode, StartError> {
        let mut switch = match config.admit {
            Some(_) => Switch::with_admission(config.proto.clone())?,
            None => Switch::new(config.proto.clone())?,
        };
        // Tokens nobody off the path can guess (`docs/SECURITY.md`).
        switch.set_token_source(Box::new(|| rand::random::<u32>().max(1)));
        for (&(job, server), &addr) in &config.server_addrs {
            if !switch.pin_server(job, server, addr) {
                return Err(StartError::UnknownServer { job, server });
            }
        }
        let socket = HotSocket::bind(config.listen, config.stack.as_ref()).map_err(|source| {
            StartError::Io {
                what: format!("bind the switch socket to {}", config.listen),
                source,
            }
        })?;
        let faults = config
            .loss
            .filter(HotLoss::is_active)
            .map(|l| FaultInjector::new(l, fault::stream(b's', 0, 0)));
        let machine = SwitchMachine {
            switch,
            registrations: 0,
            register_refused: 0,
            unroutable: 0,
            admit: config.admit.clone(),
            job_key: config.job_key.clone(),
            admitted: 0,
            retired: 0,
            job_silence: config.job_silence,
            update_copies: 0,
            update_unroutable: 0,
            epoch: config.epoch,
            job_registrations: BTreeMap::new(),
        };
        log::info!("switch: epoch {:#010x}", config.epoch);
        let node =
            Node::spawn("zebra-switch".into(), socket, machine, faults).map_err(|source| {
                StartError::Io {
                    what: "start the switch I/O thread".into(),
                    source,
                }
            })?;
        Ok(SwitchNode { node })
    }

    /// The bound address (the port is known here when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.node.shared().local_addr()
    }

    /// Whether the I/O thread is running (it stops only on shutdown or a
    /// poll failure, which is logged).
    pub fn is_running(&self) -> bool {
        self.node.shared().is_running()
    }

    /// The counters now.
    pub fn stats(&self) -> SwitchNodeStats {
        self.node
            .shared()
            .read(|core| core.machine.stats(core.io_stats()))
    }

    /// Per hot rank of `job`: pairs added over all closed rounds.
    pub fn hot_key_hits(&self, job: u16) -> Option<Vec<u64>> {
        self.node
            .shared()
            .read(|core| core.machine.switch.hot_key_hits(job).map(<[u64]>::to_vec))
    }

    /// Stops the thread and returns the final counters.
    pub fn shutdown(mut self) -> SwitchNodeStats {
        self.node.stop();
        self.stats()
    }
}
