//! Server → switch: one aggregate or coverage part arrived.
//!
//! ```text
//!  0..2  magic   2 version   3 type (7)
//!  4..6  job     6..8 server 8..12 round
//! 12..14 part   14..16 reserved (0)
//! 16..20 token  the job's membership token (0: the server has none yet)
//! ```

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Error, Field, Result};
use crate::consts::{packet_type, AGGREGATE_ACK_LEN};

/// Byte ranges of an aggregate ACK.
pub mod field {
    use super::Field;
    /// Server index.
    pub const SERVER: Field = 6..8;
    /// Round.
    pub const ROUND: Field = 8..12;
    /// Part acknowledged.
    pub const PART: Field = 12..14;
    /// Reserved, zero.
    pub const RESERVED: Field = 14..16;
    /// The job's membership token.
    pub const TOKEN: Field = 16..20;
}

super::packet_view!("an aggregate ACK", "a well-formed aggregate ACK");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type and length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::AGGREGATE_ACK], AGGREGATE_ACK_LEN)?;
        super::check_exact(b.len(), AGGREGATE_ACK_LEN)?;
        if get_u16(b, field::RESERVED) != 0 {
            return Err(Error::Invalid("reserved bytes set"));
        }
        Ok(())
    }
}

/// A parsed aggregate ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateAckRepr {
    /// Job id.
    pub job: u16,
    /// Server index.
    pub server: u16,
    /// Round.
    pub round: u32,
    /// Part acknowledged.
    pub part: u16,
    /// The job's membership token (0: the server has none yet).
    pub token: u32,
}

impl AggregateAckRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<AggregateAckRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        Ok(AggregateAckRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            round: get_u32(b, field::ROUND),
            part: get_u16(b, field::PART),
            token: get_u32(b, field::TOKEN),
        })
    }

    /// Writes the ACK into `buf` ([`AGGREGATE_ACK_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::AGGREGATE_ACK);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::RESERVED, 0);
        put_u32(buf, field::TOKEN, self.token);
    }

    /// The ACK as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; AGGREGATE_ACK_LEN];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reserved() {
        let r = AggregateAckRepr {
            job: 9,
            server: 1,
            round: 77,
            part: 3,
            token: 0xDEAD_BEEF,
        };
        let mut b = r.to_bytes();
        assert_eq!(
            b,
            [0x5A, 0x42, 2, 7, 0, 9, 0, 1, 0, 0, 0, 77, 0, 3, 0, 0, 0xDE, 0xAD, 0xBE, 0xEF]
        );
        assert_eq!(
            AggregateAckRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
        b[15] = 1;
        assert!(Packet::new_checked(&b[..]).is_err());
    }
}
