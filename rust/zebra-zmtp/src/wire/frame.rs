//! ZMTP 3.x frame headers.
//!
//! ```text
//! flags (1 byte) | size (1 byte, or 8 bytes big endian if LONG) | body
//! flags: bit 0 MORE, bit 1 LONG, bit 2 COMMAND, bits 3..7 reserved (zero)
//! ```
//!
//! A command frame never has MORE set. Senders use the short form for
//! bodies of up to 255 bytes; receivers accept the long form for any size.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};

/// Flag bits of the first frame byte.
pub mod flags {
    /// More frames of this message follow.
    pub const MORE: u8 = 0x01;
    /// The size field is 8 bytes.
    pub const LONG: u8 = 0x02;
    /// The frame is a command.
    pub const COMMAND: u8 = 0x04;
    /// Bits that must be zero.
    pub const RESERVED: u8 = 0xF8;
}

/// Largest body the short (1-byte size) form can carry.
pub const SHORT_MAX: u64 = 255;
/// Longest frame header (flags + 8-byte size).
pub const MAX_HEADER_LEN: usize = 9;

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// MORE flag: another frame of the same message follows.
    pub more: bool,
    /// COMMAND flag.
    pub command: bool,
    /// Body length in bytes.
    pub size: u64,
    /// Whether the size is (or will be) written in the 8-byte form.
    pub long: bool,
}

impl FrameHeader {
    /// A message frame header with the smallest size encoding.
    pub const fn message(size: u64, more: bool) -> FrameHeader {
        FrameHeader {
            more,
            command: false,
            size,
            long: size > SHORT_MAX,
        }
    }

    /// A command frame header with the smallest size encoding.
    pub const fn command(size: u64) -> FrameHeader {
        FrameHeader {
            more: false,
            command: true,
            size,
            long: size > SHORT_MAX,
        }
    }

    /// Checks a flags byte on its own; lets a decoder fail on the first byte.
    pub fn check_flags(b: u8) -> Result<()> {
        if b & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(b));
        }
        if b & flags::COMMAND != 0 && b & flags::MORE != 0 {
            return Err(Error::CommandWithMore);
        }
        Ok(())
    }

    /// Header length implied by a (valid) flags byte: 2 or 9.
    pub const fn len_for_flags(b: u8) -> usize {
        if b & flags::LONG != 0 {
            MAX_HEADER_LEN
        } else {
            2
        }
    }

    /// Parses a header from the start of `bytes`; returns it with its length.
    pub fn parse(bytes: &[u8]) -> Result<(FrameHeader, usize)> {
        let Some(&f) = bytes.first() else {
            return Err(Error::Truncated {
                needed: 1,
                available: 0,
            });
        };
        FrameHeader::check_flags(f)?;
        let len = FrameHeader::len_for_flags(f);
        if bytes.len() < len {
            return Err(Error::Truncated {
                needed: len,
                available: bytes.len(),
            });
        }
        let long = f & flags::LONG != 0;
        let size = if long {
            let mut be = [0u8; 8];
            be.copy_from_slice(&bytes[1..9]);
            u64::from_be_bytes(be)
        } else {
            u64::from(bytes[1])
        };
        let header = FrameHeader {
            more: f & flags::MORE != 0,
            command: f & flags::COMMAND != 0,
            size,
            long,
        };
        Ok((header, len))
    }

    /// The flags byte.
    pub const fn flags(&self) -> u8 {
        let mut f = 0;
        if self.more {
            f |= flags::MORE;
        }
        if self.long {
            f |= flags::LONG;
        }
        if self.command {
            f |= flags::COMMAND;
        }
        f
    }

    /// Encoded header length.
    pub const fn header_len(&self) -> usize {
        if self.long {
            MAX_HEADER_LEN
        } else {
            2
        }
    }

    /// Appends the header. A short header with `size > 255` is written in the
    /// long form instead, so the output is always well-formed.
    pub fn emit(&self, out: &mut BytesMut) {
        let long = self.long || self.size > SHORT_MAX;
        let h = FrameHeader { long, ..*self };
        out.put_u8(h.flags());
        if long {
            out.put_u64(self.size);
        } else {
            out.put_u8(self.size as u8);
        }
    }
}

/// A whole frame: header flags and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// MORE flag.
    pub more: bool,
    /// COMMAND flag.
    pub command: bool,
    /// The body.
    pub body: Bytes,
}

