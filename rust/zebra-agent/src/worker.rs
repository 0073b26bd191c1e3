//! The worker side: split each push a worker's DEALER sends to a server
//! into a cold message (with the PUSH trailer) and hot pairs, and turn each
//! settled round into a SETTLE message.
//!
//! Per server `s` (one zebra-proto job each), every push this worker sends
//! to `s` for the aggregated application and customer is a round of job
//! `job_base + s`, also one without a hot key: the switch closes a round
//! when every worker's DONE has arrived, so every worker pushes every round
//! (`Worker::push` with no pairs sends an empty DONE packet).
//!
//! # Round numbers
//!
//! Workers aggregate when they give the same push the same round number,
//! so the numbering restarts at every PS-lite barrier: after the `b`-th
//! BARRIER request this worker sent (to the scheduler, on another DEALER),
//! its next push to `s` is round `b · EPOCH_ROUNDS + 1`, the one after
//! `b · EPOCH_ROUNDS + 2`, and so on. Workers that pushed different counts
//! before a barrier (MXNet's worker 0 alone pushes every key's initial
//! value in `kv.init`) line up again after it. Rounds only increase: a
//! worker that pushed more than `EPOCH_ROUNDS` times since the barrier
//! goes on from its previous round + 1 (exact still, aligned only with
//! workers that pushed as often). Each PUSH trailer carries the worker's
//! previous round, so the server knows which of its rounds come first.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use zebra_proto::{Fallback, FallbackCause, RoundSummary, SwitchChoice};
use zebra_pslite::{kv_in_place, with_kv, Command, Detector, KvData};

use crate::config::{AgentConfig, AgentError};
use crate::frame::{HotSetFrame, PushTrailer, Settle, ZebraFrame};
use crate::hotset::HotSet;
use crate::stats::WorkerAgentStats;
use crate::values::{self, F32_BYTES};
use crate::Frames;

/// Rounds each barrier epoch starts apart (module docs). A round must stay
/// below 2^28 for the P4 switch (`P4.md`): 4096 barriers.
pub const EPOCH_ROUNDS: u32 = 1 << 16;

/// Most rounds one HOTSET closes ([`SplitPush::closes`]); a worker further
/// behind leaves the rest to the switch's round timeout.
pub const MAX_CLOSED_ROUNDS: u32 = 4096;

/// What to do with a message the worker's DEALER is sending.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// Send it as it is.
    Unchanged,
    /// Send [`SplitPush::frames`] instead, then hand
    /// [`SplitPush::pairs`] to the zebra-proto worker of
    /// [`SplitPush::job`] as round [`SplitPush::round`].
    Split(SplitPush),
}

/// A push split into its cold message and hot pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPush {
    /// Destination server rank.
    pub server: u16,
    /// The server's zebra-proto job.
    pub job: u16,
    /// Round in that job.
    pub round: u32,
    /// The message to send: the push without its hot keys, then the PUSH
    /// trailer.
    pub frames: Frames,
    /// `(hot index, value)` for `zebra_proto::Worker::push` (possibly
    /// empty: push it anyway).
    pub pairs: Vec<(u32, f32)>,
    /// Online, on the first push after a decision: rounds to hand to the
    /// zebra-proto worker with no pairs before `round`, in order (an empty
    /// DONE packet each, as for a whole push): rounds other workers push
    /// and this one never will, `round` being past them ([`Closing`]).
    /// Without its DONE each would stay open at the switch until the round
    /// timeout.
    pub closes: Vec<RangeInclusive<u32>>,
    /// Whether `round` goes to the switch (with `pairs`, possibly none). Not
    /// while a server that started with no hot key has not decided yet:
    /// nobody aggregates those rounds, so nobody needs their DONE.
    pub to_switch: bool,
}

