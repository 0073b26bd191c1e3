//! Byte layouts of the hot path, smoltcp style: a `Packet<T: AsRef<[u8]>>`
//! view over a buffer with a `field` table of byte ranges, checked
//! construction (`new_checked` returns an [`enum@Error`], never panics), and a
//! `Repr` that parses from and emits into a view. `WIRE.md` beside the
//! crate has the byte tables.
//!
//! Every datagram starts with the magic `0x5A42`, the version and a packet
//! type ([`crate::consts::packet_type`]); all fields are big endian.

/// Declares a module's `Packet<T>` view over a buffer: `new_unchecked`, and
/// `new_checked`, which runs the module's own `check_len` (smoltcp's pattern).
macro_rules! packet_view {
    ($what:literal, $checked:literal) => {
        #[doc = concat!("A view of ", $what, ".")]
        #[derive(Debug, Clone)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// A view without checks; accessors may panic on a short buffer.
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            #[doc = concat!("A view of ", $checked, ".")]
            pub fn new_checked(buffer: T) -> Result<Packet<T>> {
                let p = Packet::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }
        }
    };
}
use packet_view;

pub mod aggregate;
pub mod aggregate_ack;
pub mod coverage;
pub mod hot;
pub mod register;
pub mod response;
pub mod update;
pub mod update_ack;

pub use aggregate::AggregateRepr;
pub use aggregate_ack::AggregateAckRepr;
pub use coverage::{CoverBits, CoverageRepr};
pub use hot::{HotBody, HotRepr};
pub use register::{Admission, RegisterRepr};
pub use response::{FallbackReason, ResponseKind, ResponseRepr};
pub use update::{Fragment, UpdateRepr};
pub use update_ack::UpdateAckRepr;

use thiserror::Error;

use crate::consts::{packet_type, MAGIC, VERSION};

/// A byte range within a packet.
pub type Field = core::ops::Range<usize>;

/// Fields every datagram starts with.
pub mod field {
    use super::Field;
    /// Magic `0x5A42`.
    pub const MAGIC: Field = 0..2;
    /// Format version.
    pub const VERSION: usize = 2;
    /// Packet type.
    pub const TYPE: usize = 3;
    /// Job id (every type has it here).
    pub const JOB: Field = 4..6;
}

/// Why bytes are not a valid hot-path datagram.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// Shorter than the header or than the header says.
    #[error("truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// Longer than the header says.
    #[error("length {actual} bytes, the header implies {expected}")]
    BadLength {
        /// Length the header implies.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// Not a Zebra datagram.
    #[error("bad magic {0:#06x}")]
    BadMagic(u16),
    /// Another format version.
    #[error("unsupported version {0}")]
    BadVersion(u8),
    /// A packet type this version does not define.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// A known type, but not the one the view expects.
    #[error("packet type {0} where another was expected")]
    WrongType(u8),
    /// Reserved flag bits set.
    #[error("reserved flag bits set in {0:#04x}")]
    ReservedFlags(u8),
    /// More entries than a packet may carry.
    #[error("{count} entries, at most {max} allowed")]
    TooMany {
        /// Entries announced.
        count: usize,
        /// Limit.
        max: usize,
    },
    /// A field holds a value its type does not allow.
    #[error("invalid field: {0}")]
    Invalid(&'static str),
}

/// Result of wire parsing.
pub type Result<T> = core::result::Result<T, Error>;

pub(crate) fn get_u16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

pub(crate) fn get_u32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
}

pub(crate) fn get_u64(b: &[u8], f: Field) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[f]);
    u64::from_be_bytes(x)
}

pub(crate) fn put_u16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u64(b: &mut [u8], f: Field, v: u64) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

/// Checks magic, version, that the type is one of `types` and that the
/// fixed header is present; returns the type.
pub(crate) fn check_common(b: &[u8], types: &[u8], header_len: usize) -> Result<u8> {
    if b.len() < 4 {
        return Err(Error::Truncated {
            needed: 4,
            available: b.len(),
        });
    }
    let magic = get_u16(b, field::MAGIC);
    if magic != MAGIC {
        return Err(Error::BadMagic(magic));
    }
    if b[field::VERSION] != VERSION {
        return Err(Error::BadVersion(b[field::VERSION]));
    }
    let t = b[field::TYPE];
    if !types.contains(&t) {
        return Err(
            if (packet_type::HOT..=packet_type::UPDATE_ACK).contains(&t) {
                Error::WrongType(t)
            } else {
                Error::UnknownType(t)
            },
        );
    }
    if b.len() < header_len {
        return Err(Error::Truncated {
            needed: header_len,
            available: b.len(),
        });
    }
    Ok(t)
}

/// Writes magic, version and type.
pub(crate) fn emit_common(b: &mut [u8], t: u8) {
    put_u16(b, field::MAGIC, MAGIC);
    b[field::VERSION] = VERSION;
    b[field::TYPE] = t;
}

