//! `inproc://` endpoints: sockets of one context linked directly, each
//! message moved from one socket's pipe into the other's receive queue.
//! Connecting before the name is bound works, as in libzmq 4.x: the pipe
//! queues up to `ZMQ_SNDHWM` messages and delivers them at the bind.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::pipe::Pipe;
use crate::socket::SocketCore;

/// One inproc name: the bound socket and the connects waiting for it.
#[derive(Debug, Default)]
pub(crate) struct InprocEntry {
    bound: Option<Weak<SocketCore>>,
    pending: Vec<Arc<Pipe>>,
}

impl InprocEntry {
    fn binder(&self) -> Option<Arc<SocketCore>> {
        self.bound
            .as_ref()
            .and_then(Weak::upgrade)
            .filter(|s| !s.is_closed())
    }
}

/// libzmq's inproc pipe limit: both high-water marks, or none if either is 0.
fn combined_hwm(sndhwm: usize, rcvhwm: usize) -> usize {
    if sndhwm == 0 || rcvhwm == 0 {
        0
    } else {
        sndhwm + rcvhwm
    }
}

/// Binds `name` to `socket`, linking connects that were waiting for it.
pub(crate) fn bind(socket: &Arc<SocketCore>, name: &str, uri: &str) -> Result<()> {
    let mut names = socket.ctx.inproc.lock().unwrap_or_else(|e| e.into_inner());
    let entry = names.entry(name.to_owned()).or_default();
    if entry.binder().is_some() {
        return Err(Error::AddrInUse(uri.to_owned()));
    }
    entry.bound = Some(Arc::downgrade(socket));
    let pending = std::mem::take(&mut entry.pending);
    for pipe in pending {
        link(&pipe, socket, uri);
    }
    Ok(())
}

/// Connects `pipe` (owned by `socket`) to `name`, now or at its bind.
pub(crate) fn connect(socket: &Arc<SocketCore>, name: &str, pipe: Arc<Pipe>) {
    let mut names = socket.ctx.inproc.lock().unwrap_or_else(|e| e.into_inner());
    let entry = names.entry(name.to_owned()).or_default();
    match entry.binder() {
        Some(binder) => link(&pipe, &binder, pipe.origin.uri()),
        None => {
            entry.pending.retain(|p| !p.lock().terminated);
            entry.pending.push(pipe);
        }
    }
}

/// Releases `name` if `socket` holds it; links already made stay.
pub(crate) fn unbind(socket: &SocketCore, name: &str) {
    let mut names = socket.ctx.inproc.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = names.get_mut(name) {
        let ours = entry
            .bound
            .as_ref()
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), socket));
        if ours {
            entry.bound = None;
        }
        if entry.bound.is_none() && entry.pending.is_empty() {
            names.remove(name);
        }
    }
}

fn routing_id(socket: &SocketCore) -> Bytes {
    socket.options().routing_id
}

/// Links the connecting pipe `a` to a new pipe of `binder`.
fn link(a: &Arc<Pipe>, binder: &Arc<SocketCore>, uri: &str) {
    let Some(connecter) = a.owner.upgrade().filter(|s| !s.is_closed()) else {
        return;
    };
    if !connecter.socket_type.is_compatible_with(binder.socket_type) {
        log::warn!(
            "zebra-engine: inproc {uri}: {} cannot talk to {}",
            connecter.socket_type,
            binder.socket_type
        );
        return;
    }
    let Some(b) = binder.new_inproc_peer(uri) else {
        return;
    };
    let (c_opts, b_opts) = (connecter.pipe_options(), binder.pipe_options());
    b.in_limit.store(
        combined_hwm(c_opts.sndhwm, b_opts.rcvhwm),
        Ordering::Relaxed,
    );
    a.in_limit.store(
        combined_hwm(b_opts.sndhwm, c_opts.rcvhwm),
        Ordering::Relaxed,
    );
    b.lock().link = crate::pipe::Link::Inproc(Arc::downgrade(a));
    if let Err(refused) = binder.attach(&b, &routing_id(&connecter)) {
        log::info!("zebra-engine: inproc {uri}: {}", refused.reason());
        b.finish(None);
        a.finish(None);
        return;
    }
    if connecter.is_router() {
        if let Err(refused) = connecter.attach(a, &routing_id(binder)) {
            log::info!("zebra-engine: inproc {uri}: {}", refused.reason());
            b.finish(None);
            a.finish(None);
            return;
        }
    }
    if !a.link_inproc(&b) {
        b.finish(None);
        return;
    }
    connecter.changed();
    binder.changed();
}
