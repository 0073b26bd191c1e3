//! The worker and server sides driven through their hooks over the engine's `inproc://`
//! sockets (no network): what passes unchanged, what is kept for the app, what is
//! recorded, and what the statistics say.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use zebra_engine::consts::{opt, ZMQ_DEALER, ZMQ_POLLIN, ZMQ_ROUTER};
use zebra_engine::{Context, Error, Part, Socket};
use zebra_hotpath::{SwitchNode, SwitchNodeConfig};

use crate::parts::{keep_message, AppParts};
use crate::{Clock, Hook, JobEnv, Plan, Process};

/// The plan of a process of `role` in a job of `workers` workers and one server.
fn plan(vars: &[(&str, &str)], role: &str, workers: u16) -> Plan {
    let config = zebra_config::Config::from_vars(vars.iter().copied(), 1).unwrap();
    let job = JobEnv {
        role: Some(role.into()),
        num_worker: Some(workers.to_string()),
        num_server: Some("1".into()),
        ..JobEnv::default()
    };
    Plan::from_config(&config, &job).unwrap().expect("a plan")
}

/// A process of `role` in a job of `workers` workers and one server, planned from
/// `vars` (leaked: the hooks and side threads hold it for the life of the process).
fn process_of(vars: &[(&str, &str)], role: &str, workers: u16) -> &'static Process {
    let plan = Box::leak(Box::new(plan(vars, role, workers)));
    Box::leak(Box::new(Process::new(plan, Clock::new())))
}

/// A process of `role` in a job of two workers and one server.
fn process(vars: &[(&str, &str)], role: &str) -> &'static Process {
    process_of(vars, role, 2)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zebra-runtime-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The frames of a PS-lite message captured from BytePS (`rust/zebra-pslite/tests/data`).
fn captured(name: &str) -> Vec<Bytes> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zebra-pslite/tests/data")
        .join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap();
    let unhex = |hex: &str| -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("frame"))
        .map(|hex| Bytes::from(unhex(hex.trim())))
        .collect()
}

/// Sends `frames` as one message through `send`, part by part as the shim does.
fn send_parts(
    frames: &[Bytes],
    mut send: impl FnMut(Bytes, bool) -> Result<(), Error>,
) -> Result<(), Error> {
    for (i, f) in frames.iter().enumerate() {
        send(f.clone(), i + 1 < frames.len())?;
    }
    Ok(())
}

/// One whole message from `recv`.
fn recv_message(mut recv: impl FnMut() -> Result<Part, Error>) -> Vec<Bytes> {
    let mut frames = Vec::new();
    loop {
        let part = recv().unwrap();
        frames.push(part.data);
        if !part.more {
            return frames;
        }
    }
}

fn socket(ctx: &Context, socket_type: i32) -> Socket {
    ctx.socket(socket_type).unwrap()
}

#[test]
fn parts_kept_for_the_app_come_out_in_order_with_more() {
    let mut kept = AppParts::default();
    assert_eq!(kept.events(), 0);
    keep_message(&mut kept, vec![b"a".to_vec(), b"b".to_vec()]);
    keep_message(&mut kept, vec![b"c".to_vec()]);
    assert_eq!(kept.events(), ZMQ_POLLIN);
    let mut seen = Vec::new();
    while let Some(p) = kept.pop() {
        assert_eq!(kept.more, p.more);
        seen.push((p.data.to_vec(), p.more));
    }
    let want = [(b"a", true), (b"b", false), (b"c", false)];
    assert_eq!(seen, want.map(|(d, m)| (d.to_vec(), m)).to_vec());
    assert_eq!(kept.events(), 0);
}

