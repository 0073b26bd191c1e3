//! Online hot keys (`ZEBRA_HOT=online`; paper §III-C, brief §5): each
//! server re-ranks its own keys from the first rounds of the job and, if
//! the new ranking is far enough from the current one, installs a new hot
//! set in every worker at one round boundary, without losing or adding
//! twice a single value.
//!
//! # Who counts
//!
//! A server's agent sees every push a worker aggregates to it: the cold
//! keys in the cold part, the hot ones listed in the PUSH trailer. So the
//! [`Census`] counts, per key of the server's range, the pushes that carry
//! a non-zero update of it (in a counted push the worker sends a hot key
//! whose values are all zero cold, so that the server sees them), over
//! each worker's first [`OnlineConfig::rounds`] pushes to this server (the
//! update frequency `zebra profile` ranks offline). The
//! switch needs no count and no change: the new set must fit the hot
//! indices the server's job has from the start (its hot keys in the
//! starting hot-keys file size the switch memory).
//!
//! # The change-over, and why it is exact
//!
//! In one round every worker must give hot index `i` the same key, or the
//! switch adds values of different keys together. Three rules keep it so:
//!
//! 1. A worker aggregates its first `T = rounds` pushes to a server with the
//!    starting set. From its `T+1`-th on, until it has the server's
//!    decision, it sends pushes to that server whole (a trailer listing no
//!    hot key, an empty round at the switch): cold keys are always exact.
//! 2. The server decides once every worker's `T`-th push has arrived: no
//!    worker can then aggregate with the old set any more, and all the
//!    rounds it did are among those the server has seen. The decision (a
//!    HOTSET frame on the server's ROUTER, to each worker's DEALER) names
//!    the new keys and `F`, the first round of the barrier epoch after
//!    every round seen; a worker uses the new keys for its rounds from `F`
//!    on, and, as after a PS-lite barrier, its next push is round `F` (or
//!    as far past it as the worker was ahead of the slowest one, closing
//!    the rounds it skips: `crate::worker`'s `Closing`), so that workers
//!    that drifted apart while pushing whole meet again.
//!    Rounds before `F` see the old set or whole pushes; rounds from `F`
//!    on the new set or whole pushes. The server maps each round's hot
//!    ordinals and indices with the set of that round.
//! 3. If, once some worker pushed its `T`-th, no counted push has come for
//!    `wait` (a worker that pushes less to this server, or stopped), the
//!    server decides without it: it keeps the starting set, which is exact
//!    at any round (workers that have not pushed `T` times keep
//!    aggregating; those waiting resume); or, if it started with no key,
//!    takes the counted keys from `F` as above (nobody aggregated before,
//!    so no round can mix two sets). A worker
//!    the server has not told yet is told on its next push.
//!
//! A worker that cannot use a decision (malformed, another server's keys,
//! too many values) logs it and sends that server whole pushes from then
//! on: slower, never inexact.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use zebra_hotkeys::RoundCount;
use zebra_proto::Timestamp;

use crate::frame::HotSetFrame;
use crate::hotset::HotKey;
use crate::worker::EPOCH_ROUNDS;

/// Online re-ranking settings; every worker and server of a job uses the
/// same ones.
#[derive(Debug, Clone, PartialEq)]
pub struct OnlineConfig {
    /// Pushes of each worker to a server that are counted (`T`).
    pub rounds: u32,
    /// The new set replaces the current one when their top-k Kendall tau
    /// distance ([`zebra_hotkeys::kendall_tau_topk`]) is at least this.
    pub tau: f64,
    /// How long, once some worker pushed its `T`-th, a server waits for the
    /// next counted push before it decides without the missing ones.
    pub wait: Duration,
    /// The server steps aside when its workers' latest rounds are on average
    /// more than this many rounds apart while it counts: their pushes do not
    /// meet at the switch, and aggregating them would hold every fast
    /// worker's push for the slowest one's.
    pub max_drift: f64,
    /// The server steps aside when its chosen keys would save less than this
    /// share of the values its counted pushes carried (a key saves one copy
    /// for each worker but one that pushes it in the same round).
    pub min_saving: f64,
    /// After a decision that installs keys, the server steps aside when its
    /// workers push at less than this share of the pace they had while it
    /// counted (without aggregation): aggregation made them slower.
    pub min_pace: f64,
    /// How long a server that stepped aside waits before it counts again to
    /// try aggregation once more (doubling each time it steps aside again,
    /// at most 16×); zero: never.
    pub retry: Duration,
    /// A hot-keys file's watcher ([`OnlineConfig::file`]): every decision
    /// installs the starting set's keys (the file's) instead of a ranking of
    /// the counted ones. The census only times the workers' whole pushes
    /// (the pace baseline) and checks what the keys would save; the rules to
    /// step aside and the retry are the online ones.
    pub fixed: bool,
    /// With [`Self::fixed`]: whether the first counted pushes go whole (a
    /// probe: the pace without aggregation, for the pace rule). Without a
    /// probe ([`OnlineConfig::watch`]) the workers aggregate with the file's
    /// keys from their first push, the first decision keeps them, and only
    /// the rules that need no baseline hold (saving, flushed rounds, a silent
    /// switch); after stepping aside a recount is a probe as usual.
    pub probe: bool,
    /// How the counted keys are ranked (`ZEBRA_SYNC_RANK`): by the copies
    /// aggregation saves, or by |gradient × parameter| ([`Rank::Pgp`]).
    pub rank: Rank,
}

/// How a census ranks the counted keys (`ZEBRA_SYNC_RANK`, `docs/OSP.md`).
/// The keys it chooses are the hot set: the part of each push the switch
/// sums, which in two-stage mode gates the worker's next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rank {
    /// `hot`: by copies saved per value, then pushes, then the smaller key
    /// (`zebra_hotkeys::saving_order`).
    #[default]
    Saving,
    /// `pgp` (OSP's "PGP" importance): by Σ|g·p| per value over the counted
    /// pushes, `g` a value a worker pushed and `p` the key's value in the
    /// server app's latest answer to a pull ([`Census::weigh`]); ties (keys
    /// never scored, whose gradient or parameter the server did not see) by
    /// the [`Rank::Saving`] order. Only keys that save copies are chosen.
    Pgp,
}

impl FromStr for Rank {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<Rank, &'static str> {
        match s.trim() {
            "" | "hot" => Ok(Rank::Saving),
            "pgp" => Ok(Rank::Pgp),
            _ => Err("expected hot or pgp"),
        }
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rank::Saving => "hot",
            Rank::Pgp => "pgp",
        })
    }
}

/// Default of [`OnlineConfig::retry`].
pub const RETRY: Duration = Duration::from_secs(30);

