//! The worker side of the hot path.
//!
//! [`Worker::push`] takes the hot `(rank, value)` pairs of one push (one
//! round), packs them (dense blocks for ranks below `dense_ranks`, then
//! Algorithm 1 for the rest), numbers the packets `0..n` and marks the last
//! one DONE. Packets go out up to the worker's congestion window at a time
//! (below); each is
//! settled by the switch's ACK (added) or FALLBACK (its pairs come back as a
//! certain [`Fallback`]), or, after `worker_max_retries` retransmissions
//! (same seq, RETX flag) without an answer, given up (its pairs come back as
//! an uncertain [`Fallback`] that the server reconciles by coverage). When
//! every packet of a round is settled the worker reports
//! [`WorkerAction::RoundDone`].
//!
//! A round `r` starts only when every round up to `r - copies` is settled:
//! the switch shares one record per sequence number between rounds `r` and
//! `r + copies`, so this keeps a retransmission from ever meeting another
//! round's record. Later pushes wait in a queue.
//!
//! # Congestion window
//!
//! Jobs that share a switch, and the links to it, slow each other down when
//! every worker sends all its packets at once (ATP). A worker keeps at most
//! its window of hot packets in flight: [`INITIAL_WINDOW`] at first, one
//! more per ACK up to the first loss (slow start), then one more per
//! window's worth of ACKs, halved when a packet times out (at most once per
//! timeout interval), between 1 and `worker_max_in_flight`. The signal is
//! loss alone: a software switch's socket buffer and a Tofino's queues drop
//! when full, and nothing on the path marks packets (a mark in the ACK from
//! the queue depth a Tofino's egress can read is not done). FALLBACK
//! answers, WindowFull included, say nothing about the path and leave the
//! window as it is.
//!
//! # A switch started again
//!
//! An ACK settles a packet, but its values live in the switch until the
//! round's aggregate reaches the server. A switch killed and started again
//! has lost them, and the workers would never send them again. So the
//! worker keeps the pairs of the packets the switch added, for its latest
//! settled rounds (at most `worker_retain_pairs`), and when told that the
//! switch was started again ([`Worker::restart`], from the servers, which
//! see its epoch change) hands them back: each kept round as
//! [`WorkerAction::Resettle`], uncertain batches the server applies unless
//! an aggregate it has already holds them; each round still going is
//! settled at once, every packet to the servers (added ones uncertain,
//! unanswered ones given up, unsent ones certain); and rounds up to the
//! newest one the server had an aggregate for are not sent to the new
//! switch at all (it would take them for new rounds, and the server for a
//! second aggregate of a round it has): their pairs go to the servers.

use std::collections::{BTreeMap, VecDeque};

use thiserror::Error;

use crate::config::{Config, ConfigError, JobConfig};
use crate::fallback::{Fallback, FallbackCause};
use crate::flow::Window;
use crate::layout::Layout;
use crate::packing::{pack, passes};
use crate::rto::RttEstimator;
use crate::stats::WorkerStats;
use crate::time::Timestamp;
use crate::wire::hot::{self, flags};
use crate::wire::{FallbackReason, HotBody, HotRepr, Message, ResponseKind};

/// What the worker wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerAction {
    /// Send this datagram to the switch.
    Send(Vec<u8>),
    /// Send these pairs to their servers directly (with the cold part).
    Fallback(Fallback),
    /// Every packet of this round is settled at the switch.
    RoundDone(RoundSummary),
    /// After [`Worker::restart`]: a round settled before, whose added
    /// packets the switch lost; their pairs go to the round's servers as
    /// uncertain batches (cause `Restarted`), which a server takes only
    /// while it still waits for the round.
    Resettle {
        /// Round.
        round: u32,
        /// One batch per added packet with pairs.
        batches: Vec<Fallback>,
    },
}

/// How one round's hot part went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoundSummary {
    /// Round.
    pub round: u32,
    /// Packets sent to the switch.
    pub packets: u16,
    /// Packets the switch added.
    pub added: u16,
    /// Packets the switch refused (certain fallback).
    pub fallen_back: u16,
    /// Packets given up without an answer (uncertain fallback).
    pub given_up: u16,
    /// Packets never sent because the round exceeded `max_seqs` (certain fallback).
    pub overflow: u32,
}

/// A push the worker refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WorkerError {
    /// Round 0 is reserved.
    #[error("round 0 is reserved")]
    RoundZero,
    /// Rounds must increase.
    #[error("round {round} after round {last}: rounds must increase")]
    RoundNotIncreasing {
        /// Round pushed.
        round: u32,
        /// Last round pushed.
        last: u32,
    },
    /// A rank that is not hot.
    #[error("hot rank {rank} out of range (the job has {hot_keys} hot keys)")]
    RankOutOfRange {
        /// The rank.
        rank: u32,
        /// Hot keys of the job.
        hot_keys: u32,
    },
}

/// Hot packets a worker sends before its first ACK; the window then grows
/// by one per ACK (slow start) up to `worker_max_in_flight`, and halves on a
/// timeout (module docs).
pub const INITIAL_WINDOW: u32 = 16;

/// A packet's pairs and, for a dense block, its first rank.
type Body = (Vec<(u32, f32)>, Option<u32>);

/// A settled round's added packets: `(seq, pairs)`.
type Kept = Vec<(u16, Vec<(u32, f32)>)>;

