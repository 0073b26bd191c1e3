//! Zebra's user-level network stack: smoltcp over a DPDK port ([`Backend::Dpdk`], the
//! af_packet PMD on a veth in the tests) or over a Linux `AF_PACKET` raw socket
//! ([`Backend::Raw`], for hosts without DPDK). The stack owns its own IPv4 address.
//!
//! One network thread per [`Stack`] drives `Interface::poll`: it busy-polls while frames
//! flow and sleeps when idle (until a socket timer, a frame on the raw socket, or a user's
//! wake-up; DPDK's af_packet ports have no interrupt, so there it sleeps in short slices),
//! so several processes can share two cores. Sockets ([`TcpStream`], [`TcpListener`],
//! [`UdpSocket`]) are non-blocking and each owns an `eventfd` that the network thread
//! signals when the socket may have become readable or writable, so `mio` (or `epoll`)
//! can wait on them as on kernel sockets (edge-triggered: act until `WouldBlock`). A
//! `WouldBlock` resets the eventfd under the stack's lock, so the next change signals it
//! again and a waiter never spins on a stale signal.
//!
//! `unsafe` lives in [`sys`] (eventfd, `AF_PACKET`, `ppoll`, `setns`) and the DPDK device,
//! each block with its invariant in a `// SAFETY:` comment.

pub mod blast;
mod config;
mod device;
mod neighbours;
mod stack;
pub mod sys;
mod tcp;
pub mod testbed;
mod udp;

pub use config::{Backend, StackConfig};
pub use stack::{Stack, StackStats};
pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;

/// Whether this build has the DPDK device (the `dpdk` feature, and a system DPDK found at
/// build time).
pub const DPDK_BUILT: bool = cfg!(dpdk);

/// Why a stack could not start (or stopped badly).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This build has no DPDK device.
    #[error("DPDK is not built in (zebra-net without the dpdk feature, or no libdpdk-dev at build time)")]
    DpdkNotBuilt,
    /// `rte_eal_init` failed.
    #[error("DPDK EAL initialisation failed: {0}")]
    Eal(String),
    /// The EAL came up but no port is there (for the af_packet PMD: a bad `iface=`, or no
    /// permission to open a packet socket).
    #[error("DPDK found no Ethernet port (check --vdev and that the process may open packet sockets): {0}")]
    NoPort(String),
    /// Configuring or starting the DPDK port failed.
    #[error("DPDK port {port}: {what}")]
    Port { port: u16, what: String },
    /// The raw socket could not be opened (not root / no `CAP_NET_RAW`, or no such interface).
    #[error("raw socket on {iface}: {source}")]
    Raw {
        iface: String,
        #[source]
        source: std::io::Error,
    },
    /// A bad configuration value.
    #[error("bad network configuration: {0}")]
    Config(String),
    /// Another OS call failed (the network thread, the eventfd).
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// DPDK packet buffers were still in use when the port was closed.
    #[error("mbuf leak: {0} mbufs still in use at shutdown")]
    MbufLeak(u32),
}
