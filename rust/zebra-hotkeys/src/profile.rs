//! Offline profiling (paper §III-C): count how often each key is pushed,
//! rank the keys, choose `k` by Principle 1, write the hot-keys file.
//!
//! Principle 1: the smallest `k` whose top keys take a share `p` of all
//! updates (`T_k / T_n ≥ p`), as long as their values fit in the job's
//! share `c` of the switch memory `m` (`4 B · Σ values ≤ c · m`); when
//! they do not, the largest `k` that fits. A key's update count is the
//! number of pushes that carry it; its values are its PS-lite `val_len`.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;
use zebra_proto::consts::{MAX_REGISTERS, MAX_REGISTER_ENTRIES, VALUE_LEN};
use zebra_proto::rng::SplitMix64;

use crate::trace::{self, Record, TraceError};

/// Most hot values (switch register entries) one job can have.
pub const MAX_HOT_VALUES: u64 = (MAX_REGISTERS * MAX_REGISTER_ENTRIES) as u64;

/// Profiling that failed.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// A trace that cannot be read.
    #[error("{path}: {source}")]
    Trace {
        /// The file.
        path: PathBuf,
        /// Why.
        source: TraceError,
    },
    /// A setting out of range.
    #[error("{0}")]
    Invalid(String),
}

/// Update statistics of one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyStat {
    /// Pushes that carried the key.
    pub count: u64,
    /// Values pushed for the key, over all those pushes.
    pub values: u64,
    /// Its value count in the first push seen.
    pub len: u32,
    /// Whether some push carried another value count.
    pub mixed: bool,
}

/// Update counts of the keys of the records added.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    keys: HashMap<u64, KeyStat>,
    /// Records added.
    pub records: u64,
}

impl Counts {
    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        for &(key, len) in &r.pairs {
            let s = self.keys.entry(key).or_insert(KeyStat {
                len,
                ..KeyStat::default()
            });
            s.count += 1;
            s.values += u64::from(len);
            s.mixed |= s.len != len;
        }
    }

    /// The statistics of `key`, if it was pushed.
    pub fn get(&self, key: u64) -> Option<&KeyStat> {
        self.keys.get(&key)
    }

    /// Keys ranked by update count (ties: smaller key first). Keys pushed
    /// with zero values carry nothing and are left out of the ranking but
    /// not of the totals.
    pub fn rank(&self) -> Ranking {
        let mut keys: Vec<(u64, KeyStat)> = self
            .keys
            .iter()
            .filter(|(_, s)| s.len > 0)
            .map(|(&k, &s)| (k, s))
            .collect();
        keys.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(&b.0)));
        Ranking {
            updates: self.keys.values().map(|s| s.count).sum(),
            values: self.keys.values().map(|s| s.values).sum(),
            mixed: self.keys.values().filter(|s| s.mixed).count() as u64,
            records: self.records,
            keys,
        }
    }
}

/// Keys hottest first, with the totals they are shares of.
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    /// `(key, statistics)`, hottest first.
    pub keys: Vec<(u64, KeyStat)>,
    /// All updates `T_n`.
    pub updates: u64,
    /// All values pushed.
    pub values: u64,
    /// Keys pushed with more than one value count.
    pub mixed: u64,
    /// Records counted.
    pub records: u64,
}

impl Ranking {
    /// The top `k` keys, hottest first.
    pub fn top(&self, k: usize) -> Vec<u64> {
        self.keys.iter().take(k).map(|e| e.0).collect()
    }

    /// Shares of updates and of values the top `k` keys take.
    pub fn shares(&self, k: usize) -> (f64, f64) {
        let (u, v) = self
            .keys
            .iter()
            .take(k)
            .fold((0u64, 0u64), |(u, v), e| (u + e.1.count, v + e.1.values));
        (ratio(u, self.updates), ratio(v, self.values))
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Principle 1's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Principle1 {
    /// Target share of updates, `(0, 1]`.
    pub p: f64,
    /// The job's share of the switch memory, `(0, 1]`.
    pub c: f64,
    /// Switch register memory in bytes (`m`).
    pub switch_mem: u64,
}

impl Default for Principle1 {
    fn default() -> Self {
        Principle1 {
            p: 0.5,
            c: 1.0,
            switch_mem: MAX_HOT_VALUES * VALUE_LEN as u64,
        }
    }
}

/// What stopped `k` from growing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The top `k` reached the share `p`.
    Share,
    /// The next key's values would not fit in `c · m`.
    Memory,
    /// The next key's values would pass the switch's register entries.
    Capacity,
    /// Every ranked key is hot and the share is still below `p`.
    AllKeys,
}

