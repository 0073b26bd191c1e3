//! One hot-path datagram from arbitrary bytes (`WIRE.md`). Every checked
//! parser of `zebra_proto::wire` sees it: each type's `Packet::new_checked` +
//! `Repr::parse` must agree with `Message::parse`, and whatever parses must
//! re-emit to the very same bytes (the format has one encoding per value),
//! with each type's own invariants. Then the bytes go into a switch that has
//! a closed round (parts pending) and an open one, twice (a network
//! duplicate), at a fixed `now`, and into a server and a worker: everything
//! they send must parse, and a packet the switch added is never added again;
//! and into an update receiver and sender (the pull half).
//! The seeds in `seeds/wire/` are valid datagrams of every type for the jobs
//! of `config()` (`zebra-proto`'s test `wire::update::tests::the_fuzz_seeds_parse`
//! holds the update ones to the format).

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use zebra_proto::wire::{
    aggregate, aggregate_ack, coverage, hot, register, response, update, update_ack,
    AggregateAckRepr, AggregateRepr, CoverBits, CoverageRepr, Error, HotBody, HotRepr, Message,
    RegisterRepr, ResponseKind, ResponseRepr, UpdateAckRepr, UpdateRepr,
};
use zebra_proto::{
    Config, JobConfig, NumberMode, Server, ServerAction, Switch, SwitchAction, Timestamp,
    UpdateReceiver, UpdateSender, Worker, WorkerAction,
};

/// Job 1: two workers, two servers, f32 sparse. Job 2: fixed point with a dense block.
fn config() -> Config {
    let mut fixed = JobConfig::new(2, 2, 32, 1);
    fixed.number = NumberMode::Fixed { frac_bits: 12 };
    fixed.dense_ranks = 8;
    let mut c = Config::new(vec![JobConfig::new(1, 2, 64, 2), fixed]);
    c.registers = 8;
    c.slots = 16;
    c.packet_size = 256;
    c.max_seqs = 16;
    c.round_timeout = Duration::from_millis(50);
    c
}

const NOW: Timestamp = Timestamp::from_millis(1_000);

fn hot_packet(worker: u16, round: u32, seq: u16, done: bool, pairs: Vec<(u32, u32)>) -> Vec<u8> {
    HotRepr {
        job: 1,
        worker,
        round,
        seq,
        retransmission: false,
        done,
        fixed: false,
        token: 0,
        body: HotBody::Sparse(pairs),
    }
    .to_bytes()
}

/// Typed parse of `bytes` with one module's view and `Repr`.
macro_rules! typed {
    ($module:ident, $repr:ident, $bytes:expr) => {
        $module::Packet::new_checked($bytes).and_then(|p| $repr::parse(&p))
    };
}

