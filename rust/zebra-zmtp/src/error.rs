//! Everything that can go wrong while speaking ZMTP.
//!
//! Every variant is fatal for the connection it came from unless the method
//! that returned it says otherwise (e.g. [`Error::PingUnsupported`] from
//! `send_ping` leaves the connection usable).

use thiserror::Error;

/// A ZMTP protocol or usage error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// A buffer handed to a parser is shorter than the structure it holds.
    #[error("truncated input: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes that were available.
        available: usize,
    },

    /// The first or tenth greeting byte is not 0xFF / 0x7F: not a ZMTP 3.x peer.
    #[error("bad greeting signature byte {byte:#04x} at offset {offset}")]
    BadSignature {
        /// Offset of the byte in the greeting.
        offset: usize,
        /// The byte found there.
        byte: u8,
    },

    /// The peer speaks ZMTP 1.0 or 2.0 (major version below 3).
    #[error("unsupported ZMTP version {major} (need 3.x)")]
    UnsupportedVersion {
        /// Major version the peer announced.
        major: u8,
    },

    /// The greeting's mechanism field is empty or holds invalid characters.
    #[error("invalid mechanism field in greeting: {0}")]
    InvalidMechanism(&'static str),

    /// The peer wants a security mechanism other than NULL (CURVE, PLAIN, GSSAPI, ...).
    #[error("unsupported security mechanism {0:?}: only NULL is implemented")]
    UnsupportedMechanism(String),

    /// A frame's flags byte has one of the reserved bits 7..3 set.
    #[error("frame flags {0:#04x} have reserved bits set")]
    ReservedFlags(u8),

    /// A command frame has the MORE flag set (commands are single frames).
    #[error("command frame with MORE flag")]
    CommandWithMore,

    /// A message frame is larger than the configured maximum message size
    /// (ZMQ_MAXMSGSIZE), or a command frame larger than the command limit.
    #[error("frame of {size} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge {
        /// Size the frame header claims.
        size: u64,
        /// The limit in force.
        limit: u64,
    },

    /// A command frame's body does not follow the grammar.
    #[error("malformed {command} command: {reason}")]
    MalformedCommand {
        /// Command name (or "unknown" when the name itself is broken).
        command: String,
        /// What is wrong.
        reason: &'static str,
    },

    /// READY metadata does not follow the property grammar.
    #[error("malformed metadata: {0}")]
    MalformedMetadata(&'static str),

    /// The peer's READY has no Socket-Type property.
    #[error("peer READY lacks the Socket-Type property")]
    MissingSocketType,

    /// The peer's Socket-Type is not one we know.
    #[error("unknown peer socket type {0:?}")]
    UnknownSocketType(String),

    /// The peer's socket type cannot talk to ours (e.g. ROUTER with PAIR).
    #[error("incompatible socket types: we are {ours}, peer is {peer}")]
    IncompatibleSocketType {
        /// Our socket type name.
        ours: &'static str,
        /// The peer's socket type name.
        peer: &'static str,
    },

    /// An identity (ours or the peer's) longer than 255 bytes.
    #[error("identity of {0} bytes is longer than 255")]
    IdentityTooLong(usize),

    /// The peer sent a message frame before the handshake was complete.
    #[error("message frame before the handshake completed")]
    MessageBeforeReady,

    /// The peer sent a command that is not allowed in the current state
    /// (anything but READY/ERROR during the handshake, a second READY, ...).
    #[error("unexpected {0} command")]
    UnexpectedCommand(String),

    /// The byte stream ended inside a greeting, a frame or a multipart message.
    #[error("connection closed in the middle of {0}")]
    UnexpectedEof(&'static str),

    /// `send_message` was given no parts.
    #[error("a message needs at least one part")]
    EmptyMessage,

    /// A PING context longer than 16 bytes.
    #[error("PING context of {0} bytes is longer than 16")]
    PingContextTooLong(usize),

    /// PING/PONG need a ZMTP 3.1 peer and a completed handshake.
    #[error("PING needs a completed handshake with a ZMTP 3.1 peer")]
    PingUnsupported,

    /// The connection has already failed or been closed.
    #[error("connection is closed")]
    Closed,
}

/// Result alias for this crate.
pub type Result<T> = core::result::Result<T, Error>;
