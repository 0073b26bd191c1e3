//! Bad input: seeded mutations of real messages and of Zebra frames into
//! both agents. Never a panic; whatever the worker splits is a valid push
//! plus a valid trailer; nothing the server holds outlives its timeout.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{captured, every_capture, refs};
use zebra_agent::{
    AgentConfig, HotSet, KeyRanges, Outgoing, PushTrailer, ServerAgent, WorkerAgent, ZebraFrame,
};
use zebra_proto::rng::SplitMix64;
use zebra_proto::{Fallback, FallbackCause, RoundSummary, Timestamp};
use zebra_pslite::Message;

fn mutate(rng: &mut SplitMix64, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut f = frames.to_vec();
    match rng.below(6) {
        0 if !f.is_empty() => {
            let i = rng.below(f.len() as u64) as usize;
            let frame = &mut f[i];
            if !frame.is_empty() {
                let at = rng.below(frame.len() as u64) as usize;
                frame[at] ^= 1 << rng.below(8);
            }
        }
        1 if !f.is_empty() => {
            let i = rng.below(f.len() as u64) as usize;
            let keep = rng.below(f[i].len() as u64 + 1) as usize;
            f[i].truncate(keep);
        }
        2 if !f.is_empty() => {
            f.remove(rng.below(f.len() as u64) as usize);
        }
        3 => {
            let i = rng.below(f.len() as u64 + 1) as usize;
            let len = rng.below(40) as usize;
            f.insert(i, (0..len).map(|_| rng.below(256) as u8).collect());
        }
        4 if !f.is_empty() => {
            let i = rng.below(f.len() as u64) as usize;
            let frame = &mut f[i];
            for _ in 0..1 + rng.below(4) {
                if !frame.is_empty() {
                    let at = rng.below(frame.len() as u64) as usize;
                    frame[at] = rng.below(256) as u8;
                }
            }
        }
        _ => {
            let i = rng.below(f.len() as u64 + 1) as usize;
            f.insert(i.min(f.len()), b"ZBPS\x01\x01\x00\x09".to_vec());
        }
    }
    f
}

#[test]
fn mutated_messages_never_panic() {
    let hot = Arc::new(
        HotSet::new(
            [
                (3, 3),
                (8, 2),
                (0x100_0000, 2),
                (0x100_0004, 2),
                (0x200_0000, 2),
            ],
            KeyRanges::pslite(1),
        )
        .unwrap(),
    );
    let mut config = AgentConfig::new(1, 2, 1);
    config.settle_timeout = Duration::from_millis(10);
    let pushes = [
        captured("byteps/push-sent"),
        captured("byteps/push-lens-w9"),
        captured("mxnet/push-w9"),
        captured("mxnet/rsp-push-w9"),
    ];
    let all = every_capture();
    let mut rng = SplitMix64::new(0xBAD_1A9);
    let mut splits = 0;
    for round in 0..3000u64 {
        let c = &pushes[(round % 4) as usize];
        let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
        let mut s = ServerAgent::new(config.clone(), hot.clone(), 0).unwrap();
        let body = if rng.chance(0.5) {
            c.body().to_vec()
        } else {
            mutate(&mut rng, c.body())
        };
        let now = Timestamp::from_millis(round);
        if let Outgoing::Split(sp) = w.on_send(0, &refs(&body)) {
            splits += 1;
            let (trailer, cold) = sp.frames.split_last().unwrap();
            assert_eq!(PushTrailer::parse(trailer).unwrap().round, sp.round);
            let msg = Message::parse(c.format, &cold[0], &refs(&cold[1..])).unwrap();
            assert!(msg.meta.is_push_request());
            let mut frames = vec![b"ps9".to_vec()];
            if rng.chance(0.5) {
                frames.extend(mutate(&mut rng, &sp.frames));
            } else {
                frames.extend(sp.frames.iter().cloned());
            }
            s.on_recv(now, frames);
            if rng.chance(0.5) {
                let _ = w.on_fallback(Fallback {
                    job: 1,
                    round: sp.round,
                    worker: 0,
                    seq: 0,
                    cause: FallbackCause::NoResponse,
                    pairs: sp.pairs.clone(),
                });
            }
            let summary = RoundSummary {
                round: sp.round,
                packets: 1,
                ..RoundSummary::default()
            };
            if let Ok(Some(m)) = w.on_round_done(1, &summary) {
                let mut frames = vec![b"ps9".to_vec()];
                if rng.chance(0.5) {
                    frames.extend(mutate(&mut rng, &m.frames));
                } else {
                    frames.extend(m.frames);
                }
                let out = s.on_recv(now, frames);
                for f in out.fallbacks {
                    s.on_apply(f);
                }
            }
        }
        let other = &all[rng.below(all.len() as u64) as usize];
        s.on_recv(now, mutate(&mut rng, &other.frames));
        let frame: Vec<u8> = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect();
        let _ = ZebraFrame::parse(&frame);
        s.poll(now + Duration::from_millis(10));
        assert_eq!(s.held(), 0, "nothing outlives the settle timeout");
        assert_eq!(s.poll_at(), None);
    }
    assert!(splits > 1500, "most mutations still split: {splits}");
}

