//! Outgoing bytes as a queue of chunks.
//!
//! Headers and small bodies are coalesced into one buffer so that a burst of
//! small messages leaves as few large writes; a large body is queued as the
//! caller's own `Bytes` (a reference count, no copy), ready for `writev`.
//! The coalescing buffer never grows by copying: when it is full it is
//! queued as a chunk and a new one is started (or the old allocation is
//! reused once everything in it has been written and released).

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::wire::frame::FrameHeader;

/// Bodies up to this size are copied into the coalescing buffer.
pub const COPY_THRESHOLD: usize = 8 * 1024;

/// Size of each coalescing buffer.
const TAIL_CHUNK: usize = 64 * 1024;

/// Room made for an emitter of unknown length (commands); it may grow
/// beyond this.
const EMIT_ROOM: usize = 512;

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

    /// Makes room for `incoming` bytes in the coalescing buffer: a full
    /// buffer is queued as a chunk and a new one started.
    fn reserve_tail(&mut self, incoming: usize) {
        if self.tail.capacity() - self.tail.len() >= incoming {
            return;
        }
        if !self.tail.is_empty() {
            self.chunks.push_back(self.tail.split().freeze());
        }
        self.tail.reserve(incoming.max(TAIL_CHUNK));
    }

    /// Appends bytes that are copied into the coalescing buffer.
    pub fn push_copy(&mut self, bytes: &[u8]) {
        self.reserve_tail(bytes.len());
        self.tail.extend_from_slice(bytes);
        self.queued += bytes.len();
    }

    /// Gives access to the coalescing buffer for an emitter; `queued` is
    /// updated from the buffer's growth.
    pub fn with_tail(&mut self, emit: impl FnOnce(&mut BytesMut)) {
        self.reserve_tail(EMIT_ROOM);
        let before = self.tail.len();
        emit(&mut self.tail);
        self.queued += self.tail.len() - before;
    }

    /// Appends a frame: header copied, body copied if small, shared if large.
    pub fn push_frame(&mut self, header: FrameHeader, body: &Bytes) {
        let copy = body.len() <= COPY_THRESHOLD;
        self.reserve_tail(header.header_len() + if copy { body.len() } else { 0 });
        let before = self.tail.len();
        header.emit(&mut self.tail);
        self.queued += self.tail.len() - before;
        if copy {
            self.tail.extend_from_slice(body);
            self.queued += body.len();
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
    fn the_coalescing_buffer_is_sealed_not_grown() {
        let mut q = OutputQueue::new();
        let body = Bytes::from(vec![5u8; 1000]);
        let n = 3 * TAIL_CHUNK / 1009 + 1;
        for _ in 0..n {
            q.push_frame(FrameHeader::message(1000, false), &body);
        }
        let mut sizes = Vec::new();
        let mut all = Vec::new();
        while let Some(c) = q.pop() {
            sizes.push(c.len());
            all.extend_from_slice(&c);
        }
        assert!(sizes.len() >= 3, "{sizes:?}");
        assert!(sizes.iter().all(|&s| s <= TAIL_CHUNK), "{sizes:?}");
        assert_eq!(all.len(), n * 1009);
        for frame in all.chunks(1009) {
            assert_eq!(&frame[..9], &[0x02, 0, 0, 0, 0, 0, 0, 0x03, 0xE8][..]);
            assert!(frame[9..].iter().all(|&b| b == 5));
        }
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
