//! Worker → switch hot packets.
//!
//! ```text
//!  0..2  magic          2 version      3 type (1 HOT, 2 HOT_DENSE)
//!  4..6  job            6..8 worker    8..12 round
//! 12..14 seq           14 flags       15 count
//! 16..20 token (the job's membership token; 0: the worker has none yet)
//! HOT:       20..  count × (index u32, value u32)
//! HOT_DENSE: 20..24 base (first hot index), 24.. count × value u32
//! ```
//!
//! Flags: RETX (a retransmission, same seq), DONE (the worker's last packet
//! of the round: it sent `seq + 1` packets), FIXED (values are i32 fixed
//! point, else f32 bits).

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Error, Field, Result};
use crate::consts::{
    packet_type, HOT_DENSE_HEADER_LEN, HOT_HEADER_LEN, MAX_PAIRS_PER_PACKET, PAIR_LEN, VALUE_LEN,
};

/// Byte ranges of a hot packet.
pub mod field {
    use super::Field;
    /// Worker rank.
    pub const WORKER: Field = 6..8;
    /// Round (0 is reserved).
    pub const ROUND: Field = 8..12;
    /// Per-worker, per-round sequence number.
    pub const SEQ: Field = 12..14;
    /// Flags.
    pub const FLAGS: usize = 14;
    /// Number of pairs or values.
    pub const COUNT: usize = 15;
    /// The job's membership token (0: none yet).
    pub const TOKEN: Field = 16..20;
    /// Dense only: hot index of the first value.
    pub const BASE: Field = 20..24;
}

/// Flag bits.
pub mod flags {
    /// A retransmission of a packet sent before with the same seq.
    pub const RETX: u8 = 0x01;
    /// The worker's last packet of this round.
    pub const DONE: u8 = 0x02;
    /// Values are i32 fixed point.
    pub const FIXED: u8 = 0x04;
    /// Must be zero.
    pub const RESERVED: u8 = 0xF8;
}

super::packet_view!(
    "a hot packet",
    "a buffer that holds a complete, well-formed hot packet"
);

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type, flags, count and exact length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        let t = check_common(
            b,
            &[packet_type::HOT, packet_type::HOT_DENSE],
            HOT_HEADER_LEN,
        )?;
        let f = b[field::FLAGS];
        if f & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(f));
        }
        let count = b[field::COUNT] as usize;
        if count > MAX_PAIRS_PER_PACKET {
            return Err(Error::TooMany {
                count,
                max: MAX_PAIRS_PER_PACKET,
            });
        }
        let expected = if t == packet_type::HOT {
            HOT_HEADER_LEN + count * PAIR_LEN
        } else {
            HOT_DENSE_HEADER_LEN + count * VALUE_LEN
        };
        super::check_exact(b.len(), expected)
    }

    /// Whether the body is a dense block.
    pub fn is_dense(&self) -> bool {
        self.buffer.as_ref()[super::field::TYPE] == packet_type::HOT_DENSE
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
    /// Number of pairs or values.
    pub fn count(&self) -> usize {
        self.buffer.as_ref()[field::COUNT] as usize
    }
    /// Membership token.
    pub fn token(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::TOKEN)
    }
    /// Dense: first hot index.
    pub fn base(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::BASE)
    }
    /// Sparse: pair `i` as (index, raw value).
    pub fn pair(&self, i: usize) -> (u32, u32) {
        let at = HOT_HEADER_LEN + i * PAIR_LEN;
        let b = self.buffer.as_ref();
        (get_u32(b, at..at + 4), get_u32(b, at + 4..at + 8))
    }
    /// Dense: raw value `i`.
    pub fn value(&self, i: usize) -> u32 {
        let at = HOT_DENSE_HEADER_LEN + i * VALUE_LEN;
        get_u32(self.buffer.as_ref(), at..at + 4)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flag byte (used to mark a retransmission in place).
    pub fn set_flags(&mut self, f: u8) {
        self.buffer.as_mut()[field::FLAGS] = f;
    }
    /// Sets the membership token (a worker that learned it since the
    /// packet was built).
    pub fn set_token(&mut self, token: u32) {
        put_u32(self.buffer.as_mut(), field::TOKEN, token);
    }
}

/// The contents of a hot packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HotBody {
    /// `(hot index, raw value)` pairs.
    Sparse(Vec<(u32, u32)>),
    /// Raw values of hot indices `base..base + values.len()`.
    Dense {
        /// First hot index.
        base: u32,
        /// Raw values.
        values: Vec<u32>,
    },
}

impl HotBody {
    /// Number of pairs or values.
    pub fn len(&self) -> usize {
        match self {
            HotBody::Sparse(p) => p.len(),
            HotBody::Dense { values, .. } => values.len(),
        }
    }

    /// Whether the packet carries nothing (an empty DONE marker).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `(index, raw value)` pairs, dense blocks expanded.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        match self {
            HotBody::Sparse(p) => p.clone(),
            HotBody::Dense { base, values } => values
                .iter()
                .enumerate()
                .map(|(i, &v)| (base.wrapping_add(i as u32), v))
                .collect(),
        }
    }
}

/// A parsed hot packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotRepr {
    /// Job id.
    pub job: u16,
    /// Worker rank.
    pub worker: u16,
    /// Round (never 0).
    pub round: u32,
    /// Sequence number within the worker's round.
    pub seq: u16,
    /// RETX flag.
    pub retransmission: bool,
    /// DONE flag.
    pub done: bool,
    /// FIXED flag.
    pub fixed: bool,
    /// The job's membership token (0: the worker has none yet).
    pub token: u32,
    /// Pairs or dense block.
    pub body: HotBody,
}

