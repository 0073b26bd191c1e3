use super::*;
use crate::config::JobConfig;
use crate::number::NumberMode;
use crate::wire::HotBody;
use std::time::Duration;

fn config(workers: u16, servers: u16) -> Config {
    let mut c = Config::new(vec![JobConfig::new(1, workers, 64, servers)]);
    c.registers = 4;
    c.slots = 32;
    c.packet_size = 64;
    c.aggregate_size = 64;
    c.max_seqs = 40;
    c.round_timeout = Duration::from_millis(10);
    c.aggregate_rto = Duration::from_millis(1);
    c.aggregate_max_retries = 3;
    c
}

fn hot(worker: u16, round: u32, seq: u16, done: bool, pairs: &[(u32, f32)]) -> HotRepr {
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
}

fn send(s: &mut Switch, t: u64, h: &HotRepr) -> Vec<SwitchAction> {
    s.handle_packet(Timestamp(t), &h.to_bytes())
}

/// `h` again, flagged as a retransmission.
fn resend(s: &mut Switch, t: u64, h: &HotRepr) -> Vec<SwitchAction> {
    send(
        s,
        t,
        &HotRepr {
            retransmission: true,
            ..h.clone()
        },
    )
}

fn response(a: &SwitchAction) -> ResponseRepr {
    match Message::parse(a.payload()).unwrap() {
        Message::Response(r) => r,
        m => panic!("{m:?}"),
    }
}

fn aggregates(actions: &[SwitchAction]) -> (Vec<AggregateRepr>, Vec<CoverageRepr>) {
    let mut data = Vec::new();
    let mut cover = Vec::new();
    for a in actions {
        if let SwitchAction::Aggregate { payload, .. } = a {
            match Message::parse(payload).unwrap() {
                Message::Aggregate(x) => data.push(x),
                Message::Coverage(x) => cover.push(x),
                m => panic!("{m:?}"),
            }
        }
    }
    (data, cover)
}

/// Server 0's acknowledgement of part `part` of job 1's round 1.
fn ack(part: u16) -> Vec<u8> {
    AggregateAckRepr {
        job: 1,
        server: 0,
        round: 1,
        part,
        token: 0,
    }
    .to_bytes()
}

fn sums(data: &[AggregateRepr]) -> Vec<(u32, f32)> {
    let mut v: Vec<(u32, f32)> = data
        .iter()
        .flat_map(|a| a.pairs.iter().map(|&(r, x)| (r, f32::from_bits(x))))
        .collect();
    v.sort_by_key(|p| p.0);
    v
}

#[test]
fn round_completes_when_every_worker_is_done() {
    let mut s = Switch::new(config(2, 2)).unwrap();
    let a = send(
        &mut s,
        0,
        &hot(0, 1, 0, false, &[(0, 1.0), (1, 2.0), (40, 3.0)]),
    );
    assert_eq!(response(&a[0]).kind, ResponseKind::Ack { duplicate: false });
    send(&mut s, 1, &hot(0, 1, 1, true, &[(2, 5.0)]));
    assert_eq!(s.open_rounds(), 1);
    let out = send(
        &mut s,
        2,
        &hot(1, 1, 0, true, &[(0, 10.0), (40, -3.0), (63, 1.0)]),
    );
    assert_eq!(
        out.len(),
        1 + 2,
        "ACK, then per server one data part (no coverage part: every worker is complete)"
    );
    let (data, cover) = aggregates(&out);
    assert_eq!(
        sums(&data),
        vec![(0, 11.0), (1, 2.0), (2, 5.0), (40, 0.0), (63, 1.0)]
    );
    assert!(data
        .iter()
        .all(|d| d.contributed == 0b11 && d.complete == 0b11 && !d.flushed));
    assert_eq!(data.iter().find(|d| d.server == 1).unwrap().pairs.len(), 2);
    assert!(cover.is_empty());
    assert_eq!(s.stats().rounds_completed, 1);
    assert_eq!(s.open_rounds(), 0);
    assert_eq!(s.pending_parts(), 2);
    let hits = s.hot_key_hits(1).unwrap();
    assert_eq!((hits[0], hits[1], hits[40], hits[5]), (2, 1, 2, 0));
    assert!(s.hot_key_hits(2).is_none());
}

#[test]
fn retransmission_is_answered_never_added_twice() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    let p = hot(0, 1, 0, true, &[(3, 1.0)]);
    send(&mut s, 0, &p);
    let again = resend(&mut s, 1, &p);
    assert_eq!(
        response(&again[0]).kind,
        ResponseKind::Ack { duplicate: true }
    );
    let out = send(&mut s, 2, &hot(1, 1, 0, true, &[(3, 1.0)]));
    assert_eq!(sums(&aggregates(&out).0), vec![(3, 2.0)]);
    assert_eq!(s.stats().duplicates, 1);
    assert_eq!(s.stats().added_packets, 2);
    let late_copy = send(&mut s, 3, &p);
    assert_eq!(
        response(&late_copy[0]).kind,
        ResponseKind::Ack { duplicate: true },
        "after the round closed too"
    );
}