#[test]
fn only_a_workers_dealer_and_a_servers_router_are_hooked() {
    let ctx = Context::new();
    let trace = scratch("roles").join("w%r.trace");
    let trace_var = ("ZEBRA_TRACE", trace.to_str().unwrap());
    let worker = process(&[("ZEBRA_ENABLE", "1"), trace_var], "worker");
    assert!(matches!(
        worker.hook(&socket(&ctx, ZMQ_DEALER), ZMQ_DEALER),
        Hook::Dealer(_)
    ));
    assert!(matches!(
        worker.hook(&socket(&ctx, ZMQ_ROUTER), ZMQ_ROUTER),
        Hook::None
    ));
    // A server without a switch (a trace alone) has nothing to merge.
    let server = process(&[("ZEBRA_ENABLE", "1"), trace_var], "server");
    assert!(matches!(
        server.hook(&socket(&ctx, ZMQ_ROUTER), ZMQ_ROUTER),
        Hook::None
    ));
    assert!(matches!(
        server.hook(&socket(&ctx, ZMQ_DEALER), ZMQ_DEALER),
        Hook::None
    ));
    // A worker's node id in a server process starts nothing.
    server.on_option(ZMQ_DEALER, opt::ROUTING_ID, b"ps9");
    assert_eq!(
        (server.report(), server.report_json()),
        (String::new(), "{}".into())
    );
    ctx.shutdown();
}

#[test]
fn a_workers_dealer_records_its_pushes_and_hides_zebra_messages_from_the_app() {
    let dir = scratch("worker");
    let trace = dir.join("w%r.trace");
    let p = process(
        &[
            ("ZEBRA_ENABLE", "1"),
            ("ZEBRA_TRACE", trace.to_str().unwrap()),
        ],
        "worker",
    );
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("inproc://zebra-runtime-worker").unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    let Hook::Dealer(d) = p.hook(&dealer, ZMQ_DEALER) else {
        panic!("a worker's DEALER is hooked");
    };
    dealer.set_option(opt::ROUTING_ID, b"ps9").unwrap();
    p.on_option(ZMQ_DEALER, opt::ROUTING_ID, b"ps9");
    dealer.connect("inproc://zebra-runtime-worker").unwrap();

    // A push leaves whole and unchanged, and its keys are recorded.
    let push = captured("byteps/push-sent");
    send_parts(&push, |f, more| d.send(f, more)).unwrap();
    let got = recv_message(|| router.recv(false));
    assert_eq!(got[0], Bytes::from_static(b"ps9"));
    assert_eq!(&got[1..], &push[..]);
    let path = dir.join("w0.trace");
    let report = p.report();
    assert!(
        report.contains(&format!("trace: 1 pushes recorded to {}", path.display())),
        "{report}"
    );
    assert!(
        p.report_json().starts_with("{\"trace\":{\"pushes\":1,"),
        "{}",
        p.report_json()
    );
    let records: Vec<_> = zebra_hotkeys::trace::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].worker, records[0].round), (0, 1));
    assert_eq!(records[0].pairs.len(), 4, "4 keys x 2 floats");
    assert!(records[0].pairs.iter().all(|&(_, values)| values == 2));

    // A one-frame Zebra message from the server is not the app's.
    router
        .send(Bytes::from_static(b"ps9"), true, false)
        .unwrap();
    router
        .send(Bytes::from_static(b"ZBPS not for the app"), false, false)
        .unwrap();
    let answer = [Bytes::from_static(b"meta"), Bytes::from_static(b"data")];
    router
        .send(Bytes::from_static(b"ps9"), true, false)
        .unwrap();
    send_parts(&answer, |f, more| router.send(f, more, false)).unwrap();
    let got = recv_message(|| d.recv(false));
    assert_eq!(got, answer.to_vec());
    assert!(!d.more());
    assert!(matches!(d.recv(true), Err(Error::Again)));
    ctx.shutdown();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_servers_router_gives_the_app_whole_messages_and_sends_its_answers_whole() {
    // Aggregation planned; the server side starts only with its node id, so until then
    // the ROUTER's pump passes every message through.
    let p = process(
        &[("ZEBRA_ENABLE", "1"), ("ZEBRA_SWITCH", "127.0.0.1:9")],
        "server",
    );
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    let Hook::Router(r) = p.hook(&router, ZMQ_ROUTER) else {
        panic!("a server's ROUTER is hooked with a switch");
    };
    router.bind("inproc://zebra-runtime-server").unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer.set_option(opt::ROUTING_ID, b"ps9").unwrap();
    dealer.connect("inproc://zebra-runtime-server").unwrap();

    let push = captured("byteps/push-sent");
    send_parts(&push, |f, more| dealer.send(f, more, false)).unwrap();
    let got = recv_message(|| r.recv(false));
    assert_eq!(got[0], Bytes::from_static(b"ps9"));
    assert_eq!(&got[1..], &push[..]);
    assert!(!r.more());
    assert_eq!(r.events(), 0);
    assert!(matches!(r.recv(true), Err(Error::Again)));

    let answer = [
        Bytes::from_static(b"ps9"),
        Bytes::from_static(b"meta"),
        Bytes::from_static(b"data"),
    ];
    send_parts(&answer, |f, more| r.send(f, more)).unwrap();
    assert_eq!(recv_message(|| dealer.recv(false)), answer[1..].to_vec());

    // The bytes the ROUTER received count once the server side runs; before, no report.
    assert_eq!(p.report(), "");
    assert_eq!(p.report_json(), "{}");

    // A terminated context ends the app's blocking receive.
    ctx.shutdown();
    assert!(matches!(r.recv(false), Err(Error::Terminated)));
}

