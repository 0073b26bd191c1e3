//! A "something changed" signal for blocking calls: notifying costs one
//! atomic increment and one load while nobody waits, and a waiter cannot
//! miss a notification that happens after it read the sequence number.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Sequence-numbered wake-up signal.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    seq: AtomicU64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

/// Moves whenever any socket's readiness may have changed (for `poll`).
pub(crate) static ACTIVITY: Signal = Signal::new();

impl Signal {
    /// A signal nobody has notified yet.
    pub const fn new() -> Signal {
        Signal {
            seq: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// The current sequence number; read it before checking the condition
    /// a waiter waits for.
    pub fn seq(&self) -> u64 {
        self.seq.load(SeqCst)
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
    }

    /// Blocks until the sequence number moves past `seen` or `deadline`
    /// passes. Returns `false` on timeout.
    pub fn wait(&self, seen: u64, deadline: Option<Instant>) -> bool {
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.waiters.fetch_add(1, SeqCst);
        let mut notified = true;
        while self.seq.load(SeqCst) == seen {
            match deadline {
                None => guard = self.cv.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        notified = false;
                        break;
                    }
                    guard = self
                        .cv
                        .wait_timeout(guard, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        self.waiters.fetch_sub(1, SeqCst);
        notified
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_returns_on_notify_and_times_out() {
        let s = Arc::new(Signal::default());
        let seen = s.seq();
        let t = {
            let s = s.clone();
            std::thread::spawn(move || s.wait(seen, None))
        };
        std::thread::sleep(Duration::from_millis(20));
        s.notify();
        assert!(t.join().unwrap());
        let seen = s.seq();
        let d = Instant::now() + Duration::from_millis(20);
        assert!(!s.wait(seen, Some(d)));
        assert!(Instant::now() >= d);
        s.notify();
        assert!(s.wait(seen, Some(d)));
    }
}
