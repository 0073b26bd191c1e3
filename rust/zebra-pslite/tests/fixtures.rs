//! Messages captured from real PS-lite clients (BytePS's PS-lite and MXNet
//! 1.9.1; see tests/data/README.md): detection, byte-exact round trips,
//! field values, and the splitter's helpers against what the real servers
//! sent.

mod common;

use std::collections::BTreeMap;

use common::{all, floats, load, Fixture};
use zebra_pslite::{
    detect, response_meta, synthesize_push, with_kv, Command, DataType, Error, Format, KvData,
    Message, Role, EMPTY,
};

#[test]
fn every_fixture_is_detected_and_round_trips_byte_for_byte() {
    for f in all() {
        assert_eq!(detect(f.meta_frame()), Ok(f.format), "{}", f.name);
        let env = f.parse();
        assert_eq!(env.to_frames(f.format).unwrap(), f.frames, "{}", f.name);
        let reparsed = f
            .format
            .parse(&f.format.emit(&env.message.meta).unwrap())
            .unwrap();
        let mut meta = env.message.meta.clone();
        (meta.sender, meta.recver) = (EMPTY, EMPTY);
        assert_eq!(reparsed, meta, "{}", f.name);
    }
}

#[test]
fn the_other_format_refuses_every_fixture() {
    for f in all() {
        let other = match f.format {
            Format::Byteps => Format::Protobuf,
            Format::Protobuf => Format::Byteps,
        };
        assert!(other.parse(f.meta_frame()).is_err(), "{}", f.name);
    }
}

fn kv(f: &Fixture) -> KvData {
    f.message()
        .kv()
        .unwrap_or_else(|e| panic!("{}: {e}", f.name))
        .unwrap_or_else(|| panic!("{}: no data", f.name))
        .to_owned()
}

/// What a server that adds every push into a zero store returns.
fn sum(pushes: &[KvData]) -> BTreeMap<u64, Vec<f32>> {
    let mut store: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    for p in pushes {
        let refs: Vec<Vec<u8>> = p.frames();
        let refs: Vec<&[u8]> = refs.iter().map(|x| &x[..]).collect();
        let view = zebra_pslite::KvView::parse(&p.data_types(), &refs).unwrap();
        for (key, vals, _) in view.entries().unwrap() {
            let vals = floats(vals);
            let acc = store.entry(key).or_insert_with(|| vec![0.0; vals.len()]);
            for (a, v) in acc.iter_mut().zip(vals) {
                *a += v;
            }
        }
    }
    store
}

fn pull_reply(store: &BTreeMap<u64, Vec<f32>>, keys: &[u64], template: &KvData) -> KvData {
    let mut out = KvData::empty(template.val_type, template.lens.is_some());
    for k in keys {
        let bytes: Vec<u8> = store[k].iter().flat_map(|v| v.to_le_bytes()).collect();
        out.keys.push(*k);
        out.vals.extend_from_slice(&bytes);
        if let Some(l) = &mut out.lens {
            l.push((bytes.len() / template.val_type.width()) as i32);
        }
    }
    out
}

/// The pull response the real server sent equals the sum of the captured
/// pushes, and rebuilding it from the pull request reproduces its frames.
fn check_pull(pushes: &[&str], request: &str, reply: &str) {
    let pushes: Vec<KvData> = pushes.iter().map(|p| kv(&load(p))).collect();
    let request = load(request);
    let reply = load(reply);
    let got = kv(&reply);
    let store = sum(&pushes);
    let want = pull_reply(&store, &kv(&request).keys, &got);
    assert_eq!(got, want, "{}", reply.name);
    let built = with_kv(&response_meta(&request.message().meta), &want).unwrap();
    let ids = reply.route.identity_frames();
    assert_eq!(built.to_frames(reply.format).unwrap(), reply.frames[ids..]);
}

#[test]
fn byteps_push_fields() {
    let f = load("byteps/push-w9");
    let m = f.message();
    assert_eq!(m.meta.sender, 9);
    assert_eq!(
        (m.meta.head, m.meta.timestamp, m.meta.app_id),
        (1_000_000, 0, 0)
    );
    assert!(m.meta.request && m.meta.push && !m.meta.pull && !m.meta.simple_app);
    assert_eq!(m.meta.data_types, [DataType::Uint64, DataType::Float]);
    assert_eq!((m.meta.data_size, m.meta.val_len), (64, 8));
    assert_eq!(m.meta.addr, 0x555a_e55c_19e0);
    let kv = kv(&f);
    assert_eq!(kv.keys, [0x100_0000, 0x100_0004, 0x100_0006, 0x100_0007]);
    assert_eq!(&floats(&kv.vals)[..2], [-3153.0, 1072.0]);
    assert!(kv.lens.is_none());
    let sent = load("byteps/push-sent");
    assert_eq!(sent.frames[..], f.frames[1..]);
}

