//! Feeds arbitrary bytes to a `Connection`: in one piece and borrowed,
//! then in chunks as shared `Bytes` with the rest of each message body read
//! straight from the stream (as the engine does), and checks both runs
//! agree (events, output, error).
//!
//! Input layout: byte 0 picks our socket type and size limit, byte 1 the
//! chunk size, the rest is the peer's byte stream.

#![no_main]

use bytes::{Buf, Bytes};
use libfuzzer_sys::fuzz_target;
use zebra_zmtp::{Config, Connection, Error, Event, SocketType};

/// Hands one piece over, shared, reading message bodies directly.
fn give_shared(c: &mut Connection, piece: Bytes) -> Result<(), Error> {
    let mut rest = piece;
    while c.body_missing() > 0 && !rest.is_empty() {
        let mut reader: &[u8] = &rest;
        let n = c.read_body_from(&mut reader).expect("reading from a slice");
        rest.advance(n);
    }
    c.handle_input_bytes(rest)
}

/// Takes events the engine's way: message parts one by one.
fn take_events(c: &mut Connection, events: &mut Vec<Event>) {
    let mut message = Vec::new();
    loop {
        while let Some((part, more)) = c.poll_message_part() {
            message.push(part);
            if !more {
                events.push(Event::Message(std::mem::take(&mut message)));
            }
        }
        assert!(message.is_empty());
        match c.poll_event() {
            Some(e) => events.push(e),
            None => return,
        }
    }
}

fn run(
    config: &Config,
    stream: &[u8],
    chunk: usize,
    shared: bool,
) -> (Vec<Event>, Vec<u8>, Option<Error>) {
    let mut c = Connection::new(config.clone()).expect("valid config");
    let mut out = Vec::new();
    let mut error = None;
    let mut events = Vec::new();
    let stream = Bytes::copy_from_slice(stream);
    let mut pieces: Vec<Bytes> = (0..stream.len())
        .step_by(chunk)
        .map(|i| stream.slice(i..(i + chunk).min(stream.len())))
        .collect();
    if pieces.is_empty() {
        pieces.push(Bytes::new());
    }
    for piece in pieces {
        let r = if shared {
            give_shared(&mut c, piece)
        } else {
            c.handle_input(&piece)
        };
        if let Err(e) = r {
            error.get_or_insert(e);
        }
        if shared {
            take_events(&mut c, &mut events);
        }
        while let Some(b) = c.poll_output() {
            out.extend_from_slice(&b);
        }
        if c.is_handshake_done() {
            let _ = c.send_message([&b"reply"[..]]);
            let _ = c.send_ping(1, b"ctx");
        }
    }
    if let Err(e) = c.handle_eof() {
        error.get_or_insert(e);
    }
    while let Some(b) = c.poll_output() {
        out.extend_from_slice(&b);
    }
    events.extend(std::iter::from_fn(|| c.poll_event()));
    (events, out, error)
}

fuzz_target!(|data: &[u8]| {
    let [select, chunk, stream @ ..] = data else {
        return;
    };
    let types = [SocketType::Router, SocketType::Dealer, SocketType::Pair];
    let mut config = Config::new(types[usize::from(select & 3) % 3]).with_identity(&b"fuzz"[..]);
    if select & 4 != 0 {
        config.max_message_size = Some(u64::from(select >> 3) * 64);
    }
    if chunk & 0x80 != 0 {
        config.reserve_ahead = 1 << 20;
    }
    let whole = run(&config, stream, stream.len().max(1), false);
    let split = run(&config, stream, usize::from(*chunk % 17) + 1, true);
    assert_eq!(whole.0, split.0);
    assert_eq!(whole.2, split.2);
});
