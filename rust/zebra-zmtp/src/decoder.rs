//! Streaming frame decoder: turns a byte stream, split anywhere, into frames.
//!
//! Input comes as borrowed bytes (`&[u8]`: each body is copied once, into a
//! buffer of its own) or as shared [`Bytes`] (a message body that lies
//! whole inside the input becomes a slice of it, without copying). A body
//! that is still incomplete when the input ends is gathered in a buffer of
//! its own, which the caller may also fill straight from a reader
//! ([`FrameDecoder::read_body`]), so that a large body is copied only by
//! the kernel.
//!
//! Size limits are checked as soon as a header is complete. A body buffer
//! grows only as bytes actually arrive (at most doubling, never beyond the
//! announced size), so a hostile length field cannot make us allocate memory
//! the peer has not sent; [`Limits::reserve_ahead`] lets a caller that
//! reads large bodies directly reserve address space further ahead (memory
//! that is reserved but not yet written is not committed).

use std::io::{self, BufWriter, Read, Write};

use bytes::{Buf, Bytes};

use crate::error::{Error, Result};
use crate::wire::frame::{flags, Frame, FrameHeader, MAX_HEADER_LEN};

/// Smallest body allocation step for large frames.
const MIN_GROWTH: usize = 64 * 1024;

/// Room a whole-body buffer has beyond the body: `std`'s copy into a
/// `BufWriter` reads only while at least its default buffer size (8 KiB)
/// is free, and would otherwise flush.
const WHOLE_SLACK: usize = 16 * 1024;

/// What the decoder accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest message frame body; `None` is unlimited (ZMQ_MAXMSGSIZE = -1).
    pub max_message_frame: Option<u64>,
    /// Largest command frame body.
    pub max_command_frame: u64,
    /// Whether message (non-command) frames are allowed yet. Before the
    /// handshake they are refused on their header, before any body arrives.
    pub allow_messages: bool,
    /// How many bytes beyond those received a body buffer may reserve at
    /// once (never beyond the announced size). 0: grow by doubling.
    pub reserve_ahead: usize,
}

/// Bytes the decoder consumes: borrowed (bodies are copied) or shared
/// (message bodies are sliced).
pub trait Input {
    /// The bytes not consumed yet.
    fn remaining(&self) -> &[u8];
    /// Consumes `n` bytes.
    fn advance(&mut self, n: usize);
    /// Consumes `n` bytes and returns them as [`Bytes`]: a copy for
    /// borrowed input, a slice of the same storage for shared input.
    fn take_bytes(&mut self, n: usize) -> Bytes;
}

impl Input for &[u8] {
    fn remaining(&self) -> &[u8] {
        self
    }

    fn advance(&mut self, n: usize) {
        *self = &self[n..];
    }

    fn take_bytes(&mut self, n: usize) -> Bytes {
        let b = Bytes::copy_from_slice(&self[..n]);
        *self = &self[n..];
        b
    }
}

impl Input for Bytes {
    fn remaining(&self) -> &[u8] {
        self
    }

    fn advance(&mut self, n: usize) {
        Buf::advance(self, n);
    }

    fn take_bytes(&mut self, n: usize) -> Bytes {
        self.split_to(n)
    }
}

/// A body's storage.
#[derive(Debug)]
enum BodyBuf {
    /// Grows as bytes arrive (at most doubling); reads into it with
    /// `read_to_end`, which offers the kernel 8 KiB at first and doubles
    /// that after each read it fills.
    Growing(Vec<u8>),
    /// Holds the whole body (and [`WHOLE_SLACK`] more) from the start,
    /// where [`Limits::reserve_ahead`] allows it. `std`'s copy into a
    /// `BufWriter` offers the kernel all its free room in each read, so
    /// every read of the body is one system call; nothing is ever flushed
    /// (the body and the slack fit).
    Whole(BufWriter<io::Sink>),
}

#[derive(Debug)]
struct Body {
    more: bool,
    command: bool,
    size: usize,
    buf: BodyBuf,
}

