//! Deterministic random mutation over the fuzz seed corpus, so the stable
//! test suite exercises the same properties as `fuzz/` without cargo-fuzz:
//! no panic, and one-piece vs chunked input agree.

mod common;

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use common::{feed, feed_with, MODES};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zebra_zmtp::wire::{Command, Frame, FrameHeader, GreetingRepr, Metadata};
use zebra_zmtp::{Config, SocketType};

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(
        seeds.len() >= 4,
        "seed corpus {} is too small",
        dir.display()
    );
    seeds
}

const INTERESTING: [u8; 8] = [0x00, 0x01, 0x02, 0x04, 0x7F, 0x80, 0xFE, 0xFF];

fn mutate(rng: &mut StdRng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    for _ in 0..rng.gen_range(1..5) {
        let len = input.len();
        match rng.gen_range(0..7) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                input[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                input[i] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
            }
            2 if len > 0 => {
                let at = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - at).min(16));
                input.drain(at..at + n);
            }
            3 => {
                let at = rng.gen_range(0..=len);
                let bytes: Vec<u8> = (0..rng.gen_range(1..16)).map(|_| rng.gen()).collect();
                input.splice(at..at, bytes);
            }
            4 if len >= 8 => {
                let at = rng.gen_range(0..=len - 8);
                let v: u64 = [0, 255, 256, u64::MAX, 1 << 63, 1 << 32][rng.gen_range(0..6)];
                input[at..at + 8].copy_from_slice(&v.to_be_bytes());
            }
            5 => {
                let other = &corpus[rng.gen_range(0..corpus.len())];
                if !other.is_empty() {
                    let from = rng.gen_range(0..other.len());
                    let to = rng.gen_range(from..=other.len());
                    let at = rng.gen_range(0..=len);
                    input.splice(at..at, other[from..to].iter().copied());
                }
            }
            _ if len > 0 => input.truncate(rng.gen_range(0..len)),
            _ => {}
        }
    }
}

fn connection_property(data: &[u8]) {
    let [select, chunk, stream @ ..] = data else {
        return;
    };
    let types = [SocketType::Router, SocketType::Dealer, SocketType::Pair];
    let mut config = Config::new(types[usize::from(select & 3) % 3]).with_identity("fuzz");
    if select & 4 != 0 {
        config.max_message_size = Some(u64::from(select >> 3) * 64);
    }
    let whole = feed(&config, stream, &[], true);
    let step = usize::from(*chunk % 17) + 1;
    let cuts: Vec<usize> = (step..stream.len()).step_by(step).collect();
    for mode in MODES {
        assert_eq!(
            feed_with(&config, stream, &cuts, true, mode),
            whole,
            "{mode:?} {data:02x?}"
        );
    }
}

fn wire_property(data: &[u8]) {
    if let Ok(g) = GreetingRepr::from_bytes(data) {
        assert_eq!(GreetingRepr::from_bytes(&g.to_bytes()), Ok(g));
    }
    if let Ok((h, n)) = FrameHeader::parse(data) {
        let mut out = BytesMut::new();
        h.emit(&mut out);
        assert_eq!(FrameHeader::parse(&out), Ok((h, n)));
    }
    if let Ok((f, _)) = Frame::parse(data) {
        let mut out = BytesMut::new();
        f.emit(&mut out);
        assert_eq!(Frame::parse(&out).map(|(g, _)| g), Ok(f));
    }
    let body = Bytes::copy_from_slice(data);
    if let Ok(c) = Command::parse(&body) {
        let mut out = BytesMut::new();
        if c.emit_frame(&mut out).is_ok() {
            let (f, _) = Frame::parse(&out).unwrap();
            assert_eq!(Command::parse(&f.body), Ok(c));
        }
    }
    if let Ok(m) = Metadata::parse(&body) {
        let mut out = BytesMut::new();
        m.emit(&mut out);
        assert_eq!(&out[..], data);
    }
}

fn run(target: &str, iterations: usize, property: fn(&[u8])) {
    let corpus = seeds(target);
    for s in &corpus {
        property(s);
    }
    let mut rng = StdRng::seed_from_u64(0x5EED_0000 + target.len() as u64);
    for _ in 0..iterations {
        let mut input = corpus[rng.gen_range(0..corpus.len())].clone();
        mutate(&mut rng, &mut input, &corpus);
        property(&input);
    }
}

#[test]
fn mutated_connection_streams() {
    run("connection", 3000, connection_property);
}

#[test]
fn mutated_wire_structures() {
    run("wire", 20_000, wire_property);
}
