//! ZeroMQ socket types as ZMTP names them, and which pairs may talk.

use crate::error::{Error, Result};

/// A ZeroMQ socket type that takes part in ZMTP 3.x.
///
/// The numeric values are libzmq's `ZMQ_*` constants, so the C shim can
/// convert with [`SocketType::from_raw`] / [`SocketType::raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// `ZMQ_PAIR`
    Pair,
    /// `ZMQ_PUB`
    Pub,
    /// `ZMQ_SUB`
    Sub,
    /// `ZMQ_REQ`
    Req,
    /// `ZMQ_REP`
    Rep,
    /// `ZMQ_DEALER`
    Dealer,
    /// `ZMQ_ROUTER`
    Router,
    /// `ZMQ_PULL`
    Pull,
    /// `ZMQ_PUSH`
    Push,
    /// `ZMQ_XPUB`
    XPub,
    /// `ZMQ_XSUB`
    XSub,
}

const ALL: [SocketType; 11] = [
    SocketType::Pair,
    SocketType::Pub,
    SocketType::Sub,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Dealer,
    SocketType::Router,
    SocketType::Pull,
    SocketType::Push,
    SocketType::XPub,
    SocketType::XSub,
];

impl SocketType {
    /// Every socket type, in libzmq constant order.
    pub const ALL: [SocketType; 11] = ALL;

    /// The name used in the READY command's `Socket-Type` property.
    pub const fn name(self) -> &'static str {
        match self {
            SocketType::Pair => "PAIR",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
            SocketType::Dealer => "DEALER",
            SocketType::Router => "ROUTER",
            SocketType::Pull => "PULL",
            SocketType::Push => "PUSH",
            SocketType::XPub => "XPUB",
            SocketType::XSub => "XSUB",
        }
    }

    /// Parses a `Socket-Type` property value (ASCII case is ignored).
    pub fn from_name(name: &[u8]) -> Result<SocketType> {
        ALL.iter()
            .copied()
            .find(|t| t.name().as_bytes().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::UnknownSocketType(String::from_utf8_lossy(name).into_owned()))
    }

    /// libzmq's numeric constant (`ZMQ_PAIR` = 0 ... `ZMQ_XSUB` = 10).
    pub const fn raw(self) -> i32 {
        self as i32
    }

    /// The socket type for a libzmq numeric constant, if it speaks ZMTP.
    pub fn from_raw(raw: i32) -> Option<SocketType> {
        usize::try_from(raw).ok().and_then(|i| ALL.get(i).copied())
    }

    /// Whether a socket of this type may talk to a peer of type `peer`
    /// (the table in ZMTP 3.1, RFC 37, "Socket type compatibility").
    pub const fn is_compatible_with(self, peer: SocketType) -> bool {
        use SocketType::*;
        matches!(
            (self, peer),
            (Pair, Pair)
                | (Pub, Sub | XSub)
                | (XPub, Sub | XSub)
                | (Sub, Pub | XPub)
                | (XSub, Pub | XPub)
                | (Req, Rep | Router)
                | (Rep, Req | Dealer)
                | (Dealer, Rep | Dealer | Router)
                | (Router, Req | Dealer | Router)
                | (Pull, Push)
                | (Push, Pull)
        )
    }

    /// Whether READY carries an `Identity` property for this type. libzmq
    /// sends it for REQ, DEALER and ROUTER only; we do the same so that our
    /// handshake is byte-for-byte libzmq's.
    pub const fn sends_identity(self) -> bool {
        matches!(
            self,
            SocketType::Req | SocketType::Dealer | SocketType::Router
        )
    }
}

impl core::fmt::Display for SocketType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ignore_case() {
        for t in SocketType::ALL {
            assert_eq!(SocketType::from_name(t.name().as_bytes()), Ok(t));
            let lower = t.name().to_ascii_lowercase();
            assert_eq!(SocketType::from_name(lower.as_bytes()), Ok(t));
        }
        assert_eq!(
            SocketType::from_name(b"STREAM"),
            Err(Error::UnknownSocketType("STREAM".into()))
        );
        assert!(SocketType::from_name(b"").is_err());
        assert!(SocketType::from_name(&[0xff, 0x00]).is_err());
    }

    #[test]
    fn raw_values_match_libzmq() {
        assert_eq!(SocketType::Pair.raw(), 0);
        assert_eq!(SocketType::Dealer.raw(), 5);
        assert_eq!(SocketType::Router.raw(), 6);
        assert_eq!(SocketType::XSub.raw(), 10);
        for t in SocketType::ALL {
            assert_eq!(SocketType::from_raw(t.raw()), Some(t));
        }
        assert_eq!(SocketType::from_raw(-1), None);
        assert_eq!(SocketType::from_raw(11), None);
    }

    #[test]
    fn compatibility_table() {
        use SocketType::*;
        let ok = [
            (Pair, Pair),
            (Router, Dealer),
            (Router, Router),
            (Router, Req),
            (Dealer, Dealer),
            (Dealer, Rep),
            (Req, Rep),
            (Pub, Sub),
            (XPub, XSub),
            (Push, Pull),
        ];
        for (a, b) in ok {
            assert!(a.is_compatible_with(b), "{a} {b}");
            assert!(b.is_compatible_with(a), "{b} {a}");
        }
        let bad = [
            (Pair, Router),
            (Pair, Dealer),
            (Router, Rep),
            (Dealer, Req),
            (Req, Req),
            (Pub, Pub),
            (Push, Push),
        ];
        for (a, b) in bad {
            assert!(!a.is_compatible_with(b), "{a} {b}");
            assert!(!b.is_compatible_with(a), "{b} {a}");
        }
        for a in SocketType::ALL {
            for b in SocketType::ALL {
                assert_eq!(a.is_compatible_with(b), b.is_compatible_with(a));
            }
        }
    }
}
