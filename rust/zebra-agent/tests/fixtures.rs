//! The agents on messages captured from real BytePS and MXNet jobs: a push
//! split and merged back is the captured push byte for byte; two workers'
//! pushes merge into what the real server summed; everything that is not
//! a push passes untouched; fallbacks, ordering, timeouts and bad frames.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{captured, every_capture, refs, Captured};
use zebra_agent::{
    AgentConfig, Delivery, HotSet, KeyRanges, Outgoing, ServerAgent, SplitPush, WorkerAgent,
};
use zebra_proto::wire::FallbackReason;
use zebra_proto::{Coverage, Fallback, FallbackCause, RoundAggregate, RoundSummary, Timestamp};
use zebra_pslite::{DataType, KvData, Message, Route};

const JOB: u16 = 1;
const T0: Timestamp = Timestamp(1_000);

fn hot(keys: &[(u64, u32)]) -> Arc<HotSet> {
    Arc::new(HotSet::new(keys.iter().copied(), KeyRanges::pslite(1)).unwrap())
}

/// Every trailer promises a SETTLE (`max_clean_values` 0), so that these
/// tests drive the SETTLE path; `a_clean_round_needs_no_settle` the other.
fn config(workers: u16) -> AgentConfig {
    let mut c = AgentConfig::new(JOB, workers, 1);
    c.max_clean_values = 0;
    c
}

fn split(agent: &mut WorkerAgent, body: &[Vec<u8>]) -> SplitPush {
    match agent.on_send(0, &refs(body)) {
        Outgoing::Split(s) => s,
        Outgoing::Unchanged => panic!("not split: {:?}", agent.stats()),
    }
}

fn aggregate(round: u32, contributed: u64, pairs: Vec<(u32, f32)>) -> RoundAggregate {
    RoundAggregate {
        job: JOB,
        server: 0,
        round,
        contributed,
        complete: contributed,
        flushed: false,
        pairs,
        coverage: Coverage::of_complete(contributed),
        corrected: 0,
    }
}

/// The SETTLE of a round whose `added` packets of `packets` were acknowledged.
fn settle(agent: &mut WorkerAgent, round: u32, packets: u16, added: u16) -> Vec<Vec<u8>> {
    let summary = RoundSummary {
        round,
        packets,
        added,
        ..RoundSummary::default()
    };
    let m = agent.on_round_done(JOB, &summary).unwrap().unwrap();
    assert_eq!(m.server, 0);
    m.frames
}

fn with_identity(identity: &[u8], frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    std::iter::once(identity.to_vec())
        .chain(frames.iter().cloned())
        .collect()
}

fn kv_of<F: AsRef<[u8]>>(c: &Captured, frames: &[F]) -> KvData {
    let env = Message::parse_frames(c.format, Route::RouterRecv, &refs(frames)).unwrap();
    env.message.kv().unwrap().unwrap().to_owned()
}

fn floats_of(kv: &KvData, key: u64) -> Vec<f32> {
    let frames = kv.frames();
    let view = zebra_pslite::KvView::parse(&kv.data_types(), &refs(&frames)).unwrap();
    let entry = view.entries().unwrap().find(|e| e.0 == key).unwrap();
    zebra_agent::values::decode(entry.1).collect()
}

/// One worker: split the captured push, settle it, aggregate its own pairs;
/// the server delivers exactly the captured push.
fn round_trip(push: &str, hot_keys: &[(u64, u32)], expect_hot: usize) {
    let c = captured(push);
    let hot = hot(hot_keys);
    let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config(1), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    assert_eq!((sp.job, sp.round, sp.server), (JOB, 1, 0));
    assert_eq!(w.stats().hot_keys as usize, expect_hot, "{push}");
    let out = s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    assert!(out.deliver.is_empty() && s.held() == 1, "{push}: held");
    let out = s.on_recv(T0, with_identity(b"ps9", &settle(&mut w, 1, 1, 1)));
    assert!(out.deliver.is_empty() && out.fallbacks.is_empty());
    let got = s.on_round(aggregate(1, 1, sp.pairs.clone()));
    assert_eq!(
        got,
        vec![c.received_from(b"ps9")],
        "{push}: merged back byte for byte"
    );
    assert_eq!(s.held(), 0);
    assert_eq!(w.open_rounds(), 0);
}

