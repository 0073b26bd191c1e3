//! Switch → worker responses: ACK (the packet is in the aggregate) and
//! FALLBACK (it is not, and never will be: send its pairs to the servers).
//!
//! ```text
//!  0..2  magic    2 version   3 type (3 ACK, 4 FALLBACK)
//!  4..6  job      6..8 worker 8..12 round
//! 12..14 seq     14 flags (ACK: 0x01 DUP, a repeat of an earlier answer)
//! 15     reason (FALLBACK: why; ACK: 0)
//! 16..20 token   the job's membership token (0: an answer for a job or
//!                worker the switch does not have)
//! ```
//!
//! The token is how a worker learns its job's token: it shows it in every
//! packet it sends after (`docs/SECURITY.md`).

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Error, Field, Result};
use crate::consts::{packet_type, RESPONSE_LEN};

/// Byte ranges of a response.
pub mod field {
    use super::Field;
    /// Worker rank.
    pub const WORKER: Field = 6..8;
    /// Round.
    pub const ROUND: Field = 8..12;
    /// Sequence number answered.
    pub const SEQ: Field = 12..14;
    /// Flags.
    pub const FLAGS: usize = 14;
    /// Fallback reason.
    pub const REASON: usize = 15;
    /// The job's membership token.
    pub const TOKEN: Field = 16..20;
}

/// Flag bits.
pub mod flags {
    /// The switch had already answered this packet (a retransmission).
    pub const DUP: u8 = 0x01;
    /// Must be zero.
    pub const RESERVED: u8 = 0xFE;
}

/// Why the switch did not add a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FallbackReason {
    /// The round was already flushed or completed (a straggler).
    Late = 1,
    /// The round's slot copy still holds an older round in progress.
    WindowFull = 2,
    /// A hot index beyond the job's hot keys (switch memory).
    OutOfRange = 3,
    /// A sequence number beyond the per-round record window.
    SeqOverflow = 4,
    /// Number format or size does not match the job.
    BadFormat = 5,
    /// The switch has no such job.
    UnknownJob = 6,
    /// A worker rank beyond the job's workers.
    BadWorker = 7,
    /// A round further ahead of the job's newest round than
    /// `max_round_ahead`: refused, not remembered.
    FarAhead = 8,
    /// A round this switch never opened, answered for a packet that an
    /// earlier incarnation of the switch may have added: older than the
    /// first round this incarnation opened, or a retransmission that would
    /// open the round. The worker hands the pairs to the server as
    /// uncertain, and the server decides by the round's coverage.
    Unopened = 9,
}

impl FallbackReason {
    /// All reasons, by code.
    pub const ALL: [FallbackReason; 9] = [
        FallbackReason::Late,
        FallbackReason::WindowFull,
        FallbackReason::OutOfRange,
        FallbackReason::SeqOverflow,
        FallbackReason::BadFormat,
        FallbackReason::UnknownJob,
        FallbackReason::BadWorker,
        FallbackReason::FarAhead,
        FallbackReason::Unopened,
    ];

    /// The reason with wire code `c`.
    pub fn from_code(c: u8) -> Option<FallbackReason> {
        FallbackReason::ALL.iter().copied().find(|r| *r as u8 == c)
    }
}

/// ACK or FALLBACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// Added; `duplicate` when this repeats an earlier answer.
    Ack {
        /// DUP flag.
        duplicate: bool,
    },
    /// Not added.
    Fallback {
        /// Why.
        reason: FallbackReason,
        /// DUP flag.
        duplicate: bool,
    },
}

super::packet_view!("a response", "a well-formed response");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type, flags and length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::ACK, packet_type::FALLBACK], RESPONSE_LEN)?;
        super::check_exact(b.len(), RESPONSE_LEN)?;
        if b[field::FLAGS] & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(b[field::FLAGS]));
        }
        Ok(())
    }

    /// Whether this is a FALLBACK.
    pub fn is_fallback(&self) -> bool {
        self.buffer.as_ref()[super::field::TYPE] == packet_type::FALLBACK
    }
    /// Job id.
    pub fn job(&self) -> u16 {
        get_u16(self.buffer.as_ref(), super::field::JOB)
    }
    /// Worker rank.
    pub fn worker(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WORKER)
    }
    /// Round.
    pub fn round(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::ROUND)
    }
    /// Sequence number.
    pub fn seq(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SEQ)
    }
    /// Flag byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// Reason byte.
    pub fn reason(&self) -> u8 {
        self.buffer.as_ref()[field::REASON]
    }
    /// The job's membership token.
    pub fn token(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::TOKEN)
    }
}

