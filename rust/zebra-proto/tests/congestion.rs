//! Two jobs share one switch and the link in front of it (issue 20, part 4:
//! congestion control). On simulated time: every worker's hot packets cross
//! one bottleneck into the switch, a link that sends one packet per
//! `SERVICE_US` and holds at most `QUEUE` packets (drop-tail: what a switch
//! port's queue, or a software switch's socket buffer, does). Each worker
//! pushes round after round, closed loop, as fast as the protocol lets it.
//!
//! The same run twice: with the workers' congestion window (the default)
//! and without it (every packet of a round up to `worker_max_in_flight` at
//! once). Both are exact; the window keeps the queue from overflowing,
//! so far fewer packets are lost and resent, the pairs summed per second are
//! at least as many, and neither job starves.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::time::Duration;

use zebra_proto::{
    Config, JobConfig, Server, ServerAction, Switch, SwitchAction, Timestamp, Worker, WorkerAction,
};

const JOBS: [u16; 2] = [1, 2];
const WORKERS: u16 = 2;
const HOT_KEYS: u32 = 1024;
/// The bottleneck sends one packet per this many microseconds.
const SERVICE_US: u64 = 4;
/// Packets the bottleneck's queue holds.
const QUEUE: usize = 48;
/// One-way delay of every link.
const DELAY_US: u64 = 50;
/// Simulated time.
const RUN_US: u64 = 300_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Switch,
    Worker(u16, u16),
    Server(u16),
}

#[derive(Debug, Default)]
struct Outcome {
    /// Pairs the switch summed, per job.
    pairs: BTreeMap<u16, u64>,
    /// Rounds every worker of the job settled.
    rounds: BTreeMap<u16, u32>,
    dropped: u64,
    retransmits: u64,
    given_up: u64,
}

fn config() -> Config {
    let jobs = JOBS
        .iter()
        .map(|&j| JobConfig::new(j, WORKERS, HOT_KEYS, 1))
        .collect();
    let mut c = Config::new(jobs);
    c.registers = 16;
    c.slots = 256;
    c.packet_size = 192;
    c.max_seqs = 256;
    c.copies = 2;
    c.round_timeout = Duration::from_millis(20);
    c.worker_rto = Duration::from_millis(2);
    c.worker_max_retries = 20;
    c.worker_max_in_flight = 256;
    c.aggregate_rto = Duration::from_millis(2);
    c.uncertain_timeout = Duration::from_millis(100);
    c
}