/// The server keeps the engine's frames: a message it passes on reaches
/// the app in the buffers it came in, not a copy of them.
#[test]
fn passed_frames_reach_the_app_uncopied() {
    let c = captured("byteps/push-sent");
    let mut s = ServerAgent::new(config(1), hot(&[(0x100_0006, 2)]), 0).unwrap();
    let frames: Vec<Bytes> = c
        .received_from(b"ps9")
        .into_iter()
        .map(Bytes::from)
        .collect();
    let out = s.on_recv(T0, frames.clone());
    assert_eq!(out.deliver, vec![frames.clone()], "a push without trailer");
    for (got, came) in out.deliver[0].iter().zip(&frames) {
        assert_eq!(got.as_ptr(), came.as_ptr(), "the same buffer");
    }
}

#[test]
fn byteps_push_splits_and_merges_back_byte_for_byte() {
    round_trip("byteps/push-sent", &[(0x100_0006, 2), (0x100_0000, 2)], 2);
    round_trip(
        "byteps/push-lens-w9",
        &[(0x200_0000, 2), (0x200_0003, 1), (0x200_0001, 2)],
        2,
    );
}

#[test]
fn byteps_cold_part_is_what_split_push_makes() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0006, 2), (0x100_0000, 2)]);
    let mut w = WorkerAgent::new(config(1), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    let msg = Message::parse(c.format, &c.body()[0], &refs(&c.body()[1..])).unwrap();
    let want = msg
        .split_push(|k| k == 0x100_0006 || k == 0x100_0000)
        .unwrap();
    let (trailer, cold) = sp.frames.split_last().unwrap();
    assert_eq!(cold, want.cold.to_frames(c.format).unwrap());
    let t = zebra_agent::PushTrailer::parse(trailer).unwrap();
    assert_eq!(
        t.hot,
        [0, 1],
        "each key's place among the server's hot keys, ascending"
    );
    assert_eq!(
        (t.val_type, t.lens, t.worker, t.round),
        (DataType::Float, false, 0, 1)
    );
    let vals = zebra_agent::values::decode(&want.hot.vals);
    let expect: Vec<(u32, f32)> = [2, 3, 0, 1].into_iter().zip(vals).collect();
    let mut got = sp.pairs.clone();
    got.sort_by_key(|p| p.0);
    let mut expect = expect;
    expect.sort_by_key(|p| p.0);
    assert_eq!(got, expect);
    let st = w.stats();
    assert_eq!(
        st.bytes_before - st.bytes_after,
        2 * (8 + 8) - (24 + 1),
        "two entries out, a trailer with a one-byte bitmap in"
    );
}

#[test]
fn mxnet_char_values_with_byte_lens() {
    round_trip("mxnet/push-w9", &[(3, 3)], 1);
    let c = captured("mxnet/push-w9");
    let mut w = WorkerAgent::new(config(1), hot(&[(3, 3)]), 0).unwrap();
    let sp = split(&mut w, c.body());
    assert_eq!(sp.pairs, vec![(0, 1.0), (1, 2.0), (2, 3.0)]);
    let (_, cold) = sp.frames.split_last().unwrap();
    let msg = Message::parse(c.format, &cold[0], &refs(&cold[1..])).unwrap();
    assert!(
        msg.meta.is_push_request() && msg.data.is_empty(),
        "all hot: no data frames"
    );
}

#[test]
fn mxnet_row_sparse_keeps_the_repeated_array_key_cold() {
    round_trip("mxnet/rsp-push-w9", &[(8, 2), (11, 2), (7, 2)], 2);
    let c = captured("mxnet/rsp-push-w9");
    let mut w = WorkerAgent::new(config(1), hot(&[(7, 2), (8, 2)]), 0).unwrap();
    split(&mut w, c.body());
    assert_eq!((w.stats().cold_len, w.stats().hot_keys), (1, 1));
    let c = captured("mxnet/rsp-init-push");
    let mut w = WorkerAgent::new(config(1), hot(&[(7, 2)]), 0).unwrap();
    split(&mut w, c.body());
    assert_eq!(
        w.stats().cold_repeated,
        2,
        "key 7 twice in one push: both cold"
    );
}

