//! Seeded synthetic push traces shaped like the paper's Figure 4: the top
//! `hot_fraction` of the keys take `hot_share` of all updates ("OA": the
//! top 30 K of 150 M parameters take about 50 %, "SE" about 70 %).
//!
//! # Model
//!
//! Key popularity is Zipf: rank `r` (0 = hottest) has weight
//! `(r + 1)^-s`. Ranks below [`EXACT_RANKS`] are kept one by one; beyond,
//! ranks are grouped in bins 1 % wide whose keys share the bin's mean
//! weight (the Zipf integral over the bin), so a model of 150 M keys takes
//! a few thousand bins. Rank `r` is in a push with probability
//! `π_r = 1 - (1 - q_r)^D`, the chance that it is among `D` draws from
//! this distribution (`q_r` its normalised weight), independently of the
//! other ranks; a key appears at most once per push, as in PS-lite. Ranks
//! of a bin are picked by geometric skips, so a push costs its bins and
//! its keys, not `D`. `D` is solved so that the expected number of
//! distinct keys per push is `keys_per_push`, and `s` so that the expected
//! share of the top `k = round(keys · hot_fraction)` ranks among all
//! updates is `hot_share` (both by bisection on this exact model). Each
//! worker's push of each round is drawn independently (data-parallel
//! workers reading different batches).
//!
//! A key's rank is not its id: rank `r` is key `perm(r) · stride`, where
//! `perm(r) = (a·r + b) mod keys` is a bijection seeded by `key_seed`
//! (traces of different `seed`s share it) and `stride`
//! spreads the keys over PS-lite's key space (default `u64::MAX / keys`,
//! so every server of PS-lite's default key ranges gets its share). Keys
//! of a push are written in ascending order, as PS-lite sends them.

use std::io::{self, Write};

use thiserror::Error;
use zebra_proto::rng::SplitMix64;

use crate::trace::TraceWriter;

/// Ranks kept one by one before binning starts.
pub const EXACT_RANKS: u64 = 4096;
/// Growth of a bin's width beyond [`EXACT_RANKS`] (1 %).
const BIN_GROWTH: f64 = 0.01;

/// The paper's two Figure 4 workloads: which share of the updates the top
/// 30 K of 150 M keys (0.02 %) take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// "OA": about 50 %.
    Oa,
    /// "SE": about 70 %.
    Se,
}

