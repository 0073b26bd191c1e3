//! The user-level stack over an `AF_PACKET` raw socket against the kernel, across a veth
//! pair between two network namespaces. Needs root: run by `scripts/test.sh` (netns step)
//! or `cargo test -p zebra-net --test netns_raw -- --ignored`.

mod common;

use common::{can_run, tcp_both_ways, tcp_refused, tcp_to_itself, udp_echo, Pair};
use zebra_net::Backend;

#[test]
#[ignore = "needs root and network namespaces (scripts/test.sh runs it)"]
fn raw_socket_stack_talks_to_the_kernel() {
    if !can_run() {
        return;
    }
    let pair = Pair::up("r", 1);
    let stack = pair.start_stack(Backend::Raw {
        iface: pair.stack_iface(),
    });
    udp_echo(&pair, &stack, 2000);
    tcp_both_ways(&pair, &stack, 64 << 20);
    tcp_refused(&pair, &stack);
    tcp_to_itself(&pair, &stack, 16 << 20);
    let stats = stack.stats();
    println!("stack: {stats:?}");
    stack.shutdown().expect("clean shutdown");
}

#[test]
#[ignore = "needs root and network namespaces (scripts/test.sh runs it)"]
fn raw_socket_on_a_missing_interface_is_a_clean_error() {
    if !can_run() {
        return;
    }
    let cfg = zebra_net::StackConfig::new(
        Backend::Raw {
            iface: "zebra-nosuch0".into(),
        },
        [10, 1, 2, 3].into(),
        24,
    );
    let err = zebra_net::Stack::start(cfg).expect_err("no such interface");
    assert!(err.to_string().contains("zebra-nosuch0"), "{err}");
}