/// Online hot keys: what a worker does with bad HOTSET frames. Mutations
/// never panic; a decision it cannot use (a key of no server, more values
/// than the job has) is refused and its pushes after the counted ones go
/// whole; a second decision is ignored; a HOTSET sent to a server is
/// dropped and counted.
#[test]
fn hostile_hotset_frames() {
    let hot = Arc::new(
        HotSet::new(
            [(3, 3), (0x100_0000, 2), (0x200_0000, 2)],
            KeyRanges::pslite(1),
        )
        .unwrap(),
    );
    let mut config = AgentConfig::new(1, 2, 1);
    config.online = Some(zebra_agent::OnlineConfig::new(1));
    let push = captured("byteps/push-sent");
    let frame = |keys: Vec<(u64, u32)>| {
        zebra_agent::HotSetFrame {
            job: 1,
            worker: 0,
            from_round: 2,
            seen: 1,
            floor: 1,
            change: true,
            aside: false,
            recount: false,
            keys,
        }
        .to_bytes()
        .unwrap()
    };
    let listed = |w: &mut WorkerAgent| match w.on_send(0, &refs(push.body())) {
        Outgoing::Split(sp) => PushTrailer::parse(sp.frames.last().unwrap()).unwrap().hot,
        Outgoing::Unchanged => panic!("an aggregated push is split"),
    };

    let mut rng = SplitMix64::new(0x4075E7);
    let good = frame(vec![(0x100_0004, 2), (0x100_0000, 2)]);
    for _ in 0..2000 {
        let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
        let bad = mutate(&mut rng, std::slice::from_ref(&good));
        let _ = w.on_recv(&refs(&bad));
        let _ = w.on_send(0, &refs(push.body()));
    }

    let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
    assert!(!listed(&mut w).is_empty(), "the first push is counted, hot");
    assert!(listed(&mut w).is_empty(), "then whole until the decision");
    assert!(w.on_recv(&[b"ZBPS".as_slice()]).is_err());
    let err = w.on_recv(&[&frame(vec![(u64::MAX, 1)])]).unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(
        listed(&mut w).is_empty(),
        "a refused decision: whole pushes"
    );
    assert!(w.on_recv(&[&good]).is_err(), "one decision per server");
    assert!(listed(&mut w).is_empty());

    let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
    let _ = listed(&mut w);
    let err = w.on_recv(&[&frame(vec![(0x100_0000, 8)])]).unwrap_err();
    assert!(err.to_string().contains("hot values"), "{err}");

    let mut w = WorkerAgent::new(config.clone(), hot.clone(), 0).unwrap();
    let _ = listed(&mut w);
    w.on_recv(&[&good]).unwrap();
    assert!(
        !listed(&mut w).is_empty(),
        "from the decision's round, the new keys"
    );

    let mut s = ServerAgent::new(config, hot, 0).unwrap();
    s.on_recv(Timestamp::ZERO, vec![b"ps9".to_vec(), good]);
    assert_eq!(s.stats().bad_frames, 1);
}
