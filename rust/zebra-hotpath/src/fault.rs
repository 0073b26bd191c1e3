//! Seeded faults on the send path: drop, duplicate, delay (and so reorder).
//!
//! Every node's datagrams pass through a [`FaultInjector`] when a
//! [`HotLoss`] spec is given (`ZEBRA_HOT_LOSS`, `zebra switch --loss`, or a
//! test). The injector only decides; the node sends what it hands back and
//! asks again at [`FaultInjector::next_due`] for held (delayed) datagrams.
//! The same spec, stream and sequence of sends give the same faults.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::Duration;

use zebra_config::HotLoss;
use zebra_proto::rng::SplitMix64;
use zebra_proto::Timestamp;

/// What the injector did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Datagrams offered.
    pub offered: u64,
    /// Datagrams dropped.
    pub dropped: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Copies held back before sending.
    pub delayed: u64,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    due: Timestamp,
    order: u64,
    to: SocketAddr,
    bytes: Vec<u8>,
}

/// One node's fault decisions (see the module documentation).
#[derive(Debug)]
pub struct FaultInjector {
    spec: HotLoss,
    rng: SplitMix64,
    held: BinaryHeap<Reverse<Held>>,
    order: u64,
    stats: FaultStats,
}

/// Which stream of faults a node draws from: the spec's seed mixed with
/// its role (`b's'` switch, `b'w'` worker, `b'v'` server), job and rank, so
/// nodes sharing one spec do not drop in lockstep.
pub fn stream(role: u8, job: u16, rank: u16) -> u64 {
    (u64::from(role) << 32) | (u64::from(job) << 16) | u64::from(rank)
}

impl FaultInjector {
    /// An injector for `spec`, drawing from `stream` (see [`stream`]).
    pub fn new(spec: HotLoss, stream: u64) -> FaultInjector {
        let mut mix = SplitMix64::new(stream);
        FaultInjector {
            spec,
            rng: SplitMix64::new(spec.seed ^ mix.next_u64()),
            held: BinaryHeap::new(),
            order: 0,
            stats: FaultStats::default(),
        }
    }

    fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.rng.below(1_000_000) < u64::from(ppm)
    }

    /// Decides one datagram's fate: the copies to send now come back;
    /// delayed copies are held until [`take_due`](Self::take_due).
    pub fn admit(
        &mut self,
        now: Timestamp,
        to: SocketAddr,
        bytes: Vec<u8>,
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        self.stats.offered += 1;
        if self.chance(self.spec.drop_ppm) {
            self.stats.dropped += 1;
            return Vec::new();
        }
        let mut copies = vec![bytes];
        if self.chance(self.spec.duplicate_ppm) {
            self.stats.duplicated += 1;
            copies.push(copies[0].clone());
        }
        let mut now_out = Vec::with_capacity(copies.len());
        for b in copies {
            if self.chance(self.spec.delay_ppm) {
                self.stats.delayed += 1;
                let wait = 1 + self.rng.below(self.spec.max_delay_us.max(1));
                self.order += 1;
                self.held.push(Reverse(Held {
                    due: now + Duration::from_micros(wait),
                    order: self.order,
                    to,
                    bytes: b,
                }));
            } else {
                now_out.push((to, b));
            }
        }
        now_out
    }

    /// Held datagrams whose delay is over, in due order.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        while self.held.peek().is_some_and(|Reverse(h)| h.due <= now) {
            if let Some(Reverse(h)) = self.held.pop() {
                out.push((h.to, h.bytes));
            }
        }
        out
    }

    /// When the next held datagram is due.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.held.peek().map(|Reverse(h)| h.due)
    }

    /// Counters.
    pub fn stats(&self) -> FaultStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    fn run(spec: HotLoss, n: u64) -> (Vec<(u64, Vec<u8>)>, FaultStats) {
        let mut f = FaultInjector::new(spec, stream(b'w', 1, 0));
        let mut sent = Vec::new();
        for i in 0..n {
            let now = Timestamp(i * 100);
            for (_, b) in f.take_due(now) {
                sent.push((i, b));
            }
            for (_, b) in f.admit(now, addr(), i.to_be_bytes().to_vec()) {
                sent.push((i, b));
            }
        }
        for (_, b) in f.take_due(Timestamp(u64::MAX)) {
            sent.push((n, b));
        }
        (sent, f.stats())
    }

    #[test]
    fn off_passes_everything_in_order() {
        let (sent, st) = run(HotLoss::default(), 100);
        assert_eq!(sent.len(), 100);
        assert!(sent.windows(2).all(|w| w[0].1 < w[1].1));
        assert_eq!(st.dropped + st.duplicated + st.delayed, 0);
    }

    #[test]
    fn rates_are_close_and_seeded() {
        let spec: HotLoss = "drop=0.1,dup=0.05,delay=0.2,delay_ms=1,seed=3"
            .parse()
            .unwrap();
        let (a, st) = run(spec, 20_000);
        let (b, _) = run(spec, 20_000);
        assert_eq!(a, b, "same seed, same faults");
        let rate = |x: u64| x as f64 / 20_000.0;
        assert!((rate(st.dropped) - 0.1).abs() < 0.01, "{st:?}");
        assert!((rate(st.duplicated) - 0.045).abs() < 0.01, "{st:?}");
        assert!(rate(st.delayed) > 0.15, "{st:?}");
        assert_eq!(
            a.len() as u64,
            20_000 - st.dropped + st.duplicated,
            "every copy comes out once"
        );
        assert!(
            a.windows(2).any(|w| w[0].1 > w[1].1),
            "delays reorder datagrams"
        );
        let other = FaultInjector::new(spec, stream(b'w', 1, 1)).rng.next_u64();
        let this = FaultInjector::new(spec, stream(b'w', 1, 0)).rng.next_u64();
        assert_ne!(other, this, "ranks draw from different streams");
    }

    #[test]
    fn held_datagrams_wait_for_their_time() {
        let spec: HotLoss = "delay=1,delay_ms=2".parse().unwrap();
        let mut f = FaultInjector::new(spec, 0);
        assert!(f.admit(Timestamp(0), addr(), vec![1]).is_empty());
        let due = f.next_due().unwrap();
        assert!(due > Timestamp(0) && due <= Timestamp(2000));
        assert!(f.take_due(Timestamp(due.0 - 1)).is_empty());
        assert_eq!(f.take_due(due), vec![(addr(), vec![1])]);
        assert_eq!(f.next_due(), None);
    }
}
