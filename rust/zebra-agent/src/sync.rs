//! Two-stage synchronization (`ZEBRA_SYNC`, `docs/OSP.md`): a worker's
//! `Wait` on a push returns once the push's hot part is settled, while its
//! cold part is still on its way to the server.
//!
//! PS-lite's `Wait(push)` returns when the worker has the push's response
//! from every server it went to. In two-stage mode the worker's library
//! answers the app itself, with the response the server would send, once
//! the push's hot part is **settled**: the zebra-proto worker reported the
//! round done (every hot packet acknowledged by the switch as added, or its
//! pairs handed to the SETTLE message, which follows the cold part on the
//! same connection). The server's real response, when it comes, is taken
//! out of what the app reads.
//!
//! Nothing is applied differently: the cold part and the SETTLE are
//! already on the worker's ordered connection to the server, the switch
//! keeps the hot sum until the server has it, and the server releases the
//! push exactly once (`crate::server`). What a later request of the
//! worker sees is the server's business: its agent delivers a worker's
//! messages in order, so a pull sent after the push is served after it
//! (`SyncMode::TwoStage { staleness: 0 }`); with a staleness `S` a pull
//! may pass up to `S` of its worker's pushes the server still holds.
//!
//! [`EarlyAnswers`] is the worker's part, without I/O: told of each split
//! push ([`EarlyAnswers::on_split`]) and each settled round
//! ([`EarlyAnswers::on_round_done`]), it returns the answers to give the
//! app, and says which server messages to drop ([`EarlyAnswers::on_recv`]).
//! Its first answers are not given early but checked, byte for byte,
//! against the server's; a difference turns two-stage off on that worker,
//! and no push is answered early before every check has passed (a worker
//! that never sees its servers' answers on this path, dmlc's and MXNet's,
//! never answers early).
//!
//! # Barriers
//!
//! A PS-lite barrier tells the other workers that this worker's earlier
//! pushes are done: on libzmq they are then applied, and a pull any worker
//! sends after the barrier sees them. The servers cannot see a barrier (it
//! goes to the scheduler), so the worker holds its BARRIER request until
//! every push it answered early has its server's answer
//! ([`EarlyAnswers::holds`]). The early answer buys the time between the
//! hot part and the server's answer within an iteration; a barrier costs
//! what it cost before.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use zebra_pslite::{
    identity, response, server_answer, server_id, worker_id, Command, Detector, Format,
    FormatChoice,
};

use crate::worker::SplitPush;
use crate::Frames;

/// Most pushes of its worker a pull may pass at a server
/// (`two-stage:S`).
pub const MAX_STALENESS: u32 = 1024;

/// When a worker's push completes (`ZEBRA_SYNC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// `Wait(push)` returns once the server applied the whole push (PS-lite's own).
    #[default]
    Exact,
    /// `Wait(push)` returns once the hot part is settled; a pull is served
    /// with at most `staleness` of its worker's earlier pushes (to that
    /// server) not yet applied.
    TwoStage {
        /// Pushes a pull may pass at the server (0: none).
        staleness: u32,
    },
}

impl SyncMode {
    /// Whether workers answer pushes early.
    pub fn two_stage(self) -> bool {
        matches!(self, SyncMode::TwoStage { .. })
    }

    /// Pushes of its worker a pull may pass at a server.
    pub fn staleness(self) -> u32 {
        match self {
            SyncMode::Exact => 0,
            SyncMode::TwoStage { staleness } => staleness,
        }
    }
}

impl FromStr for SyncMode {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<SyncMode, &'static str> {
        const EXPECTED: &str =
            "expected exact, two-stage or two-stage:S with S a number of pushes \
                                (0..=1024)";
        match s.trim() {
            "" | "exact" => Ok(SyncMode::Exact),
            "two-stage" => Ok(SyncMode::TwoStage { staleness: 0 }),
            other => {
                let s = other.strip_prefix("two-stage:").ok_or(EXPECTED)?;
                match s.parse::<u32>() {
                    Ok(staleness) if staleness <= MAX_STALENESS => {
                        Ok(SyncMode::TwoStage { staleness })
                    }
                    _ => Err(EXPECTED),
                }
            }
        }
    }
}

impl fmt::Display for SyncMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncMode::Exact => f.write_str("exact"),
            SyncMode::TwoStage { staleness: 0 } => f.write_str("two-stage"),
            SyncMode::TwoStage { staleness } => write!(f, "two-stage:{staleness}"),
        }
    }
}

