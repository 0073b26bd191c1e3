//! Test support: a namespace pair from `scripts/netns-pair.sh` with our stack in one
//! namespace and the kernel in the other (used by the netns tests of this crate and of
//! the crates above it). Needs root.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use crate::{sys, Backend, Stack, StackConfig};

/// A namespace pair, removed when dropped. Addresses come from 10.(200+k).(pid).0/24 so
/// that concurrent test processes do not collide.
#[derive(Debug)]
pub struct Pair {
    pub name: String,
    pub kernel_ip: Ipv4Addr,
    pub stack_ip: Ipv4Addr,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/netns-pair.sh")
}

impl Pair {
    pub fn up(tag: &str, k: u8) -> Pair {
        let pid = std::process::id();
        let name = format!("z{tag}{}", pid % 100_000);
        let third = (pid % 250) as u8 + 1;
        let kernel_ip = Ipv4Addr::new(10, 200 + k, third, 1);
        let stack_ip = Ipv4Addr::new(10, 200 + k, third, 2);
        let out = Command::new(script())
            .args(["up", &name, &format!("{kernel_ip}/24")])
            .output()
            .expect("run netns-pair.sh");
        assert!(
            out.status.success(),
            "netns-pair.sh up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Pair {
            name,
            kernel_ip,
            stack_ip,
        }
    }

    pub fn stack_ns(&self) -> String {
        format!("{}-u", self.name)
    }

    pub fn kernel_ns(&self) -> String {
        format!("{}-k", self.name)
    }

    pub fn stack_iface(&self) -> String {
        format!("{}-u0", self.name)
    }

    /// The word after `marker` in what `ip -n KERNEL_NS ARGS` prints.
    fn kernel_ip_word(&self, args: &[&str], marker: &str) -> Option<String> {
        let ns = self.kernel_ns();
        let out = Command::new("ip")
            .args(["-n", &ns])
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut words = text.split_whitespace();
        words.find(|&w| w == marker)?;
        words.next().map(str::to_owned)
    }

    /// The kernel's neighbour entry for the stack's address (its MAC), if it has one.
    pub fn kernel_neighbour(&self) -> Option<String> {
        self.kernel_ip_word(&["neigh", "show", &self.stack_ip.to_string()], "lladdr")
    }

    /// The Ethernet address of the kernel's end of the veth.
    pub fn kernel_mac(&self) -> Option<[u8; 6]> {
        let iface = format!("{}-k0", self.name);
        let text = self.kernel_ip_word(&["-o", "link", "show", "dev", &iface], "link/ether")?;
        let mut mac = [0u8; 6];
        let mut parts = text.split(':');
        for b in &mut mac {
            *b = u8::from_str_radix(parts.next()?, 16).ok()?;
        }
        Some(mac)
    }

    /// The stack's device in the tests of the crates above: DPDK's af_packet PMD on the
    /// stack's interface when `dpdk` (their `dpdk` feature), else a raw socket on it.
    pub fn backend(&self, dpdk: bool) -> Backend {
        if dpdk {
            Backend::Dpdk {
                eal_args: af_packet_args(&self.stack_iface(), &self.name),
            }
        } else {
            Backend::Raw {
                iface: self.stack_iface(),
            }
        }
    }

    /// Starts our stack in the stack namespace (this thread moves there).
    pub fn start_stack(&self, backend: Backend) -> Stack {
        sys::enter_netns(&self.stack_ns()).expect("enter the stack namespace");
        Stack::start(StackConfig::new(backend, self.stack_ip, 24)).expect("start the stack")
    }

    /// Runs `f` on a thread inside the kernel namespace.
    pub fn in_kernel<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let ns = self.kernel_ns();
        std::thread::spawn(move || {
            sys::enter_netns(&ns).expect("enter the kernel namespace");
            f()
        })
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["down", &self.name]).status();
    }
}

/// Whether the netns tests can run here; says why not ([`skip`]).
pub fn can_run() -> bool {
    if !sys::is_root() {
        skip("needs root (network namespaces, packet sockets)");
        return false;
    }
    true
}

/// Why a DPDK test skips in a build without DPDK.
pub const NO_DPDK: &str = "zebra-net was built without DPDK (zebra-dpdk-sys found no system \
     DPDK it can use: its build warning says why)";

/// Says that the calling test skips its work, and why, in the line `scripts/test.sh`
/// counts as a SKIP (not as the pass the test harness reports): `skipped TEST: REASON`.
/// The test's name is its thread's, as the harness names it.
pub fn skip(reason: &str) {
    let current = std::thread::current();
    println!("skipped {}: {reason}", current.name().unwrap_or("(a test)"));
}

/// EAL arguments for the af_packet PMD on `iface` with the larger ring (the default one
/// drops silently under load), no hugepages, no PCI, run files under `prefix`.
pub fn af_packet_args(iface: &str, prefix: &str) -> String {
    format!(
        "--no-huge -m 256 --no-pci --no-shconf --file-prefix={prefix} -l 0 \
         --vdev=net_af_packet0,iface={iface},framecnt=8192,blocksz=65536 --log-level=lib.eal:error"
    )
}
