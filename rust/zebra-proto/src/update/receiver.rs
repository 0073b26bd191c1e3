//! A worker's side: [`UpdateReceiver`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{gap_timeout, Update, UpdateEvent};
use crate::config::{Config, ConfigError};
use crate::stats::UpdateReceiverStats;
use crate::time::Timestamp;
use crate::wire::update::{self, Fragment};
use crate::wire::{Message, UpdateAckRepr, UpdateRepr};

/// The parts of one update received so far.
#[derive(Debug)]
struct Assembly {
    round: u32,
    lens: bool,
    brk: bool,
    parts: Vec<Option<Vec<Fragment>>>,
    have: usize,
}

impl Assembly {
    fn new(u: &UpdateRepr) -> Assembly {
        Assembly {
            round: u.round,
            lens: u.lens,
            brk: u.brk,
            parts: vec![None; usize::from(u.parts)],
            have: 0,
        }
    }

    /// Whether `u` is a part of the same update.
    fn matches(&self, u: &UpdateRepr) -> bool {
        (self.round, self.lens, self.brk, self.parts.len())
            == (u.round, u.lens, u.brk, usize::from(u.parts))
    }

    /// The update, once every part is in; `None` if its fragments do not
    /// fit together.
    fn finish(self, seq: u32) -> Option<Update> {
        let parts: Vec<Vec<Fragment>> = self.parts.into_iter().flatten().collect();
        let entries = update::reassemble(parts.iter().map(|p| &p[..])).ok()?;
        Some(Update {
            seq,
            round: self.round,
            lens: self.lens,
            brk: self.brk,
            entries,
        })
    }
}

/// A worker's updates from one server. See the module documentation of
/// [`crate::update`].
#[derive(Debug)]
pub struct UpdateReceiver {
    job: u16,
    server: u16,
    rank: u16,
    window: u32,
    max_len: usize,
    gap_timeout: Duration,
    /// The next update to hand up; `None` until the first part arrives.
    next: Option<u32>,
    assembling: BTreeMap<u32, Assembly>,
    /// Complete updates after `next` (`None`: malformed, a gap).
    held: BTreeMap<u32, Option<Update>>,
    /// Since when an update is held behind a missing one.
    gap_since: Option<Timestamp>,
    /// The highest seq seen.
    newest: u32,
    /// Updates reported in a gap that the sender may still keep (within
    /// `window` seqs of `newest`): their late parts are not acknowledged, so
    /// that the sender gives them up instead of counting them delivered.
    skipped: BTreeSet<u32>,
    stats: UpdateReceiverStats,
}

impl UpdateReceiver {
    /// Worker `rank`'s receiver of the updates of server `server` of job `job`.
    pub fn new(
        config: &Config,
        job: u16,
        server: u16,
        rank: u16,
    ) -> Result<UpdateReceiver, ConfigError> {
        config.validate()?;
        let jc = config
            .job(job)
            .ok_or(ConfigError::UnknownMember { job, rank })?;
        if server >= jc.servers {
            return Err(ConfigError::UnknownMember { job, rank: server });
        }
        if rank >= jc.workers {
            return Err(ConfigError::UnknownMember { job, rank });
        }
        Ok(UpdateReceiver {
            job,
            server,
            rank,
            window: config.update_window as u32,
            max_len: config.aggregate_size,
            gap_timeout: gap_timeout(config),
            next: None,
            assembling: BTreeMap::new(),
            held: BTreeMap::new(),
            gap_since: None,
            newest: 0,
            skipped: BTreeSet::new(),
            stats: UpdateReceiverStats::default(),
        })
    }

    /// Reports a gap open this long (default: [`gap_timeout`]).
    pub fn set_gap_timeout(&mut self, timeout: Duration) {
        self.gap_timeout = timeout;
    }

    /// Counters.
    pub fn stats(&self) -> &UpdateReceiverStats {
        &self.stats
    }

    /// The seq of the next update to hand up, once the chain started.
    pub fn next_seq(&self) -> Option<u32> {
        self.next
    }

    /// Complete updates held behind a missing one.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Takes a datagram from the switch: the acknowledgement to send back
    /// (for a well-formed part addressed to this worker) and what to hand
    /// up. Anything else is counted and dropped; nothing here panics on
    /// input.
    pub fn handle_packet(
        &mut self,
        now: Timestamp,
        bytes: &[u8],
    ) -> (Option<Vec<u8>>, Vec<UpdateEvent>) {
        match Message::parse(bytes) {
            Ok(Message::Update(u)) => self.handle_update(now, &u),
            _ => {
                self.stats.bad_packets += 1;
                (None, Vec::new())
            }
        }
    }

