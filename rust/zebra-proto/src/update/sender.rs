//! The server's side: [`UpdateSender`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::{UpdateAction, UpdateError};
use crate::config::{Config, ConfigError};
use crate::consts::{UPDATE_HEADER_LEN, UPDATE_TARGET_ALL};
use crate::flow::Flow;
use crate::rto::{RttEstimator, MAX_RTO};
use crate::stats::UpdateSenderStats;
use crate::time::Timestamp;
use crate::wire::update::{self, flags, Fragment};
use crate::wire::{Message, UpdateAckRepr, UpdateRepr};

/// The shortest timeout of an update part. Parts share the server's link
/// with its TCP answers, which can queue hundreds of milliseconds of data
/// ahead of them; a timeout learned from the parts that did not wait resent
/// nine in ten parts that were never lost (measured on the testbed's
/// 4 Mbit/s links). A part lost before later ones arrived is found by their
/// acknowledgements instead (`lost_before`) and resent a reorder window
/// after them; the timeout is left for the last parts of a burst. 200 ms is
/// the floor TCP stacks use for the same reason.
pub const UPDATE_MIN_RTO: Duration = Duration::from_millis(200);

/// The most resends of an update part: with timeouts from
/// [`UPDATE_MIN_RTO`] doubling to one second, a part is given up about five
/// seconds after it was first sent, so that a BREAK to a worker that stopped
/// answering holds its server no longer than that.
pub const UPDATE_MAX_RETRIES: u32 = 6;

/// Resends of an update part before it is given up: `aggregate_max_retries`,
/// at most [`UPDATE_MAX_RETRIES`].
pub fn update_max_retries(config: &Config) -> u32 {
    config.aggregate_max_retries.min(UPDATE_MAX_RETRIES)
}

/// One part of an update kept until every worker acknowledged it.
#[derive(Debug)]
struct OutPart {
    /// The first copy: to every worker, not a resend.
    payload: Vec<u8>,
    /// Waiting for the flow's window (not sent yet).
    queued: bool,
    /// Counted in the flow's window: sent, no worker's acknowledgement yet.
    in_flight: bool,
    /// Bit `w`: worker `w` has not acknowledged it.
    missing: u64,
    sent: Timestamp,
    /// Its last copy's place in the order datagrams left this sender.
    sent_no: u64,
    next: Timestamp,
    retries: u32,
    /// Bit `w`: a part sent after this one reached worker `w` first.
    lost: u64,
}

#[derive(Debug)]
struct Outgoing {
    round: u32,
    parts: Vec<OutPart>,
}

/// A server's updates to the workers of its job. See the module
/// documentation of [`crate::update`].
#[derive(Debug)]
pub struct UpdateSender {
    job: u16,
    server: u16,
    workers: u16,
    all: u64,
    window: usize,
    max_retries: u32,
    budget: usize,
    flow: Flow<(u32, u16)>,
    next_seq: u32,
    /// Datagrams sent (first copies and resends), for [`OutPart::sent_no`].
    sent_count: u64,
    updates: BTreeMap<u32, Outgoing>,
    /// Given-up notices for the next poll.
    notices: Vec<UpdateAction>,
    /// Parts may leave the window since then.
    ready: Option<Timestamp>,
    stats: UpdateSenderStats,
}

impl UpdateSender {
    /// The sender of server `server` of job `job`.
    pub fn new(config: &Config, job: u16, server: u16) -> Result<UpdateSender, ConfigError> {
        config.validate()?;
        let jc = config
            .job(job)
            .filter(|j| server < j.servers)
            .ok_or(ConfigError::UnknownMember { job, rank: server })?;
        Ok(UpdateSender {
            job,
            server,
            workers: jc.workers,
            all: jc.all_workers_mask(),
            window: config.update_window,
            max_retries: update_max_retries(config),
            budget: config.aggregate_size - UPDATE_HEADER_LEN,
            flow: Flow::with_rtt(RttEstimator::bounded(
                config.aggregate_rto.max(UPDATE_MIN_RTO),
                UPDATE_MIN_RTO,
                MAX_RTO.max(config.aggregate_rto),
            )),
            next_seq: 1,
            sent_count: 0,
            updates: BTreeMap::new(),
            notices: Vec::new(),
            ready: None,
            stats: UpdateSenderStats::default(),
        })
    }

    /// Counters.
    pub fn stats(&self) -> &UpdateSenderStats {
        &self.stats
    }

    /// Updates kept (not yet acknowledged by every worker, not given up).
    pub fn outstanding(&self) -> usize {
        self.updates.len()
    }

    /// Whether update `seq` is still kept: some worker has not
    /// acknowledged all of it and it was not given up.
    pub fn holds(&self, seq: u32) -> bool {
        self.updates.contains_key(&seq)
    }

    /// Whether nothing is kept.
    pub fn is_idle(&self) -> bool {
        self.updates.is_empty() && self.notices.is_empty()
    }

