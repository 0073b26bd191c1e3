//! Our sockets talking to our sockets over tcp, ipc and inproc.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;
use zebra_engine::consts::{opt, ZMQ_DEALER, ZMQ_PAIR, ZMQ_POLLIN, ZMQ_POLLOUT, ZMQ_ROUTER};
use zebra_engine::{Bytes, Context, Error};

/// A DEALER with an identity talks to a ROUTER: routing-id prefix on
/// receive, routing by it on send, multipart whole.
fn router_dealer(ctx: &Context, bind: &str) {
    let router = socket(ctx, ZMQ_ROUTER);
    set_int(&router, opt::ROUTER_MANDATORY, 1);
    router.bind(bind).unwrap();
    let endpoint = last_endpoint(&router);
    let dealer = socket(ctx, ZMQ_DEALER);
    dealer.set_option(opt::ROUTING_ID, b"ps9").unwrap();
    dealer.connect(&endpoint).unwrap();

    send_msg(&dealer, &[b"meta", b"", b"data"]);
    let got = recv_msg(&router);
    assert_eq!(strs(&got), [&b"ps9"[..], b"meta", b"", b"data"]);

    send_msg(&router, &[b"ps9", b"ps1", b"reply"]);
    assert_eq!(strs(&recv_msg(&dealer)), [&b"ps1"[..], b"reply"]);

    for i in 0..100u32 {
        send_msg(&dealer, &[&i.to_le_bytes(), b"x"]);
    }
    for i in 0..100u32 {
        assert_eq!(
            strs(&recv_msg(&router)),
            [&b"ps9"[..], &i.to_le_bytes(), b"x"]
        );
    }
    dealer.close();
    router.close();
}

#[test]
fn router_dealer_over_tcp_ipc_inproc() {
    init_log();
    let ctx = Context::new();
    router_dealer(&ctx, "tcp://127.0.0.1:*");
    router_dealer(&ctx, &ipc_path("rd"));
    router_dealer(&ctx, "inproc://rd");
    ctx.terminate().unwrap();
}

#[test]
fn pair_over_tcp_and_inproc() {
    init_log();
    let ctx = Context::new();
    for bind in ["tcp://127.0.0.1:*", "inproc://pair"] {
        let a = socket(&ctx, ZMQ_PAIR);
        a.bind(bind).unwrap();
        let b = socket(&ctx, ZMQ_PAIR);
        b.connect(&last_endpoint(&a)).unwrap();
        send_msg(&b, &[b"ping", b"1"]);
        assert_eq!(strs(&recv_msg(&a)), [&b"ping"[..], b"1"]);
        send_msg(&a, &[b"pong"]);
        assert_eq!(strs(&recv_msg(&b)), [&b"pong"[..]]);
        a.close();
        b.close();
    }
    ctx.terminate().unwrap();
}

#[test]
fn second_pair_peer_is_refused() {
    init_log();
    let ctx = Context::new();
    let a = socket(&ctx, ZMQ_PAIR);
    a.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&a);
    let b = socket(&ctx, ZMQ_PAIR);
    b.connect(&ep).unwrap();
    send_msg(&b, &[b"first"]);
    assert_eq!(strs(&recv_msg(&a)), [&b"first"[..]]);
    let c = socket(&ctx, ZMQ_PAIR);
    set_int(&c, opt::LINGER, 0);
    c.connect(&ep).unwrap();
    send_msg(&c, &[b"intruder"]);
    send_msg(&b, &[b"second"]);
    assert_eq!(strs(&recv_msg(&a)), [&b"second"[..]]);
    std::thread::sleep(Duration::from_millis(100));
    assert!(matches!(a.recv(true), Err(Error::Again)));
    for s in [a, b, c] {
        s.close();
    }
    ctx.terminate().unwrap();
}

#[test]
fn router_mandatory_and_silent_drop() {
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("inproc://mandatory").unwrap();
    router
        .send(Bytes::from_static(b"nobody"), true, false)
        .unwrap();
    router.send(Bytes::from_static(b"x"), false, false).unwrap();
    set_int(&router, opt::ROUTER_MANDATORY, 1);
    assert!(
        router.get_option(opt::ROUTER_MANDATORY).is_err(),
        "write only, as in libzmq"
    );
    let e = router
        .send(Bytes::from_static(b"nobody"), true, false)
        .unwrap_err();
    assert!(matches!(e, Error::HostUnreachable));
    assert_eq!(e.errno(), libc::EHOSTUNREACH);
    let dealer = ctx.socket(ZMQ_DEALER).unwrap();
    assert!(dealer
        .set_option(opt::ROUTER_MANDATORY, &1i32.to_ne_bytes())
        .is_err());
    router.close();
    dealer.close();
    ctx.terminate().unwrap();
}