fn check_parsers(data: &[u8]) {
    let msg = Message::parse(data);
    let hot = typed!(hot, HotRepr, data);
    let resp = typed!(response, ResponseRepr, data);
    let agg = typed!(aggregate, AggregateRepr, data);
    let cov = typed!(coverage, CoverageRepr, data);
    let ack = typed!(aggregate_ack, AggregateAckRepr, data);
    let reg = typed!(register, RegisterRepr, data);
    let upd = typed!(update, UpdateRepr, data);
    let uack = typed!(update_ack, UpdateAckRepr, data);
    // Each typed parser accepts exactly what Message::parse accepts as its type.
    fn agree<R: PartialEq + std::fmt::Debug>(typed: &Result<R, Error>, via_message: Option<&R>) {
        match via_message {
            Some(r) => assert_eq!(typed.as_ref().ok(), Some(r)),
            None => assert!(typed.is_err(), "typed parse accepted {typed:?}"),
        }
    }
    // What Message::parse made of the bytes as variant `$v`, if that.
    macro_rules! as_variant {
        ($v:ident) => {
            match &msg {
                Ok(Message::$v(r)) => Some(r),
                _ => None,
            }
        };
    }
    agree(&hot, as_variant!(Hot));
    agree(&resp, as_variant!(Response));
    agree(&agg, as_variant!(Aggregate));
    agree(&cov, as_variant!(Coverage));
    agree(&ack, as_variant!(AggregateAck));
    agree(&reg, as_variant!(Register));
    agree(&upd, as_variant!(Update));
    agree(&uack, as_variant!(UpdateAck));

    let Ok(m) = msg else { return };
    let bytes = m.to_bytes();
    assert_eq!(bytes, data, "re-emitting {m:?} changed the bytes");
    assert_eq!(Message::parse(&bytes).as_ref(), Ok(&m));
    match &m {
        Message::Hot(h) => {
            assert_ne!(h.round, 0);
            assert_eq!(h.buffer_len(), data.len());
            let pairs = h.body.pairs();
            assert_eq!(pairs.len(), h.body.len());
            if let HotBody::Dense { base, .. } = &h.body {
                for (i, &(index, _)) in pairs.iter().enumerate() {
                    assert_eq!(u64::from(index), u64::from(*base) + i as u64);
                }
            }
            let p = hot::Packet::new_checked(data).unwrap();
            assert_eq!(
                (p.job(), p.worker(), p.round(), p.seq()),
                (h.job, h.worker, h.round, h.seq)
            );
            assert_eq!(p.flags(), h.flag_byte());
        }
        Message::Response(r) => {
            let p = response::Packet::new_checked(data).unwrap();
            assert_eq!(
                (p.job(), p.worker(), p.round(), p.seq()),
                (r.job, r.worker, r.round, r.seq)
            );
            if let ResponseKind::Fallback { reason, .. } = r.kind {
                assert!(p.is_fallback());
                assert_eq!(p.reason(), reason as u8);
            }
        }
        Message::Aggregate(a) => {
            assert!(a.part < a.parts);
            assert!(a.pairs.len() as u64 <= u64::from(a.total));
            assert!(
                a.pairs.windows(2).all(|w| w[0].0 < w[1].0),
                "pairs not ascending"
            );
            assert_eq!(a.buffer_len(), data.len());
            // Cutting the pairs into parts loses and reorders nothing, and each
            // part fits its budget and parses back.
            for budget in [10, 64, 1432] {
                let parts = aggregate::split_parts(&a.pairs, budget);
                assert!(!parts.is_empty());
                assert_eq!(parts.concat(), a.pairs);
                for (i, part) in parts.iter().enumerate() {
                    assert!(aggregate::runs_len(part) <= budget);
                    let r = AggregateRepr {
                        part: i as u16,
                        parts: parts.len() as u16,
                        pairs: part.to_vec(),
                        ..a.clone()
                    };
                    assert_eq!(Message::parse(&r.to_bytes()), Ok(Message::Aggregate(r)));
                }
            }
        }
        Message::Coverage(c) => {
            assert!(c.part < c.parts);
            assert_eq!(c.buffer_len(), data.len());
            let first = u32::from(c.first_seq);
            let end = first + u32::from(c.nbits);
            assert!(end <= 65536);
            if first > 0 {
                assert!(!c.covers(c.first_seq - 1));
            }
            if let Ok(after) = u16::try_from(end) {
                assert!(!c.covers(after));
            }
            match &c.bits {
                CoverBits::All => {
                    if c.nbits > 0 {
                        assert!(c.covers(c.first_seq));
                        assert!(c.covers((end - 1) as u16));
                    }
                }
                CoverBits::Map(m) => {
                    assert_eq!(m.len(), usize::from(c.nbits).div_ceil(8));
                    for i in 0..u32::from(c.nbits) {
                        let bit = m[i as usize / 8] >> (i % 8) & 1 == 1;
                        assert_eq!(c.covers((first + i) as u16), bit);
                    }
                }
            }
        }
        Message::Update(u) => {
            assert!(u.part < u.parts && u.seq != 0);
            assert_eq!(u.brk, u.round == 0);
            assert_eq!(u.buffer_len(), data.len());
            let p = update::Packet::new_checked(data).unwrap();
            assert_eq!(
                (p.job(), p.server(), p.seq(), p.target(), p.flags()),
                (u.job, u.server, u.seq, u.target, u.flag_byte())
            );
            // A part that starts with a key's first fragment is a whole update
            // on its own: it reassembles, and its values cut into parts again
            // reassemble to the same values.
            if let Ok(values) = update::reassemble([&u.entries[..]]) {
                for budget in [15, 64, 1444] {
                    let parts = update::split_parts(&values, budget);
                    assert!(parts.iter().all(|p| update::entries_len(p) <= budget));
                    let back = update::reassemble(parts.iter().map(|p| &p[..])).unwrap();
                    assert_eq!(back, values);
                }
            }
        }
        Message::AggregateAck(_) | Message::Register(_) | Message::UpdateAck(_) => {}
    }
}

/// Every datagram the switch sends parses, and answers go to the sender.
fn check_switch_out(out: &[SwitchAction], sent: Option<&HotRepr>) {
    for a in out {
        let m = Message::parse(a.payload()).expect("the switch sends a valid datagram");
        match (a, m) {
            (SwitchAction::Ack { job, worker, .. }, Message::Response(r))
            | (SwitchAction::Fallback { job, worker, .. }, Message::Response(r)) => {
                assert_eq!((r.job, r.worker), (*job, *worker));
                if let Some(h) = sent {
                    assert_eq!(
                        (r.job, r.worker, r.round, r.seq),
                        (h.job, h.worker, h.round, h.seq)
                    );
                }
            }
            (
                SwitchAction::Aggregate {
                    job,
                    server,
                    round,
                    part,
                    ..
                },
                Message::Aggregate(g),
            ) => {
                assert_eq!(
                    (g.job, g.server, g.round, g.part),
                    (*job, *server, *round, *part)
                );
            }
            (
                SwitchAction::Aggregate {
                    job,
                    server,
                    round,
                    part,
                    ..
                },
                Message::Coverage(g),
            ) => {
                assert_eq!(
                    (g.job, g.server, g.round, g.part),
                    (*job, *server, *round, *part)
                );
            }
            (SwitchAction::Update { job, target, .. }, Message::Update(u)) => {
                assert_eq!(u.job, *job);
                assert_eq!(*target, (!u.to_all()).then_some(u.target));
            }
            (SwitchAction::UpdateAck { job, server, .. }, Message::UpdateAck(a)) => {
                assert_eq!((a.job, a.server), (*job, *server));
            }
            (a, m) => panic!("switch action {a:?} carries {m:?}"),
        }
    }
}

