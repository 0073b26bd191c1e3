use std::time::Duration;

use super::*;
use crate::config::JobConfig;
use crate::consts::UPDATE_TARGET_ALL;
use crate::time::Timestamp;
use crate::wire::{update, Message, UpdateAckRepr, UpdateRepr};

const JOB: u16 = 2;
const MS: u64 = 1000;

fn config(workers: u16) -> Config {
    let mut c = Config::new(vec![JobConfig::new(JOB, workers, 64, 1)]);
    c.aggregate_size = 128;
    c.aggregate_rto = Duration::from_millis(2);
    c.aggregate_max_retries = 3;
    c.update_window = 4;
    c
}

fn at(ms: u64) -> Timestamp {
    Timestamp(ms * MS)
}

fn values(keys: &[u64], len: usize) -> Vec<(u64, Vec<u8>)> {
    keys.iter()
        .map(|&k| (k, (0..len).map(|i| (k as usize * 31 + i) as u8).collect()))
        .collect()
}

fn sends(actions: &[UpdateAction]) -> Vec<UpdateRepr> {
    actions
        .iter()
        .filter_map(|a| match a {
            UpdateAction::Send(b) => match Message::parse(b) {
                Ok(Message::Update(u)) => Some(u),
                other => panic!("{other:?}"),
            },
            UpdateAction::GivenUp { .. } => None,
        })
        .collect()
}

fn ack(u: &UpdateRepr, worker: u16) -> UpdateAckRepr {
    UpdateAckRepr {
        job: u.job,
        server: u.server,
        seq: u.seq,
        part: u.part,
        worker,
    }
}

#[test]
fn the_default_gap_timeout_is_the_senders_give_up_time() {
    let c = Config::new(vec![JobConfig::new(1, 2, 8, 1)]);
    // From the update timeout's floor, 200 ms, doubling to the 1 s cap, six
    // resends: 200 + 400 + 800 + 4 × 1000.
    assert_eq!(gap_timeout(&c), Duration::from_millis(5_400));
    assert_eq!(
        gap_timeout(&config(2)),
        Duration::from_millis(200 + 400 + 800 + 1000)
    );
    let mut slow = config(2);
    slow.aggregate_rto = Duration::from_millis(300);
    assert_eq!(
        gap_timeout(&slow),
        Duration::from_millis(300 + 600 + 1000 + 1000),
        "at most 1 s each"
    );
}

#[test]
fn parts_go_to_every_worker_once_and_leave_when_all_acknowledged() {
    let c = config(3);
    let mut s = UpdateSender::new(&c, JOB, 0).unwrap();
    let vals = values(&[9, 3, 7], 150);
    assert_eq!(s.send(at(0), 5, vals.clone(), true), Ok(1));
    assert_eq!(s.poll_at(), Some(at(0)));
    let parts = sends(&s.poll(at(0)));
    assert!(parts.len() >= 4, "450 bytes in 100-byte parts");
    for (i, p) in parts.iter().enumerate() {
        assert_eq!((p.seq, p.round, p.part as usize), (1, 5, i));
        assert_eq!(p.parts as usize, parts.len());
        assert!(p.to_all() && p.lens && !p.retx && !p.brk);
    }
    let mut sorted = vals.clone();
    sorted.sort();
    let entries: Vec<&[update::Fragment]> = parts.iter().map(|p| &p.entries[..]).collect();
    assert_eq!(update::reassemble(entries).unwrap(), sorted);
    for p in &parts {
        for w in 0..3 {
            s.handle_ack(at(1), ack(p, w));
        }
    }
    assert!(s.is_idle());
    let st = s.stats();
    assert_eq!((st.updates, st.completed, st.resends), (1, 1, 0));
    assert_eq!(
        (st.parts, st.acks),
        (parts.len() as u64, 3 * parts.len() as u64)
    );
    s.handle_ack(at(2), ack(&parts[0], 1));
    assert_eq!(s.stats().duplicate_acks, 1);
    assert_eq!(s.send(at(3), 6, vec![], false), Ok(2), "seq + 1");
    assert_eq!(
        sends(&s.poll(at(3)))[0].entries,
        vec![],
        "an update may be empty"
    );
}