/// Pushes of each worker (at the counted pace) after which a pace below
/// half of `min_pace` of the counted one steps aside at once (the full
/// judgement waits for `max(T, 10)`).
const EARLY_PUSHES: u32 = 3;

/// Default of [`OnlineConfig::min_pace`].
pub const MIN_PACE: f64 = 0.95;

/// Default of [`OnlineConfig::max_drift`]: no limit. Drift while counting
/// does not say what aggregation costs: the workers of an asynchronous job
/// whose server link is the bottleneck drift apart while they push whole,
/// yet aggregated they wait for each other on that link anyway, and the job
/// gains (the MovieLens training job: 14-29 rounds apart while counted, 1.4x
/// faster with the keys). The pace rule measures the cost instead.
pub const MAX_DRIFT: f64 = f64::INFINITY;
/// Default of [`OnlineConfig::min_saving`].
pub const MIN_SAVING: f64 = 0.05;

impl OnlineConfig {
    /// `rounds` counted pushes, distance threshold 0.05, 5 s wait, aside
    /// beyond a drift of [`MAX_DRIFT`] rounds or below a saving of
    /// [`MIN_SAVING`].
    pub fn new(rounds: u32) -> OnlineConfig {
        OnlineConfig {
            rounds,
            tau: 0.05,
            wait: Duration::from_secs(5),
            max_drift: MAX_DRIFT,
            min_saving: MIN_SAVING,
            min_pace: MIN_PACE,
            retry: RETRY,
            fixed: false,
            probe: true,
            rank: Rank::Saving,
        }
    }

    /// The watcher of a hot-keys file: each server times every worker's
    /// first `probe` pushes whole (no aggregation: the pace baseline), then
    /// installs the file's keys at one round boundary, as an online decision
    /// from no key does, and watches what they cost with the online rules
    /// (pace, flushed rounds, saving), stepping aside and trying again
    /// later as online servers do ([`OnlineConfig::fixed`]).
    pub fn file(probe: u32) -> OnlineConfig {
        OnlineConfig {
            fixed: true,
            ..OnlineConfig::new(probe)
        }
    }

    /// The watcher of a hot-keys file without a probe: the workers aggregate
    /// with the file's keys from their first push, as with the file alone;
    /// each server counts every worker's first `rounds` pushes and keeps the
    /// keys (the file was chosen over a whole trace: a few counted pushes do
    /// not overrule it), and from then on steps aside when most of its
    /// rounds wait for the round timeout or the switch falls silent, trying
    /// again later (with a probe, then). No pace rule: there is no pace without aggregation to
    /// compare with. What a hot-keys file gets by default in the shim.
    pub fn watch(rounds: u32) -> OnlineConfig {
        OnlineConfig {
            probe: false,
            min_pace: 0.0,
            ..OnlineConfig::file(rounds)
        }
    }

    /// Whether the workers push whole until the first decision: a file's
    /// watcher with a probe.
    pub fn whole_first(&self) -> bool {
        self.fixed && self.probe
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 {
            return Err("online rounds must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.tau) {
            return Err(format!("online tau {}: expected 0..=1", self.tau));
        }
        if self.wait.is_zero() {
            return Err("online wait must be longer than zero".into());
        }
        if self.max_drift.is_nan() || self.max_drift < 0.0 {
            return Err(format!(
                "online max drift {}: expected 0 or more",
                self.max_drift
            ));
        }
        if !(0.0..=1.0).contains(&self.min_saving) {
            return Err(format!(
                "online min saving {}: expected 0..=1",
                self.min_saving
            ));
        }
        if !(0.0..=1.0).contains(&self.min_pace) {
            return Err(format!("online min pace {}: expected 0..=1", self.min_pace));
        }
        Ok(())
    }
}

/// A server's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The first round that uses the new keys (with `change`).
    pub from_round: u32,
    /// Whether the keys change.
    pub change: bool,
    /// The largest round of any push seen when deciding (HOTSET `seen`).
    pub seen: u32,
    /// The smallest of the workers' latest rounds then (HOTSET `floor`).
    pub floor: u32,
    /// The new keys, hottest first, `(key, values)` (the current ones when
    /// kept).
    pub keys: Vec<(u64, u32)>,
    /// Top-k Kendall tau distance between the current and the counted
    /// ranking (None when kept for want of counts).
    pub distance: Option<f64>,
    /// Pushes counted.
    pub pushes: u64,
    /// Distinct keys counted.
    pub keys_seen: usize,
    /// Why the server steps aside, if it does (then `change` is false).
    pub aside: Option<Aside>,
    /// Share of the counted values the chosen keys would have saved.
    pub saving: f64,
    /// Mean distance in rounds between the workers' latest rounds while
    /// counting (0 without a sample).
    pub drift: f64,
}

impl Decision {
    /// A decision with nothing counted and no key: what stepping aside
    /// before any decision records, and what a RECOUNT frame carries.
    fn empty() -> Decision {
        Decision {
            from_round: 1,
            change: false,
            seen: 0,
            floor: 0,
            keys: Vec::new(),
            distance: None,
            pushes: 0,
            keys_seen: 0,
            aside: None,
            saving: 0.0,
            drift: 0.0,
        }
    }
}

/// Why a server steps aside: aggregation would cost its workers more than
/// it saves, so their pushes to it go unchanged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aside {
    /// The workers' pushes do not meet: on average this many rounds apart.
    Drift(f64),
    /// The chosen keys save only this share of the counted values (no key is
    /// pushed by two workers in the same round, or too few are).
    NoSaving(f64),
    /// After the decision, this many of the last rounds aggregated (the
    /// second number) were closed by the switch's round timeout: some
    /// worker no longer pushes the rounds the others do (uneven push counts,
    /// a worker that stopped), and every such round costs a timeout.
    Flushed(u32, u32),
    /// The switch did not admit this server's job (no room for it, or it has
    /// a job of that id with another number of workers). Not tried again
    /// after a while: the server's link keeps asking the switch, and the
    /// server counts again once the switch admits the job
    /// ([`ServerAgent::on_switch`](crate::ServerAgent::on_switch)).
    NotAdmitted,
    /// With the keys installed the workers pushed this many times a second,
    /// against the first number while the server counted.
    Slower(f64, f64),
    /// The switch has not acknowledged this server's REGISTER in this long
    /// (`register_wait_ms`): it is not running, cannot be reached, or does
    /// not take the job's token (another `ZEBRA_JOB_KEY`). Every hot packet
    /// would wait for its timeouts.
    Unanswered(std::time::Duration),
}

impl Aside {
    /// Whether trying aggregation again after `retry` may pay (not when the
    /// switch refused the job: then once it admits it).
    pub fn retried(&self) -> bool {
        !matches!(self, Aside::NotAdmitted)
    }
}

