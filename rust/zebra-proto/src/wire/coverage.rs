//! Switch → server: which packets of one worker the round's sum holds.
//!
//! A server needs this to reconcile pairs a worker sent it directly after
//! giving up on the switch (it did not learn whether the switch had added
//! them): a pair is applied directly only if its packet is not covered.
//!
//! ```text
//!  0..2  magic      2 version    3 type (6)
//!  4..6  job        6..8 server  8..12 round
//! 12..14 part      14..16 parts
//! 16..18 worker    18..20 first_seq   20..22 nbits
//! 22     flags (0x01 ALL: every seq in first_seq..first_seq+nbits is covered, no bitmap)
//! 23     reserved (0)
//! 24..   ceil(nbits / 8) bitmap bytes unless ALL: bit i (byte i/8, bit i%8 from the LSB)
//!        says whether seq first_seq + i is covered; padding bits are zero
//! ```

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Error, Field, Result};
use crate::consts::{packet_type, COVERAGE_HEADER_LEN, MAX_PACKET_SIZE};

/// Byte ranges of a coverage part.
pub mod field {
    use super::Field;
    /// Destination server index.
    pub const SERVER: Field = 6..8;
    /// Round.
    pub const ROUND: Field = 8..12;
    /// Index of this part.
    pub const PART: Field = 12..14;
    /// Number of parts.
    pub const PARTS: Field = 14..16;
    /// Worker rank described.
    pub const WORKER: Field = 16..18;
    /// First sequence number described.
    pub const FIRST_SEQ: Field = 18..20;
    /// Sequence numbers described.
    pub const NBITS: Field = 20..22;
    /// Flags.
    pub const FLAGS: usize = 22;
    /// Reserved, zero.
    pub const RESERVED: usize = 23;
}

/// Flag bits.
pub mod flags {
    /// Every described sequence number is covered; no bitmap follows.
    pub const ALL: u8 = 0x01;
    /// Must be zero.
    pub const RESERVED: u8 = 0xFE;
}

/// Most bitmap bytes one part carries.
pub const MAX_BITMAP_BYTES: usize = MAX_PACKET_SIZE - COVERAGE_HEADER_LEN;

/// The covered sequence numbers of the described range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoverBits {
    /// All of them.
    All,
    /// Bitmap, LSB first.
    Map(Vec<u8>),
}

super::packet_view!("a coverage part", "a well-formed coverage part");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, flags, ranges, padding and exact length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::COVERAGE], COVERAGE_HEADER_LEN)?;
        let f = b[field::FLAGS];
        if f & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(f));
        }
        if b[field::RESERVED] != 0 {
            return Err(Error::Invalid("reserved byte set"));
        }
        if get_u16(b, field::PART) >= get_u16(b, field::PARTS) {
            return Err(Error::Invalid("part index not below part count"));
        }
        let nbits = get_u16(b, field::NBITS) as usize;
        if get_u16(b, field::FIRST_SEQ) as usize + nbits > usize::from(u16::MAX) + 1 {
            return Err(Error::Invalid("sequence range past 65535"));
        }
        if f & flags::ALL != 0 {
            return super::check_exact(b.len(), COVERAGE_HEADER_LEN);
        }
        let bytes = nbits.div_ceil(8);
        if bytes > MAX_BITMAP_BYTES {
            return Err(Error::TooMany {
                count: bytes,
                max: MAX_BITMAP_BYTES,
            });
        }
        super::check_exact(b.len(), COVERAGE_HEADER_LEN + bytes)?;
        if !nbits.is_multiple_of(8) && b[COVERAGE_HEADER_LEN + bytes - 1] >> (nbits % 8) != 0 {
            return Err(Error::Invalid("padding bits set"));
        }
        Ok(())
    }
}