/// A parsed response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseRepr {
    /// Job id.
    pub job: u16,
    /// Worker rank.
    pub worker: u16,
    /// Round.
    pub round: u32,
    /// Sequence number answered.
    pub seq: u16,
    /// ACK or FALLBACK.
    pub kind: ResponseKind,
    /// The job's membership token (0: none).
    pub token: u32,
}

impl ResponseRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<ResponseRepr> {
        p.check_len()?;
        let duplicate = p.flags() & flags::DUP != 0;
        let kind = if p.is_fallback() {
            let reason = FallbackReason::from_code(p.reason())
                .ok_or(Error::Invalid("unknown fallback reason"))?;
            ResponseKind::Fallback { reason, duplicate }
        } else {
            if p.reason() != 0 {
                return Err(Error::Invalid("ACK with a reason"));
            }
            ResponseKind::Ack { duplicate }
        };
        Ok(ResponseRepr {
            job: p.job(),
            worker: p.worker(),
            round: p.round(),
            seq: p.seq(),
            kind,
            token: p.token(),
        })
    }

    /// Writes the response into `buf` ([`RESPONSE_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        let (t, dup, reason) = match self.kind {
            ResponseKind::Ack { duplicate } => (packet_type::ACK, duplicate, 0),
            ResponseKind::Fallback { reason, duplicate } => {
                (packet_type::FALLBACK, duplicate, reason as u8)
            }
        };
        emit_common(buf, t);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::WORKER, self.worker);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::SEQ, self.seq);
        buf[field::FLAGS] = if dup { flags::DUP } else { 0 };
        buf[field::REASON] = reason;
        put_u32(buf, field::TOKEN, self.token);
    }

    /// The response as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; RESPONSE_LEN];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for kind in [
            ResponseKind::Ack { duplicate: false },
            ResponseKind::Ack { duplicate: true },
            ResponseKind::Fallback {
                reason: FallbackReason::Late,
                duplicate: false,
            },
            ResponseKind::Fallback {
                reason: FallbackReason::BadWorker,
                duplicate: true,
            },
        ] {
            let r = ResponseRepr {
                job: 1,
                worker: 2,
                round: 3,
                seq: 4,
                kind,
                token: 9,
            };
            let b = r.to_bytes();
            assert_eq!(b.len(), 20);
            assert_eq!(
                ResponseRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
                r
            );
        }
        let b = ResponseRepr {
            job: 1,
            worker: 2,
            round: 3,
            seq: 4,
            kind: ResponseKind::Fallback {
                reason: FallbackReason::WindowFull,
                duplicate: false,
            },
            token: 0x0102_0304,
        }
        .to_bytes();
        assert_eq!(
            b,
            [0x5A, 0x42, 2, 4, 0, 1, 0, 2, 0, 0, 0, 3, 0, 4, 0, 2, 1, 2, 3, 4]
        );
    }

    #[test]
    fn bad_reason_and_flags() {
        let mut b = ResponseRepr {
            job: 1,
            worker: 2,
            round: 3,
            seq: 4,
            kind: ResponseKind::Ack { duplicate: false },
            token: 0,
        }
        .to_bytes();
        b[15] = 1;
        assert!(ResponseRepr::parse(&Packet::new_unchecked(&b[..])).is_err());
        b[3] = packet_type::FALLBACK;
        b[15] = 99;
        assert!(ResponseRepr::parse(&Packet::new_unchecked(&b[..])).is_err());
        b[15] = 1;
        b[14] = 2;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::ReservedFlags(2)
        );
    }
}