impl std::fmt::Display for Aside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Aside::Drift(d) => write!(
                f,
                "the workers' pushes are {d:.1} rounds apart on average: rounds would not meet"
            ),
            Aside::NoSaving(s) => write!(
                f,
                "the hot keys would save {:.1} % of the pushed values: too few keys are pushed \
                 by several workers in the same round",
                s * 100.0
            ),
            Aside::NotAdmitted => write!(
                f,
                "the switch did not admit this server's job (no room for it, a job of that id \
                 with another number of workers, or not the token of the switch's job key); \
                 aggregation is tried again once it does (the server asks every second)"
            ),
            Aside::Unanswered(waited) => write!(
                f,
                "the switch has not answered this server's REGISTER in {:.1} s: it is not \
                 running, cannot be reached, or does not take the job's token (ZEBRA_JOB_KEY \
                 differs); aggregation is tried again once it answers",
                waited.as_secs_f64()
            ),
            Aside::Slower(before, after) => write!(
                f,
                "with aggregation its workers push {after:.1} times a second, against {before:.1} \
                 without: aggregation makes them slower"
            ),
            Aside::Flushed(n, of) => write!(
                f,
                "{n} of the last {of} rounds waited for the switch's round timeout: the \
                 workers no longer push the same rounds"
            ),
        }
    }
}

/// How fast the workers push over a stretch of the job: per worker the
/// arrival of its first and last push in it and their number.
#[derive(Debug, Clone)]
struct Pace {
    spans: Vec<Option<(Timestamp, Timestamp, u32)>>,
}

impl Pace {
    fn new(workers: u16) -> Pace {
        Pace {
            spans: vec![None; workers as usize],
        }
    }

    fn add(&mut self, w: u16, now: Timestamp) {
        if let Some(span) = self.spans.get_mut(w as usize) {
            *span = Some(match *span {
                None => (now, now, 1),
                Some((first, _, n)) => (first, now, n + 1),
            });
        }
    }

    /// When the stretch began (its first push) and its pushes, over all
    /// workers; `None` before any.
    fn stretch(&self) -> Option<(Timestamp, u64)> {
        let spans = self.spans.iter().flatten();
        let start = spans.clone().map(|s| s.0).min()?;
        Some((start, spans.map(|s| u64::from(s.2)).sum()))
    }

    /// Pushes a second, summed over the workers (each over its own span;
    /// `None` until every worker has pushed twice, time passing between).
    fn rate(&self) -> Option<f64> {
        self.spans.iter().try_fold(0.0, |sum, s| {
            let (first, last, n) = (*s)?;
            let secs = last.saturating_since(first).as_secs_f64();
            (n >= 2 && secs > 0.0).then(|| sum + f64::from(n - 1) / secs)
        })
    }
}

/// The counts a server gathers and its decision.
#[derive(Debug)]
pub struct Census {
    config: OnlineConfig,
    /// Per worker: pushes counted.
    counted: Vec<u32>,
    counts: HashMap<u64, RoundCount>,
    /// With [`Rank::Pgp`]: per key, Σ|g·p| over the counted pushes.
    pgp: HashMap<u64, f64>,
    /// Values carried by the counted pushes.
    values: u64,
    /// Sum and number of samples of the distance between the workers'
    /// latest rounds (sampled at each push while undecided).
    drift: (f64, u64),
    /// The workers' pace while counted (no aggregation), and, after a
    /// decision that installs keys, over the latest stretch with them.
    counted_pace: Pace,
    pace: Pace,
    /// The latest stretch judged no slower: (pace while counted, pace with
    /// the keys), until taken for the log (`take_kept`).
    kept: Option<(f64, f64)>,
    /// Values per key: the first count seen (a worker sends a key whose
    /// count differs from its hot set's cold, so a wrong one costs speed).
    lens: HashMap<u64, u32>,
    pushes: u64,
    /// When the first worker's `T`-th push arrived.
    first_full: Option<Timestamp>,
    /// When the last counted push arrived.
    last_counted: Option<Timestamp>,
    /// The largest round of any push seen, counted or not.
    max_round: u32,
    /// Per worker: the largest round of its pushes seen.
    latest: Vec<u32>,
    decision: Option<Decision>,
    /// Per worker: its identity (for the ROUTER), and whether it was told.
    peers: Vec<(Option<Vec<u8>>, bool)>,
    /// A census after the server stood aside: its workers are told to count
    /// again (HOTSET RECOUNT) before its decision.
    recount: bool,
}

impl Census {
    /// A census for `workers` workers.
    pub fn new(config: OnlineConfig, workers: u16) -> Census {
        Census {
            config,
            counted: vec![0; workers as usize],
            counts: HashMap::new(),
            pgp: HashMap::new(),
            values: 0,
            drift: (0.0, 0),
            counted_pace: Pace::new(workers),
            pace: Pace::new(workers),
            kept: None,
            lens: HashMap::new(),
            pushes: 0,
            first_full: None,
            last_counted: None,
            max_round: 0,
            latest: vec![0; workers as usize],
            decision: None,
            peers: vec![(None, false); workers as usize],
            recount: false,
        }
    }

    /// A new census after this one's server stood aside, to try
    /// aggregation again: the same settings and workers, every worker told to
    /// count again (RECOUNT), then of the new decision.
    pub fn recount(&self) -> Census {
        let mut c = Census::new(self.config.clone(), self.peers.len() as u16);
        for (new, (identity, _)) in c.peers.iter_mut().zip(&self.peers) {
            new.0.clone_from(identity);
        }
        c.recount = true;
        c
    }

    /// Every worker is to be told again (of a decision after a RECOUNT, or
    /// of stepping aside after a decision).
    fn tell_again(&mut self) {
        for peer in &mut self.peers {
            peer.1 = false;
        }
    }

    /// Whether this census follows a RECOUNT.
    pub fn is_recount(&self) -> bool {
        self.recount
    }