/// The `k` Principle 1 chose and what it predicts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    /// Hot keys.
    pub k: usize,
    /// Hot values (switch register entries).
    pub hot_values: u64,
    /// Share of updates of the top `k` (`T_k / T_n`).
    pub update_share: f64,
    /// Share of pushed values of the top `k` (the predicted gain in
    /// server-bound value bytes).
    pub value_share: f64,
    /// Why `k` is not larger.
    pub limit: Limit,
}

impl Principle1 {
    /// Checks the ranges of `p` and `c`.
    pub fn check(&self) -> Result<(), ProfileError> {
        if !(self.p > 0.0 && self.p <= 1.0) {
            return Err(ProfileError::Invalid(format!(
                "--p {} must be in (0, 1]",
                self.p
            )));
        }
        if !(self.c > 0.0 && self.c <= 1.0) {
            return Err(ProfileError::Invalid(format!(
                "--c {} must be in (0, 1]",
                self.c
            )));
        }
        Ok(())
    }

    /// Chooses `k` over `ranking`.
    pub fn choose(&self, ranking: &Ranking) -> Choice {
        let budget = self.c * self.switch_mem as f64;
        let target = self.p * ranking.updates as f64;
        let (mut k, mut updates, mut values, mut hot) = (0usize, 0u64, 0u64, 0u64);
        let limit = loop {
            if k > 0 && updates as f64 >= target {
                break Limit::Share;
            }
            let Some((_, s)) = ranking.keys.get(k) else {
                break Limit::AllKeys;
            };
            let next = hot + u64::from(s.len);
            if next > MAX_HOT_VALUES {
                break Limit::Capacity;
            }
            if (next * VALUE_LEN as u64) as f64 > budget {
                break Limit::Memory;
            }
            hot = next;
            updates += s.count;
            values += s.values;
            k += 1;
        };
        Choice {
            k,
            hot_values: hot,
            update_share: ratio(updates, ranking.updates),
            value_share: ratio(values, ranking.values),
            limit,
        }
    }
}

/// Whether record `index` is in the sample of rate `rate` drawn with
/// `seed`. The decision of each record is independent of the others, and
/// a sample of a lower rate is a subset of one of a higher rate with the
/// same seed.
pub fn keep(seed: u64, index: u64, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let base = SplitMix64::new(seed).next_u64();
    SplitMix64::new(base ^ index.wrapping_mul(0xD6E8_FEB8_6659_FD93)).unit() < rate
}

/// A seeded sample of the records and its counts.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Share of the records kept, `(0, 1]`.
    pub rate: f64,
    /// Seed of the sample.
    pub seed: u64,
    /// Keep only each worker's first this many records (its first rounds: what
    /// an online ranking has seen after them).
    pub first: Option<u32>,
    /// Counts of the kept records.
    pub counts: Counts,
}

impl Sample {
    /// An empty sample.
    pub fn new(rate: f64, seed: u64) -> Sample {
        Sample {
            rate,
            seed,
            first: None,
            counts: Counts::default(),
        }
    }

    /// Every worker's first `rounds` records, all of them.
    pub fn first_rounds(rounds: u32) -> Sample {
        Sample {
            first: Some(rounds),
            ..Sample::new(1.0, 0)
        }
    }

    /// Whether the record `index` of the scan, the worker's record number
    /// `nth` (from 0), is in the sample.
    fn takes(&self, index: u64, nth: u32) -> bool {
        self.first.is_none_or(|n| nth < n) && keep(self.seed, index, self.rate)
    }
}

