//! The server side: hold each push that arrives with a PUSH trailer until
//! the hot part of its round is settled, then give the server app one
//! valid PS-lite push request per worker, with the hot keys merged back.
//!
//! Inputs, in any order: messages from the server's ROUTER
//! ([`ServerAgent::on_recv`]), the round aggregates and applied fallback
//! pairs of this server's zebra-proto `Server` ([`ServerAgent::on_round`],
//! [`ServerAgent::on_apply`]), and time ([`ServerAgent::poll`]).
//!
//! # When a held push of worker `w`, round `r`, is released
//!
//! It is at the head of `w`'s queue (messages of one sender are delivered
//! in arrival order), and either its trailer lists no hot key, or:
//!
//! 1. `w`'s SETTLE for `r` has arrived, or round `r`'s aggregate marks `w`
//!    complete (every packet added: a clean round, which has no SETTLE);
//! 2. if the switch added any of `w`'s packets, round `r`'s aggregate has
//!    arrived;
//! 3. every fallback batch of the SETTLE is accounted for: applied
//!    (`Apply` came back), or uncertain and held by the aggregate's coverage
//!    (zebra-proto will never apply it);
//! 4. if the aggregate has arrived, every worker it covers has had its
//!    pushes of rounds before `r` released, so that a sum holding another
//!    worker's round-`r` values never reaches the app before that worker's
//!    earlier requests (conservative ordering).
//!
//! # What a released request carries
//!
//! Its cold keys and, merged in key order, its hot keys. Each hot value's
//! round total is the sum of what has arrived for it (the aggregate's sum
//! and applied fallback pairs); a released request takes what has arrived
//! and not yet been delivered, so the first released request that lists a
//! key carries its sum (the lowest rank when a round settles for all at
//! once, as usual) and the others zeros. Every contribution is delivered
//! once: a worker's own values have arrived before it is released, and it
//! lists every key it contributed to. In [`Delivery::Merged`] mode the
//! first released request takes every value that has arrived for the
//! round, and later ones carry only their cold keys and what arrived since.
//!
//! If a held push is still unsettled `settle_timeout` after it arrived
//! (a party died), [`ServerAgent::poll`] delivers it with what has arrived,
//! logged and counted.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use zebra_proto::{Coverage, Fallback, RoundAggregate, ServerAction, SwitchChoice, Timestamp};
use zebra_pslite::{
    kv_in_place, node_id, rank_of, role_of, with_kv, Detector, Format, KvData, KvView, Message,
    Meta, Role, Route, EMPTY,
};

use crate::config::{AgentConfig, AgentError, Delivery};
use crate::frame::{has_magic, PushTrailer, RestartFrame, Settle, ZebraFrame};
use crate::hotset::HotSet;
use crate::online::Census;
use crate::pull::PullConfig;
use crate::readback::{ReadBack, ReadBackStats, RoundValues};
use crate::stats::ServerAgentStats;
use crate::values::{self, F32_BYTES};
use crate::{shared, Frames, SharedFrames};

/// Rounds watched for flushes after an online decision: more than half of
/// them flushed and the server steps aside.
const FLUSH_WINDOW: usize = 8;

/// Rounds remembered as unsure (`ServerAgent::unsure`): late values come
/// within seconds, far fewer rounds than this.
const UNSURE_REMEMBERED: usize = 4096;

/// What a message from the ROUTER turned into.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerOutput {
    /// Messages for the app, in order, each as the ROUTER would have given
    /// it (sender identity first).
    pub deliver: Vec<SharedFrames>,
    /// Fallback pairs from a SETTLE: pass each to
    /// `zebra_proto::Server::add_fallback` and feed the actions it returns
    /// back ([`ServerAgent::on_action`]).
    pub fallbacks: Vec<Fallback>,
}

/// Queue order of senders: workers by rank, then anything else.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SenderKey {
    rank: u16,
    identity: Vec<u8>,
}

impl SenderKey {
    fn of(identity: &[u8]) -> SenderKey {
        let rank = node_id(identity)
            .filter(|&id| role_of(id) == Role::Worker)
            .and_then(|id| u16::try_from(rank_of(id)).ok())
            .unwrap_or(u16::MAX);
        SenderKey {
            rank,
            identity: identity.to_vec(),
        }
    }
}

/// Σ|g·p| of one pushed key's values `g` (little-endian `f32`) and its
/// parameters `p`; `None` when their counts differ.
fn pgp(g: &[u8], p: &[f32]) -> Option<f64> {
    (g.len() == p.len() * F32_BYTES).then(|| {
        values::decode(g)
            .zip(p)
            .map(|(g, &p)| (f64::from(g) * f64::from(p)).abs())
            .sum()
    })
}

/// The request of a held push as it came: its meta parsed once, its data
/// frames the engine's, read in place.
#[derive(Debug)]
struct Request {
    meta: Meta,
    data: Vec<Bytes>,
}

impl Request {
    fn kv(&self) -> zebra_pslite::Result<Option<KvView<'_>>> {
        let refs: Vec<&[u8]> = self.data.iter().map(|d| &d[..]).collect();
        kv_in_place(&self.meta, &refs)
    }

    /// Meta and data frames, as they came.
    fn to_frames(&self, format: Format) -> zebra_pslite::Result<SharedFrames> {
        let mut frames = vec![Bytes::from(format.emit(&self.meta)?)];
        frames.extend(self.data.iter().cloned());
        Ok(frames)
    }
}

#[derive(Debug)]
struct Held {
    worker: u16,
    trailer: PushTrailer,
    identity: Bytes,
    cold: Request,
    format: Format,
    arrived: Timestamp,
    /// Pull half: since when only the gate holds it (every other condition
    /// of its release met).
    gated_since: Option<Timestamp>,
}

#[derive(Debug)]
enum Queued {
    Plain(SharedFrames),
    Push(Box<Held>),
    /// Pull half: a push that came whole with a hot key while workers may
    /// hold copies of the hot rows: delivered once a BREAK has settled.
    Gated(SharedFrames),
}

#[derive(Debug)]
struct BatchState {
    seq: u16,
    certain: bool,
    applied: bool,
}

#[derive(Debug)]
struct SettleState {
    added: u16,
    batches: Vec<BatchState>,
}

#[derive(Debug)]
struct AggSeen {
    contributed: u64,
    complete: u64,
    coverage: Coverage,
}

/// A held push's cold entries and value type.
struct Shape<'a> {
    val_type: zebra_pslite::DataType,
    lens: bool,
    entries: Vec<(u64, &'a [u8])>,
}

/// One round of this server's job.
#[derive(Debug, Default)]
struct RoundState {
    agg: Option<AggSeen>,
    /// Aggregate sums not yet delivered, by hot index.
    agg_pending: BTreeMap<u32, f32>,
    /// Applied fallback values not yet delivered, by worker and hot index.
    applied: BTreeMap<u16, BTreeMap<u32, f32>>,
    settles: BTreeMap<u16, SettleState>,
    /// Per worker whose push of this round arrived: its previous round.
    previous: BTreeMap<u16, u32>,
    /// Held pushes of this round.
    holding: u32,
    /// Pull half: held pushes of this round released, and the hot keys
    /// their requests held.
    released_pushes: u32,
    pull_keys: Vec<u64>,
    /// Pull half: the command (`head`) of the round's released requests,
    /// `Some(None)` once two differ.
    pull_head: Option<Option<i32>>,
}

impl RoundState {
    /// Takes what has arrived and not been delivered for hot index `i`:
    /// the aggregate's sum if `agg_ok`, and the applied values of the
    /// workers in `open`.
    fn take(&mut self, i: u32, agg_ok: bool, open: &[u16]) -> Option<f32> {
        let mut sum = if agg_ok {
            self.agg_pending.remove(&i)
        } else {
            None
        };
        for x in open {
            if let Some(v) = self.applied.get_mut(x).and_then(|m| m.remove(&i)) {
                sum = Some(sum.unwrap_or(0.0) + v);
            }
        }
        sum
    }

    fn pending_values(&self) -> impl Iterator<Item = f32> + '_ {
        self.agg_pending
            .values()
            .chain(self.applied.values().flat_map(|m| m.values()))
            .copied()
    }
}

/// The pull half on this server (`crate::readback`, `docs/PULL.md`).
#[derive(Debug)]
struct ServerPull {
    config: PullConfig,
    readback: ReadBack,
    /// Rounds are gated and read back; off once it stood aside.
    active: bool,
    /// An update with values went out since the last BREAK settled:
    /// workers may hold copies of hot rows.
    copies: bool,
    /// A change of hot values outside whole rounds waits for a BREAK to
    /// settle; meanwhile no push carrying hot values is released.
    barrier: bool,
    /// BREAKs handed out, and settled (acknowledged by every worker or
    /// given up).
    breaks_out: u64,
    breaks_settled: u64,
}