#[derive(Debug, Clone, Copy)]
enum TxState {
    Unsent,
    InFlight {
        /// When the first copy left.
        first_sent: Timestamp,
        deadline: Timestamp,
        /// Resends after a timeout.
        retries: u32,
        /// WindowFull answers: the switch's copy of the round still held an
        /// older open round, nothing was added or recorded.
        busy: u32,
        /// Waiting, after a WindowFull answer, to send again at `deadline`.
        parked: bool,
    },
    Settled,
}

#[derive(Debug)]
struct TxPacket {
    pairs: Vec<(u32, f32)>,
    bytes: Vec<u8>,
    state: TxState,
}

impl TxPacket {
    /// The packet, showing `token` (the job's token as the worker knows it
    /// now, which may have come after the packet was built).
    fn send(&mut self, token: u32) -> WorkerAction {
        hot::Packet::new_unchecked(&mut self.bytes[..]).set_token(token);
        WorkerAction::Send(self.bytes.clone())
    }

    /// The packet again after the switch answered it `WindowFull` (not
    /// recorded), now in `state`: flagged RETX only if it was resent before
    /// (an earlier copy may have been added, by this switch or one before).
    fn again(&mut self, state: TxState, token: u32) -> WorkerAction {
        self.state = state;
        self.send(token)
    }

    /// The packet again, flagged RETX, now in `state`.
    fn resend(&mut self, state: TxState, token: u32) -> WorkerAction {
        self.state = state;
        let mut view = hot::Packet::new_unchecked(&mut self.bytes[..]);
        let f = view.flags();
        view.set_flags(f | flags::RETX);
        self.send(token)
    }
}

#[derive(Debug)]
struct RoundTx {
    packets: Vec<TxPacket>,
    next_unsent: usize,
    unsettled: usize,
    summary: RoundSummary,
}

/// One worker of one job.
#[derive(Debug)]
pub struct Worker {
    config: Config,
    job: JobConfig,
    rank: u16,
    layout: Layout,
    last_round: u32,
    queued: VecDeque<(u32, Vec<(u32, f32)>)>,
    active: BTreeMap<u32, RoundTx>,
    in_flight: usize,
    rtt: RttEstimator,
    /// Packets allowed in flight (at most `worker_max_in_flight`): grows
    /// with ACKs, halves when a packet times out ([`Worker::window`]).
    window: Window,
    /// Whether the window rule holds ([`Worker::set_congestion_control`]).
    congestion_control: bool,
    stats: WorkerStats,
    /// Settled rounds' added packets, `(seq, pairs)`, oldest first, for
    /// [`Worker::restart`].
    kept: VecDeque<(u32, Kept)>,
    /// Pairs in `kept`.
    kept_pairs: usize,
    /// Rounds up to this one go to the servers, not the switch
    /// ([`Worker::restart`]).
    bypass_through: u32,
    /// The job's membership token as this worker knows it: its key's, else
    /// the one in the switch's latest answer (0: none yet).
    token: u32,
}

impl Worker {
    /// Worker `rank` of job `job`; fails on a bad configuration or a job or
    /// rank the configuration does not have.
    pub fn new(config: &Config, job: u16, rank: u16) -> Result<Worker, ConfigError> {
        config.validate()?;
        let jc = config
            .job(job)
            .filter(|j| rank < j.workers)
            .ok_or(ConfigError::UnknownMember { job, rank })?;
        Ok(Worker {
            layout: Layout::new(jc.layout, config.registers, jc.hot_keys),
            job: jc.clone(),
            config: config.clone(),
            rank,
            last_round: 0,
            queued: VecDeque::new(),
            active: BTreeMap::new(),
            in_flight: 0,
            rtt: RttEstimator::new(config.worker_rto),
            window: Window::new(
                INITIAL_WINDOW,
                u32::try_from(config.worker_max_in_flight).unwrap_or(u32::MAX),
                true,
            ),
            congestion_control: true,
            stats: WorkerStats::default(),
            kept: VecDeque::new(),
            kept_pairs: 0,
            bypass_through: 0,
            token: jc.token,
        })
    }

    /// Counters.
    pub fn stats(&self) -> &WorkerStats {
        &self.stats
    }

    /// The job's membership token this worker shows (0: none yet).
    pub fn token(&self) -> u32 {
        self.token
    }

    /// Hot packets this worker lets be in flight now: its congestion window
    /// (module docs), or `worker_max_in_flight` without the window rule.
    pub fn window(&self) -> usize {
        if self.congestion_control {
            (self.window.get() as usize).min(self.config.worker_max_in_flight)
        } else {
            self.config.worker_max_in_flight
        }
    }

    /// Turns the window rule on (the default) or off (every packet up to
    /// `worker_max_in_flight` leaves at once: what workers did before it,
    /// kept to measure the rule against).
    pub fn set_congestion_control(&mut self, on: bool) {
        self.congestion_control = on;
    }

    /// Rounds pushed but not yet settled (sending or queued).
    pub fn unsettled_rounds(&self) -> usize {
        self.active.len() + self.queued.len()
    }

    /// Whether nothing is queued, in flight or unsettled.
    pub fn is_idle(&self) -> bool {
        self.unsettled_rounds() == 0
    }

    /// Starts the hot part of round `round` with `pairs` (hot rank, value).
    pub fn push(
        &mut self,
        now: Timestamp,
        round: u32,
        pairs: Vec<(u32, f32)>,
    ) -> Result<Vec<WorkerAction>, WorkerError> {
        if round == 0 {
            return Err(WorkerError::RoundZero);
        }
        if round <= self.last_round {
            return Err(WorkerError::RoundNotIncreasing {
                round,
                last: self.last_round,
            });
        }
        if let Some(&(rank, _)) = pairs.iter().find(|p| p.0 >= self.job.hot_keys) {
            return Err(WorkerError::RankOutOfRange {
                rank,
                hot_keys: self.job.hot_keys,
            });
        }
        self.last_round = round;
        self.stats.rounds += 1;
        self.queued.push_back((round, pairs));
        Ok(self.service(now))
    }