/// Bytes a PS-lite push entry takes: the key (8), its length in the lens
/// frame (4) and 4 per value.
fn entry_bytes(values: u32) -> u64 {
    12 + 4 * u64::from(values)
}

/// What aggregating a set of hot keys leaves of the pushes' bytes at the
/// servers, from the traces: each push's cold entries, and per round one
/// aggregate holding 4 bytes per value of every hot key some worker pushed
/// in that round (a round: the records with the same round number). Not
/// counted: messages' headers, the PUSH trailers, packet headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytePrediction {
    /// Bytes of every pushed entry (key, length, values).
    pub whole: u64,
    /// Of which the cold entries.
    pub cold: u64,
    /// The rounds' aggregates.
    pub aggregates: u64,
}

impl BytePrediction {
    /// The servers' bytes with aggregation over those without (`NaN` for
    /// empty traces).
    pub fn ratio(&self) -> f64 {
        (self.cold + self.aggregates) as f64 / self.whole as f64
    }
}

/// Reads every record of `paths` and predicts the bytes with the keys of
/// `hot` aggregated (see [`BytePrediction`]). Memory grows with the hot
/// keys pushed per round, summed over the rounds.
pub fn predict_bytes(
    paths: &[PathBuf],
    hot: &HashSet<u64>,
) -> Result<BytePrediction, ProfileError> {
    let mut p = BytePrediction::default();
    let mut seen: HashSet<(u32, u64)> = HashSet::new();
    read_records(paths, &mut |_| {}, |record| {
        for &(key, values) in &record.pairs {
            let bytes = entry_bytes(values);
            p.whole += bytes;
            if !hot.contains(&key) {
                p.cold += bytes;
            } else if seen.insert((record.round, key)) {
                p.aggregates += 4 * u64::from(values);
            }
        }
    })?;
    Ok(p)
}

/// How one trace file was read.
#[derive(Debug, Clone)]
pub struct FileScan {
    /// The file.
    pub path: PathBuf,
    /// Records read.
    pub records: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Set when the file ends inside a record (a recording cut short): the
    /// records before it were used.
    pub truncated: Option<String>,
}

/// Reads every record of `paths` once and offers it to every sample
/// (progress and files cut short as in [`read_records`]).
pub fn scan(
    paths: &[PathBuf],
    samples: &mut [Sample],
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<FileScan>, ProfileError> {
    let mut index = 0u64;
    let mut per_worker: HashMap<u32, u32> = HashMap::new();
    read_records(paths, progress, |record| {
        let nth = per_worker.entry(record.worker).or_insert(0);
        for s in samples.iter_mut() {
            if s.takes(index, *nth) {
                s.counts.add(record);
            }
        }
        *nth = nth.saturating_add(1);
        index += 1;
    })
}

/// Reads every record of `paths` in order and gives it to `visit`;
/// `progress` is called with the bytes read so far after every record. A
/// file that ends inside a record is used up to there and reported in its
/// [`FileScan`]; any other bad byte is an error.
fn read_records(
    paths: &[PathBuf],
    progress: &mut dyn FnMut(u64),
    mut visit: impl FnMut(&Record),
) -> Result<Vec<FileScan>, ProfileError> {
    let mut done = 0u64;
    let mut record = Record::default();
    let mut scans = Vec::with_capacity(paths.len());
    for path in paths {
        let err = |source| ProfileError::Trace {
            path: path.clone(),
            source,
        };
        let mut reader = trace::open(path).map_err(err)?;
        let mut fs = FileScan {
            path: path.clone(),
            records: 0,
            bytes: 0,
            truncated: None,
        };
        loop {
            match reader.next_into(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e @ TraceError::Truncated { .. }) => {
                    fs.truncated = Some(e.to_string());
                    break;
                }
                Err(e) => return Err(err(e)),
            }
            visit(&record);
            fs.records += 1;
            progress(done + reader.offset());
        }
        fs.bytes = reader.offset();
        done += fs.bytes;
        scans.push(fs);
    }
    Ok(scans)
}