#[test]
fn missing_workers_get_their_own_resends_and_then_are_given_up() {
    let c = config(3);
    let mut s = UpdateSender::new(&c, JOB, 0).unwrap();
    s.send(at(0), 1, values(&[1], 4), false).unwrap();
    let first = sends(&s.poll(at(0)));
    assert_eq!(first.len(), 1);
    s.handle_ack(at(0), ack(&first[0], 1));
    assert_eq!(s.poll_at(), Some(at(200)), "the update timeout's floor");
    assert!(s.poll(at(199)).is_empty());
    let again = sends(&s.poll(at(200)));
    let targets: Vec<u16> = again.iter().map(|u| u.target).collect();
    assert_eq!(targets, vec![0, 2], "one copy per missing worker");
    assert!(again
        .iter()
        .all(|u| u.retx && u.entries == first[0].entries));
    s.handle_ack(at(201), ack(&first[0], 0));
    // The timeout doubles per resend; worker 2 never answers.
    let mut resent = 0;
    let mut given_up = None;
    while given_up.is_none() {
        let t = s.poll_at().unwrap().micros() / MS;
        for a in s.poll(at(t)) {
            match a {
                UpdateAction::Send(b) => {
                    let Ok(Message::Update(u)) = Message::parse(&b) else {
                        panic!()
                    };
                    assert_eq!(u.target, 2);
                    resent += 1;
                }
                UpdateAction::GivenUp {
                    seq,
                    round,
                    workers,
                } => given_up = Some((seq, round, workers)),
            }
        }
        assert!(t < 10_000);
    }
    assert_eq!(given_up, Some((1, 1, 0b100)));
    assert_eq!(resent, 2, "three tries in all, then given up");
    assert!(s.is_idle());
    assert_eq!((s.stats().given_up, s.stats().resends), (1, 4));
}

#[test]
fn a_part_nobody_has_is_resent_once_to_every_worker() {
    let mut s = UpdateSender::new(&config(3), JOB, 0).unwrap();
    s.send(at(0), 1, values(&[1], 4), false).unwrap();
    s.poll(at(0));
    let again = sends(&s.poll(at(200)));
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].target, again[0].retx), (UPDATE_TARGET_ALL, true));
}

#[test]
fn a_part_acknowledged_after_a_later_one_is_resent_before_its_timeout() {
    // Parts 0..4 leave together; worker 1 acknowledges 3 but never got 1:
    // 1 is lost there (and 0, 2, acknowledged by nobody yet, are not
    // counted lost at worker 0, which has sent nothing).
    let mut c = config(2);
    c.update_window = 64;
    let mut s = UpdateSender::new(&c, JOB, 0).unwrap();
    s.send(at(0), 1, values(&(0..8).collect::<Vec<_>>(), 40), false)
        .unwrap();
    let parts = sends(&s.poll(at(0)));
    assert!(parts.len() >= 4);
    for w in 0..2 {
        s.handle_ack(at(10), ack(&parts[0], w));
        s.handle_ack(at(10), ack(&parts[2], w));
    }
    s.handle_ack(at(11), ack(&parts[3], 1));
    s.handle_ack(at(11), ack(&parts[3], 0));
    s.handle_ack(at(12), ack(&parts[1], 0));
    // Resent to worker 1 a reorder window later (a quarter of the round
    // trip and four deviations: 2.5 + 4 × 5 ms after the 10 ms sample),
    // long before the 200 ms timeout; only part 1, only to worker 1.
    let due = s.poll_at().unwrap();
    assert!(due <= at(11 + 23), "{due:?}");
    let again = sends(&s.poll(due));
    assert_eq!(again.len(), 1);
    assert_eq!(
        (again[0].part, again[0].target, again[0].retx),
        (1, 1, true)
    );
    assert_eq!(s.stats().lost, 1);
    // Acknowledged now: nothing more goes out.
    s.handle_ack(due, ack(&parts[1], 1));
    for p in &parts[4..] {
        s.handle_ack(due, ack(p, 0));
        s.handle_ack(due, ack(p, 1));
    }
    assert!(s.is_idle());
    assert_eq!(s.stats().resends, 1);
}

#[test]
fn a_late_acknowledgement_within_the_reorder_window_is_no_loss() {
    let mut s = UpdateSender::new(&config(1), JOB, 0).unwrap();
    s.send(at(0), 1, values(&(0..8).collect::<Vec<_>>(), 40), false)
        .unwrap();
    let parts = sends(&s.poll(at(0)));
    s.handle_ack(at(10), ack(&parts[1], 0));
    s.handle_ack(at(10), ack(&parts[0], 0));
    for p in &parts[2..] {
        s.handle_ack(at(10), ack(p, 0));
    }
    assert!(s.is_idle());
    assert_eq!((s.stats().lost, s.stats().resends), (0, 0));
}