impl Body {
    fn new(more: bool, command: bool, size: usize) -> Body {
        Body {
            more,
            command,
            size,
            buf: BodyBuf::Growing(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match &self.buf {
            BodyBuf::Growing(v) => v.len(),
            BodyBuf::Whole(w) => w.buffer().len(),
        }
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        match &self.buf {
            BodyBuf::Growing(v) => v.capacity(),
            BodyBuf::Whole(w) => w.capacity(),
        }
    }

    fn missing(&self) -> usize {
        self.size - self.len()
    }

    /// Makes room for `incoming` more bytes (and more, per the growth
    /// policy): the whole body at once when `reserve_ahead` covers it.
    fn grow(&mut self, incoming: usize, reserve_ahead: usize) {
        let BodyBuf::Growing(v) = &mut self.buf else {
            return;
        };
        let len = v.len();
        let needed = len + incoming;
        if needed <= v.capacity() {
            return;
        }
        if len == 0 && reserve_ahead >= self.size {
            self.buf = BodyBuf::Whole(BufWriter::with_capacity(
                self.size + WHOLE_SLACK,
                io::sink(),
            ));
            return;
        }
        let target = needed
            .max(v.capacity().saturating_mul(2))
            .max(MIN_GROWTH)
            .max(len.saturating_add(reserve_ahead))
            .min(self.size);
        v.reserve_exact(target - len);
    }

    /// Appends received bytes (at most what is missing).
    fn extend(&mut self, data: &[u8], reserve_ahead: usize) {
        self.grow(data.len(), reserve_ahead);
        match &mut self.buf {
            BodyBuf::Growing(v) => v.extend_from_slice(data),
            BodyBuf::Whole(w) => {
                let buffered = w.write_all(data);
                debug_assert!(buffered.is_ok(), "a whole-body buffer never flushes");
            }
        }
    }

    /// Reads at most what is missing from `reader`.
    fn read_from<R: Read + ?Sized>(
        &mut self,
        reader: &mut R,
        reserve_ahead: usize,
    ) -> io::Result<usize> {
        let missing = self.missing();
        self.grow(missing.min(MIN_GROWTH), reserve_ahead);
        let before = self.len();
        let result = match &mut self.buf {
            BodyBuf::Growing(v) => {
                let room = (v.capacity() - v.len()).min(missing);
                reader.take(room as u64).read_to_end(v).map(drop)
            }
            BodyBuf::Whole(w) => io::copy(&mut reader.take(missing as u64), w).map(drop),
        };
        let n = self.len() - before;
        if n == 0 {
            return result.map(|()| 0);
        }
        Ok(n)
    }

    fn into_frame(self) -> Frame {
        let body = match self.buf {
            BodyBuf::Growing(v) => Bytes::from(v),
            BodyBuf::Whole(w) => {
                let (_, buf) = w.into_parts();
                Bytes::from(buf.unwrap_or_else(|p| p.into_inner()))
            }
        };
        Frame {
            more: self.more,
            command: self.command,
            body,
        }
    }
}

/// Incremental frame decoder.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    header: [u8; MAX_HEADER_LEN],
    header_len: usize,
    body: Option<Body>,
}

impl FrameDecoder {
    /// A decoder at a frame boundary.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Whether the decoder sits at a frame boundary (no partial frame held).
    pub fn is_idle(&self) -> bool {
        self.header_len == 0 && self.body.is_none()
    }

    /// Bytes of the current partial frame received so far.
    pub fn partial_len(&self) -> usize {
        self.header_len + self.body.as_ref().map_or(0, Body::len)
    }

    /// Bytes still missing from the body of the message (non-command)
    /// frame being received; 0 if there is none.
    pub fn message_body_missing(&self) -> usize {
        match &self.body {
            Some(b) if !b.command => b.missing(),
            _ => 0,
        }
    }

    /// Reads straight from `reader` into the body of the message frame
    /// being received, at most the bytes it misses, with as many reads as
    /// it takes until a read returns 0, fails or would block. Returns the
    /// bytes read and the frame if it is now complete. As with
    /// [`Read::read`], an error means nothing was read: an error that comes
    /// after some bytes is dropped, and the next read meets it again. Reads
    /// nothing when [`message_body_missing`](Self::message_body_missing) is 0.
    ///
    /// With a reader that does not initialize the buffer it is given
    /// (`std`'s sockets and files), the body is written only by the kernel.
    pub fn read_body<R: Read + ?Sized>(
        &mut self,
        reader: &mut R,
        limits: &Limits,
    ) -> io::Result<(usize, Option<Frame>)> {
        let Some(body) = self.body.as_mut().filter(|b| !b.command) else {
            return Ok((0, None));
        };
        let n = body.read_from(reader, limits.reserve_ahead)?;
        if body.missing() > 0 {
            return Ok((n, None));
        }
        let frame = self.body.take().map(Body::into_frame);
        Ok((n, frame))
    }