/// Writes the hot-keys file: `header` lines as `#` comments, then the top
/// `k` keys hottest first, `KEY VALUES` each, or `A-B VALUES` for a run
/// of consecutive keys (ascending, one apart) with the same value count.
pub fn write_hot_keys(
    out: &mut (impl Write + ?Sized),
    ranking: &Ranking,
    k: usize,
    header: &[String],
) -> io::Result<()> {
    for h in header {
        writeln!(out, "# {h}")?;
    }
    let mut run: Option<(u64, u64, u32)> = None;
    for &(key, s) in ranking.keys.iter().take(k) {
        run = match run {
            Some((a, b, len)) if len == s.len && b.checked_add(1) == Some(key) => {
                Some((a, key, len))
            }
            Some(done) => {
                write_entry(out, done)?;
                Some((key, key, s.len))
            }
            None => Some((key, key, s.len)),
        };
    }
    if let Some(done) = run {
        write_entry(out, done)?;
    }
    Ok(())
}

fn write_entry(out: &mut (impl Write + ?Sized), (a, b, len): (u64, u64, u32)) -> io::Result<()> {
    if a == b {
        writeln!(out, "{a} {len}")
    } else {
        writeln!(out, "{a}-{b} {len}")
    }
}

/// Writes the cumulative share curve (the paper's Figure 4) as CSV:
/// `k,key_share,update_share,value_share`, `key_share` being `k` over the
/// keys ranked. Every `k` up to 64, then steps of 2 %, plus `mark` and the
/// last key.
pub fn write_cdf(
    out: &mut (impl Write + ?Sized),
    ranking: &Ranking,
    mark: usize,
) -> io::Result<()> {
    writeln!(out, "k,key_share,update_share,value_share")?;
    let n = ranking.keys.len();
    let (mut updates, mut values) = (0u64, 0u64);
    let mut next = 1usize;
    for (i, (_, s)) in ranking.keys.iter().enumerate() {
        updates += s.count;
        values += s.values;
        let k = i + 1;
        if k == next || k == mark || k == n {
            writeln!(
                out,
                "{k},{:.9},{:.6},{:.6}",
                k as f64 / n as f64,
                ratio(updates, ranking.updates),
                ratio(values, ranking.values)
            )?;
        }
        if k == next {
            next = if k < 64 { k + 1 } else { k + k.div_ceil(50) };
        }
    }
    Ok(())
}

/// The count of hot keys per server under PS-lite's default key ranges
/// for `servers` servers.
pub fn per_server(keys: &[u64], servers: u16) -> Vec<usize> {
    let n = u64::from(servers.max(1));
    let width = u64::MAX / n;
    let mut per = vec![0usize; n as usize];
    for &k in keys {
        per[(k / width).min(n - 1) as usize] += 1;
    }
    per
}