impl Shape {
    /// `(hot_fraction, hot_share)` of the shape.
    pub fn target(self) -> (f64, f64) {
        let fraction = 30_000.0 / 150_000_000.0;
        match self {
            Shape::Oa => (fraction, 0.5),
            Shape::Se => (fraction, 0.7),
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    /// Distinct keys in the model.
    pub keys: u64,
    /// Share of the keys that are "top" (`k = round(keys · hot_fraction)`).
    pub hot_fraction: f64,
    /// Share of all updates the top `k` keys should take, in `(0, 1)`.
    pub hot_share: f64,
    /// Use this Zipf exponent instead of fitting one to `hot_share`.
    pub exponent: Option<f64>,
    /// Expected distinct keys per push.
    pub keys_per_push: u32,
    /// Workers; each pushes once per round.
    pub workers: u32,
    /// Rounds.
    pub rounds: u32,
    /// `f32` values per key (PS-lite `val_len`).
    pub values: u32,
    /// Key id of rank `r` is `perm(r) · stride`; `None`: `u64::MAX / keys`.
    pub stride: Option<u64>,
    /// Seed of every push's draws.
    pub seed: u64,
    /// Seed of the rank → key permutation (traces of one job share it).
    pub key_seed: u64,
}

impl SynthSpec {
    /// A spec for `shape` with the given sizes, values 1, default stride.
    pub fn new(shape: Shape, keys: u64, keys_per_push: u32, workers: u32, rounds: u32) -> Self {
        let (hot_fraction, hot_share) = shape.target();
        SynthSpec {
            keys,
            hot_fraction,
            hot_share,
            exponent: None,
            keys_per_push,
            workers,
            rounds,
            values: 1,
            stride: None,
            seed: 1,
            key_seed: 1,
        }
    }

    /// The number of top keys `k` the target share is about.
    pub fn hot_keys(&self) -> u64 {
        ((self.keys as f64 * self.hot_fraction).round() as u64).clamp(1, self.keys)
    }
}

/// A spec that cannot be generated.
#[derive(Debug, Error, PartialEq)]
pub enum SynthError {
    /// A size or share out of range.
    #[error("{0}")]
    Invalid(String),
    /// No exponent reaches the target share with these sizes.
    #[error("top {k} keys cannot take {target:.3} of the updates with {keys_per_push} keys per push (reachable: {low:.3}..{high:.3}); change --keys-per-push or --hot-share")]
    Unreachable {
        /// Top keys.
        k: u64,
        /// Requested share.
        target: f64,
        /// Keys per push.
        keys_per_push: u32,
        /// Share at the smallest exponent tried.
        low: f64,
        /// Share at the largest exponent tried.
        high: f64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Bin {
    start: u64,
    width: u64,
    /// Sum of the Zipf weights of the bin's ranks (unnormalised).
    weight: f64,
}

/// The fitted model: popularity bins, draws per push, exponent.
#[derive(Debug, Clone)]
pub struct Model {
    bins: Vec<Bin>,
    /// Inclusion probability `π` of each bin's ranks.
    pi: Vec<f64>,
    total: f64,
    /// Zipf exponent `s`.
    pub exponent: f64,
    /// Draws per push `D`.
    pub draws: f64,
    /// Expected distinct keys per push.
    pub expected_keys_per_push: f64,
    /// Expected share of the top `k` among all updates.
    pub expected_hot_share: f64,
}

fn zipf_bins(keys: u64, s: f64) -> Vec<Bin> {
    let integral = |a: f64, b: f64| {
        if (s - 1.0).abs() < 1e-9 {
            (b / a).ln()
        } else {
            (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s)
        }
    };
    let mut bins = Vec::new();
    let mut start = 0u64;
    while start < keys {
        let end = if start < EXACT_RANKS {
            start + 1
        } else {
            (start + ((start as f64 * BIN_GROWTH) as u64).max(1)).min(keys)
        };
        let weight = if end == start + 1 {
            ((start + 1) as f64).powf(-s)
        } else {
            integral(start as f64 + 0.5, end as f64 + 0.5)
        };
        bins.push(Bin {
            start,
            width: end - start,
            weight,
        });
        start = end;
    }
    bins
}

/// Probability that a key of normalised weight `q` is in a push of `d` draws.
fn inclusion(q: f64, d: f64) -> f64 {
    -(d * (-q).ln_1p()).exp_m1()
}

/// Expected distinct keys per push, and of those, the expected number from
/// the top `k` ranks.
fn expected(bins: &[Bin], total: f64, d: f64, k: u64) -> (f64, f64) {
    let (mut all, mut top) = (0.0, 0.0);
    for b in bins {
        let per_key = inclusion(b.weight / b.width as f64 / total, d);
        all += per_key * b.width as f64;
        if b.start < k {
            top += per_key * (k - b.start).min(b.width) as f64;
        }
    }
    (all, top)
}

/// Draws per push giving `m` expected distinct keys, by bisection.
fn solve_draws(bins: &[Bin], total: f64, m: f64) -> f64 {
    let (mut lo, mut hi) = (m, m);
    while expected(bins, total, hi, 0).0 < m && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if expected(bins, total, mid, 0).0 < m {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

impl Model {
    /// Fits the exponent (unless given) and the draws per push to `spec`.
    pub fn fit(spec: &SynthSpec) -> Result<Model, SynthError> {
        check(spec)?;
        let k = spec.hot_keys();
        let m = f64::from(spec.keys_per_push);
        let share_at = |s: f64| {
            let bins = zipf_bins(spec.keys, s);
            let total: f64 = bins.iter().map(|b| b.weight).sum();
            let d = solve_draws(&bins, total, m);
            let (all, top) = expected(&bins, total, d, k);
            (top / all, bins, total, d, all)
        };
        let s = match spec.exponent {
            Some(s) => s,
            None => {
                let (mut lo, mut hi) = (0.0, 3.0);
                let (low, high) = (share_at(lo).0, share_at(hi).0);
                if !(low..=high).contains(&spec.hot_share) {
                    return Err(SynthError::Unreachable {
                        k,
                        target: spec.hot_share,
                        keys_per_push: spec.keys_per_push,
                        low,
                        high,
                    });
                }
                for _ in 0..40 {
                    let mid = 0.5 * (lo + hi);
                    if share_at(mid).0 < spec.hot_share {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                0.5 * (lo + hi)
            }
        };
        let (share, bins, total, d, all) = share_at(s);
        let pi = bins
            .iter()
            .map(|b| inclusion(b.weight / b.width as f64 / total, d))
            .collect();
        Ok(Model {
            bins,
            pi,
            total,
            exponent: s,
            draws: d,
            expected_keys_per_push: all,
            expected_hot_share: share,
        })
    }

    /// Appends the ranks of one push, ascending.
    fn push_ranks(&self, rng: &mut SplitMix64, ranks: &mut Vec<u64>) {
        for (b, &pi) in self.bins.iter().zip(&self.pi) {
            let end = b.start + b.width;
            if pi >= 1.0 - 1e-12 {
                ranks.extend(b.start..end);
                continue;
            }
            let log_miss = (-pi).ln_1p();
            let mut at = b.start;
            loop {
                let skip = (1.0 - rng.unit()).ln() / log_miss;
                if skip >= (end - at) as f64 {
                    break;
                }
                at += skip as u64;
                ranks.push(at);
                at += 1;
            }
        }
    }

    /// The expected update share of the top `k` ranks.
    pub fn expected_share(&self, k: u64) -> f64 {
        let (all, top) = expected(&self.bins, self.total, self.draws, k);
        top / all
    }
}

fn check(spec: &SynthSpec) -> Result<(), SynthError> {
    let bad = |m: String| Err(SynthError::Invalid(m));
    if spec.keys < 2 {
        return bad(format!("--keys {} must be at least 2", spec.keys));
    }
    if !(spec.hot_fraction > 0.0 && spec.hot_fraction < 1.0) {
        return bad(format!(
            "--hot-fraction {} must be in (0, 1)",
            spec.hot_fraction
        ));
    }
    if !(spec.hot_share > 0.0 && spec.hot_share < 1.0) {
        return bad(format!("--hot-share {} must be in (0, 1)", spec.hot_share));
    }
    if let Some(s) = spec.exponent {
        if !(0.0..=10.0).contains(&s) {
            return bad(format!("--zipf {s} must be in [0, 10]"));
        }
    }
    if spec.keys_per_push == 0 || u64::from(spec.keys_per_push) * 2 > spec.keys {
        return bad(format!(
            "--keys-per-push {} must be in 1..={} (half of --keys)",
            spec.keys_per_push,
            spec.keys / 2
        ));
    }
    if spec.workers == 0 || spec.rounds == 0 || spec.values == 0 {
        return bad("--workers, --rounds and --values must be at least 1".into());
    }
    if spec.stride == Some(0) {
        return bad("--stride must be at least 1".into());
    }
    let stride = spec.stride.unwrap_or(u64::MAX / spec.keys);
    if (spec.keys - 1).checked_mul(stride).is_none() {
        return bad(format!(
            "--stride {stride} x --keys {} passes the 64-bit key space",
            spec.keys
        ));
    }
    Ok(())
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Rank → key id: a seeded affine bijection of `0..keys`, times a stride.
#[derive(Debug, Clone, Copy)]
pub struct KeyMap {
    keys: u64,
    a: u64,
    b: u64,
    stride: u64,
}

impl KeyMap {
    /// The map of `spec` (whose `keys` must be at least 2).
    pub fn new(spec: &SynthSpec) -> KeyMap {
        let mut rng = SplitMix64::new(spec.key_seed ^ 0x6b65_796d_6170);
        let keys = spec.keys.max(2);
        let mut a = 1 + rng.below(keys - 1);
        while gcd(a, keys) != 1 {
            a = 1 + rng.below(keys - 1);
        }
        KeyMap {
            keys,
            a,
            b: rng.below(keys),
            stride: spec.stride.unwrap_or(u64::MAX / keys),
        }
    }

    /// The key id of rank `rank`.
    pub fn key(&self, rank: u64) -> u64 {
        let p =
            (u128::from(self.a) * u128::from(rank) + u128::from(self.b)) % u128::from(self.keys);
        p as u64 * self.stride
    }
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// Records (one per worker and round).
    pub records: u64,
    /// `(key, values)` pairs.
    pub pairs: u64,
    /// Pairs of the top `k` ranks (the model's hot keys).
    pub top_pairs: u64,
    /// Bytes of the trace.
    pub bytes: u64,
}

/// Writes the trace of `spec` from the fitted `model`.
pub fn generate<W: Write>(
    spec: &SynthSpec,
    model: &Model,
    out: &mut TraceWriter<W>,
) -> io::Result<Generated> {
    let map = KeyMap::new(spec);
    let k = spec.hot_keys();
    let mut rng = SplitMix64::new(spec.seed);
    let mut ranks = Vec::new();
    let mut pairs = Vec::new();
    let mut g = Generated {
        records: 0,
        pairs: 0,
        top_pairs: 0,
        bytes: 0,
    };
    for round in 0..spec.rounds {
        for worker in 0..spec.workers {
            ranks.clear();
            model.push_ranks(&mut rng, &mut ranks);
            g.top_pairs += ranks.partition_point(|&r| r < k) as u64;
            pairs.clear();
            pairs.extend(ranks.iter().map(|&r| (map.key(r), spec.values)));
            pairs.sort_unstable();
            if !out.record(worker, round, &pairs)? {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "the trace reached its size bound",
                ));
            }
            g.records += 1;
            g.pairs += pairs.len() as u64;
        }
    }
    out.flush()?;
    g.bytes = out.bytes_written();
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_rank_once() {
        for keys in [2u64, 4096, 4097, 10_000, 3_000_000] {
            let bins = zipf_bins(keys, 1.1);
            let mut next = 0;
            for b in &bins {
                assert_eq!(b.start, next);
                assert!(b.width >= 1 && b.weight > 0.0);
                next += b.width;
            }
            assert_eq!(next, keys);
        }
        assert!(zipf_bins(150_000_000, 1.0).len() < 6000);
    }

    #[test]
    fn fit_reaches_targets_and_rejects_the_unreachable() {
        let spec = SynthSpec::new(Shape::Oa, 1_000_000, 200, 1, 1);
        let m = Model::fit(&spec).unwrap();
        assert!((m.expected_hot_share - 0.5).abs() < 1e-3, "{m:?}");
        assert!((m.expected_keys_per_push - 200.0).abs() < 0.5);
        assert!((m.expected_share(spec.hot_keys()) - 0.5).abs() < 0.01);
        let mut wide = spec.clone();
        wide.keys_per_push = 1000;
        let err = Model::fit(&wide).unwrap_err();
        assert!(
            matches!(err, SynthError::Unreachable { k: 200, .. }),
            "{err}"
        );
        let mut bad = spec.clone();
        bad.hot_share = 1.0;
        assert!(matches!(Model::fit(&bad), Err(SynthError::Invalid(_))));
        bad = spec.clone();
        bad.stride = Some(u64::MAX);
        assert!(Model::fit(&bad).unwrap_err().to_string().contains("64-bit"));
    }

    #[test]
    fn key_map_is_a_seeded_bijection_over_the_key_space() {
        let mut spec = SynthSpec::new(Shape::Se, 1000, 10, 1, 1);
        let map = KeyMap::new(&spec);
        let mut keys: Vec<u64> = (0..1000).map(|r| map.key(r)).collect();
        assert_ne!(keys[..5], [0, 1, 2, 3, 4].map(|r| r * (u64::MAX / 1000)));
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 1000);
        assert!(keys.iter().all(|k| k % (u64::MAX / 1000) == 0));
        assert!(*keys.last().unwrap() > u64::MAX / 2);
        spec.seed = 2;
        assert_eq!(KeyMap::new(&spec).key(0), map.key(0));
        spec.key_seed = 2;
        assert_ne!(KeyMap::new(&spec).key(0), map.key(0));
    }
}
