//! The switch's aggregation model: what the P4 program does, as a
//! deterministic state machine (and what the software switch runs).
//!
//! # State (fixed-size register arrays)
//!
//! - `R` accumulator register arrays of `W × S` entries. Entry
//!   `c·S + base_j + slot` holds `(round tag, raw value)` for hot rank `r` of job `j` in
//!   copy `c = round mod W`, where `(register, slot)` comes from the job's
//!   [`Layout`]. The tag makes clearing free: an add to a slot whose tag is
//!   another round overwrites instead of adding.
//! - A counter register beside each accumulator: pairs added to the slot
//!   this round (read out with it; the CPU keeps per-rank totals for online
//!   hot-key ranking, [`Switch::hot_key_hits`]).
//! - Per job and copy: the round state `(round, open, opened_at,
//!   complete_workers)`.
//! - Per job, worker and copy: `(round, handled, total)` — packets added
//!   this round and the count the DONE packet announced (`seq + 1`).
//! - Per job, worker, copy and sequence number: a record `(round, outcome)`
//!   — the paper's guard against the "repeat-write-error": a packet whose
//!   record carries its round was seen before and is answered from the
//!   record, never added twice; a record carrying a later round means the
//!   packet is a stale copy and it is dropped.
//! - Per job, worker and copy: coverage words `(round, 32 bits)`, bit `seq`
//!   set when packet `seq` is added; read out with the round so servers can
//!   reconcile uncertain fallbacks.
//!
//! Round 0 is reserved (tag 0 means empty) and rounds never wrap.
//!
//! # One hot packet, one pass (plus recirculations)
//!
//! Check job, worker, number format, size, `seq < max_seqs` and every index
//! `< K` (else FALLBACK, no state touched). Read the record: same round →
//! repeat the recorded answer (DUP); later round → drop as stale. Else decide
//! from the copy's round state: same round and open → add; same round
//! closed, or the copy already holds a later round → FALLBACK `Late`; copy
//! holds an older round still open → FALLBACK `WindowFull` (not recorded:
//! "not now", the worker sends it again); older round
//! closed (or empty) → open this round and add. Record the outcome. Adding
//! touches each register array once per pass: a packet whose pairs share a
//! register needs `max pairs per register` passes (the extra ones are
//! counted as recirculations). Then bump the worker's `handled`, set `total`
//! on DONE; when `handled == total` the worker is complete, and when every
//! worker is complete the round closes.
//!
//! # Closing a round, the CPU part
//!
//! A round closes when every worker is complete, or in [`Switch::poll`]
//! its job's round timeout after it opened (flushed: a partial aggregate).
//! The round timeout is learned per job ([`ROUND_TIMEOUT_CAP`]): the
//! configured `round_timeout` until a round's length is measured, then
//! `srtt + 4 rttvar` of the measured lengths (never below `round_timeout`),
//! doubled after each flush until the next measure. A length is measured when
//! a round completes, and when the first packet of a worker reaches a round
//! already flushed (it would have completed then at the earliest). Closing
//! marks it closed (later packets of the round fall back) and reads the
//! copy out: `region_slots` passes over the accumulators (one slot of every
//! register per pass) and `ceil(words / R)` passes per worker over the
//! coverage words. The switch CPU splits the touched slots by owning server,
//! cuts them into AGGREGATE parts, adds COVERAGE parts, and keeps every part
//! until its server acknowledges it, retransmitting on `aggregate_rto`
//! (doubling, at most 16×) up to `aggregate_max_retries` times.
//!
//! # Members (`docs/SECURITY.md`)
//!
//! Only a job's members take part: every datagram naming a worker or a
//! server of a job is checked against the job's [`members`] (pinned
//! addresses, the job's token) before it touches any state; a refused one
//! is counted (`refused_address`, `refused_token`) and not answered. A hot
//! packet whose round is more than `max_round_ahead` rounds past the
//! job's newest round is refused with FALLBACK `FarAhead` and not recorded.
//!
//! # Updates (the pull half)
//!
//! The switch keeps no state for a server's UPDATE parts and the workers'
//! UPDATE_ACKs: it checks the job, the server and the target or worker
//! exist, and hands the bytes on unchanged ([`SwitchAction::Update`] to
//! every worker of the job or the one targeted, [`SwitchAction::UpdateAck`]
//! to the server). On Tofino that is the replication engine's work
//! (`p4/replicate.p4`, written, never compiled: `docs/P4.md`).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::config::{Config, ConfigError, JobConfig};
use crate::consts::{
    packet_type, COVER_WORD_BITS, MAGIC, MAX_REGISTERS, UPDATE_TARGET_ALL, VERSION,
};
use crate::flow::Flow;
use crate::layout::Layout;
use crate::rng::SplitMix64;
use crate::rto::RttEstimator;
use crate::stats::SwitchStats;
use crate::time::Timestamp;
use crate::wire::{
    aggregate, update, update_ack, AggregateAckRepr, AggregateRepr, CoverBits, CoverageRepr,
    FallbackReason, HotRepr, Message, RegisterRepr, ResponseKind, ResponseRepr,
};

mod members;
use members::Members;
pub use members::{Refusal, Role, Source};

/// A party the I/O layer maps to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// A worker of a job (answer to the datagram's source address).
    Worker {
        /// Job id.
        job: u16,
        /// Worker rank.
        rank: u16,
    },
    /// A server of a job (from the configuration).
    Server {
        /// Job id.
        job: u16,
        /// Server index.
        index: u16,
    },
    /// Every worker of a job the I/O layer knows an address for (the
    /// replication of an update).
    Workers {
        /// Job id.
        job: u16,
    },
}

/// What the switch wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchAction {
    /// ACK to a worker.
    Ack {
        /// Job id.
        job: u16,
        /// Worker rank.
        worker: u16,
        /// Datagram.
        payload: Vec<u8>,
    },
    /// FALLBACK notice to a worker.
    Fallback {
        /// Job id.
        job: u16,
        /// Worker rank.
        worker: u16,
        /// Why.
        reason: FallbackReason,
        /// Datagram.
        payload: Vec<u8>,
    },
    /// An aggregate or coverage part to a server.
    Aggregate {
        /// Job id.
        job: u16,
        /// Server index.
        server: u16,
        /// Round.
        round: u32,
        /// Part index.
        part: u16,
        /// Whether this is a retransmission.
        retransmit: bool,
        /// Datagram.
        payload: Vec<u8>,
    },
    /// An update part from a server, forwarded unchanged to the job's
    /// workers (the switch keeps no state for it).
    Update {
        /// Job id.
        job: u16,
        /// The worker it goes to; `None`: every worker of the job.
        target: Option<u16>,
        /// Datagram.
        payload: Vec<u8>,
    },
    /// A worker's update ACK, forwarded unchanged to the server.
    UpdateAck {
        /// Job id.
        job: u16,
        /// Server index.
        server: u16,
        /// Datagram.
        payload: Vec<u8>,
    },
}

