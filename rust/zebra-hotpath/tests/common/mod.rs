//! The hot-path cluster the integration tests drive: a switch node, three
//! worker links and two server links in this process, each on its own I/O
//! thread, with a seeded plan of sparse integer-valued pushes and its exact
//! sums. `loopback.rs` runs it on 127.0.0.1, `netns_stack.rs` over the
//! user-level stack.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use zebra_hotpath::{
    HotLoss, LinkConfig, ServerEvent, ServerLink, SwitchNode, SwitchNodeConfig, SwitchNodeStats,
    WorkerEvent, WorkerLink,
};
use zebra_proto::rng::SplitMix64;
use zebra_proto::{Config, JobConfig};

pub const JOB: u16 = 4;
pub const WORKERS: u16 = 3;
pub const SERVERS: u16 = 2;
pub const HOT_KEYS: u32 = 300;

pub fn config() -> Config {
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

pub fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// An address nothing listens on.
pub fn dead_address() -> SocketAddr {
    UdpSocket::bind(localhost()).unwrap().local_addr().unwrap()
}

/// Each worker's pushes (round, pairs) and the exact sum per (round, rank).
pub type Plan = Vec<Vec<(u32, Vec<(u32, f32)>)>>;

pub fn plan(seed: u64, rounds: u32) -> (Plan, BTreeMap<(u32, u32), i64>) {
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

pub struct Cluster {
    pub switch: Option<SwitchNode>,
    pub workers: Vec<WorkerLink>,
    pub servers: Vec<ServerLink>,
    pub got: BTreeMap<(u32, u32), i64>,
    pub reported: BTreeMap<(u16, u32), u32>,
    pub settled: BTreeMap<(u16, u32), u32>,
    pub fallback_pairs: u64,
    /// `ServerEvent::SwitchRestarted` and `SwitchMoved` events seen.
    pub restarts: u64,
}

impl Cluster {
    /// The cluster on 127.0.0.1: a switch (or, not `alive`, an address
    /// nobody answers) and every link on kernel sockets.
    pub fn start(alive: bool, loss: Option<HotLoss>) -> Cluster {
        let proto = config();
        let switch = alive.then(|| {
            let mut c = SwitchNodeConfig::new(localhost(), proto.clone());
            c.loss = loss;
            SwitchNode::start(c).unwrap()
        });
        let at = switch
            .as_ref()
            .map_or_else(dead_address, SwitchNode::local_addr);
        Cluster::around(switch, |rank| {
            let mut c = LinkConfig::new(proto.clone(), JOB, rank, at);
            c.bind = localhost();
            c.loss = loss;
            c
        })
    }

    /// Servers and workers started from `link(rank)` around `switch` (none:
    /// the links' switch address is dead); waits for the servers to
    /// register when there is a switch.
    pub fn around(switch: Option<SwitchNode>, link: impl Fn(u16) -> LinkConfig) -> Cluster {
        let alive = switch.is_some();
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
            restarts: 0,
        }
    }

    /// Moves every waiting event: fallbacks to their servers, results into
    /// the tallies. True if anything moved.
    pub fn pump(&mut self) -> bool {
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
                    WorkerEvent::Resettle {
                        server, batches, ..
                    } => {
                        for b in batches {
                            self.fallback_pairs += b.pairs.len() as u64;
                            self.servers[server as usize].add_fallback(b).unwrap();
                        }
                    }
                    WorkerEvent::Update(_) | WorkerEvent::UpdateGap => {
                        panic!("no server of this cluster sends updates")
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
                    ServerEvent::BreakSettled => panic!("no server of this cluster sends a BREAK"),
                    ServerEvent::SwitchRestarted { .. } | ServerEvent::SwitchMoved { .. } => {
                        self.restarts += 1;
                        continue;
                    }
                };
                for (rank, v) in pairs {
                    assert_eq!(v.fract(), 0.0, "integer-valued sums stay integers");
                    *self.got.entry((round, rank)).or_insert(0) += v as i64;
                }
            }
        }
        moved
    }

    pub fn quiet(&self, rounds: u32) -> bool {
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
    pub fn run(&mut self, plans: &Plan, rounds: u32, ctx: &str) {
        self.run_from(plans, 1, rounds, ctx);
    }

    /// [`run`](Self::run) for rounds `first..=rounds` of the plans, the
    /// rounds before them already run.
    pub fn run_from(&mut self, plans: &Plan, first: u32, rounds: u32, ctx: &str) {
        let t = Instant::now();
        let mut next = first;
        loop {
            while next <= rounds
                && (next <= first + 1
                    || (0..WORKERS).all(|w| self.settled.contains_key(&(w, next - 2))))
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

    pub fn check(&self, expected: &BTreeMap<(u32, u32), i64>, rounds: u32, ctx: &str) {
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

    pub fn finish(self) -> Option<SwitchNodeStats> {
        for w in self.workers {
            w.shutdown();
        }
        for s in self.servers {
            s.shutdown();
        }
        self.switch.map(SwitchNode::shutdown)
    }
}
