//! Which network `tcp://` endpoints run over: kernel sockets, or Zebra's user-level stack
//! (`zebra-net`: smoltcp over DPDK or a raw socket) when `ZEBRA_NET` asks for it or the
//! process installed one with [`use_stack`]. Loopback addresses always use the kernel
//! (the user-level stack has no loopback). The kernel path only pays one check of a
//! process-wide cell per connect and bind.

use std::io;
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::sync::{Arc, OnceLock};

use zebra_net::Stack;

use crate::error::{Error, Result};
use crate::stream::{Listener, Stream};
use crate::tuning::TcpTuning;

/// The process's user-level stack: `None` for the kernel, an error text if it failed to
/// start (every `tcp://` endpoint then fails with it).
static STACK: OnceLock<std::result::Result<Option<Arc<Stack>>, String>> = OnceLock::new();

/// Makes `tcp://` endpoints of every context run over `stack` from now on. Fails (giving
/// the stack back) if the process already chose its network.
pub fn use_stack(stack: Arc<Stack>) -> std::result::Result<(), Arc<Stack>> {
    let mut given = Some(stack);
    STACK.get_or_init(|| Ok(given.take()));
    given.map_or(Ok(()), Err)
}

/// The user-level stack in use, if any (for statistics and shutdown).
pub fn current_stack() -> Option<Arc<Stack>> {
    STACK.get().and_then(|s| s.as_ref().ok().cloned().flatten())
}

/// Starts the stack `ZEBRA_NET` asks for (once per process).
fn from_env() -> std::result::Result<Option<Arc<Stack>>, String> {
    let cfg = zebra_config::Config::from_env().map_err(|e| e.to_string())?;
    let stack = Stack::start_configured(&cfg)?;
    if let Some(s) = &stack {
        log::info!(
            "zebra-engine: tcp:// runs over the user-level stack at {}",
            s.ip()
        );
    }
    Ok(stack.map(Arc::new))
}

/// The process's user-level stack, started now from `ZEBRA_NET` if nobody chose the
/// process's network yet (`None`: the kernel). The hot path binds its UDP socket on it,
/// so that one stack (one DPDK port, one address) carries both.
pub fn process_stack() -> io::Result<Option<Arc<Stack>>> {
    stack().map(|s| s.cloned())
}

fn stack() -> io::Result<Option<&'static Arc<Stack>>> {
    match STACK.get_or_init(from_env) {
        Ok(s) => Ok(s.as_ref()),
        Err(e) => Err(io::Error::other(e.clone())),
    }
}

/// Starts connecting to `addr` (from `source`, if given); a kernel socket
/// takes `tuning` first. The user-level stack takes neither.
pub(crate) fn connect(
    addr: SocketAddr,
    source: Option<SocketAddr>,
    tuning: &TcpTuning,
) -> io::Result<Stream> {
    match (stack()?, addr) {
        (Some(stack), SocketAddr::V4(v4)) if !v4.ip().is_loopback() => {
            zebra_net::TcpStream::connect(stack, v4).map(Stream::Smol)
        }
        (Some(_), SocketAddr::V6(_)) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the user-level stack is IPv4 only",
        )),
        _ => tuning.connect(addr, source).map(Stream::from),
    }
}

/// Listens on `addr` (port 0: a free one); returns the listener and its
/// address. A kernel socket takes `tuning` before it listens.
pub(crate) fn bind(
    addr: SocketAddr,
    uri: &str,
    tuning: &TcpTuning,
) -> Result<(Listener, SocketAddr)> {
    let stack = stack().map_err(Error::Io)?;
    match (stack, addr.ip()) {
        (Some(stack), IpAddr::V4(ip)) if !ip.is_loopback() => {
            if !ip.is_unspecified() && ip != stack.ip() {
                return Err(Error::AddrNotAvailable(uri.to_owned()));
            }
            let l = zebra_net::TcpListener::bind(stack, addr.port()).map_err(|e| {
                if e.kind() == io::ErrorKind::AddrInUse {
                    Error::AddrInUse(uri.to_owned())
                } else {
                    Error::Io(e)
                }
            })?;
            let local = SocketAddr::V4(SocketAddrV4::new(stack.ip(), l.port()));
            Ok((Listener::Smol(l), local))
        }
        _ => {
            let l = tuning.listen(addr).map_err(|e| Error::from_bind(e, uri))?;
            let local = l.local_addr()?;
            Ok((Listener::Tcp(l), local))
        }
    }
}
