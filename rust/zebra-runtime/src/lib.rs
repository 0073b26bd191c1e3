//! The PS-lite runtime of Zebra's hot path: in-network aggregation inside a PS-lite
//! process (`ZEBRA_ENABLE=1` with `ZEBRA_SWITCH`), and push traces (`ZEBRA_TRACE`):
//! where the engine's sockets meet `zebra-agent` (the PS-lite-level split and merge)
//! and `zebra-hotpath` (UDP to the switch). `zebra-ffi` (the bridge the C++ shim calls)
//! builds a [`Plan`] once per process, keeps one [`Process`] for it, asks it for each new
//! socket's [`Hook`] and hands it every socket option set; nothing here knows of C++.
//!
//! - **Worker** (`DMLC_ROLE=worker`): every DEALER is hooked. The parts of a
//!   message are kept until its last part; the whole message then goes
//!   through `WorkerAgent::on_send_to_recver`. A split push leaves as its
//!   cold message (with the PUSH trailer), then its hot pairs go to the
//!   switch on the `WorkerLink` of the server's job. One thread per link
//!   turns fallbacks and settled rounds into SETTLE messages on the DEALER of
//!   that server (`worker.rs`).
//! - **Server** (`DMLC_ROLE=server`): the ROUTER is hooked. A pump thread
//!   takes whole messages from the engine through `ServerAgent::on_recv`;
//!   a thread on the `ServerLink` feeds aggregates and applied fallbacks to
//!   the agent and calls its `poll`. What the agent releases waits in an
//!   inbox that the app's `zmq_msg_recv` reads part by part. What the app
//!   sends on the ROUTER (BytePS answers workers there) leaves whole, so
//!   that the agent's own messages to workers never land between its parts
//!   (`server.rs`).
//! - **Online hot keys** (`ZEBRA_HOT=online`): a server's agent sends its
//!   decision on the ROUTER to each worker's DEALER; the DEALER hook takes
//!   it out of what the app reads (BytePS) and reads what waits before each
//!   push (dmlc and MXNet never read their DEALERs).
//! - **The pull half** (`ZEBRA_PULL=switch`, the default with a switch;
//!   `docs/PULL.md`): after each round a server's agent reads the round's
//!   hot values back from the app with a pull shaped like the workers' own,
//!   takes the app's answer out of what it sends on the ROUTER, and the
//!   `ServerLink` sends the values once through the switch to every
//!   worker. A worker's `PullAgent` keeps them and answers the app's
//!   pulls of hot keys from them when they are what the server would
//!   return: the answer is put among what the app reads from the DEALER
//!   (BytePS's van reads its DEALERs; dmlc's and MXNet's servers answer on
//!   DEALERs the shim does not see yet, so their pulls go to the servers).
//! - The process learns its PS-lite node id from the identity `ps<id>` it
//!   gives its DEALERs (PS-lite sets it once the scheduler has assigned the
//!   id, before any push): the worker or server side starts then. Messages
//!   before that pass unchanged.
//! - **Trace** (`ZEBRA_TRACE`, with or without a switch): the worker side
//!   also records the keys of every push it sends (`zebra-hotkeys`'s trace
//!   format), the input of `zebra profile` (`trace.rs`).
//!
//! The job's size comes from PS-lite's own `DMLC_NUM_WORKER` and
//! `DMLC_NUM_SERVER`, read by the bridge and given to [`Plan::from_config`]
//! ([`JobEnv`]); the protocol settings from `ZEBRA_HOT_CONFIG` (the file
//! `zebra switch --config` reads), the hot keys from `ZEBRA_HOT_KEYS` (and
//! `ZEBRA_HOT`).
//!
//! Process-wide state used here and not passed in: the engine's user-level stack
//! (`zebra_engine::process_stack`, shared with the process's `tcp://` endpoints, for
//! the links) and its activity counter (`zebra_engine::notify_activity`, which wakes a
//! thread waiting in `zmq_poll` when a hook has a part for the app).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use zebra_engine::{Error, Socket};

pub mod json;
mod parts;
mod plan;
mod process;
mod server;
mod trace;
mod worker;

pub use plan::{derived_job, hot_path_problems, JobEnv, Plan, DERIVED_JOB_MIN};
pub use process::{Hook, Process};
pub use server::RouterHook;
pub use worker::DealerHook;
pub use zebra_hotpath::Clock;

/// How long a link's event thread sleeps at most between checks.
const EVENT_WAIT: Duration = Duration::from_millis(100);

/// The pull half: a worker's first answers from its copy that are checked
/// against the server's instead of given (`PullAgent`).
const PULL_CHECKS: u32 = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sends a whole message on the engine socket, blocking.
fn send_all(socket: &Socket, frames: Vec<Bytes>) -> Result<(), Error> {
    let n = frames.len();
    for (i, f) in frames.into_iter().enumerate() {
        socket.send(f, i + 1 < n, false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