/// What a server's Zebra message to this worker was
/// ([`WorkerAgent::on_recv`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromServer {
    /// An online decision of `server`, taken.
    HotSet {
        /// Server rank.
        server: u16,
    },
    /// The switch was started again: call `restart(through, resend_from)`
    /// on the zebra-proto worker of `job`.
    Restart {
        /// Server rank.
        server: u16,
        /// Its zebra-proto job.
        job: u16,
        /// Rounds up to this one go to the server only.
        through: u32,
        /// Kept rounds from this one on are sent again.
        resend_from: u32,
        /// The switch's new epoch.
        epoch: u32,
        /// The switch in use from now on (after a failover, the other
        /// one): `zebra_hotpath::WorkerLink::move_to`.
        switch: SwitchChoice,
    },
}

/// A SETTLE message to send on the DEALER to `server`.
#[derive(Debug, Clone, PartialEq)]
pub struct SettleMessage {
    /// Server rank.
    pub server: u16,
    /// The message: one frame.
    pub frames: Frames,
}

#[derive(Debug, Default)]
struct OpenRound {
    /// Whether the trailer listed a hot key (else the server does not wait
    /// for a SETTLE).
    listed: bool,
    /// Whether the trailer promised a SETTLE whatever happens.
    settles: bool,
    batches: Vec<Fallback>,
}

#[derive(Debug, Default)]
struct Stream {
    last_round: u32,
    open: BTreeMap<u32, OpenRound>,
    /// Pushes split for this server (online: the first `T` are counted).
    pushes: u32,
    /// Online: the server's decision, `(first round, set from then on)`.
    decision: Option<(u32, Arc<HotSet>)>,
    /// Online: a decision this worker could not use; whole pushes from the
    /// `T+1`-th on.
    refused: bool,
    /// Online: 1 after the decision, which skips a barrier epoch so that
    /// every worker's pushes after it meet again.
    epoch_offset: u32,
    /// Online: what the decision closes, and the least round of the next
    /// push.
    closing: Option<Closing>,
    /// Online: the server stepped aside; pushes to it go unchanged.
    aside: bool,
    /// Online: the server counts again after standing aside; pushes to it
    /// go whole until its next decision.
    recounting: bool,
}

/// The worker side of one PS-lite worker.
#[derive(Debug)]
pub struct WorkerAgent {
    config: AgentConfig,
    hot: Arc<HotSet>,
    rank: u16,
    detector: Detector,
    streams: Vec<Stream>,
    stats: WorkerAgentStats,
}

/// Why a message is not split (one [`crate::stats::PassThrough`] counter each).
#[derive(Debug, Clone, Copy)]
enum Skip {
    UnknownFormat,
    NotPush,
    OtherStream,
    NoHotKeys,
    Aside,
    NoData,
    ValueType,
    Malformed,
}

enum Verdict {
    /// Hot: the key's ordinal among the server's hot keys, its first hot index.
    Hot(u32, u32),
    Cold,
}

/// What a worker does at an online decision about the rounds around it.
///
/// Workers drift apart while they push whole waiting for the decision
/// (asynchronous SGD: nothing holds a fast one back). Every worker's next
/// push is the decision's round, whenever the decision reaches it: the
/// workers meet again there, as after a PS-lite barrier, and the switch's few
/// open rounds hold what they push together. The rounds of the decision's
/// `seen` epoch after this worker's last push, up to `seen`, faster workers
/// pushed and this one never will (its next push jumps past them), so it
/// closes them.
///
/// (Until 2026-11-26 a worker went on as far past the decision's round as it
/// had been ahead of the slowest one, so that pushes met by their place in
/// the epoch as before the decision. With workers that drifted a dozen rounds
/// apart, each round then waited for the slowest worker longer than any round
/// timeout, and the switch's copies were all held by rounds the others would
/// push much later: MovieLens training with online hot keys and the
/// protocol's defaults flushed every round and ran 1.4x slower than libzmq;
/// aligned, it completes 60 of 62 rounds and runs 1.5x faster. HOTSET's
/// `floor` is still sent, and no longer used.)
///
/// Every closed round is one this worker never pushes, so its empty DONE
/// says what a whole push would have: exact whatever the others do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Closing {
    closes: Vec<RangeInclusive<u32>>,
    /// The least round of the next push.
    next: u32,
}