    /// Takes a parsed update part, as [`handle_packet`](Self::handle_packet).
    pub fn handle_update(
        &mut self,
        now: Timestamp,
        u: &UpdateRepr,
    ) -> (Option<Vec<u8>>, Vec<UpdateEvent>) {
        let mut events = Vec::new();
        if u.job != self.job || u.server != self.server {
            self.stats.bad_packets += 1;
            return (None, events);
        }
        if !u.to_all() && u.target != self.rank {
            self.stats.not_addressed += 1;
            return (None, events);
        }
        // The last seq a sender could reach is refused, so that the chain's
        // arithmetic never passes u32::MAX.
        if u.buffer_len() > self.max_len || u.seq == u32::MAX {
            self.stats.inconsistent_parts += 1;
            return (None, events);
        }
        let ack = UpdateAckRepr {
            job: self.job,
            server: self.server,
            seq: u.seq,
            part: u.part,
            worker: self.rank,
        }
        .to_bytes();
        // The first part starts the chain, after the updates the sender may
        // still hold for this worker.
        let next = *self
            .next
            .get_or_insert(u.seq.saturating_sub(self.window - 1).max(1));
        self.newest = self.newest.max(u.seq);
        if u.seq < next {
            self.stats.stale_parts += 1;
            if self.skipped.contains(&u.seq) {
                return (None, events);
            }
            self.stats.parts += 1;
            return (Some(ack), events);
        }
        if u.seq - next >= self.window {
            // The sender keeps `window` updates: it sent this one after it
            // gave up every update below `seq - window + 1`.
            self.advance(u.seq - self.window + 1, &mut events);
        }
        if self.held.contains_key(&u.seq) {
            self.stats.parts += 1;
            self.stats.duplicate_parts += 1;
            return (Some(ack), events);
        }
        let a = self
            .assembling
            .entry(u.seq)
            .or_insert_with(|| Assembly::new(u));
        if !a.matches(u) {
            self.stats.inconsistent_parts += 1;
            return (None, events);
        }
        let Some(slot) = a.parts.get_mut(usize::from(u.part)) else {
            self.stats.inconsistent_parts += 1;
            return (None, events);
        };
        self.stats.parts += 1;
        if slot.is_some() {
            self.stats.duplicate_parts += 1;
            return (Some(ack), events);
        }
        *slot = Some(u.entries.clone());
        a.have += 1;
        if a.have == a.parts.len() {
            if let Some(a) = self.assembling.remove(&u.seq) {
                let whole = a.finish(u.seq);
                self.stats.malformed_updates += u64::from(whole.is_none());
                self.held.insert(u.seq, whole);
            }
        }
        self.deliver(now, &mut events);
        (Some(ack), events)
    }

    /// Reports a gap open for [`gap_timeout`] and hands up what it held.
    pub fn poll(&mut self, now: Timestamp) -> Vec<UpdateEvent> {
        let mut events = Vec::new();
        if self.poll_at().is_some_and(|t| t <= now) {
            if let Some(&first) = self.held.keys().next() {
                self.advance(first, &mut events);
            }
            self.gap_since = None;
            self.deliver(now, &mut events);
        }
        events
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        self.gap_since.map(|t| t + self.gap_timeout)
    }

    /// Hands up the held updates that follow the chain without a gap.
    fn deliver(&mut self, now: Timestamp, events: &mut Vec<UpdateEvent>) {
        let Some(mut next) = self.next else {
            return;
        };
        let before = next;
        while let Some(whole) = self.held.remove(&next) {
            self.hand_up(next, whole, events);
            next += 1;
        }
        self.next = Some(next);
        self.gap_since = if self.held.is_empty() {
            None
        } else if next != before {
            Some(now)
        } else {
            Some(self.gap_since.unwrap_or(now))
        };
    }

    /// Moves the chain on to `limit`: held updates below it are handed up,
    /// missing ones reported as gaps, their parts dropped.
    fn advance(&mut self, limit: u32, events: &mut Vec<UpdateEvent>) {
        let Some(mut next) = self.next else {
            return;
        };
        while next < limit {
            if let Some(whole) = self.held.remove(&next) {
                self.hand_up(next, whole, events);
                next += 1;
                continue;
            }
            let from = next;
            while next < limit && !self.held.contains_key(&next) {
                next += 1;
            }
            self.gap(from..next, events);
        }
        self.next = Some(next);
        self.assembling.retain(|&seq, _| seq >= next);
        let newest = self.newest;
        let window = self.window;
        self.skipped.retain(|&seq| seq + window > newest);
    }

    fn hand_up(&mut self, seq: u32, whole: Option<Update>, events: &mut Vec<UpdateEvent>) {
        match whole {
            Some(u) => {
                self.stats.updates += 1;
                events.push(UpdateEvent::Update(u));
            }
            None => self.gap(seq..seq + 1, events),
        }
    }

    fn gap(&mut self, missing: std::ops::Range<u32>, events: &mut Vec<UpdateEvent>) {
        log::debug!(
            "update receiver: job {} server {} worker {}: updates {missing:?} skipped",
            self.job,
            self.server,
            self.rank
        );
        self.stats.gaps += 1;
        self.stats.skipped += u64::from(missing.end - missing.start);
        let kept = missing
            .start
            .max((self.newest + 1).saturating_sub(self.window));
        self.skipped.extend(kept..missing.end);
        events.push(UpdateEvent::Gap { missing });
    }
}
