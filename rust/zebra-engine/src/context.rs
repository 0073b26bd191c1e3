//! Contexts: socket limits, I/O threads, inproc names, shutdown and
//! termination with linger.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use zebra_zmtp::SocketType;

use crate::consts::{
    SOCKET_LIMIT, ZMQ_IO_THREADS, ZMQ_IO_THREADS_DFLT, ZMQ_MAX_SOCKETS, ZMQ_MAX_SOCKETS_DFLT,
    ZMQ_SOCKET_LIMIT,
};
use crate::error::{Error, Result};
use crate::inproc::InprocEntry;
use crate::reactor::Reactors;
use crate::signal::Signal;
use crate::socket::SocketCore;
use crate::Socket;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What pipes need from their context after their socket is gone.
#[derive(Debug, Default)]
pub(crate) struct CtxState {
    /// Notified when a socket closes or a lingering pipe ends.
    pub signal: Signal,
    lingering: AtomicUsize,
}

impl CtxState {
    /// A closed socket's pipe keeps flushing.
    pub fn linger_started(&self) {
        self.lingering.fetch_add(1, Ordering::SeqCst);
    }

    /// A lingering pipe ended.
    pub fn linger_done(&self) {
        self.lingering.fetch_sub(1, Ordering::SeqCst);
        self.signal.notify();
    }

    fn lingering(&self) -> usize {
        self.lingering.load(Ordering::SeqCst)
    }
}

#[derive(Debug)]
enum ReactorState {
    NotStarted,
    Running(Arc<Reactors>),
    Stopped,
}

/// The shared state of a context.
#[derive(Debug)]
pub(crate) struct CtxShared {
    pub state: Arc<CtxState>,
    io_threads: AtomicUsize,
    max_sockets: AtomicUsize,
    sockets: Mutex<HashMap<u64, Weak<SocketCore>>>,
    reactors: Mutex<ReactorState>,
    pub inproc: Mutex<HashMap<String, InprocEntry>>,
    next_id: AtomicU64,
    shut: AtomicBool,
    seed: u64,
}

impl CtxShared {
    /// A process-unique id for sockets, pipes and listeners.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The I/O threads, started on first use with `ZMQ_IO_THREADS`.
    pub fn reactors(&self) -> Result<Arc<Reactors>> {
        let mut r = lock(&self.reactors);
        match &*r {
            ReactorState::Running(x) => Ok(x.clone()),
            ReactorState::Stopped => Err(Error::Terminated),
            ReactorState::NotStarted => {
                let n = self.io_threads.load(Ordering::Relaxed).max(1);
                let started = Reactors::start(n)?;
                *r = ReactorState::Running(started.clone());
                Ok(started)
            }
        }
    }

    /// A new socket core, counted against `ZMQ_MAX_SOCKETS`.
    pub fn new_socket(self: &Arc<Self>, socket_type: SocketType) -> Result<Arc<SocketCore>> {
        if self.shut.load(Ordering::Acquire) {
            return Err(Error::Terminated);
        }
        let mut sockets = lock(&self.sockets);
        sockets.retain(|_, s| s.strong_count() > 0);
        if sockets.len() >= self.max_sockets.load(Ordering::Relaxed) {
            return Err(Error::TooManySockets);
        }
        let id = self.next_id();
        let seed = self
            .seed
            .wrapping_add(id.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as u32;
        let core = Arc::new(SocketCore::new(self.clone(), id, socket_type, seed));
        sockets.insert(id, Arc::downgrade(&core));
        drop(sockets);
        if self.shut.load(Ordering::Acquire) {
            core.terminate();
        }
        Ok(core)
    }

    /// A socket closed.
    pub fn socket_closed(&self, id: u64) {
        lock(&self.sockets).remove(&id);
        self.state.signal.notify();
    }

    /// A fresh path for `ipc://*`.
    pub fn fresh_ipc_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!(
            "zebra-{}-{:x}-{}.ipc",
            std::process::id(),
            self.seed,
            self.next_id()
        ))
    }

    fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        let sockets: Vec<Arc<SocketCore>> = lock(&self.sockets)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for s in sockets {
            s.terminate();
        }
    }

    fn open_sockets(&self) -> usize {
        let mut sockets = lock(&self.sockets);
        sockets.retain(|_, s| s.strong_count() > 0);
        sockets.len()
    }
}

impl Drop for CtxShared {
    fn drop(&mut self) {
        let state = std::mem::replace(
            self.reactors.get_mut().unwrap_or_else(|e| e.into_inner()),
            ReactorState::Stopped,
        );
        if let ReactorState::Running(r) = state {
            r.stop();
        }
    }
}

/// A ZeroMQ context (`zmq_ctx_new`). Cheap to clone; every clone is the
/// same context.
#[derive(Debug, Clone)]
pub struct Context {
    shared: Arc<CtxShared>,
}