impl Closing {
    /// At a decision: `after_last` the round this worker's next push would
    /// have had, `target` the one it jumps to.
    fn new(job: u16, after_last: u32, target: u32, seen: u32) -> Closing {
        let epoch = |r: u32| r.saturating_sub(1) / EPOCH_ROUNDS;
        let mut closes = Vec::new();
        let mut budget = MAX_CLOSED_ROUNDS;
        let mut close = |first: u32, last: u32| {
            if first > last {
                return;
            }
            let n = last - first + 1;
            if n > budget {
                log::warn!(
                    "job {job}: {n} rounds to close at the decision, more than {MAX_CLOSED_ROUNDS}: \
                     left to the switch's round timeout"
                );
                return;
            }
            budget -= n;
            closes.push(first..=last);
        };
        if seen > 0 && seen < target {
            close(after_last.max(epoch(seen) * EPOCH_ROUNDS + 1), seen);
        }
        Closing {
            closes,
            next: target,
        }
    }
}

impl WorkerAgent {
    /// The agent of worker rank `rank` (PS-lite node id `9 + 2 rank`).
    pub fn new(
        config: AgentConfig,
        hot: Arc<HotSet>,
        rank: u16,
    ) -> Result<WorkerAgent, AgentError> {
        config.validate()?;
        if rank >= config.workers {
            return Err(AgentError::Rank {
                role: "worker",
                rank,
                count: config.workers,
            });
        }
        if hot.ranges().len() != config.servers as usize {
            return Err(AgentError::Config(format!(
                "the hot set has key ranges for {} servers, the job has {}",
                hot.ranges().len(),
                config.servers
            )));
        }
        Ok(WorkerAgent {
            detector: Detector::new(config.format),
            streams: (0..config.servers).map(|_| Stream::default()).collect(),
            config,
            hot,
            rank,
            stats: WorkerAgentStats::default(),
        })
    }

    /// Counters.
    pub fn stats(&self) -> &WorkerAgentStats {
        &self.stats
    }

    /// This worker's rank.
    pub fn rank(&self) -> u16 {
        self.rank
    }

    /// Rounds split whose hot part has not settled yet.
    pub fn open_rounds(&self) -> usize {
        self.streams.iter().map(|s| s.open.len()).sum()
    }

    /// A multipart message (`[meta, data...]`) this worker's DEALER to
    /// server rank `server` is about to send.
    pub fn on_send(&mut self, server: u16, frames: &[&[u8]]) -> Outgoing {
        self.outgoing(Some(server), frames)
    }

    /// Like [`on_send`](Self::on_send), for a DEALER whose peer is not known
    /// (neither PS-lite meta format carries the receiver): the server is the
    /// one whose key range holds the push's first key, as PS-lite's default
    /// slicer sends each server only keys of its range.
    pub fn on_send_to_recver(&mut self, frames: &[&[u8]]) -> Outgoing {
        self.outgoing(None, frames)
    }

    fn outgoing(&mut self, server: Option<u16>, frames: &[&[u8]]) -> Outgoing {
        self.stats.messages += 1;
        match self.split(server, frames) {
            Ok(split) => Outgoing::Split(split),
            Err(skip) => {
                let p = &mut self.stats.passed;
                *match skip {
                    Skip::UnknownFormat => &mut p.unknown_format,
                    Skip::NotPush => &mut p.not_push,
                    Skip::OtherStream => &mut p.other_stream,
                    Skip::NoHotKeys => &mut p.no_hot_keys,
                    Skip::Aside => &mut p.aside,
                    Skip::NoData => &mut p.no_data,
                    Skip::ValueType => &mut p.value_type,
                    Skip::Malformed => &mut p.malformed,
                } += 1;
                Outgoing::Unchanged
            }
        }
    }

