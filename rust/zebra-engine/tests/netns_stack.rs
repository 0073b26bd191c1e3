//! The engine over the user-level stack (`ZEBRA_NET=raw:IFACE`, or DPDK's af_packet PMD
//! when built with the `dpdk` feature) against a real libzmq in the kernel's namespace,
//! across a veth pair: an engine DEALER connects to a libzmq ROUTER, and a libzmq DEALER
//! connects to an engine ROUTER bound on the stack; every message (up to 1 MiB) is echoed
//! and checked. Needs root: run by `scripts/test.sh` (netns step) or
//! `cargo test -p zebra-engine --test netns_stack -- --ignored`.

use std::sync::Arc;

use bytes::Bytes;
use zebra_engine::{consts, Context};
use zebra_net::testbed::{can_run, Pair};

const MESSAGES: usize = 300;

fn body(i: usize) -> Vec<u8> {
    let len = match i % 3 {
        0 => 1 + i,
        1 => 64 * 1024 + i,
        _ => (1 << 20) - i,
    };
    (0..len).map(|j| (i * 7 + j) as u8).collect()
}

#[test]
#[ignore = "needs root and network namespaces (scripts/test.sh runs it)"]
fn engine_over_the_user_level_stack_talks_to_libzmq() {
    if !can_run() {
        return;
    }
    let pair = Pair::up("e", 3);
    let stack = Arc::new(pair.start_stack(pair.backend(cfg!(feature = "dpdk"))));
    zebra_engine::use_stack(stack.clone()).expect("first network choice of the process");
    let port = 20_000 + (std::process::id() % 20_000) as u16;

    // Engine DEALER -> libzmq ROUTER in the kernel's namespace, which echoes.
    let kernel_ip = pair.kernel_ip;
    let echo = pair.in_kernel(move || {
        let ctx = zmq::Context::new();
        let router = ctx.socket(zmq::ROUTER).unwrap();
        router.bind(&format!("tcp://{kernel_ip}:{port}")).unwrap();
        for _ in 0..MESSAGES {
            let parts = router.recv_multipart(0).unwrap();
            router.send_multipart(parts, 0).unwrap();
        }
    });
    let ctx = Context::new();
    let dealer = ctx.socket(consts::ZMQ_DEALER).unwrap();
    dealer
        .connect(&format!("tcp://{}:{port}", pair.kernel_ip))
        .unwrap();
    let started = std::time::Instant::now();
    let mut bytes = 0;
    for i in 0..MESSAGES {
        let b = body(i);
        bytes += b.len();
        dealer.send(Bytes::from(b.clone()), false, false).unwrap();
        let got = dealer.recv(false).unwrap();
        assert_eq!(&got.data[..], &b[..], "echo {i}");
    }
    echo.join().expect("libzmq echo thread");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "engine DEALER -> libzmq ROUTER: {MESSAGES} echoes, {:.1} MB each way in {secs:.2}s",
        bytes as f64 / 1e6
    );

    // libzmq DEALER in the kernel's namespace -> engine ROUTER bound on the stack.
    let router = ctx.socket(consts::ZMQ_ROUTER).unwrap();
    router.bind(&format!("tcp://*:{port}")).unwrap();
    let stack_ip = pair.stack_ip;
    let client = pair.in_kernel(move || {
        let ctx = zmq::Context::new();
        let dealer = ctx.socket(zmq::DEALER).unwrap();
        dealer.connect(&format!("tcp://{stack_ip}:{port}")).unwrap();
        for i in 0..MESSAGES {
            let b = body(i);
            dealer.send(&b[..], 0).unwrap();
            let got = dealer.recv_bytes(0).unwrap();
            assert_eq!(got, b, "echo {i} at the libzmq dealer");
        }
    });
    for _ in 0..MESSAGES {
        let id = router.recv(false).unwrap();
        assert!(id.more);
        let msg = router.recv(false).unwrap();
        router.send(id.data, true, false).unwrap();
        router.send(msg.data, false, false).unwrap();
    }
    client.join().expect("libzmq dealer thread");
    println!("libzmq DEALER -> engine ROUTER on the stack: {MESSAGES} echoes");
    dealer.close();
    router.close();
    ctx.terminate().unwrap();
    println!("stack: {:?}", stack.stats());
    stack
        .shutdown()
        .expect("clean shutdown: no mbuf in use, EAL cleaned up");
}