#[test]
fn timeout_flushes_partial_round_and_late_packets_fall_back() {
    let mut s = Switch::new(config(3, 1)).unwrap();
    let added = hot(0, 1, 0, false, &[(5, 2.0)]);
    send(&mut s, 0, &added);
    send(&mut s, 100, &hot(1, 1, 0, true, &[(5, 4.0)]));
    assert!(s.poll(Timestamp(9_999)).is_empty());
    assert_eq!(s.poll_at(), Some(Timestamp(10_000)));
    let out = s.poll(Timestamp(10_000));
    let (data, _) = aggregates(&out);
    assert_eq!(sums(&data), vec![(5, 6.0)]);
    assert!(data[0].flushed);
    assert_eq!((data[0].contributed, data[0].complete), (0b011, 0b010));
    assert_eq!(s.stats().rounds_flushed, 1);

    let late = send(&mut s, 10_001, &hot(2, 1, 0, true, &[(5, 1.0)]));
    assert_eq!(
        response(&late[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::Late,
            duplicate: false
        }
    );
    let again = send(&mut s, 10_002, &hot(2, 1, 0, true, &[(5, 1.0)]));
    assert_eq!(
        response(&again[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::Late,
            duplicate: true
        }
    );
    let old = send(&mut s, 10_003, &added);
    assert_eq!(
        response(&old[0]).kind,
        ResponseKind::Ack { duplicate: true }
    );
    assert_eq!(s.stats().fallback(FallbackReason::Late), 1);
}

#[test]
fn window_full_is_not_recorded_so_a_resend_is_added_once_the_copy_frees() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    send(&mut s, 0, &hot(0, 1, 0, true, &[(1, 1.0)]));
    let p3 = hot(1, 3, 0, true, &[(1, 1.0)]);
    let out = send(&mut s, 1, &p3);
    assert_eq!(
        response(&out[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::WindowFull,
            duplicate: false
        }
    );
    s.poll(Timestamp(10_000));
    assert_eq!(s.open_rounds(), 0);
    // The worker sends it again unflagged (its copy was answered, not lost).
    let out = send(&mut s, 10_001, &p3);
    assert_eq!(
        response(&out[0]).kind,
        ResponseKind::Ack { duplicate: false },
        "decided afresh: round 3 opens in the freed copy"
    );
    let again = resend(&mut s, 10_002, &p3);
    assert_eq!(
        response(&again[0]).kind,
        ResponseKind::Ack { duplicate: true }
    );
    let other = send(&mut s, 10_003, &hot(0, 3, 0, true, &[(1, 1.0)]));
    assert_eq!(
        response(&other[0]).kind,
        ResponseKind::Ack { duplicate: false }
    );
    let (data, _) = aggregates(&other);
    assert_eq!(sums(&data), vec![(1, 2.0)], "each added once");
}

#[test]
fn stale_copy_of_an_older_round_is_dropped() {
    let mut s = Switch::new(config(1, 1)).unwrap();
    let r1 = hot(0, 1, 0, true, &[(1, 1.0)]);
    send(&mut s, 0, &r1);
    send(&mut s, 1, &hot(0, 3, 0, true, &[(1, 1.0)]));
    assert!(send(&mut s, 2, &r1).is_empty());
    assert_eq!(s.stats().stale, 1);
    assert_eq!(s.stats().added_packets, 2);
}

#[test]
fn conflicting_pairs_cost_recirculations() {
    let mut s = Switch::new(config(1, 1)).unwrap();
    send(
        &mut s,
        0,
        &hot(0, 1, 0, true, &[(0, 1.0), (4, 1.0), (8, 1.0), (1, 1.0)]),
    );
    assert_eq!((s.stats().passes, s.stats().recirculations), (3, 2));
    assert_eq!(s.stats().recirculations_per_packet(), 2.0);
}

#[test]
fn bad_input_is_counted_or_refused_never_added() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    assert!(s.handle_packet(Timestamp(0), b"").is_empty());
    assert!(s
        .handle_packet(Timestamp(0), &[0x5A, 0x42, 2, 1, 0, 1])
        .is_empty());
    let ack = ResponseRepr {
        job: 1,
        worker: 0,
        round: 1,
        seq: 0,
        kind: ResponseKind::Ack { duplicate: false },
        token: 0,
    };
    assert!(s.handle_packet(Timestamp(0), &ack.to_bytes()).is_empty());
    assert_eq!(s.stats().bad_packets, 3);

    let cases = [
        (
            HotRepr {
                job: 9,
                ..hot(0, 1, 0, true, &[])
            },
            FallbackReason::UnknownJob,
        ),
        (hot(2, 1, 0, true, &[]), FallbackReason::BadWorker),
        (
            HotRepr {
                fixed: true,
                ..hot(0, 1, 0, true, &[])
            },
            FallbackReason::BadFormat,
        ),
        (hot(0, 1, 40, true, &[]), FallbackReason::SeqOverflow),
        (
            hot(0, 1, 0, true, &[(1, 1.0), (64, 1.0)]),
            FallbackReason::OutOfRange,
        ),
        (
            HotRepr {
                body: HotBody::Dense {
                    base: 62,
                    values: vec![0; 3],
                },
                ..hot(0, 1, 1, true, &[])
            },
            FallbackReason::OutOfRange,
        ),
        (
            hot(0, 1, 2, true, &[(1, 1.0); 7]),
            FallbackReason::BadFormat,
        ),
    ];
    for (h, reason) in cases {
        let out = send(&mut s, 0, &h);
        assert_eq!(
            response(&out[0]).kind,
            ResponseKind::Fallback {
                reason,
                duplicate: false
            },
            "{h:?}"
        );
    }
    assert_eq!(s.stats().added_packets, 0);
    assert_eq!(s.open_rounds(), 0);
}

#[test]
fn aggregate_parts_are_kept_until_acked_then_given_up() {
    let mut s = Switch::new(config(1, 1)).unwrap();
    let out = send(
        &mut s,
        0,
        &hot(0, 7, 0, true, &[(1, 1.0), (3, 1.0), (5, 1.0)]),
    );
    assert_eq!(
        aggregates(&out).0.len(),
        2,
        "three lone values, two of 10 bytes fit in a 64-byte part"
    );
    assert_eq!(s.pending_parts(), 2);
    let ack = AggregateAckRepr {
        job: 1,
        server: 0,
        round: 7,
        part: 0,
        token: 0,
    };
    s.handle_packet(Timestamp(10), &ack.to_bytes());
    s.handle_packet(Timestamp(10), &ack.to_bytes());
    assert_eq!((s.pending_parts(), s.stats().aggregate_acked), (1, 1));
    let mut t = 1000;
    let mut resent = 0;
    while s.pending_parts() > 0 {
        for a in s.poll(Timestamp(t)) {
            assert!(matches!(
                a,
                SwitchAction::Aggregate {
                    retransmit: true,
                    part: 1,
                    ..
                }
            ));
            resent += 1;
        }
        t = s.poll_at().map_or(t, |x| x.0);
    }
    assert_eq!(resent, 3);
    assert_eq!(s.stats().aggregate_abandoned, 1);
    assert_eq!(s.poll_at(), None);
}

/// A server 10 ms away (a slow link) and a first timeout of 1 ms: the first
/// round's part is resent until its first copy's answer arrives, which
/// (no round trip measured yet) is taken as the first measurement; later
/// rounds' parts are sent once.
#[test]
fn aggregate_timeout_learns_a_slow_server() {
    let mut c = config(1, 1);
    c.aggregate_max_retries = 50;
    let mut s = Switch::new(c).unwrap();
    let rtt = 10_000;
    let mut t = 0;
    let mut resent = Vec::new();
    for round in 1..=10u32 {
        let before = s.stats().aggregate_retransmits;
        let mut in_net: Vec<(u64, u16)> = Vec::new();
        let out = send(&mut s, t, &hot(0, round, 0, true, &[(1, 1.0)]));
        let parts = |out: &[SwitchAction], t: u64| -> Vec<(u64, u16)> {
            out.iter()
                .filter_map(|a| match a {
                    SwitchAction::Aggregate { part, .. } => Some((t + rtt, *part)),
                    _ => None,
                })
                .collect()
        };
        in_net.extend(parts(&out, t));
        while s.pending_parts() > 0 {
            let ack_at = in_net.iter().map(|x| x.0).min();
            let next = ack_at
                .into_iter()
                .chain(s.poll_at().map(|x| x.0))
                .min()
                .unwrap();
            t = next;
            if ack_at == Some(t) {
                let i = in_net.iter().position(|x| x.0 == t).unwrap();
                let (_, part) = in_net.remove(i);
                let ack = AggregateAckRepr {
                    job: 1,
                    server: 0,
                    round,
                    part,
                    token: 0,
                };
                s.handle_packet(Timestamp(t), &ack.to_bytes());
            } else {
                let out = s.poll(Timestamp(t));
                in_net.extend(parts(&out, t));
            }
        }
        resent.push(s.stats().aggregate_retransmits - before);
    }
    assert!(resent[0] > 0, "{resent:?}");
    assert!(resent[1..].iter().all(|&n| n == 0), "{resent:?}");
    assert!(s.aggregate_srtt(1, 0).unwrap() >= Duration::from_millis(10));
    assert_eq!(s.stats().aggregate_abandoned, 0);
}

/// A window of parts that waits in a queue longer than the timeout: one
/// part per timeout is resent, not the whole window; the others' answers,
/// from their only copy, are measured round trips; and a server that never
/// answers has every part in flight given up with the first.
#[test]
fn a_late_window_is_resent_one_part_at_a_time() {
    let mut c = config(1, 1);
    c.packet_size = 512;
    let mut s = Switch::new(c.clone()).unwrap();
    let pairs: Vec<(u32, f32)> = (0..16).map(|i| (2 * i, 1.0)).collect();
    let (data, _) = aggregates(&send(&mut s, 0, &hot(0, 1, 0, true, &pairs)));
    assert_eq!(data.len(), 8, "a window of 8 parts leaves together");
    let out = s.poll(Timestamp(1_500));
    assert_eq!(aggregates(&out).0.len(), 1, "one resend, not eight");
    assert_eq!(s.stats().aggregate_retransmits, 1);
    assert_eq!(s.stats().aggregate_deferred, 7);
    for part in 0..8u16 {
        s.handle_packet(Timestamp(2_000), &ack(part));
    }
    assert_eq!(s.aggregate_srtt(1, 0), Some(Duration::from_millis(2)));

    let mut dead = Switch::new(c).unwrap();
    send(&mut dead, 0, &hot(0, 1, 0, true, &pairs));
    let mut t = 0;
    while dead.pending_parts() > 0 && t < 10_000_000 {
        t = dead.poll_at().unwrap().0;
        dead.poll(Timestamp(t));
    }
    assert_eq!(dead.pending_parts(), 0);
    assert_eq!(
        dead.stats().aggregate_abandoned,
        8,
        "the parts sent, given up together"
    );
    assert!(
        dead.stats().aggregate_retransmits < 8 * 3,
        "fewer resends than every part's budget: {:?}",
        dead.stats()
    );
}

/// A round of many parts leaves at most a window's worth in flight; each
/// acknowledgement lets the next part out, in order.
#[test]
fn aggregate_parts_leave_as_the_window_allows() {
    let mut c = config(1, 1);
    c.packet_size = 512;
    let mut s = Switch::new(c).unwrap();
    let pairs: Vec<(u32, f32)> = (0..20).map(|i| (2 * i, 1.0)).collect();
    let out = send(&mut s, 0, &hot(0, 1, 0, true, &pairs));
    let (data, _) = aggregates(&out);
    assert_eq!(
        data.len(),
        8,
        "20 lone values in 10 parts of two, 8 in flight"
    );
    assert_eq!(data[0].parts, 10);
    assert_eq!(s.aggregate_window(1, 0), Some(8));
    assert_eq!(s.pending_parts(), 10);
    let more = s.handle_packet(Timestamp(50), &ack(0));
    assert!(
        matches!(
            &more[..],
            [SwitchAction::Aggregate {
                part: 8,
                retransmit: false,
                ..
            }]
        ),
        "{more:?}"
    );
    assert!(
        s.handle_packet(Timestamp(55), &ack(9)).is_empty(),
        "an acknowledgement of a part not sent yet is ignored"
    );
    assert_eq!(s.pending_parts(), 9);
    let more = s.handle_packet(Timestamp(60), &ack(1));
    assert!(matches!(
        &more[..],
        [SwitchAction::Aggregate { part: 9, .. }]
    ));
    assert!(
        s.handle_packet(Timestamp(70), &ack(2)).is_empty(),
        "nothing left to send"
    );
    assert_eq!(s.stats().aggregate_retransmits, 0);
}

#[test]
fn coverage_with_holes_is_a_bitmap() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    send(&mut s, 0, &hot(0, 1, 0, false, &[(1, 1.0)]));
    send(&mut s, 0, &hot(0, 1, 2, false, &[(2, 1.0)]));
    send(&mut s, 0, &hot(0, 1, 33, false, &[(3, 1.0)]));
    let out = s.poll(Timestamp(20_000));
    let (_, cover) = aggregates(&out);
    assert_eq!(cover.len(), 1);
    let c = &cover[0];
    assert_eq!((c.worker, c.first_seq, c.nbits), (0, 0, 34));
    let covered: Vec<u16> = (0..40).filter(|&q| c.covers(q)).collect();
    assert_eq!(covered, vec![0, 2, 33]);
}

