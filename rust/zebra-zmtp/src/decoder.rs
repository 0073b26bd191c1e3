//! Streaming frame decoder: turns a byte stream, split anywhere, into frames.
//!
//! Each body byte is copied once, from the caller's input straight into the
//! frame's own buffer. Size limits are checked as soon as a header is
//! complete, and a body buffer grows only as bytes actually arrive (at most
//! doubling, never beyond the announced size), so a hostile length field
//! cannot make us allocate memory the peer has not sent.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::wire::frame::{flags, Frame, FrameHeader, MAX_HEADER_LEN};

/// Smallest body allocation step for large frames.
const MIN_GROWTH: usize = 64 * 1024;

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
}

#[derive(Debug)]
struct Body {
    more: bool,
    command: bool,
    size: usize,
    buf: Vec<u8>,
}

/// Incremental frame decoder.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    header: [u8; MAX_HEADER_LEN],
    header_len: usize,
    body: Option<Body>,
}

fn grow(buf: &mut Vec<u8>, incoming: usize, size: usize) {
    let needed = buf.len() + incoming;
    if needed <= buf.capacity() {
        return;
    }
    let target = needed
        .max(buf.capacity().saturating_mul(2))
        .max(MIN_GROWTH)
        .min(size);
    buf.reserve_exact(target - buf.len());
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
        self.header_len + self.body.as_ref().map_or(0, |b| b.buf.len())
    }

    /// Consumes bytes from the front of `input` until one frame is complete
    /// (returned) or `input` is exhausted (`Ok(None)`).
    pub fn decode(&mut self, input: &mut &[u8], limits: &Limits) -> Result<Option<Frame>> {
        loop {
            if let Some(mut body) = self.body.take() {
                let n = (body.size - body.buf.len()).min(input.len());
                grow(&mut body.buf, n, body.size);
                body.buf.extend_from_slice(&input[..n]);
                *input = &input[n..];
                if body.buf.len() < body.size {
                    self.body = Some(body);
                    return Ok(None);
                }
                return Ok(Some(Frame {
                    more: body.more,
                    command: body.command,
                    body: Bytes::from(body.buf),
                }));
            }

            let Some(&first) = input.first() else {
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
            let n = (need - self.header_len).min(input.len());
            self.header[self.header_len..self.header_len + n].copy_from_slice(&input[..n]);
            self.header_len += n;
            *input = &input[n..];
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
            if size == 0 {
                return Ok(Some(Frame {
                    more: h.more,
                    command: h.command,
                    body: Bytes::new(),
                }));
            }
            self.body = Some(Body {
                more: h.more,
                command: h.command,
                size,
                buf: Vec::new(),
            });
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
        let cap = d.body.as_ref().map(|b| b.buf.capacity()).unwrap();
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
                assert!(b.buf.capacity() <= size);
                assert!(b.buf.capacity() <= (2 * b.buf.len()).max(MIN_GROWTH));
            }
        }
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
