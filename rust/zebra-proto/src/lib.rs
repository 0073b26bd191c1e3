//! Zebra's hot path as pure logic, in the style of quinn-proto and smoltcp:
//! no sockets, threads, clock or randomness. Callers pass time in
//! ([`Timestamp`]) and move the bytes; the state machines say what to send.
//!
//! - [`wire`]: checked views and `Repr`s of every datagram (`WIRE.md`).
//! - [`consts`]: every number the P4 program must share.
//! - [`config`]: the one [`Config`] all parties are built from, validated.
//! - [`layout`]: hot rank → (register, slot), heat-based or random.
//! - [`packing`]: Algorithm 1, packets without register conflicts.
//! - [`switch`]: the aggregation model the P4 program implements (and the
//!   software switch runs): register slots, per-worker records, rounds,
//!   flush, fallback, the CPU part that keeps aggregates until acked.
//! - [`worker`], [`server`]: the end-host state machines.
//! - [`update`]: the pull half's updates, a server's values sent through the
//!   switch to every worker ([`UpdateSender`], [`UpdateReceiver`]).
//!
//! ```
//! use zebra_proto::{Config, JobConfig, Server, ServerAction, Switch, SwitchAction, Timestamp, Worker, WorkerAction};
//!
//! let config = Config::new(vec![JobConfig::new(1, 1, 100, 1)]);
//! let mut switch = Switch::new(config.clone()).unwrap();
//! let mut worker = Worker::new(&config, 1, 0).unwrap();
//! let mut server = Server::new(&config, 1, 0).unwrap();
//! let now = Timestamp::ZERO;
//!
//! let mut to_switch: Vec<Vec<u8>> = worker
//!     .push(now, 1, vec![(3, 1.5), (40, -2.0)])
//!     .unwrap()
//!     .into_iter()
//!     .filter_map(|a| match a { WorkerAction::Send(b) => Some(b), _ => None })
//!     .collect();
//! let mut report = None;
//! while let Some(bytes) = to_switch.pop() {
//!     for action in switch.handle_packet(now, &bytes) {
//!         match action {
//!             SwitchAction::Ack { payload, .. } => { worker.handle_packet(now, &payload); }
//!             SwitchAction::Aggregate { payload, .. } => {
//!                 for a in server.handle_packet(now, &payload) {
//!                     match a {
//!                         ServerAction::Send(ack) => to_switch.push(ack),
//!                         ServerAction::Round(r) => report = Some(r),
//!                         ServerAction::Apply(_) => unreachable!(),
//!                     }
//!                 }
//!             }
//!             other => panic!("{other:?}"),
//!         }
//!     }
//! }
//! let report = report.unwrap();
//! assert_eq!((report.round, report.contributed), (1, 0b1));
//! assert_eq!(report.pairs, vec![(3, 1.5), (40, -2.0)]);
//! ```

pub mod config;
pub mod consts;
pub mod failover;
pub mod fallback;
mod flow;
pub mod job_key;
pub mod layout;
pub mod number;
pub mod packing;
pub mod rng;
pub mod rto;
pub mod server;
pub mod stats;
pub mod switch;
pub mod time;
pub mod update;
pub mod wire;
pub mod worker;

pub use config::{Config, ConfigError, JobConfig};
pub use failover::{SwitchChoice, SwitchWatch};
pub use fallback::{Fallback, FallbackCause};
pub use job_key::job_token;
pub use layout::{Layout, LayoutKind, Location};
pub use number::NumberMode;
pub use packing::Packing;
pub use server::{Coverage, RoundAggregate, Server, ServerAction, ServerError};
pub use stats::{ServerStats, SwitchStats, UpdateReceiverStats, UpdateSenderStats, WorkerStats};
pub use switch::{admission_base, Peer, Refusal, Role, Source, Switch, SwitchAction};
pub use time::Timestamp;
pub use update::{Update, UpdateAction, UpdateError, UpdateEvent, UpdateReceiver, UpdateSender};
pub use worker::{RoundSummary, Worker, WorkerAction, WorkerError};