    fn split(&mut self, server: Option<u16>, frames: &[&[u8]]) -> Result<SplitPush, Skip> {
        let (&meta_frame, data) = frames.split_first().ok_or(Skip::UnknownFormat)?;
        let (format, meta) = self
            .detector
            .parse(meta_frame)
            .map_err(|_| Skip::UnknownFormat)?;
        if meta.control.cmd == Command::Barrier && meta.request {
            self.stats.barriers += 1;
        }
        if !meta.is_push_request() {
            return Err(Skip::NotPush);
        }
        if (meta.app_id, meta.customer_id) != (self.config.app_id, self.config.customer_id) {
            return Err(Skip::OtherStream);
        }
        let no_hot_keys = |s: u16| s >= self.config.servers || self.hot.indices(s) == 0;
        if server.is_some_and(no_hot_keys) {
            return Err(Skip::NoHotKeys);
        }
        let aside = |s: u16| self.streams[s as usize].aside;
        if server.is_some_and(aside) {
            return Err(Skip::Aside);
        }
        let malformed = |e: zebra_pslite::Error| {
            log::debug!("push not split: {e}");
            Skip::Malformed
        };
        // The meta the detector parsed; the data frames read in place.
        let view = kv_in_place(&meta, data)
            .map_err(malformed)?
            .ok_or(Skip::NoData)?;
        if !values::aggregatable(view.val_type(), self.config.other_values) {
            return Err(Skip::ValueType);
        }
        let entries = view.entries().map_err(malformed)?;
        let entries: Vec<_> = entries.collect();
        let server = match server {
            Some(s) => s,
            None => {
                let first = entries.first().ok_or(Skip::NoData)?.0;
                let s = self.hot.ranges().server_of(first).ok_or(Skip::NoHotKeys)?;
                if no_hot_keys(s) {
                    return Err(Skip::NoHotKeys);
                }
                if aside(s) {
                    return Err(Skip::Aside);
                }
                s
            }
        };

        let stream = &self.streams[server as usize];
        let round = self
            .next_round(stream.last_round, stream.epoch_offset)
            .max(stream.closing.as_ref().map_or(0, |c| c.next));
        let set = self.set_for(server, round);
        if set.is_none() {
            self.stats.whole_pushes += 1;
        }
        // Online, a counted push: the server counts a key only where its
        // update is not zero, and sees the values of cold keys only.
        let stream = &self.streams[server as usize];
        let counted = self.config.online.as_ref().is_some_and(|o| {
            stream.decision.is_none() && !stream.refused && stream.pushes < o.rounds
        });
        let mut cold = KvData::empty(view.val_type(), view.has_lens());
        let mut listed = Vec::new();
        let mut pairs = Vec::new();
        for (i, &(key, bytes, _)) in entries.iter().enumerate() {
            match set
                .as_deref()
                .map(|set| self.verdict(set, server, &entries, i))
            {
                Some(Verdict::Hot(_, _)) if counted && values::decode(bytes).all(|v| v == 0.0) => {
                    self.stats.cold_zero += 1;
                    cold.push_entry(key, bytes);
                }
                Some(Verdict::Hot(ordinal, base)) => {
                    listed.push(ordinal);
                    pairs.extend((base..).zip(values::decode(bytes)));
                }
                Some(Verdict::Cold) | None => cold.push_entry(key, bytes),
            }
        }

        listed.sort_unstable();
        let job = self.config.job(server);
        let trailer = PushTrailer {
            job,
            worker: self.rank,
            round,
            previous: self.streams[server as usize].last_round,
            val_type: view.val_type(),
            lens: view.has_lens(),
            settles: pairs.len() > self.config.max_clean_values as usize,
            hot: listed,
        };
        let trailer_bytes = trailer.to_bytes().map_err(|_| Skip::Malformed)?;
        let mut out: Frames = if trailer.hot.is_empty() {
            frames.iter().map(|f| f.to_vec()).collect()
        } else {
            with_kv(&meta, &cold)
                .and_then(|m| m.to_frames(format))
                .map_err(malformed)?
        };
        out.push(trailer_bytes);

        let s = &mut self.stats;
        s.split += 1;
        s.hot_keys += trailer.hot.len() as u64;
        s.hot_values += pairs.len() as u64;
        s.bytes_before += frames.iter().map(|f| f.len() as u64).sum::<u64>();
        s.bytes_after += out.iter().map(|f| f.len() as u64).sum::<u64>();
        s.trailer_bytes += trailer.len() as u64;
        let to_switch =
            self.streams[server as usize].decision.is_some() || !self.whole_until_decided(server);
        let stream = &mut self.streams[server as usize];
        // Rounds a decision closes, each one without hot keys (no SETTLE).
        let closes = stream.closing.take().map_or(Vec::new(), |c| c.closes);
        for r in closes.iter().cloned().flatten() {
            stream.open.insert(r, OpenRound::default());
            self.stats.closed_rounds += 1;
        }
        stream.last_round = round;
        stream.pushes = stream.pushes.saturating_add(1);
        if to_switch {
            stream.open.insert(
                round,
                OpenRound {
                    listed: !trailer.hot.is_empty(),
                    settles: trailer.settles,
                    batches: Vec::new(),
                },
            );
        }
        Ok(SplitPush {
            server,
            job,
            round,
            frames: out,
            pairs,
            closes,
            to_switch,
        })
    }

