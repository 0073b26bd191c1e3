//! `ipc://` endpoints: Unix stream sockets at a path, or at a name in Linux's
//! abstract namespace (`ipc://@name`), as libzmq.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::stream::{Listener, Stream};

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
