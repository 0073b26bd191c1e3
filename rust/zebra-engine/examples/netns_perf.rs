//! The perf pair of the user-level stack: the same measurements over the kernel, over
//! smoltcp on a raw socket, and over smoltcp on DPDK's af_packet PMD, across a veth pair
//! between two network namespaces (`scripts/netns-perf.sh` runs all three in one go).
//!
//!   netns_perf kernel|raw|dpdk|pmd MESSAGES SIZE DATAGRAMS
//!
//! `pmd`: no stack and no ZMTP, only the UDP datagrams, as prebuilt frames handed to the
//! DPDK port's transmit path directly (`zebra_net::blast`): the PMD's raw rate, against
//! which the `dpdk` run's datagrams are measured.
//!
//! ZMTP: an engine DEALER in the first namespace sends MESSAGES messages of SIZE bytes to
//! a libzmq ROUTER in the kernel's namespace, which answers once when it has them all.
//! UDP (the hot path's transport): DATAGRAMS datagrams of 192 bytes (the paper's packet
//! size) as fast as the sender goes, counted by a kernel UDP socket. Needs root; `dpdk`
//! needs the `dpdk` feature.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zebra_engine::{consts, Context};
use zebra_net::testbed::{af_packet_args, Pair};
use zebra_net::{sys, Backend};

