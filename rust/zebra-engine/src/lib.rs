//! ZeroMQ contexts and sockets with libzmq 4.3's semantics, over the pure
//! ZMTP logic of [`zebra_zmtp`], on kernel TCP and Unix sockets: the native
//! engine behind the `libzmq.so.5` shim when `ZEBRA_ENABLE=1`.
//!
//! The API mirrors the C calls PS-lite makes, with raw `ZMQ_*` numbers so
//! that the shim forwards its arguments unchanged:
//!
//! | C | here |
//! |---|---|
//! | `zmq_ctx_new` / `zmq_ctx_set` / `zmq_ctx_get` | [`Context::new`], [`Context::set`], [`Context::get`] |
//! | `zmq_socket` | [`Context::socket`] (PAIR, DEALER, ROUTER) |
//! | `zmq_ctx_shutdown` / `zmq_ctx_term` | [`Context::shutdown`], [`Context::terminate`] |
//! | `zmq_setsockopt` / `zmq_getsockopt` | [`Socket::set_option`], [`Socket::get_option`] |
//! | `zmq_bind` / `zmq_connect` / `zmq_unbind` / `zmq_disconnect` | same names |
//! | `zmq_msg_send` / `zmq_msg_recv` | [`Socket::send`], [`Socket::recv`] (one part each) |
//! | `zmq_socket_monitor` | [`Socket::monitor`] |
//! | `ZMQ_EVENTS` | [`Socket::events`] |
//! | `zmq_poll` over sockets | [`poll()`] |
//! | `zmq_close` | [`Socket::close`] |
//!
//! Errors carry libzmq's errno ([`Error::errno`]).
//!
//! # Threads
//!
//! A context runs `ZMQ_IO_THREADS` I/O threads (a `mio` poll loop each)
//! that accept, connect, read, run handshakes, reconnect and finish lingering
//! output. A sending thread encodes its message itself and, after a quiet
//! spell, writes it to the kernel too, so a message costs no thread
//! hand-off; streams of messages and what does not fit are written by the
//! I/O thread, and no write holds a lock. Received messages are appended,
//! whole, to the socket's queue, their bodies slices of the I/O thread's
//! read buffer or, when large, read by the kernel straight into their own
//! buffer; a blocked `recv` sleeps on a condition variable, and an empty
//! non-blocking `recv` is two atomic loads.
//!
//! ```
//! use bytes::Bytes;
//! use zebra_engine::{consts, Context};
//!
//! let ctx = Context::new();
//! let server = ctx.socket(consts::ZMQ_ROUTER).unwrap();
//! server.bind("inproc://doc").unwrap();
//! let client = ctx.socket(consts::ZMQ_DEALER).unwrap();
//! client.set_option(consts::opt::ROUTING_ID, b"w1").unwrap();
//! client.connect("inproc://doc").unwrap();
//! client.send(Bytes::from_static(b"hello"), false, false).unwrap();
//! assert_eq!(&server.recv(false).unwrap().data[..], b"w1");
//! assert_eq!(&server.recv(false).unwrap().data[..], b"hello");
//! client.close();
//! server.close();
//! ctx.terminate().unwrap();
//! ```

pub mod consts;
mod context;
mod endpoint;
mod error;
mod filters;
mod inbound;
mod inproc;
mod ipc;
mod monitor;
mod options;
mod options_table;
mod pipe;
mod poll;
mod reactor;
mod routing;
mod signal;
mod socket;
mod stream;
mod transport;
mod tuning;

pub use bytes::Bytes;
pub use context::{implements_socket_type, Context};
pub use error::{Error, Result};
pub use options_table::markdown as options_markdown;
pub use poll::{activity, notify_activity, poll, wait_activity};
pub use socket::Part;
pub use transport::{current_stack, process_stack, use_stack};

use std::sync::Arc;

use socket::SocketCore;

/// Checks `value`, read for `option`, against a `zmq_getsockopt` buffer of
/// `capacity` bytes as libzmq does: integers of its option store need a
/// buffer of exactly their size, other values one at least as large
/// (`EINVAL` otherwise).
pub fn fit_option(option: i32, capacity: usize, value: Vec<u8>) -> Result<Vec<u8>> {
    options::fit(option, capacity, value)
}

/// Closes the socket when the last clone of a [`Socket`] is dropped.
#[derive(Debug)]
struct Handle {
    core: Arc<SocketCore>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.core.close();
    }
}

