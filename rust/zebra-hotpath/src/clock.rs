//! The monotonic clock the state machines are fed from.

use std::time::{Duration, Instant};

use zebra_proto::Timestamp;

/// Microseconds since the clock was made, as a [`Timestamp`].
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn new() -> Clock {
        Clock {
            origin: Instant::now(),
        }
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        Timestamp(u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// How long from now until `at` (zero if it has passed).
    pub fn until(&self, at: Timestamp) -> Duration {
        at.saturating_since(self.now())
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic() {
        let c = Clock::new();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(2));
        let b = c.now();
        assert!(b.micros() >= a.micros() + 2000);
        assert_eq!(c.until(a), Duration::ZERO);
        assert!(c.until(b + Duration::from_secs(1)) > Duration::from_millis(900));
    }
}