#[test]
fn generated_routing_ids_are_five_bytes_and_route_back() {
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer.connect(&last_endpoint(&router)).unwrap();
    send_msg(&dealer, &[b"hi"]);
    let got = recv_msg(&router);
    assert_eq!(got[0].len(), 5);
    assert_eq!(got[0][0], 0);
    send_parts(&router, vec![got[0].clone(), Bytes::from_static(b"back")]).unwrap();
    assert_eq!(strs(&recv_msg(&dealer)), [&b"back"[..]]);
    router.close();
    dealer.close();
    ctx.terminate().unwrap();
}

#[test]
fn sndhwm_blocks_or_says_again() {
    init_log();
    let ctx = Context::new();
    let dealer = socket(&ctx, ZMQ_DEALER);
    set_int(&dealer, opt::SNDHWM, 5);
    set_int(&dealer, opt::LINGER, 0);
    dealer
        .connect(&format!("tcp://127.0.0.1:{}", free_port()))
        .unwrap();
    for _ in 0..5 {
        dealer.send(Bytes::from_static(b"m"), false, true).unwrap();
    }
    assert_eq!(dealer.events() & ZMQ_POLLOUT, 0);
    let e = dealer
        .send(Bytes::from_static(b"m"), false, true)
        .unwrap_err();
    assert!(matches!(e, Error::Again));
    assert_eq!(e.errno(), libc::EAGAIN);
    set_int(&dealer, opt::SNDTIMEO, 100);
    let t = Instant::now();
    assert!(matches!(
        dealer.send(Bytes::from_static(b"m"), false, false),
        Err(Error::Again)
    ));
    assert!(t.elapsed() >= Duration::from_millis(90));

    let lone = socket(&ctx, ZMQ_DEALER);
    assert!(matches!(
        lone.send(Bytes::from_static(b"m"), false, true),
        Err(Error::Again)
    ));
    dealer.close();
    lone.close();
    ctx.terminate().unwrap();
}

#[test]
fn connect_before_bind_over_tcp_and_inproc() {
    init_log();
    let ctx = Context::new();
    let port = free_port();
    let tcp = format!("tcp://127.0.0.1:{port}");
    for ep in [tcp.as_str(), "inproc://later"] {
        let dealer = socket(&ctx, ZMQ_DEALER);
        set_int(&dealer, opt::RECONNECT_IVL, 20);
        dealer.set_option(opt::ROUTING_ID, b"early").unwrap();
        dealer.connect(ep).unwrap();
        send_msg(&dealer, &[b"sent before bind"]);
        std::thread::sleep(Duration::from_millis(60));
        let router = socket(&ctx, ZMQ_ROUTER);
        router.bind(ep).unwrap();
        assert_eq!(
            strs(&recv_msg(&router)),
            [&b"early"[..], b"sent before bind"]
        );
        send_msg(&router, &[b"early", b"welcome"]);
        assert_eq!(strs(&recv_msg(&dealer)), [&b"welcome"[..]]);
        dealer.close();
        router.close();
    }
    ctx.terminate().unwrap();
}

#[test]
fn peer_restart_reconnects() {
    use zebra_engine::consts::event as ev;
    init_log();
    let ctx = Context::new();
    let port = free_port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let dealer = socket(&ctx, ZMQ_DEALER);
    set_int(&dealer, opt::RECONNECT_IVL, 20);
    dealer.set_option(opt::ROUTING_ID, b"w").unwrap();
    dealer
        .monitor(Some("inproc://restart"), i32::from(ev::DISCONNECTED))
        .unwrap();
    let watch = socket(&ctx, ZMQ_PAIR);
    watch.connect("inproc://restart").unwrap();
    dealer.connect(&ep).unwrap();
    for round in 0..3u8 {
        let server_ctx = Context::new();
        let router = socket(&server_ctx, ZMQ_ROUTER);
        set_int(&router, opt::LINGER, 0);
        router.bind(&ep).unwrap();
        send_msg(&dealer, &[&[round]]);
        assert_eq!(strs(&recv_msg(&router)), [&b"w"[..], &[round]]);
        send_msg(&router, &[b"w", b"ack"]);
        assert_eq!(strs(&recv_msg(&dealer)), [&b"ack"[..]]);
        router.close();
        server_ctx.terminate().unwrap();
        // What is written to a connection whose peer just died is lost (as
        // with libzmq): wait until the dealer has seen it go.
        assert_eq!(recv_msg(&watch)[0][..2], ev::DISCONNECTED.to_ne_bytes());
    }
    dealer.close();
    watch.close();
    ctx.terminate().unwrap();
}

