//! Our sockets against the real libzmq (the system's libzmq.so.5 through
//! the `zmq` crate).

mod common;

use common::*;
use zebra_engine::consts::{opt, ZMQ_DEALER, ZMQ_PAIR, ZMQ_ROUTER};
use zebra_engine::{Bytes, Context};

fn libzmq_socket(ctx: &zmq::Context, t: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(t).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(0).unwrap();
    s
}

fn big_message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 253) as u8).collect()
}

#[test]
fn libzmq_is_4_3() {
    let (major, minor, _) = zmq::version();
    assert_eq!((major, minor), (4, 3));
}

#[test]
fn our_router_with_libzmq_dealers() {
    init_log();
    let ctx = Context::new();
    let zctx = zmq::Context::new();
    for bind in ["tcp://127.0.0.1:*", &ipc_path("interop-router")] {
        let router = socket(&ctx, ZMQ_ROUTER);
        set_int(&router, opt::ROUTER_MANDATORY, 1);
        router.bind(bind).unwrap();
        let ep = last_endpoint(&router);

        let dealer = libzmq_socket(&zctx, zmq::DEALER);
        dealer.set_identity(b"ps11").unwrap();
        dealer.connect(&ep).unwrap();
        dealer
            .send_multipart([&b"meta"[..], b"", b"payload"], 0)
            .unwrap();
        assert_eq!(
            strs(&recv_msg(&router)),
            [&b"ps11"[..], b"meta", b"", b"payload"]
        );
        send_msg(&router, &[b"ps11", b"ps1", b"reply"]);
        assert_eq!(
            dealer.recv_multipart(0).unwrap(),
            [b"ps1".to_vec(), b"reply".to_vec()]
        );

        let anonymous = libzmq_socket(&zctx, zmq::DEALER);
        anonymous.connect(&ep).unwrap();
        anonymous.send("who am i", 0).unwrap();
        let got = recv_msg(&router);
        assert_eq!(got[0].len(), 5);
        send_parts(&router, vec![got[0].clone(), Bytes::from_static(b"you")]).unwrap();
        assert_eq!(anonymous.recv_bytes(0).unwrap(), b"you");
        router.close();
    }
    ctx.terminate().unwrap();
}

#[test]
fn our_dealer_with_a_libzmq_router() {
    init_log();
    let ctx = Context::new();
    let zctx = zmq::Context::new();
    let router = libzmq_socket(&zctx, zmq::ROUTER);
    router.set_router_mandatory(true).unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = router.get_last_endpoint().unwrap().unwrap();

    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer.set_option(opt::ROUTING_ID, b"ps9").unwrap();
    dealer.connect(&ep).unwrap();
    for i in 0..50u32 {
        send_msg(&dealer, &[&i.to_le_bytes(), b"", b"data"]);
    }
    for i in 0..50u32 {
        let got = router.recv_multipart(0).unwrap();
        assert_eq!(
            got,
            [
                b"ps9".to_vec(),
                i.to_le_bytes().to_vec(),
                vec![],
                b"data".to_vec()
            ]
        );
    }
    router
        .send_multipart([&b"ps9"[..], b"ps1", b"answer"], 0)
        .unwrap();
    assert_eq!(strs(&recv_msg(&dealer)), [&b"ps1"[..], b"answer"]);
    dealer.close();
    ctx.terminate().unwrap();
}

#[test]
fn our_pair_with_a_libzmq_pair() {
    init_log();
    let ctx = Context::new();
    let zctx = zmq::Context::new();
    let theirs = libzmq_socket(&zctx, zmq::PAIR);
    theirs.bind("tcp://127.0.0.1:*").unwrap();
    let ours = socket(&ctx, ZMQ_PAIR);
    ours.connect(&theirs.get_last_endpoint().unwrap().unwrap())
        .unwrap();
    send_msg(&ours, &[b"a", b"b"]);
    assert_eq!(
        theirs.recv_multipart(0).unwrap(),
        [b"a".to_vec(), b"b".to_vec()]
    );
    theirs.send("c", 0).unwrap();
    assert_eq!(strs(&recv_msg(&ours)), [&b"c"[..]]);
    ours.close();
    ctx.terminate().unwrap();
}

