//! Issue 20: only a job's members take part (`docs/SECURITY.md`). Each test
//! drives the switch with datagrams from named addresses: the members', and
//! a stranger's, whose forgeries must change no sum, no address and no
//! record, and be counted.

use std::net::SocketAddr;
use std::time::Duration;

use super::*;
use crate::wire::HotBody;

const WORKER0: u16 = 10;
const WORKER1: u16 = 11;
const SERVER: u16 = 20;
const STRANGER: u16 = 99;

fn at(port: u16) -> Source {
    Some(SocketAddr::from(([10, 0, 0, 1], port)))
}

fn config() -> Config {
    let mut c = Config::new(vec![JobConfig::new(1, 2, 16, 1)]);
    c.registers = 4;
    c.slots = 8;
    c.max_seqs = 8;
    c.round_timeout = Duration::from_millis(10);
    c.max_round_ahead = 100;
    c
}

fn hot(worker: u16, round: u32, token: u32, value: f32) -> Vec<u8> {
    HotRepr {
        job: 1,
        worker,
        round,
        seq: 0,
        retransmission: false,
        done: true,
        fixed: false,
        token,
        body: HotBody::Sparse(vec![(3, value.to_bits())]),
    }
    .to_bytes()
}

fn register(token: u32) -> RegisterRepr {
    RegisterRepr {
        job: 1,
        server: 0,
        ack: false,
        admit: None,
        epoch: 0,
        token,
    }
}

fn agg_ack(round: u32, token: u32) -> Vec<u8> {
    AggregateAckRepr {
        job: 1,
        server: 0,
        round,
        part: 0,
        token,
    }
    .to_bytes()
}

fn answers(out: &[SwitchAction]) -> Vec<ResponseRepr> {
    out.iter()
        .filter_map(|a| match Message::parse(a.payload()) {
            Ok(Message::Response(r)) => Some(r),
            _ => None,
        })
        .collect()
}

/// The sum of hot index 3 in the aggregate parts among `out`.
fn sum(out: &[SwitchAction]) -> Option<f32> {
    out.iter().find_map(|a| match Message::parse(a.payload()) {
        Ok(Message::Aggregate(g)) => g
            .pairs
            .iter()
            .find(|p| p.0 == 3)
            .map(|p| f32::from_bits(p.1)),
        _ => None,
    })
}

/// A switch whose server registered from SERVER and whose workers pushed
/// round 1 from WORKER0 and WORKER1, all showing the token handed to them:
/// every member pinned and proven. Returns the switch and the token.
fn joined() -> (Switch, u32) {
    let mut s = Switch::new(config()).unwrap();
    let token = s.register(at(SERVER), &register(0)).unwrap();
    assert_eq!(s.job_token(1), Some(token));
    assert_eq!(s.register(at(SERVER), &register(token)), Ok(token));
    let first = s.handle_datagram(Timestamp(0), at(WORKER0), &hot(0, 1, 0, 1.0));
    assert_eq!(
        answers(&first)[0].token,
        token,
        "the ACK hands the token out"
    );
    let out = s.handle_datagram(Timestamp(1), at(WORKER1), &hot(1, 1, token, 2.0));
    assert_eq!(sum(&out), Some(3.0));
    let acked = s.handle_datagram(Timestamp(2), at(SERVER), &agg_ack(1, token));
    assert!(acked.is_empty());
    assert_eq!(s.pending_parts(), 0);
    // Worker 0 shows the token from its next packet on.
    let out = s.handle_datagram(Timestamp(3), at(WORKER0), &hot(0, 2, token, 1.0));
    assert_eq!(answers(&out).len(), 1);
    assert_eq!(s.stats().refused(), 0);
    (s, token)
}