fn run(window_rule: bool) -> Outcome {
    let c = config();
    let mut switch = Switch::new(c.clone()).unwrap();
    let mut workers: BTreeMap<(u16, u16), Worker> = BTreeMap::new();
    for &j in &JOBS {
        for w in 0..WORKERS {
            let mut worker = Worker::new(&c, j, w).unwrap();
            worker.set_congestion_control(window_rule);
            workers.insert((j, w), worker);
        }
    }
    let mut servers: BTreeMap<u16, Server> = JOBS
        .iter()
        .map(|&j| (j, Server::new(&c, j, 0).unwrap()))
        .collect();

    // Events: (time, seq) -> (to, datagram).
    let mut events: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut items: BTreeMap<u64, (Node, Vec<u8>)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut bottleneck: VecDeque<Vec<u8>> = VecDeque::new();
    let mut bottleneck_free = 0u64;
    let mut out = Outcome::default();
    // What the servers got, per (job, round, rank), and what was pushed.
    let mut got: BTreeMap<(u16, u32, u32), f64> = BTreeMap::new();
    let mut next_round: BTreeMap<(u16, u16), u32> = BTreeMap::new();
    let mut settled: BTreeMap<(u16, u16), u32> = BTreeMap::new();

    let mut now = 0u64;
    let mut pending: Vec<(Node, WorkerAction)> = Vec::new();
    for (&(j, w), worker) in workers.iter_mut() {
        for r in 1..=2 {
            let pairs = (0..HOT_KEYS).map(|k| (k, 1.0)).collect();
            for a in worker.push(Timestamp(0), r, pairs).unwrap() {
                pending.push((Node::Worker(j, w), a));
            }
        }
        next_round.insert((j, w), 3);
    }
    loop {
        // Worker actions: sends enter the bottleneck, fallbacks go to the
        // server directly, a settled round makes room for the next push.
        while let Some((node, a)) = pending.pop() {
            let Node::Worker(j, w) = node else {
                unreachable!()
            };
            match a {
                WorkerAction::Send(b) => {
                    if bottleneck.len() >= QUEUE {
                        out.dropped += 1;
                    } else {
                        bottleneck.push_back(b);
                    }
                }
                WorkerAction::Fallback(f) => {
                    for (rank, v) in f.pairs {
                        *got.entry((j, f.round, rank)).or_default() += f64::from(v);
                    }
                }
                WorkerAction::RoundDone(_) => {
                    *settled.entry((j, w)).or_default() += 1;
                    if now < RUN_US {
                        let r = next_round[&(j, w)];
                        next_round.insert((j, w), r + 1);
                        let pairs = (0..HOT_KEYS).map(|k| (k, 1.0)).collect();
                        let worker = workers.get_mut(&(j, w)).unwrap();
                        for a in worker.push(Timestamp(now), r, pairs).unwrap() {
                            pending.push((node, a));
                        }
                    }
                }
                WorkerAction::Resettle { .. } => unreachable!("no restart here"),
            }
        }
        // The bottleneck sends its head when free.
        if bottleneck_free <= now {
            if let Some(b) = bottleneck.pop_front() {
                bottleneck_free = now + SERVICE_US;
                seq += 1;
                events.push(Reverse((bottleneck_free + DELAY_US, seq)));
                items.insert(seq, (Node::Switch, b));
            }
        }
        // The next moment anything happens.
        let mut next = events.peek().map(|Reverse((t, _))| *t);
        let mut consider = |t: Option<Timestamp>| {
            if let Some(t) = t {
                next = Some(next.map_or(t.micros(), |n| n.min(t.micros())));
            }
        };
        consider(switch.poll_at());
        workers.values().for_each(|w| consider(w.poll_at()));
        servers.values().for_each(|s| consider(s.poll_at()));
        if !bottleneck.is_empty() {
            consider(Some(Timestamp(bottleneck_free.max(now))));
        }
        let Some(t) = next else { break };
        assert!(t < RUN_US * 20, "no end");
        now = now.max(t);
        let ts = Timestamp(now);
        let mut sacts: Vec<SwitchAction> = Vec::new();
        let mut vacts: Vec<(u16, ServerAction)> = Vec::new();
        while let Some(&Reverse((at, id))) = events.peek() {
            if at > now {
                break;
            }
            events.pop();
            let (to, b) = items.remove(&id).unwrap();
            match to {
                Node::Switch => sacts.extend(switch.handle_packet(ts, &b)),
                Node::Worker(j, w) => {
                    let worker = workers.get_mut(&(j, w)).unwrap();
                    for a in worker.handle_packet(ts, &b) {
                        pending.push((to, a));
                    }
                }
                Node::Server(j) => {
                    let server = servers.get_mut(&j).unwrap();
                    vacts.extend(server.handle_packet(ts, &b).into_iter().map(|a| (j, a)));
                }
            }
        }
        if switch.poll_at().is_some_and(|x| x <= ts) {
            sacts.extend(switch.poll(ts));
        }
        for (&(j, w), worker) in workers.iter_mut() {
            if worker.poll_at().is_some_and(|x| x <= ts) {
                for a in worker.poll(ts) {
                    pending.push((Node::Worker(j, w), a));
                }
            }
        }
        for (&j, server) in servers.iter_mut() {
            if server.poll_at().is_some_and(|x| x <= ts) {
                vacts.extend(server.poll(ts).into_iter().map(|a| (j, a)));
            }
        }
        for a in sacts {
            let to = match &a {
                SwitchAction::Ack { job, worker, .. }
                | SwitchAction::Fallback { job, worker, .. } => Node::Worker(*job, *worker),
                SwitchAction::Aggregate { job, .. } => Node::Server(*job),
                other => panic!("no updates here: {other:?}"),
            };
            seq += 1;
            events.push(Reverse((now + DELAY_US, seq)));
            items.insert(seq, (to, a.payload().to_vec()));
        }
        for (j, a) in vacts {
            match a {
                ServerAction::Send(b) => {
                    seq += 1;
                    events.push(Reverse((now + DELAY_US, seq)));
                    items.insert(seq, (Node::Switch, b));
                }
                ServerAction::Round(r) => {
                    for (rank, v) in r.pairs {
                        *got.entry((j, r.round, rank)).or_default() += f64::from(v);
                    }
                }
                ServerAction::Apply(f) => {
                    for (rank, v) in f.pairs {
                        *got.entry((j, f.round, rank)).or_default() += f64::from(v);
                    }
                }
            }
        }
    }

    // Exact: every round any worker settled holds each pushed value once.
    for &j in &JOBS {
        let rounds = (0..WORKERS).map(|w| settled[&(j, w)]).min().unwrap();
        out.rounds.insert(j, rounds);
        out.pairs
            .insert(j, switch.job_stats(j).unwrap().added_pairs);
        for r in 1..=rounds {
            for rank in 0..HOT_KEYS {
                assert_eq!(
                    got.get(&(j, r, rank)).copied().unwrap_or(0.0),
                    f64::from(WORKERS),
                    "window rule {window_rule}: job {j} round {r} rank {rank}"
                );
            }
        }
    }
    for worker in workers.values() {
        out.retransmits += worker.stats().retransmits;
        out.given_up += worker.stats().given_up;
    }
    out
}

#[test]
fn the_window_shares_a_bottleneck_without_overflowing_it() {
    let with = run(true);
    let without = run(false);
    let rate = |o: &Outcome, j: u16| o.pairs[&j] as f64 / (RUN_US as f64 / 1e6);
    for (name, o) in [("with the window", &with), ("without", &without)] {
        println!(
            "{name}: pairs summed per second: job 1 {:.0}, job 2 {:.0}; rounds {:?}; \
             dropped at the bottleneck {}, retransmits {}, given up {}",
            rate(o, 1),
            rate(o, 2),
            o.rounds,
            o.dropped,
            o.retransmits,
            o.given_up
        );
    }
    assert!(
        without.dropped > 0,
        "without the window the bottleneck overflows (else the test shows nothing)"
    );
    assert!(
        with.dropped * 4 <= without.dropped,
        "the window loses far fewer packets: {} against {}",
        with.dropped,
        without.dropped
    );
    let total = |o: &Outcome| rate(o, 1) + rate(o, 2);
    assert!(
        total(&with) >= total(&without),
        "and sums at least as many pairs a second: {:.0} against {:.0}",
        total(&with),
        total(&without)
    );
    for j in JOBS {
        let other = JOBS.iter().find(|&&o| o != j).unwrap();
        assert!(
            rate(&with, j) >= 0.5 * rate(&with, *other),
            "job {j} is not starved: {:.0} against {:.0}",
            rate(&with, j),
            rate(&with, *other)
        );
    }
}