/// A push answered early ([`EarlyAnswers::on_round_done`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyAnswer {
    /// The server the push went to.
    pub server: u16,
    /// The push's PS-lite timestamp.
    pub timestamp: i32,
    /// The answer (`[server identity, meta]`, as the DEALER receives the
    /// server's).
    pub frames: Frames,
}

/// Counters of [`EarlyAnswers`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EarlyAnswerStats {
    /// Pushes answered once their hot part settled.
    pub early: u64,
    /// The server's answers to those, taken out.
    pub swallowed: u64,
    /// Pushes whose server answer came first (checked, or before the
    /// hot part settled), passed to the app.
    pub passed: u64,
    /// Answers checked against the server's and equal.
    pub verified: u64,
    /// Answers checked and different (two-stage off).
    pub mismatches: u64,
}

#[derive(Debug)]
struct Pending {
    job: u16,
    round: u32,
    /// The answer the server would send, as the DEALER receives it.
    answer: Frames,
    /// Checked against the server's instead of given early.
    check: bool,
}

/// A worker's early answers (module docs).
#[derive(Debug)]
pub struct EarlyAnswers {
    rank: u16,
    stream: (i32, i32),
    detector: Detector,
    /// Checks still to start, and started but not passed yet.
    checks: u32,
    unverified: u32,
    off: Option<String>,
    /// Split pushes not answered yet, by (server, timestamp).
    pending: BTreeMap<(u16, i32), Pending>,
    /// The same, by (job, round).
    rounds: BTreeMap<(u16, u32), (u16, i32)>,
    /// Answered early: the server's answer is dropped.
    swallow: BTreeSet<(u16, i32)>,
    stats: EarlyAnswerStats,
}