/// Two workers' captured pushes (keys 0, 4, 6, 7 and 0..=5, 2 values
/// each, offset 0x100_0000): the hot values delivered add up to the sums
/// the real server returned; a key both pushed has its sum in worker 9's
/// request and zeros in worker 11's. Merged mode puts every sum in worker
/// 9's request and leaves worker 11 its cold keys.
#[test]
fn two_workers_merge_into_the_real_servers_sums() {
    const K: u64 = 0x100_0000;
    let hot_keys = [(K + 4, 2), (K, 2), (K + 7, 2), (K + 1, 2)];
    let pull = captured("byteps/pull-response");
    let pulled = kv_of(&pull, &pull.received_from(b"ps8"));
    let caps = [captured("byteps/push-w9"), captured("byteps/push-w11")];
    let original: Vec<KvData> = caps.iter().map(|c| kv_of(c, &c.frames)).collect();
    for delivery in [Delivery::PerWorker, Delivery::Merged] {
        let mut cfg = config(2);
        cfg.delivery = delivery;
        let hot = hot(&hot_keys);
        let mut ws: Vec<WorkerAgent> = (0..2)
            .map(|r| WorkerAgent::new(cfg.clone(), hot.clone(), r).unwrap())
            .collect();
        let mut s = ServerAgent::new(cfg.clone(), hot, 0).unwrap();
        let mut sum: std::collections::BTreeMap<u32, f32> = Default::default();
        for (r, c) in caps.iter().enumerate().rev() {
            let sp = split(&mut ws[r], c.body());
            for &(i, v) in &sp.pairs {
                *sum.entry(i).or_default() += v;
            }
            let id = &c.frames[0];
            assert!(s
                .on_recv(T0, with_identity(id, &sp.frames))
                .deliver
                .is_empty());
            let st = settle(&mut ws[r], 1, 1, 1);
            assert!(s.on_recv(T0, with_identity(id, &st)).deliver.is_empty());
        }
        let got = s.on_round(aggregate(1, 0b11, sum.into_iter().collect()));
        assert_eq!(got.len(), 2);
        assert_eq!(&got[0][0][..], b"ps9", "rank order");
        let w9 = kv_of(&caps[0], &got[0]);
        let w11 = kv_of(&caps[1], &got[1]);
        let value = |kv: &KvData, key| {
            if kv.keys.contains(&key) {
                floats_of(kv, key)
            } else {
                vec![0.0, 0.0]
            }
        };
        for &(key, _) in &hot_keys {
            let total: Vec<f32> = value(&w9, key)
                .iter()
                .zip(value(&w11, key))
                .map(|(a, b)| a + b)
                .collect();
            assert_eq!(total, floats_of(&pulled, key), "key {key:#x}");
        }
        match delivery {
            Delivery::PerWorker => {
                assert_eq!(w9.keys, original[0].keys);
                assert_eq!(w11.keys, original[1].keys);
                for key in [K, K + 4] {
                    assert_eq!(floats_of(&w11, key), [0.0, 0.0], "key {key:#x}");
                }
                assert_eq!(floats_of(&w11, K + 1), floats_of(&original[1], K + 1));
                for key in [K + 2, K + 3, K + 5] {
                    assert_eq!(floats_of(&w11, key), floats_of(&original[1], key));
                }
                assert_eq!(got[1][1], caps[1].body()[0], "meta unchanged");
            }
            Delivery::Merged => {
                assert_eq!(w9.keys, [K, K + 1, K + 4, K + 6, K + 7]);
                assert_eq!(w11.keys, [K + 2, K + 3, K + 5]);
            }
        }
    }
}

