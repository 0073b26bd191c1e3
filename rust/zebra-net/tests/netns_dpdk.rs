//! The user-level stack over DPDK (the af_packet PMD on a veth, no hugepages, no PCI)
//! against the kernel, across a veth pair between two network namespaces. One test per
//! process: the EAL starts once per process. Needs root and a DPDK build: run by
//! `scripts/test.sh` (netns step) or `cargo test -p zebra-net --test netns_dpdk -- --ignored`.

mod common;

use common::{can_run, tcp_both_ways, tcp_refused, tcp_to_itself, udp_echo, Pair};
use zebra_net::testbed::{skip, NO_DPDK};
use zebra_net::Backend;

#[test]
#[ignore = "needs root, network namespaces and DPDK (scripts/test.sh runs it)"]
fn dpdk_stack_talks_to_the_kernel_and_leaks_no_mbuf() {
    if !can_run() {
        return;
    }
    if !zebra_net::DPDK_BUILT {
        skip(NO_DPDK);
        return;
    }
    let pair = Pair::up("d", 2);
    let args = zebra_net::testbed::af_packet_args(&pair.stack_iface(), &pair.name);
    let stack = pair.start_stack(Backend::Dpdk { eal_args: args });
    udp_echo(&pair, &stack, 2000);
    tcp_both_ways(&pair, &stack, 64 << 20);
    tcp_refused(&pair, &stack);
    tcp_to_itself(&pair, &stack, 16 << 20);
    let stats = stack.stats();
    println!("stack: {stats:?}");
    assert!(
        stats.buffers_in_use.is_some(),
        "a DPDK stack reports its pool"
    );
    stack
        .shutdown()
        .expect("clean shutdown: port closed, no mbuf in use, EAL cleaned up");
}
