//! Feeds arbitrary bytes to a `Connection`, twice: in one piece and in
//! chunks, and checks both runs agree (events, output, error).
//!
//! Input layout: byte 0 picks our socket type and size limit, byte 1 the
//! chunk size, the rest is the peer's byte stream.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zebra_zmtp::{Config, Connection, Error, Event, SocketType};

fn run(config: &Config, stream: &[u8], chunk: usize) -> (Vec<Event>, Vec<u8>, Option<Error>) {
    let mut c = Connection::new(config.clone()).expect("valid config");
    let mut out = Vec::new();
    let mut error = None;
    let mut pieces: Vec<&[u8]> = stream.chunks(chunk).collect();
    if pieces.is_empty() {
        pieces.push(&[]);
    }
    for piece in pieces {
        if let Err(e) = c.handle_input(piece) {
            error.get_or_insert(e);
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
    (std::iter::from_fn(|| c.poll_event()).collect(), out, error)
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
    let whole = run(&config, stream, stream.len().max(1));
    let split = run(&config, stream, usize::from(*chunk % 17) + 1);
    assert_eq!(whole.0, split.0);
    assert_eq!(whole.2, split.2);
});