#[test]
fn everything_else_passes_untouched() {
    let hot = hot(&[(3, 3), (0x100_0000, 2)]);
    let mut pushes = 0;
    let (mut passed_w, mut passed_s) = (0, 0);
    for c in every_capture() {
        let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
        let mut s = ServerAgent::new(config(1), hot.clone(), 0).unwrap();
        let msg = Message::parse(c.format, &c.body()[0], &refs(&c.body()[1..])).unwrap();
        if msg.meta.is_push_request() {
            pushes += 1;
            continue;
        }
        assert_eq!(
            w.on_send(0, &refs(c.body())),
            Outgoing::Unchanged,
            "{}",
            c.name
        );
        let frames = c.received_from(b"ps9");
        let out = s.on_recv(T0, frames.clone());
        assert_eq!(out.deliver, vec![frames], "{}", c.name);
        assert!(out.fallbacks.is_empty());
        passed_w += w.stats().passed.not_push;
        passed_s += s.stats().passed;
    }
    assert!(pushes >= 8);
    assert_eq!((passed_w, passed_s), (23, 23));
    let mut w = WorkerAgent::new(config(1), hot, 0).unwrap();
    for bad in [vec![], vec![b"junk".to_vec()]] {
        assert_eq!(w.on_send(0, &refs(&bad)), Outgoing::Unchanged);
    }
    assert_eq!(w.stats().passed.unknown_format, 2);
}

#[test]
fn pushes_that_cannot_be_aggregated_pass_whole() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0000, 2)]);
    let mut other_app = config(1);
    other_app.app_id = 5;
    let mut w = WorkerAgent::new(other_app, hot.clone(), 0).unwrap();
    assert_eq!(w.on_send(0, &refs(c.body())), Outgoing::Unchanged);
    assert_eq!(w.stats().passed.other_stream, 1);

    let m = captured("mxnet/push-w9");
    let mut opaque = config(1);
    opaque.other_values = zebra_agent::OtherValues::Opaque;
    let mut w = WorkerAgent::new(opaque, hot.clone(), 0).unwrap();
    assert_eq!(w.on_send(0, &refs(m.body())), Outgoing::Unchanged);
    assert_eq!(w.stats().passed.value_type, 1);

    let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
    let mut broken = c.body().to_vec();
    broken[2].pop();
    assert_eq!(w.on_send(0, &refs(&broken)), Outgoing::Unchanged);
    assert_eq!(w.stats().passed.malformed, 1);

    let no_hot = Arc::new(HotSet::new([(0x100_0000, 2)], KeyRanges::pslite(2)).unwrap());
    let mut w = WorkerAgent::new(AgentConfig::new(JOB, 1, 2), no_hot, 0).unwrap();
    assert_eq!(w.on_send(1, &refs(c.body())), Outgoing::Unchanged);
    assert_eq!(w.stats().passed.no_hot_keys, 1);
    match w.on_send(0, &refs(c.body())) {
        Outgoing::Split(sp) => assert_eq!(sp.pairs.len(), 2),
        Outgoing::Unchanged => panic!("server 0 owns the key"),
    }
}

/// A round without a hot key still makes a trailer (and needs no SETTLE):
/// the server releases it at once.
#[test]
fn a_push_without_hot_keys_is_still_a_round() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x200_0000, 2)]);
    let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config(1), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    assert!(sp.pairs.is_empty());
    assert_eq!(
        &sp.frames[..sp.frames.len() - 1],
        c.body(),
        "unchanged before the trailer"
    );
    let out = s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    assert_eq!(out.deliver, vec![c.received_from(b"ps9")]);
    let summary = RoundSummary {
        round: 1,
        packets: 1,
        added: 1,
        ..Default::default()
    };
    assert_eq!(w.on_round_done(JOB, &summary), Ok(None));
    // The switch's aggregate of that round (an empty DONE) comes after the
    // request was delivered and the round forgotten: nothing is lost.
    assert!(s.on_round(aggregate(1, 1, vec![])).is_empty());
    assert!(s.on_round(aggregate(1, 1, vec![(0, 0.0)])).is_empty());
    let st = s.stats();
    assert_eq!((st.late_empty, st.late, st.lost_values), (2, 0, 0));
    // Non-zero values for a round whose every request was delivered
    // complete were applied already (a residue, or a copy): not lost.
    s.on_round(aggregate(1, 1, vec![(0, 2.5), (1, 0.0)]));
    let st = s.stats();
    assert_eq!(
        (st.late_empty, st.late_applied, st.late, st.lost_values),
        (2, 1, 0, 0)
    );
}

