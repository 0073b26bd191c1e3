//! The hot path over real UDP sockets on 127.0.0.1: the switch node, three
//! worker links and two server links in this process, each on its own I/O
//! thread. Workers push many rounds of sparse integer-valued hot pairs; the
//! test forwards every fallback to its server, as the shim will. At the end
//! the servers' totals (aggregates plus applied fallbacks) equal the exact
//! sums, with and without injected loss, with a dead switch, and with
//! garbage thrown at the switch.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use zebra_hotpath::{
    HotLoss, LinkConfig, ServerEvent, ServerLink, SwitchNode, SwitchNodeConfig, SwitchNodeStats,
    WorkerEvent, WorkerLink,
};
use zebra_proto::rng::SplitMix64;
use zebra_proto::wire::RegisterRepr;
use zebra_proto::{Config, JobConfig};

const JOB: u16 = 4;
const WORKERS: u16 = 3;
const SERVERS: u16 = 2;
const HOT_KEYS: u32 = 300;

fn config() -> Config {
    let mut c = Config::new(vec![JobConfig::new(JOB, WORKERS, HOT_KEYS, SERVERS)]);
    c.registers = 8;
    c.slots = 64;
    c.packet_size = 96;
    c.max_seqs = 64;
    c.round_timeout = Duration::from_millis(30);
    c.aggregate_rto = Duration::from_millis(3);
    c.aggregate_max_retries = 200;
    c.worker_rto = Duration::from_millis(5);
    c.worker_max_retries = 10;
    c.worker_max_in_flight = 64;
    c.uncertain_timeout = Duration::from_millis(150);
    c
}

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// An address nothing listens on.
fn dead_address() -> SocketAddr {
    UdpSocket::bind(localhost()).unwrap().local_addr().unwrap()
}

/// Each worker's pushes (round, pairs) and the exact sum per (round, rank).
type Plan = Vec<Vec<(u32, Vec<(u32, f32)>)>>;

fn plan(seed: u64, rounds: u32) -> (Plan, BTreeMap<(u32, u32), i64>) {
    let mut rng = SplitMix64::new(seed);
    let mut expected = BTreeMap::new();
    let mut plans = vec![Vec::new(); WORKERS as usize];
    for round in 1..=rounds {
        for p in plans.iter_mut() {
            let mut pairs = BTreeMap::new();
            for _ in 0..rng.below(60) {
                let u = rng.unit();
                let rank = ((u * u * u) * f64::from(HOT_KEYS)) as u32;
                pairs.insert(rank.min(HOT_KEYS - 1), rng.below(17) as i64 - 8);
            }
            for (&r, &v) in &pairs {
                *expected.entry((round, r)).or_insert(0) += v;
            }
            p.push((
                round,
                pairs.into_iter().map(|(r, v)| (r, v as f32)).collect(),
            ));
        }
    }
    (plans, expected)
}

struct Cluster {
    switch: Option<SwitchNode>,
    workers: Vec<WorkerLink>,
    servers: Vec<ServerLink>,
    got: BTreeMap<(u32, u32), i64>,
    reported: BTreeMap<(u16, u32), u32>,
    settled: BTreeMap<(u16, u32), u32>,
    fallback_pairs: u64,
}

