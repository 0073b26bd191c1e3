//! What a sender of many-part messages keeps per destination: the round
//! trip ([`RttEstimator`]) and a congestion window over the parts in flight,
//! additive increase and multiplicative decrease as in TCP (ATP paces its
//! aggregates the same way). The switch CPU keeps one per `(job, server)` for
//! its aggregate parts, a server's [`UpdateSender`](crate::UpdateSender) one
//! for its update parts. A round's aggregate or update can be hundreds of
//! parts; sent at once onto a slow link they would overflow its queue and
//! come back as timeouts. Parts beyond the window wait here in order and
//! leave as acknowledgements free the window.

use std::collections::VecDeque;
use std::time::Duration;

use crate::rto::RttEstimator;
use crate::time::Timestamp;

/// Parts in flight to one server before any acknowledgement.
pub const INITIAL_WINDOW: u32 = 8;
/// The most parts in flight to one server.
pub const MAX_WINDOW: u32 = 512;

/// A congestion window: how many packets may be in flight. It grows with
/// acknowledgements — by one per acknowledgement (doubling each round trip)
/// up to the slow-start threshold, by one per window's worth of
/// acknowledgements after it — and halves on a loss, at most once per
/// timeout interval (a burst of losses is one congestion event), never below
/// one packet nor above its maximum.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    window: u32,
    max: u32,
    /// Below it the window grows by one per acknowledgement.
    threshold: u32,
    /// Acknowledgements since the window last grew (above the threshold).
    acked: u32,
    /// When the window was last halved.
    cut_at: Option<Timestamp>,
}

impl Window {
    /// `initial` packets, at most `max`; with `slow_start` the window grows
    /// by one per acknowledgement until the first loss.
    pub(crate) fn new(initial: u32, max: u32, slow_start: bool) -> Window {
        let max = max.max(1);
        let window = initial.clamp(1, max);
        Window {
            window,
            max,
            threshold: if slow_start { max } else { window },
            acked: 0,
            cut_at: None,
        }
    }

    /// Packets allowed in flight now.
    pub(crate) fn get(&self) -> u32 {
        self.window
    }

    /// A packet in flight was acknowledged.
    pub(crate) fn on_ack(&mut self) {
        if self.window < self.threshold {
            self.window = (self.window + 1).min(self.max);
            return;
        }
        self.acked += 1;
        if self.acked >= self.window {
            self.acked = 0;
            self.window = (self.window + 1).min(self.max);
        }
    }

    /// A packet was lost (`interval`: the current timeout): the window
    /// halves, unless it already did within `interval`.
    pub(crate) fn on_loss(&mut self, now: Timestamp, interval: Duration) {
        if self.cut_at.is_none_or(|at| now - at >= interval) {
            self.window = (self.window / 2).max(1);
            self.threshold = self.window;
            self.acked = 0;
            self.cut_at = Some(now);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Flow<K> {
    pub(crate) rtt: RttEstimator,
    window: Window,
    in_flight: u32,
    queue: VecDeque<K>,
}

impl<K> Flow<K> {
    pub(crate) fn new(initial_rto: Duration) -> Flow<K> {
        Flow::with_rtt(RttEstimator::new(initial_rto))
    }

    /// A flow whose round trips `rtt` estimates.
    pub(crate) fn with_rtt(rtt: RttEstimator) -> Flow<K> {
        Flow {
            rtt,
            window: Window::new(INITIAL_WINDOW, MAX_WINDOW, false),
            in_flight: 0,
            queue: VecDeque::new(),
        }
    }

    /// A new part waits for the window.
    pub(crate) fn enqueue(&mut self, key: K) {
        self.queue.push_back(key);
    }

    /// The next waiting part the window lets out (counted in flight).
    pub(crate) fn next_to_send(&mut self) -> Option<K> {
        if self.in_flight >= self.window.get() {
            return None;
        }
        let key = self.queue.pop_front()?;
        self.in_flight += 1;
        Some(key)
    }

    /// Whether a waiting part may leave now.
    pub(crate) fn can_send(&self) -> bool {
        self.in_flight < self.window.get() && !self.queue.is_empty()
    }

    /// A part in flight was acknowledged (`rtt`: its round trip if it was
    /// sent once): one more part per window's worth of acknowledgements.
    pub(crate) fn on_ack(&mut self, rtt: Option<Duration>) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(rtt) = rtt {
            self.rtt.sample(rtt);
        }
        self.window.on_ack();
    }

    /// A part sent once timed out: the timeout backs off and the window
    /// halves, at most once per timeout interval (a burst of losses is one
    /// congestion event).
    pub(crate) fn on_timeout(&mut self, now: Timestamp) {
        self.rtt.on_timeout();
        self.on_loss(now);
    }

    /// A part is known lost (one sent after it was acknowledged and it was
    /// not): the window halves, at most once per timeout interval;
    /// the timeout stays (the flow answers).
    pub(crate) fn on_loss(&mut self, now: Timestamp) {
        self.window.on_loss(now, self.rtt.rto());
    }

    /// A part in flight was given up.
    pub(crate) fn on_abandon(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// How long after the acknowledgement of a part sent later an earlier
    /// one still unacknowledged counts as lost rather than reordered: a
    /// quarter of the round trip (of the timeout before any is measured).
    pub(crate) fn reorder_window(&self) -> Duration {
        self.rtt.srtt().unwrap_or_else(|| self.rtt.rto()) / 4
    }

    /// Parts allowed in flight now.
    pub(crate) fn window(&self) -> u32 {
        self.window.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_lets_parts_out_in_order_and_grows_with_acks() {
        let mut f = Flow::new(Duration::from_millis(2));
        for p in 0..20 {
            f.enqueue(p);
        }
        let first: Vec<u16> = std::iter::from_fn(|| f.next_to_send())
            .map(|k: u16| k)
            .collect();
        assert_eq!(first, (0..8).collect::<Vec<_>>());
        for _ in 0..8 {
            f.on_ack(Some(Duration::from_millis(1)));
        }
        assert_eq!(
            f.window(),
            INITIAL_WINDOW + 1,
            "one more per window of acks"
        );
        let next: Vec<u16> = std::iter::from_fn(|| f.next_to_send())
            .map(|k: u16| k)
            .collect();
        assert_eq!(next, (8..17).collect::<Vec<_>>());
    }

    #[test]
    fn timeouts_halve_the_window_once_per_interval() {
        let mut f: Flow<u16> = Flow::new(Duration::from_millis(2));
        let t = Timestamp::from_millis(10);
        f.on_timeout(t);
        f.on_timeout(t);
        assert_eq!(f.window(), INITIAL_WINDOW / 2, "one cut for a burst");
        f.on_timeout(t + Duration::from_secs(1));
        f.on_timeout(t + Duration::from_secs(2));
        f.on_timeout(t + Duration::from_secs(3));
        assert_eq!(f.window(), 1, "never below one part");
    }
}