/// Every packet refused by the switch: the SETTLE carries the pairs, the
/// server hands them out for `add_fallback`, and releases the push once
/// they are applied, with no aggregate.
#[test]
fn a_round_that_fell_back_entirely() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0006, 2), (0x100_0000, 2)]);
    let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config(1), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    let f = Fallback {
        job: JOB,
        round: 1,
        worker: 0,
        seq: 0,
        cause: FallbackCause::Switch(FallbackReason::Late),
        pairs: sp.pairs.clone(),
    };
    w.on_fallback(f.clone()).unwrap();
    let st = settle(&mut w, 1, 1, 0);
    let out = s.on_recv(T0, with_identity(b"ps9", &st));
    assert!(out.deliver.is_empty());
    assert_eq!(out.fallbacks, vec![f.clone()]);
    assert_eq!(s.on_apply(f), vec![c.received_from(b"ps9")]);
}

/// A pull queued behind its sender's held push waits for it; another
/// worker's messages do not.
#[test]
fn a_senders_messages_stay_in_order() {
    let c = captured("byteps/push-sent");
    let pull = captured("byteps/pull-request");
    let hot = hot(&[(0x100_0000, 2)]);
    let mut w = WorkerAgent::new(config(2), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config(2), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    assert!(s
        .on_recv(T0, with_identity(b"ps9", &sp.frames))
        .deliver
        .is_empty());
    assert!(s.on_recv(T0, pull.received_from(b"ps9")).deliver.is_empty());
    let other = s.on_recv(T0, pull.received_from(b"ps11")).deliver;
    assert_eq!(other, vec![pull.received_from(b"ps11")]);
    let scheduler = s.on_recv(T0, pull.received_from(b"ps1")).deliver;
    assert_eq!(scheduler.len(), 1);
    s.on_recv(T0, with_identity(b"ps9", &settle(&mut w, 1, 1, 1)));
    let got = s.on_round(aggregate(1, 1, sp.pairs.clone()));
    assert_eq!(
        got,
        vec![c.received_from(b"ps9"), pull.received_from(b"ps9")]
    );
    assert_eq!(s.stats().queued, 1);
}

/// `two-stage:1`: a pull passes one held push of its sender at once (not
/// counted as queued); behind two it waits, and passes once only one is
/// left; a pull never passes another message (here a pull that waits).
#[test]
fn a_pull_passes_at_most_s_held_pushes() {
    let c = captured("byteps/push-sent");
    let pull = captured("byteps/pull-request");
    let hot = hot(&[(0x100_0000, 2)]);
    let mut cfg = config(2);
    cfg.sync = "two-stage:1".parse().unwrap();
    let mut w = WorkerAgent::new(cfg.clone(), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(cfg, hot, 0).unwrap();
    let first = split(&mut w, c.body());
    assert!(s
        .on_recv(T0, with_identity(b"ps9", &first.frames))
        .deliver
        .is_empty());
    let passed = s.on_recv(T0, pull.received_from(b"ps9")).deliver;
    assert_eq!(passed, vec![pull.received_from(b"ps9")]);
    assert_eq!((s.stats().stale_pulls, s.stats().queued), (1, 0));

    let second = split(&mut w, c.body());
    s.on_recv(T0, with_identity(b"ps9", &second.frames));
    assert!(s.on_recv(T0, pull.received_from(b"ps9")).deliver.is_empty());
    assert!(s.on_recv(T0, pull.received_from(b"ps9")).deliver.is_empty());
    assert_eq!((s.stats().stale_pulls, s.stats().queued), (1, 2));

    s.on_recv(T0, with_identity(b"ps9", &settle(&mut w, 1, 1, 1)));
    let got = s.on_round(aggregate(1, 1, first.pairs.clone()));
    assert_eq!(
        got,
        vec![
            c.received_from(b"ps9"),
            pull.received_from(b"ps9"),
            pull.received_from(b"ps9")
        ],
        "round 1 released: both pulls pass the one push left"
    );
    assert_eq!((s.stats().stale_pulls, s.stats().queued), (3, 2));
    assert_eq!(
        s.stats().stale_most,
        1,
        "never more than S = 1 held pushes passed"
    );
    assert_eq!(s.held(), 1);
}

/// A push whose round never settles is delivered after `settle_timeout`,
/// counted; a second aggregate for a round is ignored.
#[test]
fn nothing_waits_forever_and_duplicates_are_ignored() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0000, 2)]);
    let mut cfg = config(1);
    cfg.settle_timeout = Duration::from_millis(30);
    let mut w = WorkerAgent::new(cfg.clone(), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(cfg, hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    assert_eq!(s.poll_at(), Some(Timestamp(31_000)));
    assert!(s.poll(Timestamp(30_999)).is_empty());
    let forced = s.poll(Timestamp(31_000));
    assert_eq!(forced.len(), 1);
    assert_eq!(s.stats().forced, 1);
    assert_eq!(s.poll_at(), None);
    let zeros = kv_of(&c, &forced[0]);
    assert_eq!(floats_of(&zeros, 0x100_0000), [0.0, 0.0]);

    let sp = split(&mut w, c.body());
    assert_eq!(sp.round, 2);
    s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    s.on_recv(T0, with_identity(b"ps9", &settle(&mut w, 2, 1, 1)));
    assert_eq!(s.on_round(aggregate(2, 1, sp.pairs.clone())).len(), 1);
    assert!(s.on_round(aggregate(2, 1, sp.pairs.clone())).is_empty());
    let st = s.stats();
    assert_eq!(st.duplicate_aggregates + st.late_applied, 1);
    assert_eq!(
        st.lost_values, 0,
        "the duplicate's values are not added, nor counted lost"
    );
    // Round 1 was forced: what comes for it later is lost, and counted.
    assert!(s.on_round(aggregate(1, 1, sp.pairs.clone())).is_empty());
    let st = s.stats();
    assert_eq!((st.late, st.lost_values), (1, 2));
}

/// Malformed and misaddressed Zebra frames are counted, never a panic, and
/// a push is never delivered with its trailer.
#[test]
fn bad_frames_are_counted() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0000, 2)]);
    let mut w = WorkerAgent::new(config(2), hot.clone(), 1).unwrap();
    let mut s = ServerAgent::new(config(2), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    let out = s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    assert_eq!(
        out.deliver,
        vec![c.received_from(b"ps9")]
            .into_iter()
            .map(|mut f| {
                f.truncate(1);
                f.extend(sp.frames[..sp.frames.len() - 1].iter().cloned());
                f
            })
            .collect::<Vec<_>>(),
        "rank 1's trailer from ps9: delivered without it"
    );
    let mut broken = sp.frames.clone();
    broken.last_mut().unwrap()[4] = 9;
    let out = s.on_recv(T0, with_identity(b"ps11", &broken));
    assert_eq!(
        out.deliver[0].len(),
        sp.frames.len(),
        "bad trailer stripped"
    );
    let out = s.on_recv(T0, vec![b"ps11".to_vec(), b"ZBPS\x01\x02".to_vec()]);
    assert!(out.deliver.is_empty());
    let st = settle(&mut w, 1, 1, 1);
    let out = s.on_recv(T0, with_identity(b"ps9", &st));
    assert!(out.deliver.is_empty() && out.fallbacks.is_empty());
    assert_eq!(s.stats().bad_frames, 4);
    assert_eq!(s.held(), 0);
    assert!(w
        .on_fallback(Fallback {
            job: 99,
            round: 1,
            worker: 1,
            seq: 0,
            cause: FallbackCause::NoResponse,
            pairs: vec![],
        })
        .is_err());
}

