//! How well a hot set found from a sample matches the full-data one (paper
//! §V-C, Figure 9).
//!
//! - Precision: `|H_g ∩ H_s| / |H_g|`, the share of the full-data hot set
//!   `H_g` that the sampled hot set `H_s` found.
//! - Kendall tau distance, normalised: over the keys in both sets, the
//!   share of key pairs the two rankings order differently (0 = the same
//!   order, 1 = reversed). Rankings are strict (ties broken by key), so
//!   every pair is either concordant or discordant.

use std::collections::{HashMap, HashSet};

use crate::profile::{Ranking, Sample};

/// `|full ∩ sampled| / |full|` (1 for an empty `full`).
pub fn precision(full: &[u64], sampled: &[u64]) -> f64 {
    if full.is_empty() {
        return 1.0;
    }
    let s: HashSet<u64> = sampled.iter().copied().collect();
    full.iter().filter(|k| s.contains(k)).count() as f64 / full.len() as f64
}

/// Normalised Kendall tau distance between two rankings (hottest first)
/// restricted to the keys both hold, with the number of those keys.
/// `None` when fewer than two keys are common.
pub fn kendall_tau_distance(full: &[u64], sampled: &[u64]) -> Option<(f64, usize)> {
    let pos: HashMap<u64, usize> = sampled.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let mut seq: Vec<usize> = full.iter().filter_map(|k| pos.get(k).copied()).collect();
    let n = seq.len();
    if n < 2 {
        return None;
    }
    let discordant = inversions(&mut seq);
    let pairs = n as u64 * (n as u64 - 1) / 2;
    Some((discordant as f64 / pairs as f64, n))
}

/// Normalised Kendall tau distance between two top-k lists (hottest
/// first) over the union of their keys: a key missing from a list ranks
/// below all of that list's keys, tied with the other missing ones, and a
/// pair tied in either list counts as no disagreement (Fagin, Kumar and
/// Sivakumar's `K^(0)`). 0 for the same order, 1 when every pair is
/// ordered the other way; two disjoint lists are far apart (each key of
/// one against each key of the other). 0 for fewer than two keys.
pub fn kendall_tau_topk(a: &[u64], b: &[u64]) -> f64 {
    let pos = |list: &[u64]| -> HashMap<u64, usize> {
        list.iter().enumerate().map(|(i, &k)| (k, i)).collect()
    };
    let (pa, pb) = (pos(a), pos(b));
    let mut union: Vec<u64> = a.to_vec();
    union.extend(b.iter().filter(|k| !pa.contains_key(k)));
    let n = union.len();
    if n < 2 {
        return 0.0;
    }
    let mut ranks: Vec<(usize, usize)> = union
        .iter()
        .map(|k| {
            let ra = pa.get(k).copied().unwrap_or(a.len());
            let rb = pb.get(k).copied().unwrap_or(b.len());
            (ra, rb)
        })
        .collect();
    ranks.sort_unstable();
    let mut seq: Vec<usize> = ranks.into_iter().map(|r| r.1).collect();
    let pairs = n as u64 * (n as u64 - 1) / 2;
    inversions(&mut seq) as f64 / pairs as f64
}

/// Number of pairs `i < j` with `v[i] > v[j]`, by merge sort (sorts `v`).
fn inversions(v: &mut [usize]) -> u64 {
    let mut buf = v.to_vec();
    let mut count = 0u64;
    let mut width = 1;
    while width < v.len() {
        for start in (0..v.len()).step_by(2 * width) {
            let mid = (start + width).min(v.len());
            let end = (start + 2 * width).min(v.len());
            let (mut i, mut j, mut o) = (start, mid, start);
            while i < mid && j < end {
                if v[j] < v[i] {
                    count += (mid - i) as u64;
                    buf[o] = v[j];
                    j += 1;
                } else {
                    buf[o] = v[i];
                    i += 1;
                }
                o += 1;
            }
            buf[o..o + mid - i].copy_from_slice(&v[i..mid]);
            let o = o + mid - i;
            buf[o..o + end - j].copy_from_slice(&v[j..end]);
        }
        v.copy_from_slice(&buf);
        width *= 2;
    }
    count
}

/// The precision of one sampling rate, over one or more seeded samples.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingPoint {
    /// Share of the records sampled, `(0, 1]`.
    pub rate: f64,
    /// Each worker's first this many records only (see [`Sample::first`]).
    pub first: Option<u32>,
    /// Hot keys compared (`|H_g|`; `H_s` holds as many).
    pub k: usize,
    /// Precision of each sample.
    pub precision: Vec<f64>,
    /// Kendall tau distance of each sample (`NaN` when < 2 keys common).
    pub tau: Vec<f64>,
}

impl SamplingPoint {
    /// Mean precision.
    pub fn mean_precision(&self) -> f64 {
        mean(&self.precision)
    }