#[test]
fn fixed_point_and_dense_and_two_jobs() {
    let mut c = config(1, 1);
    c.jobs[0].number = NumberMode::Fixed { frac_bits: 8 };
    c.jobs.push(JobConfig::new(2, 1, 10, 1));
    let mut s = Switch::new(c).unwrap();
    let m = NumberMode::Fixed { frac_bits: 8 };
    let dense = HotRepr {
        fixed: true,
        body: HotBody::Dense {
            base: 0,
            values: vec![m.encode(1.5), m.encode(-2.0)],
        },
        ..hot(0, 1, 0, false, &[])
    };
    send(&mut s, 0, &dense);
    let other = HotRepr {
        job: 2,
        ..hot(0, 1, 0, true, &[(0, 100.0)])
    };
    let out2 = send(&mut s, 0, &other);
    assert_eq!(sums(&aggregates(&out2).0), vec![(0, 100.0)]);
    let sparse = HotRepr {
        fixed: true,
        body: HotBody::Sparse(vec![(0, m.encode(0.25)), (1, m.encode(2.0))]),
        ..hot(0, 1, 1, true, &[])
    };
    let out = send(&mut s, 0, &sparse);
    let (data, _) = aggregates(&out);
    assert!(data[0].fixed);
    let got: Vec<(u32, f32)> = data[0]
        .pairs
        .iter()
        .map(|&(r, v)| (r, m.decode(v)))
        .collect();
    assert_eq!(got, vec![(0, 1.75), (1, 0.0)]);
    assert_eq!(
        s.stats().readout_passes,
        (16 + 1) + (3 + 1),
        "slots per register + coverage words / R"
    );
}

