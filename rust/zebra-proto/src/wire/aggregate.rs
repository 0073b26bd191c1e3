//! Switch → server: one part of a round's aggregate for the server's keys.
//!
//! ```text
//!  0..2  magic        2 version     3 type (5)
//!  4..6  job          6..8 server   8..12 round
//! 12..14 part        14..16 parts (aggregate and coverage parts of this round for this server)
//! 16..24 contributed (bit w: worker w has at least one packet in the sum)
//! 24..32 complete    (bit w: every packet of worker w up to its DONE is accounted for)
//! 32     flags (0x01 FIXED, 0x02 FLUSHED: closed by timeout)
//! 33     reserved (0)
//! 34..36 count        36..40 total (pairs for this server over all parts)
//! 40..   count × (index u32, value u32)
//! ```

use super::{
    check_common, emit_common, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, Error, Field,
    Result,
};
use crate::consts::{packet_type, AGGREGATE_HEADER_LEN, MAX_AGGREGATE_PAIRS, PAIR_LEN};

/// Byte ranges of an aggregate part.
pub mod field {
    use super::Field;
    /// Destination server index.
    pub const SERVER: Field = 6..8;
    /// Round.
    pub const ROUND: Field = 8..12;
    /// Index of this part.
    pub const PART: Field = 12..14;
    /// Number of parts (aggregate + coverage) for this round and server.
    pub const PARTS: Field = 14..16;
    /// Workers with a packet in the sum.
    pub const CONTRIBUTED: Field = 16..24;
    /// Workers whose round is complete at the switch.
    pub const COMPLETE: Field = 24..32;
    /// Flags.
    pub const FLAGS: usize = 32;
    /// Reserved, zero.
    pub const RESERVED: usize = 33;
    /// Pairs in this part.
    pub const COUNT: Field = 34..36;
    /// Pairs in all parts.
    pub const TOTAL: Field = 36..40;
}

/// Flag bits.
pub mod flags {
    /// Values are i32 fixed point.
    pub const FIXED: u8 = 0x01;
    /// The round was closed by timeout, not by every worker's DONE.
    pub const FLUSHED: u8 = 0x02;
    /// Must be zero.
    pub const RESERVED: u8 = 0xFC;
}

super::packet_view!("an aggregate part", "a well-formed aggregate part");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, flags, part numbers and exact length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::AGGREGATE], AGGREGATE_HEADER_LEN)?;
        if b[field::FLAGS] & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(b[field::FLAGS]));
        }
        if b[field::RESERVED] != 0 {
            return Err(Error::Invalid("reserved byte set"));
        }
        let (part, parts) = (get_u16(b, field::PART), get_u16(b, field::PARTS));
        if part >= parts {
            return Err(Error::Invalid("part index not below part count"));
        }
        let count = get_u16(b, field::COUNT) as usize;
        if count > MAX_AGGREGATE_PAIRS {
            return Err(Error::TooMany {
                count,
                max: MAX_AGGREGATE_PAIRS,
            });
        }
        if count as u64 > u64::from(get_u32(b, field::TOTAL)) {
            return Err(Error::Invalid("more pairs in a part than in the total"));
        }
        super::check_exact(b.len(), AGGREGATE_HEADER_LEN + count * PAIR_LEN)
    }
}

/// A parsed aggregate part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateRepr {
    /// Job id.
    pub job: u16,
    /// Destination server.
    pub server: u16,
    /// Round.
    pub round: u32,
    /// Index of this part.
    pub part: u16,
    /// Parts of this round for this server (aggregate and coverage).
    pub parts: u16,
    /// Workers with at least one packet in the sum.
    pub contributed: u64,
    /// Workers whose round is complete at the switch.
    pub complete: u64,
    /// Values are fixed point.
    pub fixed: bool,
    /// Closed by timeout.
    pub flushed: bool,
    /// Pairs for this server over all parts.
    pub total: u32,
    /// `(hot index, raw value)`.
    pub pairs: Vec<(u32, u32)>,
}

impl AggregateRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<AggregateRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let count = get_u16(b, field::COUNT) as usize;
        let f = b[field::FLAGS];
        Ok(AggregateRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            round: get_u32(b, field::ROUND),
            part: get_u16(b, field::PART),
            parts: get_u16(b, field::PARTS),
            contributed: get_u64(b, field::CONTRIBUTED),
            complete: get_u64(b, field::COMPLETE),
            fixed: f & flags::FIXED != 0,
            flushed: f & flags::FLUSHED != 0,
            total: get_u32(b, field::TOTAL),
            pairs: (0..count)
                .map(|i| {
                    let at = AGGREGATE_HEADER_LEN + i * PAIR_LEN;
                    (get_u32(b, at..at + 4), get_u32(b, at + 4..at + 8))
                })
                .collect(),
        })
    }

    /// Bytes this part takes.
    pub fn buffer_len(&self) -> usize {
        AGGREGATE_HEADER_LEN + self.pairs.len() * PAIR_LEN
    }

    /// Writes the part into `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::AGGREGATE);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::PARTS, self.parts);
        put_u64(buf, field::CONTRIBUTED, self.contributed);
        put_u64(buf, field::COMPLETE, self.complete);
        buf[field::FLAGS] = (if self.fixed { flags::FIXED } else { 0 })
            | (if self.flushed { flags::FLUSHED } else { 0 });
        buf[field::RESERVED] = 0;
        put_u16(buf, field::COUNT, self.pairs.len() as u16);
        put_u32(buf, field::TOTAL, self.total);
        for (i, &(idx, v)) in self.pairs.iter().enumerate() {
            let at = AGGREGATE_HEADER_LEN + i * PAIR_LEN;
            put_u32(buf, at..at + 4, idx);
            put_u32(buf, at + 4..at + 8, v);
        }
    }

    /// The part as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part() -> AggregateRepr {
        AggregateRepr {
            job: 1,
            server: 2,
            round: 3,
            part: 0,
            parts: 2,
            contributed: 0b1011,
            complete: 0b0011,
            fixed: false,
            flushed: true,
            total: 5,
            pairs: vec![(4, 7), (9, 1)],
        }
    }

    #[test]
    fn round_trip() {
        let r = part();
        let b = r.to_bytes();
        assert_eq!(b.len(), 56);
        assert_eq!(b[32], flags::FLUSHED);
        assert_eq!(
            AggregateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
    }

    #[test]
    fn inconsistent_numbers_are_errors() {
        let b = AggregateRepr { part: 2, ..part() }.to_bytes();
        assert!(Packet::new_checked(&b[..]).is_err());
        let b = AggregateRepr { total: 1, ..part() }.to_bytes();
        assert!(Packet::new_checked(&b[..]).is_err());
        let mut b = part().to_bytes();
        b[33] = 1;
        assert!(Packet::new_checked(&b[..]).is_err());
        b[33] = 0;
        b[32] = 0x10;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::ReservedFlags(0x10)
        );
        assert!(Packet::new_checked(&part().to_bytes()[..50]).is_err());
    }
}