    /// Consumes bytes from the front of `input` until one frame is complete
    /// (returned) or `input` is exhausted (`Ok(None)`). A command body is
    /// always copied, so that what a command leaves behind (a peer's
    /// identity) does not keep shared input alive.
    pub fn decode<I: Input + ?Sized>(
        &mut self,
        input: &mut I,
        limits: &Limits,
    ) -> Result<Option<Frame>> {
        loop {
            if let Some(mut body) = self.body.take() {
                let available = input.remaining();
                let n = body.missing().min(available.len());
                body.extend(&available[..n], limits.reserve_ahead);
                input.advance(n);
                if body.missing() > 0 {
                    self.body = Some(body);
                    return Ok(None);
                }
                return Ok(Some(body.into_frame()));
            }

            let Some(&first) = input.remaining().first() else {
                return Ok(None);
            };
            if self.header_len == 0 {
                FrameHeader::check_flags(first)?;
                if first & flags::COMMAND == 0 && !limits.allow_messages {
                    return Err(Error::MessageBeforeReady);
                }
            }
            let flags_byte = if self.header_len == 0 {
                first
            } else {
                self.header[0]
            };
            let need = FrameHeader::len_for_flags(flags_byte);
            let available = input.remaining();
            let n = (need - self.header_len).min(available.len());
            self.header[self.header_len..self.header_len + n].copy_from_slice(&available[..n]);
            self.header_len += n;
            input.advance(n);
            if self.header_len < need {
                return Ok(None);
            }
            self.header_len = 0;
            let (h, _) = FrameHeader::parse(&self.header[..need])?;
            let limit = if h.command {
                Some(limits.max_command_frame)
            } else {
                limits.max_message_frame
            };
            if let Some(limit) = limit {
                if h.size > limit {
                    return Err(Error::FrameTooLarge {
                        size: h.size,
                        limit,
                    });
                }
            }
            let size = usize::try_from(h.size).map_err(|_| Error::FrameTooLarge {
                size: h.size,
                limit: usize::MAX as u64,
            })?;
            let available = input.remaining();
            if size <= available.len() {
                let body = if h.command {
                    let b = Bytes::copy_from_slice(&available[..size]);
                    input.advance(size);
                    b
                } else {
                    input.take_bytes(size)
                };
                return Ok(Some(Frame {
                    more: h.more,
                    command: h.command,
                    body,
                }));
            }
            self.body = Some(Body::new(h.more, h.command, size));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    const OPEN: Limits = Limits {
        max_message_frame: None,
        max_command_frame: 1 << 20,
        allow_messages: true,
        reserve_ahead: 0,
    };

    fn encode(frames: &[Frame]) -> Vec<u8> {
        let mut out = BytesMut::new();
        for f in frames {
            f.emit(&mut out);
        }
        out.to_vec()
    }

    fn decode_all(bytes: &[u8], step: usize, limits: &Limits) -> Result<Vec<Frame>> {
        let mut d = FrameDecoder::new();
        let mut got = Vec::new();
        for chunk in bytes.chunks(step.max(1)) {
            let mut input = chunk;
            while let Some(f) = d.decode(&mut input, limits)? {
                got.push(f);
            }
            assert!(input.is_empty());
        }
        assert!(d.is_idle());
        Ok(got)
    }

    fn sample() -> Vec<Frame> {
        vec![
            Frame {
                more: true,
                command: false,
                body: Bytes::new(),
            },
            Frame {
                more: true,
                command: false,
                body: Bytes::from_static(b"hello"),
            },
            Frame {
                more: false,
                command: false,
                body: Bytes::from((0..1000u32).map(|i| i as u8).collect::<Vec<_>>()),
            },
            Frame {
                more: false,
                command: true,
                body: Bytes::from_static(b"\x04PING\x00\x00"),
            },
        ]
    }

    #[test]
    fn every_step_size_gives_the_same_frames() {
        let frames = sample();
        let bytes = encode(&frames);
        for step in 1..=bytes.len() {
            assert_eq!(
                decode_all(&bytes, step, &OPEN).unwrap(),
                frames,
                "step {step}"
            );
        }
    }

    #[test]
    fn message_limit_is_checked_on_the_header() {
        let limits = Limits {
            max_message_frame: Some(999),
            ..OPEN
        };
        let bytes = encode(&sample());
        assert_eq!(
            decode_all(&bytes, 1, &limits),
            Err(Error::FrameTooLarge {
                size: 1000,
                limit: 999
            })
        );
        let limits = Limits {
            max_message_frame: Some(1000),
            ..OPEN
        };
        assert!(decode_all(&bytes, 7, &limits).is_ok());
    }

    #[test]
    fn command_limit() {
        let limits = Limits {
            max_command_frame: 6,
            ..OPEN
        };
        assert_eq!(
            decode_all(&encode(&sample()), 3, &limits),
            Err(Error::FrameTooLarge { size: 7, limit: 6 })
        );
    }

    #[test]
    fn huge_length_does_not_allocate() {
        let mut d = FrameDecoder::new();
        let mut input: &[u8] = &[
            0x02, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3,
        ];
        assert_eq!(d.decode(&mut input, &OPEN), Ok(None));
        assert_eq!(d.partial_len(), 3);
        let cap = d.body.as_ref().map(Body::capacity).unwrap();
        assert!(cap <= MIN_GROWTH, "capacity {cap}");
        let mut input: &[u8] = &[0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        let r = FrameDecoder::new().decode(&mut input, &OPEN);
        if usize::BITS < 64 {
            assert!(matches!(r, Err(Error::FrameTooLarge { .. })));
        } else {
            assert_eq!(r, Ok(None));
        }
    }

    #[test]
    fn growth_never_exceeds_the_frame() {
        let size = 3 * MIN_GROWTH + 17;
        let body = Bytes::from(vec![7u8; size]);
        let bytes = encode(&[Frame {
            more: false,
            command: false,
            body: body.clone(),
        }]);
        let mut d = FrameDecoder::new();
        for chunk in bytes.chunks(1000) {
            let mut input = chunk;
            if let Some(f) = d.decode(&mut input, &OPEN).unwrap() {
                assert_eq!(f.body, body);
            }
            if let Some(b) = &d.body {
                assert!(b.capacity() <= size);
                assert!(b.capacity() <= (2 * b.len()).max(MIN_GROWTH));
            }
        }
    }

    /// A reader that counts the reads that reach it.
    struct Counting<'a> {
        data: &'a [u8],
        reads: usize,
    }

    impl Read for Counting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            self.data.read(buf)
        }
    }

