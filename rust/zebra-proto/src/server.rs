//! The server side of the hot path.
//!
//! [`Server::handle_packet`] takes the switch's AGGREGATE and COVERAGE parts
//! for this server, acknowledges every well-formed one (duplicates too, so
//! the switch stops resending), reassembles a round from its parts and
//! reports it once as [`ServerAction::Round`]: the summed pairs of this
//! server's hot ranks, the bitmaps of contributing and complete workers,
//! and the coverage (which worker packets the sum holds).
//!
//! [`Server::add_fallback`] takes pairs a worker sent directly. Certain ones
//! (the switch refused them) are passed straight back as
//! [`ServerAction::Apply`]. Uncertain ones (the worker got no answer) are
//! applied only if the round's coverage does not hold their packet: they
//! wait for the round's aggregate, at most `uncertain_timeout`; if the
//! aggregate comes after they were applied, the reported sum has them
//! subtracted (exact for fixed point and for integer-valued floats). Either
//! way each pair counts once.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::config::{Config, ConfigError, JobConfig};
use crate::fallback::Fallback;
use crate::stats::ServerStats;
use crate::time::Timestamp;
use crate::wire::{AggregateAckRepr, AggregateRepr, CoverBits, CoverageRepr, Message};

/// What the server wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerAction {
    /// Send this datagram to the switch (an aggregate ACK).
    Send(Vec<u8>),
    /// A round's aggregate for this server, reported once.
    Round(RoundAggregate),
    /// Apply these fallback pairs.
    Apply(Fallback),
}

/// Which worker packets a round's aggregate holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coverage {
    /// Workers whose every packet is in the sum (the aggregate's complete
    /// bits): the switch sends them no coverage part.
    complete: u64,
    ranges: BTreeMap<u16, Vec<(u16, u16, CoverBits)>>,
}

impl Coverage {
    fn add(&mut self, c: &CoverageRepr) {
        self.ranges
            .entry(c.worker)
            .or_default()
            .push((c.first_seq, c.nbits, c.bits.clone()));
    }

    /// Whether the sum holds at least `n` packets of `worker` (all of them
    /// when the worker is complete): a worker that says it had `n` packets
    /// added finds them in this aggregate, not in one from a switch that was
    /// started again after it.
    pub fn holds_at_least(&self, worker: u16, n: u16) -> bool {
        if worker < 64 && self.complete >> worker & 1 == 1 {
            return true;
        }
        let mut seqs = std::collections::BTreeSet::new();
        for (first, nbits, bits) in self.ranges.get(&worker).into_iter().flatten() {
            for i in 0..*nbits {
                if bit(bits, usize::from(i)) {
                    seqs.insert(first.saturating_add(i));
                }
            }
        }
        seqs.len() >= usize::from(n)
    }

    /// Whether packet `seq` of `worker` is in the sum.
    pub fn covers(&self, worker: u16, seq: u16) -> bool {
        if worker < 64 && self.complete >> worker & 1 == 1 {
            return true;
        }
        self.ranges.get(&worker).is_some_and(|rs| {
            rs.iter().any(|(first, nbits, bits)| {
                let Some(i) = seq.checked_sub(*first).map(usize::from) else {
                    return false;
                };
                i < usize::from(*nbits) && bit(bits, i)
            })
        })
    }

    /// A sum holding every packet of the workers in `complete` (the
    /// aggregate's complete bits) and nothing else listed.
    pub fn of_complete(complete: u64) -> Coverage {
        Coverage {
            complete,
            ranges: BTreeMap::new(),
        }
    }
}

/// Bit `i` of a coverage part's bitmap (`i` below its `nbits`).
fn bit(bits: &CoverBits, i: usize) -> bool {
    match bits {
        CoverBits::All => true,
        CoverBits::Map(m) => m[i / 8] >> (i % 8) & 1 == 1,
    }
}

/// One round's aggregate for one server.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundAggregate {
    /// Job id.
    pub job: u16,
    /// This server's index.
    pub server: u16,
    /// Round.
    pub round: u32,
    /// Workers with at least one packet in the sum.
    pub contributed: u64,
    /// Workers all of whose packets up to DONE are accounted for at the
    /// switch (added, or refused and so sent here directly).
    pub complete: u64,
    /// Closed by the switch's timeout (a partial round).
    pub flushed: bool,
    /// `(hot rank, sum)` for this server's touched ranks, by rank.
    pub pairs: Vec<(u32, f32)>,
    /// Which worker packets the sum holds.
    pub coverage: Coverage,
    /// Uncertain fallback batches already applied that the sum held; they
    /// were subtracted from `pairs`.
    pub corrected: u32,
}

/// A fallback the server refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ServerError {
    /// Another job's pairs.
    #[error("fallback for job {0}, this server serves another job")]
    WrongJob(u16),
    /// A rank this server does not own (or not hot).
    #[error("hot rank {0} is not owned by this server")]
    NotOwner(u32),
}

#[derive(Debug, Clone)]
enum Part {
    Data(AggregateRepr),
    Cover(CoverageRepr),
}

