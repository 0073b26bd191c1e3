//! The pull half's updates on simulated time: a server's `UpdateSender`, the
//! switch's copy (`Switch::handle_packet`, no state kept) and N workers'
//! `UpdateReceiver`s, with a seeded fault injector on every link direction
//! (drop, duplicate, delay and so reorder). Updates of random values, some
//! larger than a datagram, and BREAKs. At the end every worker handed up
//! every update exactly once, in seq order and equal to what was sent, or
//! reported it in a gap, and only updates the sender gave up for that worker
//! are in its gaps. Then mutated datagrams go into every party: nothing
//! panics, what is malformed is counted.

mod common;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::time::Duration;

use zebra_proto::rng::SplitMix64;
use zebra_proto::{
    Config, JobConfig, Switch, SwitchAction, Timestamp, Update, UpdateAction, UpdateEvent,
    UpdateReceiver, UpdateSender,
};

const JOB: u16 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Server,
    Switch,
    Worker(u16),
}

struct Net {
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    items: HashMap<u64, (Node, Vec<u8>)>,
    links: HashMap<(Node, Node), SplitMix64>,
    seed: u64,
    loss: f64,
    dropped: u64,
    duplicated: u64,
    /// Every datagram sent, for the mutation test.
    seen: Vec<Vec<u8>>,
}

impl Net {
    fn new(seed: u64, loss: f64) -> Net {
        Net {
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            items: HashMap::new(),
            links: HashMap::new(),
            seed,
            loss,
            dropped: 0,
            duplicated: 0,
            seen: Vec::new(),
        }
    }