impl SwitchAction {
    /// Where to send it.
    pub fn peer(&self) -> Peer {
        match *self {
            SwitchAction::Ack { job, worker, .. } | SwitchAction::Fallback { job, worker, .. } => {
                Peer::Worker { job, rank: worker }
            }
            SwitchAction::Aggregate { job, server, .. }
            | SwitchAction::UpdateAck { job, server, .. } => Peer::Server { job, index: server },
            SwitchAction::Update {
                job,
                target: Some(rank),
                ..
            } => Peer::Worker { job, rank },
            SwitchAction::Update {
                job, target: None, ..
            } => Peer::Workers { job },
        }
    }

    /// The datagram.
    pub fn payload(&self) -> &[u8] {
        match self {
            SwitchAction::Ack { payload, .. }
            | SwitchAction::Fallback { payload, .. }
            | SwitchAction::Aggregate { payload, .. }
            | SwitchAction::Update { payload, .. }
            | SwitchAction::UpdateAck { payload, .. } => payload,
        }
    }
}

const ADDED: u8 = 0;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    round: u32,
    value: u32,
    hits: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct RoundState {
    round: u32,
    open: bool,
    opened_at: Timestamp,
    complete_workers: u16,
}

#[derive(Debug, Clone, Copy, Default)]
struct WorkerRound {
    round: u32,
    handled: u32,
    total: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct Record {
    round: u32,
    outcome: u8,
}

#[derive(Debug, Clone, Copy, Default)]
struct CoverWord {
    round: u32,
    bits: u32,
}

/// The longest a learned round timeout gets (or the configured one, if
/// longer): a round whose workers are a whole training step apart on a slow
/// link takes seconds; longer than this, the servers' agents see their rounds
/// wait and step aside.
pub const ROUND_TIMEOUT_CAP: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug)]
struct JobState {
    cfg: JobConfig,
    /// Lengths of this job's rounds: its round timeout.
    round_timer: RttEstimator,
    /// The latest flushed rounds: (round, opened at, workers measured late
    /// in it), to measure a round by its first late packet of each worker
    /// even once its copy holds a later round.
    flushed: std::collections::VecDeque<(u32, Timestamp, u64)>,
    layout: Layout,
    slot_base: u32,
    rounds: Vec<RoundState>,
    workers: Vec<WorkerRound>,
    records: Vec<Record>,
    cover: Vec<CoverWord>,
    hits: Vec<u64>,
    /// This job's share of the switch's counters.
    stats: SwitchStats,
    /// Who takes part.
    members: Members,
    /// The newest round opened (0: none yet): how far ahead a round may be.
    newest: u32,
    /// The first round this incarnation opened (0: none yet): what came
    /// before may have been an earlier incarnation's (`Unopened`).
    first_opened: u32,
    /// Admitted while the switch ran ([`Switch::admit`]), so given back
    /// when its servers fall silent ([`Switch::retire_silent`]).
    admitted: bool,
    /// REGISTERs of its servers accepted, and the count and time
    /// [`Switch::retire_silent`] last saw it change.
    registrations: u64,
    heard: Option<(u64, Timestamp)>,
}

/// Flushed rounds remembered per job to measure them by their late packets.
const FLUSHED_REMEMBERED: usize = 8;

impl JobState {
    /// A packet of `worker` in `round`, closed before it came: if the round
    /// was flushed and this is the worker's first packet in it, the round
    /// would have taken this long at least.
    fn late(&mut self, round: u32, worker: usize, now: Timestamp) {
        let bit = 1u64 << worker.min(63);
        if let Some(f) = self.flushed.iter_mut().find(|f| f.0 == round) {
            if f.2 & bit == 0 {
                f.2 |= bit;
                self.round_timer.sample(now.saturating_since(f.1));
            }
        }
    }

    /// A job's state, its region from slot `base` of every register; its
    /// token `token` unless its key gives one.
    fn new(config: &Config, cfg: &JobConfig, base: u32, token: u32) -> JobState {
        let (n, w) = (cfg.workers as usize, config.copies as usize);
        JobState {
            cfg: cfg.clone(),
            round_timer: RttEstimator::bounded(
                config.round_timeout,
                config.round_timeout,
                config.round_timeout_cap(),
            ),
            flushed: std::collections::VecDeque::new(),
            layout: Layout::new(cfg.layout, config.registers, cfg.hot_keys),
            slot_base: base,
            rounds: vec![RoundState::default(); w],
            workers: vec![WorkerRound::default(); w * n],
            records: vec![Record::default(); n * w * config.max_seqs as usize],
            cover: vec![CoverWord::default(); n * w * config.cover_words()],
            hits: vec![0; cfg.hot_keys as usize],
            stats: SwitchStats::default(),
            members: match cfg.token {
                0 => Members::new(token, false, cfg.workers, cfg.servers),
                key => Members::new(key, true, cfg.workers, cfg.servers),
            },
            newest: 0,
            first_opened: 0,
            admitted: false,
            registrations: 0,
            heard: None,
        }
    }
}

#[derive(Debug)]
struct Pending {
    payload: Vec<u8>,
    /// Still waiting for its flow's window (not sent yet).
    queued: bool,
    /// First sent.
    sent: Timestamp,
    /// Last sent (first or resent).
    last_sent: Timestamp,
    next: Timestamp,
    retries: u32,
    /// Known lost: a part of its flow sent after it was acknowledged, a
    /// reorder window before `next`. Resent then, beside the flow's one
    /// resend a poll.
    lost: bool,
}

type PartKey = (u16, u32, u16, u16);

/// Where the switch draws each job's token from (nonzero values).
pub type TokenSource = Box<dyn FnMut() -> u32 + Send>;

/// The token source a switch starts with: seeded, so a simulation is
/// deterministic, and so not secret; a switch on a network is given a
/// random one ([`Switch::set_token_source`]).
fn seeded_tokens() -> TokenSource {
    let mut rng = SplitMix64::new(0x5A42_70CE);
    Box::new(move || (rng.next_u64() as u32).max(1))
}