/// A push of a worker to its server through the software switch on loopback UDP: the
/// worker's DEALER splits it (all four keys hot), the switch adds the hot pairs, and the
/// server's ROUTER gives the app the push again, whole, with the round's sums (one
/// worker: its own values). The only sockets are the hot path's UDP on 127.0.0.1.
#[test]
fn a_push_split_by_a_worker_reaches_the_server_app_whole_through_the_switch() {
    let dir = scratch("switch");
    let keys = dir.join("hot.keys");
    // The captured push's keys, 2 floats each.
    std::fs::write(&keys, "16777216 2\n16777220 2\n16777222 2\n16777223 2\n").unwrap();
    let keys = keys.to_str().unwrap();
    let vars = |switch: &'static str| {
        vec![
            ("ZEBRA_ENABLE", "1"),
            ("ZEBRA_SWITCH", switch),
            ("ZEBRA_HOT_KEYS", keys),
            ("ZEBRA_HOT", "file"),
            ("ZEBRA_PULL", "server"),
        ]
    };
    // The switch shares the plan's protocol settings.
    let proto = plan(&vars("127.0.0.1:9"), "server", 1)
        .aggregation
        .expect("an aggregation")
        .settings
        .proto;
    let switch =
        SwitchNode::start(SwitchNodeConfig::new("127.0.0.1:0".parse().unwrap(), proto)).unwrap();
    let at: &'static str = Box::leak(switch.local_addr().to_string().into_boxed_str());
    let server = process_of(&vars(at), "server", 1);
    let worker = process_of(&vars(at), "worker", 1);

    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    let Hook::Router(r) = server.hook(&router, ZMQ_ROUTER) else {
        panic!("a server's ROUTER is hooked with a switch");
    };
    router.bind("inproc://zebra-runtime-switch").unwrap();
    // The server learns its node id from the identity of its own DEALER.
    server.on_option(ZMQ_DEALER, opt::ROUTING_ID, b"ps8");
    let deadline = Instant::now() + Duration::from_secs(10);
    while switch.stats().servers.is_empty() {
        assert!(Instant::now() < deadline, "the server registers");
        std::thread::sleep(Duration::from_millis(10));
    }
    let dealer = socket(&ctx, ZMQ_DEALER);
    let Hook::Dealer(d) = worker.hook(&dealer, ZMQ_DEALER) else {
        panic!("a worker's DEALER is hooked");
    };
    dealer.set_option(opt::ROUTING_ID, b"ps9").unwrap();
    worker.on_option(ZMQ_DEALER, opt::ROUTING_ID, b"ps9");
    dealer.connect("inproc://zebra-runtime-switch").unwrap();

    let push = captured("byteps/push-sent");
    send_parts(&push, |f, more| d.send(f, more)).unwrap();
    let got = recv_message(|| loop {
        match r.recv(true) {
            Err(Error::Again) => {
                assert!(Instant::now() < deadline, "the push is released");
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    });
    assert_eq!(got[0], Bytes::from_static(b"ps9"));
    assert_eq!(&got[1..], &push[..]);
    let report = worker.report();
    assert!(report.starts_with("hot path: worker 0\n"), "{report}");
    let report = server.report();
    assert!(report.starts_with("hot path: server\n"), "{report}");
    assert_eq!(switch.stats().switch.added_pairs, 8, "{:?}", switch.stats());
    ctx.shutdown();
    switch.shutdown();
    std::fs::remove_dir_all(&dir).unwrap();
}