    /// A datagram on a faulty link: dropped with `loss`, duplicated with
    /// `loss / 2`, delayed 50..=550 µs (so reordered).
    fn send(&mut self, from: Node, to: Node, bytes: Vec<u8>) {
        if self.seen.len() < 4000 {
            self.seen.push(bytes.clone());
        }
        let seed = self.seed;
        let rng = self.links.entry((from, to)).or_insert_with(|| {
            let h = format!("{from:?}->{to:?}")
                .bytes()
                .fold(seed, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
            SplitMix64::new(h)
        });
        if rng.chance(self.loss) {
            self.dropped += 1;
            return;
        }
        let copies = if rng.chance(self.loss / 2.0) { 2 } else { 1 };
        let delays: Vec<u64> = (0..copies).map(|_| 50 + rng.below(501)).collect();
        self.duplicated += copies - 1;
        for d in delays {
            self.seq += 1;
            self.queue.push(Reverse((self.now + d, self.seq)));
            self.items.insert(self.seq, (to, bytes.clone()));
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Scenario {
    seed: u64,
    loss: f64,
    workers: u16,
    updates: u32,
    /// Time between two updates, µs.
    every: u64,
}

impl Scenario {
    fn config(&self) -> Config {
        let mut c = Config::new(vec![JobConfig::new(JOB, self.workers, 64, 1)]);
        c.aggregate_size = 512;
        c.aggregate_rto = Duration::from_millis(2);
        c.aggregate_max_retries = 8;
        c.update_window = 4;
        c
    }
}

/// What the server sends: per update, `None` for a BREAK, else the round's
/// values (random keys; values of 0 to 1500 bytes, some larger than a part).
/// One round's values: `(key, value bytes)`.
type Values = Vec<(u64, Vec<u8>)>;

fn plan(s: &Scenario) -> Vec<Option<Values>> {
    let mut rng = SplitMix64::new(s.seed ^ 0x5EED);
    (1..=s.updates)
        .map(|i| {
            if i.is_multiple_of(11) {
                return None;
            }
            let mut values = BTreeMap::new();
            for _ in 0..rng.below(12) {
                let len = if rng.chance(0.1) {
                    600 + rng.below(900)
                } else {
                    rng.below(40)
                } as usize;
                let bytes = (0..len).map(|_| rng.next_u64() as u8).collect();
                values.insert(rng.below(1 << 40), bytes);
            }
            Some(values.into_iter().collect())
        })
        .collect()
}

#[derive(Debug, Default)]
struct Outcome {
    /// Updates handed up, over all workers.
    delivered: u64,
    /// Updates sent × workers.
    offered: u64,
    given_up: u64,
    gaps: u64,
    resends: u64,
    /// Parts sent (first copies).
    parts: u64,
    duplicate_parts: u64,
    dropped: u64,
    seen: Vec<Vec<u8>>,
}

fn run(s: &Scenario) -> Outcome {
    let config = s.config();
    let mut sender = UpdateSender::new(&config, JOB, 0).unwrap();
    let mut switch = Switch::new(config.clone()).unwrap();
    let mut receivers: Vec<UpdateReceiver> = (0..s.workers)
        .map(|w| UpdateReceiver::new(&config, JOB, 0, w).unwrap())
        .collect();
    let plan = plan(s);
    let mut net = Net::new(s.seed, s.loss);
    let mut next_update = 0usize;
    let mut sent: BTreeMap<u32, Update> = BTreeMap::new();
    let mut given_up: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); s.workers as usize];
    let mut handed: Vec<Vec<UpdateEvent>> = vec![Vec::new(); s.workers as usize];

    loop {
        let mut next = net.queue.peek().map(|Reverse((t, _))| *t);
        let mut consider = |t: Option<u64>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: u64| n.min(t)));
            }
        };
        if next_update < plan.len() {
            consider(Some(next_update as u64 * s.every));
        }
        consider(sender.poll_at().map(Timestamp::micros));
        for r in &receivers {
            consider(r.poll_at().map(Timestamp::micros));
        }
        let Some(t) = next else { break };
        assert!(t < 120_000_000, "{s:?}: no quiescence by 120 s");
        net.now = net.now.max(t);
        let now = Timestamp(net.now);

        while let Some(&Reverse((at, id))) = net.queue.peek() {
            if at > net.now {
                break;
            }
            net.queue.pop();
            let (to, bytes) = net.items.remove(&id).unwrap();
            match to {
                Node::Switch => {
                    for a in switch.handle_packet(now, &bytes) {
                        match a {
                            SwitchAction::Update {
                                target: None,
                                payload,
                                ..
                            } => {
                                for w in 0..s.workers {
                                    net.send(Node::Switch, Node::Worker(w), payload.clone());
                                }
                            }
                            SwitchAction::Update {
                                target: Some(w),
                                payload,
                                ..
                            } => net.send(Node::Switch, Node::Worker(w), payload),
                            SwitchAction::UpdateAck { payload, .. } => {
                                net.send(Node::Switch, Node::Server, payload)
                            }
                            other => panic!("{other:?}"),
                        }
                    }
                }
                Node::Server => sender.handle_packet(now, &bytes),
                Node::Worker(w) => {
                    let (ack, events) = receivers[w as usize].handle_packet(now, &bytes);
                    if let Some(ack) = ack {
                        net.send(Node::Worker(w), Node::Switch, ack);
                    }
                    handed[w as usize].extend(events);
                }
            }
        }
        while next_update < plan.len() && next_update as u64 * s.every <= net.now {
            let round = next_update as u32 + 1;
            let update = match &plan[next_update] {
                None => Update {
                    seq: sender.break_chain(now),
                    round: 0,
                    lens: false,
                    brk: true,
                    entries: Vec::new(),
                },
                Some(values) => {
                    let lens = round.is_multiple_of(3);
                    Update {
                        seq: sender.send(now, round, values.clone(), lens).unwrap(),
                        round,
                        lens,
                        brk: false,
                        entries: values.clone(),
                    }
                }
            };
            sent.insert(update.seq, update);
            next_update += 1;
        }
        if sender.poll_at().is_some_and(|x| x <= now) {
            for a in sender.poll(now) {
                match a {
                    UpdateAction::Send(b) => net.send(Node::Server, Node::Switch, b),
                    UpdateAction::GivenUp { seq, workers, .. } => {
                        for (w, g) in given_up.iter_mut().enumerate() {
                            if workers >> w & 1 == 1 {
                                g.insert(seq);
                            }
                        }
                    }
                }
            }
        }
        for (w, r) in receivers.iter_mut().enumerate() {
            if r.poll_at().is_some_and(|x| x <= now) {
                handed[w].extend(r.poll(now));
            }
        }
    }

    let ctx = format!("{s:?}");
    assert!(sender.is_idle(), "{ctx}: the sender keeps nothing");
    let last = *sent.keys().last().unwrap();
    let mut out = Outcome {
        given_up: sender.stats().given_up,
        resends: sender.stats().resends,
        parts: sender.stats().parts,
        dropped: net.dropped,
        offered: u64::from(last) * u64::from(s.workers),
        ..Outcome::default()
    };
    for (w, events) in handed.iter().enumerate() {
        let mut expect = 1u32;
        for e in events {
            match e {
                UpdateEvent::Update(u) => {
                    assert_eq!(u.seq, expect, "{ctx}: worker {w} in order, once");
                    assert_eq!(u, &sent[&u.seq], "{ctx}: worker {w} update {}", u.seq);
                    expect += 1;
                    out.delivered += 1;
                }
                UpdateEvent::Gap { missing } => {
                    assert_eq!(missing.start, expect, "{ctx}: worker {w}");
                    assert!(missing.end > missing.start);
                    for seq in missing.clone() {
                        assert!(
                            given_up[w].contains(&seq),
                            "{ctx}: worker {w} skipped update {seq}, which the sender did not \
                             give up for it"
                        );
                    }
                    expect = missing.end;
                    out.gaps += 1;
                }
            }
        }
        // The last updates may have been given up with nothing after them to
        // show it: the receiver hands up nothing for them, and holds nothing.
        for seq in expect..=last {
            assert!(
                given_up[w].contains(&seq),
                "{ctx}: worker {w} never got update {seq}"
            );
        }
        let r = &receivers[w];
        assert_eq!(r.held(), 0, "{ctx}");
        out.duplicate_parts += r.stats().duplicate_parts + r.stats().stale_parts;
    }
    if s.loss == 0.0 {
        // Nothing is lost, nothing given up. Parts overtaken by later ones
        // (each hop delays 50..=550 µs, far more than the round trip varies
        // on a real path) may be taken for lost and resent: a few.
        assert_eq!(out.given_up + out.gaps, 0, "{ctx}");
        let copies = out.parts * u64::from(s.workers);
        assert!(
            out.resends * 20 < copies,
            "{ctx}: {} resends for {copies} copies",
            out.resends
        );
    }
    assert_eq!(switch.stats().bad_packets, 0, "{ctx}");
    out.seen = net.seen;
    out
}