/// Inputs in any order: the aggregate and the SETTLE before the push
/// itself; the push is delivered the moment it arrives.
#[test]
fn aggregate_and_settle_before_the_push() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0006, 2), (0x100_0000, 2)]);
    let mut w = WorkerAgent::new(config(1), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config(1), hot, 0).unwrap();
    let sp = split(&mut w, c.body());
    assert!(s.on_round(aggregate(1, 1, sp.pairs.clone())).is_empty());
    let st = settle(&mut w, 1, 1, 1);
    assert!(s.on_recv(T0, with_identity(b"ps9", &st)).deliver.is_empty());
    let out = s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    assert_eq!(out.deliver, vec![c.received_from(b"ps9")]);
}

/// Both workers push the same hot keys; worker 9's packet reaches the
/// aggregate, worker 11's falls back. Whichever order the pieces come in,
/// each request keeps its keys and the two add up to the sum: with the
/// aggregate first, worker 9's request carries all of it; with the
/// fallback first, worker 11 is settled at once and carries its own values.
#[test]
fn a_contribution_through_fallback_joins_the_aggregate() {
    let hot_keys = [(0x100_0000, 2), (0x100_0004, 2)];
    let caps = [captured("byteps/push-w9"), captured("byteps/push-w11")];
    for fallback_first in [false, true] {
        let hot = hot(&hot_keys);
        let mut ws: Vec<WorkerAgent> = (0..2)
            .map(|r| WorkerAgent::new(config(2), hot.clone(), r).unwrap())
            .collect();
        let mut s = ServerAgent::new(config(2), hot, 0).unwrap();
        let sps: Vec<SplitPush> = (0..2).map(|r| split(&mut ws[r], caps[r].body())).collect();
        let mut delivered = Vec::new();
        for (r, sp) in sps.iter().enumerate() {
            delivered.extend(
                s.on_recv(T0, with_identity(&caps[r].frames[0], &sp.frames))
                    .deliver,
            );
        }
        let f = Fallback {
            job: JOB,
            round: 1,
            worker: 1,
            seq: 0,
            cause: FallbackCause::Switch(FallbackReason::WindowFull),
            pairs: sps[1].pairs.clone(),
        };
        ws[1].on_fallback(f.clone()).unwrap();
        let st0 = settle(&mut ws[0], 1, 1, 1);
        let st1 = settle(&mut ws[1], 1, 1, 0);
        delivered.extend(s.on_recv(T0, with_identity(b"ps9", &st0)).deliver);
        let out = s.on_recv(T0, with_identity(b"ps11", &st1));
        assert_eq!(out.fallbacks, vec![f.clone()]);
        let agg = aggregate(1, 0b01, sps[0].pairs.clone());
        if fallback_first {
            let early = s.on_apply(f);
            assert_eq!(early.len(), 1, "worker 11 settled: all its pairs applied");
            assert_eq!(&early[0][0][..], b"ps11");
            delivered.extend(s.on_round(agg));
            delivered.extend(early);
        } else {
            delivered.extend(s.on_round(agg));
            delivered.extend(s.on_apply(f));
        }
        assert_eq!(delivered.len(), 2, "fallback first: {fallback_first}");
        assert_eq!(
            (&delivered[0][0][..], &delivered[1][0][..]),
            (&b"ps9"[..], &b"ps11"[..])
        );
        let got: Vec<KvData> = (0..2).map(|r| kv_of(&caps[r], &delivered[r])).collect();
        let original: Vec<KvData> = caps.iter().map(|c| kv_of(c, &c.frames)).collect();
        for &(key, _) in &hot_keys {
            let want: Vec<f32> = floats_of(&original[0], key)
                .iter()
                .zip(floats_of(&original[1], key))
                .map(|(a, b)| a + b)
                .collect();
            let total: Vec<f32> = floats_of(&got[0], key)
                .iter()
                .zip(floats_of(&got[1], key))
                .map(|(a, b)| a + b)
                .collect();
            assert_eq!(
                total, want,
                "key {key:#x}, fallback first: {fallback_first}"
            );
        }
    }
}