#[test]
fn a_new_update_that_does_not_fit_gives_the_oldest_up() {
    let mut s = UpdateSender::new(&config(2), JOB, 0).unwrap();
    for round in 1..=4 {
        s.send(at(0), round, values(&[u64::from(round)], 2), false)
            .unwrap();
    }
    s.poll(at(0));
    assert_eq!(s.outstanding(), 4);
    assert_eq!(s.send(at(1), 5, vec![], false), Ok(5));
    assert_eq!(s.outstanding(), 4);
    let out = s.poll(at(1));
    assert!(out.contains(&UpdateAction::GivenUp {
        seq: 1,
        round: 1,
        workers: 0b11
    }));
    assert_eq!(sends(&out).len(), 1, "update 5's part");
}

#[test]
fn the_window_is_a_span_of_seqs_not_a_count() {
    // Updates 2 to 4 complete while 1 is still missing at worker 1: update
    // 5 is the window (4) past 1, so 1 is given up although it is the only
    // one kept. A worker that sees 5 may take 1 as given up.
    let mut s = UpdateSender::new(&config(2), JOB, 0).unwrap();
    for round in 1..=4 {
        s.send(at(0), round, vec![], false).unwrap();
    }
    for u in sends(&s.poll(at(0))) {
        s.handle_ack(at(1), ack(&u, 0));
        if u.seq != 1 {
            s.handle_ack(at(1), ack(&u, 1));
        }
    }
    assert_eq!(s.outstanding(), 1);
    assert!(s.holds(1));
    s.send(at(2), 5, vec![], false).unwrap();
    assert!(!s.holds(1));
    assert!(s.poll(at(2)).contains(&UpdateAction::GivenUp {
        seq: 1,
        round: 1,
        workers: 0b10
    }));
}

#[test]
fn the_window_holds_parts_back_until_acknowledgements() {
    let mut c = config(1);
    c.update_window = 64;
    let mut s = UpdateSender::new(&c, JOB, 0).unwrap();
    s.send(at(0), 1, values(&(0..40).collect::<Vec<_>>(), 90), false)
        .unwrap();
    let first = sends(&s.poll(at(0)));
    assert_eq!(first.len(), crate::flow::INITIAL_WINDOW as usize);
    assert_eq!(
        s.poll_at(),
        Some(at(200)),
        "nothing more until an ack or a timeout"
    );
    s.handle_ack(at(1), ack(&first[0], 0));
    assert_eq!(s.poll_at(), Some(at(1)));
    let next = sends(&s.poll(at(1)));
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].part, first.len() as u16);
}

#[test]
fn refused_updates_and_bad_acknowledgements() {
    let mut s = UpdateSender::new(&config(2), JOB, 0).unwrap();
    assert_eq!(s.send(at(0), 0, vec![], false), Err(UpdateError::ZeroRound));
    assert_eq!(
        s.send(
            at(0),
            1,
            vec![(4, vec![1]), (2, vec![]), (4, vec![])],
            false
        ),
        Err(UpdateError::DuplicateKey(4))
    );
    assert_eq!(s.next_seq(), 1, "nothing sent");
    s.send(at(0), 1, values(&[1], 2), false).unwrap();
    let queued = UpdateAckRepr {
        job: JOB,
        server: 0,
        seq: 1,
        part: 0,
        worker: 0,
    };
    s.handle_ack(at(0), queued);
    assert_eq!(s.stats().bad_acks, 1, "a part not sent yet");
    let p = sends(&s.poll(at(0))).remove(0);
    // Another job, server, worker, part, or an update never sent.
    let spoil: [fn(&mut UpdateAckRepr); 5] = [
        |a| a.job = 9,
        |a| a.server = 1,
        |a| a.worker = 2,
        |a| a.part = 1,
        |a| a.seq = 7,
    ];
    for f in spoil {
        let mut bad = ack(&p, 0);
        f(&mut bad);
        s.handle_ack(at(1), bad);
    }
    s.handle_packet(at(1), b"junk");
    assert_eq!(s.stats().bad_acks, 7);
    assert_eq!(s.stats().acks, 0);
    s.handle_packet(at(1), &ack(&p, 1).to_bytes());
    assert_eq!(s.stats().acks, 1);
    assert!(UpdateSender::new(&config(2), JOB, 1).is_err());
    assert!(UpdateSender::new(&config(2), 5, 0).is_err());
}

/// The parts of update `seq` as a sender of `c` cuts them.
fn update_parts(c: &Config, seq: u32, round: u32, vals: Vec<(u64, Vec<u8>)>) -> Vec<Vec<u8>> {
    let budget = c.aggregate_size - crate::consts::UPDATE_HEADER_LEN;
    UpdateRepr::header(JOB, 0, seq, round)
        .with_parts(update::split_parts(&vals, budget))
        .iter()
        .map(UpdateRepr::to_bytes)
        .collect()
}