    /// Handles a datagram from the switch. Anything but a response for this
    /// worker is counted and dropped.
    pub fn handle_packet(&mut self, now: Timestamp, bytes: &[u8]) -> Vec<WorkerAction> {
        let resp = match Message::parse(bytes) {
            Ok(Message::Response(r)) if r.job == self.job.id && r.worker == self.rank => r,
            other => {
                log::debug!("worker {}: unexpected datagram: {other:?}", self.rank);
                self.stats.bad_packets += 1;
                return Vec::new();
            }
        };
        // The switch hands the job's token to its members in every answer
        // (a job with a key has its own from the start).
        if resp.token != 0 && self.job.token == 0 {
            self.token = resp.token;
        }
        let Some(tx) = self.active.get_mut(&resp.round) else {
            self.stats.stale_responses += 1;
            return Vec::new();
        };
        let Some(p) = tx.packets.get_mut(resp.seq as usize) else {
            self.stats.stale_responses += 1;
            return Vec::new();
        };
        let TxState::InFlight {
            first_sent,
            retries,
            busy,
            parked,
            ..
        } = p.state
        else {
            self.stats.stale_responses += 1;
            return Vec::new();
        };
        // The switch's first answer for a packet (not marked DUP) answers its
        // first copy to arrive: a round trip of the first copy unless that
        // one was lost, and then an overestimate, never an underestimate.
        let first_answer = match resp.kind {
            ResponseKind::Ack { duplicate } | ResponseKind::Fallback { duplicate, .. } => {
                !duplicate
            }
        };
        if busy == 0 && !parked && (retries == 0 || first_answer) {
            self.rtt.sample(now - first_sent);
            self.stats.srtt_us = self.rtt.srtt().map_or(0, |d| d.as_micros() as u64);
        }
        let mut out = Vec::new();
        let busy_answer = matches!(
            resp.kind,
            ResponseKind::Fallback {
                reason: FallbackReason::WindowFull,
                ..
            }
        );
        if busy_answer {
            // Not added, not recorded: send again once the older round has
            // had time to close, or give up (uncertain: an earlier copy may
            // still be added) when even a flush should have freed the copy.
            self.stats.busy += 1;
            if now - first_sent < self.config.round_timeout * 2 {
                let wait = self
                    .rtt
                    .backoff(busy + 1)
                    .max(self.config.round_timeout / 16);
                p.state = TxState::InFlight {
                    first_sent,
                    deadline: now + wait,
                    retries,
                    busy: busy + 1,
                    parked: true,
                };
                return out;
            }
            self.in_flight -= 1;
            out.push(WorkerAction::Fallback(give_up(
                (self.job.id, self.rank),
                resp.round,
                resp.seq,
                tx,
                &mut self.stats,
            )));
        } else {
            p.state = TxState::Settled;
            self.in_flight -= 1;
            tx.unsettled -= 1;
            match resp.kind {
                ResponseKind::Ack { .. } => {
                    self.stats.acked += 1;
                    tx.summary.added += 1;
                    self.window.on_ack();
                }
                ResponseKind::Fallback { reason, .. } => {
                    self.stats.fallback_packets += 1;
                    tx.summary.fallen_back += 1;
                    out.push(WorkerAction::Fallback(Fallback {
                        job: self.job.id,
                        round: resp.round,
                        worker: self.rank,
                        seq: resp.seq,
                        cause: FallbackCause::Switch(reason),
                        pairs: std::mem::take(&mut p.pairs),
                    }));
                }
            }
        }
        if tx.unsettled == 0 {
            if let Some(tx) = self.active.remove(&resp.round) {
                out.push(self.finish(resp.round, tx));
            }
        }
        out.extend(self.service(now));
        out
    }

    /// A round every packet of which is settled: keeps its added packets'
    /// pairs (dropping the oldest kept rounds beyond `worker_retain_pairs`)
    /// and reports it.
    fn finish(&mut self, round: u32, tx: RoundTx) -> WorkerAction {
        let added: Kept = tx
            .packets
            .into_iter()
            .enumerate()
            .filter(|(_, p)| !p.pairs.is_empty())
            .map(|(seq, p)| (seq as u16, p.pairs))
            .collect();
        let n: usize = added.iter().map(|(_, p)| p.len()).sum();
        if n > 0 && n <= self.config.worker_retain_pairs {
            self.kept_pairs += n;
            self.kept.push_back((round, added));
            while self.kept_pairs > self.config.worker_retain_pairs {
                let Some((_, old)) = self.kept.pop_front() else {
                    break;
                };
                self.kept_pairs -= old.iter().map(|(_, p)| p.len()).sum::<usize>();
                self.stats.unkept_rounds += 1;
            }
        } else if n > 0 {
            self.stats.unkept_rounds += 1;
        }
        WorkerAction::RoundDone(tx.summary)
    }

