//! Seeded random mutation of the captured fixtures: no parser or helper
//! may panic, and whatever parses re-emits to a meta that parses back equal.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zebra_pslite::{detect, response, split_kv, synthesize_push, Format, Message, Route};

const INTERESTING: [u8; 8] = [0x00, 0x01, 0x02, 0x08, 0x7F, 0x80, 0xFE, 0xFF];
const ITERATIONS: usize = 400;

fn mutate(rng: &mut StdRng, input: &mut Vec<u8>) {
    for _ in 0..rng.gen_range(1..4) {
        let len = input.len();
        match rng.gen_range(0..6) {
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
                let n = rng.gen_range(1..=(len - at).min(12));
                input.drain(at..at + n);
            }
            3 => {
                let at = rng.gen_range(0..=len);
                let bytes: Vec<u8> = (0..rng.gen_range(1..12)).map(|_| rng.gen()).collect();
                input.splice(at..at, bytes);
            }
            4 if len >= 4 => {
                let at = rng.gen_range(0..=len - 4);
                let v: i32 = [0, -1, 1, i32::MAX, i32::MIN, 168, 4096][rng.gen_range(0..7)];
                input[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => input.truncate(rng.gen_range(0..=len)),
        }
    }
}

/// Runs everything a caller might run on a message; only errors allowed.
fn exercise(frames: &[Vec<u8>], counts: &mut [usize; 2]) {
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    if let Some(first) = refs.first() {
        let _ = detect(first);
    }
    for format in [Format::Byteps, Format::Protobuf] {
        for route in [
            Route::DealerSend,
            Route::RouterRecv,
            Route::RouterSend,
            Route::DealerRecv,
        ] {
            let Ok(env) = Message::parse_frames(format, route, &refs) else {
                counts[1] += 1;
                continue;
            };
            counts[0] += 1;
            let msg = &env.message;
            let emitted = format.emit(&msg.meta).expect("a parsed meta emits");
            let back = format.parse(&emitted).expect("an emitted meta parses");
            assert_eq!(format.emit(&back).unwrap(), emitted);
            let mut meta = msg.meta.clone();
            (meta.sender, meta.recver) = (back.sender, back.recver);
            assert_eq!(back, meta);
            let _ = response(&msg.meta, None);
            if let Ok(Some(view)) = msg.kv() {
                let _ = view.check_values();
                let _ = view.keys().count();
                if let Ok(entries) = view.entries() {
                    assert_eq!(entries.count(), view.num_keys());
                }
                if let Ok(entries) = view.answer_entries() {
                    let bytes: usize = entries.map(|(_, b, _)| b.len()).sum();
                    assert!(bytes <= view.vals().len());
                }
                if let Ok((hot, cold)) = split_kv(&view, |k| k & 1 == 1) {
                    assert_eq!(hot.keys.len() + cold.keys.len(), view.num_keys());
                    hot.check().expect("a split part is valid");
                    cold.check().expect("a split part is valid");
                    let _ = synthesize_push(&msg.meta, 9, 1, &hot);
                }
            }
            if let Ok(split) = msg.split_push(|k| k % 3 == 0) {
                let frames = split.cold.to_frames(format).unwrap();
                let r: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
                Message::parse(format, r[0], &r[1..]).expect("the cold part parses");
            }
        }
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let fixtures = common::all();
    let mut rng = StdRng::seed_from_u64(0x5eed_2eb7a);
    let mut counts = [0usize; 2];
    for f in &fixtures {
        exercise(&f.frames, &mut counts);
        for _ in 0..ITERATIONS {
            let mut frames = f.frames.clone();
            match rng.gen_range(0..10) {
                0 if frames.len() > 1 => {
                    let i = rng.gen_range(0..frames.len());
                    frames.remove(i);
                }
                1 => {
                    let i = rng.gen_range(0..=frames.len());
                    frames.insert(i, vec![0; rng.gen_range(0..16)]);
                }
                _ => {
                    let i = rng.gen_range(0..frames.len());
                    mutate(&mut rng, &mut frames[i]);
                }
            }
            exercise(&frames, &mut counts);
        }
    }
    assert!(counts[0] > 1000, "too few mutants parsed: {counts:?}");
    assert!(counts[1] > 1000, "too few mutants refused: {counts:?}");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut counts = [0usize; 2];
    for _ in 0..3000 {
        let n = rng.gen_range(1..5);
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|_| (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect())
            .collect();
        exercise(&frames, &mut counts);
    }
}
