//! Zebra's hot path over UDP — kernel sockets, or the user-level stack
//! ([`zebra_net`], smoltcp over DPDK) when a link or the switch is given one
//! — the I/O that drives the pure state machines of [`zebra_proto`].
//!
//! - [`SwitchNode`]: the software switch (`zebra switch`) on one socket
//!   and one thread.
//! - [`WorkerLink`], [`ServerLink`]: the handles a worker or server process
//!   uses: a socket, a background I/O thread, events on a queue.
//! - [`fault`]: seeded drop / duplicate / delay on every node's send path
//!   (`ZEBRA_HOT_LOSS`).
//! - [`hotkeys`]: the hot-keys file (PS-lite keys, hottest first).
//! - [`settings`]: the hot-path configuration file every party reads, and
//!   the knobs `zebra switch` takes as flags.
//!
//! Every node sleeps in `epoll` until a datagram, a protocol timer
//! (`poll_at`) or a wake-up from another thread: nothing spins.
//!
//! ```
//! use std::time::Duration;
//! use zebra_hotpath::{LinkConfig, ServerEvent, ServerLink, SwitchNode, SwitchNodeConfig, WorkerEvent, WorkerLink};
//! use zebra_proto::{Config, JobConfig};
//!
//! let proto = Config::new(vec![JobConfig::new(1, 1, 100, 1)]);
//! let switch = SwitchNode::start(SwitchNodeConfig::new("127.0.0.1:0".parse().unwrap(), proto.clone())).unwrap();
//! let at = switch.local_addr();
//! let server = ServerLink::start(LinkConfig::new(proto.clone(), 1, 0, at)).unwrap();
//! let worker = WorkerLink::start(LinkConfig::new(proto, 1, 0, at)).unwrap();
//! while !server.is_registered() {
//!     std::thread::sleep(Duration::from_millis(1));
//! }
//! let ticket = worker.push(1, vec![(3, 1.5), (40, -2.0)]).unwrap();
//! assert!(matches!(worker.recv_timeout(Duration::from_secs(5)),
//!                  Some(WorkerEvent::RoundDone(s)) if s.round == ticket.round()));
//! let (_, round) = server.next_round(Duration::from_secs(5));
//! assert_eq!(round.unwrap().pairs, vec![(3, 1.5), (40, -2.0)]);
//! ```

pub mod admission;
pub mod clock;
pub mod fault;
pub mod hotkeys;
mod io;
mod link;
mod server_link;
pub mod settings;
mod switch_node;
mod worker_link;

use thiserror::Error;

pub use clock::Clock;
pub use fault::{FaultInjector, FaultStats};
pub use hotkeys::{HotKeys, HotKeysError};
pub use io::IoStats;
pub use link::LinkConfig;
pub use server_link::{
    ServerEvent, ServerLink, ServerLinkStats, REGISTER_KEEPALIVE, REGISTER_RETRY,
};
pub use settings::{Build, HotpathConfig, Settings, SettingsError};
pub use switch_node::{JobNodeStats, SwitchNode, SwitchNodeConfig, SwitchNodeStats, JOB_SILENCE};
pub use worker_link::{Ticket, WorkerEvent, WorkerLink, WorkerLinkStats};
pub use zebra_config::HotLoss;

/// Why a node or link did not start.
#[derive(Debug, Error)]
pub enum StartError {
    /// The protocol configuration is invalid, or does not have this member.
    #[error("invalid hot-path configuration: {0}")]
    Config(#[from] zebra_proto::ConfigError),
    /// A pinned server address names a server the configuration lacks.
    #[error(
        "server address given for job {job} server {server}, which the configuration does not have"
    )]
    UnknownServer {
        /// Job id.
        job: u16,
        /// Server index.
        server: u16,
    },
    /// A socket or thread could not be set up.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}
