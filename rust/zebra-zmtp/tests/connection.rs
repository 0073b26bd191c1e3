//! Two connections wired back to back.

mod common;

use bytes::Bytes;
use common::{conn, connected, events, output, pump};
use zebra_zmtp::wire::{Command, GreetingRepr, Mechanism, Metadata};
use zebra_zmtp::{Config, Connection, Error, Event, SocketType, Version};

fn msg(parts: &[&[u8]]) -> Vec<Bytes> {
    parts.iter().map(|p| Bytes::copy_from_slice(p)).collect()
}

#[test]
fn handshake_reports_peer_type_identity_and_version() {
    let mut a = conn(SocketType::Dealer, b"worker-7");
    let mut b = conn(SocketType::Router, b"");
    assert!(!a.is_handshake_done());
    pump(&mut a, &mut b).unwrap();
    assert!(a.is_handshake_done() && b.is_handshake_done());
    match &events(&mut b)[..] {
        [Event::HandshakeDone(p)] => {
            assert_eq!(p.socket_type, SocketType::Dealer);
            assert_eq!(p.identity, Bytes::from_static(b"worker-7"));
            assert_eq!(p.version, Version::V3_1);
            assert_eq!(
                p.metadata.get("socket-type"),
                Some(&Bytes::from_static(b"DEALER"))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.peer().unwrap().identity, "worker-7");
    assert_eq!(a.peer().unwrap().socket_type, SocketType::Router);
    assert_eq!(a.config().socket_type, SocketType::Dealer);
}

#[test]
fn multipart_both_ways_for_every_pslite_pairing() {
    use SocketType::*;
    for (ta, tb) in [
        (Router, Dealer),
        (Dealer, Router),
        (Router, Router),
        (Dealer, Dealer),
        (Pair, Pair),
    ] {
        let (mut a, mut b) = connected(ta, tb);
        let m1 = msg(&[b"", b"meta", &[0u8; 255], &[1u8; 256], b"last"]);
        let m2 = msg(&[b"single"]);
        let m3 = msg(&[b""]);
        a.send_message(m1.clone()).unwrap();
        a.send_message(m2.clone()).unwrap();
        b.send_message(m3.clone()).unwrap();
        pump(&mut a, &mut b).unwrap();
        assert_eq!(
            events(&mut b),
            vec![Event::Message(m1), Event::Message(m2)],
            "{ta}-{tb}"
        );
        assert_eq!(events(&mut a), vec![Event::Message(m3)], "{ta}-{tb}");
    }
}

#[test]
fn messages_sent_before_the_handshake_are_held_then_sent_in_order() {
    let mut a = conn(SocketType::Dealer, b"a");
    let mut b = conn(SocketType::Router, b"");
    for i in 0..5u8 {
        a.send_message([vec![i], vec![i; 1000]]).unwrap();
    }
    assert_eq!(a.held_messages(), 5);
    let greeting_only = output(&mut a);
    assert_eq!(greeting_only.len(), 64);
    b.handle_input(&greeting_only).unwrap();
    pump(&mut a, &mut b).unwrap();
    assert_eq!(a.held_messages(), 0);
    let ev = events(&mut b);
    assert!(matches!(ev[0], Event::HandshakeDone(_)));
    for (i, e) in ev[1..].iter().enumerate() {
        let i = i as u8;
        assert_eq!(
            *e,
            Event::Message(vec![vec![i].into(), vec![i; 1000].into()])
        );
    }
    assert_eq!(ev.len(), 6);
}

#[test]
fn incompatible_socket_types_are_rejected() {
    use SocketType::*;
    for (ta, tb) in [(Router, Pair), (Pair, Dealer), (Dealer, Req), (Push, Push)] {
        let mut a = conn(ta, b"");
        let mut b = conn(tb, b"");
        let err = Error::IncompatibleSocketType {
            ours: tb.name(),
            peer: ta.name(),
        };
        assert_eq!(pump(&mut a, &mut b), Err(err.clone()));
        assert!(b.is_closed());
        assert_eq!(b.error(), Some(&err));
        assert_eq!(b.handle_input(b"more"), Err(err));
        assert_eq!(b.send_message([&b"x"[..]]), Err(Error::Closed));
        assert!(!events(&mut b)
            .iter()
            .any(|e| matches!(e, Event::HandshakeDone(_))));
    }
}

#[test]
fn ping_is_answered_with_pong_carrying_the_context() {
    let (mut a, mut b) = connected(SocketType::Dealer, SocketType::Router);
    a.send_ping(25, b"0123456789abcdef").unwrap();
    pump(&mut a, &mut b).unwrap();
    assert_eq!(
        events(&mut b),
        vec![Event::Ping {
            ttl_deciseconds: 25
        }]
    );
    assert_eq!(
        events(&mut a),
        vec![Event::Pong {
            context: Bytes::from_static(b"0123456789abcdef")
        }]
    );
    assert_eq!(a.send_ping(1, &[0; 17]), Err(Error::PingContextTooLong(17)));
}

#[test]
fn long_ping_context_is_truncated_in_the_pong_as_libzmq_does() {
    let (mut a, _) = connected(SocketType::Dealer, SocketType::Router);
    a.handle_input(b"\x04\x19\x04PING\x00\x01abcdefghijklmnopqr")
        .unwrap();
    assert_eq!(output(&mut a), b"\x04\x15\x04PONGabcdefghijklmnop");
}

#[test]
fn ping_before_handshake_is_refused_locally() {
    let mut a = conn(SocketType::Dealer, b"");
    assert_eq!(a.send_ping(1, b""), Err(Error::PingUnsupported));
}

fn peer_bytes(version_minor: u8, ready: &Command) -> Vec<u8> {
    let mut g = GreetingRepr::ours(0, false);
    g.minor = version_minor;
    let mut out = g.to_bytes().to_vec();
    let mut buf = bytes::BytesMut::new();
    ready.emit_frame(&mut buf).unwrap();
    out.extend_from_slice(&buf);
    out
}

fn ready(t: SocketType) -> Command {
    Command::Ready(Metadata::for_socket(t, &Bytes::new()))
}

#[test]
fn zmtp_3_0_peer() {
    let mut c = conn(SocketType::Router, b"");
    c.handle_input(&peer_bytes(0, &ready(SocketType::Dealer)))
        .unwrap();
    assert_eq!(c.peer().unwrap().version, Version::V3_0);
    assert_eq!(c.send_ping(1, b""), Err(Error::PingUnsupported));
    output(&mut c);
    c.handle_input(b"\x04\x07\x04PING\x00\x00").unwrap();
    assert_eq!(output(&mut c), b"\x04\x05\x04PONG");
}

#[test]
fn newer_peer_falls_back_to_3_1() {
    let mut c = conn(SocketType::Router, b"");
    let mut bytes = peer_bytes(9, &ready(SocketType::Dealer));
    bytes[10] = 4;
    c.handle_input(&bytes).unwrap();
    assert_eq!(c.peer().unwrap().version, Version::V3_1);
}

#[test]
fn unknown_commands_and_properties_are_tolerated() {
    let mut meta = Metadata::for_socket(SocketType::Dealer, &Bytes::from_static(b"id"));
    meta.push("X-Hello", Bytes::from_static(b"world")).unwrap();
    meta.push("Resource", Bytes::new()).unwrap();
    let mut c = conn(SocketType::Router, b"");
    c.handle_input(&peer_bytes(1, &Command::Ready(meta)))
        .unwrap();
    c.handle_input(b"\x04\x0a\x09SUBSCRIBE").unwrap();
    c.handle_input(b"\x00\x02hi").unwrap();
    let ev = events(&mut c);
    match &ev[..] {
        [Event::HandshakeDone(p), Event::Message(m)] => {
            assert_eq!(
                p.metadata.get("x-hello"),
                Some(&Bytes::from_static(b"world"))
            );
            assert_eq!(p.identity, "id");
            assert_eq!(m, &vec![Bytes::from_static(b"hi")]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn commands_between_parts_of_a_message_do_not_split_it() {
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    a.handle_input(b"\x01\x01a\x04\x07\x04PING\x00\x00\x00\x01b")
        .unwrap();
    assert_eq!(
        events(&mut a),
        vec![
            Event::Ping { ttl_deciseconds: 0 },
            Event::Message(vec!["a".into(), "b".into()])
        ]
    );
}

#[test]
fn peer_error_closes_the_connection() {
    let mut c = conn(SocketType::Dealer, b"");
    let mut bytes = peer_bytes(
        1,
        &Command::Error {
            reason: Bytes::from_static(b"not allowed"),
        },
    );
    bytes.extend_from_slice(b"garbage after ERROR is ignored");
    c.handle_input(&bytes).unwrap();
    assert!(c.is_closed());
    assert_eq!(c.error(), None);
    assert_eq!(
        events(&mut c),
        vec![Event::PeerError {
            reason: Bytes::from_static(b"not allowed")
        }]
    );
    assert_eq!(c.handle_input(b"\xff"), Ok(()));
    assert_eq!(c.handle_eof(), Ok(()));
    assert_eq!(c.send_message([&b"x"[..]]), Err(Error::Closed));
}

#[test]
fn peer_error_after_handshake() {
    let (mut a, _) = connected(SocketType::Pair, SocketType::Pair);
    a.handle_input(b"\x04\x09\x05ERROR\x02no").unwrap();
    assert_eq!(
        events(&mut a),
        vec![Event::PeerError {
            reason: Bytes::from_static(b"no")
        }]
    );
    assert!(a.is_closed());
}

#[test]
fn eof_handling() {
    let (mut a, _) = connected(SocketType::Pair, SocketType::Pair);
    assert_eq!(a.handle_eof(), Ok(()));
    assert!(a.is_closed());

    let (mut a, _) = connected(SocketType::Pair, SocketType::Pair);
    a.handle_input(b"\x01\x01a").unwrap();
    assert_eq!(
        a.handle_eof(),
        Err(Error::UnexpectedEof("a multipart message"))
    );
    assert!(events(&mut a).is_empty());

    let (mut a, _) = connected(SocketType::Pair, SocketType::Pair);
    a.handle_input(b"\x00\x05ab").unwrap();
    assert_eq!(a.handle_eof(), Err(Error::UnexpectedEof("a frame")));

    let mut c = conn(SocketType::Pair, b"");
    c.handle_input(&[0xFF, 0, 0]).unwrap();
    assert_eq!(c.handle_eof(), Err(Error::UnexpectedEof("the greeting")));
    assert_eq!(
        c.handle_input(b""),
        Err(Error::UnexpectedEof("the greeting"))
    );

    let mut c = conn(SocketType::Pair, b"");
    c.handle_input(&GreetingRepr::ours(0, false).to_bytes())
        .unwrap();
    assert_eq!(c.handle_eof(), Err(Error::UnexpectedEof("the handshake")));
}

#[test]
fn empty_message_is_refused() {
    let (mut a, _) = connected(SocketType::Pair, SocketType::Pair);
    assert_eq!(
        a.send_message(Vec::<Bytes>::new()),
        Err(Error::EmptyMessage)
    );
}

#[test]
fn identity_longer_than_255_is_refused() {
    let r = Connection::new(Config::new(SocketType::Dealer).with_identity(vec![1u8; 256]));
    assert_eq!(r.err(), Some(Error::IdentityTooLong(256)));
    let r = Connection::new(Config::new(SocketType::Dealer).with_identity(vec![1u8; 255]));
    assert!(r.is_ok());
}

#[test]
fn max_message_size_semantics() {
    let limited = |n: i64| {
        let mut a = Connection::new(Config::new(SocketType::Pair).with_zmq_maxmsgsize(n)).unwrap();
        let mut b = conn(SocketType::Pair, b"");
        pump(&mut a, &mut b).unwrap();
        (a, b)
    };
    let (mut a, mut b) = limited(1000);
    b.send_message([vec![0u8; 1000], vec![0u8; 1000]]).unwrap();
    pump(&mut a, &mut b).unwrap();
    b.send_message([vec![0u8; 1001]]).unwrap();
    assert_eq!(
        pump(&mut a, &mut b),
        Err(Error::FrameTooLarge {
            size: 1001,
            limit: 1000
        })
    );
    let (mut a, mut b) = limited(0);
    b.send_message([Bytes::new()]).unwrap();
    pump(&mut a, &mut b).unwrap();
    let (mut a, mut b) = limited(-1);
    b.send_message([vec![0u8; 1 << 20]]).unwrap();
    pump(&mut a, &mut b).unwrap();
    assert_eq!(Config::new(SocketType::Pair).max_message_size, None);
}

#[test]
fn mechanism_other_than_null() {
    for (name, err) in [
        ("CURVE", Error::UnsupportedMechanism("CURVE".into())),
        ("PLAIN", Error::UnsupportedMechanism("PLAIN".into())),
        ("GSSAPI", Error::UnsupportedMechanism("GSSAPI".into())),
    ] {
        let mut g = GreetingRepr::ours(0, true);
        g.mechanism = Mechanism::new(name).unwrap();
        let mut c = conn(SocketType::Router, b"");
        assert_eq!(c.handle_input(&g.to_bytes()), Err(err));
        assert_eq!(
            output(&mut c).len(),
            64,
            "no READY after a refused greeting"
        );
    }
}
