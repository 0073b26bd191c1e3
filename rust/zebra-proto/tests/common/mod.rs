//! What the integration tests share.

use zebra_proto::rng::SplitMix64;

/// A seeded mutation of a real datagram: flipped bits, a cut or grown
/// buffer, another packet type (0, which none has, to 11), a random
/// byte after the magic and version, or pure noise.
pub fn mutate(rng: &mut SplitMix64, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    match rng.below(6) {
        0 => {
            for _ in 0..=rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
        2 => b.extend((0..rng.below(40)).map(|_| rng.next_u64() as u8)),
        3 => {
            if b.len() > 3 {
                b[3] = rng.below(12) as u8;
            }
        }
        4 => {
            if b.len() > 8 {
                let i = 4 + rng.below(b.len() as u64 - 4) as usize;
                b[i] = rng.next_u64() as u8;
            }
        }
        _ => b = (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect(),
    }
    b
}
