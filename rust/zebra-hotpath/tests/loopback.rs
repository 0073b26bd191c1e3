//! The hot path over real UDP sockets on 127.0.0.1: the switch node, three
//! worker links and two server links in this process, each on its own I/O
//! thread. Workers push many rounds of sparse integer-valued hot pairs; the
//! test forwards every fallback to its server, as the shim will. At the end
//! the servers' totals (aggregates plus applied fallbacks) equal the exact
//! sums, with and without injected loss, with a dead switch, and with
//! garbage thrown at the switch.

mod common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{config, localhost, plan, Cluster, JOB, SERVERS, WORKERS};
use zebra_hotpath::{HotLoss, LinkConfig, ServerLink, SwitchNode, SwitchNodeConfig};
use zebra_proto::rng::SplitMix64;
use zebra_proto::wire::RegisterRepr;

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
            b[..4].copy_from_slice(&[0x5A, 0x42, zebra_proto::consts::VERSION, (i % 11) as u8]);
        }
        junk.send_to(&b, at).unwrap();
        sent += 1;
    }
    let stranger = RegisterRepr {
        job: JOB,
        server: 7,
        ack: false,
        admit: None,
        epoch: 0,
        token: 0,
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

/// Issue 20: only members take part. Once the job's members have spoken
/// (pinned, and shown the token the switch handed them), a socket outside
/// the job sends forged REGISTERs (with and without admission, with a made-up
/// token), HOT packets for the next round (fresh and flagged RETX), aggregate
/// acknowledgements and a round far in the future: every one is refused and
/// counted, no server's address moves, and the next rounds' sums stay exact.
#[test]
fn a_socket_outside_the_job_changes_nothing_and_is_counted() {
    use zebra_proto::wire::{Admission, AggregateAckRepr, HotBody, HotRepr};
    let rounds = 20;
    let half = rounds / 2;
    let (plans, expected) = plan(77, rounds);
    let mut c = Cluster::start(true, None);
    c.run(&plans, half, "members first");
    let switch = c.switch.as_ref().unwrap();
    let at = switch.local_addr();
    let before = switch.stats();
    assert_eq!(before.servers.len(), usize::from(SERVERS));
    assert_eq!(before.workers.len(), usize::from(WORKERS));

    let stranger = UdpSocket::bind(localhost()).unwrap();
    let mut forged: Vec<Vec<u8>> = Vec::new();
    for (admit, token) in [
        (None, 0),
        (None, 0x1234_5678),
        (
            Some(Admission {
                workers: WORKERS,
                capacity: 64,
            }),
            0,
        ),
    ] {
        forged.push(
            RegisterRepr {
                job: JOB,
                server: 0,
                ack: false,
                admit,
                epoch: 0,
                token,
            }
            .to_bytes(),
        );
    }
    let registers = forged.len() as u64;
    let hot = |round: u32, retransmission: bool, token: u32| HotRepr {
        job: JOB,
        worker: 0,
        round,
        seq: 0,
        retransmission,
        done: true,
        fixed: false,
        token,
        body: HotBody::Sparse(vec![(0, 1000f32.to_bits()), (1, (-7f32).to_bits())]),
    };
    for (round, retx, token) in [
        (half + 1, false, 0),
        (half + 1, true, 0x1234_5678),
        (half + 2, false, 0),
        (half + 1 + (1 << 24), false, 0),
    ] {
        forged.push(hot(round, retx, token).to_bytes());
    }
    for (round, part) in [(half, 0), (half + 1, 0), (half + 1, 1)] {
        forged.push(
            AggregateAckRepr {
                job: JOB,
                server: 0,
                round,
                part,
                token: 0,
            }
            .to_bytes(),
        );
    }
    for f in &forged {
        stranger.send_to(f, at).unwrap();
    }
    let t = Instant::now();
    loop {
        let st = switch.stats();
        if st.switch.refused_address >= forged.len() as u64 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "not all refused: {st}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    stranger
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 2048];
    assert!(
        stranger.recv_from(&mut buf).is_err(),
        "a stranger is never answered (no token handed out)"
    );

    c.run_from(&plans, half + 1, rounds, "after the forgeries");
    c.check(&expected, rounds, "after the forgeries");
    let st = c.finish().unwrap();
    assert_eq!(
        st.switch.refused_address,
        forged.len() as u64,
        "every forged datagram refused for its address, nothing else: {st}"
    );
    assert_eq!(st.switch.refused_token, 0, "{st}");
    assert_eq!(st.register_refused - before.register_refused, registers);
    assert_eq!(st.servers, before.servers, "no server moved");
    assert_eq!(st.workers, before.workers, "no worker moved");
    assert_eq!(st.switch.total_fallbacks(), before.switch.total_fallbacks());
    assert_eq!(st.switch.bad_packets, 0);
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

/// The capacity the switch granted `s`'s REGISTER (0: refused), waiting
/// for its answer.
fn granted(s: &ServerLink) -> u32 {
    let t = Instant::now();
    loop {
        if let Some(g) = s.granted() {
            return g;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no answer to REGISTER"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A switch started with nothing that sizes a job admits each job when its
/// server registers with the job's size, sums its rounds, and refuses a job
/// that does not fit (REGISTER_ACK with capacity 0) or whose size disagrees.
#[test]
fn a_switch_admits_jobs_as_their_servers_register() {
    use zebra_hotpath::{ServerEvent, WorkerEvent, WorkerLink};
    use zebra_proto::wire::Admission;
    use zebra_proto::JobConfig;

    let mut geometry = config();
    geometry.jobs.clear();
    let mut sc = SwitchNodeConfig::new(localhost(), geometry.clone());
    sc.admit = Some(JobConfig::new(0, 1, 1, 1));
    let switch = SwitchNode::start(sc).unwrap();
    let share = geometry.share(2);
    let link = |job: u16, workers: u16, capacity: u32| {
        let mut proto = geometry.clone();
        proto.jobs = vec![JobConfig::new(job, workers, capacity, 1)];
        let mut lc = LinkConfig::new(proto, job, 0, switch.local_addr());
        lc.bind = localhost();
        lc.admission = Some(Admission { workers, capacity });
        lc
    };
    let first = ServerLink::start(link(7, 2, share)).unwrap();
    assert_eq!(granted(&first), share);
    let second = ServerLink::start(link(8, 2, share)).unwrap();
    assert_eq!(granted(&second), share, "two servers' equal shares fit");
    let third = ServerLink::start(link(9, 2, share)).unwrap();
    assert_eq!(granted(&third), 0, "no room left");
    assert!(!third.is_registered());
    let wrong = ServerLink::start(link(7, 3, share)).unwrap();
    assert_eq!(granted(&wrong), 0, "job 7 has two workers, not three");

    let workers: Vec<WorkerLink> = (0..2)
        .map(|w| {
            let mut lc = link(7, 2, share);
            lc.rank = w;
            lc.admission = None;
            WorkerLink::start(lc).unwrap()
        })
        .collect();
    for (w, l) in workers.iter().enumerate() {
        l.push(1, vec![(3, 1.0 + w as f32), (share - 1, 10.0)])
            .unwrap();
    }
    for l in &workers {
        let t = Instant::now();
        while !matches!(
            l.recv_timeout(Duration::from_millis(100)),
            Some(WorkerEvent::RoundDone(_))
        ) {
            assert!(t.elapsed() < Duration::from_secs(5), "round 1 not done");
        }
    }
    let (applied, agg) = first.next_round(Duration::from_secs(5));
    assert!(applied.is_empty());
    let agg = agg.expect("round 1's aggregate");
    assert_eq!(agg.pairs, vec![(3, 3.0), (share - 1, 20.0)]);
    assert!(!agg.flushed);
    assert!(first
        .try_recv()
        .is_none_or(|e| !matches!(e, ServerEvent::Round(_))));
    let st = switch.shutdown();
    assert_eq!(st.admitted, 2);
    assert!(st.register_refused >= 2, "{st}");
    assert_eq!(st.switch.added_pairs, 4);
}

/// A switch that admits jobs (a job silent for 300 ms is retired), the
/// memory one job of one server takes, and the settings of such a job's
/// server link (job `job`, two workers, asking for that memory).
fn admitting_switch() -> (SwitchNode, u32, impl Fn(u16) -> LinkConfig) {
    use zebra_proto::wire::Admission;
    use zebra_proto::JobConfig;

    let mut geometry = config();
    geometry.jobs.clear();
    let mut sc = SwitchNodeConfig::new(localhost(), geometry.clone());
    sc.admit = Some(JobConfig::new(0, 1, 1, 1));
    sc.job_silence = Duration::from_millis(300);
    let switch = SwitchNode::start(sc).unwrap();
    let all = geometry.share(1);
    let addr = switch.local_addr();
    let link = move |job: u16| {
        let mut proto = geometry.clone();
        proto.jobs = vec![JobConfig::new(job, 2, all, 1)];
        let mut lc = LinkConfig::new(proto, job, 0, addr);
        lc.bind = localhost();
        lc.admission = Some(Admission {
            workers: 2,
            capacity: all,
        });
        lc
    };
    (switch, all, link)
}

/// A switch that admits jobs retires one whose server stopped registering
/// (here after 300 ms of silence instead of 10 s), and the next job takes its
/// memory, which it could not while the first job ran.
#[test]
fn a_switch_retires_a_job_whose_server_fell_silent() {
    let (switch, all, link) = admitting_switch();
    let first = ServerLink::start(link(7)).unwrap();
    assert_eq!(granted(&first), all, "the whole memory");
    let refused = ServerLink::start(link(8)).unwrap();
    assert_eq!(granted(&refused), 0, "no room while job 7 runs");
    refused.shutdown();
    first.shutdown();
    let t = Instant::now();
    let next = loop {
        let s = ServerLink::start(link(8)).unwrap();
        if granted(&s) == all {
            break s;
        }
        s.shutdown();
        assert!(t.elapsed() < Duration::from_secs(5), "job 7 never retired");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "retired too soon"
    );
    next.shutdown();
    let st = switch.shutdown();
    assert!(st.retired >= 1, "{st}");
    assert!(st.admitted >= 2, "{st}");
}

/// A refusal is not final: a server link the switch refused for want of room
/// keeps asking (every second) and is admitted once the job that held the
/// memory is retired (here after 300 ms of silence), without starting again.
#[test]
fn a_refused_server_is_admitted_once_the_memory_is_free() {
    let (switch, all, link) = admitting_switch();
    let first = ServerLink::start(link(7)).unwrap();
    assert_eq!(granted(&first), all, "the whole memory");
    let second = ServerLink::start(link(8)).unwrap();
    assert_eq!(granted(&second), 0, "no room while job 7 runs");
    assert!(!second.is_registered());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(second.granted(), Some(0), "still no room");
    first.shutdown();
    let t = Instant::now();
    while !(second.granted() == Some(all) && second.is_registered()) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "never admitted: {:?}",
            second.stats()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = second.shutdown();
    assert!(st.registers_sent >= 2, "{st:?}");
    let st = switch.shutdown();
    assert_eq!((st.retired, st.admitted), (1, 2), "{st}");
}

/// The pull half's copy: a server that registered sends UPDATE parts to the
/// switch, which copies them to the workers it heard HOT packets from (or to
/// the one a part targets), and forwards the workers' UPDATE_ACKs to the
/// server.
#[test]
fn updates_reach_the_workers_heard_from_and_acks_the_server() {
    use zebra_proto::consts::packet_type;
    use zebra_proto::wire::{HotBody, HotRepr, Message, UpdateRepr};
    use zebra_proto::{Timestamp, UpdateAction, UpdateEvent, UpdateReceiver, UpdateSender};

    let proto = config();
    let switch = SwitchNode::start(SwitchNodeConfig::new(localhost(), proto.clone())).unwrap();
    let at = switch.local_addr();
    let socket = || {
        let s = UdpSocket::bind(localhost()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        s
    };
    // The next datagram of type `t` on `s`, if one comes in time (others,
    // such as the aggregate of the round the HOT packets opened, are skipped).
    let recv = |s: &UdpSocket, t: u8| {
        let mut buf = [0u8; 2048];
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                if buf.get(3) == Some(&t) {
                    return Some(buf[..n].to_vec());
                }
            }
        }
        None
    };
    let server = socket();
    let register = RegisterRepr {
        job: JOB,
        server: 1,
        ack: false,
        admit: None,
        epoch: 0,
        token: 0,
    };
    server.send_to(&register.to_bytes(), at).unwrap();
    assert!(recv(&server, packet_type::REGISTER_ACK).is_some());
    let workers: Vec<UdpSocket> = (0..2).map(|_| socket()).collect();
    for (w, s) in workers.iter().enumerate() {
        let hot = HotRepr {
            job: JOB,
            worker: w as u16,
            round: 1,
            seq: 0,
            retransmission: false,
            done: false,
            fixed: false,
            token: 0,
            body: HotBody::Sparse(vec![(w as u32, 1.0f32.to_bits())]),
        };
        s.send_to(&hot.to_bytes(), at).unwrap();
        assert!(recv(s, packet_type::ACK).is_some(), "worker {w} answered");
    }

    // An update to every worker: two parts (a value larger than a datagram).
    let mut sender = UpdateSender::new(&proto, JOB, 1).unwrap();
    let value: Vec<u8> = (0..2000u32).map(|i| i as u8).collect();
    let seq = sender
        .send(Timestamp(0), 1, vec![(77, value.clone())], false)
        .unwrap();
    let parts: Vec<Vec<u8>> = sender
        .poll(Timestamp(0))
        .into_iter()
        .filter_map(|a| match a {
            UpdateAction::Send(b) => Some(b),
            UpdateAction::GivenUp { .. } => None,
        })
        .collect();
    assert_eq!(parts.len(), 2);
    for p in &parts {
        server.send_to(p, at).unwrap();
    }
    for (w, s) in workers.iter().enumerate() {
        let mut receiver = UpdateReceiver::new(&proto, JOB, 1, w as u16).unwrap();
        let mut got = Vec::new();
        for _ in 0..2 {
            let b = recv(s, packet_type::UPDATE).expect("a copy of each part");
            let (ack, events) = receiver.handle_packet(Timestamp(0), &b);
            s.send_to(&ack.expect("acknowledged"), at).unwrap();
            got.extend(events);
        }
        match &got[..] {
            [UpdateEvent::Update(u)] => {
                assert_eq!((u.seq, u.round), (seq, 1));
                assert_eq!(u.entries, vec![(77, value.clone())]);
            }
            other => panic!("worker {w}: {other:?}"),
        }
    }
    for _ in 0..4 {
        let ack = recv(&server, packet_type::UPDATE_ACK).expect("each worker's acks");
        sender.handle_packet(Timestamp(1), &ack);
    }
    assert_eq!(sender.stats().acks, 4, "two parts, two workers");
    assert_eq!(sender.outstanding(), 1, "worker 2 was never heard from");

    // A resend to worker 1 alone.
    let mut one = match Message::parse(&parts[0]) {
        Ok(Message::Update(u)) => u,
        other => panic!("{other:?}"),
    };
    one = UpdateRepr {
        target: 1,
        retx: true,
        ..one
    };
    server.send_to(&one.to_bytes(), at).unwrap();
    assert_eq!(recv(&workers[1], packet_type::UPDATE), Some(one.to_bytes()));
    assert_eq!(recv(&workers[0], packet_type::UPDATE), None);
    // To worker 2 (no address) and to a worker the job does not have.
    server
        .send_to(
            &UpdateRepr {
                target: 2,
                ..one.clone()
            }
            .to_bytes(),
            at,
        )
        .unwrap();
    server
        .send_to(&UpdateRepr { target: 9, ..one }.to_bytes(), at)
        .unwrap();
    let t = Instant::now();
    while switch.stats().switch.updates_refused == 0 {
        assert!(t.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(2));
    }
    let st = switch.shutdown();
    eprintln!("{st}");
    assert_eq!(
        st.workers,
        vec![
            (JOB, 0, workers[0].local_addr().unwrap()),
            (JOB, 1, workers[1].local_addr().unwrap()),
        ]
    );
    assert_eq!(
        (
            st.switch.updates_copied,
            st.update_copies,
            st.switch.update_acks
        ),
        (4, 5, 4)
    );
    assert_eq!((st.update_unroutable, st.switch.updates_refused), (1, 1));
    assert!(st
        .to_string()
        .contains("4 parts copied (5 datagrams to workers)"));
}

/// Round `round` from workers 0 and 1 only: added and acknowledged, open at
/// the switch (worker 2's DONE missing) when it is killed (shut down).
fn kill_with_a_round_open(c: &mut Cluster, plans: &common::Plan, round: u32) {
    for (link, plan) in c.workers.iter().zip(plans).take(2) {
        link.push(round, plan[round as usize - 1].1.clone())
            .unwrap();
    }
    let t = Instant::now();
    while !(0..2u16).all(|w| c.settled.contains_key(&(w, round))) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "round {round} acknowledged"
        );
        c.pump();
        std::thread::sleep(Duration::from_millis(1));
    }
    let old = c.switch.take().unwrap().shutdown();
    assert_eq!(old.open_rounds, 1, "killed with round {round} open");
}

/// Pumps until every server link has reported a restart or a move (at most
/// `limit`, else fails saying `what`); how long that took.
fn until_every_server_saw_it(c: &mut Cluster, limit: Duration, what: &str) -> Duration {
    let t = Instant::now();
    while c.restarts < u64::from(SERVERS) {
        assert!(t.elapsed() < limit, "{what}");
        c.pump();
        std::thread::sleep(Duration::from_millis(5));
    }
    t.elapsed()
}

#[test]
fn a_switch_started_again_is_seen_by_its_epoch_and_what_it_held_is_sent_again() {
    let rounds = 2;
    let (plans, expected) = plan(21, rounds);
    let mut c = Cluster::start(true, None);
    c.run(&plans, 1, "round 1");
    let at = c.switch.as_ref().unwrap().local_addr();
    kill_with_a_round_open(&mut c, &plans, 2);
    c.switch = Some(SwitchNode::start(SwitchNodeConfig::new(at, config())).unwrap());
    until_every_server_saw_it(
        &mut c,
        Duration::from_secs(5),
        "every server sees the new epoch within its REGISTER keep-alive",
    );
    for s in &c.servers {
        assert_eq!(s.stats().switch_restarts, 1);
    }
    // What each server's agent tells the workers (RESTART): the newest round
    // aggregated is 1.
    for w in &c.workers {
        w.restart(1, 2);
    }
    c.workers[2].push(2, plans[2][1].1.clone()).unwrap();
    let t = Instant::now();
    loop {
        let moved = c.pump();
        if !moved && c.quiet(rounds) {
            std::thread::sleep(Duration::from_millis(200));
            if !c.pump() && c.quiet(rounds) {
                break;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(10), "round 2 settles");
        std::thread::sleep(Duration::from_millis(1));
    }
    c.check(&expected, rounds, "restart");
    let resent: u64 = c.workers.iter().map(|w| w.stats().worker.restarts).sum();
    assert_eq!(resent, u64::from(WORKERS));
    c.finish();
}

/// A standby switch (`ZEBRA_SWITCH_STANDBY`), real UDP: the primary killed
/// with round 3 open at it (workers 0 and 1 added and acknowledged, worker
/// 2's packets not sent yet); each server's link moves its job to the
/// standby once the primary has left its REGISTER unanswered for
/// `failover`, and reports it when the standby answers; the workers are
/// told what the server agents tell them (the newest round aggregated, 2,
/// and the oldest still needed, 3). A stranger's REGISTER and HOT packet at
/// the standby change nothing. Every sum exact, rounds 4 on aggregated at
/// the standby.
#[test]
fn a_standby_takes_the_job_over_when_the_primary_is_killed() {
    use zebra_proto::wire::{HotBody, HotRepr};
    use zebra_proto::SwitchChoice;
    let rounds = 8;
    let (plans, expected) = plan(23, rounds);
    let standby = SwitchNode::start(SwitchNodeConfig::new(localhost(), config())).unwrap();
    let primary = SwitchNode::start(SwitchNodeConfig::new(localhost(), config())).unwrap();
    let (at, standby_at) = (primary.local_addr(), standby.local_addr());
    let mut c = Cluster::around(Some(primary), |rank| {
        let mut l = LinkConfig::new(config(), JOB, rank, at);
        l.bind = localhost();
        l.standby = Some(standby_at);
        l.failover = Duration::from_millis(1500);
        l
    });
    c.run(&plans, 2, "rounds 1 and 2 at the primary");
    kill_with_a_round_open(&mut c, &plans, 3);
    assert_eq!(
        standby.stats().switch.added_pairs,
        0,
        "the standby idle so far"
    );
    c.switch = Some(standby);
    let waited = until_every_server_saw_it(
        &mut c,
        Duration::from_secs(6),
        "every server moves within failover plus a keep-alive",
    );
    for s in &c.servers {
        let st = s.stats();
        assert_eq!(
            (st.switch_moves, st.on_standby, st.switch_restarts),
            (1, true, 0)
        );
        assert!(st.registered, "the standby answered");
    }
    for w in &c.workers {
        w.move_to(SwitchChoice::Standby, 2, 3);
        assert!(w.stats().on_standby);
    }

    // A stranger at the standby: a REGISTER for server 0 and a HOT packet
    // of worker 0, both refused for their address.
    let switch = c.switch.as_ref().unwrap();
    let before = switch.stats();
    let stranger = UdpSocket::bind(localhost()).unwrap();
    let forged = [
        RegisterRepr {
            job: JOB,
            server: 0,
            ack: false,
            admit: None,
            epoch: 0,
            token: 0,
        }
        .to_bytes(),
        HotRepr {
            job: JOB,
            worker: 0,
            round: 4,
            seq: 0,
            retransmission: false,
            done: true,
            fixed: false,
            token: 0,
            body: HotBody::Sparse(vec![(0, 1000f32.to_bits())]),
        }
        .to_bytes(),
    ];
    // Worker 0 is pinned at the standby first (round 3 of worker 2 alone
    // would leave it unpinned): the workers' next packets go there now.
    c.workers[2].push(3, plans[2][2].1.clone()).unwrap();
    c.run_from(&plans, 4, 5, "rounds 4 and 5 at the standby");
    let switch = c.switch.as_ref().unwrap();
    for f in &forged {
        stranger.send_to(f, standby_at).unwrap();
    }
    let t = Instant::now();
    while switch.stats().switch.refused_address < before.switch.refused_address + 2 {
        assert!(t.elapsed() < Duration::from_secs(5), "the stranger refused");
        std::thread::sleep(Duration::from_millis(2));
    }
    c.run_from(&plans, 6, rounds, "rounds 6 to 8 at the standby");
    c.check(&expected, rounds, "failover");
    let st = c.finish().unwrap();
    eprintln!("moved after {waited:?}; the standby:\n{st}");
    assert!(
        st.switch.rounds_completed >= u64::from(rounds - 3),
        "rounds 4 to 8 aggregated at the standby: {st}"
    );
    assert_eq!(
        st.servers
            .iter()
            .filter(|s| s.2 == stranger.local_addr().unwrap())
            .count(),
        0,
        "no server moved to the stranger"
    );
}