impl HotRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<HotRepr> {
        p.check_len()?;
        if p.round() == 0 {
            return Err(Error::Invalid("round 0 is reserved"));
        }
        let body = if p.is_dense() {
            if u64::from(p.base()) + p.count() as u64 > u64::from(u32::MAX) {
                return Err(Error::Invalid("dense block past the last index"));
            }
            HotBody::Dense {
                base: p.base(),
                values: (0..p.count()).map(|i| p.value(i)).collect(),
            }
        } else {
            HotBody::Sparse((0..p.count()).map(|i| p.pair(i)).collect())
        };
        let f = p.flags();
        Ok(HotRepr {
            job: p.job(),
            worker: p.worker(),
            round: p.round(),
            seq: p.seq(),
            retransmission: f & flags::RETX != 0,
            done: f & flags::DONE != 0,
            fixed: f & flags::FIXED != 0,
            token: p.token(),
            body,
        })
    }

    /// Bytes this packet takes.
    pub fn buffer_len(&self) -> usize {
        match &self.body {
            HotBody::Sparse(p) => HOT_HEADER_LEN + p.len() * PAIR_LEN,
            HotBody::Dense { values, .. } => HOT_DENSE_HEADER_LEN + values.len() * VALUE_LEN,
        }
    }

    /// The flag byte.
    pub fn flag_byte(&self) -> u8 {
        (if self.retransmission { flags::RETX } else { 0 })
            | (if self.done { flags::DONE } else { 0 })
            | (if self.fixed { flags::FIXED } else { 0 })
    }

    /// Writes the packet into `buf` (at least [`buffer_len`](Self::buffer_len) bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        debug_assert!(self.body.len() <= MAX_PAIRS_PER_PACKET);
        let t = match self.body {
            HotBody::Sparse(_) => packet_type::HOT,
            HotBody::Dense { .. } => packet_type::HOT_DENSE,
        };
        emit_common(buf, t);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::WORKER, self.worker);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::SEQ, self.seq);
        buf[field::FLAGS] = self.flag_byte();
        buf[field::COUNT] = self.body.len() as u8;
        put_u32(buf, field::TOKEN, self.token);
        match &self.body {
            HotBody::Sparse(pairs) => {
                for (i, &(idx, v)) in pairs.iter().enumerate() {
                    let at = HOT_HEADER_LEN + i * PAIR_LEN;
                    put_u32(buf, at..at + 4, idx);
                    put_u32(buf, at + 4..at + 8, v);
                }
            }
            HotBody::Dense { base, values } => {
                put_u32(buf, field::BASE, *base);
                for (i, &v) in values.iter().enumerate() {
                    let at = HOT_DENSE_HEADER_LEN + i * VALUE_LEN;
                    put_u32(buf, at..at + 4, v);
                }
            }
        }
    }

    /// The packet as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sparse() -> HotRepr {
        HotRepr {
            job: 7,
            worker: 3,
            round: 42,
            seq: 5,
            retransmission: false,
            done: true,
            fixed: false,
            token: 0xA1B2_C3D4,
            body: HotBody::Sparse(vec![(1, 1.5f32.to_bits()), (33, (-2.0f32).to_bits())]),
        }
    }

    #[test]
    fn sparse_round_trip_and_bytes() {
        let r = sparse();
        let b = r.to_bytes();
        assert_eq!(b.len(), 36);
        assert_eq!(
            &b[..20],
            &[0x5A, 0x42, 2, 1, 0, 7, 0, 3, 0, 0, 0, 42, 0, 5, 0x02, 2, 0xA1, 0xB2, 0xC3, 0xD4]
        );
        assert_eq!(&b[20..28], &[0, 0, 0, 1, 0x3F, 0xC0, 0, 0]);
        assert_eq!(
            HotRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
    }

    #[test]
    fn dense_round_trip() {
        let r = HotRepr {
            body: HotBody::Dense {
                base: 64,
                values: vec![1, 2, 3],
            },
            fixed: true,
            ..sparse()
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), 36);
        assert_eq!(&b[16..24], &[0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0, 64]);
        let parsed = HotRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(parsed, r);
        assert_eq!(parsed.body.pairs(), vec![(64, 1), (65, 2), (66, 3)]);
    }

    #[test]
    fn retransmission_flag_in_place() {
        let mut b = sparse().to_bytes();
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        let f = p.flags();
        p.set_flags(f | flags::RETX);
        assert!(
            HotRepr::parse(&Packet::new_checked(&b[..]).unwrap())
                .unwrap()
                .retransmission
        );
    }

    #[test]
    fn malformed_are_errors() {
        let good = sparse().to_bytes();
        assert!(matches!(
            Packet::new_checked(&good[..35]),
            Err(Error::Truncated { .. })
        ));
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            Packet::new_checked(&long[..]),
            Err(Error::BadLength { .. })
        ));
        let mut bad = good.clone();
        bad[14] = 0x80;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            Error::ReservedFlags(0x80)
        );
        let mut bad = good.clone();
        bad[15] = 200;
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::TooMany { .. })
        ));
        let mut bad = good.clone();
        bad[8..12].copy_from_slice(&[0; 4]);
        assert!(HotRepr::parse(&Packet::new_unchecked(&bad[..])).is_err());
        let mut bad = good;
        bad[3] = crate::consts::packet_type::ACK;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            Error::WrongType(3)
        );
    }
}
