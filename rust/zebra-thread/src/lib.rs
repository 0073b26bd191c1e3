//! Zebra's background threads: the engine's I/O threads, the user-level stack's network
//! thread, the hot path's I/O threads, the shim's event threads and pumps. All are started
//! by [`spawn`], which names them and makes a panic in one fatal.
//!
//! A PS-lite process cannot go on without these threads: its calls would wait forever for
//! a thread that is gone. So a panic in one is reported on standard error with the thread's
//! name, and the process aborts:
//!
//! ```text
//! zebra: thread zebra-io-0 panicked: <the panic's message>; aborting
//! ```
//!
//! [`testing`] runs a test in a child process, for tests of what happens to a whole
//! process (an abort, a signal).

use std::any::Any;
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::thread::{self, JoinHandle, Thread};

pub mod testing;

/// Starts `f` on a thread named `name`. If `f` panics, the process prints
/// `zebra: thread NAME panicked: MESSAGE; aborting` on standard error and aborts.
pub fn spawn<F, T>(name: impl Into<String>, f: F) -> io::Result<Handle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let name = name.into();
    let builder = thread::Builder::new().name(name.clone());
    let inner = builder.spawn(move || match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => abort(&name, payload.as_ref()),
    })?;
    Ok(Handle(inner))
}

/// Reports a thread's panic and aborts the process.
fn abort(name: &str, payload: &(dyn Any + Send)) -> ! {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a message)");
    // Nothing is left to do if standard error is closed: abort all the same.
    let _ = writeln!(
        io::stderr(),
        "zebra: thread {name} panicked: {message}; aborting"
    );
    std::process::abort()
}

/// A thread started by [`spawn`].
#[derive(Debug)]
pub struct Handle<T>(JoinHandle<T>);

impl<T> Handle<T> {
    /// Waits for the thread and returns what it returned. (A thread that panicked has
    /// aborted the process: there is no panic to return.)
    pub fn join(self) -> T {
        self.0
            .join()
            .unwrap_or_else(|_| unreachable!("a panic in a zebra thread aborts the process"))
    }

    pub fn thread(&self) -> &Thread {
        self.0.thread()
    }

    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}
