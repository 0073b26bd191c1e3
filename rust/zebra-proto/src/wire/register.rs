//! Server ↔ switch CPU: where a server's aggregates go, and, on a switch
//! that admits jobs as they come (`zebra switch --listen` alone), the job's
//! size.
//!
//! A server sends REGISTER from the socket it receives aggregates on; the
//! switch's control plane records the datagram's source address for
//! `(job, server)` and answers REGISTER_ACK. The address is the source, so
//! a server bound to a wildcard address needs no knowledge of its own.
//!
//! ```text
//!  0..2  magic   2 version   3 type (8 REGISTER, 9 REGISTER_ACK)
//!  4..6  job     6..8 server   8..12 token
//!  with admission (20 bytes):
//! 12..14 workers   14..16 reserved (0)   16..20 capacity
//!  REGISTER_ACK only, last 4 bytes (so 16 or 24 bytes long):
//!  epoch: the switch's incarnation, nonzero, new at every start
//! ```
//!
//! The token (`docs/SECURITY.md`): in a REGISTER, the job's membership
//! token as the server knows it (0: none yet, its first REGISTER); in a
//! REGISTER_ACK, the job's token, which the server shows from then on.
//!
//! With admission, a REGISTER asks for a job of `workers` workers holding
//! `capacity` hot values (this server's share); the REGISTER_ACK says what
//! the switch gave: the same `workers` and the capacity granted, 0 when it
//! has no room for the job or the job it has is of another size.
//!
//! Every REGISTER_ACK ends with the switch's epoch, a nonzero number the
//! switch draws when it starts: servers register again every second, so a
//! switch killed and started again (its registers and records gone) is seen
//! as a new epoch within a second, and the job recovers what the old one
//! held (`zebra_proto::Worker::restart`).

use super::{check_common, emit_common, get_u16, get_u32, put_u16, put_u32, Field, Result};
use crate::consts::{packet_type, EPOCH_LEN, REGISTER_ADMIT_LEN, REGISTER_LEN};

/// Byte ranges of a registration.
pub mod field {
    use super::Field;
    /// Server index.
    pub const SERVER: Field = 6..8;
    /// The job's membership token.
    pub const TOKEN: Field = 8..12;
    /// With admission: workers of the job.
    pub const WORKERS: Field = 12..14;
    /// With admission: zero.
    pub const RESERVED: Field = 14..16;
    /// With admission: hot values asked for (REGISTER) or granted
    /// (REGISTER_ACK; 0: refused).
    pub const CAPACITY: Field = 16..20;
    /// REGISTER_ACK: the switch's epoch, in the last four bytes.
    pub const fn epoch(len: usize) -> Field {
        len - crate::consts::EPOCH_LEN..len
    }
}

super::packet_view!("a REGISTER or REGISTER_ACK", "a well-formed registration");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, type and length (12 bytes, or 20 with admission; a
    /// REGISTER_ACK 4 more, its epoch, which must not be 0), and that the
    /// reserved bytes are zero.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        let t = check_common(
            b,
            &[packet_type::REGISTER, packet_type::REGISTER_ACK],
            REGISTER_LEN,
        )?;
        let extra = if t == packet_type::REGISTER_ACK {
            EPOCH_LEN
        } else {
            0
        };
        if b.len() != REGISTER_LEN + extra {
            super::check_exact(b.len(), REGISTER_ADMIT_LEN + extra)?;
            if get_u16(b, field::RESERVED) != 0 {
                return Err(super::Error::Invalid("REGISTER reserved bytes"));
            }
        }
        if extra > 0 && get_u32(b, field::epoch(b.len())) == 0 {
            return Err(super::Error::Invalid("REGISTER_ACK epoch 0"));
        }
        Ok(())
    }
}

/// What a server asks a switch that admits jobs for (REGISTER), or what it
/// got (REGISTER_ACK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Workers of the job.
    pub workers: u16,
    /// Hot values of this server's job: asked for, or granted (0: refused).
    pub capacity: u32,
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
    /// The job's size, when the server asks to be admitted (16 bytes).
    pub admit: Option<Admission>,
    /// REGISTER_ACK: the switch's epoch (nonzero; a new one at every start
    /// of the switch). 0 in a REGISTER.
    pub epoch: u32,
    /// The job's membership token: as the server knows it (REGISTER; 0:
    /// none yet), or as the switch hands it out (REGISTER_ACK).
    pub token: u32,
}