#[test]
fn every_update_once_in_order_or_a_gap_the_sender_gave_up() {
    let mut all = Vec::new();
    println!("updates: seed  loss | delivered given_up gaps resends dups dropped");
    for loss in [0.0, 0.01, 0.05, 0.2] {
        for seed in 0..6 {
            let s = Scenario {
                seed,
                loss,
                workers: 4,
                updates: 60,
                every: 10_000,
            };
            let o = run(&s);
            println!(
                "updates: {seed:>4} {loss:>5} | {:>4}/{:<4} {:>8} {:>4} {:>7} {:>4} {:>7}",
                o.delivered, o.offered, o.given_up, o.gaps, o.resends, o.duplicate_parts, o.dropped
            );
            all.push((loss, o));
        }
    }
    let total = |f: fn(&Outcome) -> u64, loss: f64| {
        all.iter()
            .filter(|(l, _)| *l == loss)
            .map(|(_, o)| f(o))
            .sum::<u64>()
    };
    assert!(total(|o| o.resends, 0.01) > 0, "resends were exercised");
    assert!(total(|o| o.duplicate_parts, 0.01) > 0, "duplicates too");
    for (loss, share) in [(0.01, 0.99), (0.05, 0.9)] {
        assert!(
            total(|o| o.delivered, loss) as f64 >= share * total(|o| o.offered, loss) as f64,
            "at {loss} loss, at least {share} of the updates reach each worker"
        );
    }
    assert!(total(|o| o.gaps, 0.2) > 0, "heavy loss shows gaps");
}

#[test]
fn a_burst_of_updates_beyond_the_window() {
    // Updates faster than the round trip: the window gives the oldest up
    // while they are in flight, and the workers' gaps say exactly which.
    for seed in 0..4 {
        run(&Scenario {
            seed,
            loss: 0.05,
            workers: 3,
            updates: 40,
            every: 100,
        });
    }
}

#[test]
fn mutated_datagrams_never_panic() {
    let s = Scenario {
        seed: 3,
        loss: 0.05,
        workers: 3,
        updates: 30,
        every: 2_000,
    };
    let seeds = run(&s).seen;
    assert!(seeds.len() > 100);
    let config = s.config();
    let mut switch = Switch::new(config.clone()).unwrap();
    let mut sender = UpdateSender::new(&config, JOB, 0).unwrap();
    let mut receiver = UpdateReceiver::new(&config, JOB, 0, 1).unwrap();
    sender
        .send(Timestamp(0), 1, vec![(1, vec![1; 900])], false)
        .unwrap();
    sender.poll(Timestamp(0));
    let mut rng = SplitMix64::new(0xBAD);
    for i in 0..60_000u64 {
        let seed = &seeds[rng.below(seeds.len() as u64) as usize];
        let b = common::mutate(&mut rng, seed);
        let now = Timestamp(i * 10);
        switch.handle_packet(now, &b);
        sender.handle_packet(now, &b);
        receiver.handle_packet(now, &b);
        if i % 1000 == 0 {
            sender.poll(now);
            receiver.poll(now);
            if rng.chance(0.5) {
                sender.send(now, i as u32 + 2, vec![], true).unwrap();
            }
        }
    }
    assert!(switch.stats().bad_packets > 10_000);
    assert!(sender.stats().bad_acks > 10_000);
    assert!(receiver.stats().bad_packets > 10_000);
}