impl EarlyAnswers {
    /// Worker `rank`'s, for pushes of `stream` (app, customer), its first
    /// `checks` answers checked against the server's.
    pub fn new(rank: u16, format: FormatChoice, stream: (i32, i32), checks: u32) -> EarlyAnswers {
        EarlyAnswers {
            rank,
            stream,
            detector: Detector::new(format),
            checks,
            unverified: 0,
            off: None,
            pending: BTreeMap::new(),
            rounds: BTreeMap::new(),
            swallow: BTreeSet::new(),
            stats: EarlyAnswerStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &EarlyAnswerStats {
        &self.stats
    }

    /// Why early answers stopped, if they did.
    pub fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// Pushes sent and not answered yet (early or by the server).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Server answers still to drop.
    pub fn swallowing(&self) -> usize {
        self.swallow.len()
    }

    /// Whether a message the app sends must wait: a BARRIER request while
    /// a push answered early still waits for its server's answer (module
    /// docs). Send it once this is `false`.
    pub fn holds(&mut self, frames: &[&[u8]]) -> bool {
        if self.swallow.is_empty() {
            return false;
        }
        let Some(meta) = frames.first().and_then(|m| self.detector.parse(m).ok()) else {
            return false;
        };
        meta.1.request && meta.1.control.cmd == Command::Barrier
    }

    /// A push the worker's DEALER sent as `split` (`request`: the app's
    /// message, `[meta, data...]`). Only a push whose hot part goes to the
    /// switch can be answered early.
    pub fn on_split(&mut self, request: &[&[u8]], split: &SplitPush) {
        if !split.to_switch || self.off.is_some() {
            return;
        }
        let Some(&meta) = request.first() else {
            return;
        };
        let Ok((format, meta)) = self.detector.parse(meta) else {
            return;
        };
        if !meta.is_push_request() || (meta.app_id, meta.customer_id) != self.stream {
            return;
        }
        let Ok(answer) = self.answer(format, &meta, split.server) else {
            return;
        };
        let id = (split.server, meta.timestamp);
        if self.pending.contains_key(&id) || self.swallow.contains(&id) {
            log::warn!(
                "worker {}: two pushes with timestamp {} to server {} in flight; the second \
                 is answered by the server",
                self.rank,
                id.1,
                id.0
            );
            return;
        }
        let check = self.checks > 0;
        if check {
            self.checks -= 1;
            self.unverified += 1;
        } else if self.unverified > 0 {
            // The server answers it: early answers start once every check passed.
            return;
        }
        self.rounds.insert((split.job, split.round), id);
        self.pending.insert(
            id,
            Pending {
                job: split.job,
                round: split.round,
                answer,
                check,
            },
        );
    }

    fn answer(
        &self,
        format: Format,
        request: &zebra_pslite::Meta,
        server: u16,
    ) -> zebra_pslite::Result<Frames> {
        let mut msg = response(request, None)?;
        msg.meta.sender = server_id(i32::from(server));
        msg.meta.recver = worker_id(i32::from(self.rank));
        let mut frames = vec![identity(server_id(i32::from(server)))];
        frames.extend(msg.to_frames(format)?);
        Ok(frames)
    }

    /// The zebra-proto worker of `job` reported `round` done: the answer to
    /// give the app now, if the round is a push answered early. (The pull
    /// half may count the push as answered from now on:
    /// `PullAgent::push_settled`.)
    pub fn on_round_done(&mut self, job: u16, round: u32) -> Option<EarlyAnswer> {
        let id = *self.rounds.get(&(job, round))?;
        if self.off.is_some() || self.pending.get(&id)?.check {
            return None;
        }
        self.rounds.remove(&(job, round));
        let p = self.pending.remove(&id)?;
        self.swallow.insert(id);
        self.stats.early += 1;
        Some(EarlyAnswer {
            server: id.0,
            timestamp: id.1,
            frames: p.answer,
        })
    }

    /// A message the DEALER received (`[sender identity, meta, data...]`):
    /// `false` to drop it (the server's answer to a push answered early).
    pub fn on_recv(&mut self, frames: &[Vec<u8>]) -> bool {
        let Some((server, env)) = server_answer(&mut self.detector, frames) else {
            return true;
        };
        let meta = &env.message.meta;
        if meta.request
            || !meta.is_data()
            || !meta.push
            || (meta.app_id, meta.customer_id) != self.stream
        {
            return true;
        }
        let id = (server, meta.timestamp);
        if self.swallow.remove(&id) {
            self.stats.swallowed += 1;
            return false;
        }
        if let Some(p) = self.pending.remove(&id) {
            self.rounds.remove(&(p.job, p.round));
            self.stats.passed += 1;
            if p.check && self.off.is_none() {
                if p.answer == frames {
                    self.stats.verified += 1;
                    self.unverified -= 1;
                } else {
                    self.stats.mismatches += 1;
                    let why = format!(
                        "the answer to push {} of server {server} differs from the server's",
                        id.1
                    );
                    log::error!("zebra: worker {}: {why}: two-stage off", self.rank);
                    self.off = Some(why);
                    self.pending.clear();
                    self.rounds.clear();
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zebra_pslite::{with_kv, DataType, KvData, Message, Meta};

    fn push(ts: i32) -> Frames {
        let mut m = Meta::new();
        (m.head, m.app_id, m.customer_id, m.timestamp) = (0, 0, 0, ts);
        (m.request, m.push) = (true, true);
        let mut kv = KvData::empty(DataType::Float, true);
        kv.push_entry(3, &crate::values::encode(&[1.0, 2.0]));
        with_kv(&m, &kv).unwrap().to_frames(Format::Byteps).unwrap()
    }

    fn split(server: u16, round: u32) -> SplitPush {
        SplitPush {
            server,
            job: 10 + server,
            round,
            frames: Vec::new(),
            pairs: Vec::new(),
            closes: Vec::new(),
            to_switch: true,
        }
    }

    /// The server's answer to `request`, as the DEALER receives it.
    fn server_answer(server: u16, request: &Frames) -> Frames {
        let refs: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
        let m = Message::parse(Format::Byteps, refs[0], &refs[1..]).unwrap();
        let mut frames = vec![identity(server_id(i32::from(server)))];
        frames.extend(
            response(&m.meta, None)
                .unwrap()
                .to_frames(Format::Byteps)
                .unwrap(),
        );
        frames
    }

    fn refs(f: &Frames) -> Vec<&[u8]> {
        f.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn modes_parse_and_print() {
        for (text, mode) in [
            ("", SyncMode::Exact),
            ("exact", SyncMode::Exact),
            ("two-stage", SyncMode::TwoStage { staleness: 0 }),
            ("two-stage:0", SyncMode::TwoStage { staleness: 0 }),
            ("two-stage:3", SyncMode::TwoStage { staleness: 3 }),
        ] {
            assert_eq!(text.parse::<SyncMode>(), Ok(mode), "{text}");
            assert_eq!(mode.to_string().parse::<SyncMode>(), Ok(mode));
        }
        for bad in [
            "two-stage:",
            "two-stage:-1",
            "two-stage:1025",
            "osp",
            "two_stage",
        ] {
            assert!(bad.parse::<SyncMode>().is_err(), "{bad}");
        }
        assert_eq!(SyncMode::default(), SyncMode::Exact);
        assert!(!SyncMode::Exact.two_stage());
        assert_eq!(SyncMode::TwoStage { staleness: 2 }.staleness(), 2);
    }

    #[test]
    fn checked_first_then_answered_early_and_the_server_answer_dropped() {
        let mut e = EarlyAnswers::new(1, FormatChoice::Auto, (0, 0), 1);
        let p1 = push(1);
        e.on_split(&refs(&p1), &split(0, 1));
        assert_eq!(e.on_round_done(10, 1), None, "the first is checked");
        assert!(e.on_recv(&server_answer(0, &p1)));
        assert_eq!(e.stats().verified, 1);

        let p2 = push(3);
        e.on_split(&refs(&p2), &split(0, 2));
        assert_eq!(e.on_round_done(11, 2), None, "another job's round");
        let early = e.on_round_done(10, 2).expect("answered early");
        assert_eq!(
            early.frames,
            server_answer(0, &p2),
            "what the server would send"
        );
        assert_eq!((early.server, early.timestamp), (0, 3));
        assert_eq!(e.on_round_done(10, 2), None, "once");
        assert_eq!((e.pending(), e.swallowing()), (0, 1));
        assert!(!e.on_recv(&server_answer(0, &p2)), "the real one dropped");
        assert!(
            e.on_recv(&server_answer(0, &p2)),
            "a second copy is not ours"
        );
        assert_eq!(e.stats().early, 1);
        assert_eq!(e.stats().swallowed, 1);
    }

    #[test]
    fn a_barrier_waits_for_the_server_answers_of_early_answered_pushes() {
        let mut barrier = Meta::new();
        barrier.request = true;
        barrier.control.cmd = Command::Barrier;
        barrier.control.barrier_group = 4;
        let barrier = Message {
            meta: barrier,
            data: Vec::new(),
        }
        .to_frames(Format::Byteps)
        .unwrap();
        let mut e = EarlyAnswers::new(0, FormatChoice::Auto, (0, 0), 0);
        assert!(!e.holds(&refs(&barrier)), "nothing answered early");
        let p = push(1);
        e.on_split(&refs(&p), &split(0, 1));
        assert!(
            !e.holds(&refs(&barrier)),
            "the app waits for that push itself"
        );
        assert!(e.on_round_done(10, 1).is_some());
        assert!(e.holds(&refs(&barrier)));
        assert!(!e.holds(&refs(&push(2))), "only a barrier waits");
        assert!(!e.on_recv(&server_answer(0, &p)));
        assert!(!e.holds(&refs(&barrier)));
    }

    #[test]
    fn a_server_answer_before_the_hot_part_settles_is_passed_once() {
        let mut e = EarlyAnswers::new(0, FormatChoice::Auto, (0, 0), 0);
        let p = push(5);
        e.on_split(&refs(&p), &split(1, 7));
        assert!(e.on_recv(&server_answer(1, &p)));
        assert_eq!(e.on_round_done(11, 7), None, "already answered");
        assert_eq!((e.pending(), e.swallowing()), (0, 0));
        let mut not_switch = split(1, 8);
        not_switch.to_switch = false;
        e.on_split(&refs(&push(6)), &not_switch);
        assert_eq!(e.pending(), 0, "a push not aggregated is the server's");
    }

    #[test]
    fn a_mismatch_turns_it_off_and_early_answers_are_still_swallowed() {
        let mut e = EarlyAnswers::new(0, FormatChoice::Auto, (0, 0), 1);
        let p1 = push(1);
        let p2 = push(2);
        e.on_split(&refs(&p1), &split(0, 1));
        e.on_split(&refs(&push(7)), &split(0, 9));
        assert_eq!(e.pending(), 1, "not answered early while a check is open");
        e.unverified = 0;
        e.on_split(&refs(&p2), &split(0, 2));
        assert!(e.on_round_done(10, 2).is_some());
        let mut other = server_answer(0, &p1);
        other[1] = server_answer(0, &push(9))[1].clone();
        let mut m = Message::parse(Format::Byteps, &other[1], &[]).unwrap();
        m.meta.timestamp = 1;
        m.meta.head = 7;
        other[1] = m.to_frames(Format::Byteps).unwrap()[0].clone();
        assert!(e.on_recv(&other));
        assert!(e.off().is_some());
        assert_eq!(e.stats().mismatches, 1);
        assert!(!e.on_recv(&server_answer(0, &p2)), "answered early before");
        let p3 = push(3);
        e.on_split(&refs(&p3), &split(0, 3));
        assert_eq!(e.on_round_done(10, 3), None, "off");
    }
}