/// Checks that a packet is exactly `expected` bytes long.
pub(crate) fn check_exact(len: usize, expected: usize) -> Result<()> {
    if len < expected {
        Err(Error::Truncated {
            needed: expected,
            available: len,
        })
    } else if len > expected {
        Err(Error::BadLength {
            expected,
            actual: len,
        })
    } else {
        Ok(())
    }
}

/// Any hot-path datagram, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Worker → switch.
    Hot(HotRepr),
    /// Switch → worker (ACK or FALLBACK).
    Response(ResponseRepr),
    /// Switch → server: summed pairs.
    Aggregate(AggregateRepr),
    /// Switch → server: which worker packets the sum holds.
    Coverage(CoverageRepr),
    /// Server → switch.
    AggregateAck(AggregateAckRepr),
    /// Server ↔ switch CPU: REGISTER or REGISTER_ACK.
    Register(RegisterRepr),
    /// Server → switch → workers: an update part.
    Update(UpdateRepr),
    /// Worker → switch → server: an update part arrived.
    UpdateAck(UpdateAckRepr),
}

impl Message {
    /// Parses any datagram by its type byte.
    pub fn parse(bytes: &[u8]) -> Result<Message> {
        let all = [
            packet_type::HOT,
            packet_type::HOT_DENSE,
            packet_type::ACK,
            packet_type::FALLBACK,
            packet_type::AGGREGATE,
            packet_type::COVERAGE,
            packet_type::AGGREGATE_ACK,
            packet_type::REGISTER,
            packet_type::REGISTER_ACK,
            packet_type::UPDATE,
            packet_type::UPDATE_ACK,
        ];
        match check_common(bytes, &all, 4)? {
            packet_type::HOT | packet_type::HOT_DENSE => Ok(Message::Hot(HotRepr::parse(
                &hot::Packet::new_checked(bytes)?,
            )?)),
            packet_type::ACK | packet_type::FALLBACK => Ok(Message::Response(ResponseRepr::parse(
                &response::Packet::new_checked(bytes)?,
            )?)),
            packet_type::AGGREGATE => Ok(Message::Aggregate(AggregateRepr::parse(
                &aggregate::Packet::new_checked(bytes)?,
            )?)),
            packet_type::COVERAGE => Ok(Message::Coverage(CoverageRepr::parse(
                &coverage::Packet::new_checked(bytes)?,
            )?)),
            packet_type::AGGREGATE_ACK => Ok(Message::AggregateAck(AggregateAckRepr::parse(
                &aggregate_ack::Packet::new_checked(bytes)?,
            )?)),
            packet_type::UPDATE => Ok(Message::Update(UpdateRepr::parse(
                &update::Packet::new_checked(bytes)?,
            )?)),
            packet_type::UPDATE_ACK => Ok(Message::UpdateAck(UpdateAckRepr::parse(
                &update_ack::Packet::new_checked(bytes)?,
            )?)),
            _ => Ok(Message::Register(RegisterRepr::parse(
                &register::Packet::new_checked(bytes)?,
            )?)),
        }
    }

    /// The datagram's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Message::Hot(r) => r.to_bytes(),
            Message::Response(r) => r.to_bytes(),
            Message::Aggregate(r) => r.to_bytes(),
            Message::Coverage(r) => r.to_bytes(),
            Message::AggregateAck(r) => r.to_bytes(),
            Message::Register(r) => r.to_bytes(),
            Message::Update(r) => r.to_bytes(),
            Message::UpdateAck(r) => r.to_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_header_errors() {
        assert_eq!(
            Message::parse(&[0x5A]),
            Err(Error::Truncated {
                needed: 4,
                available: 1
            })
        );
        assert_eq!(Message::parse(&[0, 0, 1, 1]), Err(Error::BadMagic(0)));
        assert_eq!(
            Message::parse(&[0x5A, 0x42, 9, 1]),
            Err(Error::BadVersion(9))
        );
        assert_eq!(
            Message::parse(&[0x5A, 0x42, 2, 99]),
            Err(Error::UnknownType(99))
        );
        assert_eq!(
            Message::parse(&[0x5A, 0x42, 2, 12]),
            Err(Error::UnknownType(12))
        );
        let ack = UpdateAckRepr {
            job: 1,
            server: 0,
            seq: 2,
            part: 0,
            worker: 3,
        };
        assert_eq!(Message::parse(&ack.to_bytes()), Ok(Message::UpdateAck(ack)));
        assert_eq!(
            update::Packet::new_checked(&ack.to_bytes()[..]).unwrap_err(),
            Error::WrongType(11)
        );
        assert!(matches!(
            Message::parse(&[0x5A, 0x42, 2, 1]),
            Err(Error::Truncated { .. })
        ));
        let reg = [0x5A, 0x42, 2, 8, 0, 1, 0, 2, 0, 0, 0, 5];
        assert_eq!(
            Message::parse(&reg),
            Ok(Message::Register(RegisterRepr {
                job: 1,
                server: 2,
                ack: false,
                admit: None,
                epoch: 0,
                token: 5,
            }))
        );
        assert_eq!(Message::parse(&reg).unwrap().to_bytes(), reg);
    }
}
