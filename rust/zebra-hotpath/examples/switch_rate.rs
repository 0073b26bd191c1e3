//! The software switch's rate, measured three ways in one run (issue 24,
//! part 1; `scripts/bench-switch.py` repeats it and writes the table):
//!
//! - `model`: the sans-I/O switch (`zebra_proto::Switch`) alone, in this
//!   thread, fed the HOT packets of real `Worker` state machines over a
//!   perfect in-process network; only the time inside the switch's calls is
//!   counted: pairs summed per second on one core.
//! - `udp`: a `SwitchNode` (the `zebra switch` node: one socket, one thread)
//!   over kernel UDP on 127.0.0.1 with the workers' and servers' links of
//!   this crate: datagrams the switch received per second, and pairs summed.
//! - `echo`: a trivial UDP echo thread on 127.0.0.1, driven by as many
//!   senders as there are workers, each keeping the links' window of
//!   datagrams of the HOT packets' size in flight: the kernel's own packet
//!   rate on the same machine, the bound for `udp`.
//!
//! Every aggregate of `model` and `udp` is checked exactly against the sums
//! of the pushes (integer-valued pairs), so a fast wrong switch fails.

use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use zebra_hotpath::{
    LinkConfig, ServerEvent, ServerLink, SwitchNode, SwitchNodeConfig, WorkerEvent, WorkerLink,
};
use zebra_proto::rng::SplitMix64;
use zebra_proto::server::{Server, ServerAction};
use zebra_proto::switch::{Peer, Switch};
use zebra_proto::worker::{Worker, WorkerAction};
use zebra_proto::{Config, JobConfig, Timestamp};

/// The switch's rate: in process, over UDP, and a UDP echo's packet rate.
#[derive(Parser, Debug)]
#[command(about, long_about = None)]
struct Args {
    /// What to measure: model, udp, echo (comma-separated).
    #[arg(long, default_value = "model,udp,echo")]
    modes: String,
    /// Workers of the job.
    #[arg(long, default_value_t = 4)]
    workers: u16,
    /// Hot keys of the job (one server).
    #[arg(long, default_value_t = 16384)]
    hot_keys: u32,
    /// Share of the hot keys each worker pushes in a round (0 < d <= 1).
    #[arg(long, default_value_t = 1.0)]
    density: f64,
    /// Rounds each worker pushes.
    #[arg(long, default_value_t = 200)]
    rounds: u32,
    /// Seconds the echo runs.
    #[arg(long, default_value_t = 2.0)]
    echo_seconds: f64,
    /// Seed of the pushes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const JOB: u16 = 1;
/// The switch node's I/O thread (`zebra_hotpath::io`), and the echo's.
const SWITCH_THREAD: &str = "zebra-switch";
const ECHO_THREAD: &str = "rate-echo";

fn config(args: &Args) -> Config {
    Config::new(vec![JobConfig::new(JOB, args.workers, args.hot_keys, 1)])
}

/// Each worker's pairs per round (integer values) and the sums per
/// (round, rank).
type Pushes = Vec<Vec<Vec<(u32, f32)>>>;

fn pushes(args: &Args) -> (Pushes, BTreeMap<(u32, u32), i64>) {
    let mut rng = SplitMix64::new(args.seed);
    let mut sums = BTreeMap::new();
    let mut all = vec![Vec::new(); args.workers as usize];
    for round in 1..=args.rounds {
        for w in all.iter_mut() {
            let mut pairs = Vec::new();
            for rank in 0..args.hot_keys {
                if args.density >= 1.0 || rng.unit() < args.density {
                    pairs.push((rank, rng.below(17) as f32 - 8.0));
                }
            }
            for &(rank, v) in &pairs {
                *sums.entry((round, rank)).or_insert(0) += v as i64;
            }
            w.push(pairs);
        }
    }
    (all, sums)
}

struct Measured {
    pairs: u64,
    packets: u64,
    seconds: f64,
    /// CPU seconds of the thread that handles the datagrams (the switch's or
    /// the echo's), where it has one.
    busy: Option<f64>,
}

/// CPU seconds this process's thread `name` has run, from the kernel's
/// scheduler statistics (`/proc/self/task/*/schedstat`, nanoseconds).
fn thread_cpu(name: &str) -> Option<f64> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
            return Some(ns as f64 / 1e9);
        }
    }
    None
}

/// Checks the servers' sums against the pushes'.
fn check(what: &str, got: &BTreeMap<(u32, u32), i64>, want: &BTreeMap<(u32, u32), i64>) {
    let nonzero = |m: &BTreeMap<(u32, u32), i64>| {
        m.iter()
            .filter(|(_, &v)| v != 0)
            .map(|(&k, &v)| (k, v))
            .collect::<BTreeMap<_, _>>()
    };
    if nonzero(got) != nonzero(want) {
        eprintln!("switch_rate: {what}: the sums differ from the pushes'");
        std::process::exit(1);
    }
}

