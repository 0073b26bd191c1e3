//! Engine micro-benchmarks against the real libzmq in the same run:
//! the cost of an empty non-blocking receive, one-way throughput
//! (DEALER -> ROUTER over TCP loopback) and round-trip latency.
//!
//! `cargo run --release -p zebra-engine --example bench [-- [quick] [empty|thr64|thr1m|rtt|thr64-zebra|thr1m-zebra]...]`

use std::time::{Duration, Instant};

use zebra_engine::consts::{opt, ZMQ_DEALER, ZMQ_ROUTER};
use zebra_engine::{Bytes, Context, Error};

fn set_int(s: &zebra_engine::Socket, o: i32, v: i32) {
    s.set_option(o, &v.to_ne_bytes()).unwrap();
}

fn ours_empty_recv(calls: u64) -> f64 {
    let ctx = Context::new();
    let s = ctx.socket(ZMQ_ROUTER).unwrap();
    s.bind("tcp://127.0.0.1:*").unwrap();
    let t = Instant::now();
    for _ in 0..calls {
        assert!(matches!(s.recv(true), Err(Error::Again)));
    }
    let ns = t.elapsed().as_nanos() as f64 / calls as f64;
    s.close();
    ctx.terminate().unwrap();
    ns
}

fn libzmq_empty_recv(calls: u64) -> f64 {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::ROUTER).unwrap();
    s.bind("tcp://127.0.0.1:*").unwrap();
    let mut msg = zmq::Message::new();
    let t = Instant::now();
    for _ in 0..calls {
        assert!(s.recv(&mut msg, zmq::DONTWAIT).is_err());
    }
    t.elapsed().as_nanos() as f64 / calls as f64
}

/// Messages per second from a DEALER to a ROUTER, one part each.
fn ours_throughput(size: usize, count: usize) -> f64 {
    let ctx = Context::new();
    let router = ctx.socket(ZMQ_ROUTER).unwrap();
    set_int(&router, opt::RCVHWM, 1000);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = String::from_utf8(router.get_option(opt::LAST_ENDPOINT).unwrap())
        .unwrap()
        .trim_end_matches('\0')
        .to_owned();
    let body = Bytes::from(vec![1u8; size]);
    let sender = std::thread::spawn(move || {
        let ctx = Context::new();
        let dealer = ctx.socket(ZMQ_DEALER).unwrap();
        dealer.set_option(opt::ROUTING_ID, b"d").unwrap();
        dealer.connect(&ep).unwrap();
        for _ in 0..count {
            dealer.send(body.clone(), false, false).unwrap();
        }
        dealer.close();
        ctx.terminate().unwrap();
    });
    let first = router.recv(false).unwrap();
    assert!(first.more);
    router.recv(false).unwrap();
    let t = Instant::now();
    for _ in 1..count {
        router.recv(false).unwrap();
        let p = router.recv(false).unwrap();
        assert_eq!(p.data.len(), size);
    }
    let rate = (count - 1) as f64 / t.elapsed().as_secs_f64();
    sender.join().unwrap();
    router.close();
    ctx.terminate().unwrap();
    rate
}

fn libzmq_throughput(size: usize, count: usize) -> f64 {
    let ctx = zmq::Context::new();
    let router = ctx.socket(zmq::ROUTER).unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = router.get_last_endpoint().unwrap().unwrap();
    let body = vec![1u8; size];
    let sender = std::thread::spawn(move || {
        let ctx = zmq::Context::new();
        let dealer = ctx.socket(zmq::DEALER).unwrap();
        dealer.set_identity(b"d").unwrap();
        dealer.connect(&ep).unwrap();
        for _ in 0..count {
            dealer.send(&body[..], 0).unwrap();
        }
        drop(dealer);
    });
    let mut msg = zmq::Message::new();
    router.recv(&mut msg, 0).unwrap();
    router.recv(&mut msg, 0).unwrap();
    let t = Instant::now();
    for _ in 1..count {
        router.recv(&mut msg, 0).unwrap();
        router.recv(&mut msg, 0).unwrap();
        assert_eq!(msg.len(), size);
    }
    let rate = (count - 1) as f64 / t.elapsed().as_secs_f64();
    sender.join().unwrap();
    rate
}

