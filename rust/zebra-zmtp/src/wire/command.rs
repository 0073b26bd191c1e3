//! Command frame bodies.
//!
//! ```text
//! command = name-length (1 byte, >= 1) name data
//! READY   = "READY" metadata                          (RFC 23/37, NULL mechanism)
//! ERROR   = "ERROR" reason-length (1 byte) reason     (RFC 23/37)
//! PING    = "PING" ttl (2 bytes BE, deciseconds) context (0..16 bytes)  (RFC 37)
//! PONG    = "PONG" context                                              (RFC 37)
//! ```
//!
//! Names are compared byte for byte, as libzmq does.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::wire::frame::FrameHeader;
use crate::wire::metadata::Metadata;

/// Longest PING/PONG context (RFC 37).
pub const MAX_PING_CONTEXT: usize = 16;

/// A decoded command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// End of the NULL handshake: the sender's metadata.
    Ready(Metadata),
    /// The sender refuses the connection and will close it.
    Error {
        /// Human-readable reason, at most 255 bytes.
        reason: Bytes,
    },
    /// Heartbeat request (ZMTP 3.1).
    Ping {
        /// How long the receiver may wait for traffic before giving up on
        /// the sender, in tenths of a second (0: no limit).
        ttl_deciseconds: u16,
        /// Opaque bytes to echo in the PONG (up to 16 are echoed).
        context: Bytes,
    },
    /// Heartbeat reply (ZMTP 3.1).
    Pong {
        /// The context of the PING being answered.
        context: Bytes,
    },
    /// Any other command (SUBSCRIBE, CANCEL, mechanism commands, ...).
    Other {
        /// Command name.
        name: Bytes,
        /// Everything after the name.
        data: Bytes,
    },
}

fn malformed(command: &str, reason: &'static str) -> Error {
    Error::MalformedCommand {
        command: command.to_owned(),
        reason,
    }
}

impl Command {
    /// Parses a command frame body. The returned values share `body`.
    pub fn parse(body: &Bytes) -> Result<Command> {
        let Some(&name_len) = body.first() else {
            return Err(malformed("unknown", "empty command frame"));
        };
        let name_len = usize::from(name_len);
        if name_len == 0 {
            return Err(malformed("unknown", "empty command name"));
        }
        if body.len() < 1 + name_len {
            return Err(malformed("unknown", "command name runs past the frame"));
        }
        let name = body.slice(1..1 + name_len);
        let data = body.slice(1 + name_len..);
        match &name[..] {
            b"READY" => Ok(Command::Ready(Metadata::parse(&data)?)),
            b"ERROR" => {
                let Some(&len) = data.first() else {
                    return Err(malformed("ERROR", "missing reason length"));
                };
                let len = usize::from(len);
                if data.len() != 1 + len {
                    return Err(malformed("ERROR", "reason length does not match the frame"));
                }
                Ok(Command::Error {
                    reason: data.slice(1..),
                })
            }
            b"PING" => {
                if data.len() < 2 {
                    return Err(malformed("PING", "missing TTL"));
                }
                Ok(Command::Ping {
                    ttl_deciseconds: u16::from_be_bytes([data[0], data[1]]),
                    context: data.slice(2..),
                })
            }
            b"PONG" => Ok(Command::Pong { context: data }),
            _ => Ok(Command::Other { name, data }),
        }
    }

    /// The command name.
    pub fn name(&self) -> &[u8] {
        match self {
            Command::Ready(_) => b"READY",
            Command::Error { .. } => b"ERROR",
            Command::Ping { .. } => b"PING",
            Command::Pong { .. } => b"PONG",
            Command::Other { name, .. } => name,
        }
    }