fn delivered(events: &[UpdateEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            UpdateEvent::Update(u) => Some(u.seq),
            UpdateEvent::Gap { .. } => None,
        })
        .collect()
}

#[test]
fn a_receiver_assembles_acknowledges_and_hands_up_in_order() {
    let mut c = config(2);
    c.update_window = 16;
    let mut r = UpdateReceiver::new(&c, JOB, 0, 1).unwrap();
    let big = values(&[3, 8], 300);
    let one = update_parts(&c, 1, 4, big.clone());
    let two = update_parts(&c, 2, 5, values(&[1], 5));
    assert!(one.len() >= 6, "600 bytes in 100-byte parts");
    // Update 2 first: held behind 1.
    let (a, ev) = r.handle_packet(at(0), &two[0]);
    let a = a.expect("acknowledged");
    let Ok(Message::UpdateAck(a)) = Message::parse(&a) else {
        panic!()
    };
    assert_eq!((a.seq, a.part, a.worker, a.server), (2, 0, 1, 0));
    assert!(ev.is_empty());
    assert_eq!(r.held(), 1);
    // Update 1's parts, reversed, the first of them twice.
    let mut got = Vec::new();
    for b in one.iter().rev().take(1).chain(one.iter().rev()) {
        let (a, ev) = r.handle_packet(at(1), b);
        assert!(a.is_some(), "duplicates are acknowledged too");
        got.extend(ev);
    }
    assert_eq!(delivered(&got), vec![1, 2]);
    let UpdateEvent::Update(u) = &got[0] else {
        panic!()
    };
    assert_eq!((u.round, u.lens, u.brk), (4, false, false));
    assert_eq!(u.entries, big);
    assert_eq!(r.next_seq(), Some(3));
    assert_eq!(r.held(), 0);
    assert_eq!(r.poll_at(), None);
    let (a, ev) = r.handle_packet(at(2), &two[0]);
    assert!(a.is_some() && ev.is_empty(), "a stale part is acknowledged");
    let st = r.stats();
    assert_eq!(
        (st.updates, st.gaps, st.duplicate_parts, st.stale_parts),
        (2, 0, 1, 1)
    );
}

#[test]
fn parts_for_another_worker_or_server_are_not_acknowledged() {
    let c = config(2);
    let mut r = UpdateReceiver::new(&c, JOB, 0, 1).unwrap();
    let mut b = update_parts(&c, 1, 1, values(&[1], 2)).remove(0);
    update::Packet::new_unchecked(&mut b[..]).set_target(0);
    assert_eq!(r.handle_packet(at(0), &b), (None, vec![]));
    update::Packet::new_unchecked(&mut b[..]).set_target(1);
    assert!(r.handle_packet(at(0), &b).0.is_some(), "its own rank");
    let ack = ack(
        &UpdateRepr::parse(&update::Packet::new_checked(&b[..]).unwrap()).unwrap(),
        0,
    );
    assert_eq!(r.handle_packet(at(0), &ack.to_bytes()), (None, vec![]));
    assert_eq!((r.stats().not_addressed, r.stats().bad_packets), (1, 1));
    assert!(UpdateReceiver::new(&c, JOB, 0, 2).is_err());
    assert!(UpdateReceiver::new(&c, JOB, 1, 0).is_err());
}

#[test]
fn a_gap_is_reported_when_a_part_proves_it_given_up() {
    let c = config(2);
    let mut r = UpdateReceiver::new(&c, JOB, 0, 0).unwrap();
    let part = |seq: u32| update_parts(&c, seq, seq, values(&[u64::from(seq)], 3)).remove(0);
    let mut got = Vec::new();
    for seq in [1, 3, 4, 5] {
        got.extend(r.handle_packet(at(0), &part(seq)).1);
    }
    assert_eq!(delivered(&got), vec![1]);
    assert_eq!(r.held(), 3, "3..=5 wait for 2");
    // Update 6 comes with a window of 4: the sender gave 2 up.
    got.extend(r.handle_packet(at(1), &part(6)).1);
    assert_eq!(got[1], UpdateEvent::Gap { missing: 2..3 });
    assert_eq!(delivered(&got), vec![1, 3, 4, 5, 6]);
    // Two missing in a row, then a part far ahead: one gap, held ones first.
    got.clear();
    got.extend(r.handle_packet(at(2), &part(9)).1);
    got.extend(r.handle_packet(at(2), &part(20)).1);
    assert!(matches!(
        &got[..],
        [
            UpdateEvent::Gap { missing: a },
            UpdateEvent::Update(u),
            UpdateEvent::Gap { missing: b },
        ] if *a == (7..9) && u.seq == 9 && *b == (10..17)
    ));
    assert_eq!(delivered(&got), vec![9]);
    assert_eq!(r.next_seq(), Some(17));
    assert_eq!(r.stats().skipped, 1 + 2 + 7);
}

