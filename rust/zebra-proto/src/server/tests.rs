use super::*;
use crate::fallback::FallbackCause;
use crate::switch::{Switch, SwitchAction};
use crate::wire::{FallbackReason, HotBody, HotRepr};
use std::time::Duration;

fn config() -> Config {
    let mut c = Config::new(vec![JobConfig::new(1, 2, 64, 2)]);
    c.registers = 4;
    c.slots = 32;
    c.packet_size = 64;
    c.aggregate_size = 64;
    c.max_seqs = 40;
    c.uncertain_timeout = Duration::from_millis(5);
    c.round_timeout = Duration::from_millis(10);
    c
}

fn hot(worker: u16, round: u32, seq: u16, done: bool, pairs: &[(u32, f32)]) -> Vec<u8> {
    HotRepr {
        job: 1,
        worker,
        round,
        seq,
        retransmission: false,
        done,
        fixed: false,
        token: 0,
        body: HotBody::Sparse(pairs.iter().map(|&(r, v)| (r, v.to_bits())).collect()),
    }
    .to_bytes()
}

/// Parts for server 0 of a round where worker 0 sent seq 0 and 2 and worker 1 seq 0.
fn parts_for_server0(round: u32) -> Vec<Vec<u8>> {
    let mut s = Switch::new(config()).unwrap();
    let t = Timestamp(0);
    s.handle_packet(
        t,
        &hot(
            0,
            round,
            0,
            false,
            &[(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0), (40, 9.0)],
        ),
    );
    s.handle_packet(
        t,
        &hot(0, round, 2, true, &[(4, 1.0), (5, 1.0), (6, 1.0), (7, 1.0)]),
    );
    let mut out = s.handle_packet(t, &hot(1, round, 0, true, &[(0, 10.0), (8, 1.0)]));
    out.extend(s.poll(Timestamp(20_000)));
    out.into_iter()
        .filter_map(|a| match a {
            SwitchAction::Aggregate {
                server: 0, payload, ..
            } => Some(payload),
            _ => None,
        })
        .collect()
}

fn fallback(
    worker: u16,
    round: u32,
    seq: u16,
    cause: FallbackCause,
    pairs: &[(u32, f32)],
) -> Fallback {
    Fallback {
        job: 1,
        round,
        worker,
        seq,
        cause,
        pairs: pairs.to_vec(),
    }
}