/// Mean round trip of a small message, DEALER <-> ROUTER echo.
fn ours_latency(rounds: usize) -> Duration {
    let ctx = Context::new();
    let router = ctx.socket(ZMQ_ROUTER).unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = String::from_utf8(router.get_option(opt::LAST_ENDPOINT).unwrap())
        .unwrap()
        .trim_end_matches('\0')
        .to_owned();
    let echo = std::thread::spawn(move || {
        for _ in 0..rounds {
            let id = router.recv(false).unwrap().data;
            let body = router.recv(false).unwrap().data;
            router.send(id, true, false).unwrap();
            router.send(body, false, false).unwrap();
        }
        router.close();
    });
    let dealer = ctx.socket(ZMQ_DEALER).unwrap();
    dealer.connect(&ep).unwrap();
    let body = Bytes::from_static(&[0u8; 64]);
    dealer.send(body.clone(), false, false).unwrap();
    dealer.recv(false).unwrap();
    let t = Instant::now();
    for _ in 1..rounds {
        dealer.send(body.clone(), false, false).unwrap();
        dealer.recv(false).unwrap();
    }
    let rtt = t.elapsed() / (rounds as u32 - 1);
    echo.join().unwrap();
    dealer.close();
    ctx.terminate().unwrap();
    rtt
}

fn libzmq_latency(rounds: usize) -> Duration {
    let ctx = zmq::Context::new();
    let router = ctx.socket(zmq::ROUTER).unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = router.get_last_endpoint().unwrap().unwrap();
    let echo = std::thread::spawn(move || {
        for _ in 0..rounds {
            let m = router.recv_multipart(0).unwrap();
            router.send_multipart(m, 0).unwrap();
        }
    });
    let dealer = ctx.socket(zmq::DEALER).unwrap();
    dealer.connect(&ep).unwrap();
    let body = [0u8; 64];
    dealer.send(&body[..], 0).unwrap();
    dealer.recv_bytes(0).unwrap();
    let t = Instant::now();
    for _ in 1..rounds {
        dealer.send(&body[..], 0).unwrap();
        dealer.recv_bytes(0).unwrap();
    }
    let rtt = t.elapsed() / (rounds as u32 - 1);
    echo.join().unwrap();
    rtt
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "quick");
    let only = |name: &str| {
        let picked: Vec<&String> = args.iter().filter(|a| *a != "quick").collect();
        picked.is_empty() || picked.iter().any(|a| *a == name)
    };
    let scale = if quick { 10 } else { 1 };
    if only("empty") {
        let calls = 50_000_000 / scale as u64;
        println!(
            "empty recv(DONTWAIT): zebra {:.2} ns/call, libzmq {:.2} ns/call",
            ours_empty_recv(calls),
            libzmq_empty_recv(calls)
        );
    }
    for (name, size, count) in [
        ("thr64", 64, 2_000_000 / scale),
        ("thr1m", 1 << 20, 4000 / scale),
    ] {
        if !only(name) && !only(&format!("{name}-zebra")) {
            continue;
        }
        let o = ours_throughput(size, count);
        let l = if args.iter().any(|a| *a == format!("{name}-zebra")) {
            f64::NAN
        } else {
            libzmq_throughput(size, count)
        };
        let mb = |r: f64| r * size as f64 / 1e6;
        println!(
            "throughput {size:>8} B: zebra {o:>10.0} msg/s {:>8.1} MB/s, libzmq {l:>10.0} msg/s {:>8.1} MB/s, ratio {:.2}",
            mb(o),
            mb(l),
            o / l
        );
    }
    if only("rtt") {
        let rounds = 20_000 / scale;
        println!(
            "round trip 64 B: zebra {:?}, libzmq {:?}",
            ours_latency(rounds),
            libzmq_latency(rounds)
        );
    }
}