impl RegisterRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<RegisterRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let ack = b[super::field::TYPE] == packet_type::REGISTER_ACK;
        let body = b.len() - if ack { EPOCH_LEN } else { 0 };
        Ok(RegisterRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            ack,
            admit: (body == REGISTER_ADMIT_LEN).then(|| Admission {
                workers: get_u16(b, field::WORKERS),
                capacity: get_u32(b, field::CAPACITY),
            }),
            epoch: if ack {
                get_u32(b, field::epoch(b.len()))
            } else {
                0
            },
            token: get_u32(b, field::TOKEN),
        })
    }

    /// Length of the datagram.
    pub fn len(&self) -> usize {
        self.body_len() + if self.ack { EPOCH_LEN } else { 0 }
    }

    /// Length without a REGISTER_ACK's epoch.
    fn body_len(&self) -> usize {
        if self.admit.is_some() {
            REGISTER_ADMIT_LEN
        } else {
            REGISTER_LEN
        }
    }

    /// Never empty (a header at least).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the datagram into `buf` ([`len`](Self::len) bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        let t = if self.ack {
            packet_type::REGISTER_ACK
        } else {
            packet_type::REGISTER
        };
        emit_common(buf, t);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        if let Some(a) = self.admit {
            put_u16(buf, field::WORKERS, a.workers);
            put_u16(buf, field::RESERVED, 0);
            put_u32(buf, field::CAPACITY, a.capacity);
        }
        put_u32(buf, field::TOKEN, self.token);
        if self.ack {
            put_u32(buf, field::epoch(self.len()), self.epoch);
        }
    }

    /// The datagram as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.len()];
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
            admit: None,
            epoch: 0,
            token: 0x1122_3344,
        };
        let b = r.to_bytes();
        assert_eq!(
            b,
            [0x5A, 0x42, 2, 8, 0, 9, 0, 1, 0x11, 0x22, 0x33, 0x44],
            "the token ends a REGISTER"
        );
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
        let a = RegisterRepr {
            ack: true,
            epoch: 0xA1B2_C3D4,
            ..r
        };
        assert_eq!(
            a.to_bytes(),
            [0x5A, 0x42, 2, 9, 0, 9, 0, 1, 0x11, 0x22, 0x33, 0x44, 0xA1, 0xB2, 0xC3, 0xD4],
            "the token, then the epoch, end a REGISTER_ACK"
        );
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&a.to_bytes()[..]).unwrap()).unwrap(),
            a
        );
        let admit = RegisterRepr {
            admit: Some(Admission {
                workers: 3,
                capacity: 0x0102_0304,
            }),
            ..r
        };
        let b = admit.to_bytes();
        assert_eq!(
            b,
            [0x5A, 0x42, 2, 8, 0, 9, 0, 1, 0x11, 0x22, 0x33, 0x44, 0, 3, 0, 0, 1, 2, 3, 4],
            "the token after the header, then the job's size"
        );
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            admit
        );
        let granted = RegisterRepr {
            ack: true,
            epoch: 7,
            ..admit
        };
        let b = granted.to_bytes();
        assert_eq!(b.len(), 24);
        assert_eq!(&b[16..], [1, 2, 3, 4, 0, 0, 0, 7]);
        assert_eq!(
            RegisterRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            granted
        );
    }

    #[test]
    fn an_ack_without_its_epoch_or_with_epoch_0_is_refused() {
        let a = RegisterRepr {
            job: 1,
            server: 0,
            ack: true,
            admit: None,
            epoch: 5,
            token: 1,
        }
        .to_bytes();
        assert!(matches!(
            Packet::new_checked(&a[..12]),
            Err(Error::Truncated { .. })
        ));
        let mut zero = a.clone();
        zero[12..].fill(0);
        assert_eq!(
            Packet::new_checked(&zero[..]).err(),
            Some(Error::Invalid("REGISTER_ACK epoch 0"))
        );
    }

    #[test]
    fn wrong_length_is_refused() {
        let mut b = RegisterRepr {
            job: 1,
            server: 0,
            ack: false,
            admit: None,
            epoch: 0,
            token: 0,
        }
        .to_bytes();
        assert!(matches!(
            Packet::new_checked(&b[..11]),
            Err(Error::Truncated { .. })
        ));
        b.push(0);
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Truncated { .. })
        ));
        b.resize(20, 0);
        assert!(Packet::new_checked(&b[..]).is_ok(), "with admission");
        b[14] = 1;
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Invalid(_))
        ));
        b[14] = 0;
        b.push(0);
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::BadLength { .. })
        ));
    }
}
