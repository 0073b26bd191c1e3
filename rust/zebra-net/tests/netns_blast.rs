//! The PMD's raw rate measurement (`zebra_net::blast`, `netns_perf pmd`) sends what it
//! says: prebuilt UDP frames on the DPDK port alone reach a kernel socket across the
//! veth pair, every one, and the port closes with no mbuf in use. One test per process
//! (the EAL starts once per process). Needs root and a DPDK build: run by
//! `scripts/test.sh` (netns step) or `cargo test -p zebra-net --test netns_blast -- --ignored`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use zebra_net::blast::{blast, Datagrams};
use zebra_net::testbed::{af_packet_args, can_run, skip, Pair, NO_DPDK};
use zebra_net::{sys, Backend, StackConfig};

#[test]
#[ignore = "needs root, network namespaces and DPDK (scripts/test.sh runs it)"]
fn blasted_frames_reach_the_kernel_and_leak_no_mbuf() {
    if !can_run() {
        return;
    }
    if !zebra_net::DPDK_BUILT {
        skip(NO_DPDK);
        return;
    }
    const COUNT: usize = 100;
    let pair = Pair::up("b", 3);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let counter = pair.in_kernel(move || {
        let sock = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("kernel UDP bind");
        sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        ready_tx.send(sock.local_addr().unwrap().port()).unwrap();
        let mut buf = [0u8; 2048];
        let mut sizes = Vec::new();
        while sizes.len() < COUNT {
            match sock.recv(&mut buf) {
                Ok(n) => sizes.push(n),
                Err(_) => break,
            }
        }
        sizes
    });
    let port = ready_rx.recv().expect("kernel UDP port");
    let to_mac = pair.kernel_mac().expect("the kernel veth's MAC");
    sys::enter_netns(&pair.stack_ns()).expect("enter the stack namespace");
    let cfg = StackConfig::new(
        Backend::Dpdk {
            eal_args: af_packet_args(&pair.stack_iface(), &pair.name),
        },
        pair.stack_ip,
        24,
    );
    let what = Datagrams {
        to_mac,
        to: SocketAddrV4::new(pair.kernel_ip, port),
        from_port: 7000,
        payload: 192,
        count: COUNT as u64,
    };
    let b = blast(&cfg, &what).expect("blast, then a clean close (no mbuf in use)");
    println!("blast: {b:?}");
    assert_eq!((b.sent, b.dropped), (COUNT as u64, 0));
    let sizes = counter.join().unwrap();
    assert_eq!(
        sizes,
        vec![192; COUNT],
        "every datagram reached the kernel, whole"
    );
}