impl Default for Context {
    fn default() -> Self {
        Context::new()
    }
}

impl Context {
    /// A new context with libzmq's defaults (1 I/O thread, 1023 sockets).
    /// No thread starts before the first socket.
    pub fn new() -> Context {
        let seed = RandomState::new().hash_one(std::process::id());
        Context {
            shared: Arc::new(CtxShared {
                state: Arc::new(CtxState::default()),
                io_threads: AtomicUsize::new(ZMQ_IO_THREADS_DFLT as usize),
                max_sockets: AtomicUsize::new(ZMQ_MAX_SOCKETS_DFLT as usize),
                sockets: Mutex::new(HashMap::new()),
                reactors: Mutex::new(ReactorState::NotStarted),
                inproc: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                shut: AtomicBool::new(false),
                seed,
            }),
        }
    }

    /// `zmq_ctx_set`: `ZMQ_IO_THREADS` (used when the first socket is
    /// made, as libzmq) and `ZMQ_MAX_SOCKETS` (any positive value, as
    /// libzmq on epoll: upstream PS-lite asks for 65536).
    pub fn set(&self, option: i32, value: i32) -> Result<()> {
        match option {
            ZMQ_IO_THREADS if value >= 0 => {
                self.shared
                    .io_threads
                    .store(value as usize, Ordering::Relaxed);
                Ok(())
            }
            ZMQ_MAX_SOCKETS if value >= 1 => {
                self.shared
                    .max_sockets
                    .store(value as usize, Ordering::Relaxed);
                Ok(())
            }
            ZMQ_IO_THREADS | ZMQ_MAX_SOCKETS => Err(Error::Invalid(format!(
                "context option {option}: value {value} out of range"
            ))),
            _ => {
                log::warn!("zebra-engine: zmq_ctx_set: unsupported context option {option}");
                Err(Error::Invalid(format!(
                    "unsupported context option {option}"
                )))
            }
        }
    }

    /// `zmq_ctx_get`.
    pub fn get(&self, option: i32) -> Result<i32> {
        match option {
            ZMQ_IO_THREADS => Ok(self.shared.io_threads.load(Ordering::Relaxed) as i32),
            ZMQ_MAX_SOCKETS => Ok(self.shared.max_sockets.load(Ordering::Relaxed) as i32),
            ZMQ_SOCKET_LIMIT => Ok(SOCKET_LIMIT),
            _ => {
                log::warn!("zebra-engine: zmq_ctx_get: unsupported context option {option}");
                Err(Error::Invalid(format!(
                    "unsupported context option {option}"
                )))
            }
        }
    }

    /// `zmq_socket` for a raw `ZMQ_*` type: PAIR, DEALER and ROUTER
    /// ([`implements_socket_type`]).
    pub fn socket(&self, socket_type: i32) -> Result<Socket> {
        let t = match SocketType::from_raw(socket_type) {
            Some(t) if implements_socket_type(socket_type) => t,
            Some(t) => {
                return Err(Error::NotSupported(format!(
                    "socket type ZMQ_{} ({socket_type}) is not implemented by zebra",
                    t.name()
                )))
            }
            None if socket_type == 11 => {
                return Err(Error::NotSupported(
                    "socket type ZMQ_STREAM (11) is not implemented by zebra".into(),
                ))
            }
            None => return Err(Error::Invalid(format!("unknown socket type {socket_type}"))),
        };
        let core = self.shared.new_socket(t)?;
        Ok(Socket::from_core(core))
    }

    /// `zmq_ctx_shutdown`: every blocking and later call on the context's
    /// sockets fails with `ETERM`; `zmq_close` still works.
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }

    /// `zmq_ctx_term`: shuts down, waits until every socket is closed and
    /// every closed socket's pending output is flushed or its linger has
    /// expired, then stops and joins the I/O threads.
    pub fn terminate(&self) -> Result<()> {
        self.shared.shutdown();
        let state = &self.shared.state;
        loop {
            let seen = state.signal.seq();
            if self.shared.open_sockets() == 0 && state.lingering() == 0 {
                break;
            }
            state.signal.wait(seen, None);
        }
        let reactors = std::mem::replace(&mut *lock(&self.shared.reactors), ReactorState::Stopped);
        if let ReactorState::Running(r) = reactors {
            r.stop_and_join();
        }
        Ok(())
    }
}

/// Whether the engine has sockets of the raw `ZMQ_*` type `socket_type`:
/// PAIR, DEALER and ROUTER.
pub fn implements_socket_type(socket_type: i32) -> bool {
    matches!(
        SocketType::from_raw(socket_type),
        Some(SocketType::Pair | SocketType::Dealer | SocketType::Router)
    )
}