/// Where a switch of `config` (its jobs) whose jobs' regions are `used`
/// (`(first slot, end)` each) places `job` ([`Switch::admit`]; the P4
/// control plane asks the same through `zebra switch --admit`): the first
/// slot of the lowest free stretch of every register that holds its region.
/// Refused when its id is taken, the jobs with it are not a valid
/// configuration, or no free stretch holds it (jobs come and go: the memory
/// has holes).
pub fn admission_base(
    config: &Config,
    job: &JobConfig,
    used: &[(u32, u32)],
) -> Result<u32, ConfigError> {
    if config.job(job.id).is_some() {
        return Err(ConfigError::DuplicateJob(job.id));
    }
    let mut with = config.clone();
    with.jobs.push(job.clone());
    with.validate_for_admission()?;
    let need = config.region_slots(job);
    let mut used = used.to_vec();
    used.sort_unstable();
    let mut at = 0u32;
    for (start, end) in used {
        if start >= at && start - at >= need {
            return Ok(at);
        }
        at = at.max(end);
    }
    match config.slots.checked_sub(at) {
        Some(free) if free >= need => Ok(at),
        _ => Err(ConfigError::Memory {
            needed: u64::from(need),
            slots: config.slots,
        }),
    }
}

/// The switch model. See the module documentation.
pub struct Switch {
    config: Config,
    registers: Vec<Vec<Slot>>,
    jobs: Vec<JobState>,
    pending: BTreeMap<PartKey, Pending>,
    /// Per `(job, server)`: round trips of aggregate parts (their resend
    /// timeout) and the window of parts in flight.
    flows: BTreeMap<(u16, u16), Flow<PartKey>>,
    stats: SwitchStats,
    tokens: TokenSource,
}