#[derive(Debug, Default)]
struct ServerRound {
    parts: Vec<Option<Part>>,
    reported: Option<Coverage>,
    held: Vec<Fallback>,
    deadline: Option<Timestamp>,
    applied: Vec<Fallback>,
}

/// One server of one job.
#[derive(Debug)]
pub struct Server {
    config: Config,
    job: JobConfig,
    index: u16,
    rounds: BTreeMap<u32, ServerRound>,
    watermark: u32,
    newest_reported: u32,
    stats: ServerStats,
    /// The job's membership token this server shows in its acknowledgements
    /// (its key's, else the one its REGISTER_ACK brought; 0: none yet).
    token: u32,
}

impl Server {
    /// Server `index` of job `job`.
    pub fn new(config: &Config, job: u16, index: u16) -> Result<Server, ConfigError> {
        config.validate()?;
        let jc = config
            .job(job)
            .filter(|j| index < j.servers)
            .ok_or(ConfigError::UnknownMember { job, rank: index })?;
        Ok(Server {
            config: config.clone(),
            job: jc.clone(),
            index,
            rounds: BTreeMap::new(),
            watermark: 0,
            newest_reported: 0,
            stats: ServerStats::default(),
            token: jc.token,
        })
    }

    /// The job's membership token this server shows (0: none yet).
    pub fn token(&self) -> u32 {
        self.token
    }

    /// Takes the job's token the switch handed out (in a REGISTER_ACK);
    /// ignored for a job with a key, whose token the server has.
    pub fn set_token(&mut self, token: u32) {
        if self.job.token == 0 && token != 0 {
            self.token = token;
        }
    }

    /// Counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// Uncertain fallback batches waiting for their round's aggregate.
    pub fn held_fallbacks(&self) -> usize {
        self.rounds.values().map(|r| r.held.len()).sum()
    }

    /// Rounds with parts received but not all of them.
    pub fn incomplete_rounds(&self) -> usize {
        self.rounds
            .values()
            .filter(|r| r.reported.is_none() && !r.parts.is_empty())
            .count()
    }

    /// Handles a datagram from the switch.
    pub fn handle_packet(&mut self, _now: Timestamp, bytes: &[u8]) -> Vec<ServerAction> {
        let part = match Message::parse(bytes) {
            Ok(Message::Aggregate(a)) => Part::Data(a),
            Ok(Message::Coverage(c)) => Part::Cover(c),
            other => {
                log::debug!("server {}: unexpected datagram: {other:?}", self.index);
                self.stats.bad_packets += 1;
                return Vec::new();
            }
        };
        let (job, server, round, index, parts) = match &part {
            Part::Data(a) => (a.job, a.server, a.round, a.part, a.parts),
            Part::Cover(c) => (c.job, c.server, c.round, c.part, c.parts),
        };
        if job != self.job.id || server != self.index || !self.part_is_sane(&part) {
            self.stats.bad_packets += 1;
            return Vec::new();
        }
        self.stats.parts += 1;
        let ack = ServerAction::Send(
            AggregateAckRepr {
                job,
                server,
                round,
                part: index,
                token: self.token,
            }
            .to_bytes(),
        );
        if round < self.watermark {
            self.stats.stale_parts += 1;
            return vec![ack];
        }
        let sr = self.rounds.entry(round).or_default();
        if sr.reported.is_some() {
            self.stats.duplicate_parts += 1;
            return vec![ack];
        }
        if sr.parts.is_empty() {
            sr.parts = vec![None; parts as usize];
        } else if sr.parts.len() != parts as usize {
            self.stats.bad_packets += 1;
            return Vec::new();
        }
        let slot = &mut sr.parts[index as usize];
        if slot.is_some() {
            self.stats.duplicate_parts += 1;
            return vec![ack];
        }
        *slot = Some(part);
        let mut out = vec![ack];
        if sr.parts.iter().all(Option::is_some) {
            out.extend(self.assemble(round));
        }
        out
    }

    fn part_is_sane(&self, part: &Part) -> bool {
        let parts = match part {
            Part::Data(a) => a.parts,
            Part::Cover(c) => c.parts,
        };
        if usize::from(parts) > self.config.max_parts(&self.job) {
            return false;
        }
        match part {
            Part::Data(a) => {
                a.fixed == self.job.number.is_fixed()
                    && a.pairs
                        .iter()
                        .all(|&(r, _)| r < self.job.hot_keys && self.job.owner(r) == self.index)
            }
            Part::Cover(c) => c.worker < self.job.workers,
        }
    }