    /// The round after `previous` (module docs): the current barrier
    /// epoch's next one, the epochs counted from `offset`.
    fn next_round(&self, previous: u32, offset: u32) -> u32 {
        let next = previous.saturating_add(1);
        u32::try_from(self.stats.barriers)
            .ok()
            .and_then(|b| b.checked_add(offset))
            .and_then(|b| b.checked_mul(EPOCH_ROUNDS))
            .and_then(|base| base.checked_add(1))
            .map_or(next, |first| first.max(next))
    }

    /// Whether nobody aggregates to `server` before its first decision: it
    /// started with no hot key, or a hot-keys file's watcher times whole
    /// pushes first ([`crate::OnlineConfig::fixed`]). Those pushes do not go
    /// to the switch.
    fn whole_until_decided(&self, server: u16) -> bool {
        self.hot.server_keys(server).is_empty()
            || self
                .config
                .online
                .as_ref()
                .is_some_and(crate::OnlineConfig::whole_first)
    }

    /// The hot set of round `round` of `server`'s job, or `None`: push it
    /// whole (online, between this worker's `T`-th push and the decision;
    /// `crate::online`).
    fn set_for(&self, server: u16, round: u32) -> Option<Arc<HotSet>> {
        let Some(online) = &self.config.online else {
            return Some(self.hot.clone());
        };
        let stream = &self.streams[server as usize];
        match &stream.decision {
            _ if stream.recounting => None,
            Some((from, set)) if round >= *from => Some(set.clone()),
            // Counted with the starting keys; a file watched without a probe
            // goes on with them until the server's decision.
            _ if (stream.pushes < online.rounds || (online.fixed && !online.probe))
                && !stream.refused
                && !online.whole_first() =>
            {
                Some(self.hot.clone())
            }
            _ => None,
        }
    }