    /// The switch was started again (its epoch changed) and lost what it
    /// held; the servers had aggregates of rounds up to `through`, and may
    /// still need this worker's rounds from `resend_from` on (module docs).
    /// Returns the kept rounds from `resend_from` on as
    /// [`WorkerAction::Resettle`] (older kept ones are dropped), the rounds
    /// going now settled (their fallbacks and `RoundDone`), and what queued
    /// pushes send.
    pub fn restart(&mut self, now: Timestamp, through: u32, resend_from: u32) -> Vec<WorkerAction> {
        self.stats.restarts += 1;
        self.bypass_through = self.bypass_through.max(through);
        let (job, rank) = (self.job.id, self.rank);
        let batch = |round, seq, cause, pairs| Fallback {
            job,
            round,
            worker: rank,
            seq,
            cause,
            pairs,
        };
        let mut out: Vec<WorkerAction> = std::mem::take(&mut self.kept)
            .into_iter()
            .filter(|&(round, _)| round >= resend_from)
            .map(|(round, packets)| WorkerAction::Resettle {
                round,
                batches: packets
                    .into_iter()
                    .map(|(seq, pairs)| batch(round, seq, FallbackCause::Restarted, pairs))
                    .collect(),
            })
            .collect();
        self.kept_pairs = 0;
        for (round, mut tx) in std::mem::take(&mut self.active) {
            for (seq, p) in tx.packets.iter_mut().enumerate() {
                let cause = match p.state {
                    TxState::Settled if p.pairs.is_empty() => continue,
                    TxState::Settled => FallbackCause::Restarted,
                    TxState::InFlight { .. } => {
                        self.in_flight -= 1;
                        self.stats.given_up += 1;
                        FallbackCause::NoResponse
                    }
                    TxState::Unsent => FallbackCause::Bypassed,
                };
                if cause.is_certain() {
                    tx.summary.fallen_back += 1;
                } else {
                    tx.summary.given_up += 1;
                }
                p.state = TxState::Settled;
                let pairs = std::mem::take(&mut p.pairs);
                out.push(WorkerAction::Fallback(batch(
                    round, seq as u16, cause, pairs,
                )));
            }
            // Nothing of the round is left in the switch's sum for the
            // server to wait for: added packets are batches now, or empty.
            tx.summary.added = 0;
            out.push(WorkerAction::RoundDone(tx.summary));
        }
        out.extend(self.service(now));
        out
    }

