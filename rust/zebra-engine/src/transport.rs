//! Which network `tcp://` endpoints run over: kernel sockets, or Zebra's user-level stack
//! (`zebra-net`: smoltcp over DPDK or a raw socket) when `ZEBRA_NET` asks for it or the
//! process installed one with [`use_stack`]. Loopback addresses always use the kernel
//! (the user-level stack has no loopback). The kernel path only pays one check of a
//! process-wide cell per connect and bind.

use std::io;
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use zebra_net::Stack;

use crate::error::{Error, Result};
use crate::net::{Listener, Stream};

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

/// A Unix socket address: a path, or with a leading `@` a name in Linux's
/// abstract namespace (`ipc://@name`, as libzmq).
fn unix_addr(path: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    match path.strip_prefix('@') {
        Some(name) => std::os::unix::net::SocketAddr::from_abstract_name(name),
        None => std::os::unix::net::SocketAddr::from_pathname(path),
    }
}

/// Starts connecting to the IPC endpoint `path`.
pub(crate) fn connect_ipc(path: &str) -> io::Result<Stream> {
    mio::net::UnixStream::connect_addr(&unix_addr(path)?).map(Stream::from)
}

/// The socket file of an IPC listener, removed when the listener closes
/// unless another listener has replaced it meanwhile.
#[derive(Debug)]
pub(crate) struct IpcFile {
    path: PathBuf,
    /// Device and inode of the file this listener made.
    id: (u64, u64),
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl IpcFile {
    /// Removes the file if it is still this listener's: a socket bound to
    /// the same path since (which replaced the file) keeps its own.
    pub fn remove(&self) {
        if file_id(&self.path) != Some(self.id) {
            return;
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            log::debug!("zebra-engine: removing {}: {e}", self.path.display());
        }
    }
}

/// Listens on the IPC endpoint `path`; a socket file left there by an
/// earlier process is replaced, as libzmq does. Returns the file to remove
/// when the listener closes (none for an abstract name).
pub(crate) fn bind_ipc(path: &str, uri: &str) -> Result<(Listener, Option<IpcFile>)> {
    let addr = unix_addr(path).map_err(Error::Io)?;
    if let Some(file) = addr.as_pathname() {
        match std::fs::remove_file(file) {
            Ok(()) => log::debug!("zebra-engine: removed stale {}", file.display()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => log::debug!("zebra-engine: removing {}: {e}", file.display()),
        }
    }
    let l = mio::net::UnixListener::bind_addr(&addr).map_err(|e| Error::from_bind(e, uri))?;
    let file = addr.as_pathname().and_then(|path| {
        Some(IpcFile {
            id: file_id(path)?,
            path: path.to_owned(),
        })
    });
    Ok((Listener::Unix(l), file))
}

/// Starts connecting to `addr` from the local address `source` (`tcp://
/// source;host:port`), as libzmq: the socket is bound to it, with
/// `SO_REUSEADDR`, before it connects. Kernel sockets only.
pub(crate) fn connect_from(source: SocketAddr, addr: SocketAddr) -> io::Result<Stream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_reuse_address(true)?;
    socket.bind(&source.into())?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(socket.into()).into())
}

/// Starts connecting to `addr`.
pub(crate) fn connect(addr: SocketAddr) -> io::Result<Stream> {
    match (stack()?, addr) {
        (Some(stack), SocketAddr::V4(v4)) if !v4.ip().is_loopback() => {
            zebra_net::TcpStream::connect(stack, v4).map(Stream::Smol)
        }
        (Some(_), SocketAddr::V6(_)) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the user-level stack is IPv4 only",
        )),
        _ => mio::net::TcpStream::connect(addr).map(Stream::from),
    }
}

/// Listens on `addr` (port 0: a free one); returns the listener and its address.
pub(crate) fn bind(addr: SocketAddr, uri: &str) -> Result<(Listener, SocketAddr)> {
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
            let l = mio::net::TcpListener::bind(addr).map_err(|e| Error::from_bind(e, uri))?;
            let local = l.local_addr()?;
            Ok((Listener::Tcp(l), local))
        }
    }
}
