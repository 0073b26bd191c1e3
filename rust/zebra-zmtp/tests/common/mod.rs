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

/// Feeds `stream` to a fresh connection, cut at `cuts`, then signals EOF
/// when `eof` is set.
pub fn feed(config: &Config, stream: &[u8], cuts: &[usize], eof: bool) -> Outcome {
    let mut c = Connection::new(config.clone()).unwrap();
    let mut output_bytes = output(&mut c);
    let mut error = None;
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&stream.len())) {
        if let Err(e) = c.handle_input(&stream[start..end]) {
            error.get_or_insert(e);
        }
        output_bytes.extend(output(&mut c));
        start = end;
    }
    if eof {
        if let Err(e) = c.handle_eof() {
            error.get_or_insert(e);
        }
    }
    Outcome {
        events: events(&mut c),
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