#[test]
fn byteps_pull_responses_are_sums_of_pushes() {
    check_pull(
        &["byteps/push-w9", "byteps/push-w11"],
        "byteps/pull-request",
        "byteps/pull-response",
    );
    check_pull(
        &["byteps/push-lens-w9", "byteps/push-lens-w11"],
        "byteps/pull-lens-request",
        "byteps/pull-lens-response",
    );
    let lens = kv(&load("byteps/push-lens-w9")).lens.unwrap();
    assert_eq!(lens, [2, 1, 2, 1, 2, 1, 1]);
}

#[test]
fn byteps_push_response_is_response_meta() {
    let req = load("byteps/push-w9").message().meta;
    let reply = load("byteps/push-response");
    let env = reply.parse();
    assert_eq!((env.message.meta.recver, env.message.meta.sender), (9, 8));
    let built = response_meta(&req);
    assert_eq!((built.recver, built.sender), (9, EMPTY));
    assert_eq!(Format::Byteps.emit(&built).unwrap(), reply.frames[2]);
    let recv = load("byteps/push-response-recv").parse();
    assert_eq!(recv.message.meta.sender, 8);
    assert_eq!(recv.identities, [b"ps8".to_vec()]);
}

#[test]
fn byteps_control_messages() {
    let m = load("byteps/add-node-request").message().meta;
    assert_eq!(m.control.cmd, Command::AddNode);
    assert_eq!(
        (m.head, m.app_id, m.customer_id, m.timestamp),
        (EMPTY, EMPTY, EMPTY, 0)
    );
    let n = &m.control.nodes[0];
    assert_eq!(
        (n.role, n.id, n.hostname_str().as_str()),
        (Role::Worker, EMPTY, "127.0.0.1")
    );
    assert_eq!((n.aux_id, n.endpoint_name_len), (-1, 0));
    let reply = load("byteps/add-node-reply").message().meta;
    let ids: Vec<(Role, i32)> = reply.control.nodes.iter().map(|n| (n.role, n.id)).collect();
    assert_eq!(
        ids,
        [
            (Role::Worker, 9),
            (Role::Server, 8),
            (Role::Worker, 11),
            (Role::Scheduler, 1)
        ]
    );
    assert_eq!(reply.sender, 1);
    let b = load("byteps/barrier-request").message().meta;
    assert_eq!(
        (b.control.cmd, b.control.barrier_group, b.request),
        (Command::Barrier, 7, true)
    );
    let t = load("byteps/terminate").message().meta;
    assert_eq!((t.control.cmd, t.timestamp), (Command::Terminate, EMPTY));
    assert_eq!(
        load("byteps/barrier-reply").message().kv(),
        Err(Error::NotKv)
    );
}

#[test]
fn mxnet_dense_push_pull() {
    let f = load("mxnet/push-w9");
    let m = f.message();
    assert_eq!(m.meta.sender, 9);
    assert_eq!((m.meta.head, m.meta.timestamp, m.meta.priority), (0, 2, 0));
    assert!(m.meta.request && m.meta.push && !m.meta.pull);
    assert_eq!(
        m.meta.data_types,
        [DataType::Uint64, DataType::Other, DataType::Int32]
    );
    assert!(!m.meta.carries_data_size());
    let kv9 = kv(&f);
    assert_eq!(kv9.keys, [3]);
    assert_eq!(floats(&kv9.vals), [1.0, 2.0, 3.0]);
    assert_eq!(kv9.lens, Some(vec![12]));
    assert_eq!(floats(&kv(&load("mxnet/push-w11")).vals), [2.0, 4.0, 6.0]);
    let pull = load("mxnet/pull-request").message().meta;
    assert!(pull.request && !pull.push && pull.pull);
    check_pull(
        &["mxnet/push-w9", "mxnet/push-w11"],
        "mxnet/pull-request",
        "mxnet/pull-response",
    );
    assert_eq!(
        floats(&kv(&load("mxnet/pull-response")).vals),
        [3.0, 6.0, 9.0]
    );
}

#[test]
fn mxnet_push_response_is_response_meta() {
    let req = load("mxnet/push-w11").message().meta;
    let reply = load("mxnet/push-response");
    assert_eq!(
        Format::Protobuf.emit(&response_meta(&req)).unwrap(),
        reply.frames[0]
    );
}

