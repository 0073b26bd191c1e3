//! Test harness: drives connections with no I/O.

#![allow(dead_code)]

use zebra_zmtp::{Config, Connection, Error, Event, SocketType};

/// Drains every queued output chunk into one buffer.
pub fn output(c: &mut Connection) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = c.poll_output() {
        out.extend_from_slice(&chunk);
    }
    out
}

/// Drains every queued event.
pub fn events(c: &mut Connection) -> Vec<Event> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

/// Drains every queued event as the engine does: message parts one by
/// one with `poll_message_part`, other events with `poll_event`; messages
/// are put back together to compare.
pub fn events_by_part(c: &mut Connection) -> Vec<Event> {
    let mut out = Vec::new();
    let mut message = Vec::new();
    loop {
        while let Some((part, more)) = c.poll_message_part() {
            message.push(part);
            if !more {
                out.push(Event::Message(std::mem::take(&mut message)));
            }
        }
        assert!(message.is_empty(), "a message was handed out incomplete");
        match c.poll_event() {
            Some(Event::Message(m)) => panic!("message {m:?} not handed out by parts"),
            Some(e) => out.push(e),
            None => return out,
        }
    }
}

/// Moves bytes both ways until neither side has anything to send.
pub fn pump(a: &mut Connection, b: &mut Connection) -> Result<(), Error> {
    loop {
        let to_b = output(a);
        let to_a = output(b);
        if to_a.is_empty() && to_b.is_empty() {
            return Ok(());
        }
        b.handle_input(&to_b)?;
        a.handle_input(&to_a)?;
    }
}

/// A connection with the given type and identity.
pub fn conn(t: SocketType, identity: &'static [u8]) -> Connection {
    Connection::new(Config::new(t).with_identity(identity)).unwrap()
}

/// Two connected peers with the handshake done and its events consumed.
pub fn connected(ta: SocketType, tb: SocketType) -> (Connection, Connection) {
    let mut a = conn(ta, b"A");
    let mut b = conn(tb, b"B");
    pump(&mut a, &mut b).unwrap();
    assert!(matches!(events(&mut a)[..], [Event::HandshakeDone(_)]));
    assert!(matches!(events(&mut b)[..], [Event::HandshakeDone(_)]));
    (a, b)
}

/// What a connection made of one input stream: every event, every output
/// byte, the first error.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub events: Vec<Event>,
    pub output: Vec<u8>,
    pub error: Option<Error>,
}

/// How a test hands input to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `handle_input` with borrowed slices (bodies are copied).
    Borrowed,
    /// `handle_input_bytes` with slices of one shared buffer (bodies are
    /// sliced).
    Shared,
    /// As `Shared`, but the rest of a message body being received is read
    /// straight into it with `read_body_from`, and events are taken after
    /// every piece with `poll_message_part`, as the engine does.
    Direct,
}

/// Every mode.
pub const MODES: [Mode; 3] = [Mode::Borrowed, Mode::Shared, Mode::Direct];

/// Hands one piece of the stream to `c` in `mode`.
pub fn give(c: &mut Connection, piece: &bytes::Bytes, mode: Mode) -> Result<(), Error> {
    match mode {
        Mode::Borrowed => c.handle_input(piece),
        Mode::Shared => c.handle_input_bytes(piece.clone()),
        Mode::Direct => {
            let mut rest = piece.clone();
            loop {
                if c.body_missing() > 0 && !rest.is_empty() {
                    let mut reader: &[u8] = &rest;
                    let n = c.read_body_from(&mut reader).expect("reading from a slice");
                    assert!(n > 0);
                    bytes::Buf::advance(&mut rest, n);
                    continue;
                }
                return c.handle_input_bytes(rest);
            }
        }
    }
}

/// Feeds `stream` to a fresh connection, cut at `cuts`, then signals EOF
/// when `eof` is set.
pub fn feed(config: &Config, stream: &[u8], cuts: &[usize], eof: bool) -> Outcome {
    feed_with(config, stream, cuts, eof, Mode::Borrowed)
}

/// As [`feed`], handing the input over in `mode`.
pub fn feed_with(config: &Config, stream: &[u8], cuts: &[usize], eof: bool, mode: Mode) -> Outcome {
    let mut c = Connection::new(config.clone()).unwrap();
    let shared = bytes::Bytes::copy_from_slice(stream);
    let mut output_bytes = output(&mut c);
    let mut error = None;
    let mut got = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&stream.len())) {
        if let Err(e) = give(&mut c, &shared.slice(start..end), mode) {
            error.get_or_insert(e);
        }
        output_bytes.extend(output(&mut c));
        if mode == Mode::Direct {
            got.extend(events_by_part(&mut c));
        }
        start = end;
    }
    if eof {
        if let Err(e) = c.handle_eof() {
            error.get_or_insert(e);
        }
    }
    got.extend(events(&mut c));
    Outcome {
        events: got,
        output: output_bytes,
        error,
    }
}

/// Decodes hex (test vectors).
pub fn hex(s: &str) -> Vec<u8> {
    let s: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}
