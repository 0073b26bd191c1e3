//! ZMTP 3.x, the ZeroMQ wire protocol, as pure logic (quinn-proto /
//! smoltcp style): no sockets, no threads, no clock. Bytes go in through
//! [`Connection::handle_input`] (or, without copying message bodies,
//! [`Connection::handle_input_bytes`] and [`Connection::read_body_from`]);
//! bytes to send come out of [`Connection::poll_output`]; what happened
//! comes out of [`Connection::poll_event`] (message parts also one by one,
//! [`Connection::poll_message_part`]). Tests drive two connections back to
//! back.
//!
//! - [`wire`]: checked parsers and emitters for the greeting, frames,
//!   commands (READY, ERROR, PING, PONG) and READY metadata.
//! - [`decoder`]: a streaming frame decoder with size limits that never
//!   allocates ahead of the bytes it has received unless told how far it
//!   may ([`Config::reserve_ahead`]).
//! - [`connection`]: the NULL-mechanism handshake, socket-type checks,
//!   multipart messages and heartbeats.
//!
//! Only the NULL security mechanism is implemented; a peer asking for
//! PLAIN, CURVE or GSSAPI is refused with [`Error::UnsupportedMechanism`].
//! ZMTP 1.0/2.0 peers are refused with [`Error::UnsupportedVersion`].
//!
//! ```
//! use zebra_zmtp::{Config, Connection, Event, SocketType};
//!
//! let mut a = Connection::new(Config::new(SocketType::Dealer).with_identity("w1")).unwrap();
//! let mut b = Connection::new(Config::new(SocketType::Router)).unwrap();
//! a.send_message([&b"hello"[..], &b"world"[..]]).unwrap();
//! for _ in 0..3 {
//!     while let Some(chunk) = a.poll_output() {
//!         b.handle_input(&chunk).unwrap();
//!     }
//!     while let Some(chunk) = b.poll_output() {
//!         a.handle_input(&chunk).unwrap();
//!     }
//! }
//! assert!(matches!(b.poll_event(), Some(Event::HandshakeDone(p)) if p.identity == "w1"));
//! assert_eq!(
//!     b.poll_event(),
//!     Some(Event::Message(vec!["hello".into(), "world".into()]))
//! );
//! ```

pub mod connection;
pub mod decoder;
pub mod error;
pub mod event;
pub mod output;
pub mod socket_type;
pub mod wire;

pub use bytes::Bytes;
pub use connection::{Config, Connection, DEFAULT_MAX_COMMAND_SIZE};
pub use error::{Error, Result};
pub use event::{Event, PeerInfo, Version};
pub use socket_type::SocketType;