impl Frame {
    /// Parses one complete frame from the start of `bytes`; returns the frame
    /// and the number of bytes it used.
    pub fn parse(bytes: &[u8]) -> Result<(Frame, usize)> {
        let (h, hl) = FrameHeader::parse(bytes)?;
        let available = bytes.len() - hl;
        let body_len = usize::try_from(h.size)
            .ok()
            .filter(|&n| n <= available)
            .ok_or(Error::Truncated {
                needed: hl.saturating_add(usize::try_from(h.size).unwrap_or(usize::MAX)),
                available: bytes.len(),
            })?;
        let frame = Frame {
            more: h.more,
            command: h.command,
            body: Bytes::copy_from_slice(&bytes[hl..hl + body_len]),
        };
        Ok((frame, hl + body_len))
    }

    /// Appends the frame (smallest header form).
    pub fn emit(&self, out: &mut BytesMut) {
        let size = self.body.len() as u64;
        let h = FrameHeader {
            more: self.more,
            command: self.command,
            size,
            long: size > SHORT_MAX,
        };
        h.emit(out);
        out.extend_from_slice(&self.body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_round_trip() {
        for (size, more, command) in [
            (0u64, false, false),
            (1, true, false),
            (255, false, true),
            (256, true, false),
            (u64::MAX, false, false),
        ] {
            let h = FrameHeader {
                more,
                command,
                size,
                long: size > SHORT_MAX,
            };
            let mut out = BytesMut::new();
            h.emit(&mut out);
            assert_eq!(out.len(), h.header_len());
            assert_eq!(FrameHeader::parse(&out), Ok((h, h.header_len())));
        }
    }

    #[test]
    fn exact_bytes() {
        let mut out = BytesMut::new();
        FrameHeader::message(5, true).emit(&mut out);
        assert_eq!(&out[..], &[0x01, 0x05]);
        out.clear();
        FrameHeader::message(300, false).emit(&mut out);
        assert_eq!(&out[..], &[0x02, 0, 0, 0, 0, 0, 0, 0x01, 0x2C]);
        out.clear();
        FrameHeader::command(7).emit(&mut out);
        assert_eq!(&out[..], &[0x04, 0x07]);
    }

    #[test]
    fn long_form_for_small_size_is_accepted() {
        let bytes = [0x03, 0, 0, 0, 0, 0, 0, 0, 4];
        let (h, n) = FrameHeader::parse(&bytes).unwrap();
        assert_eq!(n, 9);
        assert_eq!(h.size, 4);
        assert!(h.more && h.long && !h.command);
    }

    #[test]
    fn short_header_with_big_size_is_emitted_long() {
        let h = FrameHeader {
            more: false,
            command: false,
            size: 1000,
            long: false,
        };
        let mut out = BytesMut::new();
        h.emit(&mut out);
        assert_eq!(out.len(), 9);
        assert_eq!(FrameHeader::parse(&out).unwrap().0.size, 1000);
    }

    #[test]
    fn bad_flags() {
        for f in [0x08u8, 0x10, 0x20, 0x40, 0x80, 0xFF] {
            assert_eq!(FrameHeader::parse(&[f, 0]), Err(Error::ReservedFlags(f)));
        }
        assert_eq!(FrameHeader::parse(&[0x05, 0]), Err(Error::CommandWithMore));
        assert_eq!(FrameHeader::parse(&[0x07]), Err(Error::CommandWithMore));
    }

    #[test]
    fn truncated_headers() {
        assert_eq!(
            FrameHeader::parse(&[]),
            Err(Error::Truncated {
                needed: 1,
                available: 0
            })
        );
        assert_eq!(
            FrameHeader::parse(&[0x00]),
            Err(Error::Truncated {
                needed: 2,
                available: 1
            })
        );
        assert_eq!(
            FrameHeader::parse(&[0x02, 0, 0, 0]),
            Err(Error::Truncated {
                needed: 9,
                available: 4
            })
        );
    }

    #[test]
    fn whole_frames() {
        let f = Frame {
            more: true,
            command: false,
            body: Bytes::from_static(b"hello"),
        };
        let mut out = BytesMut::new();
        f.emit(&mut out);
        out.extend_from_slice(b"trailing");
        assert_eq!(Frame::parse(&out), Ok((f, 7)));
        assert_eq!(
            Frame::parse(&[0x00, 0x05, b'a']),
            Err(Error::Truncated {
                needed: 7,
                available: 3
            })
        );
        let huge = [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(Frame::parse(&huge), Err(Error::Truncated { .. })));
    }
}