#[test]
fn a_strangers_hot_packets_are_neither_added_nor_answered() {
    let (mut s, token) = joined();
    let before = s.stats().clone();
    for forged in [
        hot(0, 2, 0, 100.0),
        hot(0, 2, token, 100.0),
        hot(1, 3, 0, 100.0),
    ] {
        assert!(s
            .handle_datagram(Timestamp(4), at(STRANGER), &forged)
            .is_empty());
    }
    assert_eq!(s.stats().refused_address, before.refused_address + 3);
    assert_eq!(s.stats().added_packets, before.added_packets);
    assert_eq!(s.stats().acks, before.acks);
    // Round 2 closes with the members' values only; round 3 opens clean.
    let out = s.handle_datagram(Timestamp(5), at(WORKER1), &hot(1, 2, token, 2.0));
    assert_eq!(sum(&out), Some(3.0));
    assert_eq!(s.member_addr(1, Role::Worker, 0), at(WORKER0));
}

#[test]
fn a_wrong_token_from_a_members_address_is_refused_once_it_showed_the_right_one() {
    let (mut s, token) = joined();
    let wrong = token.wrapping_add(1).max(1);
    for forged in [hot(1, 2, wrong, 100.0), hot(1, 2, 0, 100.0)] {
        assert!(s
            .handle_datagram(Timestamp(4), at(WORKER1), &forged)
            .is_empty());
    }
    assert_eq!(s.stats().refused_token, 2);
    assert!(s
        .handle_datagram(Timestamp(4), at(SERVER), &agg_ack(1, wrong))
        .is_empty());
    assert_eq!(s.stats().refused_token, 3);
    let out = s.handle_datagram(Timestamp(5), at(WORKER1), &hot(1, 2, token, 2.0));
    assert_eq!(sum(&out), Some(3.0));
}

#[test]
fn a_strangers_acknowledgement_leaves_the_part_pending() {
    let (mut s, token) = joined();
    let out = s.handle_datagram(Timestamp(4), at(WORKER1), &hot(1, 2, token, 2.0));
    assert_eq!(sum(&out), Some(3.0));
    assert_eq!(s.pending_parts(), 1);
    for forged in [agg_ack(2, 0), agg_ack(2, token)] {
        s.handle_datagram(Timestamp(5), at(STRANGER), &forged);
    }
    assert_eq!(s.pending_parts(), 1, "still waiting for the server's ACK");
    assert_eq!(s.stats().refused_address, 2);
    let resent = s.poll(Timestamp(100_000));
    assert_eq!(sum(&resent), Some(3.0), "resent to the server");
    s.handle_datagram(Timestamp(100_001), at(SERVER), &agg_ack(2, token));
    assert_eq!(s.pending_parts(), 0);
}

#[test]
fn a_strangers_register_moves_no_server() {
    let (mut s, token) = joined();
    assert_eq!(
        s.register(at(STRANGER), &register(0)),
        Err(Some(Refusal::Address))
    );
    assert_eq!(
        s.register(at(STRANGER), &register(token)),
        Err(Some(Refusal::Address))
    );
    assert_eq!(
        s.register(at(SERVER), &register(token ^ 0x55)),
        Err(Some(Refusal::Token))
    );
    assert_eq!(
        s.register(
            at(STRANGER),
            &RegisterRepr {
                job: 9,
                ..register(0)
            }
        ),
        Err(None),
        "a job the switch does not have"
    );
    assert_eq!(s.member_addr(1, Role::Server, 0), at(SERVER));
    assert_eq!(s.job_stats(1).unwrap().refused_address, 2);
    assert_eq!(s.job_stats(1).unwrap().refused_token, 1);
    assert_eq!(s.register(at(SERVER), &register(token)), Ok(token));
}

#[test]
fn a_strangers_update_and_update_ack_are_not_passed_on() {
    let (mut s, _) = joined();
    let upd = crate::wire::UpdateRepr::header(1, 0, 1, 1).to_bytes();
    let ack = crate::wire::UpdateAckRepr {
        job: 1,
        server: 0,
        seq: 1,
        part: 0,
        worker: 1,
    }
    .to_bytes();
    assert!(s
        .handle_datagram(Timestamp(4), at(STRANGER), &upd)
        .is_empty());
    assert!(s
        .handle_datagram(Timestamp(4), at(STRANGER), &ack)
        .is_empty());
    assert_eq!(s.stats().refused_address, 2);
    assert_eq!(s.handle_datagram(Timestamp(5), at(SERVER), &upd).len(), 1);
    assert_eq!(s.handle_datagram(Timestamp(5), at(WORKER1), &ack).len(), 1);
}

