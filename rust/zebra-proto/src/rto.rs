//! Retransmission timeouts from measured round trips (RFC 6298's estimator).
//!
//! A worker keeps one [`RttEstimator`] for its switch, the switch one per
//! server it sends aggregates to. The configured timeout (`worker_rto`,
//! `aggregate_rto`) is the first one, used until a round trip is measured;
//! after that the timeout follows `srtt + 4 rttvar`, so a loaded host or a
//! slow server link gets longer timeouts instead of a resend storm, and a fast
//! network recovers from a loss quickly.
//!
//! Callers sample only answers they can attribute to a packet's first copy:
//! packets never retransmitted (Karn's rule), or, for workers, an answer the
//! switch marks as not a repeat (its first answer for that packet). A timeout
//! of a packet sent once doubles the timeout for what is sent next (at most
//! `2^MAX_BACKOFF_SHIFT` times) until an answer is measured again, so a path
//! slower than the first timeout is learned instead of resent forever.

use std::time::Duration;

/// The shortest timeout the estimator gives: a software switch sharing a
/// loaded host's cores answers within microseconds most of the time and
/// within milliseconds when it waits for a core; shorter timeouts resend
/// packets that were never lost.
pub const MIN_RTO: Duration = Duration::from_millis(5);
/// The longest timeout the estimator gives (unless the configured first
/// timeout is longer).
pub const MAX_RTO: Duration = Duration::from_secs(1);
/// Backoff doublings, of one packet's timeout and of the estimator's after
/// timeouts: at most 16 × each.
pub const MAX_BACKOFF_SHIFT: u32 = 4;

/// Smoothed round-trip time and its variation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    initial: Duration,
    /// Bounds of the timeout.
    min: Duration,
    max: Duration,
    srtt: Option<Duration>,
    rttvar: Duration,
    /// Doublings since the last sample (timeouts of packets sent once).
    shift: u32,
    samples: u64,
}

impl RttEstimator {
    /// An estimator whose timeout is `initial` until the first sample.
    pub fn new(initial: Duration) -> RttEstimator {
        RttEstimator::bounded(initial, MIN_RTO, MAX_RTO.max(initial))
    }

    /// An estimator whose timeout is `initial` until the first sample, then
    /// at least `min`; never above `max`.
    pub fn bounded(initial: Duration, min: Duration, max: Duration) -> RttEstimator {
        RttEstimator {
            initial,
            min,
            max: max.max(min),
            srtt: None,
            rttvar: Duration::ZERO,
            shift: 0,
            samples: 0,
        }
    }

    /// One measured round trip (of a packet sent once).
    pub fn sample(&mut self, rtt: Duration) {
        self.samples += 1;
        self.shift = 0;
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
    }

    /// A packet sent once timed out: what is sent next waits twice as long,
    /// until the next sample.
    pub fn on_timeout(&mut self) {
        self.shift = (self.shift + 1).min(MAX_BACKOFF_SHIFT);
    }

    /// The longest timeout ([`MAX_RTO`], or the first timeout if longer,
    /// unless [`bounded`](Self::bounded) says otherwise).
    fn cap(&self) -> Duration {
        self.max
    }

    /// The timeout of a packet sent for the first time.
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => self.initial,
            Some(srtt) => (srtt + self.rttvar * 4).max(self.min),
        };
        (base * (1u32 << self.shift)).min(self.cap())
    }

    /// The timeout after the `retries`-th resend: doubled each time, at most
    /// `2^MAX_BACKOFF_SHIFT` times [`rto`](Self::rto), and never above the cap.
    pub fn backoff(&self, retries: u32) -> Duration {
        (self.rto() * (1u32 << retries.min(MAX_BACKOFF_SHIFT))).min(self.cap())
    }

    /// The smoothed round trip, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The round trips' smoothed mean deviation (zero before a sample).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// Round trips measured.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_configured_timeout_holds_until_a_sample() {
        let e = RttEstimator::new(200 * MS);
        assert_eq!((e.rto(), e.srtt(), e.samples()), (200 * MS, None, 0));
        assert_eq!(e.backoff(1), 400 * MS);
        assert_eq!(e.backoff(9), MAX_RTO, "capped");
    }

    #[test]
    fn timeouts_double_until_a_sample() {
        let mut e = RttEstimator::new(2 * MS);
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.rto(), 8 * MS);
        for _ in 0..10 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), 32 * MS, "at most 16 times");
        assert_eq!(e.backoff(4), 512 * MS);
        e.sample(10 * MS);
        assert_eq!(e.rto(), 30 * MS, "a sample ends the backoff");
    }

    #[test]
    fn follows_the_measured_round_trip() {
        let mut e = RttEstimator::new(200 * MS);
        e.sample(4 * MS);
        assert_eq!(e.rto(), 12 * MS, "first sample: srtt + 4 * srtt / 2");
        for _ in 0..100 {
            e.sample(4 * MS);
        }
        assert_eq!(e.srtt(), Some(4 * MS));
        assert_eq!(
            e.rto(),
            MIN_RTO,
            "steady round trips shrink the variation to the floor"
        );
        for _ in 0..50 {
            e.sample(40 * MS);
        }
        assert!(
            e.rto() >= 40 * MS,
            "a slower path lengthens it: {:?}",
            e.rto()
        );
    }

    #[test]
    fn clamped_between_the_bounds() {
        let mut fast = RttEstimator::new(2 * MS);
        for _ in 0..50 {
            fast.sample(Duration::from_micros(30));
        }
        assert_eq!(fast.rto(), MIN_RTO);
        let mut slow = RttEstimator::new(2 * MS);
        slow.sample(Duration::from_secs(5));
        assert_eq!(slow.rto(), MAX_RTO);
        let mut patient = RttEstimator::new(Duration::from_secs(3));
        patient.sample(Duration::from_secs(5));
        assert_eq!(
            patient.rto(),
            Duration::from_secs(3),
            "a longer first timeout raises the cap"
        );
    }
}
