//! Hostile and broken peers: each must end in a clear error, never a panic
//! or an allocation the peer did not pay for.

mod common;

use bytes::{Bytes, BytesMut};
use common::{conn, connected, events};
use zebra_zmtp::wire::{Command, GreetingRepr, Metadata};
use zebra_zmtp::{Config, Connection, Error, Event, SocketType};

fn greeting() -> Vec<u8> {
    GreetingRepr::ours(0, false).to_bytes().to_vec()
}

fn command_frame(c: &Command) -> Vec<u8> {
    let mut out = BytesMut::new();
    c.emit_frame(&mut out).unwrap();
    out.to_vec()
}

fn after_greeting(rest: &[u8]) -> Vec<u8> {
    let mut v = greeting();
    v.extend_from_slice(rest);
    v
}

fn fails_with(stream: &[u8], err: Error) {
    let mut c = conn(SocketType::Router, b"");
    assert_eq!(c.handle_input(stream), Err(err.clone()), "{stream:02x?}");
    assert!(c.is_closed());
    assert_eq!(c.handle_input(b""), Err(err));
    assert!(!events(&mut c)
        .iter()
        .any(|e| matches!(e, Event::HandshakeDone(_))));
}

#[test]
fn http_request_is_rejected_on_the_first_byte() {
    fails_with(
        b"G",
        Error::BadSignature {
            offset: 0,
            byte: b'G',
        },
    );
    fails_with(
        b"GET / HTTP/1.1\r\n\r\n",
        Error::BadSignature {
            offset: 0,
            byte: b'G',
        },
    );
}

#[test]
fn wrong_signature_end() {
    let mut g = greeting();
    g[9] = 0x00;
    fails_with(&g[..10], Error::BadSignature { offset: 9, byte: 0 });
}

#[test]
fn zmtp_1_and_2_peers() {
    for major in [0u8, 1, 2] {
        let mut g = greeting();
        g[10] = major;
        fails_with(&g[..11], Error::UnsupportedVersion { major });
    }
}

#[test]
fn zero_length_mechanism() {
    let mut g = greeting();
    g[12..32].fill(0);
    fails_with(&g, Error::InvalidMechanism("empty name"));
}

#[test]
fn curve_mechanism() {
    let mut g = greeting();
    g[12..17].copy_from_slice(b"CURVE");
    fails_with(&g, Error::UnsupportedMechanism("CURVE".into()));
}

#[test]
fn message_frame_before_ready() {
    fails_with(&after_greeting(b"\x00"), Error::MessageBeforeReady);
    fails_with(&after_greeting(b"\x02\xff\xff"), Error::MessageBeforeReady);
}

#[test]
fn command_other_than_ready_during_handshake() {
    let ping = command_frame(&Command::Ping {
        ttl_deciseconds: 1,
        context: Bytes::new(),
    });
    fails_with(
        &after_greeting(&ping),
        Error::UnexpectedCommand("PING".into()),
    );
    let sub = b"\x04\x0a\x09SUBSCRIBE";
    fails_with(
        &after_greeting(sub),
        Error::UnexpectedCommand("SUBSCRIBE".into()),
    );
}

#[test]
fn second_ready() {
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    let again = command_frame(&Command::Ready(Metadata::for_socket(
        SocketType::Dealer,
        &Bytes::new(),
    )));
    assert_eq!(
        a.handle_input(&again),
        Err(Error::UnexpectedCommand("READY".into()))
    );
}

#[test]
fn truncated_commands() {
    fails_with(
        &after_greeting(b"\x04\x03\x05REA"),
        Error::MalformedCommand {
            command: "unknown".into(),
            reason: "command name runs past the frame",
        },
    );
    fails_with(
        &after_greeting(b"\x04\x00"),
        Error::MalformedCommand {
            command: "unknown".into(),
            reason: "empty command frame",
        },
    );
    fails_with(
        &after_greeting(b"\x04\x0a\x05READY\x0bSock"),
        Error::MalformedMetadata("property name runs past the end"),
    );
    fails_with(
        &after_greeting(b"\x04\x0a\x05READY\x01a\x00\x00\x00"),
        Error::MalformedMetadata("value length runs past the end"),
    );
}

#[test]
fn ready_without_or_with_bad_socket_type() {
    fails_with(
        &after_greeting(&command_frame(&Command::Ready(Metadata::new()))),
        Error::MissingSocketType,
    );
    let mut m = Metadata::new();
    m.push("Socket-Type", Bytes::from_static(b"STREAM"))
        .unwrap();
    fails_with(
        &after_greeting(&command_frame(&Command::Ready(m))),
        Error::UnknownSocketType("STREAM".into()),
    );
    let mut m = Metadata::new();
    m.push("Socket-Type", Bytes::from_static(b"DEALER"))
        .unwrap();
    m.push("Identity", Bytes::from(vec![b'i'; 256])).unwrap();
    fails_with(
        &after_greeting(&command_frame(&Command::Ready(m))),
        Error::IdentityTooLong(256),
    );
}

#[test]
fn bad_flags_after_handshake() {
    for flags in [0x08u8, 0x40, 0x80] {
        let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
        assert_eq!(a.handle_input(&[flags]), Err(Error::ReservedFlags(flags)));
    }
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    assert_eq!(a.handle_input(&[0x05]), Err(Error::CommandWithMore));
}

#[test]
fn huge_length_closes_rather_than_allocates() {
    let mut a =
        Connection::new(Config::new(SocketType::Router).with_zmq_maxmsgsize(1 << 20)).unwrap();
    let mut b = conn(SocketType::Dealer, b"");
    common::pump(&mut a, &mut b).unwrap();
    let huge = [0x02, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
    assert_eq!(
        a.handle_input(&huge),
        Err(Error::FrameTooLarge {
            size: 0x7FFF_FFFF_FFFF_FFFF,
            limit: 1 << 20
        })
    );
    let huge_command = [0x06, 0, 0, 0, 1, 0, 0, 0, 0];
    fails_with(
        &after_greeting(&huge_command),
        Error::FrameTooLarge {
            size: 1 << 32,
            limit: zebra_zmtp::DEFAULT_MAX_COMMAND_SIZE,
        },
    );
}

#[test]
fn huge_length_without_limit_waits_for_bytes_it_never_gets() {
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    let huge = [
        0x02, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3,
    ];
    assert_eq!(a.handle_input(&huge), Ok(()));
    assert!(events(&mut a).is_empty());
    assert_eq!(a.handle_eof(), Err(Error::UnexpectedEof("a frame")));
}

#[test]
fn malformed_error_and_ping_commands() {
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    assert_eq!(
        a.handle_input(b"\x04\x07\x05ERROR\x09"),
        Err(Error::MalformedCommand {
            command: "ERROR".into(),
            reason: "reason length does not match the frame",
        })
    );
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    assert_eq!(
        a.handle_input(b"\x04\x06\x04PING\x00"),
        Err(Error::MalformedCommand {
            command: "PING".into(),
            reason: "missing TTL",
        })
    );
}

#[test]
fn events_before_the_error_are_kept() {
    let (mut a, _) = connected(SocketType::Router, SocketType::Dealer);
    assert_eq!(
        a.handle_input(b"\x00\x01a\x00\x01b\xff"),
        Err(Error::ReservedFlags(0xff))
    );
    assert_eq!(
        events(&mut a),
        vec![
            Event::Message(vec!["a".into()]),
            Event::Message(vec!["b".into()])
        ]
    );
}
