//! Errors with the errno values libzmq reports for the same condition.

use thiserror::Error;

use crate::consts::{ENOCOMPATPROTO, ETERM};

/// A failed context or socket call. [`Error::errno`] gives the value that
/// libzmq leaves in `errno` for the same failure.
#[derive(Debug, Error)]
pub enum Error {
    /// The call would block (`EAGAIN`): nothing to receive, the peer's
    /// queue is full, or a send/receive timeout expired.
    #[error("resource temporarily unavailable")]
    Again,
    /// A ROUTER with `ZMQ_ROUTER_MANDATORY` was asked to send to an
    /// unknown peer (`EHOSTUNREACH`).
    #[error("host unreachable: no peer with that routing id")]
    HostUnreachable,
    /// A bad argument: option value, endpoint syntax, ... (`EINVAL`).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// Something libzmq has that we do not implement (`ENOTSUP`).
    #[error("not supported: {0}")]
    NotSupported(String),
    /// The address is already bound (`EADDRINUSE`).
    #[error("address already in use: {0}")]
    AddrInUse(String),
    /// The address is not local to this host (`EADDRNOTAVAIL`).
    #[error("address not available: {0}")]
    AddrNotAvailable(String),
    /// The socket's context was shut down or terminated (`ETERM`).
    #[error("context was terminated")]
    Terminated,
    /// `ZMQ_MAX_SOCKETS` sockets are already open (`EMFILE`).
    #[error("too many open sockets")]
    TooManySockets,
    /// The transport of an endpoint needs other socket types (multicast,
    /// UDP: `ENOCOMPATPROTO`).
    #[error("protocol not compatible with the socket type: {0}")]
    NoCompatProto(String),
    /// The transport of an endpoint is unknown or not implemented
    /// (`EPROTONOSUPPORT`).
    #[error("protocol not supported: {0}")]
    ProtocolNotSupported(String),
    /// A bind address names no interface or host we can resolve (`ENODEV`).
    #[error("no such device: {0}")]
    NoDevice(String),
    /// `zmq_unbind`/`zmq_disconnect` of an endpoint the socket does not
    /// have (`ENOENT`).
    #[error("endpoint not found: {0}")]
    NotFound(String),
    /// The socket was closed (`ENOTSOCK`).
    #[error("socket is closed")]
    NotSocket,
    /// An operating system error, with its own errno.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The errno value libzmq sets for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Again => libc::EAGAIN,
            Error::HostUnreachable => libc::EHOSTUNREACH,
            Error::Invalid(_) => libc::EINVAL,
            Error::NotSupported(_) => libc::ENOTSUP,
            Error::AddrInUse(_) => libc::EADDRINUSE,
            Error::AddrNotAvailable(_) => libc::EADDRNOTAVAIL,
            Error::Terminated => ETERM,
            Error::TooManySockets => libc::EMFILE,
            Error::ProtocolNotSupported(_) => libc::EPROTONOSUPPORT,
            Error::NoCompatProto(_) => ENOCOMPATPROTO,
            Error::NoDevice(_) => libc::ENODEV,
            Error::NotFound(_) => libc::ENOENT,
            Error::NotSocket => libc::ENOTSOCK,
            Error::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// Maps an error from binding a listener to libzmq's errno classes.
    pub(crate) fn from_bind(e: std::io::Error, endpoint: &str) -> Error {
        match e.raw_os_error() {
            Some(libc::EADDRINUSE) => Error::AddrInUse(endpoint.to_owned()),
            Some(libc::EADDRNOTAVAIL) => Error::AddrNotAvailable(endpoint.to_owned()),
            _ => Error::Io(e),
        }
    }
}

/// Result alias for this crate.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_values_are_libzmqs() {
        assert_eq!(Error::Terminated.errno(), 156_384_712 + 53);
        assert_eq!(Error::Again.errno(), 11);
        assert_eq!(Error::HostUnreachable.errno(), 113);
        assert_eq!(Error::TooManySockets.errno(), 24);
        assert_eq!(Error::NotSupported(String::new()).errno(), 95);
        assert_eq!(Error::ProtocolNotSupported(String::new()).errno(), 93);
        assert_eq!(Error::NotFound(String::new()).errno(), 2);
        let io = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(Error::Io(io).errno(), libc::EACCES);
        let e = Error::from_bind(std::io::Error::from_raw_os_error(libc::EADDRINUSE), "x");
        assert!(matches!(e, Error::AddrInUse(_)));
    }
}