fn ack_of(out: &[SwitchAction]) -> Option<ResponseKind> {
    out.iter().find_map(|a| match a {
        SwitchAction::Ack { payload, .. } => match Message::parse(payload) {
            Ok(Message::Response(r)) => Some(r.kind),
            _ => None,
        },
        _ => None,
    })
}

fn check_switch(data: &[u8]) {
    let c = config();
    let mut switch = Switch::new(c.clone()).unwrap();
    // Round 1 of job 1 closes (both workers DONE): its parts wait for ACKs.
    // Round 2 is open: worker 0 sent packet 0 of it.
    for w in 0..2 {
        let out = switch.handle_packet(
            NOW,
            &hot_packet(w, 1, 0, true, vec![(3, 0x3f80_0000), (12, 0x4000_0000)]),
        );
        check_switch_out(&out, None);
    }
    let out = switch.handle_packet(NOW, &hot_packet(0, 2, 0, false, vec![(5, 0x3f80_0000)]));
    check_switch_out(&out, None);

    let before = switch.stats().clone();
    let parsed = Message::parse(data);
    let sent = match &parsed {
        Ok(Message::Hot(h)) => Some(h),
        _ => None,
    };
    let first = switch.handle_packet(NOW, data);
    check_switch_out(&first, sent);
    let after = switch.stats();
    match &parsed {
        Ok(Message::Hot(_)) | Ok(Message::AggregateAck(_)) => {}
        // Copied or forwarded unchanged, or refused and counted.
        Ok(Message::Update(_)) | Ok(Message::UpdateAck(_)) => {
            let copied = (after.updates_copied + after.update_acks)
                - (before.updates_copied + before.update_acks);
            let refused = after.updates_refused - before.updates_refused;
            assert_eq!(copied + refused, 1);
            assert_eq!(first.len() as u64, copied);
            assert!(first.iter().all(|a| a.payload() == data));
        }
        _ => {
            assert!(first.is_empty(), "the switch answered {parsed:?}");
            assert_eq!(after.bad_packets, before.bad_packets + 1);
        }
    }
    let again = switch.handle_packet(NOW, data);
    check_switch_out(&again, sent);
    // Never added twice: an added packet's copy is answered as a duplicate.
    if let Some(ResponseKind::Ack { duplicate: false }) = ack_of(&first) {
        assert_eq!(ack_of(&again), Some(ResponseKind::Ack { duplicate: true }));
    }
    let later = switch.poll(NOW + Duration::from_millis(60));
    check_switch_out(&later, None);

    // A server and a worker read the same bytes.
    let mut server = Server::new(&c, 1, 0).unwrap();
    for a in server.handle_packet(NOW, data) {
        if let ServerAction::Send(b) = a {
            assert!(matches!(Message::parse(&b), Ok(Message::AggregateAck(_))));
        }
    }
    let mut worker = Worker::new(&c, 1, 0).unwrap();
    for a in worker.handle_packet(NOW, data) {
        if let WorkerAction::Send(b) = a {
            assert!(matches!(Message::parse(&b), Ok(Message::Hot(_))));
        }
    }

    // And the pull half's ends: a receiver acknowledges exactly what it
    // keeps and hands up at most the one update the bytes complete; a sender
    // with an update in flight takes them as an acknowledgement or counts
    // them.
    let mut receiver = UpdateReceiver::new(&c, 1, 0, 0).unwrap();
    let (ack, events) = receiver.handle_packet(NOW, data);
    if let Some(a) = ack {
        let Ok(Message::UpdateAck(a)) = Message::parse(&a) else {
            panic!("the receiver acknowledged with {a:?}")
        };
        let Ok(Message::Update(u)) = &parsed else {
            panic!("acknowledged {parsed:?}")
        };
        assert_eq!((a.seq, a.part, a.worker), (u.seq, u.part, 0));
    }
    assert!(events.len() <= 1 && receiver.poll(NOW + Duration::from_secs(60)).len() <= 2);
    let mut sender = UpdateSender::new(&c, 1, 0).unwrap();
    sender.send(NOW, 1, vec![(3, vec![1, 2, 3])], false).unwrap();
    sender.poll(NOW);
    sender.handle_packet(NOW, data);
    let st = sender.stats();
    assert_eq!(st.acks + st.duplicate_acks + st.bad_acks, 1);
}

fuzz_target!(|data: &[u8]| {
    check_parsers(data);
    check_switch(data);
});