/// The model over a perfect network, the rounds pipelined as PS-lite
/// workers with two slot copies do: round `r` starts once every worker
/// settled round `r - 2`.
fn model(args: &Args, plan: &Pushes, want: &BTreeMap<(u32, u32), i64>) -> Measured {
    let config = config(args);
    let mut switch = Switch::new(config.clone()).expect("a valid configuration");
    let mut workers: Vec<Worker> = (0..args.workers)
        .map(|w| Worker::new(&config, JOB, w).expect("a member"))
        .collect();
    let mut server = Server::new(&config, JOB, 0).expect("a member");
    let start = Instant::now();
    let now = || Timestamp(start.elapsed().as_nanos() as u64);
    let mut in_switch = Duration::ZERO;
    let mut to_switch: VecDeque<Vec<u8>> = VecDeque::new();
    let mut settled = vec![0u32; args.workers as usize];
    let mut got = BTreeMap::new();
    let mut next = 1u32;
    let mut packets = 0u64;
    let worker_actions = |acts: Vec<WorkerAction>, q: &mut VecDeque<Vec<u8>>, done: &mut u32| {
        for a in acts {
            match a {
                WorkerAction::Send(b) => q.push_back(b),
                WorkerAction::RoundDone(s) => *done = (*done).max(s.round),
                other => panic!("a perfect network gives no {other:?}"),
            }
        }
    };
    while next <= args.rounds || !to_switch.is_empty() {
        while next <= args.rounds && settled.iter().all(|&s| s + 2 >= next) {
            for (w, worker) in workers.iter_mut().enumerate() {
                let acts = worker
                    .push(now(), next, plan[w][next as usize - 1].clone())
                    .expect("rounds in order");
                worker_actions(acts, &mut to_switch, &mut settled[w]);
            }
            next += 1;
        }
        let Some(bytes) = to_switch.pop_front() else {
            for (w, worker) in workers.iter_mut().enumerate() {
                let acts = worker.poll(now());
                worker_actions(acts, &mut to_switch, &mut settled[w]);
            }
            continue;
        };
        packets += 1;
        let t = Instant::now();
        let actions = switch.handle_packet(now(), &bytes);
        in_switch += t.elapsed();
        for a in actions {
            match a.peer() {
                Peer::Worker { rank, .. } => {
                    let acts = workers[rank as usize].handle_packet(now(), a.payload());
                    worker_actions(acts, &mut to_switch, &mut settled[rank as usize]);
                }
                Peer::Server { .. } => {
                    for s in server.handle_packet(now(), a.payload()) {
                        match s {
                            ServerAction::Send(b) => to_switch.push_back(b),
                            ServerAction::Round(r) => {
                                for (rank, v) in r.pairs {
                                    *got.entry((r.round, rank)).or_insert(0) += v as i64;
                                }
                            }
                            ServerAction::Apply(f) => panic!("a perfect network gives no {f:?}"),
                        }
                    }
                }
                Peer::Workers { .. } => panic!("no updates in this benchmark"),
            }
        }
    }
    check("model", &got, want);
    Measured {
        pairs: switch.stats().added_pairs,
        packets,
        seconds: in_switch.as_secs_f64(),
        busy: Some(in_switch.as_secs_f64()),
    }
}