    /// Lowest precision.
    pub fn min_precision(&self) -> f64 {
        self.precision.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// Mean Kendall tau distance.
    pub fn mean_tau(&self) -> f64 {
        mean(&self.tau)
    }
}

/// Compares the top `k` of each sample with the top `k` of `full`, one
/// [`SamplingPoint`] per distinct rate and first-rounds window (in the
/// order first met).
pub fn sweep(full: &Ranking, k: usize, samples: &[Sample]) -> Vec<SamplingPoint> {
    let truth = full.top(k);
    let mut points: Vec<SamplingPoint> = Vec::new();
    for s in samples {
        let found = s.counts.rank().top(k);
        let tau = kendall_tau_distance(&truth, &found).map_or(f64::NAN, |t| t.0);
        let p = precision(&truth, &found);
        match points
            .iter_mut()
            .find(|x| x.rate == s.rate && x.first == s.first)
        {
            Some(x) => {
                x.precision.push(p);
                x.tau.push(tau);
            }
            None => points.push(SamplingPoint {
                rate: s.rate,
                first: s.first,
                k: truth.len(),
                precision: vec![p],
                tau: vec![tau],
            }),
        }
    }
    points
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(full: &[u64], sampled: &[u64]) -> f64 {
        let common: Vec<u64> = full
            .iter()
            .copied()
            .filter(|k| sampled.contains(k))
            .collect();
        let at = |k: u64| sampled.iter().position(|&x| x == k).unwrap();
        let mut d = 0;
        for i in 0..common.len() {
            for j in i + 1..common.len() {
                if at(common[i]) > at(common[j]) {
                    d += 1;
                }
            }
        }
        d as f64 / (common.len() * (common.len() - 1) / 2) as f64
    }

    #[test]
    fn precision_counts_the_found_share() {
        assert_eq!(precision(&[1, 2, 3, 4], &[4, 9, 2, 8]), 0.5);
        assert_eq!(precision(&[1, 2], &[]), 0.0);
        assert_eq!(precision(&[], &[1]), 1.0);
    }

    #[test]
    fn kendall_tau_matches_the_definition() {
        assert_eq!(kendall_tau_distance(&[1, 2, 3], &[1, 2, 3]), Some((0.0, 3)));
        assert_eq!(kendall_tau_distance(&[1, 2, 3], &[3, 2, 1]), Some((1.0, 3)));
        assert_eq!(kendall_tau_distance(&[1, 2, 3], &[9, 3]), None);
        let (d, n) = kendall_tau_distance(&[1, 2, 3, 4], &[2, 1, 7, 3]).unwrap();
        assert_eq!((d, n), (1.0 / 3.0, 3));
        let mut rng = zebra_proto::rng::SplitMix64::new(9);
        for len in [2usize, 3, 7, 64, 200] {
            let full: Vec<u64> = (0..len as u64).collect();
            let mut sampled: Vec<u64> = (0..len as u64 + 20).collect();
            rng.shuffle(&mut sampled);
            sampled.truncate(len);
            if let Some((d, _)) = kendall_tau_distance(&full, &sampled) {
                assert!((d - brute(&full, &sampled)).abs() < 1e-12, "{len}");
            }
        }
    }

    #[test]
    fn topk_distance_counts_missing_keys_below() {
        assert_eq!(kendall_tau_topk(&[1, 2, 3], &[1, 2, 3]), 0.0);
        assert_eq!(kendall_tau_topk(&[1, 2, 3], &[3, 2, 1]), 1.0);
        assert_eq!(kendall_tau_topk(&[1], &[1]), 0.0);
        // Disjoint {1,2} and {3,4}: the four cross pairs disagree, the two
        // pairs within a list are tied in the other: 4 of 6.
        assert!((kendall_tau_topk(&[1, 2], &[3, 4]) - 4.0 / 6.0).abs() < 1e-12);
        // The last key replaced: each list ranks its own last key above the
        // other's missing one, so only the pair (3, 4) disagrees: 1 of 6.
        let d = kendall_tau_topk(&[1, 2, 3], &[1, 2, 4]);
        assert!((d - 1.0 / 6.0).abs() < 1e-12, "{d}");
        let brute = |a: &[u64], b: &[u64]| {
            let mut u: Vec<u64> = a.to_vec();
            u.extend(b.iter().filter(|k| !a.contains(k)));
            let r = |l: &[u64], k: u64| l.iter().position(|&x| x == k).unwrap_or(l.len());
            let mut bad = 0;
            for i in 0..u.len() {
                for j in i + 1..u.len() {
                    let (x, y) = (u[i], u[j]);
                    let da = r(a, x) as i64 - r(a, y) as i64;
                    let db = r(b, x) as i64 - r(b, y) as i64;
                    if da * db < 0 {
                        bad += 1;
                    }
                }
            }
            bad as f64 / (u.len() * (u.len() - 1) / 2) as f64
        };
        let a = [5, 9, 2, 7, 1, 8];
        let b = [9, 5, 3, 7, 4];
        assert!((kendall_tau_topk(&a, &b) - brute(&a, &b)).abs() < 1e-12);
    }

    #[test]
    fn sampling_point_statistics() {
        let p = SamplingPoint {
            rate: 0.04,
            first: None,
            k: 10,
            precision: vec![0.9, 0.7],
            tau: vec![0.1, 0.3],
        };
        assert!((p.mean_precision() - 0.8).abs() < 1e-12);
        assert_eq!(p.min_precision(), 0.7);
        assert!((p.mean_tau() - 0.2).abs() < 1e-12);
    }
}