#[test]
fn a_round_far_ahead_is_refused_not_remembered() {
    let (mut s, token) = joined();
    // Round 2 is the newest; 102 is the furthest a packet may be.
    let far = hot(1, 103, token, 100.0);
    let out = s.handle_datagram(Timestamp(4), at(WORKER1), &far);
    let r = answers(&out);
    assert_eq!(
        r[0].kind,
        ResponseKind::Fallback {
            reason: FallbackReason::FarAhead,
            duplicate: false
        }
    );
    assert_eq!(s.stats().fallback(FallbackReason::FarAhead), 1);
    assert_eq!(s.open_rounds(), 1, "only round 2");
    // Not recorded: asked again, it is decided afresh, and the rounds
    // between still aggregate.
    let again = s.handle_datagram(Timestamp(5), at(WORKER1), &far);
    assert_eq!(s.stats().fallback(FallbackReason::FarAhead), 2);
    assert_eq!(answers(&again).len(), 1);
    let out = s.handle_datagram(Timestamp(6), at(WORKER1), &hot(1, 2, token, 2.0));
    assert_eq!(sum(&out), Some(3.0));
    let near = s.handle_datagram(Timestamp(7), at(WORKER1), &hot(1, 102, token, 5.0));
    assert_eq!(
        answers(&near)[0].kind,
        ResponseKind::Ack { duplicate: false }
    );
}

#[test]
fn a_job_with_a_key_pins_only_who_shows_its_token() {
    let mut c = config();
    c.jobs[0].token = 0xC0FF_EE00;
    let mut s = Switch::new(c).unwrap();
    s.set_token_source(Box::new(|| 7));
    assert_eq!(s.job_token(1), Some(0xC0FF_EE00), "the key's token stays");
    assert!(s
        .handle_datagram(Timestamp(0), at(STRANGER), &hot(0, 1, 0, 9.0))
        .is_empty());
    assert_eq!(
        s.register(at(STRANGER), &register(0)),
        Err(Some(Refusal::Token))
    );
    assert_eq!(s.stats().refused_token, 2);
    assert_eq!(s.member_addr(1, Role::Worker, 0), None, "nobody pinned");
    let out = s.handle_datagram(Timestamp(1), at(WORKER0), &hot(0, 1, 0xC0FF_EE00, 1.0));
    assert_eq!(
        answers(&out)[0].kind,
        ResponseKind::Ack { duplicate: false }
    );
    assert_eq!(s.member_addr(1, Role::Worker, 0), at(WORKER0));
}

#[test]
fn answers_to_an_unknown_worker_carry_no_token() {
    let (mut s, _) = joined();
    let out = s.handle_datagram(Timestamp(4), at(STRANGER), &hot(5, 2, 0, 1.0));
    let r = answers(&out);
    assert_eq!(
        r[0].kind,
        ResponseKind::Fallback {
            reason: FallbackReason::BadWorker,
            duplicate: false
        }
    );
    assert_eq!(r[0].token, 0);
}

#[test]
fn a_random_token_source_replaces_the_seeded_one_before_anyone_joins() {
    let mut s = Switch::new(config()).unwrap();
    s.set_token_source(Box::new(|| 0xABCD));
    assert_eq!(s.job_token(1), Some(0xABCD));
    assert_eq!(s.register(at(SERVER), &register(0)), Ok(0xABCD));
    s.set_token_source(Box::new(|| 0x1111));
    assert_eq!(s.job_token(1), Some(0xABCD), "a joined job keeps its token");
}
