//! A socket's receive queue. Complete messages are appended under a lock;
//! the number of appended parts not yet taken over by the receiver is
//! mirrored in one atomic word, and the receiver's own half has its length
//! in another, so that an empty non-blocking receive is two loads: no
//! lock, no allocation, no system call. The word's top bits carry "closed"
//! and "terminated".
//!
//! The queue has two halves: I/O threads append to `incoming`, the
//! receiver takes from `ready` and swaps the halves when `ready` runs dry,
//! so the two sides meet on a lock, and on the shared counters, only once
//! per batch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::pipe::Pipe;
use crate::stream::{Msg, Parts};

const CLOSED: u64 = 1 << 63;
const TERMINATED: u64 = 1 << 62;
const COUNT: u64 = TERMINATED - 1;

/// The pipe a batch of messages came from and how many messages it
/// holds, so that the pipe can count what its peer still has to read
/// (`ZMQ_RCVHWM`) with one update per batch.
pub(crate) type Source = (Arc<Pipe>, usize);

#[derive(Debug)]
struct Entry {
    data: Bytes,
    more: bool,
    /// On the last part of a batch.
    source: Option<Source>,
}

/// One received part with where it came from.
#[derive(Debug)]
pub(crate) struct Popped {
    pub data: Bytes,
    pub more: bool,
    pub source: Option<Source>,
}

/// The receive queue.
#[derive(Debug, Default)]
pub(crate) struct Inbound {
    /// Parts in `incoming`, and the flags.
    state: AtomicU64,
    /// Parts in `ready`; written under its lock.
    ready_len: AtomicUsize,
    incoming: Mutex<VecDeque<Entry>>,
    ready: Mutex<VecDeque<Entry>>,
}

fn lock(m: &Mutex<VecDeque<Entry>>) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inbound {
    /// Takes the next part. `Ok(None)`: nothing queued.
    #[inline]
    pub fn try_pop(&self) -> Result<Option<Popped>> {
        let state = self.state.load(Ordering::Acquire);
        if state & CLOSED != 0 {
            return Err(Error::NotSocket);
        }
        if state & TERMINATED != 0 {
            return Err(Error::Terminated);
        }
        if state == 0 && self.ready_len.load(Ordering::Relaxed) == 0 {
            return Ok(None);
        }
        let mut ready = lock(&self.ready);
        if ready.is_empty() {
            let mut incoming = lock(&self.incoming);
            std::mem::swap(&mut *ready, &mut *incoming);
            self.state.fetch_sub(ready.len() as u64, Ordering::AcqRel);
        }
        let Some(e) = ready.pop_front() else {
            return Ok(None);
        };
        self.ready_len.store(ready.len(), Ordering::Relaxed);
        drop(ready);
        Ok(Some(Popped {
            data: e.data,
            more: e.more,
            source: e.source,
        }))
    }

    /// Appends one whole message (`prefix` first, if any).
    pub fn push(&self, prefix: Option<Bytes>, parts: Msg, source: Option<Arc<Pipe>>) {
        let mut queue = lock(&self.incoming);
        let n = parts.len() + usize::from(prefix.is_some());
        let mut source = source.map(|p| (p, 1));
        for (i, data) in prefix.into_iter().chain(parts).enumerate() {
            let last = i + 1 == n;
            queue.push_back(Entry {
                data,
                more: !last,
                source: if last { source.take() } else { None },
            });
        }
        self.state.fetch_add(n as u64, Ordering::Release);
    }

    /// Appends `messages` whole messages from one pipe under one lock,
    /// taking their parts out of `parts` (`prefix` before each message, if
    /// any).
    pub fn push_batch(
        &self,
        prefix: Option<&Bytes>,
        parts: &mut Parts,
        messages: usize,
        source: &Arc<Pipe>,
    ) {
        let mut queue = lock(&self.incoming);
        let before = queue.len();
        let mut first = true;
        for (data, more) in parts.drain(..) {
            if first {
                if let Some(id) = prefix {
                    queue.push_back(Entry {
                        data: id.clone(),
                        more: true,
                        source: None,
                    });
                }
            }
            first = !more;
            queue.push_back(Entry {
                data,
                more,
                source: None,
            });
        }
        let added = queue.len() - before;
        if let Some(last) = queue.back_mut().filter(|_| added > 0) {
            last.source = Some((source.clone(), messages));
        }
        self.state.fetch_add(added as u64, Ordering::Release);
    }

    /// Whether a part is waiting.
    pub fn readable(&self) -> bool {
        let s = self.state.load(Ordering::Acquire);
        s & (CLOSED | TERMINATED) == 0
            && (s & COUNT > 0 || self.ready_len.load(Ordering::Relaxed) > 0)
    }

    /// Makes every later receive fail with `ETERM`.
    pub fn set_terminated(&self) {
        self.state.fetch_or(TERMINATED, Ordering::AcqRel);
    }

    /// Makes every later receive fail with `ENOTSOCK` and drops what is
    /// queued, returning the sources of the dropped messages.
    pub fn close(&self) -> Vec<Source> {
        self.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut ready = lock(&self.ready);
        let mut incoming = lock(&self.incoming);
        let sources = ready
            .drain(..)
            .chain(incoming.drain(..))
            .filter_map(|e| e.source)
            .collect();
        self.ready_len.store(0, Ordering::Relaxed);
        self.state.fetch_and(CLOSED | TERMINATED, Ordering::AcqRel);
        sources
    }

    /// Whether `set_terminated` was called.
    pub fn is_terminated(&self) -> bool {
        self.state.load(Ordering::Acquire) & TERMINATED != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_out_in_order_with_more_flags() {
        let q = Inbound::default();
        assert!(q.try_pop().unwrap().is_none());
        q.push(
            Some(Bytes::from_static(b"id")),
            vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")].into(),
            None,
        );
        q.push(None, vec![Bytes::from_static(b"c")].into(), None);
        assert!(q.readable());
        let got: Vec<(Bytes, bool)> = std::iter::from_fn(|| q.try_pop().unwrap())
            .map(|p| (p.data, p.more))
            .collect();
        assert_eq!(
            got,
            vec![
                (Bytes::from_static(b"id"), true),
                (Bytes::from_static(b"a"), true),
                (Bytes::from_static(b"b"), false),
                (Bytes::from_static(b"c"), false),
            ]
        );
        assert!(!q.readable());
    }

    #[test]
    fn terminated_and_closed_win_over_queued_parts() {
        let q = Inbound::default();
        q.push(None, vec![Bytes::from_static(b"x")].into(), None);
        q.set_terminated();
        assert!(matches!(q.try_pop(), Err(Error::Terminated)));
        assert!(!q.readable());
        q.close();
        assert!(matches!(q.try_pop(), Err(Error::NotSocket)));
    }
}