    /// A message this worker's DEALER received from a server's Zebra (PS-lite
    /// never sends one): a HOTSET frame (`crate::online`), whose decision
    /// applies to this worker's rounds from the frame's on (the rounds it
    /// closes, if any, go with this worker's next push to the server,
    /// [`SplitPush::closes`]: handed to the zebra-proto worker by whoever
    /// pushes, so that no round can overtake them); or a RESTART frame,
    /// which the caller hands to the zebra-proto worker of its job
    /// (`zebra_proto::Worker::restart`).
    pub fn on_recv(&mut self, frames: &[&[u8]]) -> Result<FromServer, AgentError> {
        let bad = |what: String| AgentError::Config(format!("message from a server: {what}"));
        let [frame] = frames else {
            return Err(bad(format!(
                "{} frames, expected a HOTSET or RESTART frame",
                frames.len()
            )));
        };
        match ZebraFrame::parse(frame) {
            Ok(ZebraFrame::HotSet(h)) => {
                let server = self
                    .config
                    .server_of_job(h.job)
                    .ok_or(AgentError::UnknownJob(h.job))?;
                self.on_hotset(h)?;
                Ok(FromServer::HotSet { server })
            }
            Ok(ZebraFrame::Restart(r)) => {
                let server = self
                    .config
                    .server_of_job(r.job)
                    .ok_or(AgentError::UnknownJob(r.job))?;
                if r.worker != self.rank {
                    return Err(bad(format!(
                        "RESTART for worker {} (this is worker {})",
                        r.worker, self.rank
                    )));
                }
                self.stats.restarts += 1;
                Ok(FromServer::Restart {
                    server,
                    job: r.job,
                    through: r.through,
                    resend_from: r.resend_from,
                    epoch: r.epoch,
                    switch: r.switch,
                })
            }
            Ok(other) => Err(bad(format!("Zebra frame type {}", other.kind()))),
            Err(e) => Err(bad(e.to_string())),
        }
    }

    /// Whether `key` is a hot key of `server` for this worker's next push
    /// to it (the pull half answers only those from its copy): not while
    /// the server stands aside or counts.
    pub fn hot_key(&self, server: u16, key: u64) -> bool {
        let Some(stream) = self.streams.get(server as usize) else {
            return false;
        };
        if stream.aside {
            return false;
        }
        let round = self
            .next_round(stream.last_round, stream.epoch_offset)
            .max(stream.closing.as_ref().map_or(0, |c| c.next));
        self.set_for(server, round)
            .is_some_and(|set| set.is_hot(server, key))
    }

    fn on_hotset(&mut self, h: HotSetFrame) -> Result<(), AgentError> {
        let server = self
            .config
            .server_of_job(h.job)
            .ok_or(AgentError::UnknownJob(h.job))?;
        if self.config.online.is_none() || h.worker != self.rank {
            return Err(AgentError::Config(format!(
                "HOTSET of job {} for worker {} (this is worker {}{})",
                h.job,
                h.worker,
                self.rank,
                if self.config.online.is_none() {
                    ", not online"
                } else {
                    ""
                }
            )));
        }
        let stream = &self.streams[server as usize];
        if h.recount {
            // The server tries aggregation again: whole pushes, counted,
            // until its next decision (its rounds go on from here).
            self.stats.hotsets += 1;
            let stream = &mut self.streams[server as usize];
            stream.aside = false;
            stream.decision = None;
            stream.refused = false;
            stream.closing = None;
            stream.pushes = 0;
            stream.recounting = true;
            return Ok(());
        }
        if h.aside && !stream.aside {
            // At the decision or later (rounds stopped meeting): rounds this
            // worker pushed stay as they are, the switch closes them (or
            // their round timeout does); its later pushes to the server carry
            // no trailer and never reach the switch.
            self.stats.hotsets += 1;
            self.streams[server as usize].aside = true;
            return Ok(());
        }
        if stream.decision.is_some() || stream.refused || stream.aside {
            return Err(AgentError::Config(format!(
                "a second HOTSET of job {}, ignored",
                h.job
            )));
        }
        self.stats.hotsets += 1;
        let watching = self
            .config
            .online
            .as_ref()
            .is_some_and(|o| o.fixed && !o.probe);
        if watching && !h.change && !stream.recounting {
            // A file watched without a probe, kept: this worker aggregated
            // with these keys all along and goes on, rounds unchanged.
            let set = self.hot.clone();
            self.streams[server as usize].decision = Some((h.from_round, set));
            return Ok(());
        }
        let last = stream.last_round;
        let after_last = self.next_round(last, stream.epoch_offset);
        // The decision's first round starts the barrier epoch after every
        // round the server saw: from now on this worker counts its barrier
        // epochs to the server from one more, as every other worker does,
        // whenever the decision reaches it. Its next push starts a new
        // epoch, where the workers meet again (pushes whole while waiting
        // let them drift apart), and stays at or past the decision's first
        // round: the server saw a round of epoch `e` only after every worker
        // had sent its `e`-th BARRIER request.
        let offset = stream.epoch_offset + u32::from(h.from_round % EPOCH_ROUNDS == 1);
        let next = self.next_round(last, offset);
        let whole_before = self.whole_until_decided(server);
        let stream = &mut self.streams[server as usize];
        stream.epoch_offset = offset;
        stream.recounting = false;
        let set = if h.change {
            match self.hot.replace_server(server, &h.keys) {
                Ok(set) => Arc::new(set),
                Err(e) => {
                    stream.refused = true;
                    return Err(AgentError::Config(format!(
                        "HOTSET of job {} refused ({e}); pushes to server {server} go whole",
                        h.job
                    )));
                }
            }
        } else {
            self.hot.clone()
        };
        stream.decision = Some((h.from_round, set));
        let mut closing = Closing::new(h.job, after_last, next, h.seen);
        if whole_before {
            // Started with no key (or a file's watcher, whose workers push
            // whole until the decision): nobody sent the switch a round
            // before the decision's, so there is nothing before it to close.
            closing.closes.retain(|r| *r.start() >= h.from_round);
        }
        stream.closing = Some(closing);
        Ok(())
    }