#[test]
fn mxnet_row_sparse_quirks() {
    let init = kv(&load("mxnet/rsp-init-push"));
    assert_eq!(init.keys, [7, 7, 8, 9, 10, 11, 12]);
    assert_eq!(init.lens, Some(vec![0, 8, 8, 8, 8, 8, 8]));
    let w9 = kv(&load("mxnet/rsp-push-w9"));
    assert_eq!(w9.keys, [7, 8, 11]);
    assert_eq!(floats(&w9.vals), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(w9.lens, Some(vec![0, 8, 8]));
    let reply = load("mxnet/rsp-pull-response").message();
    let view = reply.kv().unwrap().unwrap();
    assert_eq!(view.keys().collect::<Vec<_>>(), [7, 8, 11]);
    assert_eq!(view.lens().unwrap().collect::<Vec<_>>(), [0, 2, 2]);
    assert_eq!(
        view.check_values(),
        Err(Error::LensSumMismatch { sum: 4, vals: 16 })
    );
    // As an answer: lens count floats (4 bytes each) of `char` vals.
    assert_eq!(view.answer_len_unit(), Ok(4));
    let rows: Vec<(u64, &[u8], Option<i32>)> = view.answer_entries().unwrap().collect();
    let shape: Vec<(u64, usize, Option<i32>)> =
        rows.iter().map(|&(k, b, l)| (k, b.len(), l)).collect();
    assert_eq!(shape, [(7, 0, Some(0)), (8, 8, Some(2)), (11, 8, Some(2))]);
    let joined: Vec<u8> = rows
        .iter()
        .flat_map(|(_, b, _)| b.iter().copied())
        .collect();
    assert_eq!(joined, view.vals());
}

#[test]
fn mxnet_control_and_simple_app() {
    let m = load("mxnet/add-node-reply").message().meta;
    assert_eq!(m.control.nodes.len(), 4);
    assert_eq!(m.control.nodes[3].role, Role::Scheduler);
    assert_eq!(m.control.nodes[3].customer_id, 388);
    let b = load("mxnet/barrier-reply").message().meta;
    assert_eq!(b.control.cmd, Command::Barrier);
    assert!(b.control.barrier_group < 0 || b.control.barrier_group > 7);
    let s = load("mxnet/simple-app-body").message();
    assert!(s.meta.simple_app && s.meta.request);
    assert!(s.meta.body.starts_with(b"ccopy_reg"));
    assert_eq!(s.meta.body.len(), 456);
    assert_eq!(s.kv(), Err(Error::NotKv));
    let t = load("mxnet/terminate").message().meta;
    assert_eq!(
        (t.control.cmd, t.timestamp, t.app_id),
        (Command::Terminate, EMPTY, EMPTY)
    );
}

#[test]
fn splitting_real_pushes() {
    for name in [
        "byteps/push-w9",
        "byteps/push-lens-w9",
        "mxnet/push-w9",
        "mxnet/rsp-push-w9",
        "mxnet/rsp-init-push",
    ] {
        let f = load(name);
        let msg = f.message();
        let ids = f.route.identity_frames();
        let none_hot = msg.split_push(|_| false).unwrap();
        assert!(none_hot.hot.is_empty());
        assert_eq!(
            none_hot.cold.to_frames(f.format).unwrap(),
            f.frames[ids..],
            "{name}"
        );
        let all_hot = msg.split_push(|_| true).unwrap();
        assert_eq!(all_hot.hot, kv(&f), "{name}");
        assert!(all_hot.cold.data.is_empty());

        let split = msg.split_push(|k| k % 2 == 0).unwrap();
        let cold_frames = split.cold.to_frames(f.format).unwrap();
        let refs: Vec<&[u8]> = cold_frames.iter().map(|x| &x[..]).collect();
        let cold = Message::parse(f.format, refs[0], &refs[1..]).unwrap();
        let cold_kv = cold.kv().unwrap().map(|v| v.to_owned());
        let whole = kv(&f);
        let mut merged: Vec<(u64, Vec<u8>)> = Vec::new();
        for part in [Some(&split.hot), cold_kv.as_ref()].into_iter().flatten() {
            let frames = part.frames();
            let r: Vec<&[u8]> = frames.iter().map(|x| &x[..]).collect();
            let v = zebra_pslite::KvView::parse(&part.data_types(), &r).unwrap();
            merged.extend(v.entries().unwrap().map(|(k, b, _)| (k, b.to_vec())));
        }
        merged.sort_by_key(|e| e.0);
        let frames = whole.frames();
        let r: Vec<&[u8]> = frames.iter().map(|x| &x[..]).collect();
        let v = zebra_pslite::KvView::parse(&whole.data_types(), &r).unwrap();
        let mut orig: Vec<(u64, Vec<u8>)> = v
            .entries()
            .unwrap()
            .map(|(k, b, _)| (k, b.to_vec()))
            .collect();
        orig.sort_by_key(|e| e.0);
        assert_eq!(merged, orig, "{name}");
    }
}

#[test]
fn synthesized_push_equals_the_real_one() {
    for name in [
        "byteps/push-w9",
        "byteps/push-lens-w11",
        "mxnet/push-w9",
        "mxnet/rsp-push-w11",
    ] {
        let f = load(name);
        let msg = f.message();
        let mut template = msg.meta.clone();
        template.timestamp = 99;
        let s = synthesize_push(&template, msg.meta.sender, msg.meta.timestamp, &kv(&f)).unwrap();
        let ids = f.route.identity_frames();
        assert_eq!(s.to_frames(f.format).unwrap(), f.frames[ids..], "{name}");
    }
}