    /// Takes pairs a worker sent directly (already split to this server).
    pub fn add_fallback(
        &mut self,
        now: Timestamp,
        f: Fallback,
    ) -> Result<Vec<ServerAction>, ServerError> {
        if f.job != self.job.id {
            return Err(ServerError::WrongJob(f.job));
        }
        if let Some(&(r, _)) = f
            .pairs
            .iter()
            .find(|&&(r, _)| r >= self.job.hot_keys || self.job.owner(r) != self.index)
        {
            return Err(ServerError::NotOwner(r));
        }
        if f.is_certain() {
            self.stats.certain_fallbacks += 1;
            return Ok(vec![ServerAction::Apply(f)]);
        }
        if f.round < self.watermark {
            self.stats.uncertain_unverified += 1;
            return Ok(vec![ServerAction::Apply(f)]);
        }
        let sr = self.rounds.entry(f.round).or_default();
        match &sr.reported {
            Some(cov) if cov.covers(f.worker, f.seq) => {
                self.stats.uncertain_covered += 1;
                Ok(Vec::new())
            }
            Some(_) => {
                self.stats.uncertain_applied += 1;
                Ok(vec![ServerAction::Apply(f)])
            }
            None => {
                sr.held.push(f);
                sr.deadline
                    .get_or_insert(now + self.config.uncertain_timeout);
                Ok(Vec::new())
            }
        }
    }

    /// Applies uncertain fallbacks whose wait ran out.
    pub fn poll(&mut self, now: Timestamp) -> Vec<ServerAction> {
        let mut out = Vec::new();
        for sr in self.rounds.values_mut() {
            if sr.deadline.is_some_and(|d| d <= now) {
                sr.deadline = None;
                for f in std::mem::take(&mut sr.held) {
                    self.stats.uncertain_timed_out += 1;
                    sr.applied.push(f.clone());
                    out.push(ServerAction::Apply(f));
                }
            }
        }
        out
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        self.rounds.values().filter_map(|r| r.deadline).min()
    }

    fn assemble(&mut self, round: u32) -> Vec<ServerAction> {
        let mode = self.job.number;
        let Some(sr) = self.rounds.get_mut(&round) else {
            return Vec::new();
        };
        let mut sums: BTreeMap<u32, u32> = BTreeMap::new();
        let mut coverage = Coverage::default();
        let (mut contributed, mut complete, mut flushed, mut total) = (0, 0, false, 0u64);
        let mut seen = 0u64;
        for part in sr.parts.drain(..).flatten() {
            match part {
                Part::Data(a) => {
                    (contributed, complete, flushed, total) =
                        (a.contributed, a.complete, a.flushed, u64::from(a.total));
                    seen += a.pairs.len() as u64;
                    for (r, v) in a.pairs {
                        let e = sums.entry(r).or_insert(mode.encode(0.0));
                        *e = mode.add(*e, v).0;
                    }
                }
                Part::Cover(c) => coverage.add(&c),
            }
        }
        coverage.complete = complete;
        if seen != total {
            log::warn!(
                "server {}: round {round}: {seen} pairs, the parts announced {total}",
                self.index
            );
            self.stats.bad_packets += 1;
        }
        let mut corrected = 0;
        for f in std::mem::take(&mut sr.applied) {
            if coverage.covers(f.worker, f.seq) {
                corrected += 1;
                self.stats.corrections += 1;
                for (r, v) in f.pairs {
                    let e = sums.entry(r).or_insert(mode.encode(0.0));
                    *e = mode.sub(*e, mode.encode(v));
                }
            }
        }
        let mut out = Vec::new();
        for f in std::mem::take(&mut sr.held) {
            if coverage.covers(f.worker, f.seq) {
                self.stats.uncertain_covered += 1;
            } else {
                self.stats.uncertain_applied += 1;
                out.push(ServerAction::Apply(f));
            }
        }
        sr.deadline = None;
        sr.reported = Some(coverage.clone());
        self.stats.rounds += 1;
        self.stats.flushed_rounds += u64::from(flushed);
        let report = RoundAggregate {
            job: self.job.id,
            server: self.index,
            round,
            contributed,
            complete,
            flushed,
            pairs: sums
                .into_iter()
                .map(|(r, raw)| (r, mode.decode(raw)))
                .collect(),
            coverage,
            corrected,
        };
        out.insert(0, ServerAction::Round(report));
        self.newest_reported = self.newest_reported.max(round);
        out.extend(self.prune());
        out
    }

    /// Forgets the oldest rounds older than the newest reported one while
    /// more than `server_history` rounds are remembered (rounds counted, not
    /// round numbers: a worker's rounds jump at barriers); uncertain pairs
    /// still held for them are applied.
    fn prune(&mut self) -> Vec<ServerAction> {
        let excess = self
            .rounds
            .len()
            .saturating_sub(self.config.server_history as usize);
        if excess == 0 {
            return Vec::new();
        }
        let Some(&first_kept) = self.rounds.keys().nth(excess) else {
            return Vec::new();
        };
        let mark = first_kept.min(self.newest_reported);
        if mark <= self.watermark {
            return Vec::new();
        }
        self.watermark = mark;
        let mut out = Vec::new();
        let keep = self.rounds.split_off(&mark);
        for (round, sr) in std::mem::replace(&mut self.rounds, keep) {
            if sr.reported.is_none() && !sr.parts.is_empty() {
                log::warn!(
                    "server {}: round {round} forgotten with parts missing",
                    self.index
                );
            }
            for f in sr.held {
                self.stats.uncertain_unverified += 1;
                out.push(ServerAction::Apply(f));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