/// A parsed coverage part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageRepr {
    /// Job id.
    pub job: u16,
    /// Destination server.
    pub server: u16,
    /// Round.
    pub round: u32,
    /// Index of this part.
    pub part: u16,
    /// Parts of this round for this server.
    pub parts: u16,
    /// Worker described.
    pub worker: u16,
    /// First sequence number described.
    pub first_seq: u16,
    /// Sequence numbers described.
    pub nbits: u16,
    /// Which are covered.
    pub bits: CoverBits,
}

impl CoverageRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<CoverageRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let bits = if b[field::FLAGS] & flags::ALL != 0 {
            CoverBits::All
        } else {
            CoverBits::Map(b[COVERAGE_HEADER_LEN..].to_vec())
        };
        Ok(CoverageRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            round: get_u32(b, field::ROUND),
            part: get_u16(b, field::PART),
            parts: get_u16(b, field::PARTS),
            worker: get_u16(b, field::WORKER),
            first_seq: get_u16(b, field::FIRST_SEQ),
            nbits: get_u16(b, field::NBITS),
            bits,
        })
    }

    /// Whether sequence number `seq` is described and covered.
    pub fn covers(&self, seq: u16) -> bool {
        let Some(i) = seq.checked_sub(self.first_seq).map(usize::from) else {
            return false;
        };
        if i >= usize::from(self.nbits) {
            return false;
        }
        match &self.bits {
            CoverBits::All => true,
            CoverBits::Map(m) => m[i / 8] >> (i % 8) & 1 == 1,
        }
    }

    /// Bytes this part takes.
    pub fn buffer_len(&self) -> usize {
        COVERAGE_HEADER_LEN
            + match &self.bits {
                CoverBits::All => 0,
                CoverBits::Map(m) => m.len(),
            }
    }

    /// Writes the part into `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::COVERAGE);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::PARTS, self.parts);
        put_u16(buf, field::WORKER, self.worker);
        put_u16(buf, field::FIRST_SEQ, self.first_seq);
        put_u16(buf, field::NBITS, self.nbits);
        buf[field::RESERVED] = 0;
        match &self.bits {
            CoverBits::All => buf[field::FLAGS] = flags::ALL,
            CoverBits::Map(m) => {
                buf[field::FLAGS] = 0;
                buf[COVERAGE_HEADER_LEN..COVERAGE_HEADER_LEN + m.len()].copy_from_slice(m);
            }
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

    fn part(bits: CoverBits, nbits: u16) -> CoverageRepr {
        CoverageRepr {
            job: 1,
            server: 0,
            round: 5,
            part: 1,
            parts: 3,
            worker: 2,
            first_seq: 8,
            nbits,
            bits,
        }
    }

    #[test]
    fn all_and_map_round_trip_and_cover() {
        let all = part(CoverBits::All, 4);
        let b = all.to_bytes();
        assert_eq!(b.len(), 24);
        let p = CoverageRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(p, all);
        assert!(!p.covers(7) && p.covers(8) && p.covers(11) && !p.covers(12));

        let map = part(CoverBits::Map(vec![0b1000_0101, 0b01]), 10);
        let b = map.to_bytes();
        let p = CoverageRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(p, map);
        let covered: Vec<u16> = (0..30).filter(|&s| p.covers(s)).collect();
        assert_eq!(covered, vec![8, 10, 15, 16]);
    }

    #[test]
    fn padding_and_lengths_are_checked() {
        let b = part(CoverBits::Map(vec![0, 0b100]), 10).to_bytes();
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Invalid("padding bits set")
        );
        let b = part(CoverBits::Map(vec![0]), 10).to_bytes();
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Truncated { .. })
        ));
        let mut b = part(CoverBits::All, 4).to_bytes();
        b.push(0);
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::BadLength { .. })
        ));
        let b = CoverageRepr {
            first_seq: 65535,
            ..part(CoverBits::All, 2)
        }
        .to_bytes();
        assert!(Packet::new_checked(&b[..]).is_err());
    }
}
