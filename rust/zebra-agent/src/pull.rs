//! The pull half on a worker (`docs/PULL.md`): a copy of each server's
//! updated hot rows, kept from the updates the server sends through the
//! switch, and the rule that says when a pull of hot keys is answered from
//! it instead of by the server.
//!
//! Pure logic, no I/O and no clock: the shim tells [`WorkerPulls`] what the
//! worker sent and received (pushes and their answers, updates, gaps, new
//! hot sets) and asks it, for each pull to a server, what to do
//! ([`WorkerPulls::plan`]).
//!
//! # The rule
//!
//! A server's hot values move only from one round's values to the next
//! (its library releases a round's requests together and announces any
//! other change with a BREAK first), and a round closes only when every
//! worker pushed it. So while a worker has no push in flight to server
//! `s`, and its last push to `s` was round `c`, aggregated, `s`'s hot
//! values are those after round `c`. A pull of hot key `k` is answered from
//! the copy when the copy is current at `c` (it applied, with no gap, the
//! updates through round `c`'s) and holds `k`.
//!
//! Rows enter the copy from updates, and from the server's answers to
//! pulls planned while the copy was current ([`Fill`]). A gap in the chain
//! of updates, a BREAK, or a new hot set drops every row of that server.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use zebra_proto::Timestamp;

/// The pull half's settings (`docs/PULL.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullConfig {
    /// Server: a push whose round some worker has not pushed yet waits at
    /// most this long before the server's pull half stands aside (rounds
    /// that do not line up: `Aside`-like, logged).
    pub gate: Duration,
    /// Worker: the longest a pull waits for the update of its round (the
    /// wait itself is twice the learned delay of updates after answers).
    /// Long: on a server link at its limit, one update takes as long as the
    /// workers' pulls it replaces take for one of them (measured on the
    /// testbed at 4 Mbit/s: about 175 ms for 1000 rows), and a pull that
    /// gives up waiting adds its whole answer to that link.
    pub wait: Duration,
    /// Worker: a copy that applied no update for this long is dropped.
    pub expiry: Duration,
}

impl Default for PullConfig {
    fn default() -> PullConfig {
        PullConfig {
            gate: Duration::from_millis(500),
            wait: Duration::from_secs(1),
            expiry: Duration::from_secs(2),
        }
    }
}

/// One update of a server, complete and in chain order, as
/// `zebra_proto`'s receiver hands it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowUpdate {
    /// The server's update number (+1 per update).
    pub seq: u32,
    /// The round after which these are the server's values (0 with a BREAK).
    pub round: u32,
    /// Values changed outside rounds: drop every row held for the server.
    pub brk: bool,
    /// `(key, value bytes as the server's pull answer holds them)`.
    pub entries: Vec<(u64, Vec<u8>)>,
}

/// Why a pull, or part of one, goes to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Miss {
    /// No hot key in the pull.
    Cold,
    /// The worker has not pushed to the server yet.
    NoPush,
    /// A push to the server is not answered yet.
    PushInFlight,
    /// The last push to the server was not aggregated.
    NotAggregated,
    /// The update of the worker's last round did not arrive in time.
    NotCurrent,
    /// The copy is ahead of the worker's last round (the server's rounds
    /// moved without this worker: not expected, never answered locally).
    Ahead,
    /// The copy does not hold the key.
    NotHeld,
}

/// Which rows an answer of the server may add to the copy: valid only if
/// nothing changed the copy between the plan and the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    server: u16,
    generation: u64,
}

/// What to do with a pull to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullPlan {
    /// Send it to the server as it is; `fill` when its answer may enter
    /// the copy.
    Server { why: Miss, fill: Option<Fill> },
    /// Answer it here: the value bytes of every key, in the pull's order.
    Local(Vec<Vec<u8>>),
    /// Answer the keys at `local` (positions in the pull, with their value
    /// bytes) here and send the others (`remote`, positions) to the server,
    /// then merge.
    Split {
        local: Vec<(usize, Vec<u8>)>,
        remote: Vec<usize>,
        fill: Fill,
    },
    /// The update of the worker's last round may still come: ask again
    /// when it does, or at `until` at the latest. `held`: the positions of
    /// the hot keys the copy holds now (answered here once it is current).
    Wait { until: Timestamp, held: Vec<usize> },
}