#[test]
fn sixty_four_mib_both_ways_with_libzmq() {
    init_log();
    let ctx = Context::new();
    let zctx = zmq::Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = libzmq_socket(&zctx, zmq::DEALER);
    dealer.set_identity(b"big").unwrap();
    dealer.connect(&last_endpoint(&router)).unwrap();

    let big = big_message(64 << 20);
    dealer.send_multipart([&b"meta"[..], &big], 0).unwrap();
    let got = recv_msg(&router);
    assert_eq!(got.len(), 3);
    assert!(got[2][..] == big[..]);
    send_parts(
        &router,
        vec![
            Bytes::from_static(b"big"),
            Bytes::from_static(b"meta"),
            got[2].clone(),
        ],
    )
    .unwrap();
    let back = dealer.recv_multipart(0).unwrap();
    assert_eq!(back.len(), 2);
    assert!(back[1] == big);
    router.close();
    ctx.terminate().unwrap();
}

#[test]
fn many_libzmq_dealers_on_our_router() {
    init_log();
    let ctx = Context::new();
    ctx.set(zebra_engine::consts::ZMQ_IO_THREADS, 2).unwrap();
    let zctx = zmq::Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    set_int(&router, opt::ROUTER_MANDATORY, 1);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);
    let dealers: Vec<zmq::Socket> = (0..48)
        .map(|i| {
            let d = libzmq_socket(&zctx, zmq::DEALER);
            d.set_identity(format!("ps{i}").as_bytes()).unwrap();
            d.connect(&ep).unwrap();
            d
        })
        .collect();
    for round in 0..5u8 {
        for d in &dealers {
            d.send_multipart([&[round][..], b"x"], 0).unwrap();
        }
        let mut ids = std::collections::HashSet::new();
        for _ in 0..dealers.len() {
            let m = recv_msg(&router);
            assert_eq!(m[1], [round][..]);
            assert!(ids.insert(m[0].clone()));
            send_parts(&router, vec![m[0].clone(), m[0].clone()]).unwrap();
        }
        for (i, d) in dealers.iter().enumerate() {
            assert_eq!(d.recv_bytes(0).unwrap(), format!("ps{i}").as_bytes());
        }
    }
    router.close();
    ctx.terminate().unwrap();
}

#[test]
fn libzmq_dealer_reconnects_to_our_restarted_router() {
    init_log();
    let zctx = zmq::Context::new();
    let dealer = libzmq_socket(&zctx, zmq::DEALER);
    dealer.set_identity(b"w").unwrap();
    dealer.set_reconnect_ivl(20).unwrap();
    dealer
        .monitor("inproc://restart", zmq::SocketEvent::DISCONNECTED as i32)
        .unwrap();
    let watch = libzmq_socket(&zctx, zmq::PAIR);
    watch.connect("inproc://restart").unwrap();
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    dealer.connect(&ep).unwrap();
    for round in 0..2u8 {
        let ctx = Context::new();
        let router = socket(&ctx, ZMQ_ROUTER);
        set_int(&router, opt::LINGER, 0);
        router.bind(&ep).unwrap();
        dealer.send(&[round][..], 0).unwrap();
        assert_eq!(strs(&recv_msg(&router)), [&b"w"[..], &[round]]);
        router.close();
        ctx.terminate().unwrap();
        let event = watch.recv_multipart(0).unwrap();
        assert_eq!(
            u16::from_ne_bytes([event[0][0], event[0][1]]),
            zmq::SocketEvent::DISCONNECTED as u16
        );
    }
}

#[test]
fn libzmq_monitor_sees_our_handshake() {
    init_log();
    let ctx = Context::new();
    let zctx = zmq::Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = libzmq_socket(&zctx, zmq::DEALER);
    dealer
        .monitor("inproc://m", zmq::SocketEvent::ALL as i32)
        .unwrap();
    let watch = libzmq_socket(&zctx, zmq::PAIR);
    watch.connect("inproc://m").unwrap();
    dealer.connect(&last_endpoint(&router)).unwrap();
    let mut saw_handshake = false;
    for _ in 0..10 {
        let frames = watch.recv_multipart(0).unwrap();
        let event = u16::from_ne_bytes([frames[0][0], frames[0][1]]);
        if event == zmq::SocketEvent::HANDSHAKE_SUCCEEDED as u16 {
            saw_handshake = true;
            break;
        }
    }
    assert!(saw_handshake);
    router.close();
    ctx.terminate().unwrap();
}
