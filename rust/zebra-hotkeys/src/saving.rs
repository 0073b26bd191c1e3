//! What aggregation saves. The switch sums the copies of a hot key that the
//! workers push in one round into one: a key pushed by `n` workers in a
//! round saves `n − 1` copies of its values, and a key that only one worker
//! pushes per round saves nothing (the switch would only add a hop).
//!
//! - [`RoundCount`] counts a key's pushes and distinct rounds; its
//!   [`saving`](RoundCount::saving) is the copies saved per value. The
//!   online census (`zebra-agent`'s `online.rs`) and `zebra profile` rank
//!   keys by it.
//! - [`RoundNumbers`] numbers a trace's records the way the hot path numbers
//!   rounds: per worker and PS-lite server, one round per push the worker
//!   sends that server. A trace's own round field is the worker's push
//!   count over all servers (the shim records one record per message to a
//!   server) or the app's step; either way the `i`-th push of every worker
//!   to server `s` is round `i` of `s`'s job at the switch.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;

/// The order keys are ranked in by what aggregation saves, each given as
/// `(copies saved per value, pushes, key)`: most copies saved first, then
/// most pushed, then the smaller key. The online census and `zebra profile`
/// both rank by it.
pub fn saving_order(a: (u64, u64, u64), b: (u64, u64, u64)) -> Ordering {
    (b.0, b.1).cmp(&(a.0, a.1)).then(a.2.cmp(&b.2))
}

/// Distinct rounds remembered per key. Pushes of one round further apart
/// than this (in the key's own rounds) would not meet in the switch's few
/// open rounds anyway, and count as another round.
pub const RECENT_ROUNDS: usize = 4;

/// How often a key was pushed, and in how many distinct rounds: every push
/// of it beyond the first in a round is a copy the switch sums away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundCount {
    /// Pushes that carried the key.
    pub pushes: u64,
    /// Distinct rounds among them (over a window of the last
    /// [`RECENT_ROUNDS`] distinct rounds of the key).
    pub rounds: u64,
    /// The last distinct rounds, newest first; the first `seen` are valid.
    recent: [u32; RECENT_ROUNDS],
    seen: u8,
}

impl RoundCount {
    /// One push of the key in round `round` (any `u32`, 0 included).
    pub fn add(&mut self, round: u32) {
        self.pushes += 1;
        let seen = usize::from(self.seen);
        if !self.recent[..seen].contains(&round) {
            self.rounds += 1;
            self.recent.rotate_right(1);
            self.recent[0] = round;
            self.seen = (seen + 1).min(RECENT_ROUNDS) as u8;
        }
    }

    /// Copies saved per value: pushes minus distinct rounds.
    pub fn saving(&self) -> u64 {
        self.pushes - self.rounds
    }
}

/// Numbers records per worker and PS-lite server, as the hot path numbers
/// its rounds (module docs). Records of one worker with the same round
/// field are one push (a push longer than a trace record is split into
/// several with the same round).
#[derive(Debug, Clone)]
pub struct RoundNumbers {
    ranges: Vec<Range<u64>>,
    /// Per (worker, server index): the last round field seen and its number.
    last: HashMap<(u32, u32), (u32, u32)>,
}

impl RoundNumbers {
    /// Numbering for servers owning `ranges` (server `i` owns `ranges[i]`,
    /// ascending and disjoint, as PS-lite's default ranges are).
    pub fn new(ranges: Vec<Range<u64>>) -> RoundNumbers {
        RoundNumbers {
            ranges,
            last: HashMap::new(),
        }
    }

    /// Number of servers.
    pub fn servers(&self) -> usize {
        self.ranges.len()
    }

    /// The server whose range holds `key` (None: no server's, such a key
    /// can never be hot).
    pub fn server_of(&self, key: u64) -> Option<u32> {
        let i = self.ranges.partition_point(|r| r.end <= key);
        self.ranges
            .get(i)
            .filter(|r| r.contains(&key))
            .map(|_| i as u32)
    }

    /// The round number (from 1) of a push of `worker` to `server` (an
    /// index below [`servers`](Self::servers), or that value for the keys
    /// of no server) whose record has round field `field`.
    pub fn round(&mut self, worker: u32, server: u32, field: u32) -> u32 {
        let e = self.last.entry((worker, server)).or_insert((field, 0));
        if e.1 == 0 || e.0 != field {
            *e = (field, e.1.saturating_add(1));
        }
        e.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saving_is_pushes_beyond_the_first_of_each_round() {
        let mut c = RoundCount::default();
        for r in [0, 0, 0, 1, 1, 2] {
            c.add(r);
        }
        assert_eq!((c.pushes, c.rounds, c.saving()), (6, 3, 3));
        let mut alone = RoundCount::default();
        for r in 0..50 {
            alone.add(r);
        }
        assert_eq!(alone.saving(), 0, "one worker a round saves nothing");
        // A round that comes back after more than RECENT_ROUNDS others is
        // another round: those pushes would not meet at the switch.
        let mut late = RoundCount::default();
        for r in [1, 2, 3, 4, 5, 1] {
            late.add(r);
        }
        assert_eq!(late.saving(), 0);
        let mut near = RoundCount::default();
        for r in [1, 2, 3, 1] {
            near.add(r);
        }
        assert_eq!(near.saving(), 1);
    }

    #[test]
    fn rounds_are_numbered_per_worker_and_server() {
        let w = u64::MAX / 2;
        let mut n = RoundNumbers::new(vec![0..w, w..2 * w]);
        assert_eq!(
            (n.server_of(5), n.server_of(w), n.server_of(u64::MAX)),
            (Some(0), Some(1), None)
        );
        // The shim's numbering: one record per message, the worker's message
        // count as round field. Worker 0 pushes to both servers every time,
        // worker 1 skips server 1 once: server 0's rounds still line up.
        let w0: Vec<u32> = [(0, 1), (1, 2), (0, 3), (1, 4), (0, 5)]
            .iter()
            .map(|&(s, f)| n.round(0, s, f))
            .collect();
        let w1: Vec<u32> = [(0, 1), (0, 2), (1, 3), (0, 4)]
            .iter()
            .map(|&(s, f)| n.round(1, s, f))
            .collect();
        assert_eq!(w0, [1, 1, 2, 2, 3]);
        assert_eq!(w1, [1, 2, 1, 3]);
        // Records with the same round field are one push.
        assert_eq!(
            (n.round(2, 0, 9), n.round(2, 0, 9), n.round(2, 0, 10)),
            (1, 1, 2)
        );
    }
}
