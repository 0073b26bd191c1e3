//! Receiving without copying: bodies sliced out of shared input, and large
//! bodies read straight from a reader into their own buffer.

mod common;

use std::io::{self, Read};

use bytes::{Bytes, BytesMut};
use common::{connected, events, output};
use zebra_zmtp::{Config, Connection, Event, SocketType};

/// Two peers after the handshake; `b` reserves `reserve_ahead` for bodies.
fn pair(reserve_ahead: usize) -> (Connection, Connection) {
    let mut a = Connection::new(Config::new(SocketType::Dealer)).unwrap();
    let mut cfg = Config::new(SocketType::Router);
    cfg.reserve_ahead = reserve_ahead;
    let mut b = Connection::new(cfg).unwrap();
    common::pump(&mut a, &mut b).unwrap();
    events(&mut a);
    events(&mut b);
    (a, b)
}

fn within(part: &Bytes, buf: &Bytes) -> bool {
    let start = buf.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    p >= start && p + part.len() <= start + buf.len()
}

#[test]
fn bodies_inside_shared_input_are_slices_of_it() {
    let (mut a, mut b) = connected(SocketType::Dealer, SocketType::Router);
    let big = Bytes::from(vec![7u8; 100_000]);
    a.send_message([&b"meta"[..], &b"keys"[..]]).unwrap();
    a.send_message([big.clone()]).unwrap();
    let wire = Bytes::from(output(&mut a));
    b.handle_input_bytes(wire.clone()).unwrap();
    let ev = events(&mut b);
    assert_eq!(ev.len(), 2);
    for e in &ev {
        let Event::Message(parts) = e else {
            panic!("{e:?}")
        };
        for p in parts {
            assert!(within(p, &wire), "a body was copied");
        }
    }
    assert_eq!(ev[1], Event::Message(vec![big]));
}

#[test]
fn command_bodies_are_copied_out_of_shared_input() {
    let mut a = Connection::new(Config::new(SocketType::Dealer).with_identity("w")).unwrap();
    let mut b = Connection::new(Config::new(SocketType::Router)).unwrap();
    let greeting_and_ready = {
        b.handle_input(&output(&mut a)).unwrap();
        a.handle_input(&output(&mut b)).unwrap();
        Bytes::from(output(&mut a))
    };
    b.handle_input_bytes(greeting_and_ready.clone()).unwrap();
    let peer = b.peer().unwrap();
    assert_eq!(peer.identity, "w");
    assert!(!within(&peer.identity, &greeting_and_ready));
}

/// Hands out at most `step` bytes per read, two reads out of four, and
/// `WouldBlock` to the others, as a non-blocking socket would.
struct Trickle {
    data: Bytes,
    step: usize,
    reads: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.reads % 4 >= 2 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        bytes::Buf::advance(&mut self.data, n);
        Ok(n)
    }
}

#[test]
fn large_body_read_straight_into_one_buffer() {
    let (mut a, mut b) = pair(64 << 20);
    let body: Bytes = (0..(24 << 20) + 5).map(|i: u32| (i % 251) as u8).collect();
    a.send_message([Bytes::from_static(b"head"), body.clone()])
        .unwrap();
    let mut wire = BytesMut::new();
    while let Some(c) = a.poll_output() {
        wire.extend_from_slice(&c);
    }
    let wire = wire.freeze();
    let first = 6 + 9 + 1000;
    b.handle_input_bytes(wire.slice(..first)).unwrap();
    assert_eq!(b.body_missing(), body.len() - 1000);
    let mut reader = Trickle {
        data: wire.slice(first..),
        step: 1 << 20,
        reads: 0,
    };
    let mut total = 0;
    let mut would_block = 0;
    while b.body_missing() > 0 {
        match b.read_body_from(&mut reader) {
            Ok(n) => {
                assert!(n > 0);
                total += n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => would_block += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(total, body.len() - 1000);
    assert!(would_block > 0);
    assert!(reader.data.is_empty());
    assert_eq!(b.read_body_from(&mut reader).unwrap(), 0);
    assert_eq!(
        events(&mut b),
        vec![Event::Message(vec![Bytes::from_static(b"head"), body])]
    );
}

#[test]
fn body_read_stops_at_the_frame_end() {
    let (mut a, mut b) = pair(0);
    let body = Bytes::from(vec![3u8; 300_000]);
    a.send_message([body.clone()]).unwrap();
    a.send_message([&b"next"[..]]).unwrap();
    let mut wire = BytesMut::new();
    while let Some(c) = a.poll_output() {
        wire.extend_from_slice(&c);
    }
    let wire = wire.freeze();
    b.handle_input_bytes(wire.slice(..9)).unwrap();
    let mut rest: &[u8] = &wire[9..];
    while b.body_missing() > 0 {
        assert!(b.read_body_from(&mut rest).unwrap() > 0);
    }
    assert_eq!(rest.len(), 6);
    b.handle_input(rest).unwrap();
    assert_eq!(
        events(&mut b),
        vec![
            Event::Message(vec![body]),
            Event::Message(vec![Bytes::from_static(b"next")])
        ]
    );
}

#[test]
fn nothing_to_read_before_the_handshake_or_between_frames() {
    let mut c = Connection::new(Config::new(SocketType::Pair)).unwrap();
    assert_eq!(c.body_missing(), 0);
    let mut r: &[u8] = b"unread";
    assert_eq!(c.read_body_from(&mut r).unwrap(), 0);
    assert_eq!(r, b"unread");
    let (_, mut b) = pair(0);
    b.handle_input(b"\x04\x05\x04PI").unwrap();
    assert_eq!(b.body_missing(), 0, "command bodies are not read directly");
}