impl Cluster {
    fn start(alive: bool, loss: Option<HotLoss>) -> Cluster {
        let proto = config();
        let switch = alive.then(|| {
            let mut c = SwitchNodeConfig::new(localhost(), proto.clone());
            c.loss = loss;
            SwitchNode::start(c).unwrap()
        });
        let at = switch
            .as_ref()
            .map_or_else(dead_address, SwitchNode::local_addr);
        let link = |rank| {
            let mut c = LinkConfig::new(proto.clone(), JOB, rank, at);
            c.bind = localhost();
            c.loss = loss;
            c
        };
        let servers: Vec<ServerLink> = (0..SERVERS)
            .map(|i| ServerLink::start(link(i)).unwrap())
            .collect();
        let workers = (0..WORKERS)
            .map(|w| WorkerLink::start(link(w)).unwrap())
            .collect();
        if alive {
            let t = Instant::now();
            while !servers.iter().all(ServerLink::is_registered) {
                assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "servers not registered"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Cluster {
            switch,
            workers,
            servers,
            got: BTreeMap::new(),
            reported: BTreeMap::new(),
            settled: BTreeMap::new(),
            fallback_pairs: 0,
        }
    }

    /// Moves every waiting event: fallbacks to their servers, results into
    /// the tallies. True if anything moved.
    fn pump(&mut self) -> bool {
        let mut moved = false;
        for (w, link) in self.workers.iter().enumerate() {
            while let Some(e) = link.try_recv() {
                moved = true;
                match e {
                    WorkerEvent::Fallback { server, fallback } => {
                        self.fallback_pairs += fallback.pairs.len() as u64;
                        self.servers[server as usize]
                            .add_fallback(fallback)
                            .unwrap();
                    }
                    WorkerEvent::RoundDone(s) => {
                        *self.settled.entry((w as u16, s.round)).or_default() += 1;
                    }
                }
            }
        }
        for (i, link) in self.servers.iter().enumerate() {
            while let Some(e) = link.try_recv() {
                moved = true;
                let (round, pairs) = match e {
                    ServerEvent::Round(r) => {
                        *self.reported.entry((i as u16, r.round)).or_default() += 1;
                        (r.round, r.pairs)
                    }
                    ServerEvent::Apply(f) => (f.round, f.pairs),
                };
                for (rank, v) in pairs {
                    assert_eq!(v.fract(), 0.0, "integer-valued sums stay integers");
                    *self.got.entry((round, rank)).or_insert(0) += v as i64;
                }
            }
        }
        moved
    }

    fn quiet(&self, rounds: u32) -> bool {
        let all_settled =
            (0..WORKERS).all(|w| (1..=rounds).all(|r| self.settled.contains_key(&(w, r))));
        let servers_idle = self.servers.iter().all(|s| s.stats().held_fallbacks == 0);
        let switch_idle = match &self.switch {
            None => true,
            Some(s) => {
                let st = s.stats();
                st.pending_parts == 0 && st.open_rounds == 0
            }
        };
        all_settled && servers_idle && switch_idle
    }

    /// Pushes the rounds as synchronous PS-lite workers would with two
    /// slot copies: round `r` once every worker has settled round `r - 2`.
    /// Then pumps until everything is settled.
    fn run(&mut self, plans: &Plan, rounds: u32, ctx: &str) {
        let t = Instant::now();
        let mut next = 1u32;
        loop {
            while next <= rounds
                && (next <= 2 || (0..WORKERS).all(|w| self.settled.contains_key(&(w, next - 2))))
            {
                for (w, link) in self.workers.iter().enumerate() {
                    let (r, pairs) = &plans[w][next as usize - 1];
                    assert_eq!(link.push(*r, pairs.clone()).unwrap().round(), next);
                }
                next += 1;
            }
            let moved = self.pump();
            if next > rounds && !moved && self.quiet(rounds) {
                std::thread::sleep(Duration::from_millis(20));
                if !self.pump() && self.quiet(rounds) {
                    break;
                }
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{ctx}: no quiescence: pushed {} rounds, settled {}/{}, switch {:?}",
                next - 1,
                self.settled.len(),
                rounds * u32::from(WORKERS),
                self.switch.as_ref().map(SwitchNode::stats)
            );
            if !moved {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    fn check(&self, expected: &BTreeMap<(u32, u32), i64>, rounds: u32, ctx: &str) {
        assert!(
            self.reported.values().all(|&n| n == 1),
            "{ctx}: a round reported twice"
        );
        for w in 0..WORKERS {
            for r in 1..=rounds {
                assert_eq!(
                    self.settled.get(&(w, r)),
                    Some(&1),
                    "{ctx}: worker {w} round {r}"
                );
            }
        }
        let mut keys: Vec<&(u32, u32)> = expected.keys().chain(self.got.keys()).collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            let want = expected.get(k).copied().unwrap_or(0);
            let have = self.got.get(k).copied().unwrap_or(0);
            assert_eq!(want, have, "{ctx}: round {} rank {}", k.0, k.1);
        }
    }

    fn finish(self) -> Option<SwitchNodeStats> {
        for w in self.workers {
            w.shutdown();
        }
        for s in self.servers {
            s.shutdown();
        }
        self.switch.map(SwitchNode::shutdown)
    }
}

#[test]
fn exact_totals_without_loss() {
    let rounds = 120;
    let (plans, expected) = plan(11, rounds);
    let mut c = Cluster::start(true, None);
    c.run(&plans, rounds, "no loss");
    c.check(&expected, rounds, "no loss");
    let worker = c.workers[0].stats();
    assert_eq!(worker.worker.given_up, 0);
    let total_pairs: u64 = plans.iter().flatten().map(|(_, p)| p.len() as u64).sum();
    let st = c.finish().unwrap();
    eprintln!("no loss:\n{st}");
    assert!(
        st.switch.added_pairs * 10 >= total_pairs * 9,
        "the switch sums the bulk: {} of {total_pairs} pairs",
        st.switch.added_pairs
    );
    assert_eq!(
        st.switch.rounds_completed + st.switch.rounds_flushed,
        u64::from(rounds)
    );
    assert_eq!(st.switch.aggregate_abandoned, 0);
    assert_eq!(st.servers.len(), usize::from(SERVERS));
}

#[test]
fn exact_totals_with_five_percent_loss_everywhere() {
    let rounds = 100;
    let (plans, expected) = plan(23, rounds);
    let loss: HotLoss = "drop=0.05,dup=0.02,delay=0.05,delay_ms=2,seed=5"
        .parse()
        .unwrap();
    let mut c = Cluster::start(true, Some(loss));
    c.run(&plans, rounds, "5% loss");
    c.check(&expected, rounds, "5% loss");
    let retransmits: u64 = c.workers.iter().map(|w| w.stats().worker.retransmits).sum();
    let worker_drops: u64 = c.workers.iter().map(|w| w.stats().io.faults.dropped).sum();
    let fallback_pairs = c.fallback_pairs;
    let st = c.finish().unwrap();
    eprintln!(
        "5% loss: {retransmits} worker retransmissions, {fallback_pairs} fallback pairs\n{st}"
    );
    assert!(
        worker_drops > 0 && st.io.faults.dropped > 0,
        "faults were injected"
    );
    assert!(retransmits > 0);
    assert!(
        st.switch.duplicates > 0,
        "retransmissions answered from the records"
    );
    assert_eq!(st.switch.aggregate_abandoned, 0);
}

#[test]
fn dead_switch_everything_falls_back_exactly() {
    let rounds = 16;
    let (plans, expected) = plan(37, rounds);
    let mut c = Cluster::start(false, None);
    c.run(&plans, rounds, "dead switch");
    c.check(&expected, rounds, "dead switch");
    assert!(c.reported.is_empty(), "no aggregate without a switch");
    let given_up: u64 = c.workers.iter().map(|w| w.stats().worker.given_up).sum();
    let sent: u64 = c.workers.iter().map(|w| w.stats().worker.packets).sum();
    assert_eq!(given_up, sent, "every hot packet given up");
    for s in &c.servers {
        let st = s.stats();
        assert!(!st.registered && st.registers_sent > 1);
        assert!(st.server.uncertain_timed_out + st.server.uncertain_applied > 0);
    }
    c.finish();
}

#[test]
fn garbage_at_the_switch_is_counted_not_fatal() {
    let rounds = 30;
    let (plans, expected) = plan(41, rounds);
    let mut c = Cluster::start(true, None);
    let at = c.switch.as_ref().unwrap().local_addr();
    let junk = UdpSocket::bind(localhost()).unwrap();
    let mut rng = SplitMix64::new(99);
    let mut sent = 0u64;
    for i in 0..200usize {
        let n = rng.below(120) as usize;
        let mut b: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
        if i % 2 == 0 && b.len() >= 4 {
            b[..4].copy_from_slice(&[0x5A, 0x42, 1, (i % 11) as u8]);
        }
        junk.send_to(&b, at).unwrap();
        sent += 1;
    }
    let stranger = RegisterRepr {
        job: JOB,
        server: 7,
        ack: false,
    };
    junk.send_to(&stranger.to_bytes(), at).unwrap();
    c.run(&plans, rounds, "garbage");
    c.check(&expected, rounds, "garbage");
    let st = c.finish().unwrap();
    assert!(st.switch.bad_packets > 0);
    assert!(
        st.switch.bad_packets + st.register_refused + st.switch.total_fallbacks() >= sent,
        "every junk datagram counted: {st}"
    );
    assert!(st.register_refused >= 1);
    assert_eq!(
        st.servers.len(),
        usize::from(SERVERS),
        "the stranger was not recorded"
    );
}

#[test]
fn pinned_server_address_is_not_replaced() {
    let proto = config();
    let decoy = UdpSocket::bind(localhost()).unwrap();
    let mut sc = SwitchNodeConfig::new(localhost(), proto.clone());
    sc.server_addrs
        .insert((JOB, 0), decoy.local_addr().unwrap());
    let switch = SwitchNode::start(sc).unwrap();
    let mut lc = LinkConfig::new(proto.clone(), JOB, 0, switch.local_addr());
    lc.bind = localhost();
    let server = ServerLink::start(lc.clone()).unwrap();
    lc.rank = 1;
    let other = ServerLink::start(lc).unwrap();
    let t = Instant::now();
    while !other.is_registered() || switch.stats().register_refused == 0 {
        assert!(t.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(!server.is_registered());
    let st = switch.shutdown();
    assert_eq!(
        st.servers,
        vec![
            (JOB, 0, decoy.local_addr().unwrap()),
            (JOB, 1, other.local_addr()),
        ]
    );
    let mut bad = SwitchNodeConfig::new(localhost(), proto);
    bad.server_addrs
        .insert((JOB, 5), decoy.local_addr().unwrap());
    assert!(SwitchNode::start(bad)
        .unwrap_err()
        .to_string()
        .contains("job 4 server 5"));
}