/// A burst of lost parts: the acknowledgement of parts sent after them
/// shows them lost, and they are all resent a reorder window later, before
/// their timeout. Parts sent together with the acknowledged one, or only
/// queued behind a late one, are acknowledged in order and never resent; an
/// acknowledgement of a resent part (maybe its first copy's) says nothing.
#[test]
fn a_burst_of_lost_parts_costs_a_round_trip() {
    let mut c = config(1, 1);
    c.packet_size = 512;
    c.aggregate_max_retries = 8;
    let pairs: Vec<(u32, f32)> = (0..24).map(|i| (2 * i, 1.0)).collect();
    let parts =
        |out: &[SwitchAction]| -> Vec<u16> { aggregates(out).0.iter().map(|a| a.part).collect() };

    let mut s = Switch::new(c.clone()).unwrap();
    let out = send(&mut s, 0, &hot(0, 1, 0, true, &pairs));
    assert_eq!(
        parts(&out),
        (0..8).collect::<Vec<_>>(),
        "12 parts, 8 in flight"
    );
    let mut more = Vec::new();
    for part in 4..8 {
        more.extend(s.handle_packet(Timestamp(100), &ack(part)));
    }
    assert_eq!(parts(&more), vec![8, 9, 10, 11], "sent as the window frees");
    assert_eq!(
        s.poll_at(),
        Some(Timestamp(1_000)),
        "sent together: no evidence"
    );
    for part in 8..12 {
        s.handle_packet(Timestamp(200), &ack(part));
    }
    let due = s.poll_at().unwrap();
    assert!(due < Timestamp(1_000), "lost before their timeout: {due:?}");
    let out = s.poll(due);
    assert_eq!(parts(&out), vec![0, 1, 2, 3], "the whole burst at once");
    for part in 0..4 {
        s.handle_packet(due + Duration::from_micros(100), &ack(part));
    }
    assert_eq!(s.pending_parts(), 0);
    assert_eq!(s.stats().aggregate_retransmits, 4, "each lost part once");
    assert_eq!(s.stats().aggregate_lost, 4);

    let mut queued = Switch::new(c).unwrap();
    send(&mut queued, 0, &hot(0, 1, 0, true, &pairs));
    assert_eq!(
        parts(&queued.poll(Timestamp(1_000))),
        vec![0],
        "the timeout's resend"
    );
    let mut t = 1_500;
    for part in 0..12 {
        queued.handle_packet(Timestamp(t), &ack(part));
        t += 10;
        assert!(queued.poll(Timestamp(t)).iter().all(|a| !matches!(
            a,
            SwitchAction::Aggregate {
                retransmit: true,
                ..
            }
        )));
    }
    assert_eq!(queued.pending_parts(), 0);
    assert_eq!(
        queued.stats().aggregate_retransmits,
        1,
        "a late window in a queue: only the timeout's resend"
    );
    assert_eq!(queued.stats().aggregate_lost, 0);
}

