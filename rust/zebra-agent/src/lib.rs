//! Zebra's PS-lite-level hot/cold split (worker side) and merge (server
//! side), as pure logic: complete ZeroMQ multipart messages in, messages
//! and hot pairs out, time passed in. The shim calls it on every message a
//! PS-lite process sends on a DEALER (worker) or receives on its ROUTER
//! (server), and drives `zebra-proto`'s `Worker` and `Server` over UDP.
//!
//! - [`HotSet`]: hot keys in heat order with their value counts; each
//!   value of a hot key is a hot index of its owning server's job.
//! - [`WorkerAgent`]: a push request to server `s` becomes a cold message
//!   with a PUSH trailer ([`frame`]) and `(hot index, value)` pairs for
//!   round `k` of job `job_base + s`; a settled round becomes a SETTLE
//!   message carrying the fallback pairs.
//! - [`ServerAgent`]: holds a push with a trailer until its round is
//!   settled (aggregate, SETTLE, applied fallbacks), then gives the app one
//!   valid push request per worker with the hot keys merged back (one
//!   carries the sum, the others zeros); keeps each worker's messages in
//!   order; consumes SETTLE messages.
//! - [`online`]: with [`OnlineConfig`], each server re-ranks its keys from
//!   the first rounds and installs a new hot set at one round boundary.
//!
//! # One zebra-proto job per server
//!
//! `zebra_proto::Worker::push` takes all pairs of a round at once, and a
//! round closes at the switch when every worker's DONE has arrived. A
//! PS-lite push reaches the agent as one message per server, one at a
//! time, and servers with no key in the push get none (`KVWorker::Send`
//! skips empty slices), so the agent cannot tell whether more messages of
//! a push will follow; waiting for the next push would block `Wait`. So
//! each server is its own zebra-proto job and each message is one round:
//! the `k`-th push a worker sends to server `s` is round `k` of job
//! `job_base + s`, complete by itself. Workers whose pushes to a server
//! do not line up (sparse pushes that skip a server) still give exact
//! results: each key's sum goes to a request that listed it; only the
//! switch closes such rounds by timeout and more pairs fall back.
//!
//! # Why a SETTLE message
//!
//! The server must know when a worker's hot values are all accounted for,
//! and only the worker knows how its round ended at the switch (which
//! packets were acknowledged, refused or given up). The SETTLE message
//! says so, and carries the refused and given-up pairs, once per round and
//! server (only when the round's trailer listed a hot key).

#![deny(unsafe_code)]

pub mod config;
pub mod frame;
pub mod hotset;
pub mod online;
pub mod pull;
pub mod readback;
pub mod server;
pub mod stats;
pub mod sync;
pub mod values;
pub mod worker;
pub mod worker_pull;

pub use config::{AgentConfig, AgentError, Delivery, OtherValues};
pub use frame::{FrameError, HotSetFrame, PushTrailer, RestartFrame, Settle, ZebraFrame};
pub use hotset::{HotKey, HotSet, HotSetError, KeyRanges, LenLearner};
pub use online::{Aside, Census, Decision, OnlineConfig, Rank};
pub use pull::{Fill, Miss, PullConfig, PullPlan, PullStats, RowUpdate, WorkerPulls};
pub use readback::{ReadBack, ReadBackStats, RoundValues};
pub use server::{ServerAgent, ServerOutput, SwitchHeard};
pub use stats::{PassThrough, ServerAgentStats, WorkerAgentStats};
pub use sync::{EarlyAnswer, EarlyAnswerStats, EarlyAnswers, SyncMode};
pub use worker::{FromServer, Outgoing, SettleMessage, SplitPush, WorkerAgent};
pub use worker_pull::{PullAgent, PullAgentStats, PullSend};

use bytes::Bytes;

/// A multipart message: its frames in order.
pub type Frames = Vec<Vec<u8>>;

/// A multipart message as the engine gives it, each frame shared rather
/// than copied: the server's receive path ([`ServerAgent::on_recv`]) keeps
/// the frames as they came, so a message the agent passes on reaches the
/// app without a copy, and a push it holds is read where it arrived until
/// the merge rebuilds it with its hot keys.
pub type SharedFrames = Vec<Bytes>;

/// `frames` as [`SharedFrames`], each frame moved, not copied.
pub fn shared(frames: Frames) -> SharedFrames {
    frames.into_iter().map(Bytes::from).collect()
}