const DATAGRAM: usize = 192;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: netns_perf kernel|raw|dpdk|pmd MESSAGES SIZE DATAGRAMS";
    let [_, mode, messages, size, datagrams] = &args[..] else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let (Ok(messages), Ok(size), Ok(datagrams)) = (
        messages.parse::<usize>(),
        size.parse::<usize>(),
        datagrams.parse::<usize>(),
    ) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let pair = Pair::up("p", 4);
    if mode == "pmd" {
        pmd(&pair, datagrams);
        return;
    }
    let stack = match mode.as_str() {
        "kernel" => {
            let cidr = format!("{}/24", pair.stack_ip);
            let ok = std::process::Command::new("ip")
                .args([
                    "-n",
                    &pair.stack_ns(),
                    "addr",
                    "add",
                    &cidr,
                    "dev",
                    &pair.stack_iface(),
                ])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "ip addr add {cidr}");
            sys::enter_netns(&pair.stack_ns()).expect("enter the namespace");
            None
        }
        "raw" => Some(Backend::Raw {
            iface: pair.stack_iface(),
        }),
        "dpdk" => Some(Backend::Dpdk {
            eal_args: af_packet_args(&pair.stack_iface(), &pair.name),
        }),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
    .map(|backend| {
        let stack = Arc::new(pair.start_stack(backend));
        zebra_engine::use_stack(stack.clone()).expect("first network choice");
        stack
    });

    let port = base_port();
    let kernel_ip = pair.kernel_ip;
    let sink = pair.in_kernel(move || {
        let ctx = zmq::Context::new();
        let router = ctx.socket(zmq::ROUTER).unwrap();
        router.bind(&format!("tcp://{kernel_ip}:{port}")).unwrap();
        let mut id = Vec::new();
        for _ in 0..messages {
            id = router.recv_bytes(0).unwrap();
            router.recv_bytes(0).unwrap();
        }
        router.send(&id[..], zmq::SNDMORE).unwrap();
        router.send(&b"done"[..], 0).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    });
    let ctx = Context::new();
    let dealer = ctx.socket(consts::ZMQ_DEALER).unwrap();
    dealer
        .connect(&format!("tcp://{kernel_ip}:{port}"))
        .unwrap();
    let body = Bytes::from(vec![7u8; size]);
    dealer.send(body.clone(), false, false).unwrap();
    let started = Instant::now();
    for _ in 1..messages {
        dealer.send(body.clone(), false, false).unwrap();
    }
    dealer.recv(false).unwrap();
    let secs = started.elapsed().as_secs_f64();
    sink.join().unwrap();
    println!(
        "{mode}: zmtp {messages} x {size} B: {:.1} MB/s, {:.0} msg/s",
        (messages - 1) as f64 * size as f64 / secs / 1e6,
        (messages - 1) as f64 / secs
    );
    dealer.close();
    ctx.terminate().unwrap();

    let udp_port = port + 1;
    let counter = count_datagrams(&pair, udp_port, datagrams);
    std::thread::sleep(Duration::from_millis(100));
    let to = SocketAddrV4::new(kernel_ip, udp_port);
    let payload = [5u8; DATAGRAM];
    let started = Instant::now();
    match &stack {
        Some(stack) => {
            let sock = zebra_net::UdpSocket::bind(stack, 0).unwrap();
            let mut sent = 0;
            while sent < datagrams {
                match sock.send_to(&payload, to) {
                    Ok(_) => sent += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        sys::wait_readable(&[sock.fd()], Some(Duration::from_millis(10))).unwrap();
                    }
                    Err(e) => panic!("send: {e}"),
                }
            }
        }
        None => {
            let sock = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
            for _ in 0..datagrams {
                sock.send_to(&payload, to).unwrap();
            }
        }
    }
    let send_secs = started.elapsed().as_secs_f64();
    let (received, recv_secs) = counter.join().unwrap();
    print_udp(mode, datagrams, send_secs, received, recv_secs);
    if let Some(stack) = stack {
        let stats = stack.stats();
        println!(
            "{mode}: stack frames rx {} tx {}, dropped rx {} tx {}, mbufs in use {:?}",
            stats.rx_frames,
            stats.tx_frames,
            stats.rx_dropped,
            stats.tx_dropped,
            stats.buffers_in_use
        );
        match stack.shutdown() {
            Ok(()) if mode == "dpdk" => {
                println!("{mode}: shutdown clean (no mbuf in use, EAL cleaned up, run directory removed)")
            }
            Ok(()) => println!("{mode}: shutdown clean"),
            Err(e) => {
                println!("{mode}: shutdown: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// The ZMTP port of this run (the UDP datagrams go to the next one).
fn base_port() -> u16 {
    30_000 + (std::process::id() % 20_000) as u16
}

/// The PMD's raw rate: the same datagrams as prebuilt frames on the DPDK port alone.
fn pmd(pair: &Pair, datagrams: usize) {
    let udp_port = base_port() + 1;
    let counter = count_datagrams(pair, udp_port, datagrams);
    std::thread::sleep(Duration::from_millis(100));
    let to_mac = pair.kernel_mac().expect("the kernel veth's MAC");
    sys::enter_netns(&pair.stack_ns()).expect("enter the stack namespace");
    let cfg = zebra_net::StackConfig::new(
        Backend::Dpdk {
            eal_args: af_packet_args(&pair.stack_iface(), &pair.name),
        },
        pair.stack_ip,
        24,
    );
    let to = SocketAddrV4::new(pair.kernel_ip, udp_port);
    let what = zebra_net::blast::Datagrams {
        to_mac,
        to,
        from_port: udp_port,
        payload: DATAGRAM,
        count: datagrams as u64,
    };
    let b = zebra_net::blast::blast(&cfg, &what).unwrap_or_else(|e| {
        println!("pmd: {e}");
        std::process::exit(1);
    });
    let (received, recv_secs) = counter.join().unwrap();
    print_udp("pmd", datagrams, b.secs, received, recv_secs);
    println!(
        "pmd: port frames tx {} dropped {}; shutdown clean (no mbuf in use, EAL cleaned up)",
        b.sent, b.dropped
    );
}

/// A kernel UDP socket on `udp_port` in the kernel's namespace counting up to
/// `datagrams` datagrams: how many came, over how many seconds from the first.
fn count_datagrams(
    pair: &Pair,
    udp_port: u16,
    datagrams: usize,
) -> std::thread::JoinHandle<(usize, f64)> {
    let kernel_ip = pair.kernel_ip;
    pair.in_kernel(move || {
        let sock = std::net::UdpSocket::bind((kernel_ip, udp_port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let mut n = 0usize;
        let mut first = None;
        let mut last = Instant::now();
        while n < datagrams {
            match sock.recv(&mut buf) {
                Ok(_) => {
                    last = Instant::now();
                    first.get_or_insert(last);
                    n += 1;
                }
                Err(_) if first.is_some() => break,
                Err(_) => {}
            }
        }
        (n, first.map_or(0.0, |f| (last - f).as_secs_f64()))
    })
}

fn print_udp(mode: &str, datagrams: usize, send_secs: f64, received: usize, recv_secs: f64) {
    println!(
        "{mode}: udp {datagrams} x {DATAGRAM} B: sent at {:.0} pkt/s, {received} received ({:.1} %) at {:.0} pkt/s",
        datagrams as f64 / send_secs,
        received as f64 * 100.0 / datagrams as f64,
        received as f64 / recv_secs.max(1e-9)
    );
}
