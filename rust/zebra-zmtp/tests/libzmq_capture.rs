//! Byte-exact checks against what real libzmq 4.3.4 sends.
//!
//! The vectors were captured with `tests/data/capture_libzmq.py`: it drives
//! the system libzmq 4.3.4 (Debian libzmq3-dev) through ctypes and plays a
//! raw ZMTP 3.1 peer on a plain TCP socket, printing every byte libzmq sent.

mod common;

use bytes::Bytes;
use common::{events, hex, output};
use zebra_zmtp::{Config, Connection, Event, SocketType, Version};

/// libzmq DEALER, identity "ps9": greeting (padding = identity length + 1 = 4).
const DEALER_GREETING: &str = "ff00000000000000047f03014e554c4c00000000000000000000000000000000
    0000000000000000000000000000000000000000000000000000000000000000";
/// ... then its READY: Socket-Type DEALER, Identity "ps9".
const DEALER_READY: &str = "042c0552454144590b536f636b65742d54797065000000064445414c45520849
    64656e7469747900000003707339";
/// ... then `zmq_send("hello", SNDMORE)`: short frame with MORE.
const DEALER_HELLO: &str = "010568656c6c6f";
/// ... then `zmq_send(300 zero bytes)`: long frame header, body of 300 zeros.
const DEALER_LONG_HEADER: &str = "02000000000000012c";
/// ... then heartbeats (ZMQ_HEARTBEAT_TTL = 1000 ms): PING, TTL 10 ds, no context.
const DEALER_PING: &str = "04070450494e47000a";
/// libzmq's answer to `04 0d 04 "PING" 00 0a "ctx-42"`.
const PONG_CTX_42: &str = "040b04504f4e476374782d3432";

/// libzmq ROUTER with no identity: greeting then READY with an empty Identity.
const ROUTER_OUT: &str = "ff00000000000000017f03014e554c4c00000000000000000000000000000000
    0000000000000000000000000000000000000000000000000000000000000000
    04290552454144590b536f636b65742d5479706500000006524f555445520849
    64656e7469747900000000";

/// libzmq PAIR: greeting, READY without Identity, then a 256-byte frame of
/// 'x' (the smallest size that takes the long form).
const PAIR_GREETING_READY: &str = "ff00000000000000017f03014e554c4c00000000000000000000000000000000
    0000000000000000000000000000000000000000000000000000000000000000
    041a0552454144590b536f636b65742d547970650000000450414952";
const PAIR_LONG_HEADER: &str = "020000000000000100";

fn dealer_stream(pings: usize) -> Vec<u8> {
    let mut s = hex(DEALER_GREETING);
    s.extend(hex(DEALER_READY));
    s.extend(hex(DEALER_HELLO));
    s.extend(hex(DEALER_LONG_HEADER));
    s.extend([0u8; 300]);
    for _ in 0..pings {
        s.extend(hex(DEALER_PING));
    }
    s
}

#[test]
fn our_dealer_is_byte_for_byte_libzmq() {
    let mut c = Connection::new(Config::new(SocketType::Dealer).with_identity("ps9")).unwrap();
    assert_eq!(output(&mut c), hex(DEALER_GREETING));
    c.handle_input(&hex(ROUTER_OUT)).unwrap();
    assert_eq!(output(&mut c), hex(DEALER_READY));
    let peer = match &events(&mut c)[..] {
        [Event::HandshakeDone(p)] => p.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(peer.socket_type, SocketType::Router);
    assert_eq!(peer.identity, Bytes::new());
    assert_eq!(peer.version, Version::V3_1);
    c.send_message([Bytes::from_static(b"hello"), Bytes::from(vec![0u8; 300])])
        .unwrap();
    let mut want = hex(DEALER_HELLO);
    want.extend(hex(DEALER_LONG_HEADER));
    want.extend([0u8; 300]);
    assert_eq!(output(&mut c), want);
}

#[test]
fn our_router_is_byte_for_byte_libzmq() {
    let mut c = Connection::new(Config::new(SocketType::Router)).unwrap();
    let mut got = output(&mut c);
    c.handle_input(&dealer_stream(0)).unwrap();
    got.extend(output(&mut c));
    assert_eq!(got, hex(ROUTER_OUT));
}

#[test]
fn our_pair_is_byte_for_byte_libzmq() {
    // A PAIR does not send its identity in READY; only the greeting padding
    // (identity length + 1) shows it, exactly as libzmq does.
    let mut c = Connection::new(Config::new(SocketType::Pair).with_identity("unused")).unwrap();
    c.handle_input(&hex(PAIR_GREETING_READY)).unwrap();
    c.send_message([vec![b'x'; 256]]).unwrap();
    let mut want = hex(PAIR_GREETING_READY);
    want[8] = 7;
    want.extend(hex(PAIR_LONG_HEADER));
    want.extend([b'x'; 256]);
    assert_eq!(output(&mut c), want);
}

#[test]
fn we_understand_a_libzmq_dealer() {
    let mut c = Connection::new(Config::new(SocketType::Router)).unwrap();
    output(&mut c);
    c.handle_input(&dealer_stream(4)).unwrap();
    let ev = events(&mut c);
    assert_eq!(ev.len(), 2 + 4, "{ev:?}");
    match &ev[0] {
        Event::HandshakeDone(p) => {
            assert_eq!(p.socket_type, SocketType::Dealer);
            assert_eq!(p.identity, Bytes::from_static(b"ps9"));
            assert_eq!(p.version, Version::V3_1);
            assert_eq!(p.metadata.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ev[1],
        Event::Message(vec![
            Bytes::from_static(b"hello"),
            Bytes::from(vec![0u8; 300])
        ])
    );
    for e in &ev[2..] {
        assert_eq!(
            *e,
            Event::Ping {
                ttl_deciseconds: 10
            }
        );
    }
    let mut want = hex(&ROUTER_OUT[ROUTER_OUT.find("0429").unwrap()..]);
    for _ in 0..4 {
        want.extend(b"\x04\x05\x04PONG");
    }
    assert_eq!(output(&mut c), want);
}

#[test]
fn our_pong_is_byte_for_byte_libzmq() {
    let mut c = Connection::new(Config::new(SocketType::Router)).unwrap();
    c.handle_input(&dealer_stream(0)).unwrap();
    output(&mut c);
    events(&mut c);
    c.handle_input(b"\x04\x0d\x04PING\x00\x0actx-42").unwrap();
    assert_eq!(output(&mut c), hex(PONG_CTX_42));
    assert_eq!(
        events(&mut c),
        vec![Event::Ping {
            ttl_deciseconds: 10
        }]
    );
}

#[test]
fn our_ping_is_byte_for_byte_libzmq() {
    let mut c = Connection::new(Config::new(SocketType::Router)).unwrap();
    c.handle_input(&dealer_stream(0)).unwrap();
    output(&mut c);
    c.send_ping(10, b"").unwrap();
    assert_eq!(output(&mut c), hex(DEALER_PING));
}