/// A ZeroMQ socket. Cheap to clone; every clone is the same socket, and
/// the socket closes (as [`Socket::close`]) when the last clone is dropped.
///
/// Like libzmq sockets, a socket is meant to be used by one thread at a
/// time; using it from several at once is memory-safe but interleaves
/// multipart messages.
#[derive(Debug, Clone)]
pub struct Socket {
    handle: Arc<Handle>,
}

impl Socket {
    pub(crate) fn from_core(core: Arc<SocketCore>) -> Socket {
        Socket {
            handle: Arc::new(Handle { core }),
        }
    }

    fn core(&self) -> &Arc<SocketCore> {
        &self.handle.core
    }

    /// `zmq_setsockopt`: `value` is the option's bytes as C passes them
    /// (ints native-endian; `ZMQ_MAXMSGSIZE` and `ZMQ_AFFINITY` 8 bytes).
    pub fn set_option(&self, option: i32, value: &[u8]) -> Result<()> {
        self.core().set_option(option, value)
    }

    /// `zmq_setsockopt(option, NULL, 0)`: empties an accept filter, or a
    /// string option that takes `NULL`; `EINVAL` for the others, as libzmq.
    pub fn reset_option(&self, option: i32) -> Result<()> {
        self.core().reset_option(option)
    }

    /// `zmq_getsockopt`: the bytes libzmq would write (strings such as
    /// `ZMQ_LAST_ENDPOINT` end with a NUL), whatever the caller's buffer.
    pub fn get_option(&self, option: i32) -> Result<Vec<u8>> {
        self.core().get_option(option)
    }

    /// `zmq_getsockopt` into a buffer of `capacity` bytes: [`get_option`],
    /// with libzmq's checks of the buffer ([`fit_option`]).
    ///
    /// [`get_option`]: Socket::get_option
    pub fn get_option_into(&self, option: i32, capacity: usize) -> Result<Vec<u8>> {
        fit_option(option, capacity, self.get_option(option)?)
    }

    /// `zmq_bind` to `tcp://`, `ipc://` or `inproc://`.
    pub fn bind(&self, endpoint: &str) -> Result<()> {
        self.core().bind(endpoint)
    }

    /// `zmq_connect`: returns at once; the connection is made (and remade)
    /// in the background every `ZMQ_RECONNECT_IVL` ms.
    pub fn connect(&self, endpoint: &str) -> Result<()> {
        self.core().connect(endpoint)
    }

    /// `zmq_unbind`: closes the listener and the connections it accepted.
    pub fn unbind(&self, endpoint: &str) -> Result<()> {
        self.core().unbind(endpoint)
    }

    /// `zmq_disconnect`: ends a connect, flushing within `ZMQ_LINGER`.
    pub fn disconnect(&self, endpoint: &str) -> Result<()> {
        self.core().disconnect(endpoint)
    }

    /// `zmq_msg_send` of one part; `more` is `ZMQ_SNDMORE`, `dontwait`
    /// `ZMQ_DONTWAIT`. A message goes out whole once its last part is sent.
    pub fn send(&self, data: Bytes, more: bool, dontwait: bool) -> Result<()> {
        self.core().send(data, more, dontwait)
    }

    /// `zmq_msg_recv` of one part (`ZMQ_DONTWAIT` if `dontwait`).
    #[inline]
    pub fn recv(&self, dontwait: bool) -> Result<Part> {
        self.core().recv(dontwait)
    }

    /// `zmq_socket_monitor`: publish `events` on the inproc PAIR endpoint;
    /// `None` stops monitoring.
    pub fn monitor(&self, endpoint: Option<&str>, events: i32) -> Result<()> {
        self.core().monitor(endpoint, events)
    }

    /// `ZMQ_POLLIN | ZMQ_POLLOUT` as they stand now (0 once closed or
    /// terminated).
    pub fn events(&self) -> i32 {
        self.core().events()
    }

    /// The socket's events, or why it has none (`ENOTSOCK`, `ETERM`).
    pub(crate) fn ready_events(&self) -> Result<i32> {
        self.core().check_usable()?;
        Ok(self.core().events())
    }

    /// `zmq_close`: returns at once; pending output is flushed in the
    /// background for up to `ZMQ_LINGER` ms. Later calls fail with
    /// `ENOTSOCK`.
    pub fn close(&self) {
        self.core().close();
    }
}