    /// Whether entry `i` goes hot: a hot key of this server in `set`,
    /// pushed once in this message, with the set's number of values.
    fn verdict(
        &mut self,
        set: &HotSet,
        server: u16,
        entries: &[(u64, &[u8], Option<i32>)],
        i: usize,
    ) -> Verdict {
        let (key, bytes, _) = entries[i];
        let Some(hk) = set.get(key) else {
            return Verdict::Cold;
        };
        let repeated =
            (i > 0 && entries[i - 1].0 == key) || entries.get(i + 1).is_some_and(|e| e.0 == key);
        if hk.server != server {
            self.stats.cold_wrong_server += 1;
            Verdict::Cold
        } else if repeated {
            self.stats.cold_repeated += 1;
            Verdict::Cold
        } else if bytes.len() != F32_BYTES * hk.len as usize {
            self.stats.cold_len += 1;
            Verdict::Cold
        } else {
            Verdict::Hot(hk.ordinal, hk.base)
        }
    }

    /// A `WorkerAction::Fallback` of one of this worker's zebra-proto
    /// workers: kept for the round's SETTLE message.
    pub fn on_fallback(&mut self, f: Fallback) -> Result<(), AgentError> {
        if f.worker != self.rank {
            return Err(AgentError::WrongWorker(f.worker));
        }
        let server = self
            .config
            .server_of_job(f.job)
            .ok_or(AgentError::UnknownJob(f.job))?;
        let open = self.streams[server as usize].open.get_mut(&f.round).ok_or(
            AgentError::UnknownRound {
                job: f.job,
                round: f.round,
            },
        )?;
        if f.pairs.is_empty() {
            return Ok(());
        }
        self.stats.fallback_pairs += f.pairs.len() as u64;
        let overflow = open
            .batches
            .iter_mut()
            .find(|b| b.cause == FallbackCause::TooManyPackets);
        match (f.cause, overflow) {
            (FallbackCause::TooManyPackets, Some(b)) => b.pairs.extend(f.pairs),
            _ => {
                self.stats.fallback_batches += 1;
                open.batches.push(f);
            }
        }
        Ok(())
    }