#[test]
fn sixty_four_dealers_on_one_router() {
    init_log();
    let ctx = Context::new();
    ctx.set(zebra_engine::consts::ZMQ_IO_THREADS, 2).unwrap();
    let router = socket(&ctx, ZMQ_ROUTER);
    set_int(&router, opt::ROUTER_MANDATORY, 1);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);
    let dealers: Vec<_> = (0..64)
        .map(|i| {
            let d = socket(&ctx, ZMQ_DEALER);
            d.set_option(opt::ROUTING_ID, format!("ps{i}").as_bytes())
                .unwrap();
            d.connect(&ep).unwrap();
            d
        })
        .collect();
    for (i, d) in dealers.iter().enumerate() {
        send_msg(d, &[format!("hello {i}").as_bytes(), b"tail"]);
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..64 {
        let m = recv_msg(&router);
        let id = String::from_utf8(m[0].to_vec()).unwrap();
        assert_eq!(m[1], format!("hello {}", &id[2..]).as_bytes());
        assert!(seen.insert(id));
    }
    for i in 0..64 {
        send_msg(
            &router,
            &[format!("ps{i}").as_bytes(), format!("to {i}").as_bytes()],
        );
    }
    for (i, d) in dealers.iter().enumerate() {
        assert_eq!(recv_msg(d)[0], format!("to {i}").as_bytes());
    }
    for d in dealers {
        d.close();
    }
    router.close();
    ctx.terminate().unwrap();
}

#[test]
fn sixty_four_mib_message() {
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer.set_option(opt::ROUTING_ID, b"big").unwrap();
    dealer.connect(&last_endpoint(&router)).unwrap();
    let big: Bytes = (0..64u32 << 20)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    send_parts(&dealer, vec![Bytes::from_static(b"meta"), big.clone()]).unwrap();
    let got = recv_msg(&router);
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].len(), big.len());
    assert!(got[2] == big);
    send_parts(&router, vec![Bytes::from_static(b"big"), got[2].clone()]).unwrap();
    assert!(recv_msg(&dealer)[0] == big);
    dealer.close();
    router.close();
    ctx.terminate().unwrap();
}

#[test]
fn last_endpoint_reports_the_ephemeral_port() {
    init_log();
    let ctx = Context::new();
    let s = socket(&ctx, ZMQ_ROUTER);
    assert_eq!(s.get_option(opt::LAST_ENDPOINT).unwrap(), b"\0");
    s.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&s);
    let port: u16 = ep
        .strip_prefix("tcp://127.0.0.1:")
        .unwrap()
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let other = socket(&ctx, ZMQ_ROUTER);
    let e = other.bind(&ep).unwrap_err();
    assert_eq!(e.errno(), libc::EADDRINUSE);
    s.unbind(&ep).unwrap();
    other.bind(&ep).unwrap();
    assert_eq!(s.unbind(&ep).unwrap_err().errno(), libc::ENOENT);
    assert_eq!(
        s.disconnect("tcp://127.0.0.1:1").unwrap_err().errno(),
        libc::ENOENT
    );
    s.close();
    other.close();
    ctx.terminate().unwrap();
}

fn monitor_events(pair: &zebra_engine::Socket) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    while let Ok(p) = pair.recv(true) {
        assert!(p.more);
        assert_eq!(p.data.len(), 6);
        let event = u16::from_ne_bytes([p.data[0], p.data[1]]);
        let addr = pair.recv(true).unwrap();
        out.push((event, String::from_utf8(addr.data.to_vec()).unwrap()));
    }
    out
}

#[test]
fn monitor_reports_libzmq_events() {
    use zebra_engine::consts::event as ev;
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    let watcher = socket(&ctx, ZMQ_PAIR);
    watcher.connect("inproc://router-events").unwrap();
    router
        .monitor(Some("inproc://router-events"), ev::ALL)
        .unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);

    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer
        .monitor(Some("inproc://dealer-events"), ev::ALL)
        .unwrap();
    let dwatch = socket(&ctx, ZMQ_PAIR);
    dwatch.connect("inproc://dealer-events").unwrap();
    dealer.connect(&ep).unwrap();
    send_msg(&dealer, &[b"x"]);
    recv_msg(&router);
    dealer.close();

    let mut got = Vec::new();
    assert!(eventually(3000, || {
        got.extend(monitor_events(&watcher));
        got.iter().any(|e| e.0 == ev::DISCONNECTED)
    }));
    let kinds: Vec<u16> = got.iter().map(|e| e.0).collect();
    assert_eq!(
        kinds,
        [
            ev::LISTENING,
            ev::ACCEPTED,
            ev::HANDSHAKE_SUCCEEDED,
            ev::DISCONNECTED
        ]
    );
    assert!(got.iter().all(|e| e.1 == ep));

    let dkinds: Vec<u16> = monitor_events(&dwatch).iter().map(|e| e.0).collect();
    assert_eq!(
        &dkinds[..4],
        [
            ev::CONNECT_DELAYED,
            ev::CONNECTED,
            ev::HANDSHAKE_SUCCEEDED,
            ev::MONITOR_STOPPED
        ]
    );

    router.monitor(None, 0).unwrap();
    assert_eq!(
        monitor_events(&watcher)
            .iter()
            .map(|e| e.0)
            .collect::<Vec<_>>(),
        [ev::MONITOR_STOPPED]
    );
    let e = router
        .monitor(Some("tcp://127.0.0.1:1"), ev::ALL)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EPROTONOSUPPORT);
    for s in [router, watcher, dwatch] {
        s.close();
    }
    ctx.terminate().unwrap();
}