/// A clean round (every packet added) has no SETTLE: the server releases
/// the push once the aggregate marks the worker complete, and not before.
#[test]
fn a_clean_round_needs_no_settle() {
    let c = captured("byteps/push-sent");
    let hot = hot(&[(0x100_0006, 2), (0x100_0000, 2)]);
    let cfg = AgentConfig::new(JOB, 1, 1);
    let mut w = WorkerAgent::new(cfg.clone(), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(cfg, hot.clone(), 0).unwrap();
    let sp = split(&mut w, c.body());
    let trailer = zebra_agent::frame::PushTrailer::parse(sp.frames.last().unwrap()).unwrap();
    assert!(!trailer.settles);
    let clean = RoundSummary {
        round: 1,
        packets: 1,
        added: 1,
        ..RoundSummary::default()
    };
    assert_eq!(w.on_round_done(JOB, &clean).unwrap(), None);
    assert_eq!((w.stats().settles, w.stats().clean_rounds), (0, 1));
    assert!(s
        .on_recv(T0, with_identity(b"ps9", &sp.frames))
        .deliver
        .is_empty());
    let incomplete = RoundAggregate {
        complete: 0,
        ..aggregate(1, 1, sp.pairs.clone())
    };
    let mut waiting = ServerAgent::new(AgentConfig::new(JOB, 1, 1), hot.clone(), 0).unwrap();
    assert!(waiting
        .on_recv(T0, with_identity(b"ps9", &sp.frames))
        .deliver
        .is_empty());
    assert!(
        waiting.on_round(incomplete).is_empty(),
        "an aggregate without the complete bit waits for a SETTLE"
    );
    assert_eq!(waiting.held(), 1);
    let got = s.on_round(aggregate(1, 1, sp.pairs.clone()));
    assert_eq!(
        got,
        vec![c.received_from(b"ps9")],
        "released, merged back byte for byte"
    );
    assert_eq!(s.held(), 0);
}

/// Online, the census counts a key only where its update is not zero: in a
/// counted push a hot key whose values are all zero goes cold (the server
/// sees cold values only) and no key of such a push is counted; a non-zero
/// update of the key goes hot. After the counted pushes zeros go hot again.
#[test]
fn online_counts_only_non_zero_updates() {
    let c = captured("byteps/push-sent");
    let key = kv_of(&c, &c.received_from(b"ps9")).keys[0];
    let hot = hot(&[(key, 2)]);
    let mut config = config(1);
    // One worker saves nothing: no rule to step aside here, this is about
    // what is counted.
    let mut online = zebra_agent::OnlineConfig::new(2);
    online.min_saving = 0.0;
    config.online = Some(online);
    let zeros = {
        let env = Message::parse_frames(c.format, Route::DealerSend, &refs(c.body())).unwrap();
        let mut kv = env.message.kv().unwrap().unwrap().to_owned();
        kv.vals.iter_mut().for_each(|b| *b = 0);
        zebra_pslite::with_kv(&env.message.meta, &kv)
            .unwrap()
            .to_frames(c.format)
            .unwrap()
    };
    let listed = |sp: &SplitPush| {
        zebra_agent::PushTrailer::parse(sp.frames.last().unwrap())
            .unwrap()
            .hot
    };
    let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
    assert_eq!(listed(&split(&mut w, c.body())), vec![0], "non-zero: hot");

    let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
    let mut s = ServerAgent::new(config, hot, 0).unwrap();
    for _ in 0..2 {
        let sp = split(&mut w, &zeros);
        assert!(
            listed(&sp).is_empty() && sp.pairs.is_empty(),
            "zeros go cold"
        );
        s.on_recv(T0, with_identity(b"ps9", &sp.frames));
    }
    assert_eq!(w.stats().cold_zero, 2);
    let d = s.online_decision().expect("decided after 2 pushes");
    assert_eq!(
        (d.pushes, d.keys_seen, d.change),
        (2, 0, false),
        "two pushes counted, no key in them: the keys stay"
    );
    let hotset = s.take_control();
    assert_eq!(hotset.len(), 1);
    w.on_recv(&refs(&hotset[0][1..])).unwrap();
    let after = split(&mut w, &zeros);
    assert_eq!(w.stats().cold_zero, 2, "past the counted pushes");
    assert_eq!(listed(&after), vec![0], "zeros hot again");
}
