//! Any split of the input stream gives identical results: same events, same
//! output bytes, same error. Streams and splits come from seeded RNGs, so
//! every run checks the same cases.

mod common;

use bytes::{Bytes, BytesMut};
use common::{feed, feed_with, Outcome, MODES};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zebra_zmtp::wire::frame::FrameHeader;
use zebra_zmtp::wire::{Command, GreetingRepr, Metadata};
use zebra_zmtp::{Config, Event, PeerInfo, SocketType, Version};

/// A peer's byte stream and the events a correct receiver must report.
struct Script {
    bytes: Vec<u8>,
    expected: Vec<Event>,
}

fn random_body(rng: &mut StdRng) -> Bytes {
    let len = match rng.gen_range(0..10) {
        0 => 0,
        1 => 255,
        2 => 256,
        3 => rng.gen_range(300..4000),
        _ => rng.gen_range(1..64),
    };
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    Bytes::from(v)
}

fn frame(out: &mut Vec<u8>, rng: &mut StdRng, more: bool, command: bool, body: &[u8]) {
    let size = body.len() as u64;
    let h = FrameHeader {
        more,
        command,
        size,
        long: size > 255 || rng.gen_bool(0.1),
    };
    let mut b = BytesMut::new();
    h.emit(&mut b);
    out.extend_from_slice(&b);
    out.extend_from_slice(body);
}

fn command(out: &mut Vec<u8>, rng: &mut StdRng, c: &Command) {
    let mut b = BytesMut::new();
    c.emit_frame(&mut b).unwrap();
    let (_, header_len) = FrameHeader::parse(&b).unwrap();
    frame(out, rng, false, true, &b[header_len..]);
}

fn script(rng: &mut StdRng, ours: SocketType) -> Script {
    let candidates: Vec<SocketType> = SocketType::ALL
        .into_iter()
        .filter(|t| ours.is_compatible_with(*t))
        .collect();
    let peer_type = candidates[rng.gen_range(0..candidates.len())];
    let mut g = GreetingRepr::ours(rng.gen_range(0..256), false);
    g.minor = rng.gen_range(0..2);
    rng.fill(&mut g.padding);
    let mut bytes = g.to_bytes().to_vec();

    let id_len = rng.gen_range(0..=255);
    let identity: Bytes = (0..id_len)
        .map(|_| rng.gen::<u8>())
        .collect::<Vec<_>>()
        .into();
    let mut metadata = Metadata::new();
    metadata
        .push(
            "Socket-Type",
            Bytes::from_static(peer_type.name().as_bytes()),
        )
        .unwrap();
    if peer_type.sends_identity() {
        metadata.push("Identity", identity.clone()).unwrap();
    }
    for i in 0..rng.gen_range(0..3) {
        metadata
            .push(&format!("X-Prop-{i}"), random_body(rng))
            .unwrap();
    }
    command(&mut bytes, rng, &Command::Ready(metadata.clone()));
    let mut expected = vec![Event::HandshakeDone(PeerInfo {
        version: if g.minor == 0 {
            Version::V3_0
        } else {
            Version::V3_1
        },
        socket_type: peer_type,
        identity: if peer_type.sends_identity() {
            identity
        } else {
            Bytes::new()
        },
        metadata,
    })];

    for _ in 0..rng.gen_range(1..30) {
        match rng.gen_range(0..10) {
            0 => {
                let ttl = rng.gen();
                let ctx: Vec<u8> = (0..rng.gen_range(0..=16)).map(|_| rng.gen()).collect();
                command(
                    &mut bytes,
                    rng,
                    &Command::Ping {
                        ttl_deciseconds: ttl,
                        context: ctx.into(),
                    },
                );
                expected.push(Event::Ping {
                    ttl_deciseconds: ttl,
                });
            }
            1 => {
                let ctx: Bytes = (0..rng.gen_range(0..=16))
                    .map(|_| rng.gen::<u8>())
                    .collect::<Vec<_>>()
                    .into();
                command(
                    &mut bytes,
                    rng,
                    &Command::Pong {
                        context: ctx.clone(),
                    },
                );
                expected.push(Event::Pong { context: ctx });
            }
            2 => {
                let data = random_body(rng);
                let c = Command::Other {
                    name: Bytes::from_static(b"X-UNKNOWN"),
                    data,
                };
                command(&mut bytes, rng, &c);
            }
            _ => {
                let parts: Vec<Bytes> =
                    (0..rng.gen_range(1..6)).map(|_| random_body(rng)).collect();
                for (i, p) in parts.iter().enumerate() {
                    frame(&mut bytes, rng, i + 1 < parts.len(), false, p);
                }
                expected.push(Event::Message(parts));
            }
        }
    }
    if rng.gen_bool(0.2) {
        let reason = Bytes::from_static(b"bye");
        command(
            &mut bytes,
            rng,
            &Command::Error {
                reason: reason.clone(),
            },
        );
        expected.push(Event::PeerError { reason });
        bytes.extend_from_slice(b"ignored trailing bytes");
    }
    Script { bytes, expected }
}