#[test]
fn terminate_wakes_blocked_calls_and_waits_for_close() {
    init_log();
    let ctx = Context::new();
    let s = ctx.socket(ZMQ_DEALER).unwrap();
    s.bind("inproc://blocked").unwrap();
    let t = {
        let s = s.clone();
        std::thread::spawn(move || {
            let e = s.recv(false).unwrap_err();
            assert_eq!(e.errno(), zebra_engine::consts::ETERM);
            assert!(matches!(
                s.send(Bytes::new(), false, false),
                Err(Error::Terminated)
            ));
            std::thread::sleep(Duration::from_millis(50));
            s.close();
        })
    };
    drop(s);
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    ctx.terminate().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(40));
    t.join().unwrap();
    assert!(matches!(ctx.socket(ZMQ_PAIR), Err(Error::Terminated)));
}

#[test]
fn linger_bounds_terminate_when_the_peer_is_gone() {
    init_log();
    for (linger, min, max) in [(0, 0, 500), (300, 250, 2000)] {
        let ctx = Context::new();
        let dealer = ctx.socket(ZMQ_DEALER).unwrap();
        set_int(&dealer, opt::LINGER, linger);
        dealer
            .connect(&format!("tcp://127.0.0.1:{}", free_port()))
            .unwrap();
        send_msg(&dealer, &[b"never delivered"]);
        dealer.close();
        let t = Instant::now();
        ctx.terminate().unwrap();
        let ms = t.elapsed().as_millis();
        assert!((min..max).contains(&ms), "linger {linger}: {ms} ms");
    }
}

#[test]
fn linger_flushes_pending_output_after_close() {
    init_log();
    let ctx = Context::new();
    let port = free_port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let dealer = ctx.socket(ZMQ_DEALER).unwrap();
    set_int(&dealer, opt::RECONNECT_IVL, 20);
    dealer.connect(&ep).unwrap();
    for i in 0..10u8 {
        send_msg(&dealer, &[&[i]]);
    }
    dealer.close();
    let server = Context::new();
    let router = socket(&server, ZMQ_ROUTER);
    router.bind(&ep).unwrap();
    for i in 0..10u8 {
        assert_eq!(recv_msg(&router)[1], [i][..]);
    }
    ctx.terminate().unwrap();
    router.close();
    server.terminate().unwrap();
}

#[test]
fn garbage_from_a_raw_stream_closes_only_that_connection() {
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);
    let good = socket(&ctx, ZMQ_DEALER);
    good.set_option(opt::ROUTING_ID, b"good").unwrap();
    good.connect(&ep).unwrap();
    send_msg(&good, &[b"before"]);
    assert_eq!(strs(&recv_msg(&router)), [&b"good"[..], b"before"]);

    let addr = ep.strip_prefix("tcp://").unwrap();
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = raw.read_to_end(&mut sink);
    assert!(sink.len() <= 64, "only (part of) our greeting came back");

    let mut half = std::net::TcpStream::connect(addr).unwrap();
    half.write_all(&[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 0])
        .unwrap();
    half.write_all(&[0xEE; 60]).unwrap();
    half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = half.read_to_end(&mut sink);

    send_msg(&good, &[b"after"]);
    assert_eq!(strs(&recv_msg(&router)), [&b"good"[..], b"after"]);
    good.close();
    router.close();
    ctx.terminate().unwrap();
}

/// A peer speaking ZMTP over a plain blocking stream, so that a test
/// decides how its bytes reach the wire (and whether it reads at all).
struct RawPeer {
    stream: std::net::TcpStream,
    zmtp: zebra_zmtp::Connection,
}

impl RawPeer {
    /// A DEALER connected to `addr`.
    fn connect(addr: &str, identity: &'static [u8]) -> RawPeer {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        RawPeer::over(stream, zebra_zmtp::SocketType::Dealer, identity)
    }

    /// Runs the handshake on `stream`.
    fn over(
        stream: std::net::TcpStream,
        socket_type: zebra_zmtp::SocketType,
        identity: &'static [u8],
    ) -> RawPeer {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let config = zebra_zmtp::Config::new(socket_type).with_identity(identity);
        let mut peer = RawPeer {
            stream,
            zmtp: zebra_zmtp::Connection::new(config).unwrap(),
        };
        let mut buf = [0u8; 512];
        while !peer.zmtp.is_handshake_done() {
            let out = peer.output();
            peer.stream.write_all(&out).unwrap();
            let n = peer.stream.read(&mut buf).unwrap();
            assert!(n > 0, "closed in the handshake");
            peer.zmtp.handle_input(&buf[..n]).unwrap();
        }
        let out = peer.output();
        peer.stream.write_all(&out).unwrap();
        peer
    }