    /// The decision, once taken.
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }

    /// Whether worker `w`'s next push is still counted.
    pub fn counting(&self, w: u16) -> bool {
        self.decision.is_none()
            && self
                .counted
                .get(w as usize)
                .is_some_and(|&c| c < self.config.rounds)
    }

    /// Whether the census still reads gradients and parameters for
    /// [`Rank::Pgp`] (until its decision).
    pub fn weighing(&self) -> bool {
        self.config.rank == Rank::Pgp && self.decision.is_none()
    }

    /// With [`Rank::Pgp`]: the importance of a push of worker `w` that is
    /// still counted, before its [`observe`](Self::observe): per key, Σ|g·p|
    /// over the values the server saw of it (`g` the pushed value, `p` the
    /// key's value in the app's latest answer to a pull). Keys with no score
    /// (hot ones, whose values went to the switch; keys never answered) add
    /// nothing.
    pub fn weigh(&mut self, w: u16, scores: impl Iterator<Item = (u64, f64)>) {
        if !self.weighing() || !self.counting(w) {
            return;
        }
        for (key, score) in scores {
            *self.pgp.entry(key).or_default() += score;
        }
    }

    /// A push of worker `w`, round `round`, from `identity`, carrying `keys`
    /// (`(key, values)`, cold and hot): counted if it is one of the
    /// worker's first `T`.
    pub fn observe(
        &mut self,
        now: Timestamp,
        w: u16,
        round: u32,
        identity: &[u8],
        keys: impl Iterator<Item = (u64, u32)>,
    ) {
        let Some(peer) = self.peers.get_mut(w as usize) else {
            return;
        };
        if peer.0.is_none() {
            peer.0 = Some(identity.to_vec());
        }
        self.max_round = self.max_round.max(round);
        self.latest[w as usize] = self.latest[w as usize].max(round);
        if self.decision.is_none() {
            self.sample_drift();
        }
        if let Some(d) = &self.decision {
            if d.change && d.aside.is_none() && round >= d.from_round {
                self.pace.add(w, now);
            }
        }
        if !self.counting(w) {
            return;
        }
        // The pace without aggregation, over the second half of the counted
        // pushes: the first ones include the job's warm-up (connections, the
        // apps' first steps), and a baseline that slow would hide the cost of
        // aggregation (BytePS's test_benchmark: 150 pushes a second counted
        // from the start, 190 with a slow hot path, 1,500 without).
        if self.counted[w as usize] >= self.config.rounds / 2 {
            self.counted_pace.add(w, now);
        }
        self.last_counted = Some(now);
        for (key, len) in keys {
            self.counts.entry(key).or_default().add(round);
            self.values += u64::from(*self.lens.entry(key).or_insert(len));
        }
        self.pushes += 1;
        let c = &mut self.counted[w as usize];
        *c += 1;
        if *c == self.config.rounds {
            self.first_full.get_or_insert(now);
        }
    }

    /// Once every worker pushed, how far apart their latest rounds are (in
    /// one barrier epoch: a barrier realigns them).
    fn sample_drift(&mut self) {
        let (Some(&lo), Some(&hi)) = (self.latest.iter().min(), self.latest.iter().max()) else {
            return;
        };
        let epoch = |r: u32| r.saturating_sub(1) / EPOCH_ROUNDS;
        if lo > 0 && epoch(lo) == epoch(hi) {
            self.drift.0 += f64::from(hi - lo);
            self.drift.1 += 1;
        }
    }

    /// Mean of the drift samples (0 without one).
    fn mean_drift(&self) -> f64 {
        if self.drift.1 == 0 {
            0.0
        } else {
            self.drift.0 / self.drift.1 as f64
        }
    }

    /// Whether to step aside with `keys` chosen, and the share they save.
    fn aside(&self, keys: &[(u64, u32)]) -> (Option<Aside>, f64) {
        let saved: u64 = keys
            .iter()
            .map(|&(k, len)| self.counts.get(&k).map_or(0, RoundCount::saving) * u64::from(len))
            .sum();
        let saving = if self.values == 0 {
            0.0
        } else {
            saved as f64 / self.values as f64
        };
        let drift = self.mean_drift();
        let aside = if drift > self.config.max_drift {
            Some(Aside::Drift(drift))
        } else if saving < self.config.min_saving {
            Some(Aside::NoSaving(saving))
        } else {
            None
        };
        (aside, saving)
    }

    /// Decides if every worker's `T`-th push has arrived: the new keys from
    /// the counts (`current`: the server's keys now, hottest first;
    /// `capacity`: its job's hot indices).
    pub fn decide_if_counted(&mut self, current: &[HotKey], capacity: u32) -> Option<&Decision> {
        if self.decision.is_some() || self.counted.iter().any(|&c| c < self.config.rounds) {
            return None;
        }
        self.conclude(self.next_epoch(), current, capacity)
    }

    /// The smallest of the latest rounds of the workers whose counted
    /// pushes all came (all of them unless deciding on the timeout: a
    /// worker that stopped would hold the others' rounds back for nothing).
    fn floor(&self) -> u32 {
        self.latest
            .iter()
            .zip(&self.counted)
            .filter(|&(_, &c)| c >= self.config.rounds)
            .map(|(&r, _)| r)
            .min()
            .unwrap_or(0)
    }

    /// The first round of the barrier epoch after every round seen: past
    /// every round any worker aggregated with the old keys (each worker's
    /// first `T`, all seen), and, as a barrier does, where every worker's
    /// pushes meet again after the decision (`crate::worker`).
    fn next_epoch(&self) -> u32 {
        (self.max_round / EPOCH_ROUNDS)
            .saturating_add(1)
            .saturating_mul(EPOCH_ROUNDS)
            .saturating_add(1)
    }

    /// The decision from the counts: change to the counted ranking from
    /// `from_round` if it is far enough from `current`, else keep.
    fn conclude(
        &mut self,
        from_round: u32,
        current: &[HotKey],
        capacity: u32,
    ) -> Option<&Decision> {
        // A file's watcher decides for the file's keys (`current`): from no
        // key after a probe or a recount (its workers pushed whole until
        // now), kept without a probe (they aggregated with them).
        let watching = self.config.fixed && !self.config.probe && !self.recount;
        let (keys, current) = if self.config.fixed && !watching {
            (current_keys(current), &[][..])
        } else if watching {
            (current_keys(current), current)
        } else {
            (self.ranked(capacity), current)
        };
        let now: Vec<u64> = current.iter().map(|k| k.key).collect();
        let new: Vec<u64> = keys.iter().map(|k| k.0).collect();
        let distance = zebra_hotkeys::kendall_tau_topk(&now, &new);
        let (aside, saving) = self.aside(&keys);
        // A file watched without a probe was chosen over a whole trace
        // (`zebra profile`); a few counted pushes do not overrule it (MXNet's
        // `kv.init` alone fills worker 0's first ones): only what it costs
        // does, later.
        let aside = aside.filter(|a| !(watching && matches!(a, Aside::NoSaving(_))));
        // From no keys at all any counted ones are a change (the distance
        // of an empty list to any other is 0: every pair is tied in it).
        let change = aside.is_none()
            && new != now
            && !new.is_empty()
            && (now.is_empty() || distance >= self.config.tau);
        // After a RECOUNT there is nothing to keep: the workers push whole.
        let aside = match aside {
            None if self.recount && !change => Some(Aside::NoSaving(saving)),
            other => other,
        };
        self.decision = Some(Decision {
            // Kept without a probe: the workers aggregated with these keys
            // all along and go on (no round boundary to meet at).
            from_round: if watching && !change { 1 } else { from_round },
            change,
            seen: self.max_round,
            floor: self.floor(),
            keys: if change { keys } else { current_keys(current) },
            distance: Some(distance),
            pushes: self.pushes,
            keys_seen: self.counts.len(),
            aside,
            saving,
            drift: self.mean_drift(),
        });
        self.tell_again();
        self.decision.as_ref()
    }

    /// When [`decide_on_timeout`](Self::decide_on_timeout) would decide:
    /// `wait` after the last counted push, once some worker pushed its
    /// `T`-th (workers that are slow but pushing move it on; one that
    /// stopped does not).
    pub fn deadline(&self) -> Option<Timestamp> {
        match (&self.decision, self.first_full, self.last_counted) {
            (None, Some(_), Some(last)) => Some(last + self.config.wait),
            _ => None,
        }
    }

    /// Decides at the deadline, some worker's `T`-th push still missing.
    /// With current keys, keeps them: a worker that has not pushed `T`
    /// times may still aggregate with them at any round. With none, nobody
    /// aggregates before the decision, so the counted keys are exact from
    /// any round: from the one after every round seen.
    pub fn decide_on_timeout(
        &mut self,
        now: Timestamp,
        current: &[HotKey],
        capacity: u32,
    ) -> Option<&Decision> {
        if self.deadline().is_none_or(|d| now < d) {
            return None;
        }
        if current.is_empty() || self.config.fixed {
            return self.conclude(self.next_epoch(), current, capacity);
        }
        // Keep the keys, or step aside (exact at any round too: a push
        // that goes unchanged is one the switch never sees).
        let (aside, saving) = self.aside(&current_keys(current));
        self.decision = Some(Decision {
            from_round: 1,
            change: false,
            seen: self.max_round,
            floor: self.floor(),
            keys: current_keys(current),
            distance: None,
            pushes: self.pushes,
            keys_seen: self.counts.len(),
            aside,
            saving,
            drift: self.mean_drift(),
        });
        self.tell_again();
        self.decision.as_ref()
    }

    /// After a decision that installed keys: whether the workers push slower
    /// with them than they did while counted (below `min_pace` of it), and
    /// then why to step aside. A stretch is judged once it has lasted as long
    /// as `max(T, 10)` pushes of every worker take at the counted pace
    /// (judged by time, so that workers the keys stall do not hold the
    /// judgement back), then the next one starts; far slower (below half of
    /// `min_pace`) is judged after as long as 3 pushes of every worker take.
    pub fn slower(&mut self, now: Timestamp) -> Option<Aside> {
        let before = self.counted_pace.rate()?;
        let (start, pushes) = self.pace.stretch()?;
        let secs = now.saturating_since(start).as_secs_f64();
        let workers = self.peers.len() as f64;
        let at_pace = |n: u32| f64::from(n) * workers / before;
        if secs <= 0.0 || secs < at_pace(EARLY_PUSHES) {
            return None;
        }
        let after = pushes as f64 / secs;
        if after < self.config.min_pace * before / 2.0 {
            return Some(Aside::Slower(before, after));
        }
        if secs < at_pace(self.config.rounds.max(10)) {
            return None;
        }
        self.pace = Pace::new(self.peers.len() as u16);
        if after < self.config.min_pace * before {
            return Some(Aside::Slower(before, after));
        }
        self.kept = Some((before, after));
        None
    }

    /// The latest stretch `slower` judged no slower than the counted pace,
    /// once: (pushes per second while counted, with the keys).
    pub fn take_kept(&mut self) -> Option<(f64, f64)> {
        self.kept.take()
    }

    /// Steps aside after the decision (or before it, deciding so): every
    /// worker is told again, with ASIDE. False if it already stood aside.
    pub fn step_aside(&mut self, why: Aside) -> bool {
        if self.decision.as_ref().is_some_and(|d| d.aside.is_some()) {
            return false;
        }
        let d = self.decision.get_or_insert_with(Decision::empty);
        d.aside = Some(why);
        d.change = false;
        self.tell_again();
        true
    }

    /// Turns a decision to change that could not be installed into one to
    /// keep `current` (the workers refuse the same keys).
    pub fn keep_instead(&mut self, current: &[HotKey]) {
        if let Some(d) = &mut self.decision {
            d.change = false;
            d.keys = current_keys(current);
        }
    }

    /// The counted keys that aggregation saves copies of, by copies saved
    /// per value (then by pushes, then smaller key first; with [`Rank::Pgp`]
    /// by Σ|g·p| per value first), as many as fit
    /// `capacity` hot indices, each with its value count. A key no two
    /// workers pushed in the same round saves nothing and is never chosen.
    fn ranked(&self, capacity: u32) -> Vec<(u64, u32)> {
        let mut order: Vec<(u64, RoundCount)> = self
            .counts
            .iter()
            .filter(|(_, c)| c.saving() > 0)
            .map(|(&k, &c)| (k, c))
            .collect();
        // Σ|g·p| per value (0 for a key never scored).
        let pgp = |k: u64| {
            let len = self.lens.get(&k).copied().unwrap_or(0).max(1);
            self.pgp.get(&k).copied().unwrap_or(0.0) / f64::from(len)
        };
        order.sort_unstable_by(|a, b| {
            let by_pgp = match self.config.rank {
                Rank::Pgp => pgp(b.0).total_cmp(&pgp(a.0)),
                Rank::Saving => std::cmp::Ordering::Equal,
            };
            by_pgp.then_with(|| {
                zebra_hotkeys::saving_order(
                    (a.1.saving(), a.1.pushes, a.0),
                    (b.1.saving(), b.1.pushes, b.0),
                )
            })
        });
        let mut used = 0u32;
        let mut keys = Vec::new();
        for (key, _) in order {
            let len = self.lens.get(&key).copied().unwrap_or(0);
            if len == 0 {
                continue;
            }
            if let Some(next) = used.checked_add(len).filter(|&n| n <= capacity) {
                used = next;
                keys.push((key, len));
            }
            if used == capacity {
                break;
            }
        }
        keys
    }

    /// HOTSET messages (`[identity, frame]`) for the workers not yet told
    /// of the decision whose identity is known; each is told once.
    pub fn tell(&mut self, job: u16) -> Vec<Vec<Vec<u8>>> {
        let recount = Decision::empty();
        let (d, recount) = match &self.decision {
            Some(d) => (d, false),
            None if self.recount => (&recount, true),
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        for (w, (identity, told)) in self.peers.iter_mut().enumerate() {
            let Some(id) = identity else { continue };
            if *told {
                continue;
            }
            let frame = HotSetFrame {
                job,
                worker: w as u16,
                from_round: d.from_round,
                change: d.change,
                aside: d.aside.is_some(),
                recount,
                seen: d.seen,
                floor: d.floor,
                keys: d.keys.clone(),
            };
            match frame.to_bytes() {
                Ok(bytes) => out.push(vec![id.clone(), bytes]),
                Err(e) => log::error!("online: HOTSET for worker {w} not encodable: {e}"),
            }
            *told = true;
        }
        out
    }
}