/// `SwitchNode` over 127.0.0.1 with worker and server links.
fn udp(args: &Args, plan: &Pushes, want: &BTreeMap<(u32, u32), i64>) -> Measured {
    let localhost: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let proto = config(args);
    let node = SwitchNode::start(SwitchNodeConfig::new(localhost, proto.clone()))
        .expect("the switch starts");
    let link = |rank| {
        let mut c = LinkConfig::new(proto.clone(), JOB, rank, node.local_addr());
        c.bind = localhost;
        c
    };
    let server = ServerLink::start(link(0)).expect("the server link starts");
    let workers: Vec<WorkerLink> = (0..args.workers)
        .map(|w| WorkerLink::start(link(w)).expect("a worker link starts"))
        .collect();
    let t = Instant::now();
    while !server.is_registered() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the server did not register"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let before = node.stats();
    let cpu_before = thread_cpu(SWITCH_THREAD);
    let start = Instant::now();
    let mut settled = vec![0u32; args.workers as usize];
    let mut got = BTreeMap::new();
    let mut next = 1u32;
    let mut fallbacks = 0u64;
    while settled.iter().any(|&s| s < args.rounds) {
        while next <= args.rounds && settled.iter().all(|&s| s + 2 >= next) {
            for (w, l) in workers.iter().enumerate() {
                l.push(next, plan[w][next as usize - 1].clone())
                    .expect("rounds in order");
            }
            next += 1;
        }
        let mut moved = false;
        for (w, l) in workers.iter().enumerate() {
            while let Some(e) = l.try_recv() {
                moved = true;
                match e {
                    WorkerEvent::RoundDone(s) => settled[w] = settled[w].max(s.round),
                    WorkerEvent::Fallback { fallback, .. } => {
                        fallbacks += 1;
                        server
                            .add_fallback(fallback)
                            .expect("a fallback of the job");
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        while let Some(e) = server.try_recv() {
            moved = true;
            let (round, pairs) = match e {
                ServerEvent::Round(r) => (r.round, r.pairs),
                ServerEvent::Apply(f) => (f.round, f.pairs),
                other => panic!("unexpected {other:?}"),
            };
            for (rank, v) in pairs {
                *got.entry((round, rank)).or_insert(0) += v as i64;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "udp: no progress"
        );
        if !moved {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let after = node.stats();
    let busy = thread_cpu(SWITCH_THREAD)
        .zip(cpu_before)
        .map(|(a, b)| a - b);
    let t = Instant::now();
    while got.len() < want.len() && t.elapsed() < Duration::from_secs(5) {
        while let Some(e) = server.try_recv() {
            if let ServerEvent::Round(r) = e {
                for (rank, v) in r.pairs {
                    *got.entry((r.round, rank)).or_insert(0) += v as i64;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    check("udp", &got, want);
    if fallbacks > 0 {
        eprintln!("switch_rate: udp: {fallbacks} fallbacks (loss on loopback under load)");
    }
    Measured {
        pairs: after.switch.added_pairs - before.switch.added_pairs,
        packets: after.io.rx_datagrams - before.io.rx_datagrams,
        seconds,
        busy,
    }
}

/// A UDP echo on 127.0.0.1: `senders` threads, each keeping `window`
/// datagrams of `size` bytes in flight, for `seconds`.
fn echo(senders: u16, window: usize, size: usize, seconds: f64) -> Measured {
    let localhost: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let server = UdpSocket::bind(localhost).expect("bind");
    server
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("a timeout");
    let at = server.local_addr().expect("an address");
    let stop = Arc::new(AtomicBool::new(false));
    let echoer = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name(ECHO_THREAD.into())
            .spawn(move || {
                let mut buf = vec![0u8; 65536];
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((len, from)) = server.recv_from(&mut buf) {
                        n += 1;
                        let _ = server.send_to(&buf[..len], from);
                    }
                }
                let busy = thread_cpu(ECHO_THREAD);
                (n, busy)
            })
            .expect("the echo thread starts")
    };
    let start = Instant::now();
    let threads: Vec<_> = (0..senders)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let s = UdpSocket::bind(localhost).expect("bind");
                s.connect(at).expect("connect");
                s.set_read_timeout(Some(Duration::from_millis(20)))
                    .expect("a timeout");
                let out = vec![7u8; size];
                let mut buf = vec![0u8; 65536];
                for _ in 0..window {
                    let _ = s.send(&out);
                }
                while !stop.load(Ordering::Relaxed) {
                    // An echo, or a timeout (one lost): another goes in flight.
                    let _ = s.recv(&mut buf);
                    let _ = s.send(&out);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a sender");
    }
    let (packets, busy) = echoer.join().expect("the echo");
    Measured {
        pairs: 0,
        packets,
        seconds: start.elapsed().as_secs_f64(),
        busy,
    }
}

fn main() {
    let args = Args::parse();
    if !(args.density > 0.0 && args.density <= 1.0) || args.rounds == 0 || args.workers == 0 {
        eprintln!("switch_rate: --density must be in (0, 1], --rounds and --workers above 0");
        std::process::exit(2);
    }
    if let Err(e) = config(&args).validate() {
        eprintln!("switch_rate: {e}");
        std::process::exit(2);
    }
    let modes: Vec<&str> = args.modes.split(',').filter(|m| !m.is_empty()).collect();
    if let Some(bad) = modes.iter().find(|m| !["model", "udp", "echo"].contains(m)) {
        eprintln!("switch_rate: unknown mode {bad:?} (model, udp, echo)");
        std::process::exit(2);
    }
    let (plan, want) = pushes(&args);
    let proto = config(&args);
    println!(
        "switch_rate: {} workers, {} hot keys, density {}, {} rounds, {}-byte packets",
        args.workers, args.hot_keys, args.density, args.rounds, proto.packet_size
    );
    for mode in modes {
        let m = match mode {
            "model" => model(&args, &plan, &want),
            "udp" => udp(&args, &plan, &want),
            _ => echo(
                args.workers,
                proto.worker_max_in_flight,
                proto.packet_size,
                args.echo_seconds,
            ),
        };
        let busy = m.busy.map_or("thread CPU unknown".into(), |b| {
            format!(
                "its thread busy {:.3} s ({:.0} %): {:.0} datagrams per busy second",
                b,
                100.0 * b / m.seconds,
                m.packets as f64 / b
            )
        });
        println!(
            "switch_rate: {mode}: {} pairs, {} datagrams in {:.3} s: {:.0} pairs/s, {:.0} datagrams/s; {busy}",
            m.pairs,
            m.packets,
            m.seconds,
            m.pairs as f64 / m.seconds,
            m.packets as f64 / m.seconds
        );
    }
}