    /// The bytes the ZMTP state has to send.
    fn output(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(chunk) = self.zmtp.poll_output() {
            out.extend_from_slice(&chunk);
        }
        out
    }

    /// A message's bytes on the wire.
    fn encode(&mut self, parts: Vec<Bytes>) -> Vec<u8> {
        self.zmtp.send_message(parts).unwrap();
        self.output()
    }

    fn send(&mut self, parts: Vec<Bytes>) {
        let wire = self.encode(parts);
        self.stream.write_all(&wire).unwrap();
    }
}

/// A large body that arrives in pieces, with pauses, is received whole
/// before anything follows it; a peer that closes inside a large body is
/// dropped, not waited for. (The reader asks the kernel to
/// wake it only once the rest of a large body is in: it must never wait
/// for more than the frame needs.)
#[test]
fn large_body_in_pieces_and_peer_closing_inside_one() {
    use zebra_engine::consts::event as ev;
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router
        .monitor(Some("inproc://pieces"), i32::from(ev::DISCONNECTED))
        .unwrap();
    let watch = socket(&ctx, ZMQ_PAIR);
    watch.connect("inproc://pieces").unwrap();
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);
    let addr = ep.strip_prefix("tcp://").unwrap();
    let body: Bytes = (0..(1u32 << 20) + 3)
        .map(|i| (i % 253) as u8)
        .collect::<Vec<u8>>()
        .into();

    let mut slow = RawPeer::connect(addr, b"slow");
    for _ in 0..8 {
        slow.send(vec![Bytes::from_static(b"warm"), body.clone()]);
        assert!(recv_msg(&router)[2] == body);
    }
    let wire = slow.encode(vec![Bytes::from_static(b"head"), body.clone()]);
    for piece in wire.chunks(100_000) {
        slow.stream.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let got = recv_msg(&router);
    assert_eq!(strs(&got[..2]), [&b"slow"[..], b"head"]);
    assert!(got[2] == body, "the body came whole and in place");
    slow.send(vec![Bytes::from_static(b"tail")]);
    assert_eq!(strs(&recv_msg(&router)), [&b"slow"[..], b"tail"]);

    let mut cut = RawPeer::connect(addr, b"cut");
    let wire = cut.encode(vec![body.clone()]);
    cut.stream.write_all(&wire[..wire.len() / 2]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(cut);
    assert_eq!(recv_msg(&watch)[0][..2], ev::DISCONNECTED.to_ne_bytes());

    slow.send(vec![Bytes::from_static(b"after")]);
    assert_eq!(strs(&recv_msg(&router)), [&b"slow"[..], b"after"]);
    router.close();
    watch.close();
    ctx.terminate().unwrap();
}

/// A sender of large messages to a peer that stops reading waits for the
/// wire once its kernel buffer is full, a bounded time per message, and
/// never when it asked not to block.
#[test]
fn sending_to_a_peer_that_does_not_read_waits_a_bounded_time() {
    init_log();
    let ctx = Context::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer
        .connect(&format!("tcp://{}", listener.local_addr().unwrap()))
        .unwrap();
    let (stream, _) = listener.accept().unwrap();
    let _deaf = RawPeer::over(stream, zebra_zmtp::SocketType::Router, b"");
    let body = Bytes::from(vec![3u8; 1 << 20]);
    let send_all = |dontwait: bool| {
        let start = Instant::now();
        for _ in 0..40 {
            dealer.send(body.clone(), false, dontwait).unwrap();
        }
        start.elapsed()
    };
    // The kernel's buffers on both sides fill first: on a loaded machine the
    // handshake and the I/O thread's first writes take their time, so send
    // one message at a time until a blocking send waits (at most 200 MiB,
    // far below the high-water mark).
    let primed = (0..200).any(|_| {
        let start = Instant::now();
        dealer.send(body.clone(), false, false).unwrap();
        let waited = start.elapsed() >= Duration::from_millis(1);
        if !waited {
            std::thread::sleep(Duration::from_millis(5));
        }
        waited
    });
    assert!(primed, "no blocking send waited for the wire");
    let blocking = send_all(false);
    let nonblocking = send_all(true);
    assert!(
        blocking >= Duration::from_millis(40),
        "sends waited for the wire: {blocking:?}"
    );
    assert!(
        blocking < Duration::from_secs(5),
        "each wait is bounded: {blocking:?}"
    );
    assert!(
        nonblocking < blocking / 2,
        "ZMQ_DONTWAIT sends do not wait: {nonblocking:?} against {blocking:?}"
    );
    set_int(&dealer, opt::LINGER, 0);
    dealer.close();
    ctx.terminate().unwrap();
}

/// Over ipc too: a Unix stream is watched for write space only while a write
/// waits for it, so the sender resumes only if that watch is armed.
#[test]
fn rcvhwm_pushes_back_and_loses_nothing() {
    rcvhwm_pushes_back("tcp://127.0.0.1:*");
    rcvhwm_pushes_back(&ipc_path("rcvhwm"));
}

fn rcvhwm_pushes_back(bind: &str) {
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    set_int(&router, opt::RCVHWM, 4);
    router.bind(bind).unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    set_int(&dealer, opt::SNDHWM, 4);
    dealer.connect(&last_endpoint(&router)).unwrap();
    let body = Bytes::from(vec![7u8; 256 * 1024]);
    let mut sent = 0u32;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match dealer.send(body.clone(), false, true) {
            Ok(()) => sent += 1,
            Err(Error::Again) if sent > 0 => break,
            Err(Error::Again) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "sender never blocked");
    }
    assert!(sent < 2000, "backpressure took {sent} messages");
    for _ in 0..sent {
        assert_eq!(recv_msg(&router)[1].len(), body.len());
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(matches!(router.recv(true), Err(Error::Again)));
    dealer.close();
    router.close();
    ctx.terminate().unwrap();
}

#[test]
fn ipc_bind_replaces_a_stale_socket_file() {
    init_log();
    let ep = ipc_path("stale");
    let path = ep.strip_prefix("ipc://").unwrap().to_owned();
    std::fs::write(&path, b"stale").unwrap();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind(&ep).unwrap();
    let dealer = socket(&ctx, ZMQ_DEALER);
    dealer.connect(&ep).unwrap();
    send_msg(&dealer, &[b"over ipc"]);
    assert_eq!(recv_msg(&router)[1], b"over ipc"[..]);
    dealer.close();
    router.close();
    ctx.terminate().unwrap();
    assert!(
        !std::path::Path::new(&path).exists(),
        "socket file removed on close"
    );
}

#[test]
fn context_options_limits_and_errors() {
    init_log();
    let ctx = Context::new();
    assert_eq!(ctx.get(zebra_engine::consts::ZMQ_IO_THREADS).unwrap(), 1);
    assert_eq!(
        ctx.get(zebra_engine::consts::ZMQ_MAX_SOCKETS).unwrap(),
        1023
    );
    ctx.set(zebra_engine::consts::ZMQ_MAX_SOCKETS, 2).unwrap();
    assert!(ctx.set(zebra_engine::consts::ZMQ_MAX_SOCKETS, 0).is_err());
    ctx.set(zebra_engine::consts::ZMQ_MAX_SOCKETS, 65536)
        .unwrap();
    ctx.set(zebra_engine::consts::ZMQ_MAX_SOCKETS, 2).unwrap();
    assert_eq!(ctx.set(99, 1).unwrap_err().errno(), libc::EINVAL);
    let a = ctx.socket(ZMQ_PAIR).unwrap();
    let b = ctx.socket(ZMQ_PAIR).unwrap();
    assert_eq!(ctx.socket(ZMQ_PAIR).unwrap_err().errno(), libc::EMFILE);
    b.close();
    let c = ctx.socket(ZMQ_PAIR).unwrap();
    let e = ctx.socket(1).unwrap_err();
    assert_eq!(e.errno(), libc::ENOTSUP);
    assert!(e.to_string().contains("PUB"));
    assert_eq!(ctx.socket(42).unwrap_err().errno(), libc::EINVAL);
    assert_eq!(get_int(&a, opt::TYPE), ZMQ_PAIR);
    assert_eq!(
        a.set_option(4242, &[0; 4]).unwrap_err().errno(),
        libc::EINVAL
    );
    assert_eq!(
        a.bind("foo://x").unwrap_err().errno(),
        libc::EPROTONOSUPPORT
    );
    assert_eq!(a.connect("tcp://nope").unwrap_err().errno(), libc::EINVAL);
    assert_eq!(
        a.bind("tcp://no-such-host.invalid:5555")
            .unwrap_err()
            .errno(),
        libc::ENODEV
    );
    a.close();
    assert_eq!(
        a.send(Bytes::new(), false, true).unwrap_err().errno(),
        libc::ENOTSOCK
    );
    assert_eq!(a.recv(true).unwrap_err().errno(), libc::ENOTSOCK);
    c.close();
    ctx.terminate().unwrap();
}

#[test]
fn events_and_rcvmore() {
    init_log();
    let ctx = Context::new();
    let a = socket(&ctx, ZMQ_PAIR);
    a.bind("inproc://events").unwrap();
    let b = socket(&ctx, ZMQ_PAIR);
    assert_eq!(b.events(), 0);
    b.connect("inproc://events").unwrap();
    assert_eq!(b.events(), ZMQ_POLLOUT);
    assert_eq!(a.events() & ZMQ_POLLIN, 0);
    send_msg(&b, &[b"1", b"2"]);
    assert_eq!(a.events() & ZMQ_POLLIN, ZMQ_POLLIN);
    assert_eq!(get_int(&a, opt::EVENTS) & ZMQ_POLLIN, ZMQ_POLLIN);
    a.recv(false).unwrap();
    assert_eq!(get_int(&a, opt::RCVMORE), 1);
    a.recv(false).unwrap();
    assert_eq!(get_int(&a, opt::RCVMORE), 0);
    assert!(matches!(a.recv(true), Err(Error::Again)));
    a.close();
    b.close();
    ctx.terminate().unwrap();
}

#[test]
fn close_from_another_thread_wakes_a_blocked_send() {
    init_log();
    let ctx = Context::new();
    let dealer = ctx.socket(ZMQ_DEALER).unwrap();
    set_int(&dealer, opt::SNDHWM, 1);
    set_int(&dealer, opt::LINGER, 0);
    dealer
        .connect(&format!("tcp://127.0.0.1:{}", free_port()))
        .unwrap();
    dealer
        .send(Bytes::from_static(b"fills the queue"), false, false)
        .unwrap();
    let blocked = {
        let dealer = dealer.clone();
        std::thread::spawn(move || dealer.send(Bytes::from_static(b"waits"), false, false))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!blocked.is_finished());
    dealer.close();
    assert!(matches!(blocked.join().unwrap(), Err(Error::NotSocket)));
    ctx.terminate().unwrap();
}

#[test]
fn poll_sleeps_until_a_socket_is_ready() {
    init_log();
    let ctx = Context::new();
    let a = socket(&ctx, ZMQ_PAIR);
    a.bind("tcp://127.0.0.1:*").unwrap();
    let b = socket(&ctx, ZMQ_PAIR);
    b.connect(&last_endpoint(&a)).unwrap();
    let idle = socket(&ctx, ZMQ_DEALER);
    let t = Instant::now();
    let got = zebra_engine::poll(&[(&a, ZMQ_POLLIN), (&idle, ZMQ_POLLIN)], 50).unwrap();
    assert_eq!(got, [0, 0]);
    assert!(t.elapsed() >= Duration::from_millis(45));
    let sender = {
        let b = b.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            send_msg(&b, &[b"wake"]);
        })
    };
    let got = zebra_engine::poll(&[(&idle, ZMQ_POLLIN), (&a, ZMQ_POLLIN)], -1).unwrap();
    assert_eq!(got, [0, ZMQ_POLLIN]);
    sender.join().unwrap();
    assert_eq!(
        zebra_engine::poll(&[(&b, ZMQ_POLLOUT)], 0).unwrap(),
        [ZMQ_POLLOUT]
    );
    idle.close();
    assert_eq!(
        zebra_engine::poll(&[(&idle, ZMQ_POLLIN)], 0)
            .unwrap_err()
            .errno(),
        libc::ENOTSOCK
    );
    a.close();
    b.close();
    ctx.terminate().unwrap();
}