    /// Retransmits packets whose timeout passed and gives up on those out of
    /// retries.
    pub fn poll(&mut self, now: Timestamp) -> Vec<WorkerAction> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        for (&round, tx) in self.active.iter_mut() {
            for seq in 0..tx.packets.len() {
                let p = &mut tx.packets[seq];
                let TxState::InFlight {
                    first_sent,
                    deadline,
                    retries,
                    busy,
                    parked,
                } = p.state
                else {
                    continue;
                };
                if deadline > now {
                    continue;
                }
                if parked {
                    self.stats.busy_resends += 1;
                    out.push(p.again(
                        TxState::InFlight {
                            first_sent,
                            deadline: now + self.rtt.backoff(retries),
                            retries,
                            busy,
                            parked: false,
                        },
                        self.token,
                    ));
                    continue;
                }
                // Give up after `worker_max_retries` resends, and not before the
                // budget of the configured timeout (`worker_max_retries` times
                // `worker_rto`) has passed: a learned short timeout resends
                // sooner, it does not give up sooner (a switch descheduled on a
                // loaded host is slow, not gone).
                let budget = self.config.worker_rto * self.config.worker_max_retries;
                if retries >= self.config.worker_max_retries && now - first_sent >= budget {
                    self.in_flight -= 1;
                    out.push(WorkerAction::Fallback(give_up(
                        (self.job.id, self.rank),
                        round,
                        seq as u16,
                        tx,
                        &mut self.stats,
                    )));
                } else {
                    self.stats.retransmits += 1;
                    // A timeout: the packet or its answer was lost, on a
                    // full queue most likely (one cut per timeout interval).
                    self.window.on_loss(now, self.rtt.rto());
                    out.push(p.resend(
                        TxState::InFlight {
                            first_sent,
                            deadline: now + self.rtt.backoff(retries + 1),
                            retries: retries + 1,
                            busy,
                            parked: false,
                        },
                        self.token,
                    ));
                }
            }
            if tx.unsettled == 0 {
                done.push(round);
            }
        }
        for round in done {
            if let Some(tx) = self.active.remove(&round) {
                out.push(self.finish(round, tx));
            }
        }
        out.extend(self.service(now));
        out
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        self.active
            .values()
            .flat_map(|tx| &tx.packets)
            .filter_map(|p| match p.state {
                TxState::InFlight { deadline, .. } => Some(deadline),
                _ => None,
            })
            .min()
    }

    /// Starts queued rounds the window allows and sends what fits in flight.
    fn service(&mut self, now: Timestamp) -> Vec<WorkerAction> {
        let mut out = Vec::new();
        while let Some(&(round, _)) = self.queued.front() {
            if let Some(&oldest) = self.active.keys().next() {
                if round - oldest >= u32::from(self.config.copies) {
                    break;
                }
            }
            let Some((round, pairs)) = self.queued.pop_front() else {
                break;
            };
            let (mut tx, overflow) = self.build(round, pairs);
            out.extend(overflow.into_iter().map(WorkerAction::Fallback));
            if round <= self.bypass_through {
                // A round the switch before may have closed: none of it to
                // the new one (module docs).
                self.stats.bypassed_rounds += 1;
                for (seq, p) in tx.packets.iter_mut().enumerate() {
                    out.push(WorkerAction::Fallback(Fallback {
                        job: self.job.id,
                        round,
                        worker: self.rank,
                        seq: seq as u16,
                        cause: FallbackCause::Bypassed,
                        pairs: std::mem::take(&mut p.pairs),
                    }));
                }
                tx.summary.fallen_back = tx.summary.packets;
                out.push(WorkerAction::RoundDone(tx.summary));
                continue;
            }
            self.active.insert(round, tx);
        }
        let max = self.window();
        for tx in self.active.values_mut() {
            while self.in_flight < max && tx.next_unsent < tx.packets.len() {
                let p = &mut tx.packets[tx.next_unsent];
                p.state = TxState::InFlight {
                    first_sent: now,
                    deadline: now + self.rtt.rto(),
                    retries: 0,
                    busy: 0,
                    parked: false,
                };
                out.push(p.send(self.token));
                tx.next_unsent += 1;
                self.in_flight += 1;
                self.stats.packets += 1;
            }
        }
        out
    }

    /// Packs a round into numbered packets; pairs past `max_seqs` packets
    /// come back as fallbacks.
    fn build(&mut self, round: u32, pairs: Vec<(u32, f32)>) -> (RoundTx, Vec<Fallback>) {
        let dense_n = self.job.dense_ranks;
        let mut bodies: Vec<Body> = Vec::new();
        if dense_n > 0 {
            let mut values = vec![0f32; dense_n as usize];
            let mut touched = vec![false; dense_n as usize];
            for &(r, v) in pairs.iter().filter(|p| p.0 < dense_n) {
                values[r as usize] += v;
                touched[r as usize] = true;
            }
            let per = self.config.dense_values_per_packet() as u32;
            for base in (0..dense_n).step_by(per as usize) {
                let end = (base + per).min(dense_n);
                let block = (base..end).map(|r| (r, values[r as usize])).collect();
                bodies.push((block, Some(base)));
            }
            for (block, _) in &mut bodies {
                block.retain(|&(r, _)| touched[r as usize]);
            }
        }
        let mut sparse: Vec<(u32, f32)> = pairs.into_iter().filter(|p| p.0 >= dense_n).collect();
        sparse.sort_by_key(|p| p.0);
        for packet in pack(
            &sparse,
            &self.layout,
            self.config.pairs_per_packet(),
            self.config.packing,
        ) {
            bodies.push((packet, None));
        }
        if bodies.is_empty() {
            bodies.push((Vec::new(), None));
        }

        let keep = bodies.len().min(self.config.max_seqs as usize);
        let overflow: Vec<Fallback> = bodies
            .drain(keep..)
            .map(|(pairs, _)| Fallback {
                job: self.job.id,
                round,
                worker: self.rank,
                seq: u16::MAX,
                cause: FallbackCause::TooManyPackets,
                pairs,
            })
            .collect();
        let overflow_pairs: usize = overflow.iter().map(|f| f.pairs.len()).sum();
        self.stats.overflow_pairs += overflow_pairs as u64;

        let mode = self.job.number;
        let mut packets = Vec::with_capacity(keep);
        for (seq, (pairs, dense_base)) in bodies.into_iter().enumerate() {
            let body = match dense_base {
                Some(base) => {
                    let per = self.config.dense_values_per_packet() as u32;
                    let end = (base + per).min(dense_n);
                    let mut values = vec![0u32; (end - base) as usize];
                    for &(r, v) in &pairs {
                        values[(r - base) as usize] = mode.encode(v);
                    }
                    HotBody::Dense { base, values }
                }
                None => HotBody::Sparse(pairs.iter().map(|&(r, v)| (r, mode.encode(v))).collect()),
            };
            let ranks: Vec<u32> = body.pairs().iter().map(|p| p.0).collect();
            self.stats.planned_recirculations += u64::from(passes(ranks, &self.layout) - 1);
            let repr = HotRepr {
                job: self.job.id,
                worker: self.rank,
                round,
                seq: seq as u16,
                retransmission: false,
                done: seq + 1 == keep,
                fixed: mode.is_fixed(),
                token: self.token,
                body,
            };
            packets.push(TxPacket {
                pairs,
                bytes: repr.to_bytes(),
                state: TxState::Unsent,
            });
        }
        let summary = RoundSummary {
            round,
            packets: keep as u16,
            overflow: overflow.len() as u32,
            ..Default::default()
        };
        (
            RoundTx {
                packets,
                next_unsent: 0,
                unsettled: keep,
                summary,
            },
            overflow,
        )
    }
}

