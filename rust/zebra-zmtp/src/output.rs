//! Outgoing bytes as a queue of chunks.
//!
//! Headers and small bodies are coalesced into one buffer so that a burst of
//! small messages leaves as few large writes; a large body is queued as the
//! caller's own `Bytes` (a reference count, no copy), ready for `writev`.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::wire::frame::FrameHeader;

/// Bodies up to this size are copied into the coalescing buffer.
pub const COPY_THRESHOLD: usize = 8 * 1024;

/// Queue of bytes waiting to be written to the transport.
#[derive(Debug, Default)]
pub struct OutputQueue {
    chunks: VecDeque<Bytes>,
    tail: BytesMut,
    queued: usize,
}

impl OutputQueue {
    /// An empty queue.
    pub fn new() -> OutputQueue {
        OutputQueue::default()
    }

    /// Total bytes queued.
    pub fn len(&self) -> usize {
        self.queued
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Appends bytes that are copied into the coalescing buffer.
    pub fn push_copy(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        self.queued += bytes.len();
    }

    /// Gives access to the coalescing buffer for an emitter; `queued` is
    /// updated from the buffer's growth.
    pub fn with_tail(&mut self, emit: impl FnOnce(&mut BytesMut)) {
        let before = self.tail.len();
        emit(&mut self.tail);
        self.queued += self.tail.len() - before;
    }

    /// Appends a frame: header copied, body copied if small, shared if large.
    pub fn push_frame(&mut self, header: FrameHeader, body: &Bytes) {
        self.with_tail(|t| header.emit(t));
        if body.len() <= COPY_THRESHOLD {
            self.push_copy(body);
        } else {
            if !self.tail.is_empty() {
                self.chunks.push_back(self.tail.split().freeze());
            }
            self.chunks.push_back(body.clone());
            self.queued += body.len();
        }
    }

    /// Takes the next chunk to write, in order.
    pub fn pop(&mut self) -> Option<Bytes> {
        let chunk = match self.chunks.pop_front() {
            Some(c) => c,
            None if !self.tail.is_empty() => self.tail.split().freeze(),
            None => return None,
        };
        self.queued -= chunk.len();
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut OutputQueue) -> (Vec<u8>, usize) {
        let mut all = Vec::new();
        let mut n = 0;
        while let Some(c) = q.pop() {
            all.extend_from_slice(&c);
            n += 1;
        }
        assert!(q.is_empty());
        (all, n)
    }

    #[test]
    fn small_frames_coalesce() {
        let mut q = OutputQueue::new();
        for _ in 0..10 {
            q.push_frame(FrameHeader::message(3, true), &Bytes::from_static(b"abc"));
        }
        assert_eq!(q.len(), 50);
        let (bytes, chunks) = drain(&mut q);
        assert_eq!(chunks, 1);
        assert_eq!(&bytes[..5], b"\x01\x03abc");
    }

    #[test]
    fn big_bodies_are_shared_not_copied() {
        let big = Bytes::from(vec![9u8; COPY_THRESHOLD + 1]);
        let mut q = OutputQueue::new();
        q.push_copy(b"x");
        q.push_frame(FrameHeader::message(big.len() as u64, false), &big);
        q.push_copy(b"y");
        assert_eq!(q.len(), 1 + 9 + big.len() + 1);
        let first = q.pop().unwrap();
        assert_eq!(first.len(), 10);
        let second = q.pop().unwrap();
        assert_eq!(second.as_ptr(), big.as_ptr());
        assert_eq!(&q.pop().unwrap()[..], b"y");
        assert!(q.pop().is_none());
        assert_eq!(q.len(), 0);
    }
}