    /// A `WorkerAction::RoundDone` of the zebra-proto worker of `job`: the
    /// SETTLE message for the server, if the round's trailer listed a hot
    /// key (otherwise the server does not wait for one) and the round is
    /// not clean. A clean round, every packet added and no pair left over,
    /// needs none: the switch marks the worker complete in the round's
    /// aggregate, which tells the server the same.
    pub fn on_round_done(
        &mut self,
        job: u16,
        summary: &RoundSummary,
    ) -> Result<Option<SettleMessage>, AgentError> {
        let server = self
            .config
            .server_of_job(job)
            .ok_or(AgentError::UnknownJob(job))?;
        let open = self.streams[server as usize]
            .open
            .remove(&summary.round)
            .ok_or(AgentError::UnknownRound {
                job,
                round: summary.round,
            })?;
        if !open.listed {
            return Ok(None);
        }
        let clean =
            summary.added == summary.packets && summary.overflow == 0 && open.batches.is_empty();
        if clean && !open.settles {
            self.stats.clean_rounds += 1;
            return Ok(None);
        }
        let settle = Settle {
            job,
            worker: self.rank,
            round: summary.round,
            packets: summary.packets,
            added: summary.added,
            batches: open.batches,
            resend: false,
        };
        self.settle_message(server, &settle).map(Some)
    }

    fn settle_message(
        &mut self,
        server: u16,
        settle: &Settle,
    ) -> Result<SettleMessage, AgentError> {
        let bytes = settle
            .to_bytes()
            .map_err(|e| AgentError::Config(format!("SETTLE not encodable: {e}")))?;
        self.stats.settles += 1;
        self.stats.settle_bytes += bytes.len() as u64;
        Ok(SettleMessage {
            server,
            frames: vec![bytes],
        })
    }

    /// A `WorkerEvent::Resettle` of the zebra-proto worker of `job` (the
    /// switch was started again): the SETTLE with RESEND for the server,
    /// none when no batch has a pair.
    pub fn on_resettle(
        &mut self,
        job: u16,
        round: u32,
        mut batches: Vec<Fallback>,
    ) -> Result<Option<SettleMessage>, AgentError> {
        let server = self
            .config
            .server_of_job(job)
            .ok_or(AgentError::UnknownJob(job))?;
        batches.retain(|b| !b.pairs.is_empty());
        if batches.is_empty() {
            return Ok(None);
        }
        self.stats.resettles += 1;
        let settle = Settle {
            job,
            worker: self.rank,
            round,
            packets: 0,
            added: 0,
            batches,
            resend: true,
        };
        self.settle_message(server, &settle).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: u32 = EPOCH_ROUNDS;

    fn closing(last: u32, target: u32, seen: u32) -> Closing {
        Closing::new(1, last + 1, target, seen)
    }

    #[test]
    fn workers_in_step_close_nothing() {
        let c = closing(30, E + 1, 30);
        assert_eq!((c.closes, c.next), (vec![], E + 1));
    }

    #[test]
    fn a_slow_worker_closes_what_the_others_pushed_up_to_seen() {
        let c = closing(30, E + 1, 44);
        assert_eq!((c.closes, c.next), (vec![31..=44], E + 1));
        let c = Closing::new(1, 2 * E + 1, 3 * E + 1, E + 9);
        assert_eq!(
            c.closes,
            vec![],
            "past a barrier since: its next push is already past seen's epoch"
        );
    }

    #[test]
    fn a_fast_worker_jumps_to_the_decision_round_like_every_other() {
        let c = closing(45, E + 1, 44);
        assert_eq!((c.closes, c.next), (vec![], E + 1));
    }

    #[test]
    fn closing_never_reaches_the_next_push_and_is_bounded() {
        let c = closing(30, 40, 50);
        assert_eq!(c.closes, vec![], "seen at or past the jump target");
        let c = closing(10, E + 1, 10 + MAX_CLOSED_ROUNDS + 1);
        assert_eq!((c.closes, c.next), (vec![], E + 1), "too many: left");
        for (last, target, seen) in [(0, 1, 0), (u32::MAX - 1, u32::MAX, u32::MAX)] {
            let c = closing(last, target, seen);
            assert!(c
                .closes
                .iter()
                .all(|r| *r.start() > last && *r.end() < c.next));
        }
    }
}