#[test]
fn duplicate_routing_id_is_refused_unless_handover() {
    init_log();
    let ctx = Context::new();
    for handover in [false, true] {
        let router = socket(&ctx, ZMQ_ROUTER);
        set_int(&router, opt::ROUTER_HANDOVER, i32::from(handover));
        router.bind("tcp://127.0.0.1:*").unwrap();
        let ep = last_endpoint(&router);
        let first = socket(&ctx, ZMQ_DEALER);
        first.set_option(opt::ROUTING_ID, b"same").unwrap();
        first.connect(&ep).unwrap();
        send_msg(&first, &[b"from first"]);
        assert_eq!(recv_msg(&router)[1], b"from first"[..]);
        let second = socket(&ctx, ZMQ_DEALER);
        set_int(&second, opt::LINGER, 0);
        set_int(&second, opt::RECONNECT_IVL, 20);
        second.set_option(opt::ROUTING_ID, b"same").unwrap();
        second.connect(&ep).unwrap();
        send_msg(&second, &[b"from second"]);
        if handover {
            assert_eq!(recv_msg(&router)[1], b"from second"[..]);
            send_msg(&router, &[b"same", b"to the newest"]);
            assert_eq!(recv_msg(&second)[0], b"to the newest"[..]);
        } else {
            std::thread::sleep(Duration::from_millis(150));
            assert!(matches!(router.recv(true), Err(Error::Again)));
            send_msg(&router, &[b"same", b"to the first"]);
            assert_eq!(recv_msg(&first)[0], b"to the first"[..]);
            first.close();
            // What the second peer wrote on refused connections is gone (libzmq
            // would not read it either); once the first has left it gets in.
            assert!(eventually(5000, || {
                send_msg(&second, &[b"retry"]);
                std::thread::sleep(Duration::from_millis(20));
                matches!(router.recv(true), Ok(p) if &p.data[..] == b"same")
            }));
        }
        for s in [router, first, second] {
            s.close();
        }
    }
    ctx.terminate().unwrap();
}

