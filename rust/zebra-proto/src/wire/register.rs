//! Server ↔ switch CPU: where a server's aggregates go.
//!
//! A server sends REGISTER from the socket it receives aggregates on; the
//! switch's control plane records the datagram's source address for
//! `(job, server)` and answers REGISTER_ACK. The address is the source, so
//! a server bound to a wildcard address needs no knowledge of its own.
//!
//! ```text
//!  0..2  magic   2 version   3 type (8 REGISTER, 9 REGISTER_ACK)
//!  4..6  job     6..8 server
//! ```

use super::{check_common, emit_common, get_u16, put_u16, Field, Result};
use crate::consts::{packet_type, REGISTER_LEN};

/// Byte ranges of a registration.
pub mod field {
    use super::Field;
    /// Server index.
    pub const SERVER: Field = 6..8;
}

super::packet_view!("a REGISTER or REGISTER_ACK", "a well-formed registration");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type and length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(
            b,
            &[packet_type::REGISTER, packet_type::REGISTER_ACK],
            REGISTER_LEN,
        )?;
        super::check_exact(b.len(), REGISTER_LEN)
    }
}

/// A parsed registration or its acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterRepr {
    /// Job id.
    pub job: u16,
    /// Server index.
    pub server: u16,
    /// REGISTER_ACK (switch → server) rather than REGISTER.
    pub ack: bool,
}

impl RegisterRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<RegisterRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        Ok(RegisterRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            ack: b[super::field::TYPE] == packet_type::REGISTER_ACK,
        })
    }

    /// Writes the datagram into `buf` ([`REGISTER_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        let t = if self.ack {
            packet_type::REGISTER_ACK
        } else {
            packet_type::REGISTER
        };
        emit_common(buf, t);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
    }

    /// The datagram as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; REGISTER_LEN];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    #[test]
    fn round_trip_both_types() {
        let r = RegisterRepr {
            job: 9,
            server: 1,
            ack: false,
        };
        let b = r.to_bytes();
        assert_eq!(b, [0x5A, 0x42, 1, 8, 0, 9, 0, 1]);
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
        let a = RegisterRepr { ack: true, ..r };
        assert_eq!(a.to_bytes()[3], 9);
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&a.to_bytes()[..]).unwrap()).unwrap(),
            a
        );
    }

    #[test]
    fn wrong_length_is_refused() {
        let mut b = RegisterRepr {
            job: 1,
            server: 0,
            ack: false,
        }
        .to_bytes();
        assert!(matches!(
            Packet::new_checked(&b[..7]),
            Err(Error::Truncated { .. })
        ));
        b.push(0);
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::BadLength { .. })
        ));
    }
}
