//! Time as the caller gives it: the state machines never read a clock.
//!
//! [`Timestamp`] is a count of microseconds since an origin the caller
//! chooses (process start, simulation start). Intervals are
//! [`std::time::Duration`].

use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, in microseconds since the caller's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The origin.
    pub const ZERO: Timestamp = Timestamp(0);

    /// A timestamp `us` microseconds after the origin.
    pub const fn from_micros(us: u64) -> Timestamp {
        Timestamp(us)
    }

    /// A timestamp `ms` milliseconds after the origin.
    pub const fn from_millis(ms: u64) -> Timestamp {
        Timestamp(ms * 1000)
    }

    /// Microseconds since the origin.
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

fn micros_of(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(micros_of(d)))
    }
}

impl Sub<Timestamp> for Timestamp {
    type Output = Duration;
    fn sub(self, earlier: Timestamp) -> Duration {
        self.saturating_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp::from_millis(2);
        assert_eq!(t + Duration::from_micros(5), Timestamp(2005));
        assert_eq!(t - Timestamp(500), Duration::from_micros(1500));
        assert_eq!(Timestamp(1) - t, Duration::ZERO);
        assert_eq!(
            Timestamp(u64::MAX) + Duration::from_secs(1),
            Timestamp(u64::MAX)
        );
    }
}