/// Counters of the pull half on a worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullStats {
    /// Pulls answered here entirely.
    pub local: u64,
    /// Pulls split between the copy and the server.
    pub split: u64,
    /// Pulls sent whole to the server, by why.
    pub to_server: BTreeMap<Miss, u64>,
    /// Hot keys answered here.
    pub hits: u64,
    /// Hot keys asked of the server, by why.
    pub misses: BTreeMap<Miss, u64>,
    /// Plans that waited for an update.
    pub waits: u64,
    /// Updates applied.
    pub updates: u64,
    /// Rows dropped by gaps, BREAKs and new hot sets (each drop counted once).
    pub drops: u64,
    /// Rows added from the server's answers.
    pub filled: u64,
    /// Answers that could not fill (the copy changed meanwhile).
    pub stale_fills: u64,
}

/// One server's copy, and what the worker has pushed to it.
#[derive(Debug, Default)]
struct Copy {
    /// The last update applied (none: no chain yet, or since a drop).
    seq: Option<u32>,
    /// Its round (0 after a BREAK: current at no round).
    round: u32,
    rows: HashMap<u64, Vec<u8>>,
    /// Pushes not answered yet, by PS-lite timestamp: their round, `None`
    /// when not aggregated.
    in_flight: HashMap<i32, Option<u32>>,
    /// The last push sent: its round, `None` when not aggregated.
    last_push: Option<Option<u32>>,
    /// +1 on every change of the copy's chain (fills of older plans are
    /// refused).
    generation: u64,
    /// When the last update was applied.
    heard: Timestamp,
    /// When the last push was answered, until its round's update comes.
    answered: Option<(u32, Timestamp)>,
    /// Smoothed time from a push's answer to its round's update.
    delay: Option<Duration>,
}

impl Copy {
    fn drop_rows(&mut self, stats: &mut PullStats) {
        if !self.rows.is_empty() || self.seq.is_some() {
            stats.drops += 1;
        }
        self.rows.clear();
        self.seq = None;
        self.round = 0;
        self.generation += 1;
    }

    /// Rule 1 and 2: the round at which the copy must be current, or why not.
    fn current(&self) -> Result<u32, Miss> {
        if !self.in_flight.is_empty() {
            return Err(Miss::PushInFlight);
        }
        match self.last_push {
            None => Err(Miss::NoPush),
            Some(None) => Err(Miss::NotAggregated),
            Some(Some(c)) => match self.seq {
                Some(_) if self.round == c => Ok(c),
                Some(_) if self.round > c => Err(Miss::Ahead),
                _ => Err(Miss::NotCurrent),
            },
        }
    }

    /// Whether the update of the last round is worth waiting for: the
    /// chain runs (an update with values, not a BREAK, came last).
    fn running(&self) -> bool {
        self.seq.is_some() && self.round > 0
    }

    /// How long a pull waits for its round's update: twice the smoothed
    /// delay of updates after answers, plus a millisecond, at most `max`.
    fn wait(&self, max: Duration) -> Duration {
        match self.delay {
            Some(d) => (d * 2 + Duration::from_millis(1)).min(max),
            None => max,
        }
    }
}

/// The pull half of one worker: a copy per server.
#[derive(Debug)]
pub struct WorkerPulls {
    config: PullConfig,
    copies: HashMap<u16, Copy>,
    stats: PullStats,
}

