//! Worker → switch → server: one update part arrived.
//!
//! ```text
//!  0..2  magic   2 version   3 type (11)
//!  4..6  job     6..8 server 8..12 seq
//! 12..14 part   14..16 worker 16..20 reserved (0)
//! ```

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Error, Field, Result};
use crate::consts::{packet_type, UPDATE_ACK_LEN};

/// Byte ranges of an update ACK.
pub mod field {
    use super::Field;
    /// Server index.
    pub const SERVER: Field = 6..8;
    /// Update number.
    pub const SEQ: Field = 8..12;
    /// Part acknowledged.
    pub const PART: Field = 12..14;
    /// The worker's rank.
    pub const WORKER: Field = 14..16;
    /// Reserved, zero.
    pub const RESERVED: Field = 16..20;
}

super::packet_view!("an update ACK", "a well-formed update ACK");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type, length, seq and reserved bytes.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::UPDATE_ACK], UPDATE_ACK_LEN)?;
        super::check_exact(b.len(), UPDATE_ACK_LEN)?;
        if get_u32(b, field::RESERVED) != 0 {
            return Err(Error::Invalid("reserved bytes set"));
        }
        if get_u32(b, field::SEQ) == 0 {
            return Err(Error::Invalid("update seq 0"));
        }
        Ok(())
    }

    /// Job id.
    pub fn job(&self) -> u16 {
        get_u16(self.buffer.as_ref(), super::field::JOB)
    }
    /// Server index.
    pub fn server(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SERVER)
    }
    /// The worker's rank.
    pub fn worker(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WORKER)
    }
}

/// A parsed update ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateAckRepr {
    /// Job id.
    pub job: u16,
    /// Server index.
    pub server: u16,
    /// Update number.
    pub seq: u32,
    /// Part acknowledged.
    pub part: u16,
    /// The worker's rank.
    pub worker: u16,
}

impl UpdateAckRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<UpdateAckRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        Ok(UpdateAckRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            seq: get_u32(b, field::SEQ),
            part: get_u16(b, field::PART),
            worker: get_u16(b, field::WORKER),
        })
    }

    /// Writes the ACK into `buf` ([`UPDATE_ACK_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::UPDATE_ACK);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::SEQ, self.seq);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::WORKER, self.worker);
        put_u32(buf, field::RESERVED, 0);
    }

    /// The ACK as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; UPDATE_ACK_LEN];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checks() {
        let r = UpdateAckRepr {
            job: 9,
            server: 1,
            seq: 300,
            part: 3,
            worker: 5,
        };
        let b = r.to_bytes();
        assert_eq!(
            b,
            [0x5A, 0x42, 2, 11, 0, 9, 0, 1, 0, 0, 1, 44, 0, 3, 0, 5, 0, 0, 0, 0]
        );
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.job(), p.server(), p.worker()), (9, 1, 5));
        assert_eq!(UpdateAckRepr::parse(&p).unwrap(), r);
        let mut bad = b.clone();
        bad[19] = 1;
        assert!(Packet::new_checked(&bad[..]).is_err());
        assert!(Packet::new_checked(&UpdateAckRepr { seq: 0, ..r }.to_bytes()[..]).is_err());
        assert!(Packet::new_checked(&b[..19]).is_err());
        let mut long = b.clone();
        long.push(0);
        assert!(Packet::new_checked(&long[..]).is_err());
    }
}