#[test]
fn unbind_closes_the_listener_and_its_connections() {
    use zebra_engine::consts::event as ev;
    init_log();
    let ctx = Context::new();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&router);
    let dealer = socket(&ctx, ZMQ_DEALER);
    set_int(&dealer, opt::LINGER, 0);
    dealer
        .monitor(Some("inproc://unbind"), i32::from(ev::DISCONNECTED))
        .unwrap();
    let watch = socket(&ctx, ZMQ_PAIR);
    watch.connect("inproc://unbind").unwrap();
    dealer.connect(&ep).unwrap();
    send_msg(&dealer, &[b"x"]);
    recv_msg(&router);
    router.unbind(&ep).unwrap();
    assert_eq!(recv_msg(&watch)[0][..2], ev::DISCONNECTED.to_ne_bytes());
    let addr = ep.strip_prefix("tcp://").unwrap();
    assert!(std::net::TcpStream::connect(addr).is_err());
    for s in [router, dealer, watch] {
        s.close();
    }
    ctx.terminate().unwrap();
}

/// Many senders at once, mixed sizes, over tcp, ipc and inproc: every
/// message arrives once, whole, in per-sender order.
#[test]
fn concurrent_senders_keep_order_and_lose_nothing() {
    init_log();
    let ctx = Context::new();
    ctx.set(zebra_engine::consts::ZMQ_IO_THREADS, 2).unwrap();
    let router = socket(&ctx, ZMQ_ROUTER);
    router.bind("tcp://127.0.0.1:*").unwrap();
    let tcp = last_endpoint(&router);
    let ipc = ipc_path("concurrent");
    router.bind(&ipc).unwrap();
    router.bind("inproc://concurrent").unwrap();
    const PER: u32 = 1500;
    let senders: Vec<_> = (0..6u32)
        .map(|i| {
            let ep =
                [tcp.clone(), ipc.clone(), "inproc://concurrent".into()][i as usize % 3].clone();
            let ctx = ctx.clone();
            std::thread::spawn(move || {
                let d = socket(&ctx, ZMQ_DEALER);
                d.set_option(opt::ROUTING_ID, &i.to_le_bytes()).unwrap();
                d.connect(&ep).unwrap();
                for n in 0..PER {
                    let size = [0usize, 7, 100, 9000, 70_000][(n % 5) as usize];
                    send_parts(
                        &d,
                        vec![
                            Bytes::copy_from_slice(&n.to_le_bytes()),
                            Bytes::from(vec![n as u8; size]),
                        ],
                    )
                    .unwrap();
                }
                d
            })
        })
        .collect();
    let mut next = [0u32; 6];
    for _ in 0..6 * PER {
        let m = recv_msg(&router);
        assert_eq!(m.len(), 3);
        let who = u32::from_le_bytes(m[0][..].try_into().unwrap()) as usize;
        let n = u32::from_le_bytes(m[1][..].try_into().unwrap());
        assert_eq!(n, next[who], "sender {who}");
        next[who] += 1;
        assert!(m[2].iter().all(|&b| b == n as u8));
    }
    for t in senders {
        t.join().unwrap().close();
    }
    router.close();
    ctx.terminate().unwrap();
}