    /// The seq the next update gets.
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Sends the server's values after `round` (`(key, value bytes)`, any
    /// order, each key once) as the next update; `lens`: its pull answers
    /// carry a lens frame. The datagrams leave on [`poll`](Self::poll).
    /// Returns the update's seq.
    pub fn send(
        &mut self,
        now: Timestamp,
        round: u32,
        mut entries: Vec<(u64, Vec<u8>)>,
        lens: bool,
    ) -> Result<u32, UpdateError> {
        if round == 0 {
            return Err(UpdateError::ZeroRound);
        }
        entries.sort_by_key(|e| e.0);
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(UpdateError::DuplicateKey(w[0].0));
        }
        if let Some((key, v)) = entries.iter().find(|e| u32::try_from(e.1.len()).is_err()) {
            return Err(UpdateError::TooLarge {
                key: *key,
                len: v.len(),
            });
        }
        let parts = update::split_parts(&entries, self.budget);
        if parts.len() > usize::from(u16::MAX) {
            return Err(UpdateError::TooManyParts(parts.len()));
        }
        Ok(self.enqueue(now, round, lens, false, parts))
    }

    /// Sends a BREAK: values changed outside rounds, every worker drops the
    /// rows it holds for this server. Returns its seq.
    pub fn break_chain(&mut self, now: Timestamp) -> u32 {
        self.enqueue(now, 0, false, true, vec![Vec::new()])
    }

    fn enqueue(
        &mut self,
        now: Timestamp,
        round: u32,
        lens: bool,
        brk: bool,
        parts: Vec<Vec<Fragment>>,
    ) -> u32 {
        // The window is a span of seqs: an update `window` seqs older than
        // the new one is given up, so that a worker that sees this seq knows
        // every update below the span is settled at the sender.
        let seq = self.next_seq;
        let oldest_kept = seq.saturating_sub(self.window as u32 - 1);
        while let Some(&old) = self.updates.keys().next().filter(|&&s| s < oldest_kept) {
            self.give_up(now, old);
        }
        self.next_seq = self.next_seq.wrapping_add(1).max(1);
        let header = UpdateRepr {
            lens,
            brk,
            ..UpdateRepr::header(self.job, self.server, seq, round)
        };
        let parts = header
            .with_parts(parts)
            .into_iter()
            .map(|p| {
                self.flow.enqueue((seq, p.part));
                OutPart {
                    payload: p.to_bytes(),
                    queued: true,
                    in_flight: false,
                    missing: self.all,
                    sent: now,
                    sent_no: 0,
                    next: now,
                    retries: 0,
                    lost: 0,
                }
            })
            .collect();
        self.updates.insert(seq, Outgoing { round, parts });
        self.stats.updates += 1;
        self.stats.breaks += u64::from(brk);
        self.ready = Some(self.ready.map_or(now, |r| r.min(now)));
        seq
    }

    fn give_up(&mut self, now: Timestamp, seq: u32) {
        let Some(u) = self.updates.remove(&seq) else {
            return;
        };
        let mut workers = 0;
        for p in &u.parts {
            workers |= p.missing;
            if p.in_flight {
                self.flow.on_abandon();
            }
        }
        if self.flow.can_send() {
            self.ready = Some(now);
        }
        self.stats.given_up += 1;
        log::debug!(
            "update sender: job {} server {}: update {seq} (round {}) given up for workers {workers:#x}",
            self.job,
            self.server,
            u.round
        );
        self.notices.push(UpdateAction::GivenUp {
            seq,
            round: u.round,
            workers,
        });
    }

    /// Takes a datagram from the switch (an UPDATE_ACK); anything else is
    /// counted as a bad acknowledgement.
    pub fn handle_packet(&mut self, now: Timestamp, bytes: &[u8]) {
        match Message::parse(bytes) {
            Ok(Message::UpdateAck(a)) => self.handle_ack(now, a),
            _ => self.stats.bad_acks += 1,
        }
    }

    /// A worker acknowledged a part.
    pub fn handle_ack(&mut self, now: Timestamp, a: UpdateAckRepr) {
        if a.job != self.job || a.server != self.server || a.worker >= self.workers {
            self.stats.bad_acks += 1;
            return;
        }
        let Some(u) = self.updates.get_mut(&a.seq) else {
            if a.seq < self.next_seq {
                self.stats.duplicate_acks += 1;
            } else {
                self.stats.bad_acks += 1;
            }
            return;
        };
        let Some(p) = u.parts.get_mut(usize::from(a.part)).filter(|p| !p.queued) else {
            self.stats.bad_acks += 1;
            return;
        };
        let bit = 1u64 << a.worker;
        if p.missing & bit == 0 {
            self.stats.duplicate_acks += 1;
            return;
        }
        p.missing &= !bit;
        p.lost &= !bit;
        self.stats.acks += 1;
        let (sent_no, once) = (p.sent_no, p.retries == 0);
        if p.in_flight {
            // The first acknowledgement shows the part crossed the server's
            // link: it leaves the window. Karn's rule as for aggregates.
            p.in_flight = false;
            let rtt = (p.retries == 0 || self.flow.rtt.samples() == 0).then(|| now - p.sent);
            self.flow.on_ack(rtt);
            if self.flow.can_send() {
                self.ready = Some(now);
            }
        }
        if u.parts.iter().all(|p| p.missing == 0) {
            self.updates.remove(&a.seq);
            self.stats.completed += 1;
        }
        if once {
            self.lost_before(now, (a.seq, a.part), sent_no, bit);
        }
    }

    /// How long after a later part's acknowledgement an earlier one still
    /// missing counts as lost rather than overtaken: a quarter of the round
    /// trip, plus four times its deviation, so that paths whose round trips
    /// vary (a queue that fills and drains, or links that reorder) wait in
    /// proportion before they resend.
    fn reorder_window(&self) -> Duration {
        self.flow.reorder_window() + self.flow.rtt.rttvar() * 4
    }

    /// Part `acked` (sent once, `acked_no`-th) reached the worker of `bit`:
    /// the parts sent to it before, still missing there, are lost if not
    /// acknowledged a reorder window from now. First copies leave in seq and
    /// part order, so only parts below `acked` can have left before it.
    fn lost_before(&mut self, now: Timestamp, acked: (u32, u16), acked_no: u64, bit: u64) {
        let at = now + self.reorder_window();
        for (&seq, u) in self.updates.range_mut(..=acked.0) {
            let below = if seq == acked.0 {
                usize::from(acked.1)
            } else {
                u.parts.len()
            };
            for p in u.parts[..below].iter_mut() {
                if !p.queued && p.missing & bit != 0 && p.lost & bit == 0 && p.sent_no < acked_no {
                    p.lost |= bit;
                    p.next = p.next.min(at);
                }
            }
        }
    }

    /// First copies the window lets out, resends due, updates given up.
    ///
    /// One part is resent per call, the oldest due (as the switch resends
    /// aggregates: parts that left together time out together when they wait
    /// in a queue, and resending them all would only lengthen it); the others
    /// due wait one more timeout, their retry budget untouched. A part is
    /// resent to each worker still missing it, or once to every worker when
    /// none has it.
    pub fn poll(&mut self, now: Timestamp) -> Vec<UpdateAction> {
        let mut out = Vec::new();
        self.ready = None;
        while let Some((seq, part)) = self.flow.next_to_send() {
            let rto = self.flow.rtt.rto();
            let p = self
                .updates
                .get_mut(&seq)
                .and_then(|u| u.parts.get_mut(usize::from(part)));
            let Some(p) = p else {
                // Given up while it waited.
                self.flow.on_abandon();
                continue;
            };
            p.queued = false;
            p.in_flight = true;
            p.sent = now;
            self.sent_count += 1;
            p.sent_no = self.sent_count;
            p.next = now + rto;
            self.stats.parts += 1;
            self.stats.bytes += p.payload.len() as u64;
            out.push(UpdateAction::Send(p.payload.clone()));
        }
        let mut resent = false;
        let mut exhausted = Vec::new();
        for (&seq, u) in self.updates.iter_mut() {
            for p in u.parts.iter_mut() {
                if p.queued || p.missing == 0 || p.next > now {
                    continue;
                }
                if p.retries >= self.max_retries {
                    exhausted.push(seq);
                    break;
                }
                let lost = std::mem::take(&mut p.lost);
                if lost != 0 {
                    self.flow.on_loss(now);
                    self.stats.lost += 1;
                } else if resent {
                    p.next = now + self.flow.rtt.backoff(p.retries);
                    self.stats.deferred += 1;
                    continue;
                } else {
                    resent = true;
                    if p.retries == 0 {
                        self.flow.on_timeout(now);
                    }
                }
                p.retries += 1;
                self.sent_count += 1;
                p.sent_no = self.sent_count;
                p.next = now + self.flow.rtt.backoff(p.retries);
                let copies = resends(&p.payload, p.missing, self.all);
                self.stats.resends += copies.len() as u64;
                out.extend(copies.into_iter().map(UpdateAction::Send));
            }
        }
        for seq in exhausted {
            self.give_up(now, seq);
        }
        out.append(&mut self.notices);
        out
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        let resends = self
            .updates
            .values()
            .flat_map(|u| &u.parts)
            .filter(|p| !p.queued && p.missing != 0)
            .map(|p| p.next);
        let notices = (!self.notices.is_empty()).then_some(Timestamp::ZERO);
        resends.chain(self.ready).chain(notices).min()
    }
}

/// Copies of `payload` (a first copy) for the workers in `missing`: one to
/// every worker when all are missing, else one per missing worker; each
/// marked RETX.
fn resends(payload: &[u8], missing: u64, all: u64) -> Vec<Vec<u8>> {
    let copy = |target: u16| {
        let mut b = payload.to_vec();
        let mut p = update::Packet::new_unchecked(&mut b[..]);
        p.set_target(target);
        p.set_flags(p.flags() | flags::RETX);
        b
    };
    if missing == all {
        return vec![copy(UPDATE_TARGET_ALL)];
    }
    (0..64u16)
        .filter(|w| missing >> w & 1 == 1)
        .map(copy)
        .collect()
}