fn random_cuts(rng: &mut StdRng, len: usize) -> Vec<usize> {
    let n = match rng.gen_range(0..3) {
        0 => rng.gen_range(0..4),
        1 => rng.gen_range(0..64),
        _ => rng.gen_range(0..(len / 8).max(1)),
    };
    let mut cuts: Vec<usize> = (0..n).map(|_| rng.gen_range(0..=len)).collect();
    cuts.sort_unstable();
    cuts
}

fn byte_by_byte(len: usize) -> Vec<usize> {
    (1..len).collect()
}

fn config(rng: &mut StdRng) -> Config {
    let t = [SocketType::Router, SocketType::Dealer][rng.gen_range(0..2)];
    let id: Vec<u8> = (0..rng.gen_range(0..8)).map(|_| rng.gen()).collect();
    let mut cfg = Config::new(t).with_identity(id);
    cfg.reserve_ahead = [0, 7, 1 << 20][rng.gen_range(0..3)];
    cfg
}

fn assert_split_invariant(
    cfg: &Config,
    bytes: &[u8],
    rng: &mut StdRng,
    byte_wise: bool,
) -> Outcome {
    let whole = feed(cfg, bytes, &[], true);
    for mode in MODES {
        assert_eq!(feed_with(cfg, bytes, &[], true, mode), whole, "{mode:?}");
        if byte_wise {
            let cuts = byte_by_byte(bytes.len());
            assert_eq!(feed_with(cfg, bytes, &cuts, true, mode), whole, "{mode:?}");
        }
        for _ in 0..8 {
            let cuts = random_cuts(rng, bytes.len());
            assert_eq!(
                feed_with(cfg, bytes, &cuts, true, mode),
                whole,
                "{mode:?} cuts {cuts:?}"
            );
        }
    }
    whole
}

#[test]
fn valid_streams_decode_identically_under_any_split() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let cfg = config(&mut rng);
        let s = script(&mut rng, cfg.socket_type);
        let whole = assert_split_invariant(&cfg, &s.bytes, &mut rng, seed < 5);
        assert_eq!(whole.error, None, "seed {seed}");
        assert_eq!(whole.events, s.expected, "seed {seed}");
    }
}

#[test]
fn corrupted_streams_fail_identically_under_any_split() {
    for seed in 1000..1200u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut cfg = config(&mut rng);
        if rng.gen_bool(0.5) {
            cfg.max_message_size = Some(rng.gen_range(0..30_000));
        }
        let mut bytes = script(&mut rng, cfg.socket_type).bytes;
        match rng.gen_range(0..3) {
            0 => {
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..bytes.len());
                    bytes[i] ^= 1 << rng.gen_range(0..8);
                }
            }
            1 => {
                let i = rng.gen_range(0..bytes.len());
                bytes[i] = rng.gen();
            }
            _ => bytes.truncate(rng.gen_range(0..bytes.len())),
        }
        assert_split_invariant(&cfg, &bytes, &mut rng, seed < 1010);
    }
}

#[test]
fn random_garbage_never_panics_and_is_split_invariant() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..300 {
        let cfg = config(&mut rng);
        let mut bytes: Vec<u8> = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect();
        if rng.gen_bool(0.7) {
            let g = GreetingRepr::ours(0, false).to_bytes();
            bytes.splice(0..0, g);
        }
        assert_split_invariant(&cfg, &bytes, &mut rng, true);
    }
}