fn current_keys(current: &[HotKey]) -> Vec<(u64, u32)> {
    current.iter().map(|k| (k.key, k.len)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hotset::{HotSet, KeyRanges};

    fn current() -> HotSet {
        HotSet::new([(10, 2), (11, 2)], KeyRanges::pslite(1)).unwrap()
    }

    /// One server's job of `capacity` values with no hot key yet.
    fn no_keys(capacity: u32) -> HotSet {
        HotSet::new([], KeyRanges::pslite(1))
            .unwrap()
            .with_capacity(capacity)
            .unwrap()
    }

    #[test]
    fn decides_when_every_worker_pushed_t_times() {
        let set = current();
        let mut c = Census::new(OnlineConfig::new(2), 2);
        let t = Timestamp(0);
        c.observe(t, 0, 1, b"ps9", [(5, 2), (10, 2)].into_iter());
        c.observe(t, 0, 2, b"ps9", [(5, 2), (7, 1)].into_iter());
        assert!(!c.counting(0) && c.counting(1));
        c.observe(t, 0, 3, b"ps9", [(99, 1)].into_iter());
        assert_eq!(c.decide_if_counted(set.server_keys(0), 4), None);
        assert_eq!(c.deadline(), Some(t + Duration::from_secs(5)));
        c.observe(t, 1, 1, b"ps11", [(5, 2), (7, 1)].into_iter());
        c.observe(t, 1, 2, b"ps11", [(6, 3), (7, 1)].into_iter());
        let d = c.decide_if_counted(set.server_keys(0), 4).unwrap().clone();
        assert_eq!(
            d.from_round, 65_537,
            "the barrier epoch after every round seen"
        );
        assert!(d.change);
        assert_eq!(d.aside, None);
        assert_eq!(
            d.keys,
            vec![(5, 2), (7, 1)],
            "by copies saved (5 and 7 each pushed twice in one round), within 4 values \
             (6 and 10 were pushed by one worker a round: nothing saved)"
        );
        assert_eq!(d.drift, 1.5, "worker 1 two, then one round behind");
        assert!((d.saving - 3.0 / 14.0).abs() < 1e-9, "{}", d.saving);
        assert_eq!(
            (d.pushes, d.keys_seen),
            (4, 4),
            "worker 0's third push not counted"
        );
        let msgs = c.tell(40);
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1][0], b"ps11");
        let f = HotSetFrame::parse(&msgs[1][1]).unwrap();
        assert_eq!(
            (f.job, f.worker, f.from_round, f.change, f.seen, f.floor),
            (40, 1, 65_537, true, 3, 2),
            "seen: the largest round of any push; floor: the smallest of the workers' latest"
        );
        assert!(c.tell(40).is_empty(), "told once");
    }

    #[test]
    fn keeps_the_set_when_close_or_when_a_worker_is_missing() {
        let set = current();
        let mut c = Census::new(OnlineConfig::new(1), 1);
        c.observe(Timestamp(0), 0, 1, b"ps9", [(10, 2), (11, 2)].into_iter());
        let d = c.decide_if_counted(set.server_keys(0), 4).unwrap();
        assert_eq!((d.change, d.distance), (false, Some(0.0)));

        let mut c = Census::new(OnlineConfig::new(1), 2);
        c.observe(Timestamp(100), 0, 1, b"ps9", [(5, 2)].into_iter());
        let wait = Duration::from_secs(5);
        assert_eq!(
            c.decide_on_timeout(Timestamp(99) + wait, set.server_keys(0), 4),
            None
        );
        let d = c
            .decide_on_timeout(Timestamp(100) + wait, set.server_keys(0), 4)
            .unwrap();
        assert_eq!((d.change, d.from_round), (false, 1));
        assert_eq!(d.keys, vec![(10, 2), (11, 2)]);
        assert_eq!(c.tell(1).len(), 1, "only worker 0's identity is known");
        c.observe(Timestamp(200), 1, 1, b"ps11", [(5, 2)].into_iter());
        assert_eq!(c.tell(1).len(), 1, "worker 1 is told on its first push");
    }

    #[test]
    fn from_no_keys_any_counted_ones_are_a_change() {
        let empty = no_keys(3);
        let mut c = Census::new(OnlineConfig::new(1), 2);
        let keys = [(4, 2), (6, 1), (8, 1)];
        c.observe(Timestamp(0), 0, 1, b"ps9", keys.into_iter());
        c.observe(Timestamp(0), 1, 1, b"ps11", keys.into_iter());
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap();
        assert_eq!((d.change, d.from_round), (true, 65_537));
        assert_eq!(d.keys, vec![(4, 2), (6, 1)]);
    }

    #[test]
    fn one_worker_saves_nothing_and_steps_aside() {
        let empty = no_keys(3);
        let mut c = Census::new(OnlineConfig::new(1), 1);
        c.observe(Timestamp(0), 0, 1, b"ps9", [(4, 2), (6, 1)].into_iter());
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap();
        assert_eq!((d.change, d.aside), (false, Some(Aside::NoSaving(0.0))));
    }

    #[test]
    fn workers_pushing_their_own_keys_step_aside() {
        let empty = no_keys(8);
        let mut c = Census::new(OnlineConfig::new(2), 2);
        for r in 1..=2 {
            c.observe(Timestamp(0), 0, r, b"ps9", [(1, 2), (2, 2)].into_iter());
            c.observe(Timestamp(0), 1, r, b"ps11", [(3, 2), (4, 2)].into_iter());
        }
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap()
            .clone();
        assert_eq!((d.change, d.aside), (false, Some(Aside::NoSaving(0.0))));
        assert!(d.aside.unwrap().to_string().contains("0.0 %"));
        let f = HotSetFrame::parse(&c.tell(5)[0][1]).unwrap();
        assert!(f.aside && !f.change && f.keys.is_empty());
    }

    #[test]
    fn drifting_workers_step_aside_even_when_their_keys_meet() {
        let empty = no_keys(8);
        let drift = OnlineConfig {
            max_drift: 2.0,
            ..OnlineConfig::new(4)
        };
        let mut c = Census::new(drift, 2);
        let keys = [(1, 2), (2, 2)];
        c.observe(Timestamp(0), 0, 1, b"ps9", keys.into_iter());
        for r in 1..=8 {
            c.observe(Timestamp(0), 1, r, b"ps11", keys.into_iter());
        }
        for r in 2..=4 {
            c.observe(Timestamp(0), 0, r, b"ps9", keys.into_iter());
        }
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap();
        let drift = (0..=7).chain([6, 5, 4]).sum::<u32>() as f64 / 11.0;
        assert_eq!(d.aside, Some(Aside::Drift(drift)));
        assert!(!d.change);
        assert!(
            d.saving > 0.4,
            "the keys meet in rounds 1..=4: {}",
            d.saving
        );
    }

    #[test]
    fn steps_aside_when_the_keys_slow_the_workers_down() {
        let empty = no_keys(8);
        let mut c = Census::new(OnlineConfig::new(4), 2);
        let ms = |m: u64| Timestamp(m * 1000);
        let keys = [(1, 2), (2, 2)];
        // Counted: the first push late (warm-up, left out of the pace), then
        // each worker pushes every 10 ms (100 a second each).
        for (r, t) in [(1, 0), (2, 60), (3, 70), (4, 80)] {
            c.observe(ms(t), 0, r, b"ps9", keys.into_iter());
            c.observe(ms(t + 1), 1, r, b"ps11", keys.into_iter());
        }
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap()
            .clone();
        assert!(d.change);
        // With the keys: a push every 10 ms for ten pushes, then every 20 ms.
        let mut t = 100;
        for r in d.from_round..d.from_round + 11 {
            c.observe(ms(t), 0, r, b"ps9", std::iter::empty());
            c.observe(ms(t), 1, r, b"ps11", std::iter::empty());
            assert_eq!(c.slower(ms(t)), None, "as fast as while counted");
            t += 10;
        }
        let (before, after) = c.take_kept().expect("a stretch judged and kept");
        assert!(
            before == 200.0 && after >= 0.95 * before,
            "{before} {after}"
        );
        assert_eq!(c.take_kept(), None, "taken once");
        let mut judged = None;
        for r in d.from_round + 11..d.from_round + 30 {
            c.observe(ms(t), 0, r, b"ps9", std::iter::empty());
            c.observe(ms(t), 1, r, b"ps11", std::iter::empty());
            judged = judged.or(c.slower(ms(t)));
            t += 20;
        }
        let why = judged.expect("half the pace");
        assert!(
            matches!(why, Aside::Slower(b, a) if b == 200.0 && a < 0.95 * 200.0 && a > 95.0),
            "{why:?}"
        );
        assert!(c.step_aside(why));
        assert!(!c.step_aside(why), "once");
        let told = c.tell(5);
        assert_eq!(told.len(), 2, "every worker told again");
        assert!(HotSetFrame::parse(&told[0][1]).unwrap().aside);
    }

    #[test]
    fn a_files_watcher_decides_for_the_files_keys_from_no_key() {
        let set = current();
        let mut c = Census::new(OnlineConfig::file(2), 2);
        for r in 1..=2 {
            c.observe(Timestamp(0), 0, r, b"ps9", [(10, 2), (5, 2)].into_iter());
            c.observe(Timestamp(0), 1, r, b"ps11", [(10, 2), (11, 2)].into_iter());
        }
        let d = c.decide_if_counted(set.server_keys(0), 4).unwrap();
        assert_eq!(
            (d.change, d.from_round, d.aside),
            (true, 65_537, None),
            "installed from the barrier epoch after every round seen: the workers pushed whole"
        );
        assert_eq!(
            d.keys,
            vec![(10, 2), (11, 2)],
            "the file's, not the counted ranking"
        );

        // A worker missing at the deadline: the file's keys all the same,
        // from a round nobody aggregated (nobody did before the decision).
        let mut c = Census::new(OnlineConfig::file(2), 2);
        c.observe(Timestamp(0), 0, 3, b"ps9", [(10, 2)].into_iter());
        c.observe(Timestamp(0), 0, 4, b"ps9", [(11, 2)].into_iter());
        c.observe(Timestamp(0), 1, 3, b"ps11", [(10, 2)].into_iter());
        let now = Timestamp(0) + Duration::from_secs(5);
        let d = c.decide_on_timeout(now, set.server_keys(0), 4).unwrap();
        assert_eq!((d.change, d.from_round), (true, 65_537));
        assert_eq!(d.keys, vec![(10, 2), (11, 2)]);

        // Keys nobody pushes in the same round as another worker: aside.
        let mut c = Census::new(OnlineConfig::file(1), 2);
        c.observe(Timestamp(0), 0, 1, b"ps9", [(1, 2)].into_iter());
        c.observe(Timestamp(0), 1, 1, b"ps11", [(2, 2)].into_iter());
        let d = c.decide_if_counted(set.server_keys(0), 4).unwrap().clone();
        assert_eq!((d.change, d.aside), (false, Some(Aside::NoSaving(0.0))));
        let f = HotSetFrame::parse(&c.tell(5)[0][1]).unwrap();
        assert!(f.aside && f.keys.is_empty(), "ASIDE carries no key");
    }

    #[test]
    fn the_limits_are_settings() {
        let empty = no_keys(8);
        let mut o = OnlineConfig::new(1);
        o.min_saving = 0.0;
        o.max_drift = f64::INFINITY;
        let mut c = Census::new(o, 2);
        c.observe(Timestamp(0), 0, 1, b"ps9", [(1, 2)].into_iter());
        c.observe(Timestamp(0), 1, 9, b"ps11", [(2, 2)].into_iter());
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap();
        assert_eq!(
            (d.aside, d.change),
            (None, false),
            "nothing to aggregate, but no rule to step aside: wait with no key"
        );
    }

    #[test]
    fn the_wait_runs_from_the_last_counted_push() {
        let set = current();
        let mut c = Census::new(OnlineConfig::new(2), 2);
        let wait = Duration::from_secs(5);
        c.observe(Timestamp(0), 0, 1, b"ps9", [(5, 2)].into_iter());
        assert_eq!(c.deadline(), None, "nobody pushed T times yet");
        c.observe(Timestamp(10), 0, 2, b"ps9", [(5, 2)].into_iter());
        assert_eq!(c.deadline(), Some(Timestamp(10) + wait));
        c.observe(Timestamp(20), 0, 3, b"ps9", [(5, 2)].into_iter());
        assert_eq!(c.deadline(), Some(Timestamp(10) + wait), "not counted");
        c.observe(Timestamp(4_000_000), 1, 1, b"ps11", [(5, 2)].into_iter());
        assert_eq!(
            c.deadline(),
            Some(Timestamp(4_000_000) + wait),
            "a slow worker moves it"
        );
        let now = Timestamp(4_000_000) + wait;
        let d = c.decide_on_timeout(now, set.server_keys(0), 4).unwrap();
        assert!(!d.change, "with keys, a missing worker keeps them");
    }

    #[test]
    fn from_no_keys_a_timeout_takes_the_counted_ones() {
        let empty = no_keys(3);
        let mut c = Census::new(OnlineConfig::new(1), 3);
        c.observe(Timestamp(0), 0, 7, b"ps9", [(4, 2), (6, 1)].into_iter());
        c.observe(Timestamp(0), 0, 9, b"ps9", [(8, 1)].into_iter());
        c.observe(Timestamp(0), 1, 7, b"ps11", [(4, 2), (6, 1)].into_iter());
        let now = Timestamp(0) + Duration::from_secs(5);
        let d = c.decide_on_timeout(now, empty.server_keys(0), 3).unwrap();
        assert_eq!(
            (d.change, d.from_round),
            (true, 65_537),
            "the barrier epoch after every round seen"
        );
        assert_eq!(d.keys, vec![(4, 2), (6, 1)]);
    }

    /// Keys 5, 7 and 9 save a copy a round; key 3 (worker 0's alone) saves
    /// none. `weighed`: (key, |g·p| of each push), before each observe.
    fn pgp_census(rank: Rank, weighed: &[(u64, f64)]) -> Decision {
        let empty = no_keys(4);
        let mut c = Census::new(
            OnlineConfig {
                rank,
                ..OnlineConfig::new(2)
            },
            2,
        );
        for r in 1..=3 {
            for (w, id) in [(0, &b"ps9"[..]), (1, &b"ps11"[..])] {
                c.weigh(w, weighed.iter().copied());
                let mut keys = vec![(5, 2), (7, 2), (9, 2)];
                if w == 0 {
                    keys.push((3, 2));
                }
                c.observe(Timestamp(0), w, r, id, keys.into_iter());
            }
        }
        c.decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap()
            .clone()
    }

    #[test]
    fn pgp_ranks_by_gradient_times_parameter() {
        let weighed = [(9, 4.0), (7, 1.0), (3, 100.0)];
        let d = pgp_census(Rank::Pgp, &weighed);
        assert!(d.change);
        assert_eq!(
            d.keys,
            vec![(9, 2), (7, 2)],
            "9 before 7 by Σ|g·p|; 5 never weighed; 3 weighs most but saves nothing"
        );
        assert_eq!(
            pgp_census(Rank::Saving, &weighed).keys,
            vec![(5, 2), (7, 2)],
            "by copies saved (a tie), then the smaller key: the weights do not count"
        );
        assert_eq!(
            pgp_census(Rank::Pgp, &[]).keys,
            vec![(5, 2), (7, 2)],
            "nothing weighed: the keys by copies saved"
        );
        assert_eq!(
            pgp_census(Rank::Pgp, &[(5, 1.0), (7, 1.0), (9, 1.0)]).keys,
            vec![(5, 2), (7, 2)],
            "equal weights: ties by copies saved, then the smaller key"
        );
    }

    #[test]
    fn pgp_weighs_only_counted_pushes() {
        let empty = no_keys(2);
        let pgp = OnlineConfig {
            rank: Rank::Pgp,
            ..OnlineConfig::new(1)
        };
        let mut c = Census::new(pgp, 2);
        c.weigh(0, [(7, 1.0)].into_iter());
        c.observe(Timestamp(0), 0, 1, b"ps9", [(5, 2), (7, 2)].into_iter());
        c.weigh(0, [(5, 50.0)].into_iter());
        assert!(c.weighing());
        c.weigh(1, [(7, 1.0)].into_iter());
        c.observe(Timestamp(0), 1, 1, b"ps11", [(5, 2), (7, 2)].into_iter());
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap();
        assert_eq!(
            d.keys,
            vec![(7, 2)],
            "worker 0's weight after its counted push is not counted"
        );
        assert!(!c.weighing(), "decided: nothing more to weigh");
    }

    #[test]
    fn rank_settings() {
        for (text, rank) in [
            ("", Rank::Saving),
            ("hot", Rank::Saving),
            (" pgp", Rank::Pgp),
        ] {
            assert_eq!(text.parse::<Rank>(), Ok(rank), "{text:?}");
        }
        assert_eq!(Rank::Pgp.to_string(), "pgp");
        assert_eq!(Rank::Saving.to_string(), "hot");
        assert!("PGP2".parse::<Rank>().is_err());
    }

    #[test]
    fn bad_settings_are_named() {
        let mut o = OnlineConfig::new(0);
        assert!(o.validate().unwrap_err().contains("rounds"));
        o.rounds = 3;
        o.tau = 1.5;
        assert!(o.validate().unwrap_err().contains("tau"));
        o.tau = 0.1;
        o.wait = Duration::ZERO;
        assert!(o.validate().unwrap_err().contains("wait"));
        o.wait = Duration::from_secs(1);
        o.max_drift = -1.0;
        assert!(o.validate().unwrap_err().contains("drift"));
        o.max_drift = 2.0;
        o.min_saving = 1.5;
        assert!(o.validate().unwrap_err().contains("saving"));
        o.min_saving = 0.5;
        o.min_pace = -0.1;
        assert!(o.validate().unwrap_err().contains("pace"));
    }
}

#[cfg(test)]
mod stall_tests {
    use super::*;
    use crate::hotset::{HotSet, KeyRanges};

    #[test]
    fn a_stalled_worker_does_not_hold_the_judgement_back() {
        let empty = HotSet::new([], KeyRanges::pslite(1))
            .unwrap()
            .with_capacity(8)
            .unwrap();
        let mut c = Census::new(OnlineConfig::new(4), 2);
        let ms = |m: u64| Timestamp(m * 1000);
        for (r, t) in [(1, 0), (2, 10), (3, 20), (4, 30)] {
            c.observe(ms(t), 0, r, b"ps9", [(1, 2)].into_iter());
            c.observe(ms(t), 1, r, b"ps11", [(1, 2)].into_iter());
        }
        let d = c
            .decide_if_counted(empty.server_keys(0), empty.indices(0))
            .unwrap()
            .clone();
        // With the keys only worker 0 gets one push through, then nothing.
        c.observe(ms(100), 0, d.from_round, b"ps9", std::iter::empty());
        assert_eq!(c.slower(ms(101)), None, "too soon to tell");
        assert!(matches!(c.slower(ms(400)), Some(Aside::Slower(..))));
    }
}