impl WorkerPulls {
    /// With `config.wait`, the longest a pull waits for the update of the
    /// worker's last round, and `config.expiry`: a copy that applied no
    /// update for that long is dropped, because a server that gave up
    /// announcing a BREAK to this worker may have changed its values since
    /// (shorter than the server's time to give up).
    pub fn new(config: PullConfig) -> WorkerPulls {
        WorkerPulls {
            config,
            copies: HashMap::new(),
            stats: PullStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &PullStats {
        &self.stats
    }

    /// Rows held for `server`.
    pub fn rows(&self, server: u16) -> usize {
        self.copies.get(&server).map_or(0, |c| c.rows.len())
    }

    /// The worker sent a push to `server` with PS-lite timestamp `ts`:
    /// round `round` of its job when aggregated, else `None`. A push not
    /// aggregated changes hot values outside the chain: the copy goes.
    pub fn push_sent(&mut self, server: u16, ts: i32, round: Option<u32>) {
        let copy = self.copies.entry(server).or_default();
        copy.in_flight.insert(ts, round);
        copy.last_push = Some(round);
        if round.is_none() {
            copy.drop_rows(&mut self.stats);
        }
    }

    /// `server` answered the push with timestamp `ts` at `now`.
    pub fn push_answered(&mut self, now: Timestamp, server: u16, ts: i32) {
        if let Some(c) = self.copies.get_mut(&server) {
            if let Some(Some(round)) = c.in_flight.remove(&ts) {
                if c.round < round {
                    c.answered = Some((round, now));
                }
            }
        }
    }

    /// An update of `server`, the next of its chain (or the first seen),
    /// applied at `now`.
    pub fn on_update(&mut self, now: Timestamp, server: u16, update: RowUpdate) {
        let copy = self.copies.entry(server).or_default();
        match copy.seq {
            Some(s) if update.seq <= s => return,
            Some(s) if update.seq != s.wrapping_add(1) => copy.drop_rows(&mut self.stats),
            _ => {}
        }
        if update.brk {
            copy.drop_rows(&mut self.stats);
        }
        copy.seq = Some(update.seq);
        copy.round = if update.brk { 0 } else { update.round };
        copy.generation += 1;
        copy.heard = now;
        if let Some((round, at)) = copy.answered {
            if round <= copy.round {
                let d = now.saturating_since(at);
                copy.delay = Some(copy.delay.map_or(d, |old| (old * 7 + d) / 8));
                copy.answered = None;
            }
        }
        for (key, bytes) in update.entries {
            copy.rows.insert(key, bytes);
        }
        self.stats.updates += 1;
    }

    /// Updates of `server` were lost for good: its copy goes (it starts
    /// again from the next update).
    pub fn on_gap(&mut self, server: u16) {
        self.copies
            .entry(server)
            .or_default()
            .drop_rows(&mut self.stats);
    }

    /// `server`'s hot set changed, or it stepped aside: its copy goes.
    pub fn reset(&mut self, server: u16) {
        self.on_gap(server);
    }

    /// A pull of `keys` to `server`, first planned at `since` (the time
    /// the app sent it). `is_hot` says which keys are `server`'s hot keys.
    pub fn plan(
        &mut self,
        now: Timestamp,
        since: Timestamp,
        server: u16,
        keys: &[u64],
        is_hot: impl Fn(u64) -> bool,
    ) -> PullPlan {
        let hot: Vec<usize> = (0..keys.len()).filter(|&i| is_hot(keys[i])).collect();
        if hot.is_empty() {
            return self.miss(Miss::Cold, 0, None);
        }
        let copy = self.copies.entry(server).or_default();
        if copy.seq.is_some() && now.saturating_since(copy.heard) > self.config.expiry {
            copy.drop_rows(&mut self.stats);
        }
        let fill = Fill {
            server,
            generation: copy.generation,
        };
        let until = since + copy.wait(self.config.wait);
        match copy.current() {
            Ok(_) => {}
            Err(Miss::NotCurrent) if copy.running() && now < until => {
                self.stats.waits += 1;
                let held = hot
                    .into_iter()
                    .filter(|&i| copy.rows.contains_key(&keys[i]))
                    .collect();
                return PullPlan::Wait { until, held };
            }
            Err(why) => return self.miss(why, hot.len() as u64, None),
        }
        let mut local = Vec::new();
        let mut remote = Vec::new();
        for (i, &key) in keys.iter().enumerate() {
            match copy.rows.get(&key) {
                Some(bytes) if is_hot(key) => local.push((i, bytes.clone())),
                _ => remote.push(i),
            }
        }
        let held = local.len() as u64;
        let not_held = hot.len() as u64 - held;
        if local.is_empty() {
            return self.miss(Miss::NotHeld, not_held, Some(fill));
        }
        self.stats.hits += held;
        if not_held > 0 {
            *self.stats.misses.entry(Miss::NotHeld).or_default() += not_held;
        }
        if remote.is_empty() {
            self.stats.local += 1;
            return PullPlan::Local(local.into_iter().map(|(_, b)| b).collect());
        }
        self.stats.split += 1;
        PullPlan::Split {
            local,
            remote,
            fill,
        }
    }

    /// For a pull that waited ([`PullPlan::Wait`]) with the rest of it
    /// sent to the server: the values of `keys` (position, key) once the
    /// copy is current and holds them all (counted as hits), else `None`.
    pub fn current_rows(
        &mut self,
        server: u16,
        keys: &[(usize, u64)],
    ) -> Option<Vec<(usize, Vec<u8>)>> {
        let copy = self.copies.get(&server)?;
        copy.current().ok()?;
        let rows: Option<Vec<(usize, Vec<u8>)>> = keys
            .iter()
            .map(|&(i, k)| copy.rows.get(&k).map(|b| (i, b.clone())))
            .collect();
        if rows.is_some() {
            self.stats.hits += keys.len() as u64;
        }
        rows
    }

    /// A waiting pull whose update did not come in time: its held keys are
    /// asked of the server after all.
    pub fn gave_up(&mut self, keys: u64) {
        *self.stats.misses.entry(Miss::NotCurrent).or_default() += keys;
    }

    fn miss(&mut self, why: Miss, hot_keys: u64, fill: Option<Fill>) -> PullPlan {
        *self.stats.to_server.entry(why).or_default() += 1;
        if hot_keys > 0 {
            *self.stats.misses.entry(why).or_default() += hot_keys;
        }
        PullPlan::Server { why, fill }
    }

    /// The server's answer to a pull planned with `fill`: its hot rows
    /// `(key, value bytes)` enter the copy if nothing changed it since.
    pub fn fill<'a>(&mut self, fill: Fill, rows: impl IntoIterator<Item = (u64, &'a [u8])>) {
        let Some(copy) = self.copies.get_mut(&fill.server) else {
            return;
        };
        if copy.generation != fill.generation || copy.current().is_err() {
            self.stats.stale_fills += 1;
            return;
        }
        for (key, bytes) in rows {
            copy.rows.insert(key, bytes.to_vec());
            self.stats.filled += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: PullConfig = PullConfig {
        gate: Duration::from_millis(500),
        wait: Duration::from_millis(5),
        expiry: Duration::from_millis(100),
    };

    fn t(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn row(v: u8) -> Vec<u8> {
        vec![v; 4]
    }

    fn update(seq: u32, round: u32, entries: &[(u64, u8)]) -> RowUpdate {
        RowUpdate {
            seq,
            round,
            brk: false,
            entries: entries.iter().map(|&(k, v)| (k, row(v))).collect(),
        }
    }

    fn hot(k: u64) -> bool {
        k < 100
    }

    /// Pushes round `round` to server 0 and gets it answered.
    fn round_trip(p: &mut WorkerPulls, ts: i32, round: u32) {
        p.push_sent(0, ts, Some(round));
        p.push_answered(t(0), 0, ts);
    }

    #[test]
    fn answers_from_the_update_of_its_last_round() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30), (5, 50)]));
        assert_eq!(
            p.plan(t(0), t(0), 0, &[3, 5], hot),
            PullPlan::Local(vec![row(30), row(50)])
        );
        assert_eq!(p.stats().hits, 2);
        assert_eq!(p.stats().local, 1);
    }

    #[test]
    fn cold_keys_and_unheld_hot_keys_go_to_the_server_and_fill() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        let PullPlan::Split {
            local,
            remote,
            fill,
        } = p.plan(t(0), t(0), 0, &[3, 7, 500], hot)
        else {
            panic!("expected a split");
        };
        assert_eq!(local, vec![(0, row(30))]);
        assert_eq!(remote, vec![1, 2]);
        // The server's answer brings key 7 (the shim passes hot rows only).
        p.fill(fill, [(7u64, &row(70)[..])]);
        assert_eq!(
            p.plan(t(0), t(0), 0, &[7], hot),
            PullPlan::Local(vec![row(70)])
        );
        assert_eq!(
            p.plan(t(0), t(0), 0, &[500], hot),
            PullPlan::Server {
                why: Miss::Cold,
                fill: None
            }
        );
    }

    #[test]
    fn a_push_in_flight_or_not_aggregated_sends_the_pull_to_the_server() {
        let mut p = WorkerPulls::new(CONFIG);
        assert!(matches!(
            p.plan(t(0), t(0), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::NoPush,
                ..
            }
        ));
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        p.push_sent(0, 2, Some(2));
        assert!(matches!(
            p.plan(t(0), t(0), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::PushInFlight,
                ..
            }
        ));
        p.push_answered(t(0), 0, 2);
        p.push_sent(0, 3, None);
        p.push_answered(t(0), 0, 3);
        assert!(matches!(
            p.plan(t(0), t(0), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::NotAggregated,
                ..
            }
        ));
        assert_eq!(p.rows(0), 0, "a push not aggregated drops the copy");
    }

    #[test]
    fn waits_for_the_update_of_its_round_then_gives_up() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        round_trip(&mut p, 2, 2);
        // No delay learned yet: the configured wait.
        let mut slow = WorkerPulls::new(CONFIG);
        slow.push_sent(0, 1, Some(1));
        slow.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        slow.push_answered(t(0), 0, 1);
        slow.push_sent(0, 2, Some(2));
        slow.push_answered(t(0), 0, 2);
        assert_eq!(
            slow.plan(t(1), t(1), 0, &[3], hot),
            PullPlan::Wait {
                until: t(6),
                held: vec![0]
            }
        );
        // Round 1's update came as its push was answered: twice that, plus 1 ms.
        assert_eq!(
            p.plan(t(1), t(1), 0, &[3], hot),
            PullPlan::Wait {
                until: t(2),
                held: vec![0]
            }
        );
        assert!(matches!(
            p.plan(t(2), t(1), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::NotCurrent,
                ..
            }
        ));
        // Round 2's update arrives: key 3 unchanged in round 2 is still current.
        p.on_update(t(0), 0, update(2, 2, &[(4, 40)]));
        assert_eq!(
            p.plan(t(7), t(7), 0, &[3, 4], hot),
            PullPlan::Local(vec![row(30), row(40)])
        );
    }

    #[test]
    fn a_gap_or_a_break_drops_the_copy_and_the_chain_restarts() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        round_trip(&mut p, 2, 2);
        // Update 2 lost: update 3 (round 3 after this worker's push 3) shows the gap.
        round_trip(&mut p, 3, 3);
        p.on_update(t(0), 0, update(3, 3, &[(4, 40)]));
        assert_eq!(p.rows(0), 1, "only the rows of the update after the gap");
        assert!(matches!(
            p.plan(t(0), t(0), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::NotHeld,
                ..
            }
        ));
        let mut brk = update(4, 0, &[]);
        brk.brk = true;
        p.on_update(t(0), 0, brk);
        assert_eq!(p.rows(0), 0);
        // After a BREAK the copy is current at no round, and no update is due.
        assert!(matches!(
            p.plan(t(0), t(0), 0, &[4], hot),
            PullPlan::Server {
                why: Miss::NotCurrent,
                ..
            }
        ));
        p.on_gap(0);
        p.on_update(t(0), 0, update(1, 3, &[]));
        assert_eq!(p.stats().drops, 3);
    }

    #[test]
    fn a_fill_planned_before_a_change_is_refused() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        let PullPlan::Server { fill: Some(f), .. } = p.plan(t(0), t(0), 0, &[8], hot) else {
            panic!("expected a miss with a fill");
        };
        p.push_sent(0, 2, Some(2));
        p.push_answered(t(0), 0, 2);
        p.on_update(t(0), 0, update(2, 2, &[(8, 81)]));
        p.fill(f, [(8u64, &row(80)[..])]);
        assert_eq!(p.stats().stale_fills, 1);
        assert_eq!(
            p.plan(t(0), t(0), 0, &[8], hot),
            PullPlan::Local(vec![row(81)])
        );
    }

    #[test]
    fn a_copy_that_hears_nothing_expires() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        assert!(matches!(
            p.plan(t(100), t(100), 0, &[3], hot),
            PullPlan::Local(_)
        ));
        assert!(matches!(
            p.plan(t(101), t(101), 0, &[3], hot),
            PullPlan::Server {
                why: Miss::NotCurrent,
                ..
            }
        ));
        assert_eq!(p.rows(0), 0);
    }

    #[test]
    fn duplicate_updates_change_nothing() {
        let mut p = WorkerPulls::new(CONFIG);
        round_trip(&mut p, 1, 1);
        p.on_update(t(0), 0, update(1, 1, &[(3, 30)]));
        p.on_update(t(0), 0, update(1, 1, &[(3, 99)]));
        assert_eq!(
            p.plan(t(0), t(0), 0, &[3], hot),
            PullPlan::Local(vec![row(30)])
        );
        assert_eq!(p.stats().updates, 1);
    }
}
