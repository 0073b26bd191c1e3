//! `zmq_poll` for this engine's sockets: wait until one of several sockets
//! is readable or writable, sleeping (not spinning) in between.

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::signal::ACTIVITY;
use crate::Socket;

/// The process-wide activity counter: it moves whenever any socket's
/// readiness may have changed. Read it before checking a condition, then
/// [`wait_activity`] with it.
pub fn activity() -> u64 {
    ACTIVITY.seq()
}

/// Blocks until [`activity`] moves past `seen` or `deadline` passes;
/// `false` on timeout.
pub fn wait_activity(seen: u64, deadline: Instant) -> bool {
    ACTIVITY.wait(seen, Some(deadline))
}

/// Moves [`activity`] and wakes its waiters: for readiness that changes
/// outside the engine's sockets (a hook's inbox).
pub fn notify_activity() {
    ACTIVITY.notify();
}

/// Waits until at least one `(socket, events)` item has one of its
/// requested `ZMQ_POLLIN` / `ZMQ_POLLOUT` bits, or `timeout_ms` passes
/// (-1: no limit; 0: look once). Returns each item's events, masked by what
/// it asked for (all zero on timeout). A closed socket fails with
/// `ENOTSOCK`, a terminated context with `ETERM`, as in `zmq_poll`.
pub fn poll(items: &[(&Socket, i32)], timeout_ms: i64) -> Result<Vec<i32>> {
    let deadline = u64::try_from(timeout_ms)
        .ok()
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    loop {
        let seen = ACTIVITY.seq();
        let mut any = false;
        let mut revents = Vec::with_capacity(items.len());
        for (socket, wanted) in items {
            let e = socket.ready_events()? & wanted;
            any |= e != 0;
            revents.push(e);
        }
        if any || timeout_ms == 0 || !ACTIVITY.wait(seen, deadline) {
            return Ok(revents);
        }
    }
}
