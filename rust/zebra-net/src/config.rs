//! What a [`Stack`](crate::Stack) runs over and with which address.

use std::net::Ipv4Addr;
use std::time::Duration;

/// The device under the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A DPDK port, EAL started with these arguments (whitespace-separated, e.g.
    /// `--no-huge -m 256 --no-pci --vdev=net_af_packet0,iface=veth0 -l 0`).
    Dpdk { eal_args: String },
    /// An `AF_PACKET` raw socket on this interface.
    Raw { iface: String },
}

/// A stack's configuration.
#[derive(Debug, Clone)]
pub struct StackConfig {
    pub backend: Backend,
    /// The stack's own address and prefix length.
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    pub gateway: Option<Ipv4Addr>,
    /// Each TCP socket's receive and send buffer.
    pub tcp_buffer: usize,
    /// Each UDP socket's buffer (bytes) and datagram count.
    pub udp_buffer: usize,
    pub udp_datagrams: usize,
    /// Connections a listener holds ready (listening sockets kept open at once).
    pub backlog: usize,
    /// Idle poll rounds spent spinning (yielding) before the network thread sleeps. 200:
    /// 2000 took the CPU from the application's threads on 2 cores (docs/DPDK.md).
    pub spin_rounds: u32,
    /// Longest sleep of an idle network thread on a device without a file descriptor
    /// (DPDK): the added latency of the first frame after a quiet spell.
    pub idle_sleep: Duration,
    /// DPDK: mbufs in the pool, and ring sizes.
    pub mbufs: u32,
    pub rx_ring: u16,
    pub tx_ring: u16,
}

impl StackConfig {
    /// A configuration with the defaults for everything but the device and address.
    pub fn new(backend: Backend, ip: Ipv4Addr, prefix_len: u8) -> StackConfig {
        StackConfig {
            backend,
            ip,
            prefix_len,
            gateway: None,
            tcp_buffer: 1 << 20,
            udp_buffer: 1 << 20,
            udp_datagrams: 1024,
            backlog: 16,
            spin_rounds: 200,
            idle_sleep: Duration::from_micros(200),
            mbufs: 8191,
            rx_ring: 1024,
            tx_ring: 1024,
        }
    }

    /// The stack `ZEBRA_NET` asks for in a checked Zebra configuration (`None`: the
    /// kernel's network). `zebra_config` has already required `ZEBRA_IP` (and, for DPDK,
    /// `ZEBRA_DPDK_ARGS`) with its own messages; this repeats the check for a
    /// configuration built by hand.
    pub fn from_zebra(cfg: &zebra_config::Config) -> Result<Option<StackConfig>, crate::Error> {
        let backend = match &cfg.net {
            zebra_config::Network::Kernel => return Ok(None),
            zebra_config::Network::Dpdk => Backend::Dpdk {
                eal_args: cfg.dpdk_args.clone().unwrap_or_default(),
            },
            zebra_config::Network::Raw(iface) => Backend::Raw {
                iface: iface.clone(),
            },
        };
        let ip = cfg
            .net_ip
            .ok_or_else(|| crate::Error::Config("ZEBRA_NET needs ZEBRA_IP".into()))?;
        let mut net = StackConfig::new(backend, ip.addr, ip.prefix_len);
        net.gateway = cfg.net_gateway;
        Ok(Some(net))
    }

    /// Checks the values a stack cannot start with.
    pub fn validate(&self) -> Result<(), crate::Error> {
        let bad = |why: String| Err(crate::Error::Config(why));
        if self.prefix_len == 0 || self.prefix_len > 32 {
            return bad(format!(
                "prefix length {} is not in 1..=32",
                self.prefix_len
            ));
        }
        if self.ip.is_unspecified() || self.ip.is_broadcast() || self.ip.is_multicast() {
            return bad(format!("{} cannot be an interface address", self.ip));
        }
        if self.tcp_buffer < 4096
            || self.udp_buffer < 4096
            || self.udp_datagrams == 0
            || self.backlog == 0
        {
            return bad("buffers below 4096 bytes, or no datagram or backlog slot".into());
        }
        match &self.backend {
            Backend::Dpdk { eal_args } if eal_args.split_whitespace().next().is_none() => {
                bad("DPDK EAL arguments are empty".into())
            }
            Backend::Raw { iface } if iface.is_empty() || iface.len() >= libc::IFNAMSIZ => {
                bad(format!("interface name {iface:?} is empty or too long"))
            }
            _ => Ok(()),
        }
    }
}