/// Settles packet `seq` of `tx` as given up: its pairs go to the servers as
/// an uncertain fallback (the switch may hold them; the coverage decides).
fn give_up(
    (job, rank): (u16, u16),
    round: u32,
    seq: u16,
    tx: &mut RoundTx,
    stats: &mut WorkerStats,
) -> Fallback {
    let p = &mut tx.packets[seq as usize];
    p.state = TxState::Settled;
    tx.unsettled -= 1;
    tx.summary.given_up += 1;
    stats.given_up += 1;
    Fallback {
        job,
        round,
        worker: rank,
        seq,
        cause: FallbackCause::NoResponse,
        pairs: std::mem::take(&mut p.pairs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ResponseRepr;
    use std::time::Duration;

    fn config() -> Config {
        let mut c = Config::new(vec![JobConfig::new(1, 2, 64, 1)]);
        c.registers = 4;
        c.slots = 16;
        c.packet_size = 64;
        c
    }

    fn sends(actions: &[WorkerAction]) -> Vec<HotRepr> {
        actions
            .iter()
            .filter_map(|a| match a {
                WorkerAction::Send(b) => match Message::parse(b).unwrap() {
                    Message::Hot(h) => Some(h),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn answer(h: &HotRepr, kind: ResponseKind) -> Vec<u8> {
        ResponseRepr {
            job: h.job,
            worker: h.worker,
            round: h.round,
            seq: h.seq,
            kind,
            token: 0,
        }
        .to_bytes()
    }

    #[test]
    fn packs_numbers_and_marks_done() {
        let mut w = Worker::new(&config(), 1, 1).unwrap();
        let pairs: Vec<(u32, f32)> = (0..20).map(|r| (r * 3, r as f32)).collect();
        let out = w.push(Timestamp::ZERO, 5, pairs).unwrap();
        let hs = sends(&out);
        assert_eq!(
            hs.len(),
            5,
            "48-byte body: 6 pairs per packet, 4 registers: 4 per packet"
        );
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(
                (h.seq as usize, h.round, h.worker, h.done),
                (i, 5, 1, i == 4)
            );
            assert!(h.body.len() <= 4);
        }
        assert_eq!(w.stats().planned_recirculations, 0);
    }

    #[test]
    fn ack_fallback_and_give_up_settle_the_round() {
        let mut c = config();
        c.worker_max_retries = 2;
        let mut w = Worker::new(&c, 1, 0).unwrap();
        let hs = sends(
            &w.push(
                Timestamp::ZERO,
                1,
                vec![(0, 1.0), (1, 2.0), (4, 3.0), (5, 4.0), (8, 5.0)],
            )
            .unwrap(),
        );
        assert_eq!(hs.len(), 3);
        assert!(w
            .handle_packet(
                Timestamp(1),
                &answer(&hs[0], ResponseKind::Ack { duplicate: false })
            )
            .is_empty());
        let fb = w.handle_packet(
            Timestamp(2),
            &answer(
                &hs[1],
                ResponseKind::Fallback {
                    reason: FallbackReason::Late,
                    duplicate: false,
                },
            ),
        );
        assert!(
            matches!(&fb[..], [WorkerAction::Fallback(f)] if f.is_certain() && f.pairs.len() == 2 && f.seq == 1)
        );
        assert!(w
            .handle_packet(
                Timestamp(3),
                &answer(&hs[0], ResponseKind::Ack { duplicate: true })
            )
            .is_empty());
        assert_eq!(w.stats().stale_responses, 1);
        let mut retx = 0;
        let mut given = None;
        let mut deadlines = Vec::new();
        while let Some(t) = w.poll_at() {
            deadlines.push(t);
            for a in w.poll(t) {
                match a {
                    WorkerAction::Send(b) => {
                        let Message::Hot(h) = Message::parse(&b).unwrap() else {
                            panic!()
                        };
                        assert!(h.retransmission && h.seq == 2);
                        retx += 1;
                    }
                    WorkerAction::Fallback(f) => given = Some(f),
                    WorkerAction::RoundDone(s) => {
                        assert_eq!(
                            (s.added, s.fallen_back, s.given_up, s.packets),
                            (1, 1, 1, 3)
                        );
                    }
                    WorkerAction::Resettle { .. } => panic!("no restart"),
                }
            }
        }
        assert_eq!(retx, 2);
        // Packet 2 left with the configured first timeout (2 ms); the answers
        // after 1 and 2 us then measured the round trip, so its resends wait
        // the floor (5 ms), doubled for each resend.
        let ms = |n: u64| Timestamp::from_millis(n);
        assert_eq!(deadlines, vec![ms(2), ms(2 + 10), ms(2 + 10 + 20)]);
        let f = given.unwrap();
        assert!(!f.is_certain());
        assert_eq!(f.pairs.len(), 1);
        assert!(w.is_idle());
    }

    /// A switch 10 ms away (a loaded host) and a first timeout of 2 ms: the
    /// first round is resent until the switch's first answer measures the
    /// path; later rounds wait long enough and are sent once.
    #[test]
    fn learns_a_path_slower_than_the_first_timeout() {
        let rtt = Duration::from_millis(10);
        let mut w = Worker::new(&config(), 1, 0).unwrap();
        let mut in_net: Vec<(Timestamp, HotRepr)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut now = Timestamp::ZERO;
        let mut resent_in_round = Vec::new();
        for round in 1..=8u32 {
            let before = w.stats().retransmits;
            let sent = sends(
                &w.push(now, round, vec![(0, 1.0), (1, 2.0), (5, 3.0)])
                    .unwrap(),
            );
            in_net.extend(sent.into_iter().map(|h| (now + rtt, h)));
            while !w.is_idle() {
                let answer_at = in_net.iter().map(|x| x.0).min();
                let t = answer_at.into_iter().chain(w.poll_at()).min().unwrap();
                now = t;
                if answer_at == Some(t) {
                    let i = in_net.iter().position(|x| x.0 == t).unwrap();
                    let (_, h) = in_net.remove(i);
                    let duplicate = !seen.insert((h.round, h.seq));
                    w.handle_packet(now, &answer(&h, ResponseKind::Ack { duplicate }));
                } else {
                    let again = sends(&w.poll(now));
                    in_net.extend(again.into_iter().map(|h| (now + rtt, h)));
                }
            }
            resent_in_round.push(w.stats().retransmits - before);
            in_net.clear();
        }
        assert!(resent_in_round[0] > 0, "{resent_in_round:?}");
        assert!(
            resent_in_round[2..].iter().all(|&n| n == 0),
            "after the first rounds nothing is resent: {resent_in_round:?}"
        );
        assert!(w.stats().srtt_us >= 10_000, "{:?}", w.stats());
    }

    /// WindowFull is "not now": the packet waits and is sent again (no
    /// fallback); a packet still refused after twice the round timeout is
    /// given up as uncertain (an earlier copy may yet be added).
    #[test]
    fn window_full_waits_and_resends_then_gives_up_uncertain() {
        let c = config();
        let busy = ResponseKind::Fallback {
            reason: FallbackReason::WindowFull,
            duplicate: false,
        };
        let mut w = Worker::new(&c, 1, 0).unwrap();
        let h = sends(&w.push(Timestamp::ZERO, 1, vec![(0, 1.0)]).unwrap());
        assert!(w
            .handle_packet(Timestamp(10), &answer(&h[0], busy))
            .is_empty());
        let at = w.poll_at().unwrap();
        assert!(at >= Timestamp::ZERO + c.round_timeout / 16, "{at:?}");
        assert!(sends(&w.poll(Timestamp(at.0 - 1))).is_empty());
        let again = sends(&w.poll(at));
        assert_eq!(again.len(), 1);
        assert!(
            !again[0].retransmission && again[0].seq == 0,
            "not recorded at the switch: sent again as new, not as a resend"
        );
        let done = w.handle_packet(
            at,
            &answer(&again[0], ResponseKind::Ack { duplicate: false }),
        );
        assert!(
            matches!(&done[..], [WorkerAction::RoundDone(s)] if s.added == 1 && s.given_up == 0)
        );
        assert_eq!(
            (
                w.stats().busy,
                w.stats().busy_resends,
                w.stats().retransmits
            ),
            (1, 1, 0)
        );

        let h = sends(&w.push(at, 2, vec![(1, 2.0)]).unwrap());
        let mut t = at;
        let mut given = None;
        while given.is_none() {
            let out = w.handle_packet(t, &answer(&h[0], busy));
            for a in out {
                if let WorkerAction::Fallback(f) = a {
                    given = Some(f);
                }
            }
            if given.is_none() {
                t = w.poll_at().unwrap();
                assert_eq!(sends(&w.poll(t)).len(), 1);
            }
        }
        let f = given.unwrap();
        assert!(!f.is_certain() && f.pairs == vec![(1, 2.0)]);
        assert!(t - at >= c.round_timeout * 2);
        assert!(w.is_idle());
    }

    #[test]
    fn window_holds_round_r_plus_copies_until_r_settles() {
        let mut w = Worker::new(&config(), 1, 0).unwrap();
        let a = sends(&w.push(Timestamp::ZERO, 1, vec![(0, 1.0)]).unwrap());
        assert_eq!(sends(&w.push(Timestamp::ZERO, 2, vec![]).unwrap()).len(), 1);
        assert!(sends(&w.push(Timestamp::ZERO, 3, vec![(1, 1.0)]).unwrap()).is_empty());
        let out = w.handle_packet(
            Timestamp(5),
            &answer(&a[0], ResponseKind::Ack { duplicate: false }),
        );
        assert!(matches!(
            out[0],
            WorkerAction::RoundDone(RoundSummary {
                round: 1,
                added: 1,
                ..
            })
        ));
        assert_eq!(sends(&out).len(), 1);
        assert_eq!(sends(&out)[0].round, 3);
    }

    #[test]
    fn refuses_bad_pushes_and_foreign_datagrams() {
        let mut w = Worker::new(&config(), 1, 0).unwrap();
        assert_eq!(
            w.push(Timestamp::ZERO, 0, vec![]),
            Err(WorkerError::RoundZero)
        );
        assert_eq!(
            w.push(Timestamp::ZERO, 1, vec![(64, 1.0)]),
            Err(WorkerError::RankOutOfRange {
                rank: 64,
                hot_keys: 64
            })
        );
        w.push(Timestamp::ZERO, 2, vec![]).unwrap();
        assert_eq!(
            w.push(Timestamp::ZERO, 2, vec![]),
            Err(WorkerError::RoundNotIncreasing { round: 2, last: 2 })
        );
        assert!(w.handle_packet(Timestamp::ZERO, b"junk").is_empty());
        let other = ResponseRepr {
            job: 1,
            worker: 1,
            round: 2,
            seq: 0,
            kind: ResponseKind::Ack { duplicate: false },
            token: 0,
        };
        assert!(w
            .handle_packet(Timestamp::ZERO, &other.to_bytes())
            .is_empty());
        assert_eq!(w.stats().bad_packets, 2);
        assert!(Worker::new(&config(), 1, 2).is_err());
        assert!(Worker::new(&config(), 9, 0).is_err());
    }

    #[test]
    fn too_many_packets_fall_back_at_once() {
        let mut c = config();
        c.max_seqs = 2;
        let mut w = Worker::new(&c, 1, 0).unwrap();
        let pairs: Vec<(u32, f32)> = (0..12).map(|r| (r, 1.0)).collect();
        let out = w.push(Timestamp::ZERO, 1, pairs).unwrap();
        let hs = sends(&out);
        assert_eq!(hs.len(), 2);
        assert!(hs[1].done);
        let fb: usize = out
            .iter()
            .filter_map(|a| match a {
                WorkerAction::Fallback(f) => Some(f.pairs.len()),
                _ => None,
            })
            .sum();
        assert_eq!(fb, 4);
        assert_eq!(w.stats().overflow_pairs, 4);
    }

    #[test]
    fn dense_block_carries_zeros_but_falls_back_only_touched() {
        let mut c = config();
        c.jobs[0].dense_ranks = 6;
        let mut w = Worker::new(&c, 1, 0).unwrap();
        let out = w
            .push(
                Timestamp::ZERO,
                1,
                vec![(1, 2.0), (1, 3.0), (5, 1.0), (30, 7.0)],
            )
            .unwrap();
        let hs = sends(&out);
        assert_eq!(hs.len(), 3);
        assert_eq!(
            hs[0].body,
            HotBody::Dense {
                base: 0,
                values: vec![0, 5f32.to_bits(), 0, 0]
            }
        );
        assert_eq!(
            hs[1].body,
            HotBody::Dense {
                base: 4,
                values: vec![0, 1f32.to_bits()]
            }
        );
        let fb = w.handle_packet(
            Timestamp(1),
            &answer(
                &hs[0],
                ResponseKind::Fallback {
                    reason: FallbackReason::Late,
                    duplicate: false,
                },
            ),
        );
        assert!(matches!(&fb[..], [WorkerAction::Fallback(f)] if f.pairs == vec![(1, 5.0)]));
    }

    fn ack(h: &HotRepr) -> Vec<u8> {
        answer(h, ResponseKind::Ack { duplicate: false })
    }

    fn batches(out: &[WorkerAction]) -> Vec<(u32, u16, FallbackCause, usize)> {
        out.iter()
            .flat_map(|a| match a {
                WorkerAction::Fallback(f) => vec![f.clone()],
                WorkerAction::Resettle { batches, .. } => batches.clone(),
                _ => Vec::new(),
            })
            .map(|f| (f.round, f.seq, f.cause, f.pairs.len()))
            .collect()
    }

    #[test]
    fn a_restart_hands_back_what_the_lost_switch_added() {
        let mut w = Worker::new(&config(), 1, 0).unwrap();
        // Round 1: settled, both packets added (kept). Round 2: packet 0
        // added, packet 1 in flight.
        let pairs = |n: u32| (0..n).map(|r| (r, 1.0 + r as f32)).collect::<Vec<_>>();
        let h1 = sends(&w.push(Timestamp::ZERO, 1, pairs(8)).unwrap());
        assert_eq!(h1.len(), 2);
        for h in &h1 {
            w.handle_packet(Timestamp(1), &ack(h));
        }
        let h2 = sends(&w.push(Timestamp(2), 2, pairs(8)).unwrap());
        w.handle_packet(Timestamp(3), &ack(&h2[0]));
        let out = w.restart(Timestamp(4), 1, 1);
        let got = batches(&out);
        assert_eq!(
            got,
            vec![
                (1, 0, FallbackCause::Restarted, 4),
                (1, 1, FallbackCause::Restarted, 4),
                (2, 0, FallbackCause::Restarted, 4),
                (2, 1, FallbackCause::NoResponse, 4),
            ],
            "round 1 kept whole, round 2's added and unanswered packets"
        );
        assert!(matches!(&out[0], WorkerAction::Resettle { round: 1, .. }));
        let done: Vec<RoundSummary> = out
            .iter()
            .filter_map(|a| match a {
                WorkerAction::RoundDone(s) => Some(*s),
                _ => None,
            })
            .collect();
        assert_eq!(done.len(), 1);
        assert_eq!(
            (done[0].round, done[0].added, done[0].given_up),
            (2, 0, 2),
            "the server no longer waits for an aggregate of round 2"
        );
        assert!(w.is_idle());
        // An answer for a packet handed back changes nothing.
        assert!(w.handle_packet(Timestamp(5), &ack(&h2[1])).is_empty());
        // Nothing kept twice: a second restart hands back nothing.
        assert!(batches(&w.restart(Timestamp(6), 1, 0)).is_empty());
    }

    #[test]
    fn after_a_restart_rounds_the_old_switch_may_have_closed_bypass_the_new_one() {
        let mut w = Worker::new(&config(), 1, 0).unwrap();
        w.restart(Timestamp::ZERO, 5, 0);
        let out = w.push(Timestamp(1), 5, vec![(1, 2.0)]).unwrap();
        assert!(sends(&out).is_empty(), "round 5 is not sent to the switch");
        assert_eq!(batches(&out), vec![(5, 0, FallbackCause::Bypassed, 1)]);
        assert!(FallbackCause::Bypassed.is_certain());
        assert!(
            matches!(out.last(), Some(WorkerAction::RoundDone(s)) if s.round == 5 && s.added == 0)
        );
        let out = w.push(Timestamp(2), 6, vec![(1, 2.0)]).unwrap();
        assert_eq!(sends(&out).len(), 1, "round 6 is new to every switch");
    }

    #[test]
    fn kept_pairs_are_bounded_oldest_rounds_first() {
        let mut c = config();
        c.worker_retain_pairs = 6;
        let mut w = Worker::new(&c, 1, 0).unwrap();
        for round in 1..=3 {
            for h in sends(
                &w.push(
                    Timestamp(round as u64),
                    round,
                    vec![(0, 1.0), (1, 1.0), (2, 1.0)],
                )
                .unwrap(),
            ) {
                w.handle_packet(Timestamp(10), &ack(&h));
            }
        }
        assert_eq!(w.stats().unkept_rounds, 1);
        let rounds: Vec<u32> = batches(&w.restart(Timestamp(20), 0, 2))
            .into_iter()
            .map(|b| b.0)
            .collect();
        assert_eq!(rounds, vec![2, 3], "round 1 was dropped to keep 6 pairs");
        for round in 4..=5 {
            for h in sends(&w.push(Timestamp(30), round, vec![(0, 1.0)]).unwrap()) {
                w.handle_packet(Timestamp(31), &ack(&h));
            }
        }
        let rounds: Vec<u32> = batches(&w.restart(Timestamp(40), 0, 5))
            .into_iter()
            .map(|b| b.0)
            .collect();
        assert_eq!(
            rounds,
            vec![5],
            "round 4 is before the server's resend_from"
        );
    }
}