/// The paths in `paths` that do not exist or are not files.
pub fn missing(paths: &[PathBuf]) -> Vec<&Path> {
    paths
        .iter()
        .filter(|p| !p.is_file())
        .map(PathBuf::as_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pushes: &[&[(u64, u32)]]) -> Counts {
        let mut c = Counts::default();
        for (i, p) in pushes.iter().enumerate() {
            c.add(&Record {
                worker: 0,
                round: i as u32,
                pairs: p.to_vec(),
            });
        }
        c
    }

    #[test]
    fn ranking_counts_pushes_and_values() {
        let c = counts(&[
            &[(7, 2), (3, 1)],
            &[(7, 2), (9, 0)],
            &[(7, 4), (3, 1), (5, 1)],
        ]);
        let r = c.rank();
        assert_eq!(r.top(3), [7, 3, 5]);
        assert_eq!(r.updates, 7);
        assert_eq!(r.values, 11);
        assert_eq!(r.mixed, 1);
        assert_eq!(c.get(7).unwrap().len, 2);
        let (u, v) = r.shares(1);
        assert!((u - 3.0 / 7.0).abs() < 1e-12 && (v - 8.0 / 11.0).abs() < 1e-12);
    }

    #[test]
    fn principle_1_stops_at_share_memory_or_the_last_key() {
        let c = counts(&[
            &[(1, 1), (2, 1), (3, 1), (4, 3)],
            &[(1, 1), (2, 1), (4, 3)],
            &[(1, 1), (4, 3)],
            &[(1, 1)],
        ]);
        let r = c.rank();
        assert_eq!(r.top(4), [1, 4, 2, 3]);
        let p = |p, mem| Principle1 {
            p,
            c: 1.0,
            switch_mem: mem,
        };
        let ch = p(0.6, 1 << 20).choose(&r);
        assert_eq!((ch.k, ch.hot_values, ch.limit), (2, 4, Limit::Share));
        assert!((ch.update_share - 0.7).abs() < 1e-12);
        let ch = p(0.6, 15).choose(&r);
        assert_eq!(
            (ch.k, ch.limit),
            (1, Limit::Memory),
            "4 B x 4 values > 15 B"
        );
        let ch = p(1.0, 1 << 20).choose(&r);
        assert_eq!((ch.k, ch.limit), (4, Limit::Share));
        let ch = p(0.6, 3).choose(&r);
        assert_eq!((ch.k, ch.limit), (0, Limit::Memory));
        assert_eq!(
            p(0.5, 100).choose(&Ranking::default()).limit,
            Limit::AllKeys
        );
        assert!(Principle1 {
            p: 0.0,
            ..Principle1::default()
        }
        .check()
        .is_err());
        assert!(Principle1 {
            c: 1.5,
            ..Principle1::default()
        }
        .check()
        .is_err());
    }

    #[test]
    fn sampling_is_seeded_nested_and_near_its_rate() {
        let n = 100_000;
        let kept = |seed, rate| (0..n).filter(|&i| keep(seed, i, rate)).count() as f64;
        let k4 = kept(1, 0.04);
        assert!((k4 / n as f64 - 0.04).abs() < 0.003, "{k4}");
        assert!((0..n).all(|i| !keep(1, i, 0.02) || keep(1, i, 0.04)));
        assert_ne!(
            (0..1000).filter(|&i| keep(1, i, 0.5)).collect::<Vec<_>>(),
            (0..1000).filter(|&i| keep(2, i, 0.5)).collect::<Vec<_>>()
        );
        assert_eq!(kept(3, 1.0), n as f64);
    }

    #[test]
    fn hot_keys_file_uses_ranges_and_values() {
        let c = counts(&[
            &[(10, 2), (11, 2), (12, 2), (13, 1), (5, 1), (u64::MAX, 1)],
            &[(10, 2), (11, 2), (12, 2), (13, 1), (u64::MAX, 1)],
            &[(10, 2), (11, 2), (12, 2), (13, 1)],
        ]);
        let r = c.rank();
        let mut out = Vec::new();
        write_hot_keys(&mut out, &r, 6, &["made by a test".into()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "# made by a test\n10-12 2\n13 1\n18446744073709551615 1\n5 1\n"
        );
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let pushes: Vec<Vec<(u64, u32)>> = (0..50)
            .map(|i| (0..(i % 200 + 1)).map(|k| (k, 1)).collect())
            .collect();
        let mut c = Counts::default();
        for (i, p) in pushes.iter().enumerate() {
            c.add(&Record {
                worker: 1,
                round: i as u32,
                pairs: (0..200).map(|k| (k * 3 + 1, 1)).chain(p.clone()).collect(),
            });
        }
        let r = c.rank();
        let mut out = Vec::new();
        write_cdf(&mut out, &r, 77).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        assert!(rows
            .windows(2)
            .all(|w| w[0][0] < w[1][0] && w[0][2] <= w[1][2]));
        assert!(rows.iter().any(|r| r[0] == 77.0));
        let last = rows.last().unwrap();
        assert_eq!(last[0] as usize, r.keys.len());
        assert!((last[2] - 1.0).abs() < 1e-9 && (last[1] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn per_server_follows_pslite_ranges() {
        let w = u64::MAX / 3;
        assert_eq!(per_server(&[0, w - 1, w, 2 * w, u64::MAX], 3), [2, 1, 2]);
        assert_eq!(per_server(&[5, u64::MAX], 1), [2]);
    }
}
