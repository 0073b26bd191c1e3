//! What a connection reports to the socket layer above it.

use bytes::Bytes;

use crate::socket_type::SocketType;
use crate::wire::metadata::Metadata;

/// The ZMTP revision the peer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// ZMTP 3.0 (RFC 23): no PING/PONG.
    V3_0,
    /// ZMTP 3.1 (RFC 37) or any later 3.x/4.x, which must fall back to 3.1.
    V3_1,
}

impl Version {
    /// The revision for a peer greeting's version bytes (major >= 3).
    pub const fn from_greeting(major: u8, minor: u8) -> Version {
        if major == 3 && minor == 0 {
            Version::V3_0
        } else {
            Version::V3_1
        }
    }
}

/// The peer as its greeting and READY describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// ZMTP revision in use.
    pub version: Version,
    /// The peer's socket type.
    pub socket_type: SocketType,
    /// The peer's routing identity (empty if it sent none).
    pub identity: Bytes,
    /// Every property of the peer's READY, including unknown ones.
    pub metadata: Metadata,
}

/// An event for the socket layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Both READY commands are exchanged; messages may flow.
    HandshakeDone(PeerInfo),
    /// A complete multipart message (at least one part).
    Message(Vec<Bytes>),
    /// The peer sent PING; the PONG is already queued. The peer asks to be
    /// considered dead after `ttl_deciseconds` tenths of a second without
    /// traffic (0: no limit).
    Ping {
        /// Time to live in tenths of a second.
        ttl_deciseconds: u16,
    },
    /// The peer answered one of our PINGs.
    Pong {
        /// The context it echoed.
        context: Bytes,
    },
    /// The peer sent ERROR and is closing; the connection is now closed.
    PeerError {
        /// The peer's reason.
        reason: Bytes,
    },
}