impl ServerPull {
    /// Before hot values change outside whole rounds: `true` when that
    /// must wait for a BREAK to settle (started here if needed).
    fn must_wait(&mut self, stats: &mut ServerAgentStats) -> bool {
        if !self.copies && !self.barrier {
            return false;
        }
        if !self.barrier {
            self.barrier = true;
            stats.pull_barriers += 1;
            self.readback.break_chain();
        }
        true
    }

    /// Ends the barrier once every BREAK handed out has settled and none
    /// waits to be handed out.
    fn settle(&mut self) {
        if self.barrier && self.breaks_settled >= self.breaks_out && !self.readback.queued() {
            self.barrier = false;
            self.copies = false;
        }
    }
}

/// The server side of one PS-lite server.
#[derive(Debug)]
pub struct ServerAgent {
    config: AgentConfig,
    hot: Arc<HotSet>,
    server: u16,
    job: Option<u16>,
    detector: Detector,
    queues: BTreeMap<SenderKey, VecDeque<Queued>>,
    rounds: BTreeMap<u32, RoundState>,
    /// Per worker: newest round released (a worker's rounds increase, with
    /// jumps at barriers; each trailer names the round before it).
    released: Vec<u32>,
    /// Per worker: newest round whose trailer arrived.
    arrived: Vec<u32>,
    /// Rounds below are forgotten.
    floor: u32,
    /// Online: the counts and the decision (`crate::online`).
    census: Option<Census>,
    /// With `ZEBRA_SYNC_RANK=pgp`, while the census counts: each key's
    /// values in the app's latest answer to a pull (the `p` of |g·p|).
    params: HashMap<u64, Vec<f32>>,
    /// Online, after the decision: whether each of the last rounds
    /// aggregated was flushed, newest last.
    flushes: VecDeque<bool>,
    /// Rounds of which a push was delivered unsettled (forced), or which
    /// were forgotten before every worker had pushed them, newest
    /// [`UNSURE_REMEMBERED`]: only their late values can be lost ones.
    unsure_rounds: std::collections::BTreeSet<u32>,
    /// Online: each decision's hot set, from its first round on, in order.
    sets: Vec<(u32, Arc<HotSet>)>,
    /// Online: since when the server stands aside (noted at the next poll),
    /// and how many times it counted again.
    aside_since: Option<Timestamp>,
    recounts: u32,
    /// What the server has heard from the switch ([`Self::on_switch`]).
    switch: SwitchHeard,
    /// The latest time given (the time of a step aside when no time comes
    /// with it).
    now: Timestamp,
    /// Messages for the ROUTER to send (`[identity, frame]`).
    control: Vec<Frames>,
    /// The pull half, if on and this server has a job.
    pull: Option<ServerPull>,
    /// Each worker's identity, from its pushes (for RESTART).
    identities: BTreeMap<u16, Vec<u8>>,
    /// The switch the job uses (after a failover, the other one), its
    /// epoch, and the workers told of it since the job last moved.
    switch_in_use: SwitchChoice,
    switch_epoch: u32,
    /// After a move: the newest round any worker's push had reached this
    /// server then; the other switch serves the rounds after it.
    move_through: u32,
    told: std::collections::BTreeSet<u16>,
    /// The newest round an aggregate came for (RESTART's `through`).
    newest_aggregate: u32,
    stats: ServerAgentStats,
}

/// What a server has heard from the switch ([`ServerAgent::on_switch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchHeard {
    /// Its REGISTER is not answered yet.
    Waiting,
    /// The switch acknowledged its REGISTER.
    Answered,
    /// Its REGISTER has gone unanswered this long (`register_wait_ms`).
    Silent(std::time::Duration),
}

impl ServerAgent {
    /// The agent of server rank `server` (PS-lite node id `8 + 2 server`).
    pub fn new(
        config: AgentConfig,
        hot: Arc<HotSet>,
        server: u16,
    ) -> Result<ServerAgent, AgentError> {
        config.validate()?;
        if server >= config.servers {
            return Err(AgentError::Rank {
                role: "server",
                rank: server,
                count: config.servers,
            });
        }
        if hot.ranges().len() != config.servers as usize {
            return Err(AgentError::Config(format!(
                "the hot set has key ranges for {} servers, the job has {}",
                hot.ranges().len(),
                config.servers
            )));
        }
        let workers = config.workers as usize;
        let job = (hot.indices(server) > 0).then(|| config.job(server));
        let census = match (&config.online, job) {
            (Some(o), Some(_)) => Some(Census::new(o.clone(), config.workers)),
            _ => None,
        };
        let pull = match (config.pull, job) {
            (Some(c), Some(_)) => Some(ServerPull {
                config: c,
                readback: ReadBack::new(),
                active: true,
                copies: false,
                barrier: false,
                breaks_out: 0,
                breaks_settled: 0,
            }),
            _ => None,
        };
        Ok(ServerAgent {
            job,
            census,
            params: HashMap::new(),
            pull,
            flushes: VecDeque::new(),
            unsure_rounds: Default::default(),
            sets: Vec::new(),
            aside_since: None,
            recounts: 0,
            switch: SwitchHeard::Answered,
            now: Timestamp::ZERO,
            control: Vec::new(),
            detector: Detector::new(config.format),
            config,
            hot,
            server,
            queues: BTreeMap::new(),
            rounds: BTreeMap::new(),
            released: vec![0; workers],
            arrived: vec![0; workers],
            floor: 1,
            identities: BTreeMap::new(),
            switch_in_use: SwitchChoice::Primary,
            switch_epoch: 0,
            move_through: 0,
            told: Default::default(),
            newest_aggregate: 0,
            stats: ServerAgentStats::default(),
        })
    }

    /// The zebra-proto job of this server, if it owns hot keys (its
    /// zebra-proto `Server` is index 0 of that job).
    pub fn job(&self) -> Option<u16> {
        self.job
    }

    /// This server's hot keys for its newest rounds (online: the new ones
    /// once installed), hottest first.
    pub fn hot_keys_now(&self) -> &[crate::hotset::HotKey] {
        self.set_for(u32::MAX).server_keys(self.server)
    }

    /// Counters.
    pub fn stats(&self) -> &ServerAgentStats {
        &self.stats
    }

    /// Pushes held now.
    pub fn held(&self) -> usize {
        self.queues
            .values()
            .flatten()
            .filter(|q| matches!(q, Queued::Push(_)))
            .count()
    }

    /// Rounds remembered.
    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    /// A multipart message the ROUTER received (`[sender identity, meta,
    /// data...]`, or a Zebra message), as the engine's `Bytes` (or any
    /// frames that become `Bytes` without a copy, such as `Vec<u8>`).
    pub fn on_recv<F: Into<Bytes>>(&mut self, now: Timestamp, frames: Vec<F>) -> ServerOutput {
        let frames: SharedFrames = frames.into_iter().map(Into::into).collect();
        self.stats.messages += 1;
        self.now = self.now.max(now);
        let mut out = ServerOutput::default();
        if frames.len() == 2 && has_magic(&frames[1]) {
            match ZebraFrame::parse(&frames[1]) {
                Ok(ZebraFrame::Settle(s)) => {
                    self.stats.settle_bytes += frames[1].len() as u64;
                    self.on_settle(&frames[0], s, &mut out);
                    self.release(&mut out.deliver);
                    return out;
                }
                Ok(ZebraFrame::Push(_)) => {
                    self.bad(format_args!("a PUSH trailer without a push, dropped"));
                    return out;
                }
                Ok(ZebraFrame::HotSet(_) | ZebraFrame::Restart(_)) => {
                    self.bad(format_args!("a server's frame sent to a server, dropped"));
                    return out;
                }
                Err(e) if self.detector.parse(&frames[1]).is_err() => {
                    self.bad(format_args!("{e}; message dropped"));
                    return out;
                }
                Err(_) => {}
            }
        }
        if frames.len() >= 3 && frames.last().is_some_and(|f| has_magic(f)) {
            match self.parse_push(&frames) {
                Some((Ok(trailer), cold, format)) => {
                    self.stats.trailer_bytes += frames[frames.len() - 1].len() as u64;
                    self.hold(now, frames, trailer, cold, format, &mut out.deliver);
                    self.release(&mut out.deliver);
                    return out;
                }
                Some((Err(e), _, _)) => {
                    self.bad(format_args!("{e}; push delivered without it"));
                    let mut frames = frames;
                    frames.pop();
                    self.enqueue(frames, &mut out.deliver);
                    return out;
                }
                None => {}
            }
        }
        self.enqueue(frames, &mut out.deliver);
        out
    }

    /// The trailer and the push before it, if the frames before the last
    /// one are a whole PS-lite push request.
    fn parse_push(
        &mut self,
        frames: &[Bytes],
    ) -> Option<(
        Result<PushTrailer, crate::frame::FrameError>,
        Request,
        Format,
    )> {
        let (last, body) = frames.split_last()?;
        let (identity, rest) = body.split_first()?;
        let (meta, data) = rest.split_first()?;
        let (format, mut meta) = self.detector.parse(meta).ok()?;
        let refs: Vec<&[u8]> = data.iter().map(|f| &f[..]).collect();
        Message::check_data(&meta, &refs).ok()?;
        if !meta.is_push_request() {
            return None;
        }
        meta.sender = node_id(identity).unwrap_or(EMPTY);
        let cold = Request {
            meta,
            data: data.to_vec(),
        };
        Some((PushTrailer::parse(last), cold, format))
    }

