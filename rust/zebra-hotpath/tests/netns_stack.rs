//! The hot path over Zebra's user-level stack (a raw socket, or DPDK's af_packet PMD with
//! the `dpdk` feature) across a veth pair, with the exact sums of `common`:
//!
//! 1. worker and server links on the stack, the switch on a kernel socket in the other
//!    namespace, 1 % seeded loss (the UDP path a job takes to a switch elsewhere);
//! 2. the switch on the same stack as the links: every datagram goes to the stack's own
//!    address and comes back through its self-loop (no wire, no ARP answer from outside).
//!
//! Then the stack shuts down with no packet buffer in use. One stack per process (the EAL
//! starts once), so both parts are one test. Needs root: run by `scripts/test.sh` (netns
//! step) or `cargo test -p zebra-hotpath --test netns_stack -- --ignored`.

mod common;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

use common::{config, plan, Cluster, JOB};
use zebra_hotpath::{HotLoss, LinkConfig, SwitchNode, SwitchNodeConfig};
use zebra_net::testbed::{can_run, Pair};
use zebra_net::Stack;

/// Links of `rank` on `stack`, towards `at`.
fn on_stack(
    stack: &Arc<Stack>,
    at: SocketAddr,
    loss: Option<HotLoss>,
) -> impl Fn(u16) -> LinkConfig {
    let stack = stack.clone();
    move |rank| {
        let mut c = LinkConfig::new(config(), JOB, rank, at);
        c.stack = Some(stack.clone());
        c.loss = loss;
        c
    }
}

#[test]
#[ignore = "needs root and network namespaces (scripts/test.sh runs it)"]
fn hot_path_over_the_user_level_stack() {
    if !can_run() {
        return;
    }
    let pair = Pair::up("h", 4);
    let stack = Arc::new(pair.start_stack(pair.backend(cfg!(feature = "dpdk"))));
    let rounds = 60;

    // 1. The switch on a kernel socket in the kernel's namespace.
    let kernel_ip = pair.kernel_ip;
    let loss: HotLoss = "drop=0.01,dup=0.01,seed=3".parse().unwrap();
    let switch = pair
        .in_kernel(move || {
            let mut c = SwitchNodeConfig::new(SocketAddrV4::new(kernel_ip, 0).into(), config());
            c.loss = Some(loss);
            SwitchNode::start(c).expect("switch on the kernel side")
        })
        .join()
        .expect("switch thread");
    let at = switch.local_addr();
    let (plans, expected) = plan(51, rounds);
    let mut c = Cluster::around(Some(switch), on_stack(&stack, at, Some(loss)));
    assert!(c.servers[0].local_addr().ip() == std::net::IpAddr::V4(pair.stack_ip));
    c.run(&plans, rounds, "kernel switch");
    c.check(&expected, rounds, "kernel switch");
    let st = c.finish().expect("a switch ran");
    println!(
        "udp: links on the stack, switch on the kernel: {} rounds, {} pairs added, {} datagrams in",
        rounds, st.switch.added_pairs, st.io.rx_datagrams
    );
    assert!(st.switch.added_pairs > 0);

    // 2. The switch on the stack itself: every datagram through the self-loop.
    let looped_before = stack.stats().looped;
    let listen = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
    let mut sc = SwitchNodeConfig::new(listen, config());
    sc.stack = Some(stack.clone());
    let switch = SwitchNode::start(sc).expect("switch on the stack");
    let at = SocketAddr::V4(SocketAddrV4::new(pair.stack_ip, switch.local_addr().port()));
    let (plans, expected) = plan(52, rounds);
    let mut c = Cluster::around(Some(switch), on_stack(&stack, at, None));
    c.run(&plans, rounds, "switch on the stack");
    c.check(&expected, rounds, "switch on the stack");
    let st = c.finish().expect("a switch ran");
    let looped = stack.stats().looped - looped_before;
    println!(
        "udp: switch and links on one stack: {rounds} rounds, {} pairs added, {looped} frames looped",
        st.switch.added_pairs
    );
    assert!(st.switch.added_pairs > 0);
    assert!(
        looped >= st.io.rx_datagrams,
        "every datagram to the switch looped"
    );

    let stats = stack.stats();
    stack
        .shutdown()
        .expect("the stack closes with no buffer in use");
    println!("udp: stack closed: {stats}");
}