#[test]
fn a_gap_that_stays_open_is_reported_after_the_timeout() {
    let c = config(2);
    let mut r = UpdateReceiver::new(&c, JOB, 0, 0).unwrap();
    let part = |seq: u32| update_parts(&c, seq, seq, values(&[u64::from(seq)], 3)).remove(0);
    r.handle_packet(at(0), &part(1));
    r.handle_packet(at(5), &part(3));
    assert_eq!(r.poll_at(), Some(at(5) + gap_timeout(&c)));
    assert!(r.poll(at(20)).is_empty());
    let ev = r.poll(at(5) + gap_timeout(&c));
    assert_eq!(ev[0], UpdateEvent::Gap { missing: 2..3 });
    assert_eq!(delivered(&ev), vec![3]);
    assert_eq!(r.poll_at(), None);
    let (a, ev) = r.handle_packet(at(40), &part(2));
    assert!(
        a.is_none() && ev.is_empty(),
        "too late: dropped, and not acknowledged, so that the sender gives it up"
    );
    let (a, _) = r.handle_packet(at(40), &part(1));
    assert!(
        a.is_some(),
        "a delivered update's part is acknowledged again"
    );
}

#[test]
fn the_first_part_starts_the_chain_after_what_the_sender_may_still_hold() {
    let c = config(2);
    let part = |seq: u32| update_parts(&c, seq, seq, values(&[u64::from(seq)], 3)).remove(0);
    let mut r = UpdateReceiver::new(&c, JOB, 0, 0).unwrap();
    let ev = r.handle_packet(at(0), &part(20)).1;
    assert!(ev.is_empty());
    assert_eq!(r.next_seq(), Some(17), "17..=19 may still come");
    let mut got = Vec::new();
    for seq in [18, 17, 19] {
        got.extend(r.handle_packet(at(1), &part(seq)).1);
    }
    assert_eq!(delivered(&got), vec![17, 18, 19, 20]);
    let mut fresh = UpdateReceiver::new(&c, JOB, 0, 0).unwrap();
    assert_eq!(delivered(&fresh.handle_packet(at(0), &part(2)).1), vec![]);
    assert_eq!(fresh.next_seq(), Some(1), "never before 1");
}

#[test]
fn a_break_and_a_malformed_update() {
    let c = config(2);
    let mut s = UpdateSender::new(&c, JOB, 0).unwrap();
    assert_eq!(s.break_chain(at(0)), 1);
    let b = sends(&s.poll(at(0))).remove(0);
    assert!(b.brk && b.round == 0 && b.entries.is_empty());
    assert_eq!(s.stats().breaks, 1);
    let mut r = UpdateReceiver::new(&c, JOB, 0, 0).unwrap();
    let ev = r.handle_update(at(0), &b).1;
    assert_eq!(
        ev,
        vec![UpdateEvent::Update(Update {
            seq: 1,
            round: 0,
            lens: false,
            brk: true,
            entries: vec![],
        })]
    );
    // Update 2 in two parts whose fragments of key 5 leave a gap.
    let frag = |offset: u32, bytes: &[u8]| update::Fragment {
        key: 5,
        offset,
        bytes: bytes.to_vec(),
    };
    let half = |part: u16, f: update::Fragment| UpdateRepr {
        part,
        parts: 2,
        entries: vec![f],
        ..UpdateRepr::header(JOB, 0, 2, 3)
    };
    assert!(r
        .handle_update(at(1), &half(0, frag(0, &[1, 2])))
        .1
        .is_empty());
    // A part that disagrees about the update is not acknowledged.
    let odd = UpdateRepr {
        round: 4,
        ..half(1, frag(3, &[3]))
    };
    assert_eq!(r.handle_update(at(1), &odd), (None, vec![]));
    let (a, ev) = r.handle_update(at(1), &half(1, frag(3, &[3])));
    assert!(a.is_some());
    assert_eq!(ev, vec![UpdateEvent::Gap { missing: 2..3 }]);
    assert_eq!(r.stats().malformed_updates, 1);
    assert_eq!(r.stats().inconsistent_parts, 1);
}