    #[test]
    fn direct_reads_reserve_ahead_as_configured() {
        let size = 300_000;
        let body: Vec<u8> = (0..size).map(|i| i as u8).collect();
        let bytes = encode(&[Frame {
            more: false,
            command: false,
            body: Bytes::from(body.clone()),
        }]);
        for (reserve_ahead, first_capacity) in [(1 << 20, size + WHOLE_SLACK), (0, MIN_GROWTH)] {
            let limits = Limits {
                reserve_ahead,
                ..OPEN
            };
            let mut d = FrameDecoder::new();
            let mut head: &[u8] = &bytes[..9 + 10];
            assert_eq!(d.decode(&mut head, &limits), Ok(None));
            assert_eq!(d.message_body_missing(), size - 10);
            assert_eq!(d.body.as_ref().unwrap().capacity(), first_capacity);
            let mut rest = Counting {
                data: &bytes[9 + 10..],
                reads: 0,
            };
            let mut got = None;
            while got.is_none() {
                got = d.read_body(&mut rest, &limits).unwrap().1;
            }
            let whole = reserve_ahead >= size;
            assert_eq!(rest.reads == 1, whole, "{} reads", rest.reads);
            assert_eq!(got.unwrap().body, body);
            assert!(d.is_idle() && rest.data.is_empty());
        }
    }

    #[test]
    fn a_whole_body_buffer_takes_split_input_and_reads() {
        let size = 100_000;
        let body: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
        let bytes = encode(&[Frame {
            more: true,
            command: false,
            body: Bytes::from(body.clone()),
        }]);
        let limits = Limits {
            reserve_ahead: size,
            ..OPEN
        };
        let mut d = FrameDecoder::new();
        let mut got = None;
        for (i, chunk) in bytes.chunks(7_001).enumerate() {
            if i % 2 == 0 || d.message_body_missing() == 0 {
                let mut input = chunk;
                if let Some(f) = d.decode(&mut input, &limits).unwrap() {
                    got = Some(f);
                }
                assert!(input.is_empty());
            } else {
                let mut reader = chunk;
                let (n, f) = d.read_body(&mut reader, &limits).unwrap();
                assert_eq!(n, chunk.len());
                got = got.or(f);
            }
        }
        let f = got.unwrap();
        assert!(f.more);
        assert_eq!(f.body, body);
        assert!(d.is_idle());
    }

    #[test]
    fn bad_flags_fail_on_the_first_byte() {
        let mut input: &[u8] = &[0x08];
        assert_eq!(
            FrameDecoder::new().decode(&mut input, &OPEN),
            Err(Error::ReservedFlags(0x08))
        );
        let mut input: &[u8] = &[0x05];
        assert_eq!(
            FrameDecoder::new().decode(&mut input, &OPEN),
            Err(Error::CommandWithMore)
        );
    }

    #[test]
    fn messages_refused_on_header_when_not_allowed() {
        let limits = Limits {
            allow_messages: false,
            ..OPEN
        };
        let mut input: &[u8] = &[0x02];
        assert_eq!(
            FrameDecoder::new().decode(&mut input, &limits),
            Err(Error::MessageBeforeReady)
        );
        let mut input: &[u8] = &[0x04, 0x01, 0x01];
        assert!(FrameDecoder::new().decode(&mut input, &limits).is_ok());
    }
}