    fn bad(&mut self, what: std::fmt::Arguments<'_>) {
        self.stats.bad_frames += 1;
        log::error!("server {}: bad Zebra frame: {what}", self.server);
    }

    /// Delivers a message now, or queues it behind its sender's held push.
    /// With the pull half: a worker's pull of hot keys is a read-back
    /// template, and a whole push with a hot key waits for a BREAK while
    /// workers may hold copies.
    fn enqueue(&mut self, frames: SharedFrames, deliver: &mut Vec<SharedFrames>) {
        self.stats.passed += 1;
        let key = SenderKey::of(frames.first().map_or(&[][..], |f| &f[..]));
        if self.pull_sees(&frames) {
            self.stats.pull_gated += 1;
            self.stats.queued += 1;
            self.queues
                .entry(key)
                .or_default()
                .push_back(Queued::Gated(frames));
            return;
        }
        match self.queues.get(&key).map_or(0, VecDeque::len) {
            0 => {
                self.stats.delivered += 1;
                deliver.push(frames);
            }
            ahead if self.may_pass(&key, ahead, &frames) => self.pass(ahead, frames, deliver),
            _ => {
                self.stats.queued += 1;
                self.queues
                    .entry(key)
                    .or_default()
                    .push_back(Queued::Plain(frames));
            }
        }
    }

    /// Whether a message from the ROUTER is a KV pull request (not a push).
    fn is_pull(&mut self, frames: &SharedFrames) -> bool {
        frames
            .get(1)
            .and_then(|m| self.detector.parse(m).ok())
            .is_some_and(|(_, meta)| meta.is_data() && meta.request && meta.pull && !meta.push)
    }

    /// Two-stage with staleness `S` (`crate::sync`): whether a pull of
    /// `key`'s sender, with the first `ahead` messages of its queue before
    /// it, may be delivered ahead of them: they are all held pushes, at most
    /// `S` (another pull, a gated or any other message keeps its place).
    fn may_pass(&mut self, key: &SenderKey, ahead: usize, frames: &SharedFrames) -> bool {
        let staleness = self.config.sync.staleness() as usize;
        staleness > 0
            && ahead <= staleness
            && self
                .queues
                .get(key)
                .is_some_and(|q| q.iter().take(ahead).all(|i| matches!(i, Queued::Push(_))))
            && self.is_pull(frames)
    }

    /// Delivers a pull that [`may_pass`](Self::may_pass) `ahead` held
    /// pushes of its sender, counted.
    fn pass(&mut self, ahead: usize, frames: SharedFrames, deliver: &mut Vec<SharedFrames>) {
        self.stats.stale_pulls += 1;
        self.stats.stale_most = self.stats.stale_most.max(ahead as u64);
        self.stats.delivered += 1;
        deliver.push(frames);
    }

    /// Two-stage with staleness `S`: delivers each queued pull that
    /// [`may_pass`](Self::may_pass) what is ahead of it now (pulls in their
    /// order; anything else keeps its place).
    fn pass_pulls(&mut self, deliver: &mut Vec<SharedFrames>) {
        if self.config.sync.staleness() == 0 {
            return;
        }
        let keys: Vec<SenderKey> = self.queues.keys().cloned().collect();
        for key in keys {
            let mut i = 0;
            while let Some(item) = self.queues.get(&key).and_then(|q| q.get(i)) {
                let frames = match item {
                    Queued::Push(_) => {
                        i += 1;
                        continue;
                    }
                    Queued::Plain(f) => f.clone(),
                    Queued::Gated(_) => break,
                };
                if !self.may_pass(&key, i, &frames) {
                    break;
                }
                if let Some(q) = self.queues.get_mut(&key) {
                    q.remove(i);
                }
                self.pass(i, frames, deliver);
            }
        }
        self.queues.retain(|_, q| !q.is_empty());
    }

    /// Pull half: learns templates from the app's pulls; `true` for a whole
    /// push holding a hot key while workers may hold copies (it must wait
    /// for a BREAK: [`Queued::Gated`]).
    fn pull_sees(&mut self, frames: &SharedFrames) -> bool {
        let Some(p) = &self.pull else {
            return false;
        };
        if !self.pull_active() && !p.copies && !p.barrier {
            return false;
        }
        let Some(meta) = frames.get(1) else {
            return false;
        };
        let Ok((format, _)) = self.detector.parse(meta) else {
            return false;
        };
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let Ok(env) = Message::parse_frames(format, Route::RouterRecv, &refs) else {
            return false;
        };
        let set = Arc::clone(self.set_for(u32::MAX));
        let server = self.server;
        let is_hot = |k: u64| set.is_hot(server, k);
        let active = self.pull_active();
        let Some(p) = &mut self.pull else {
            return false;
        };
        if active {
            p.readback.learn(&frames[0], &env.message, format, is_hot);
        }
        let hot_push = env.message.meta.is_push_request()
            && env
                .message
                .kv()
                .ok()
                .flatten()
                .is_some_and(|kv| kv.keys().any(&is_hot));
        hot_push && p.must_wait(&mut self.stats)
    }

    fn hold(
        &mut self,
        now: Timestamp,
        frames: SharedFrames,
        trailer: PushTrailer,
        cold: Request,
        format: Format,
        deliver: &mut Vec<SharedFrames>,
    ) {
        let identity = frames[0].clone();
        let sender = SenderKey::of(&identity);
        let w = trailer.worker;
        if sender.rank == w && w < self.config.workers {
            self.identities
                .entry(w)
                .or_insert_with(|| identity.to_vec());
        }
        let problem = if Some(trailer.job) != self.job {
            Some(format!(
                "job {} (this server's is {:?})",
                trailer.job, self.job
            ))
        } else if w >= self.config.workers {
            Some(format!("worker {w} of {}", self.config.workers))
        } else if sender.rank != w {
            Some(format!(
                "worker {w} from identity {:?}",
                String::from_utf8_lossy(&identity)
            ))
        } else if trailer.round == 0 {
            Some("round 0".to_string())
        } else {
            None
        };
        if let Some(p) = problem {
            self.bad(format_args!(
                "PUSH trailer for {p}; push delivered without its hot keys"
            ));
            let mut frames = frames;
            frames.pop();
            self.enqueue(frames, deliver);
            return;
        }
        let r = trailer.round;
        let last = self.arrived[w as usize];
        if trailer.previous != last {
            self.stats.round_gaps += 1;
            log::warn!(
                "server {}: worker {w} round {r} (after its round {}) arrived after its round {last}",
                self.server,
                trailer.previous
            );
        }
        self.arrived[w as usize] = last.max(r);
        if r < self.floor {
            self.stats.late += 1;
            log::error!(
                "server {}: worker {w} round {r} arrived after the round was forgotten",
                self.server
            );
        } else {
            let rs = self.rounds.entry(r).or_default();
            rs.holding += 1;
            rs.previous.insert(w, trailer.previous);
        }
        self.count(now, &trailer, &identity, &cold);
        self.stats.held += 1;
        self.queues
            .entry(sender)
            .or_default()
            .push_back(Queued::Push(Box::new(Held {
                worker: w,
                trailer,
                identity,
                cold,
                format,
                arrived: now,
                gated_since: None,
            })));
        if self.stats.switch_moves > 0 && self.told.insert(w) {
            // First heard of after the job moved: told now, as the others were.
            self.tell_switch(w);
        }
    }

    /// The hot set of round `r` (online: the new one from its first round).
    fn set_for(&self, r: u32) -> &Arc<HotSet> {
        self.sets
            .iter()
            .rev()
            .find(|(from, _)| r >= *from)
            .map_or(&self.hot, |(_, set)| set)
    }

