//! Bad bytes never panic: seeded mutations of real datagrams (flipped
//! bytes, cut or grown buffers, changed types, pure noise) go into a
//! switch, a worker and a server. Malformed ones are counted and dropped,
//! and the switch never adds one (worker, round, seq) twice.

mod common;

use std::collections::BTreeSet;

use zebra_proto::rng::SplitMix64;
use zebra_proto::wire::Message;
use zebra_proto::{
    Config, JobConfig, Server, ServerAction, Switch, SwitchAction, Timestamp, Worker, WorkerAction,
};

fn config() -> Config {
    let mut c = Config::new(vec![JobConfig::new(3, 2, 100, 1)]);
    c.registers = 8;
    c.slots = 32;
    c.packet_size = 128;
    c.max_seqs = 32;
    c
}

/// Real traffic of a few rounds: hot packets, responses, aggregates, acks.
fn corpus() -> Vec<Vec<u8>> {
    let c = config();
    let mut switch = Switch::new(c.clone()).unwrap();
    let mut server = Server::new(&c, 3, 0).unwrap();
    let mut workers: Vec<Worker> = (0..2).map(|w| Worker::new(&c, 3, w).unwrap()).collect();
    let mut all = Vec::new();
    let mut rng = SplitMix64::new(1);
    for round in 1..=4u32 {
        for (w, worker) in workers.iter_mut().enumerate() {
            let pairs: Vec<(u32, f32)> = (0..30)
                .map(|_| (rng.below(100) as u32, w as f32 + 1.0))
                .collect();
            let mut queue = worker.push(Timestamp(0), round, pairs).unwrap();
            while let Some(a) = queue.pop() {
                let WorkerAction::Send(b) = a else { continue };
                all.push(b.clone());
                for s in switch.handle_packet(Timestamp(0), &b) {
                    all.push(s.payload().to_vec());
                    match s {
                        SwitchAction::Aggregate { payload, .. } => {
                            for v in server.handle_packet(Timestamp(0), &payload) {
                                if let ServerAction::Send(ack) = v {
                                    all.push(ack);
                                }
                            }
                        }
                        _ => queue.extend(worker.handle_packet(Timestamp(0), s.payload())),
                    }
                }
            }
        }
    }
    all
}

#[test]
fn mutated_datagrams_never_panic_nor_double_add() {
    let seeds = corpus();
    assert!(seeds.len() > 50);
    let c = config();
    let mut switch = Switch::new(c.clone()).unwrap();
    let mut worker = Worker::new(&c, 3, 1).unwrap();
    let mut server = Server::new(&c, 3, 0).unwrap();
    worker
        .push(Timestamp(0), 1, vec![(1, 1.0), (2, 2.0)])
        .unwrap();
    let mut rng = SplitMix64::new(0xBAD);
    let mut hot_ids = BTreeSet::new();
    let mut malformed = 0u64;
    for i in 0..60_000u64 {
        let seed = &seeds[rng.below(seeds.len() as u64) as usize];
        let b = common::mutate(&mut rng, seed);
        match Message::parse(&b) {
            Ok(Message::Hot(h)) => {
                hot_ids.insert((h.job, h.worker, h.round, h.seq));
            }
            Ok(_) => {}
            Err(_) => malformed += 1,
        }
        let now = Timestamp(i * 10);
        switch.handle_packet(now, &b);
        worker.handle_packet(now, &b);
        server.handle_packet(now, &b);
        if i % 1000 == 0 {
            switch.poll(now);
            worker.poll(now);
            server.poll(now);
        }
    }
    assert!(malformed > 10_000, "{malformed}");
    assert!(switch.stats().bad_packets >= malformed);
    assert!(worker.stats().bad_packets > 0 && server.stats().bad_packets > 0);
    assert!(
        switch.stats().added_packets <= hot_ids.len() as u64,
        "added {} packets from {} distinct ids",
        switch.stats().added_packets,
        hot_ids.len()
    );
    assert!(switch.stats().duplicates > 0);
}