impl fmt::Debug for Switch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Switch")
            .field("registers", &self.config.registers)
            .field("slots", &self.config.slots)
            .field("copies", &self.config.copies)
            .field("jobs", &self.jobs.len())
            .field("pending_parts", &self.pending.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Switch {
    /// A switch with empty registers; fails on a bad configuration.
    pub fn new(config: Config) -> Result<Switch, ConfigError> {
        config.validate()?;
        Ok(Switch::build(config))
    }

    /// A switch that may start with no job and admits jobs as they come
    /// ([`admit`](Self::admit)); fails on a bad configuration.
    pub fn with_admission(config: Config) -> Result<Switch, ConfigError> {
        config.validate_for_admission()?;
        Ok(Switch::build(config))
    }

    fn build(config: Config) -> Switch {
        let entries = config.copies as usize * config.slots as usize;
        let registers = vec![vec![Slot::default(); entries]; config.registers as usize];
        let mut base = 0;
        let mut tokens = seeded_tokens();
        let jobs = config
            .jobs
            .iter()
            .map(|cfg| {
                let job = JobState::new(&config, cfg, base, tokens());
                base += config.region_slots(cfg);
                job
            })
            .collect();
        Switch {
            config,
            registers,
            jobs,
            pending: BTreeMap::new(),
            flows: BTreeMap::new(),
            stats: SwitchStats::default(),
            tokens,
        }
    }

    /// Draws jobs' tokens from `tokens` from now on (a switch on a network:
    /// random, unpredictable tokens), and draws again the token of every job
    /// none of whose members is pinned yet and that has no key.
    pub fn set_token_source(&mut self, mut tokens: TokenSource) {
        for job in &mut self.jobs {
            job.members.redraw(tokens());
        }
        self.tokens = tokens;
    }

    /// Admits `job` into the first free stretch of the memory that holds
    /// its region (the control plane's job set-up, or a server's REGISTER
    /// asking for admission). Refused, and nothing changes, when its id is
    /// taken or no free stretch holds it. An admitted job is given back by
    /// [`retire_silent`](Self::retire_silent).
    pub fn admit(&mut self, job: JobConfig) -> Result<(), ConfigError> {
        let used: Vec<(u32, u32)> = self
            .jobs
            .iter()
            .map(|j| (j.slot_base, j.slot_base + self.config.region_slots(&j.cfg)))
            .collect();
        let base = admission_base(&self.config, &job, &used)?;
        self.config.jobs.push(job);
        let cfg = &self.config.jobs[self.config.jobs.len() - 1];
        let token = (self.tokens)().max(1);
        let mut state = JobState::new(&self.config, cfg, base, token);
        state.admitted = true;
        self.jobs.push(state);
        Ok(())
    }

    /// Gives back the memory of every admitted job none of whose servers
    /// registered for `silence` (a server's link sends a REGISTER every
    /// second while it runs): its slots are cleared, its pending aggregate
    /// parts dropped, and its id and memory free for the next job. Jobs of
    /// the configuration stay. Returns the ids retired. Call it from the
    /// timer; [`retire_at`](Self::retire_at) says when it may next retire.
    pub fn retire_silent(&mut self, now: Timestamp, silence: Duration) -> Vec<u16> {
        let mut retired = Vec::new();
        for j in &mut self.jobs {
            if !j.admitted {
                continue;
            }
            match j.heard {
                Some((n, at)) if n == j.registrations => {
                    if now - at >= silence {
                        retired.push(j.cfg.id);
                    }
                }
                _ => j.heard = Some((j.registrations, now)),
            }
        }
        for &id in &retired {
            self.retire(id);
        }
        retired
    }

    /// When [`retire_silent`](Self::retire_silent) with `silence` may next
    /// retire a job, or first look at one (`None`: no admitted job).
    pub fn retire_at(&self, silence: Duration) -> Option<Timestamp> {
        self.jobs
            .iter()
            .filter(|j| j.admitted)
            .map(|j| match j.heard {
                Some((n, at)) if n == j.registrations => at + silence,
                _ => Timestamp::ZERO,
            })
            .min()
    }

    fn retire(&mut self, id: u16) {
        let Some(j) = self.job_index(id) else {
            return;
        };
        let job = self.jobs.remove(j);
        self.config.jobs.retain(|c| c.id != id);
        let region = self.config.region_slots(&job.cfg) as usize;
        for copy in 0..self.config.copies as usize {
            let base = copy * self.config.slots as usize + job.slot_base as usize;
            for register in &mut self.registers {
                register[base..base + region].fill(Slot::default());
            }
        }
        self.pending.retain(|k, _| k.0 != id);
        self.flows.retain(|k, _| k.0 != id);
    }

    fn job_index(&self, job: u16) -> Option<usize> {
        self.jobs.iter().position(|j| j.cfg.id == job)
    }

    /// Job `job`'s membership token, if the switch has the job.
    pub fn job_token(&self, job: u16) -> Option<u32> {
        self.job_index(job).map(|j| self.jobs[j].members.token())
    }

    /// Whether job `job`'s token comes from its key.
    pub fn job_keyed(&self, job: u16) -> Option<bool> {
        self.job_index(job).map(|j| self.jobs[j].members.keyed())
    }

    /// Pins server `server` of job `job` to `addr` before it speaks (an
    /// address fixed in the configuration). `false` when the switch has no
    /// such server.
    pub fn pin_server(&mut self, job: u16, server: u16, addr: std::net::SocketAddr) -> bool {
        self.job_index(job)
            .is_some_and(|j| self.jobs[j].members.pin(Role::Server, server, addr))
    }

    /// Where member `(role, rank)` of job `job` is pinned, if it is and the
    /// transport names addresses.
    pub fn member_addr(&self, job: u16, role: Role, rank: u16) -> Option<std::net::SocketAddr> {
        let j = self.job_index(job)?;
        self.jobs[j].members.source(role, rank).flatten()
    }

    /// The pinned members of `role` of job `job` with their addresses:
    /// `(rank, address)`, by rank.
    pub fn member_addrs(&self, job: u16, role: Role) -> Vec<(u16, std::net::SocketAddr)> {
        self.job_index(job)
            .map(|j| self.jobs[j].members.addresses(role).collect())
            .unwrap_or_default()
    }

    /// Checks a datagram from `source` naming member `(role, rank)` of job
    /// index `j`; counts a refusal (for the job too).
    fn admit_member(
        &mut self,
        j: usize,
        role: Role,
        rank: u16,
        source: Source,
        token: Option<u32>,
    ) -> Result<(), Refusal> {
        let job = &mut self.jobs[j];
        match job.members.check(role, rank, source, token) {
            Ok(pinned) => {
                if pinned {
                    log::info!(
                        "switch: job {} {role:?} {rank} pinned to {}",
                        job.cfg.id,
                        source.map_or_else(|| "its transport".to_string(), |a| a.to_string())
                    );
                }
                Ok(())
            }
            Err(refusal) => {
                let bump = |s: &mut SwitchStats| match refusal {
                    Refusal::Address => s.refused_address += 1,
                    Refusal::Token => s.refused_token += 1,
                };
                bump(&mut self.stats);
                log::debug!(
                    "switch: datagram for job {} {role:?} {rank} from {source:?} refused: {refusal:?}",
                    job.cfg.id
                );
                Err(refusal)
            }
        }
    }

    /// A server's REGISTER from `source` (the switch CPU's part): `Ok` with
    /// the job's token to hand out in the REGISTER_ACK when the switch has
    /// the job and server and the REGISTER comes from the server's pinned
    /// address (pinning it if it is the server's first datagram); `Err(None)`
    /// for a job or server the switch does not have, `Err(Some(refusal))`
    /// when it is not from the member. Refusals are counted, for the job too.
    pub fn register(&mut self, source: Source, r: &RegisterRepr) -> Result<u32, Option<Refusal>> {
        let Some(j) = self
            .job_index(r.job)
            .filter(|&j| r.server < self.jobs[j].cfg.servers)
        else {
            return Err(None);
        };
        self.for_job(Some(j), |s| {
            s.admit_member(j, Role::Server, r.server, source, Some(r.token))
        })
        .map_err(Some)?;
        self.jobs[j].registrations += 1;
        Ok(self.jobs[j].members.token())
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &SwitchStats {
        &self.stats
    }

    /// Job `job`'s share of the counters: what its packets and rounds
    /// counted (a datagram is counted for the job its header names when the
    /// switch has that job; others only in [`stats`](Self::stats)).
    pub fn job_stats(&self, job: u16) -> Option<&SwitchStats> {
        self.jobs.iter().find(|j| j.cfg.id == job).map(|j| &j.stats)
    }

    /// The index of the job a datagram's header names, if the switch has it.
    fn job_of(&self, bytes: &[u8]) -> Option<usize> {
        let header = bytes.get(..6)?;
        if u16::from_be_bytes([header[0], header[1]]) != MAGIC || header[2] != VERSION {
            return None;
        }
        let id = u16::from_be_bytes([header[4], header[5]]);
        self.jobs.iter().position(|j| j.cfg.id == id)
    }

    /// Runs `f`, and counts what it adds to the counters for job `j` too.
    fn for_job<T>(&mut self, j: Option<usize>, f: impl FnOnce(&mut Switch) -> T) -> T {
        let Some(j) = j else {
            return f(self);
        };
        let before = self.stats.clone();
        let out = f(self);
        self.jobs[j].stats.add_growth(&before, &self.stats);
        out
    }

    /// Counts one event in `stats` and in job `job`'s share (a field of the
    /// switch borrowed apart from the others).
    fn count(
        stats: &mut SwitchStats,
        jobs: &mut [JobState],
        job: u16,
        bump: impl Fn(&mut SwitchStats),
    ) {
        bump(stats);
        if let Some(j) = jobs.iter_mut().find(|j| j.cfg.id == job) {
            bump(&mut j.stats);
        }
    }

    /// Aggregate parts waiting for their server's ACK.
    pub fn pending_parts(&self) -> usize {
        self.pending.len()
    }

    /// Per hot rank of job `job`: pairs added over all closed rounds (the
    /// switch's side of online hot-key ranking; a counter register per slot,
    /// accumulated by the CPU at readout).
    pub fn hot_key_hits(&self, job: u16) -> Option<&[u64]> {
        self.jobs
            .iter()
            .find(|j| j.cfg.id == job)
            .map(|j| &j.hits[..])
    }

    /// Job `job`'s round timeout now (learned from its rounds' lengths).
    pub fn round_timeout(&self, job: u16) -> Option<std::time::Duration> {
        self.jobs
            .iter()
            .find(|j| j.cfg.id == job)
            .map(|j| j.round_timer.rto())
    }

    /// Rounds currently open, over all jobs.
    pub fn open_rounds(&self) -> usize {
        self.jobs
            .iter()
            .flat_map(|j| &j.rounds)
            .filter(|r| r.open)
            .count()
    }

    /// Handles one datagram from a transport without addresses (in-memory
    /// simulations): [`handle_datagram`](Self::handle_datagram) with no
    /// source, so members are told apart by their tokens only.
    pub fn handle_packet(&mut self, now: Timestamp, bytes: &[u8]) -> Vec<SwitchAction> {
        self.handle_datagram(now, None, bytes)
    }

    /// Handles one datagram from `source`. Malformed or unexpected bytes,
    /// and datagrams naming a member of a job that do not come from it, are
    /// counted and dropped; nothing here panics on input.
    pub fn handle_datagram(
        &mut self,
        now: Timestamp,
        source: Source,
        bytes: &[u8],
    ) -> Vec<SwitchAction> {
        let job = self.job_of(bytes);
        self.for_job(job, |s| s.handle(now, source, bytes))
    }

    fn handle(&mut self, now: Timestamp, source: Source, bytes: &[u8]) -> Vec<SwitchAction> {
        self.stats.packets += 1;
        match bytes.get(3).copied() {
            Some(packet_type::UPDATE) => return self.on_update(source, bytes),
            Some(packet_type::UPDATE_ACK) => return self.on_update_ack(source, bytes),
            _ => {}
        }
        match Message::parse(bytes) {
            Ok(Message::Hot(h)) => self.on_hot(now, source, &h, bytes.len()),
            Ok(Message::AggregateAck(a)) => self.on_aggregate_ack(now, source, a),
            Ok(other) => {
                log::debug!("switch: unexpected {other:?}");
                self.stats.bad_packets += 1;
                Vec::new()
            }
            Err(e) => {
                log::debug!("switch: bad datagram ({} bytes): {e}", bytes.len());
                self.stats.bad_packets += 1;
                Vec::new()
            }
        }
    }

    /// A datagram of type `what` that does not parse: counted, dropped.
    fn malformed(&mut self, what: &str, len: usize, e: crate::wire::Error) -> Vec<SwitchAction> {
        log::debug!("switch: bad {what} ({len} bytes): {e}");
        self.stats.bad_packets += 1;
        Vec::new()
    }

    /// An UPDATE: copied, unchanged, to the job's workers (or the one it
    /// targets) when its job, server and target exist and it is no longer
    /// than an aggregate part may be; else counted and dropped.
    fn on_update(&mut self, source: Source, bytes: &[u8]) -> Vec<SwitchAction> {
        let p = match update::Packet::new_checked(bytes) {
            Ok(p) => p,
            Err(e) => return self.malformed("UPDATE", bytes.len(), e),
        };
        let (job, target) = (p.job(), p.target());
        let known = self.config.job(job).is_some_and(|j| {
            p.server() < j.servers && (target == UPDATE_TARGET_ALL || target < j.workers)
        });
        if !known || bytes.len() > self.config.aggregate_size {
            log::debug!(
                "switch: UPDATE for job {job} server {} target {target:#x} ({} bytes) refused",
                p.server(),
                bytes.len()
            );
            self.stats.updates_refused += 1;
            return Vec::new();
        }
        if let Some(j) = self.job_index(job) {
            if self
                .admit_member(j, Role::Server, p.server(), source, None)
                .is_err()
            {
                return Vec::new();
            }
        }
        self.stats.updates_copied += 1;
        vec![SwitchAction::Update {
            job,
            target: (target != UPDATE_TARGET_ALL).then_some(target),
            payload: bytes.to_vec(),
        }]
    }

    /// An UPDATE_ACK: forwarded, unchanged, to its server when its job,
    /// server and worker exist; else counted and dropped.
    fn on_update_ack(&mut self, source: Source, bytes: &[u8]) -> Vec<SwitchAction> {
        let p = match update_ack::Packet::new_checked(bytes) {
            Ok(p) => p,
            Err(e) => return self.malformed("UPDATE_ACK", bytes.len(), e),
        };
        let (job, server) = (p.job(), p.server());
        let known = self
            .config
            .job(job)
            .is_some_and(|j| server < j.servers && p.worker() < j.workers);
        if !known {
            log::debug!(
                "switch: UPDATE_ACK for job {job} server {server} from worker {} refused",
                p.worker()
            );
            self.stats.updates_refused += 1;
            return Vec::new();
        }
        if let Some(j) = self.job_index(job) {
            if self
                .admit_member(j, Role::Worker, p.worker(), source, None)
                .is_err()
            {
                return Vec::new();
            }
        }
        self.stats.update_acks += 1;
        vec![SwitchAction::UpdateAck {
            job,
            server,
            payload: bytes.to_vec(),
        }]
    }

    /// Flushes rounds past their timeout and retransmits unacknowledged
    /// aggregate parts.
    pub fn poll(&mut self, now: Timestamp) -> Vec<SwitchAction> {
        let mut out = Vec::new();
        for j in 0..self.jobs.len() {
            let timeout = self.jobs[j].round_timer.rto();
            for c in 0..self.jobs[j].rounds.len() {
                let rs = self.jobs[j].rounds[c];
                if rs.open && now >= rs.opened_at + timeout {
                    out.extend(self.for_job(Some(j), |s| s.close(j, c, now, true)));
                }
            }
        }
        // Per flow, one part is resent per call, the oldest due: parts that left
        // together time out together, and when the first of them is late because
        // it waits in a queue the others wait behind it; resending them all would
        // only add to the queue. The others are due again one timeout later,
        // their retry budget untouched, unless the acknowledgement of a part sent
        // after them (and only once: a resent part's acknowledgement may be its
        // first copy's, which says nothing) shows them lost first
        // (`on_aggregate_ack`): those are resent as soon as they are due, so that
        // a burst of losses costs a round trip, not a timeout each. Parts that
        // only wait in a queue are acknowledged in order, before any sent later. A flow that gives a part up gives up its other parts in
        // flight with it (the server is as unreachable for them).
        let mut resent: BTreeSet<(u16, u16)> = BTreeSet::new();
        let mut given_up: BTreeSet<(u16, u16)> = BTreeSet::new();
        for (&(job, round, server, part), p) in self.pending.iter_mut() {
            if p.queued || p.next > now {
                continue;
            }
            if p.retries >= self.config.aggregate_max_retries {
                given_up.insert((job, server));
                continue;
            }
            let initial = self.config.aggregate_rto;
            let flow = self
                .flows
                .entry((job, server))
                .or_insert_with(|| Flow::new(initial));
            let lost = std::mem::take(&mut p.lost);
            if lost {
                flow.on_loss(now);
                Self::count(&mut self.stats, &mut self.jobs, job, |s| {
                    s.aggregate_lost += 1
                });
            } else if !resent.insert((job, server)) {
                p.next = now + flow.rtt.backoff(p.retries);
                Self::count(&mut self.stats, &mut self.jobs, job, |s| {
                    s.aggregate_deferred += 1
                });
                continue;
            } else if p.retries == 0 {
                flow.on_timeout(now);
            }
            p.retries += 1;
            p.last_sent = now;
            p.next = now + flow.rtt.backoff(p.retries);
            Self::count(&mut self.stats, &mut self.jobs, job, |s| {
                s.aggregate_retransmits += 1
            });
            log::trace!(
                "switch: job {job} round {round} part {part} for server {server} resent (retry {}, \
                 sent {:?} ago, window {})",
                p.retries,
                now - p.sent,
                flow.window()
            );
            out.push(SwitchAction::Aggregate {
                job,
                server,
                round,
                part,
                retransmit: true,
                payload: p.payload.clone(),
            });
        }
        let abandoned: Vec<PartKey> = self
            .pending
            .iter()
            .filter(|(k, p)| !p.queued && given_up.contains(&(k.0, k.2)))
            .map(|(&k, _)| k)
            .collect();
        for key in abandoned {
            self.pending.remove(&key);
            if let Some(flow) = self.flows.get_mut(&(key.0, key.2)) {
                flow.on_abandon();
            }
            out.extend(self.drain(key.0, key.2, now));
            Self::count(&mut self.stats, &mut self.jobs, key.0, |s| {
                s.aggregate_abandoned += 1
            });
            log::warn!(
                "switch: job {} round {} part {} for server {} given up unacknowledged",
                key.0,
                key.1,
                key.3,
                key.2
            );
        }
        out
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        let rounds = self.jobs.iter().flat_map(|j| {
            let timeout = j.round_timer.rto();
            j.rounds
                .iter()
                .filter(|r| r.open)
                .map(move |r| r.opened_at + timeout)
        });
        let parts = self.pending.values().filter(|p| !p.queued).map(|p| p.next);
        rounds.chain(parts).min()
    }

    /// An answer to `h`, with the job's token when `h` came from a member
    /// (0 otherwise: an unknown job or worker).
    fn respond(&self, h: &HotRepr, kind: ResponseKind) -> Vec<u8> {
        let member = !matches!(
            kind,
            ResponseKind::Fallback {
                reason: FallbackReason::UnknownJob | FallbackReason::BadWorker,
                ..
            }
        );
        let token = if member {
            self.job_token(h.job).unwrap_or(0)
        } else {
            0
        };
        ResponseRepr {
            job: h.job,
            worker: h.worker,
            round: h.round,
            seq: h.seq,
            kind,
            token,
        }
        .to_bytes()
    }

    fn fallback(
        &mut self,
        h: &HotRepr,
        reason: FallbackReason,
        duplicate: bool,
    ) -> Vec<SwitchAction> {
        if !duplicate {
            self.stats.fallbacks[reason as usize] += 1;
        }
        let payload = self.respond(h, ResponseKind::Fallback { reason, duplicate });
        vec![SwitchAction::Fallback {
            job: h.job,
            worker: h.worker,
            reason,
            payload,
        }]
    }

    fn ack(&mut self, h: &HotRepr, duplicate: bool) -> SwitchAction {
        self.stats.acks += 1;
        SwitchAction::Ack {
            job: h.job,
            worker: h.worker,
            payload: self.respond(h, ResponseKind::Ack { duplicate }),
        }
    }

    fn on_hot(
        &mut self,
        now: Timestamp,
        source: Source,
        h: &HotRepr,
        len: usize,
    ) -> Vec<SwitchAction> {
        let Some(j) = self.job_index(h.job) else {
            // A resend may have been added by an earlier incarnation that had
            // the job (a switch started again that has not admitted it yet).
            let reason = if h.retransmission {
                FallbackReason::Unopened
            } else {
                FallbackReason::UnknownJob
            };
            return self.fallback(h, reason, false);
        };
        let (n, k, fixed) = {
            let c = &self.jobs[j].cfg;
            (c.workers, c.hot_keys, c.number.is_fixed())
        };
        if h.worker >= n {
            return self.fallback(h, FallbackReason::BadWorker, false);
        }
        if self
            .admit_member(j, Role::Worker, h.worker, source, Some(h.token))
            .is_err()
        {
            return Vec::new();
        }
        if h.fixed != fixed || len > self.config.packet_size {
            return self.fallback(h, FallbackReason::BadFormat, false);
        }
        if h.seq >= self.config.max_seqs {
            return self.fallback(h, FallbackReason::SeqOverflow, false);
        }
        let pairs = h.body.pairs();
        if pairs.iter().any(|&(r, _)| r >= k) {
            return self.fallback(h, FallbackReason::OutOfRange, false);
        }
        let newest = self.jobs[j].newest;
        if newest != 0 && h.round > newest.saturating_add(self.config.max_round_ahead) {
            // Not remembered: a stray or forged round far ahead would make
            // every later round of the job late in its copy.
            return self.fallback(h, FallbackReason::FarAhead, false);
        }

        let w = self.config.copies as usize;
        let copy = (h.round % w as u32) as usize;
        let worker = h.worker as usize;
        let ri = (worker * w + copy) * self.config.max_seqs as usize + h.seq as usize;
        let rec = self.jobs[j].records[ri];
        if rec.round == h.round {
            self.stats.duplicates += 1;
            return match FallbackReason::from_code(rec.outcome) {
                None => vec![self.ack(h, true)],
                Some(reason) => self.fallback(h, reason, true),
            };
        }
        if rec.round > h.round {
            self.stats.stale += 1;
            return Vec::new();
        }

        let job = &mut self.jobs[j];
        let rs = &mut job.rounds[copy];
        let outcome = if job.first_opened != 0 && h.round < job.first_opened {
            // Never opened here: a switch started again knows nothing of
            // what its earlier incarnation added or closed in this round.
            FallbackReason::Unopened as u8
        } else if rs.round == h.round {
            if rs.open {
                ADDED
            } else {
                job.late(h.round, worker, now);
                FallbackReason::Late as u8
            }
        } else if rs.round < h.round {
            if rs.open {
                FallbackReason::WindowFull as u8
            } else if h.retransmission {
                // A resend whose round nobody opened here: its first copy may
                // have reached a switch before this one, which may have
                // closed the round.
                FallbackReason::Unopened as u8
            } else {
                *rs = RoundState {
                    round: h.round,
                    open: true,
                    opened_at: now,
                    complete_workers: 0,
                };
                job.newest = job.newest.max(h.round);
                if job.first_opened == 0 {
                    job.first_opened = h.round;
                }
                ADDED
            }
        } else {
            job.late(h.round, worker, now);
            FallbackReason::Late as u8
        };
        if outcome == FallbackReason::WindowFull as u8 {
            // Not now: the copy frees when the older round closes (at most
            // round_timeout after it opened). Nothing is recorded, so the
            // worker's retransmission is decided afresh.
            return self.fallback(h, FallbackReason::WindowFull, false);
        }
        self.jobs[j].records[ri] = Record {
            round: h.round,
            outcome,
        };
        if let Some(reason) = FallbackReason::from_code(outcome) {
            return self.fallback(h, reason, false);
        }

        self.add(j, copy, h.round, &pairs);
        let mut out = vec![self.ack(h, false)];

        let words = self.config.cover_words();
        let job = &mut self.jobs[j];
        let cw = &mut job.cover[(worker * w + copy) * words + h.seq as usize / COVER_WORD_BITS];
        if cw.round != h.round {
            *cw = CoverWord {
                round: h.round,
                bits: 0,
            };
        }
        cw.bits |= 1 << (h.seq as usize % COVER_WORD_BITS);

        let wr = &mut job.workers[copy * n as usize + worker];
        if wr.round != h.round {
            *wr = WorkerRound {
                round: h.round,
                handled: 0,
                total: 0,
            };
        }
        let was_complete = wr.total != 0 && wr.handled == wr.total;
        wr.handled += 1;
        if h.done {
            wr.total = u32::from(h.seq) + 1;
        }
        if !was_complete && wr.total != 0 && wr.handled == wr.total {
            let rs = &mut job.rounds[copy];
            rs.complete_workers += 1;
            if rs.complete_workers == n {
                out.extend(self.close(j, copy, now, false));
            }
        }
        out
    }

    fn add(&mut self, j: usize, copy: usize, round: u32, pairs: &[(u32, u32)]) {
        let job = &self.jobs[j];
        let mode = job.cfg.number;
        let base = (copy * self.config.slots as usize) + job.slot_base as usize;
        let mut load = [0u32; MAX_REGISTERS];
        let mut passes = 1;
        for &(rank, raw) in pairs {
            let loc = job.layout.locate(rank);
            let reg = loc.register as usize;
            load[reg] += 1;
            passes = passes.max(load[reg]);
            let slot = &mut self.registers[reg][base + loc.slot as usize];
            if slot.round != round {
                *slot = Slot {
                    round,
                    value: raw,
                    hits: 1,
                };
            } else {
                let (v, saturated) = mode.add(slot.value, raw);
                slot.value = v;
                slot.hits += 1;
                self.stats.saturations += u64::from(saturated);
            }
        }
        self.stats.added_packets += 1;
        self.stats.added_pairs += pairs.len() as u64;
        self.stats.passes += u64::from(passes);
        self.stats.recirculations += u64::from(passes - 1);
    }

    fn close(&mut self, j: usize, copy: usize, now: Timestamp, flushed: bool) -> Vec<SwitchAction> {
        let job = &mut self.jobs[j];
        let rs = &mut job.rounds[copy];
        rs.open = false;
        let round = rs.round;
        if flushed {
            self.stats.rounds_flushed += 1;
            job.round_timer.on_timeout();
            if job.flushed.len() == FLUSHED_REMEMBERED {
                job.flushed.pop_front();
            }
            job.flushed.push_back((round, rs.opened_at, 0));
        } else {
            self.stats.rounds_completed += 1;
            job.round_timer.sample(now.saturating_since(rs.opened_at));
        }
        let cfg = &self.config;
        let job = &mut self.jobs[j];
        let r = cfg.registers;
        let n = job.cfg.workers as usize;
        let w = cfg.copies as usize;

        let mut per_server: Vec<Vec<(u32, u32)>> = vec![Vec::new(); job.cfg.servers as usize];
        let base = copy * cfg.slots as usize + job.slot_base as usize;
        for s in 0..job.layout.region_slots() {
            for reg in 0..r {
                if let Some(rank) = job.layout.rank_at(reg, s) {
                    let slot = self.registers[reg as usize][base + s as usize];
                    if slot.round == round {
                        per_server[job.cfg.owner(rank) as usize].push((rank, slot.value));
                        job.hits[rank as usize] += u64::from(slot.hits);
                    }
                }
            }
        }
        let mut readout = u64::from(job.layout.region_slots());

        let words = cfg.cover_words();
        let (mut contributed, mut complete) = (0u64, 0u64);
        let mut coverage: Vec<(u16, u16, u16, CoverBits)> = Vec::new();
        for wk in 0..n {
            readout += words.div_ceil(r as usize) as u64;
            let wr = job.workers[copy * n + wk];
            if wr.round != round || wr.handled == 0 {
                continue;
            }
            contributed |= 1 << wk;
            if wr.total != 0 && wr.handled == wr.total {
                // Every packet up to its DONE was added: the aggregate's
                // complete bit says so, no coverage part is needed.
                complete |= 1 << wk;
                continue;
            }
            let at = (wk * w + copy) * words;
            let bits: Vec<u32> = job.cover[at..at + words]
                .iter()
                .map(|c| if c.round == round { c.bits } else { 0 })
                .collect();
            coverage.extend(coverage_parts(
                wk as u16,
                &bits,
                cfg.coverage_bits_per_packet(),
            ));
        }
        self.stats.readout_passes += readout;

        let budget = cfg.aggregate_run_bytes_per_packet();
        let fixed = job.cfg.number.is_fixed();
        let job_id = job.cfg.id;
        let mut out = Vec::new();
        for (server, mut pairs) in per_server.into_iter().enumerate() {
            pairs.sort_unstable_by_key(|p| p.0);
            let chunks = aggregate::split_parts(&pairs, budget);
            let data_parts = chunks.len();
            let parts = (data_parts + coverage.len()) as u16;
            let total = pairs.len() as u32;
            let mut payloads = Vec::with_capacity(parts as usize);
            for (d, chunk) in chunks.into_iter().enumerate() {
                payloads.push(
                    AggregateRepr {
                        job: job_id,
                        server: server as u16,
                        round,
                        part: d as u16,
                        parts,
                        contributed,
                        complete,
                        fixed,
                        flushed,
                        total,
                        pairs: chunk.to_vec(),
                    }
                    .to_bytes(),
                );
            }
            for (i, (worker, first_seq, nbits, bits)) in coverage.iter().enumerate() {
                payloads.push(
                    CoverageRepr {
                        job: job_id,
                        server: server as u16,
                        round,
                        part: (data_parts + i) as u16,
                        parts,
                        worker: *worker,
                        first_seq: *first_seq,
                        nbits: *nbits,
                        bits: bits.clone(),
                    }
                    .to_bytes(),
                );
            }
            let server = server as u16;
            for (part, payload) in payloads.into_iter().enumerate() {
                let key = (job_id, round, server, part as u16);
                self.stats.aggregate_parts += 1;
                self.pending.insert(
                    key,
                    Pending {
                        payload,
                        queued: true,
                        sent: now,
                        last_sent: now,
                        next: now,
                        retries: 0,
                        lost: false,
                    },
                );
                self.flow(job_id, server).enqueue(key);
            }
            out.extend(self.drain(job_id, server, now));
        }
        log::debug!(
            "switch: job {job_id} round {round} {} (contributed {contributed:#x}, complete {complete:#x})",
            if flushed { "flushed" } else { "complete" }
        );
        out
    }

    fn on_aggregate_ack(
        &mut self,
        now: Timestamp,
        source: Source,
        a: AggregateAckRepr,
    ) -> Vec<SwitchAction> {
        if let Some(j) = self
            .job_index(a.job)
            .filter(|&j| a.server < self.jobs[j].cfg.servers)
        {
            if self
                .admit_member(j, Role::Server, a.server, source, Some(a.token))
                .is_err()
            {
                return Vec::new();
            }
        }
        let key = (a.job, a.round, a.server, a.part);
        // An acknowledgement of a part never sent (still waiting for the
        // window) is not genuine: taking it would leave the part's place in
        // the window's queue behind, and the window would shrink for good.
        let p = match self.pending.entry(key) {
            Entry::Occupied(e) if !e.get().queued => e.remove(),
            _ => return Vec::new(),
        };
        self.stats.aggregate_acked += 1;
        // Karn's rule: a part sent more than once says nothing certain about
        // the round trip. But before the first measurement the time since
        // its first copy is taken: an upper bound, and on a link slower than
        // the first timeout no part would otherwise ever be sent just once.
        let flow = self.flow(a.job, a.server);
        let rtt = (p.retries == 0 || flow.rtt.samples() == 0).then(|| now - p.sent);
        flow.on_ack(rtt);
        if p.retries == 0 {
            self.lost_before(key, p.sent, now);
        }
        self.drain(a.job, a.server, now)
    }

    /// Part `acked` of a flow, sent once at `acked_sent`, was acknowledged
    /// at `now`: parts of the flow last sent before it and still in flight
    /// are lost if still unacknowledged a reorder window from now. Parts
    /// leave a flow in key order (rounds, then parts), so only keys below
    /// `acked` can have left before it.
    fn lost_before(&mut self, acked: PartKey, acked_sent: Timestamp, now: Timestamp) {
        let (job, server) = (acked.0, acked.2);
        let Some(flow) = self.flows.get(&(job, server)) else {
            return;
        };
        let at = now + flow.reorder_window();
        for (k, q) in self.pending.range_mut(..acked) {
            if k.0 == job && k.2 == server && !q.queued && !q.lost && q.last_sent < acked_sent {
                q.lost = true;
                q.next = q.next.min(at);
            }
        }
    }

    /// Sends the parts waiting for `(job, server)` that its window lets out.
    fn drain(&mut self, job: u16, server: u16, now: Timestamp) -> Vec<SwitchAction> {
        let mut out = Vec::new();
        let flow = self.flow(job, server);
        let rto = flow.rtt.rto();
        let mut keys = Vec::new();
        while let Some(key) = flow.next_to_send() {
            keys.push(key);
        }
        for key in keys {
            let Some(p) = self.pending.get_mut(&key) else {
                continue;
            };
            p.queued = false;
            p.sent = now;
            p.last_sent = now;
            p.next = now + rto;
            out.push(SwitchAction::Aggregate {
                job,
                server,
                round: key.1,
                part: key.3,
                retransmit: false,
                payload: p.payload.clone(),
            });
        }
        out
    }

    /// The aggregate flow to `(job, server)`.
    fn flow(&mut self, job: u16, server: u16) -> &mut Flow<PartKey> {
        let initial = self.config.aggregate_rto;
        self.flows
            .entry((job, server))
            .or_insert_with(|| Flow::new(initial))
    }

    /// The smoothed round trip of aggregates to `(job, server)`, once measured.
    pub fn aggregate_srtt(&self, job: u16, server: u16) -> Option<std::time::Duration> {
        self.flows.get(&(job, server)).and_then(|f| f.rtt.srtt())
    }

    /// Aggregate parts allowed in flight to `(job, server)` now.
    pub fn aggregate_window(&self, job: u16, server: u16) -> Option<u32> {
        self.flows.get(&(job, server)).map(|f| f.window())
    }
}

/// Coverage of one worker as parts: one ALL part when packets `0..n` are
/// all covered, else bitmaps of at most `chunk_bits` sequence numbers.
fn coverage_parts(
    worker: u16,
    words: &[u32],
    chunk_bits: usize,
) -> Vec<(u16, u16, u16, CoverBits)> {
    let bit = |i: usize| words[i / COVER_WORD_BITS] >> (i % COVER_WORD_BITS) & 1 == 1;
    let total_bits = words.len() * COVER_WORD_BITS;
    let Some(highest) = (0..total_bits).rev().find(|&i| bit(i)) else {
        return Vec::new();
    };
    let nbits = highest + 1;
    let ones: u32 = words.iter().map(|w| w.count_ones()).sum();
    if ones as usize == nbits {
        return vec![(worker, 0, nbits as u16, CoverBits::All)];
    }
    (0..nbits)
        .step_by(chunk_bits)
        .map(|first| {
            let len = chunk_bits.min(nbits - first);
            let mut map = vec![0u8; len.div_ceil(8)];
            for i in 0..len {
                if bit(first + i) {
                    map[i / 8] |= 1 << (i % 8);
                }
            }
            (worker, first as u16, len as u16, CoverBits::Map(map))
        })
        .collect()
}

#[cfg(test)]
mod member_tests;
#[cfg(test)]
mod tests;