    /// Online: counts a push's keys, decides once every worker's first
    /// pushes are in, tells the workers, and, once keys are installed,
    /// steps aside if the workers push slower than they did without.
    fn count(&mut self, now: Timestamp, t: &PushTrailer, identity: &[u8], cold: &Request) {
        let Some(census) = &self.census else {
            return;
        };
        if census.counting(t.worker) {
            let set = self.set_for(t.round);
            let hot: Vec<(u64, u32)> = t
                .hot
                .iter()
                .filter_map(|&o| set.key_at(self.server, o))
                .map(|k| (k.key, k.len))
                .collect();
            let entries: Vec<(u64, &[u8])> = cold
                .kv()
                .ok()
                .flatten()
                .and_then(|v| v.entries().ok().map(|e| e.collect::<Vec<_>>()))
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, b, _)| values::decode(b).any(|v| v != 0.0))
                .map(|(k, b, _)| (k, b))
                .collect();
            let cold_keys = entries
                .iter()
                .map(|&(k, b)| (k, (b.len() / F32_BYTES) as u32));
            if census.weighing() {
                let scores: Vec<(u64, f64)> = entries
                    .iter()
                    .filter_map(|&(k, g)| Some((k, pgp(g, self.params.get(&k)?)?)))
                    .collect();
                self.stats.pgp_scored += scores.len() as u64;
                self.stats.pgp_unknown += (entries.len() - scores.len()) as u64;
                if let Some(c) = &mut self.census {
                    c.weigh(t.worker, scores.into_iter());
                }
            }
            let keys: Vec<(u64, u32)> = hot.into_iter().chain(cold_keys).collect();
            self.stats.online_counted += 1;
            if let Some(c) = &mut self.census {
                c.observe(now, t.worker, t.round, identity, keys.into_iter());
            }
        } else if let Some(c) = &mut self.census {
            c.observe(now, t.worker, t.round, identity, std::iter::empty());
        }
        self.decide(None);
        if !self.census.as_ref().is_some_and(Census::weighing) {
            self.params = HashMap::new();
        }
        self.judge_pace(now);
    }

    /// Online: decides once every worker's counted pushes are in, or, at
    /// `timeout_now`, keeps the keys if some are still missing after the
    /// wait; tells the workers that do not know yet.
    fn decide(&mut self, timeout_now: Option<Timestamp>) {
        if self.switch == SwitchHeard::Waiting {
            return;
        }
        let capacity = self.hot.indices(self.server);
        // After a RECOUNT the workers push whole: no keys to keep. (A hot-keys
        // file's watcher is given the file's keys: it decides for them.)
        let fixed = self.config.online.as_ref().is_some_and(|o| o.fixed);
        let recount = self.census.as_ref().is_some_and(Census::is_recount);
        let current = if recount && !fixed {
            &[]
        } else {
            self.hot.server_keys(self.server)
        };
        let decided = self.census.as_mut().and_then(|c| {
            match timeout_now {
                None => c.decide_if_counted(current, capacity),
                Some(now) => c.decide_on_timeout(now, current, capacity),
            }
            .cloned()
        });
        if let Some(d) = decided {
            match self.switch {
                // Keys installed now would send every hot packet to a switch
                // that does not answer.
                SwitchHeard::Silent(waited) if d.aside.is_none() => {
                    self.step_aside(crate::online::Aside::Unanswered(waited))
                }
                _ => self.install(d),
            }
        }
        self.tell();
    }

    /// What the server heard from the switch; the caller watches its link
    /// (the shim: `Waiting` from the start, `Answered` at the REGISTER_ACK
    /// that admits the job, `Silent` after `register_wait_ms` without).
    /// While `Waiting` no decision is taken (the counted pushes wait for
    /// it); `Silent` steps aside ([`Aside::Unanswered`](crate::online::Aside::Unanswered))
    /// and takes no keys while it lasts; `Answered` after that counts again
    /// at once, and so it does after the switch refused to admit the job
    /// ([`Aside::NotAdmitted`](crate::online::Aside::NotAdmitted): the link
    /// asks again, and the switch admits the job once its memory is free).
    /// Without online hot keys or the file's watcher nothing can step
    /// aside: a silence is logged as an error. A new agent has `Answered`.
    pub fn on_switch(&mut self, heard: SwitchHeard) {
        let was = std::mem::replace(&mut self.switch, heard);
        if was == heard {
            return;
        }
        match heard {
            SwitchHeard::Silent(w) if self.census.is_none() => log::error!(
                "server {}: {}; with a hot-keys file and no watcher it cannot step aside: hot \
                 packets wait for their timeouts (ZEBRA_HOT=online, or watch the file)",
                self.server,
                crate::online::Aside::Unanswered(w)
            ),
            SwitchHeard::Silent(w) => self.step_aside(crate::online::Aside::Unanswered(w)),
            SwitchHeard::Answered => {
                if matches!(was, SwitchHeard::Silent(_)) {
                    log::info!("server {}: the switch answered", self.server);
                }
                let unanswered = self
                    .census
                    .as_ref()
                    .and_then(Census::decision)
                    .is_some_and(|d| {
                        matches!(
                            d.aside,
                            Some(
                                crate::online::Aside::Unanswered(_)
                                    | crate::online::Aside::NotAdmitted
                            )
                        )
                    });
                if unanswered {
                    self.recount();
                }
            }
            SwitchHeard::Waiting => {}
        }
    }

    /// Online: a decision taken; rounds from its first use its keys.
    fn install(&mut self, d: crate::online::Decision) {
        let server = self.server;
        let distance = d
            .distance
            .map_or("none (not every worker's pushes came)".into(), |x| {
                format!("{x:.3}")
            });
        if let Some(why) = d.aside {
            self.stood_aside(
                why,
                &format!(
                    " (after {} pushes of {} keys; saving {:.1} %, drift {:.1} rounds)",
                    d.pushes,
                    d.keys_seen,
                    d.saving * 100.0,
                    d.drift
                ),
            );
            return;
        }
        if !d.change {
            self.stats.online_kept += 1;
            log::info!(
                "server {server}: online hot keys: kept the {} current keys after {} pushes of {} \
                 keys (top-k Kendall tau distance {distance})",
                d.keys.len(),
                d.pushes,
                d.keys_seen
            );
            return;
        }
        match self.hot.replace_server(server, &d.keys) {
            Ok(set) => {
                let old: std::collections::HashSet<u64> =
                    self.hot.server_keys(server).iter().map(|k| k.key).collect();
                let kept = d.keys.iter().filter(|k| old.contains(&k.0)).count();
                self.stats.online_changed += 1;
                if self.config.online.as_ref().is_some_and(|o| o.fixed) {
                    log::info!(
                        "server {server}: the hot-keys file's {} keys from round {} after {} \
                         whole pushes (saving {:.1} %): watching what they cost",
                        d.keys.len(),
                        d.from_round,
                        d.pushes,
                        d.saving * 100.0
                    );
                } else {
                    log::info!(
                        "server {server}: online hot keys: {} new keys ({kept} of them hot \
                         before) from round {} after {} pushes of {} keys (top-k Kendall tau \
                         distance {distance})",
                        d.keys.len(),
                        d.from_round,
                        d.pushes,
                        d.keys_seen
                    );
                }
                self.sets.push((d.from_round, Arc::new(set)));
                if let Some(p) = &mut self.pull {
                    p.readback.break_chain();
                }
            }
            Err(e) => {
                log::error!("server {server}: online hot keys not installed: {e}");
                if let Some(c) = &mut self.census {
                    c.keep_instead(self.hot.server_keys(server));
                }
            }
        }
    }

    fn tell(&mut self) {
        let (Some(c), Some(job)) = (&mut self.census, self.job) else {
            return;
        };
        let msgs = c.tell(job);
        self.stats.hotset_messages += msgs.len() as u64;
        self.control.extend(msgs);
    }

    /// The online decision, once taken.
    pub fn online_decision(&self) -> Option<&crate::online::Decision> {
        self.census.as_ref().and_then(Census::decision)
    }

    /// Messages to send on the server's ROUTER (`[worker identity, frame]`):
    /// the online decision for each worker. PS-lite never reads what a
    /// worker's DEALER receives; Zebra's worker side does.
    pub fn take_control(&mut self) -> Vec<Frames> {
        std::mem::take(&mut self.control)
    }

    fn on_settle(&mut self, identity: &[u8], s: Settle, out: &mut ServerOutput) {
        let indices = self.hot.indices(self.server);
        let problem = if Some(s.job) != self.job {
            Some(format!("job {} (this server's is {:?})", s.job, self.job))
        } else if s.worker >= self.config.workers || SenderKey::of(identity).rank != s.worker {
            Some(format!(
                "worker {} from identity {:?}",
                s.worker,
                String::from_utf8_lossy(identity)
            ))
        } else if s
            .batches
            .iter()
            .flat_map(|b| &b.pairs)
            .any(|p| p.0 >= indices)
        {
            Some(format!("a hot index beyond this server's {indices}"))
        } else {
            None
        };
        if let Some(p) = problem {
            self.bad(format_args!("SETTLE for {p}; dropped"));
            return;
        }
        self.stats.settles += 1;
        if s.resend {
            self.on_resend(identity, s, out);
            return;
        }
        if s.round < self.floor {
            self.stats.late += 1;
            log::error!(
                "server {}: SETTLE of worker {} round {} after the round was forgotten",
                self.server,
                s.worker,
                s.round
            );
        } else {
            let rs = self.rounds.entry(s.round).or_default();
            if rs.settles.contains_key(&s.worker) {
                self.stats.duplicate_settles += 1;
                log::error!(
                    "server {}: a second SETTLE of worker {} round {}, ignored",
                    self.server,
                    s.worker,
                    s.round
                );
                return;
            }
            let batches = s
                .batches
                .iter()
                .map(|b| BatchState {
                    seq: b.seq,
                    certain: b.is_certain(),
                    applied: false,
                })
                .collect();
            rs.settles.insert(
                s.worker,
                SettleState {
                    added: s.added,
                    batches,
                },
            );
        }
        self.stats.fallback_batches += s.batches.len() as u64;
        out.fallbacks.extend(s.batches);
    }

    /// A SETTLE with RESEND (the switch was started again): the round's
    /// packets the lost switch had added, as uncertain batches. Taken only
    /// while the worker's push of the round is held: a push delivered before
    /// had its hot sum complete (the aggregate held those packets, or it
    /// was delivered unsettled, reported), and the batches would add them
    /// twice. Batches the round's aggregate holds are dropped; the rest
    /// go to zebra-proto, which applies them unless an aggregate that comes
    /// later holds them. The round then waits for no aggregate of this
    /// worker's: its SETTLE says nothing added.
    fn on_resend(&mut self, identity: &[u8], s: Settle, out: &mut ServerOutput) {
        let held = self.queues.get(&SenderKey::of(identity)).is_some_and(|q| {
            q.iter().any(
                |m| matches!(m, Queued::Push(h) if h.worker == s.worker && h.trailer.round == s.round),
            )
        });
        if !held || s.round < self.floor {
            self.stats.resettles_late += 1;
            log::info!(
                "server {}: worker {} resent round {} after its push was delivered: not needed",
                self.server,
                s.worker,
                s.round
            );
            return;
        }
        self.stats.resettles += 1;
        let rs = self.rounds.entry(s.round).or_default();
        let covered = |b: &Fallback| {
            rs.agg
                .as_ref()
                .is_some_and(|a| a.coverage.covers(b.worker, b.seq))
        };
        let (dropped, batches): (Vec<Fallback>, Vec<Fallback>) =
            s.batches.into_iter().partition(covered);
        self.stats.resettle_covered += dropped.len() as u64;
        let st = rs.settles.entry(s.worker).or_insert(SettleState {
            added: 0,
            batches: Vec::new(),
        });
        st.added = 0;
        st.batches.extend(batches.iter().map(|b| BatchState {
            seq: b.seq,
            certain: b.is_certain(),
            applied: false,
        }));
        log::warn!(
            "server {}: worker {} resent round {} after the switch restarted: {} batches ({} \
             already in the aggregate)",
            self.server,
            s.worker,
            s.round,
            batches.len(),
            dropped.len()
        );
        self.stats.fallback_batches += batches.len() as u64;
        out.fallbacks.extend(batches);
    }

    /// The switch was started again (its epoch changed, seen by this
    /// server's hot-path link): every worker this server has heard from is
    /// told with RESTART (sent on the ROUTER, [`take_control`](Self::take_control)),
    /// so that it resends what the lost switch held and sends rounds up to
    /// the newest one aggregated here to this server only
    /// (`zebra_proto::Worker::restart`).
    pub fn on_switch_restarted(&mut self, epoch: u32) {
        let Some(_) = self.job else {
            return;
        };
        self.stats.switch_restarts += 1;
        self.switch_epoch = epoch;
        log::warn!(
            "server {}: the switch was started again (epoch {epoch:#010x}); telling {} workers, \
             rounds up to {} now bypass it",
            self.server,
            self.identities.len(),
            self.newest_aggregate
        );
        self.tell_all();
    }

    /// The job moved to the other switch (failover, `ZEBRA_SWITCH_STANDBY`:
    /// the one before left this server's REGISTER unanswered, seen by its
    /// hot-path link, `zebra_proto::SwitchWatch`), which answered with
    /// `epoch`. Every worker is told as after a restart, with the switch
    /// named in the RESTART: its rounds up to the newest one aggregated
    /// here, and up to the newest one any worker's push has reached this
    /// server with, go to this server only (so that a round some worker
    /// pushed before the move is not split between the two switches: the
    /// other switch would wait for that worker's packets until its round
    /// timeout), the rounds it has going are settled (their pairs to this
    /// server), what the switch before may have held is sent again, and its
    /// later rounds go to `to`. A worker first heard of later is told then.
    pub fn on_switch_moved(&mut self, epoch: u32, to: SwitchChoice) {
        let Some(_) = self.job else {
            return;
        };
        self.stats.switch_moves += 1;
        self.switch_in_use = to;
        self.switch_epoch = epoch;
        let arrived = self.arrived.iter().copied().max().unwrap_or(0);
        self.move_through = self.newest_aggregate.max(arrived);
        log::warn!(
            "server {}: the job moved to the {} switch (epoch {epoch:#010x}); telling {} \
             workers, rounds after {} go there",
            self.server,
            if to.is_standby() {
                "standby"
            } else {
                "primary"
            },
            self.identities.len(),
            self.move_through
        );
        self.told.clear();
        self.tell_all();
    }

    /// The switch in use (after a failover, the other one).
    pub fn switch_in_use(&self) -> SwitchChoice {
        self.switch_in_use
    }

    fn tell_all(&mut self) {
        let workers: Vec<u16> = self.identities.keys().copied().collect();
        for w in workers {
            self.told.insert(w);
            self.tell_switch(w);
        }
    }

    /// A RESTART for worker `worker`: the switch in use and its epoch, the
    /// newest round aggregated here (after a move, at least the round the
    /// other switch serves after), and the oldest round of the worker's this
    /// server may still need (its oldest held push).
    fn tell_switch(&mut self, worker: u16) {
        let (Some(job), Some(identity)) = (self.job, self.identities.get(&worker)) else {
            return;
        };
        let held = self
            .queues
            .get(&SenderKey::of(identity))
            .into_iter()
            .flatten()
            .filter_map(|m| match m {
                Queued::Push(h) => Some(h.trailer.round),
                _ => None,
            })
            .min();
        let arrived = self.arrived.get(worker as usize).copied().unwrap_or(0);
        let frame = RestartFrame {
            job,
            worker,
            through: self.newest_aggregate.max(self.move_through),
            epoch: self.switch_epoch,
            resend_from: held.unwrap_or(arrived.saturating_add(1)),
            switch: self.switch_in_use,
        };
        self.control.push(vec![identity.clone(), frame.to_bytes()]);
    }

    /// A `ServerAction` of this server's zebra-proto `Server`: `Round` and
    /// `Apply` are taken; `Send` is the caller's (to the switch).
    pub fn on_action(&mut self, action: ServerAction) -> Vec<SharedFrames> {
        match action {
            ServerAction::Round(agg) => self.on_round(agg),
            ServerAction::Apply(f) => self.on_apply(f),
            ServerAction::Send(_) => Vec::new(),
        }
    }

    /// A round's aggregate (`ServerAction::Round`).
    pub fn on_round(&mut self, agg: RoundAggregate) -> Vec<SharedFrames> {
        let mut deliver = Vec::new();
        if Some(agg.job) != self.job {
            self.bad(format_args!("aggregate of job {}, ignored", agg.job));
            return deliver;
        }
        self.stats.aggregates += 1;
        self.newest_aggregate = self.newest_aggregate.max(agg.round);
        if agg.round < self.floor {
            self.late_values(agg.round, "aggregate", agg.pairs.iter().map(|p| p.1));
            return deliver;
        }
        let indices = self.hot.indices(self.server);
        let rs = self.rounds.entry(agg.round).or_default();
        if rs.agg.is_some() {
            self.stats.duplicate_aggregates += 1;
            log::error!(
                "server {}: a second aggregate for round {}, ignored",
                self.server,
                agg.round
            );
            return deliver;
        }
        for &(i, v) in &agg.pairs {
            if i < indices {
                *rs.agg_pending.entry(i).or_insert(0.0) += v;
            }
        }
        rs.agg = Some(AggSeen {
            contributed: agg.contributed,
            complete: agg.complete,
            coverage: agg.coverage,
        });
        self.watch_flushes(agg.flushed);
        self.release(&mut deliver);
        deliver
    }

    /// Online, after the decision: steps aside once most of the last
    /// [`FLUSH_WINDOW`] rounds aggregated waited for the switch's round
    /// timeout (`crate::online::Aside::Flushed`).
    fn watch_flushes(&mut self, flushed: bool) {
        let decided = self
            .census
            .as_ref()
            .and_then(Census::decision)
            .is_some_and(|d| d.aside.is_none());
        if !decided {
            return;
        }
        self.flushes.push_back(flushed);
        if self.flushes.len() > FLUSH_WINDOW {
            self.flushes.pop_front();
        }
        let n = self.flushes.iter().filter(|&&f| f).count();
        if self.flushes.len() < FLUSH_WINDOW || n * 2 <= FLUSH_WINDOW {
            return;
        }
        self.step_aside(crate::online::Aside::Flushed(n as u32, FLUSH_WINDOW as u32));
    }

    /// Online, keys installed: steps aside if the workers push slower than
    /// while counted (`Census::slower`).
    fn judge_pace(&mut self, now: Timestamp) {
        let Some(census) = self.census.as_mut() else {
            return;
        };
        if let Some(why) = census.slower(now) {
            self.step_aside(why);
        } else if let Some((before, after)) = census.take_kept() {
            log::info!(
                "server {}: the hot keys keep the pace: {after:.0} pushes/s with them,                  {before:.0} while counted",
                self.server
            );
        }
    }

    /// Online: steps aside now, before or after the decision (every worker
    /// is told with ASIDE), logged with `why`; nothing if it already did.
    pub fn step_aside(&mut self, why: crate::online::Aside) {
        if self.census.as_mut().is_some_and(|c| c.step_aside(why)) {
            self.stood_aside(why, "");
            self.tell();
        }
    }

    /// Counts and logs a step aside (`detail` after the reason), and notes
    /// when, for the retry.
    fn stood_aside(&mut self, why: crate::online::Aside, detail: &str) {
        self.stats.online_aside += 1;
        if let Some(p) = &mut self.pull {
            p.readback.break_chain();
        }
        self.aside_since = Some(self.now);
        log::warn!(
            "server {}: stepping aside: its workers' pushes go to it unchanged, without the \
             switch: {why}{detail}",
            self.server
        );
        // The rounds in flight would hold their pushes at the pull half's
        // gate for workers whose rounds do not line up (the usual reason to
        // step aside) until the gate's timeout.
        self.pull_stand_aside(format_args!("aggregation stepped aside"));
    }

    /// Fallback pairs to apply (`ServerAction::Apply`).
    pub fn on_apply(&mut self, f: Fallback) -> Vec<SharedFrames> {
        let mut deliver = Vec::new();
        if Some(f.job) != self.job || f.worker >= self.config.workers {
            self.bad(format_args!(
                "fallback of job {} worker {}, ignored",
                f.job, f.worker
            ));
            return deliver;
        }
        self.stats.applies += 1;
        if f.round < self.floor {
            self.late_values(f.round, "fallback", f.pairs.iter().map(|p| p.1));
            return deliver;
        }
        let indices = self.hot.indices(self.server);
        let rs = self.rounds.entry(f.round).or_default();
        let mine = rs.applied.entry(f.worker).or_default();
        for &(i, v) in &f.pairs {
            if i < indices {
                *mine.entry(i).or_insert(0.0) += v;
            }
        }
        if let Some(st) = rs.settles.get_mut(&f.worker) {
            let certain = f.is_certain();
            if let Some(b) = st
                .batches
                .iter_mut()
                .find(|b| !b.applied && b.seq == f.seq && b.certain == certain)
            {
                b.applied = true;
            }
        }
        self.release(&mut deliver);
        deliver
    }

    /// Marks round `r` as one whose late values may be lost ones.
    fn unsure(&mut self, r: u32) {
        self.unsure_rounds.insert(r);
        while self.unsure_rounds.len() > UNSURE_REMEMBERED {
            self.unsure_rounds.pop_first();
        }
    }

    /// Values for a round already forgotten. Zeros only (a round whose
    /// requests listed no hot key were all delivered before it came) lose
    /// nothing. Nor do non-zero values of a round none of whose pushes was
    /// forced: each was delivered once its hot sum was complete (every
    /// packet the switch added in an aggregate that held it, every other
    /// one applied as a batch), so a later aggregate only holds packets
    /// applied already, less those batches (zero but for float rounding:
    /// known issue K2), or is a copy. Otherwise they are lost.
    fn late_values(&mut self, round: u32, what: &str, values: impl Iterator<Item = f32>) {
        let lost = values.filter(|v| *v != 0.0).count() as u64;
        if lost == 0 {
            self.stats.late_empty += 1;
            log::debug!(
                "server {}: {what} of zeros for round {round}, after it",
                self.server
            );
        } else if !self.unsure_rounds.contains(&round) {
            self.stats.late_applied += 1;
            log::info!(
                "server {}: {what} for round {round} after every request of the round was \
                 delivered complete: its {lost} non-zero values were applied already",
                self.server
            );
        } else {
            self.stats.late += 1;
            self.stats.lost_values += lost;
            log::error!(
                "server {}: {what} for round {round} after every request of the round was \
                 delivered: {lost} non-zero values not applied",
                self.server
            );
        }
    }

    /// Delivers held pushes whose wait exceeded `settle_timeout`, and what
    /// queued behind them.
    pub fn poll(&mut self, now: Timestamp) -> Vec<SharedFrames> {
        let mut deliver = Vec::new();
        self.now = self.now.max(now);
        self.decide(Some(now));
        self.judge_pace(now);
        self.retry(now);
        self.pull_gate_timeout(now);
        let timeout = self.config.settle_timeout;
        let overdue: Vec<SenderKey> = self
            .queues
            .iter()
            .filter(
                |(_, q)| matches!(q.front(), Some(Queued::Push(h)) if h.arrived + timeout <= now),
            )
            .map(|(k, _)| k.clone())
            .collect();
        let barrier = !overdue.is_empty()
            && self
                .pull
                .as_mut()
                .is_some_and(|p| p.must_wait(&mut self.stats));
        for key in overdue.into_iter().filter(|_| !barrier) {
            if let Some(Queued::Push(h)) = self.queues.get_mut(&key).and_then(VecDeque::pop_front) {
                self.stats.forced += 1;
                self.unsure(h.trailer.round);
                log::error!(
                    "server {}: worker {} round {} unsettled after {timeout:?}: delivered with \
                     what arrived, its hot sum may be incomplete",
                    self.server,
                    h.worker,
                    h.trailer.round
                );
                self.deliver_held(*h, true, &mut deliver);
            }
        }
        self.release(&mut deliver);
        deliver
    }

    /// When [`poll`](Self::poll) next has work, if ever. (While a BREAK
    /// is pending, overdue pushes wait for [`on_break_settled`](Self::on_break_settled).)
    pub fn poll_at(&self) -> Option<Timestamp> {
        let barrier = self.pull.as_ref().is_some_and(|p| p.barrier);
        let gate = self.pull.as_ref().map(|p| p.config.gate);
        self.queues
            .values()
            .filter(|_| !barrier)
            .filter_map(|q| match q.front() {
                Some(Queued::Push(h)) => Some(h.arrived + self.config.settle_timeout),
                _ => None,
            })
            .chain(self.census.as_ref().and_then(Census::deadline))
            .chain(self.retry_at())
            .chain(gate.into_iter().flat_map(|g| {
                self.gate_waits()
                    .into_iter()
                    .map(move |(_, since)| since.map_or(self.now, |at| at + g))
            }))
            .min()
    }

    /// Pull half: the updates ready for the workers, in order: send each
    /// once through the switch (`docs/PULL.md`), and report each BREAK
    /// among them to [`on_break_settled`](Self::on_break_settled) once
    /// every worker acknowledged it (or it was given up).
    pub fn take_updates(&mut self) -> Vec<RoundValues> {
        let Some(p) = &mut self.pull else {
            return Vec::new();
        };
        let out = p.readback.take_ready();
        for v in &out {
            if v.brk {
                p.breaks_out += 1;
            } else {
                p.copies = true;
            }
        }
        p.settle();
        out
    }

    /// Pull half: a message the server app sends on `route` (a DEALER for
    /// dmlc and MXNet servers, the ROUTER for BytePS's): `true` when it is
    /// the answer to a read-back pull, taken here (do not send it on; its
    /// values come out of [`take_updates`](Self::take_updates)).
    pub fn on_app_send(&mut self, route: Route, frames: &[&[u8]]) -> bool {
        self.read_params(route, frames);
        let (Some(p), Some(format)) = (&mut self.pull, self.detector.format()) else {
            return false;
        };
        p.readback.on_app_send(route, frames, format)
    }

    /// With `ZEBRA_SYNC_RANK=pgp`, while the census counts: keeps the values
    /// of the app's answer to a pull, the parameters `p` its workers'
    /// gradients are weighed with (`crate::online::Rank::Pgp`).
    fn read_params(&mut self, route: Route, frames: &[&[u8]]) {
        let (Some(c), Some(format)) = (&self.census, self.detector.format()) else {
            return;
        };
        if !c.weighing() {
            return;
        }
        let Ok(env) = Message::parse_frames(format, route, frames) else {
            return;
        };
        let m = &env.message.meta;
        if m.request || m.push || !m.pull || !m.is_data() {
            return;
        }
        let Some(Ok(entries)) = env.message.kv().ok().flatten().map(|kv| {
            kv.answer_entries()
                .map(|e| e.map(|(k, b, _)| (k, b.to_vec())).collect::<Vec<_>>())
        }) else {
            return;
        };
        self.stats.pgp_answers += 1;
        for (k, b) in entries {
            if !b.is_empty() && b.len() % F32_BYTES == 0 {
                self.params.insert(k, values::decode(&b).collect());
            }
        }
    }

    /// Pull half: a BREAK from [`take_updates`](Self::take_updates) has
    /// settled at every worker; what waited for it is released.
    pub fn on_break_settled(&mut self, now: Timestamp) -> Vec<SharedFrames> {
        if let Some(p) = &mut self.pull {
            p.breaks_settled += 1;
            p.settle();
        }
        self.poll(now)
    }

    /// Pull half: whether it gates and reads rounds back (not once it
    /// stood aside), and the read-back's counters.
    pub fn pull_state(&self) -> Option<(bool, &ReadBackStats)> {
        self.pull.as_ref().map(|p| (p.active, p.readback.stats()))
    }

    /// Online, standing aside for a reason that may pass: when to count
    /// again (`retry`, doubled for each earlier recount, at most 16×).
    fn retry_at(&self) -> Option<Timestamp> {
        let retry = self.config.online.as_ref()?.retry;
        let aside = self.census.as_ref()?.decision()?.aside?;
        if retry.is_zero() || !aside.retried() {
            return None;
        }
        Some(self.aside_since? + retry * (1u32 << self.recounts.min(4)))
    }

    /// Online: counts again once [`retry_at`](Self::retry_at) has passed:
    /// every worker is told (RECOUNT), pushes whole with trailers, and the
    /// next decision installs keys or steps aside again.
    fn retry(&mut self, now: Timestamp) {
        if self.retry_at().is_none_or(|at| now < at) {
            return;
        }
        self.recount();
    }

    /// Online: every worker is told to push whole again and is counted.
    fn recount(&mut self) {
        let Some(c) = &self.census else { return };
        self.census = Some(c.recount());
        self.aside_since = None;
        self.recounts += 1;
        self.flushes.clear();
        self.stats.online_recounts += 1;
        log::info!(
            "server {}: trying aggregation again: counting every worker's next pushes",
            self.server
        );
        self.tell();
    }

    /// Whether worker `w'`s pushes before round `r` have all been released:
    /// its newest released round is `r - 1`, or the round its round-`r`
    /// trailer names as its previous one. A worker that never pushes round
    /// `r` (it closed it with an empty DONE at an online decision, so the
    /// switch counts it in) is caught up once its pushes before its first
    /// round after `r` are released.
    fn caught_up(&self, w: u16, r: u32) -> bool {
        let Some(&done) = self.released.get(w as usize) else {
            return false;
        };
        if done.saturating_add(1) >= r {
            return true;
        }
        if let Some(&previous) = self.rounds.get(&r).and_then(|rs| rs.previous.get(&w)) {
            return done >= previous;
        }
        self.rounds
            .range(r.saturating_add(1)..)
            .find_map(|(_, rs)| rs.previous.get(&w))
            .is_some_and(|&previous| previous < r && done >= previous)
    }

    /// Whether the values of round `r`'s aggregate may reach the app: every
    /// worker it covers has had its earlier rounds released.
    fn agg_gate(&self, r: u32, contributed: u64) -> bool {
        (0..self.config.workers)
            .filter(|&w| w < 64 && contributed >> w & 1 == 1)
            .all(|w| self.caught_up(w, r))
    }

    /// Pull half: whether a push of round `r` may be released: no BREAK
    /// pending, and (while active) every worker has pushed round `r` or a
    /// later one, so that no worker's copy at an earlier round can meet
    /// values of round `r` at the server.
    fn pull_gate(&self, r: u32) -> bool {
        match &self.pull {
            None => true,
            Some(p) if p.barrier => false,
            Some(_) => {
                !self.pull_active() || !self.gated_round(r) || self.arrived.iter().all(|&a| a >= r)
            }
        }
    }

    /// Pull half: whether rounds are gated and read back. Only for BytePS's
    /// PS-lite, whose servers answer workers through the ROUTER, where the
    /// shim takes a read-back's answer out (dmlc's and MXNet's answer on
    /// DEALERs it does not see yet).
    fn pull_active(&self) -> bool {
        self.pull.as_ref().is_some_and(|p| p.active)
            && self.detector.format() == Some(Format::Byteps)
    }

    /// Pull half: whether round `r` has hot keys (others are neither gated
    /// nor read back).
    fn gated_round(&self, r: u32) -> bool {
        !self.set_for(r).server_keys(self.server).is_empty()
    }

    /// Pull half, active: the held pushes at the head of their queues that
    /// wait for the gate only (a worker has not pushed their round yet),
    /// with since when (`None`: not noted yet, [`mark_gated`](Self::mark_gated)).
    fn gate_waits(&self) -> Vec<(u32, Option<Timestamp>)> {
        let Some(p) = &self.pull else {
            return Vec::new();
        };
        if !self.pull_active() || p.barrier {
            return Vec::new();
        }
        self.queues
            .values()
            .filter_map(|q| match q.front() {
                Some(Queued::Push(h))
                    if !self.pull_gate(h.trailer.round) && self.ready_but_gate(h) =>
                {
                    Some((h.trailer.round, h.gated_since))
                }
                _ => None,
            })
            .collect()
    }

    /// Pull half: notes `now` on the held pushes the gate alone holds.
    fn mark_gated(&mut self, now: Timestamp) {
        let waiting: Vec<SenderKey> = self
            .queues
            .iter()
            .filter(|(_, q)| match q.front() {
                Some(Queued::Push(h)) => {
                    h.gated_since.is_none()
                        && !self.pull_gate(h.trailer.round)
                        && self.ready_but_gate(h)
                }
                _ => false,
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in waiting {
            if let Some(Queued::Push(h)) = self.queues.get_mut(&key).and_then(VecDeque::front_mut) {
                h.gated_since = Some(now);
            }
        }
    }

    /// Pull half: a push that waited `gate` for other workers to push its
    /// round means the rounds do not line up: the pull half stands aside on
    /// this server (its pulls go to it), after a BREAK if workers may hold
    /// copies.
    fn pull_gate_timeout(&mut self, now: Timestamp) {
        let Some(gate) = self.pull.as_ref().map(|p| p.config.gate) else {
            return;
        };
        self.mark_gated(now);
        let Some(&(r, _)) = self
            .gate_waits()
            .iter()
            .find(|(_, since)| since.is_some_and(|at| at + gate <= now))
        else {
            return;
        };
        let missing: Vec<u16> = (0..self.config.workers)
            .filter(|&w| self.arrived[w as usize] < r)
            .collect();
        self.stats.pull_gate_timeouts += 1;
        self.pull_stand_aside(format_args!(
            "round {r} waited {gate:?} for workers {missing:?} to push it (the workers' rounds \
             do not line up)"
        ));
    }

    /// Pull half: stands aside on this server for the rest of the job (its
    /// pulls go to it), after a BREAK if workers may hold copies; logged
    /// with `why` once.
    fn pull_stand_aside(&mut self, why: std::fmt::Arguments) {
        let Some(p) = self.pull.as_mut().filter(|p| p.active) else {
            return;
        };
        p.active = false;
        p.must_wait(&mut self.stats);
        self.stats.pull_aside += 1;
        log::warn!(
            "server {}: the pull half stands aside: {why}; pulls go to this server",
            self.server
        );
    }

    fn ready(&self, h: &Held) -> bool {
        self.pull_gate(h.trailer.round) && self.ready_but_gate(h)
    }

    fn ready_but_gate(&self, h: &Held) -> bool {
        let (w, r) = (h.worker, h.trailer.round);
        if h.trailer.hot.is_empty() {
            return true;
        }
        let Some(rs) = self.rounds.get(&r) else {
            return true;
        };
        let Some(st) = rs.settles.get(&w) else {
            // No SETTLE: ready once the aggregate marks the worker complete
            // (a clean round, for which the worker sends none), unless the
            // trailer promised one.
            return !h.trailer.settles
                && rs.agg.as_ref().is_some_and(|a| {
                    w < 64 && a.complete >> w & 1 == 1 && self.agg_gate(r, a.contributed)
                });
        };
        // The packets the worker had added must be in the aggregate: after
        // a switch restart, the round's aggregate may be the old switch's,
        // without what the new one added (the worker then resends them).
        if st.added > 0
            && !rs
                .agg
                .as_ref()
                .is_some_and(|a| a.coverage.holds_at_least(w, st.added))
        {
            return false;
        }
        let covered = |seq| rs.agg.as_ref().is_some_and(|a| a.coverage.covers(w, seq));
        if !st
            .batches
            .iter()
            .all(|b| b.applied || (!b.certain && covered(b.seq)))
        {
            return false;
        }
        rs.agg
            .as_ref()
            .is_none_or(|a| self.agg_gate(r, a.contributed))
    }

    /// Releases every held push that is ready, with what queued behind it,
    /// senders by rank, until nothing moves.
    fn release(&mut self, deliver: &mut Vec<SharedFrames>) {
        loop {
            let mut moved = false;
            let keys: Vec<SenderKey> = self.queues.keys().cloned().collect();
            for key in keys {
                while let Some(front) = self.queues.get(&key).and_then(VecDeque::front) {
                    match front {
                        Queued::Push(h) if !self.ready(h) => break,
                        Queued::Gated(_)
                            if self.pull.as_ref().is_some_and(|p| p.copies || p.barrier) =>
                        {
                            break
                        }
                        _ => {}
                    }
                    let Some(item) = self.queues.get_mut(&key).and_then(VecDeque::pop_front) else {
                        break;
                    };
                    moved = true;
                    match item {
                        Queued::Plain(frames) | Queued::Gated(frames) => {
                            self.stats.delivered += 1;
                            deliver.push(frames);
                        }
                        Queued::Push(h) => self.deliver_held(*h, false, deliver),
                    }
                }
            }
            self.queues.retain(|_, q| !q.is_empty());
            if !moved {
                break;
            }
        }
        self.pass_pulls(deliver);
        self.forget();
    }

    /// Builds and delivers a held push; `forced` takes values whatever the
    /// ordering gates say.
    fn deliver_held(&mut self, h: Held, forced: bool, deliver: &mut Vec<SharedFrames>) {
        let (w, r) = (h.worker, h.trailer.round);
        let (frames, keys) = match self.merge(&h, forced) {
            Ok(f) => f,
            Err(e) => {
                self.bad(format_args!(
                    "worker {w} round {r}: push not rebuilt ({e}); delivered without its hot keys"
                ));
                let mut f = vec![h.identity.clone()];
                f.extend(h.cold.to_frames(h.format).unwrap_or_default());
                (f, Vec::new())
            }
        };
        if !forced {
            self.stats.released += 1;
        }
        self.stats.delivered += 1;
        deliver.push(frames);
        if let Some(done) = self.released.get_mut(w as usize) {
            *done = (*done).max(r);
        }
        if let Some(rs) = self.rounds.get_mut(&r) {
            rs.holding = rs.holding.saturating_sub(1);
            rs.released_pushes += 1;
            rs.pull_keys.extend(keys);
            let head = h.cold.meta.head;
            rs.pull_head = Some(match rs.pull_head {
                Some(Some(x)) if x != head => None,
                Some(seen) => seen,
                None => Some(head),
            });
        }
        self.read_back(r, deliver);
    }

    /// Pull half: once every push of round `r` has been released (every
    /// worker pushed `r` or later, and every push of `r` that came is
    /// out), the pulls that read its hot values back go to the app right
    /// after them.
    fn read_back(&mut self, r: u32, deliver: &mut Vec<SharedFrames>) {
        if !self.pull_active() || !self.gated_round(r) || !self.arrived.iter().all(|&a| a >= r) {
            return;
        }
        let Some(rs) = self.rounds.get_mut(&r) else {
            return;
        };
        if rs.released_pushes as usize != rs.previous.len() {
            return;
        }
        let keys = std::mem::take(&mut rs.pull_keys);
        let head = rs.pull_head.flatten();
        if let Some(p) = &mut self.pull {
            deliver.extend(
                p.readback
                    .after_round(r, head, keys)
                    .into_iter()
                    .map(shared),
            );
        }
    }

    /// The push request `h` with its hot entries merged in, as frames for
    /// the app.
    /// Also returns, with the pull half, the request's keys that are hot
    /// (read back after the round).
    fn merge(&mut self, h: &Held, forced: bool) -> zebra_pslite::Result<(SharedFrames, Vec<u64>)> {
        let cold_view = h.cold.kv()?;
        let shape = match &cold_view {
            Some(v) => Shape {
                val_type: v.val_type(),
                lens: v.has_lens(),
                entries: v.entries()?.map(|(k, b, _)| (k, b)).collect(),
            },
            None => Shape {
                val_type: h.trailer.val_type,
                lens: h.trailer.lens,
                entries: Vec::new(),
            },
        };
        let hot = self.take(h, &shape, forced);
        let mut kv = KvData::empty(shape.val_type, shape.lens);
        let mut cold = shape.entries.iter().peekable();
        let mut hot = hot.iter().peekable();
        loop {
            let take_cold = match (cold.peek(), hot.peek()) {
                (Some(c), Some(hv)) => c.0 <= hv.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_cold {
                if let Some(&(k, b)) = cold.next() {
                    kv.push_entry(k, b);
                }
            } else if let Some((k, v)) = hot.next() {
                kv.push_entry(*k, &values::encode(v));
            }
        }
        let msg = with_kv(&h.cold.meta, &kv)?;
        let mut frames = Vec::with_capacity(2 + msg.data.len());
        frames.push(h.identity.clone());
        frames.extend(msg.to_frames(h.format)?.into_iter().map(Bytes::from));
        let keys = if self.pull_active() {
            let set = self.set_for(h.trailer.round);
            kv.keys
                .iter()
                .copied()
                .filter(|&k| set.get(k).is_some())
                .collect()
        } else {
            Vec::new()
        };
        Ok((frames, keys))
    }

    /// The hot entries `(key, values)` a released push carries, in key
    /// order, taken from what has arrived for its round.
    fn take(&mut self, h: &Held, shape: &Shape<'_>, forced: bool) -> Vec<(u64, Vec<f32>)> {
        let (w, r) = (h.worker, h.trailer.round);
        let agg_ok = self
            .rounds
            .get(&r)
            .and_then(|rs| rs.agg.as_ref())
            .is_some_and(|a| forced || self.agg_gate(r, a.contributed));
        let open: Vec<u16> = (0..self.config.workers)
            .filter(|&x| x == w || forced || self.caught_up(x, r))
            .collect();
        let hot = Arc::clone(self.set_for(r));
        let server = self.server;
        let wanted: Vec<(u64, u32, u32)> = match self.config.delivery {
            Delivery::PerWorker => {
                let mut wanted: Vec<(u64, u32, u32)> = h
                    .trailer
                    .hot
                    .iter()
                    .filter_map(|&ordinal| hot.key_at(server, ordinal))
                    .map(|hk| (hk.key, hk.base, hk.len))
                    .collect();
                let bad = (h.trailer.hot.len() - wanted.len()) as u64;
                if bad > 0 {
                    self.stats.bad_keys += bad;
                    log::error!(
                        "server {server}: worker {w} round {r}: {bad} listed hot keys beyond this \
                         server's; those keys are left out"
                    );
                }
                wanted.sort_unstable_by_key(|&(key, _, _)| key);
                wanted
            }
            Delivery::Merged => {
                let Some(rs) = self.rounds.get(&r) else {
                    return Vec::new();
                };
                let mut indices: Vec<u32> = Vec::new();
                if agg_ok {
                    indices.extend(rs.agg_pending.keys());
                }
                for x in &open {
                    indices.extend(rs.applied.get(x).into_iter().flat_map(|m| m.keys()));
                }
                let mut keys: Vec<&crate::hotset::HotKey> = indices
                    .iter()
                    .filter_map(|&i| hot.locate(server, i).map(|(hk, _)| hk))
                    .collect();
                keys.sort_unstable_by_key(|hk| hk.key);
                keys.dedup_by_key(|hk| hk.key);
                let per_key = shape.entries.first().map(|e| e.1.len());
                keys.into_iter()
                    .filter(|hk| {
                        h.trailer.hot.binary_search(&hk.ordinal).is_ok()
                            || (!shape.entries.iter().any(|c| c.0 == hk.key)
                                && (shape.lens
                                    || per_key.is_none_or(|p| p == hk.len as usize * F32_BYTES)))
                    })
                    .map(|hk| (hk.key, hk.base, hk.len))
                    .collect()
            }
        };
        let Some(rs) = self.rounds.get_mut(&r) else {
            return wanted
                .into_iter()
                .map(|(k, _, len)| (k, vec![0.0; len as usize]))
                .collect();
        };
        let (mut sums, mut zeros) = (0u64, 0u64);
        let entries = wanted
            .into_iter()
            .map(|(key, base, len)| {
                let vals = (0..len)
                    .map(|e| {
                        let got = rs.take(base + e, agg_ok, &open);
                        match got {
                            Some(v) => {
                                sums += 1;
                                v
                            }
                            None => {
                                zeros += 1;
                                0.0
                            }
                        }
                    })
                    .collect();
                (key, vals)
            })
            .collect();
        self.stats.sum_values += sums;
        self.stats.zero_values += zeros;
        entries
    }

    /// Forgets the oldest rounds once nothing more can be delivered for
    /// them: nothing held, and every worker released them (or more than
    /// `history` rounds are remembered: rounds counted, not round numbers,
    /// which jump at barriers).
    fn forget(&mut self) {
        while let Some((&r, rs)) = self.rounds.first_key_value() {
            let all_released = self.released.iter().all(|&done| done >= r);
            let too_old = self.rounds.len() > self.config.history as usize;
            if rs.holding > 0 || !(all_released || too_old) {
                break;
            }
            let lost = rs.pending_values().filter(|v| *v != 0.0).count() as u64;
            if lost > 0 {
                self.stats.lost_values += lost;
                log::error!(
                    "server {}: round {r} forgotten with {lost} non-zero values never delivered",
                    self.server
                );
            }
            if !all_released {
                self.unsure(r);
            }
            self.rounds.remove(&r);
            self.floor = r + 1;
        }
    }
}