/// Large and small messages interleaved, echoed back over tcp and ipc:
/// bodies that arrive in one read, bodies read straight from the stream,
/// writes the kernel takes in part. Every byte comes back in place.
#[test]
fn large_and_small_messages_echo_intact() {
    init_log();
    let ctx = Context::new();
    for bind in ["tcp://127.0.0.1:*".to_owned(), ipc_path("echo")] {
        let router = socket(&ctx, ZMQ_ROUTER);
        router.bind(&bind).unwrap();
        let endpoint = last_endpoint(&router);
        let dealer = socket(&ctx, ZMQ_DEALER);
        dealer.set_option(opt::ROUTING_ID, b"echo").unwrap();
        dealer.connect(&endpoint).unwrap();
        let sizes = [
            5usize,
            20_000,
            1 << 20,
            0,
            100,
            300_001,
            65_536,
            3 << 20,
            17,
        ];
        let body = |n: usize| -> Bytes {
            let size = sizes[n % sizes.len()];
            (0..size)
                .map(|i| (i as u32).wrapping_mul(31).wrapping_add(n as u32) as u8)
                .collect::<Vec<u8>>()
                .into()
        };
        const ROUNDS: usize = 60;
        let echo = std::thread::spawn(move || {
            for _ in 0..ROUNDS {
                let m = recv_msg(&router);
                send_parts(&router, m).unwrap();
            }
            router
        });
        for n in 0..ROUNDS {
            let head = Bytes::copy_from_slice(&(n as u32).to_le_bytes());
            send_parts(&dealer, vec![head, body(n)]).unwrap();
        }
        for n in 0..ROUNDS {
            let m = recv_msg(&dealer);
            assert_eq!(m.len(), 2);
            assert_eq!(&m[0][..], &(n as u32).to_le_bytes());
            assert!(m[1] == body(n), "message {n} ({} bytes)", m[1].len());
        }
        echo.join().unwrap().close();
        dealer.close();
    }
    ctx.terminate().unwrap();
}