    /// The command name for messages (lossy UTF-8).
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(self.name()).into_owned()
    }

    fn check(&self) -> Result<()> {
        let name_len = self.name().len();
        if name_len == 0 || name_len > 255 {
            return Err(malformed("unknown", "command name must be 1..255 bytes"));
        }
        match self {
            Command::Error { reason } if reason.len() > 255 => {
                Err(malformed("ERROR", "reason longer than 255 bytes"))
            }
            Command::Ping { context, .. } if context.len() > MAX_PING_CONTEXT => {
                Err(Error::PingContextTooLong(context.len()))
            }
            _ => Ok(()),
        }
    }

    /// Length of the frame body.
    pub fn body_len(&self) -> usize {
        1 + self.name().len()
            + match self {
                Command::Ready(m) => m.encoded_len(),
                Command::Error { reason } => 1 + reason.len(),
                Command::Ping { context, .. } => 2 + context.len(),
                Command::Pong { context } => context.len(),
                Command::Other { data, .. } => data.len(),
            }
    }

    /// Appends the whole command frame (header and body) after checking the
    /// field limits (name 1..255, ERROR reason <= 255, PING context <= 16).
    pub fn emit_frame(&self, out: &mut BytesMut) -> Result<()> {
        self.check()?;
        FrameHeader::command(self.body_len() as u64).emit(out);
        out.put_u8(self.name().len() as u8);
        out.extend_from_slice(self.name());
        match self {
            Command::Ready(m) => m.emit(out),
            Command::Error { reason } => {
                out.put_u8(reason.len() as u8);
                out.extend_from_slice(reason);
            }
            Command::Ping {
                ttl_deciseconds,
                context,
            } => {
                out.put_u16(*ttl_deciseconds);
                out.extend_from_slice(context);
            }
            Command::Pong { context } => out.extend_from_slice(context),
            Command::Other { data, .. } => out.extend_from_slice(data),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket_type::SocketType;
    use crate::wire::frame::Frame;

    fn round_trip(c: &Command) -> BytesMut {
        let mut out = BytesMut::new();
        c.emit_frame(&mut out).unwrap();
        let (frame, used) = Frame::parse(&out).unwrap();
        assert_eq!(used, out.len());
        assert!(frame.command && !frame.more);
        assert_eq!(frame.body.len(), c.body_len());
        assert_eq!(&Command::parse(&frame.body).unwrap(), c);
        out
    }

    #[test]
    fn all_commands_round_trip() {
        let cmds = [
            Command::Ready(Metadata::for_socket(
                SocketType::Router,
                &Bytes::from_static(b"id"),
            )),
            Command::Ready(Metadata::new()),
            Command::Error {
                reason: Bytes::from_static(b"go away"),
            },
            Command::Error {
                reason: Bytes::new(),
            },
            Command::Ping {
                ttl_deciseconds: 10,
                context: Bytes::from_static(b"0123456789abcdef"),
            },
            Command::Pong {
                context: Bytes::from_static(b"ctx"),
            },
            Command::Other {
                name: Bytes::from_static(b"SUBSCRIBE"),
                data: Bytes::from_static(b"topic"),
            },
        ];
        for c in &cmds {
            round_trip(c);
        }
    }

    #[test]
    fn ping_pong_exact_bytes() {
        let out = round_trip(&Command::Ping {
            ttl_deciseconds: 10,
            context: Bytes::new(),
        });
        assert_eq!(&out[..], b"\x04\x07\x04PING\x00\x0a");
        let out = round_trip(&Command::Pong {
            context: Bytes::from_static(b"ctx-42"),
        });
        assert_eq!(&out[..], b"\x04\x0b\x04PONGctx-42");
    }

    #[test]
    fn bad_bodies() {
        let m = |c: &str, r: &'static str| Error::MalformedCommand {
            command: c.into(),
            reason: r,
        };
        let cases: &[(&[u8], Error)] = &[
            (b"", m("unknown", "empty command frame")),
            (b"\x00", m("unknown", "empty command name")),
            (b"\x05REA", m("unknown", "command name runs past the frame")),
            (b"\x05ERROR", m("ERROR", "missing reason length")),
            (
                b"\x05ERROR\x05abc",
                m("ERROR", "reason length does not match the frame"),
            ),
            (
                b"\x05ERROR\x01abc",
                m("ERROR", "reason length does not match the frame"),
            ),
            (b"\x04PING\x00", m("PING", "missing TTL")),
            (
                b"\x05READY\x0bSocket-Type\x00\x00",
                Error::MalformedMetadata("value length runs past the end"),
            ),
        ];
        for (body, err) in cases {
            assert_eq!(
                Command::parse(&Bytes::copy_from_slice(body)).as_ref(),
                Err(err),
                "{body:?}"
            );
        }
    }

    #[test]
    fn long_ping_context_parses_but_is_not_emitted() {
        let c = Command::parse(&Bytes::from_static(b"\x04PING\x00\x01 seventeen bytes!")).unwrap();
        let Command::Ping { context, .. } = &c else {
            panic!("{c:?}")
        };
        assert_eq!(context.len(), 17);
        assert_eq!(
            c.emit_frame(&mut BytesMut::new()),
            Err(Error::PingContextTooLong(17))
        );
    }

    #[test]
    fn emit_checks_limits() {
        let c = Command::Error {
            reason: Bytes::from(vec![b'x'; 256]),
        };
        assert!(c.emit_frame(&mut BytesMut::new()).is_err());
        let c = Command::Other {
            name: Bytes::new(),
            data: Bytes::new(),
        };
        assert!(c.emit_frame(&mut BytesMut::new()).is_err());
        let c = Command::Other {
            name: Bytes::from(vec![b'X'; 256]),
            data: Bytes::new(),
        };
        assert!(c.emit_frame(&mut BytesMut::new()).is_err());
    }

    #[test]
    fn names() {
        let c = Command::parse(&Bytes::from_static(b"\x06CANCEL")).unwrap();
        assert_eq!(c.name(), b"CANCEL");
        assert_eq!(c.name_lossy(), "CANCEL");
        let c = Command::parse(&Bytes::from_static(b"\x05ready")).unwrap();
        assert!(matches!(c, Command::Other { .. }));
    }
}