fn rounds(actions: &[ServerAction]) -> Vec<RoundAggregate> {
    actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Round(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn applied(actions: &[ServerAction]) -> Vec<Fallback> {
    actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Apply(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn reassembles_out_of_order_acks_everything_reports_once() {
    let parts = parts_for_server0(3);
    assert_eq!(
        parts.len(),
        4,
        "9 consecutive indices as runs of at most 4 values in 64-byte parts, and a \
         coverage part for worker 0 only (worker 1 is complete)"
    );
    let mut srv = Server::new(&config(), 1, 0).unwrap();
    let mut reports = Vec::new();
    for p in parts.iter().rev().chain(parts.iter()) {
        let out = srv.handle_packet(Timestamp(1), p);
        assert!(
            matches!(out[0], ServerAction::Send(_)),
            "every part is acknowledged"
        );
        reports.extend(rounds(&out));
    }
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(
        r.pairs,
        vec![
            (0, 11.0),
            (1, 2.0),
            (2, 3.0),
            (3, 4.0),
            (4, 1.0),
            (5, 1.0),
            (6, 1.0),
            (7, 1.0),
            (8, 1.0)
        ]
    );
    assert_eq!(
        (r.round, r.contributed, r.complete, r.flushed),
        (3, 0b11, 0b10, true)
    );
    assert!(r.coverage.covers(0, 0) && !r.coverage.covers(0, 1) && r.coverage.covers(0, 2));
    assert!(
        r.coverage.covers(1, 0) && r.coverage.covers(1, 1),
        "a complete worker: every packet is in the sum"
    );
    assert_eq!(srv.stats().duplicate_parts, 4);
}

#[test]
fn uncertain_fallbacks_wait_for_coverage() {
    let mut srv = Server::new(&config(), 1, 0).unwrap();
    let t = Timestamp(0);
    assert!(srv
        .add_fallback(t, fallback(0, 3, 0, FallbackCause::NoResponse, &[(0, 1.0)]))
        .unwrap()
        .is_empty());
    assert!(srv
        .add_fallback(t, fallback(0, 3, 1, FallbackCause::NoResponse, &[(9, 5.0)]))
        .unwrap()
        .is_empty());
    assert_eq!(srv.held_fallbacks(), 2);
    let mut out = Vec::new();
    for p in parts_for_server0(3) {
        out.extend(srv.handle_packet(t, &p));
    }
    let a = applied(&out);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].seq, 1, "seq 0 is in the sum, seq 1 is not");
    assert_eq!(srv.held_fallbacks(), 0);
    assert_eq!(srv.poll_at(), None);
    let late = srv
        .add_fallback(t, fallback(0, 3, 2, FallbackCause::NoResponse, &[(4, 1.0)]))
        .unwrap();
    assert!(late.is_empty(), "covered after the report too");
    let late = srv
        .add_fallback(
            t,
            fallback(1, 3, 0, FallbackCause::NoResponse, &[(0, 10.0)]),
        )
        .unwrap();
    assert!(late.is_empty(), "worker 1 is complete: covered");
    let late = srv
        .add_fallback(t, fallback(0, 3, 3, FallbackCause::NoResponse, &[(4, 1.0)]))
        .unwrap();
    assert_eq!(
        applied(&late).len(),
        1,
        "seq 3 of worker 0 is not in the sum"
    );
    assert_eq!(
        (srv.stats().uncertain_covered, srv.stats().uncertain_applied),
        (3, 2)
    );
}

#[test]
fn timed_out_uncertain_fallback_is_subtracted_from_a_late_aggregate() {
    let mut srv = Server::new(&config(), 1, 0).unwrap();
    srv.add_fallback(
        Timestamp(0),
        fallback(1, 3, 0, FallbackCause::NoResponse, &[(0, 10.0), (8, 1.0)]),
    )
    .unwrap();
    assert_eq!(srv.poll_at(), Some(Timestamp(5_000)));
    assert!(srv.poll(Timestamp(4_999)).is_empty());
    assert_eq!(applied(&srv.poll(Timestamp(5_000))).len(), 1);
    let mut out = Vec::new();
    for p in parts_for_server0(3) {
        out.extend(srv.handle_packet(Timestamp(6_000), &p));
    }
    let r = &rounds(&out)[0];
    assert_eq!(r.corrected, 1);
    assert_eq!(r.pairs[0], (0, 1.0));
    assert_eq!(r.pairs.iter().find(|p| p.0 == 8), Some(&(8, 0.0)));
    assert_eq!(srv.stats().corrections, 1);
}

#[test]
fn certain_fallbacks_pass_and_foreign_ones_are_refused() {
    let mut srv = Server::new(&config(), 1, 0).unwrap();
    let cause = FallbackCause::Switch(FallbackReason::Late);
    assert_eq!(
        applied(
            &srv.add_fallback(Timestamp(0), fallback(0, 1, 0, cause, &[(1, 1.0)]))
                .unwrap()
        )
        .len(),
        1
    );
    let bad_job = Fallback {
        job: 2,
        ..fallback(0, 1, 0, cause, &[])
    };
    assert_eq!(
        srv.add_fallback(Timestamp(0), bad_job),
        Err(ServerError::WrongJob(2))
    );
    assert_eq!(
        srv.add_fallback(Timestamp(0), fallback(0, 1, 0, cause, &[(33, 1.0)])),
        Err(ServerError::NotOwner(33))
    );
    assert_eq!(
        srv.add_fallback(Timestamp(0), fallback(0, 1, 0, cause, &[(99, 1.0)])),
        Err(ServerError::NotOwner(99))
    );
    assert!(Server::new(&config(), 1, 2).is_err());
}

#[test]
fn foreign_or_inconsistent_parts_are_not_acked() {
    let parts = parts_for_server0(3);
    let mut other = Server::new(&config(), 1, 1).unwrap();
    assert!(other.handle_packet(Timestamp(0), &parts[0]).is_empty());
    assert!(other
        .handle_packet(Timestamp(0), b"\x5a\x42\x01\x05")
        .is_empty());
    assert_eq!(other.stats().bad_packets, 2);

    let mut srv = Server::new(&config(), 1, 0).unwrap();
    srv.handle_packet(Timestamp(0), &parts[0]);
    let Ok(Message::Aggregate(mut a)) = Message::parse(&parts[0]) else {
        panic!()
    };
    a.parts += 1;
    a.part = 1;
    assert!(srv.handle_packet(Timestamp(0), &a.to_bytes()).is_empty());
    assert_eq!(srv.incomplete_rounds(), 1);
}

/// A server remembering `history` rounds that holds an uncertain fallback of
/// round 1, then gets round `next`'s aggregate: the server and what it did.
fn held_round_1_then(history: u32, next: u32) -> (Server, Vec<ServerAction>) {
    let mut c = config();
    c.server_history = history;
    let mut srv = Server::new(&c, 1, 0).unwrap();
    srv.add_fallback(
        Timestamp(0),
        fallback(0, 1, 5, FallbackCause::NoResponse, &[(1, 1.0)]),
    )
    .unwrap();
    let mut out = Vec::new();
    for p in parts_for_server0(next) {
        out.extend(srv.handle_packet(Timestamp(0), &p));
    }
    (srv, out)
}

#[test]
fn history_counts_rounds_not_round_numbers() {
    let (mut srv, out) = held_round_1_then(2, 65_537);
    assert!(
        applied(&out).is_empty(),
        "two rounds remembered: round 1 still waits for its aggregate"
    );
    assert_eq!(srv.held_fallbacks(), 1);
    for p in parts_for_server0(1) {
        srv.handle_packet(Timestamp(0), &p);
    }
    assert_eq!(srv.held_fallbacks(), 0);
    assert_eq!(srv.stats().uncertain_unverified, 0);
    assert_eq!(srv.stats().stale_parts, 0);
}

#[test]
fn old_rounds_are_forgotten_after_the_history() {
    let (mut srv, out) = held_round_1_then(1, 4);
    assert_eq!(
        applied(&out).len(),
        1,
        "round 1 is forgotten and its held pairs applied"
    );
    assert_eq!(srv.stats().uncertain_unverified, 1);
    let stale = parts_for_server0(1);
    let out = srv.handle_packet(Timestamp(0), &stale[0]);
    assert!(matches!(&out[..], [ServerAction::Send(_)]));
    assert_eq!(srv.stats().stale_parts, 1);
}