#[test]
fn admits_jobs_as_they_come_while_they_fit() {
    let mut c = config(2, 1);
    c.jobs.clear();
    assert_eq!(Switch::new(c.clone()).err(), Some(ConfigError::NoJobs));
    let mut s = Switch::with_admission(c.clone()).unwrap();
    let before = send(&mut s, 0, &hot(0, 1, 0, true, &[(3, 1.0)]));
    assert_eq!(
        response(&before[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::UnknownJob,
            duplicate: false
        },
        "no job yet: the pairs go to the server"
    );
    let again = resend(&mut s, 0, &hot(0, 1, 0, true, &[(3, 1.0)]));
    assert_eq!(
        response(&again[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::Unopened,
            duplicate: false
        },
        "a resend: a switch before this one (restarted, not admitted again yet) may have \
         added it, so the server decides by coverage"
    );
    assert_eq!(c.share(2), 4 * 16, "half of every register's 32 slots");
    s.admit(JobConfig::new(1, 2, c.share(2), 1)).unwrap();
    s.admit(JobConfig::new(2, 2, c.share(2), 1)).unwrap();
    assert_eq!(
        s.admit(JobConfig::new(1, 2, 4, 1)),
        Err(ConfigError::DuplicateJob(1))
    );
    assert!(
        matches!(
            s.admit(JobConfig::new(3, 2, 4, 1)),
            Err(ConfigError::Memory { .. })
        ),
        "the memory is taken"
    );
    assert_eq!(s.config().jobs.len(), 2, "a refused job changes nothing");
    let mut out = send(&mut s, 10, &hot(0, 1, 0, true, &[(3, 1.0)]));
    out.extend(send(&mut s, 11, &hot(1, 1, 0, true, &[(3, 2.0)])));
    let (data, _) = aggregates(&out);
    assert_eq!(
        data.len(),
        1,
        "job 1's round closes once both workers are done"
    );
}

#[test]
fn the_round_timeout_is_learned_from_round_lengths() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    let ms = |m: u64| m * 1000;
    assert_eq!(
        s.round_timeout(1),
        Some(Duration::from_millis(10)),
        "configured"
    );
    // Round 1: worker 1 comes 30 ms after worker 0, the round is flushed at 10 ms.
    send(&mut s, 0, &hot(0, 1, 0, true, &[(3, 1.0)]));
    let flushed = s.poll(Timestamp(ms(10)));
    assert_eq!(aggregates(&flushed).0.len(), 1);
    assert_eq!(s.stats().rounds_flushed, 1);
    assert_eq!(
        s.round_timeout(1),
        Some(Duration::from_millis(20)),
        "doubled"
    );
    let late = send(&mut s, ms(30), &hot(1, 1, 0, true, &[(3, 2.0)]));
    assert!(matches!(
        response(&late[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::Late,
            ..
        }
    ));
    assert_eq!(
        s.round_timeout(1),
        Some(Duration::from_millis(90)),
        "the late worker's first packet measures the round: 30 + 4 x 15 ms"
    );
    // Round 2, as far apart: it now completes.
    send(&mut s, ms(100), &hot(0, 2, 0, true, &[(3, 1.0)]));
    s.poll(Timestamp(ms(110)));
    assert_eq!(s.stats().rounds_flushed, 1, "not flushed at 10 ms any more");
    let done = send(&mut s, ms(130), &hot(1, 2, 0, true, &[(3, 2.0)]));
    assert_eq!(aggregates(&done).0.len(), 1);
    assert_eq!(s.stats().rounds_completed, 1);
    // Quick rounds bring it down again, never below the configured 10 ms.
    for r in 3..40 {
        send(
            &mut s,
            ms(200 + 10 * u64::from(r)),
            &hot(0, r, 0, true, &[(3, 1.0)]),
        );
        send(
            &mut s,
            ms(200 + 10 * u64::from(r)),
            &hot(1, r, 0, true, &[(3, 1.0)]),
        );
    }
    assert_eq!(s.round_timeout(1), Some(Duration::from_millis(10)));
}

fn update_part(job: u16, server: u16, target: u16, len: usize) -> Vec<u8> {
    crate::wire::UpdateRepr {
        target,
        entries: vec![crate::wire::Fragment {
            key: 1,
            offset: 0,
            bytes: vec![7; len],
        }],
        ..crate::wire::UpdateRepr::header(job, server, 1, 1)
    }
    .to_bytes()
}

#[test]
fn updates_are_copied_unchanged_and_acks_forwarded() {
    let mut s = Switch::new(config(3, 2)).unwrap();
    let all = update_part(1, 1, crate::consts::UPDATE_TARGET_ALL, 4);
    let out = s.handle_packet(Timestamp(0), &all);
    assert_eq!(
        out,
        vec![SwitchAction::Update {
            job: 1,
            target: None,
            payload: all.clone()
        }]
    );
    assert_eq!(out[0].peer(), Peer::Workers { job: 1 });
    let one = update_part(1, 0, 2, 4);
    let out = s.handle_packet(Timestamp(0), &one);
    assert_eq!(out[0].peer(), Peer::Worker { job: 1, rank: 2 });
    assert_eq!(out[0].payload(), &one[..]);
    let ack = crate::wire::UpdateAckRepr {
        job: 1,
        server: 1,
        seq: 1,
        part: 0,
        worker: 2,
    }
    .to_bytes();
    let out = s.handle_packet(Timestamp(0), &ack);
    assert_eq!(out[0].peer(), Peer::Server { job: 1, index: 1 });
    assert_eq!(out[0].payload(), &ack[..]);
    assert_eq!((s.stats().updates_copied, s.stats().update_acks), (2, 1));
    assert_eq!(s.pending_parts() + s.open_rounds(), 0, "no state kept");
}

#[test]
fn updates_for_members_the_switch_does_not_have_are_refused() {
    let mut s = Switch::new(config(3, 2)).unwrap();
    let all = crate::consts::UPDATE_TARGET_ALL;
    let ack = |job, server, worker| {
        crate::wire::UpdateAckRepr {
            job,
            server,
            seq: 1,
            part: 0,
            worker,
        }
        .to_bytes()
    };
    for bytes in [
        update_part(9, 0, all, 4),
        update_part(1, 2, all, 4),
        update_part(1, 0, 3, 4),
        update_part(1, 0, all, 64 - 28 - 14 + 1),
        ack(9, 0, 0),
        ack(1, 2, 0),
        ack(1, 0, 3),
    ] {
        assert!(s.handle_packet(Timestamp(0), &bytes).is_empty());
    }
    assert!(
        s.handle_packet(Timestamp(0), &update_part(1, 0, all, 64 - 28 - 14))
            .len()
            == 1
    );
    let mut bad = update_part(1, 0, all, 4);
    bad[23] = 1;
    assert!(s.handle_packet(Timestamp(0), &bad).is_empty());
    assert!(s
        .handle_packet(Timestamp(0), &ack(1, 0, 0)[..19])
        .is_empty());
    let st = s.stats();
    assert_eq!((st.updates_refused, st.bad_packets), (7, 2));
    assert_eq!((st.updates_copied, st.update_acks), (1, 0));
}

/// Each job's counters hold what its own datagrams and rounds counted, and
/// the jobs' counters add up to the switch's but for datagrams naming no
/// job of the switch.
#[test]
fn counters_are_kept_per_job() {
    let mut c = config(2, 1);
    c.jobs.push(JobConfig::new(2, 1, 10, 1));
    let mut s = Switch::new(c).unwrap();
    send(&mut s, 0, &hot(0, 1, 0, true, &[(0, 1.0), (1, 2.0)]));
    let other = HotRepr {
        job: 2,
        ..hot(0, 1, 0, true, &[(0, 100.0)])
    };
    send(&mut s, 0, &other);
    send(
        &mut s,
        0,
        &HotRepr {
            job: 9,
            ..hot(0, 1, 0, true, &[(0, 1.0)])
        },
    );
    s.handle_packet(Timestamp(0), b"garbage");
    // Job 1's round waits for its second worker, and is flushed; its part
    // and job 2's are resent until given up.
    let mut t = 0;
    while let Some(at) = s.poll_at() {
        t = at.0.max(t + 1);
        s.poll(Timestamp(t));
    }
    let (one, two) = (s.job_stats(1).unwrap(), s.job_stats(2).unwrap());
    assert_eq!(s.job_stats(9), None);
    assert_eq!((one.packets, one.added_pairs), (1, 2));
    assert_eq!((one.rounds_completed, one.rounds_flushed), (0, 1));
    assert_eq!((two.packets, two.added_pairs), (1, 1));
    assert_eq!((two.rounds_completed, two.rounds_flushed), (1, 0));
    for j in [one, two] {
        assert_eq!(j.aggregate_parts, 1);
        assert_eq!(j.aggregate_retransmits, 3);
        assert_eq!(j.aggregate_abandoned, 1);
    }
    let all = s.stats();
    assert_eq!(all.packets, 4);
    assert_eq!(all.bad_packets, 1);
    assert_eq!(all.fallback(FallbackReason::UnknownJob), 1);
    let mut sum = SwitchStats::default();
    sum.add_growth(&SwitchStats::default(), one);
    sum.add_growth(&SwitchStats::default(), two);
    assert_eq!(sum.added_pairs, all.added_pairs);
    assert_eq!(sum.aggregate_retransmits, all.aggregate_retransmits);
    assert_eq!(sum.packets + 2, all.packets);
}

/// A switch that admits jobs gives an admitted job's memory back once its
/// server has not registered for the silence, clears it, and admits the
/// next job into the hole; a job whose server goes on registering stays,
/// and so do the jobs of the configuration.
#[test]
fn silent_admitted_jobs_give_their_memory_back() {
    let mut c = config(2, 1);
    c.jobs.clear();
    let mut s = Switch::with_admission(c.clone()).unwrap();
    let half = c.share(2);
    s.admit(JobConfig::new(1, 2, half, 1)).unwrap();
    s.admit(JobConfig::new(2, 2, half, 1)).unwrap();
    let register = |job| RegisterRepr {
        job,
        server: 0,
        ack: false,
        admit: None,
        epoch: 0,
        token: 0,
    };
    let sec = |n: u64| Timestamp(n * 1_000_000);
    let silence = Duration::from_secs(10);
    // Job 1 leaves a round half summed (worker 1 never comes) and falls silent.
    send(&mut s, 0, &hot(0, 1, 0, true, &[(3, 1.0)]));
    assert_eq!(
        s.retire_at(silence),
        Some(Timestamp::ZERO),
        "not looked at yet"
    );
    assert!(s.retire_silent(sec(0), silence).is_empty());
    assert_eq!(s.retire_at(silence), Some(sec(10)));
    for t in 1..=12 {
        assert!(s.register(None, &register(2)).is_ok(), "job 2's keep-alive");
        let retired = s.retire_silent(sec(t), silence);
        if t < 10 {
            assert!(retired.is_empty(), "{t} s");
        } else if t == 10 {
            assert_eq!(retired, vec![1], "job 1, silent for 10 s");
        }
    }
    assert!(s.config().job(1).is_none() && s.config().job(2).is_some());
    assert!(s.job_stats(1).is_none());
    // Job 3 fits in job 1's place, and its slots hold nothing of job 1's.
    s.admit(JobConfig::new(3, 2, half, 1)).unwrap();
    assert!(
        matches!(
            s.admit(JobConfig::new(4, 2, 4, 1)),
            Err(ConfigError::Memory { .. })
        ),
        "the memory is taken again"
    );
    let of3 = |h: HotRepr| HotRepr { job: 3, ..h };
    let mut out = send(&mut s, 13_000_000, &of3(hot(0, 1, 0, true, &[(3, 2.0)])));
    out.extend(send(
        &mut s,
        13_000_001,
        &of3(hot(1, 1, 0, true, &[(3, 5.0)])),
    ));
    let (data, _) = aggregates(&out);
    assert_eq!(data.len(), 1, "job 3's round 1 completes");
    let sums: Vec<f32> = data[0]
        .pairs
        .iter()
        .map(|&(_, v)| f32::from_bits(v))
        .collect();
    assert_eq!(sums, vec![7.0], "nothing left of job 1's round 1");
    // A configured job is never retired.
    let mut fixed = Switch::new(config(2, 1)).unwrap();
    assert_eq!(fixed.retire_at(silence), None);
    assert!(fixed.retire_silent(sec(100), silence).is_empty());
}

/// A switch started again knows nothing of the rounds its earlier
/// incarnation held: a resend that would open a round, and any packet of a
/// round older than the first it opened, are answered `Unopened` (the worker
/// hands them to the server as uncertain) and added to nothing.
#[test]
fn rounds_an_earlier_incarnation_may_have_held_are_unopened() {
    let mut s = Switch::new(config(2, 1)).unwrap();
    let unopened = ResponseKind::Fallback {
        reason: FallbackReason::Unopened,
        duplicate: false,
    };
    let out = resend(&mut s, 0, &hot(0, 7, 0, true, &[(1, 1.0)]));
    assert_eq!(response(&out[0]).kind, unopened, "a resend opens nothing");
    assert_eq!(s.open_rounds(), 0);
    let again = resend(&mut s, 1, &hot(0, 7, 0, true, &[(1, 1.0)]));
    assert_eq!(
        response(&again[0]).kind,
        ResponseKind::Fallback {
            reason: FallbackReason::Unopened,
            duplicate: true
        },
        "answered the same from the record"
    );
    let first = send(&mut s, 2, &hot(1, 8, 0, true, &[(1, 2.0)]));
    assert_eq!(
        response(&first[0]).kind,
        ResponseKind::Ack { duplicate: false }
    );
    let older = send(&mut s, 3, &hot(1, 5, 0, true, &[(1, 4.0)]));
    assert_eq!(
        response(&older[0]).kind,
        unopened,
        "older than the first round opened here"
    );
    let done = send(&mut s, 4, &hot(0, 8, 0, true, &[(1, 8.0)]));
    let (data, _) = aggregates(&done);
    assert_eq!(sums(&data), vec![(1, 10.0)], "round 8 holds only its own");
    assert_eq!(s.stats().fallbacks[FallbackReason::Unopened as usize], 2);
}
