//! Offline profiling (paper §III-C): count how often each key is pushed
//! and how many copies aggregating it saves, rank the keys, choose `k` by
//! Principle 1, write the hot-keys file.
//!
//! Principle 1: the smallest `k` whose top keys take a share `p` of all
//! updates (`T_k / T_n ≥ p`), as long as they fit the job's share of the
//! switch memory; when they do not, the largest `k` that fits. What fits is
//! the caller's to say ([`Principle1::choose`] takes it as a test on the
//! top `k`): `zebra profile` builds the switch's own settings with the
//! candidate keys. A key's update count is the number of pushes that carry
//! it; its values are its PS-lite `val_len`.
//!
//! Two rankings: [`Counts::rank`] by update count (the paper's Figure 4 and
//! 9), and [`Counts::rank_by_saving`] by the copies aggregation saves
//! ([`crate::saving`]), the order of the hot-keys file. The second needs
//! the records numbered in rounds per PS-lite server
//! ([`Sample::by_rounds`]).

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use thiserror::Error;
use zebra_proto::rng::SplitMix64;

use crate::saving::{RoundCount, RoundNumbers};
use crate::trace::{self, Record, TraceError};

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
    /// Pushes and distinct rounds (counted by [`Sample::by_rounds`] only).
    pub rounds: RoundCount,
}

impl KeyStat {
    /// Copies of its values aggregation saves (pushes beyond the first of
    /// each round; 0 unless counted by rounds).
    pub fn saving(&self) -> u64 {
        self.rounds.saving()
    }
}

/// Update counts of the keys of the records added.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    keys: HashMap<u64, KeyStat>,
    workers: HashSet<u32>,
    /// Records added.
    pub records: u64,
}

impl Counts {
    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        self.workers.insert(r.worker);
        for &(key, len) in &r.pairs {
            self.add_pair(key, len, None);
        }
    }

    /// Counts one pushed key with `len` values, in round `round` of its
    /// server if known (see [`RoundNumbers`]).
    fn add_pair(&mut self, key: u64, len: u32, round: Option<u32>) {
        let s = self.keys.entry(key).or_insert(KeyStat {
            len,
            ..KeyStat::default()
        });
        s.count += 1;
        s.values += u64::from(len);
        s.mixed |= s.len != len;
        if let Some(r) = round {
            s.rounds.add(r);
        }
    }

    /// Distinct workers among the records added.
    pub fn workers(&self) -> usize {
        self.workers.len()
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
        self.ranking(keys)
    }

    /// Keys ranked by the copies aggregation saves per value (then by
    /// update count, then smaller key first), as the online census ranks
    /// them. Only keys that save something are ranked (a key no two
    /// workers pushed in the same round saves nothing), and only keys with
    /// values; the totals count every key.
    pub fn rank_by_saving(&self) -> Ranking {
        let mut keys: Vec<(u64, KeyStat)> = self
            .keys
            .iter()
            .filter(|(_, s)| s.len > 0 && s.saving() > 0)
            .map(|(&k, &s)| (k, s))
            .collect();
        keys.sort_unstable_by(|a, b| {
            crate::saving_order(
                (a.1.saving(), a.1.count, a.0),
                (b.1.saving(), b.1.count, b.0),
            )
        });
        self.ranking(keys)
    }

    fn ranking(&self, keys: Vec<(u64, KeyStat)>) -> Ranking {
        Ranking {
            updates: self.keys.values().map(|s| s.count).sum(),
            values: self.keys.values().map(|s| s.values).sum(),
            mixed: self.keys.values().filter(|s| s.mixed).count() as u64,
            records: self.records,
            pushed_keys: self.keys.len() as u64,
            workers: self.workers.len(),
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
    /// Distinct keys pushed (ranked or not).
    pub pushed_keys: u64,
    /// Distinct workers among the records.
    pub workers: usize,
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

    /// Copies of values the top `k` keys save (each key's copies saved
    /// times its value count), and that as a share of all pushed values.
    pub fn saving(&self, k: usize) -> (u64, f64) {
        let saved = self
            .keys
            .iter()
            .take(k)
            .map(|e| e.1.saving() * u64::from(e.1.len))
            .sum();
        (saved, ratio(saved, self.values))
    }

    /// The top `k` keys with their value counts, hottest first.
    pub fn entries(&self, k: usize) -> Vec<(u64, u32)> {
        self.keys.iter().take(k).map(|e| (e.0, e.1.len)).collect()
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
    /// The job's share of the switch memory, `(0, 1]` (the caller's test of
    /// what fits applies it).
    pub c: f64,
}

impl Default for Principle1 {
    fn default() -> Self {
        Principle1 { p: 0.5, c: 1.0 }
    }
}

/// What stopped `k` from growing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The top `k` reached the share `p`.
    Share,
    /// One key more would not fit the switch (the caller's test).
    Memory,
    /// Every ranked key is hot and the share is still below `p`.
    AllKeys,
}

/// The `k` Principle 1 chose and what it predicts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    /// Hot keys.
    pub k: usize,
    /// Their values (hot indices), before any padding.
    pub hot_values: u64,
    /// Share of updates of the top `k` (`T_k / T_n`).
    pub update_share: f64,
    /// Share of pushed values of the top `k` (the value bytes that leave
    /// the server path, summed at the switch).
    pub value_share: f64,
    /// Copies of values aggregation saves with the top `k`.
    pub saved: u64,
    /// That as a share of all pushed values.
    pub saving: f64,
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

    /// Chooses `k` over `ranking`: the smallest `k` whose keys take the
    /// share `p` of the updates (every ranked key if none does), or, if
    /// those keys do not fit, the largest `k` that does. `fits(k)` says
    /// whether the top `k` keys fit; it must be monotone (if the top `k`
    /// fit, so do the top `j < k`), and is asked about `O(log k)` values,
    /// never 0.
    pub fn choose(&self, ranking: &Ranking, mut fits: impl FnMut(usize) -> bool) -> Choice {
        let target = self.p * ranking.updates as f64;
        let mut updates = 0u64;
        let mut wanted = None;
        for (i, (_, s)) in ranking.keys.iter().enumerate() {
            updates += s.count;
            if updates as f64 >= target {
                wanted = Some(i + 1);
                break;
            }
        }
        let (want, reached) = match wanted {
            Some(k) => (k, Limit::Share),
            None => (ranking.keys.len(), Limit::AllKeys),
        };
        let (k, limit) = if want == 0 || fits(want) {
            (want, reached)
        } else {
            // The largest fitting k below `want`: fits(lo) holds (lo = 0
            // trivially), fits(hi) does not.
            let (mut lo, mut hi) = (0usize, want);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo, Limit::Memory)
        };
        let (u, v) = ranking.shares(k);
        let (saved, saving) = ranking.saving(k);
        Choice {
            k,
            hot_values: ranking.keys[..k].iter().map(|e| u64::from(e.1.len)).sum(),
            update_share: u,
            value_share: v,
            saved,
            saving,
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
    /// With [`Sample::by_rounds`]: the round numbering of the records.
    rounds: Option<RoundNumbers>,
}

impl Sample {
    /// An empty sample.
    pub fn new(rate: f64, seed: u64) -> Sample {
        Sample {
            rate,
            seed,
            first: None,
            counts: Counts::default(),
            rounds: None,
        }
    }

    /// A sample of whole rounds that also counts the copies aggregation
    /// saves ([`KeyStat::saving`], for [`Counts::rank_by_saving`]): the
    /// records are numbered in rounds per worker and server (servers owning
    /// `ranges`, see [`RoundNumbers`]), and each round of each server is
    /// kept, with every worker's pushes in it, or left out by a seeded draw
    /// (sampling single records would split the rounds whose copies the
    /// switch sums). Keys of no server's range are counted but never
    /// ranked.
    pub fn by_rounds(rate: f64, seed: u64, ranges: Vec<Range<u64>>) -> Sample {
        Sample {
            rounds: Some(RoundNumbers::new(ranges)),
            ..Sample::new(rate, seed)
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

    /// Offers record `index` (the worker's record number `nth`) to the
    /// sample.
    fn offer(&mut self, record: &Record, index: u64, nth: u32) {
        let Some(numbers) = self.rounds.as_mut() else {
            if self.takes(index, nth) {
                self.counts.add(record);
            }
            return;
        };
        // The keys of one server are contiguous in a PS-lite push (sorted):
        // one numbering per run of keys of the same server.
        let none = numbers.servers() as u32;
        let mut run: Option<(u32, u32, bool)> = None;
        let mut any = false;
        for &(key, len) in &record.pairs {
            let owner = numbers.server_of(key);
            let server = owner.unwrap_or(none);
            let (round, kept) = match run {
                Some((s, r, k)) if s == server => (r, k),
                _ => {
                    let r = numbers.round(record.worker, server, record.round);
                    let unit = (u64::from(r) << 17) | u64::from(server);
                    let k = keep(self.seed, unit, self.rate);
                    run = Some((server, r, k));
                    (r, k)
                }
            };
            if kept {
                any = true;
                self.counts.add_pair(key, len, owner.map(|_| round));
            }
        }
        if any || self.rate >= 1.0 {
            self.counts.records += 1;
            self.counts.workers.insert(record.worker);
        }
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
/// in that round (a round of a server: every worker's `i`-th push to it,
/// see [`RoundNumbers`]). Not counted: messages' headers, the PUSH
/// trailers, packet headers.
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
/// `hot` aggregated (see [`BytePrediction`]), the servers owning `ranges`.
/// Memory grows with the hot keys pushed per round, summed over the rounds.
pub fn predict_bytes(
    paths: &[PathBuf],
    ranges: Vec<Range<u64>>,
    hot: &HashSet<u64>,
) -> Result<BytePrediction, ProfileError> {
    let mut p = BytePrediction::default();
    let mut seen: HashSet<(u32, u64)> = HashSet::new();
    let mut numbers = RoundNumbers::new(ranges);
    let none = numbers.servers() as u32;
    read_records(paths, &mut |_| {}, |record| {
        let mut run: Option<(u32, u32)> = None;
        for &(key, values) in &record.pairs {
            let bytes = entry_bytes(values);
            p.whole += bytes;
            // Every push to a server is a round of it, hot keys or not.
            let server = numbers.server_of(key).unwrap_or(none);
            let round = match run {
                Some((s, r)) if s == server => r,
                _ => {
                    let r = numbers.round(record.worker, server, record.round);
                    run = Some((server, r));
                    r
                }
            };
            if !hot.contains(&key) {
                p.cold += bytes;
            } else if seen.insert((round, key)) {
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
            s.offer(record, index, *nth);
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
        let p = |p| Principle1 { p, c: 1.0 };
        // What fits: at most `budget` values (the test stands for the
        // switch's own check).
        let values = |budget: u64| {
            let r = r.clone();
            move |k: usize| r.keys[..k].iter().map(|e| u64::from(e.1.len)).sum::<u64>() <= budget
        };
        let ch = p(0.6).choose(&r, values(1 << 20));
        assert_eq!((ch.k, ch.hot_values, ch.limit), (2, 4, Limit::Share));
        assert!((ch.update_share - 0.7).abs() < 1e-12);
        let ch = p(0.6).choose(&r, values(3));
        assert_eq!((ch.k, ch.limit), (1, Limit::Memory), "4 values > 3");
        let ch = p(1.0).choose(&r, values(1 << 20));
        assert_eq!((ch.k, ch.limit), (4, Limit::Share));
        let ch = p(0.6).choose(&r, values(0));
        assert_eq!((ch.k, ch.limit), (0, Limit::Memory));
        let mut asked = Vec::new();
        let ch = p(1.0).choose(&r, |k| {
            asked.push(k);
            k <= 3
        });
        assert_eq!((ch.k, ch.limit), (3, Limit::Memory));
        assert!(!asked.contains(&0) && asked.len() <= 3, "{asked:?}");
        assert_eq!(
            p(0.5).choose(&Ranking::default(), |_| true).limit,
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

    fn round_records(records: &[(u32, u32, &[u64])]) -> Counts {
        let w = u64::MAX / 2;
        let mut s = Sample::by_rounds(1.0, 0, vec![0..w, w..2 * w]);
        for (i, &(worker, round, keys)) in records.iter().enumerate() {
            let r = Record {
                worker,
                round,
                pairs: keys.iter().map(|&k| (k, 2)).collect(),
            };
            s.offer(&r, i as u64, 0);
        }
        s.counts
    }

    #[test]
    fn ranking_by_saving_prefers_keys_that_workers_share() {
        // Key 1: all four workers, rounds 1..=10 (40 pushes, saves 30).
        // Key 2: worker 0 alone, rounds 1..=60 (60 pushes, saves nothing).
        // Key 3: one worker a round, round-robin (60 pushes, nothing).
        // Key 4: two workers, rounds 1..=5 (10 pushes, saves 5).
        // Keys 100 + w: worker w's own, every round (so that every worker
        // pushes to the server every round).
        let mut recs: Vec<(u32, u32, Vec<u64>)> = Vec::new();
        for round in 1..=60u32 {
            for worker in 0..4u32 {
                let mut keys = vec![100 + u64::from(worker)];
                if round <= 10 {
                    keys.push(1);
                }
                if worker == 0 {
                    keys.push(2);
                }
                if worker == round % 4 {
                    keys.push(3);
                }
                if round <= 5 && worker < 2 {
                    keys.push(4);
                }
                recs.push((worker, round, keys));
            }
        }
        let recs: Vec<(u32, u32, &[u64])> = recs
            .iter()
            .map(|(w, r, k)| (*w, *r, k.as_slice()))
            .collect();
        let c = round_records(&recs);
        assert_eq!(c.rank().top(3), [2, 3, 100], "by update count");
        let r = c.rank_by_saving();
        assert_eq!(r.top(4), [1, 4], "by copies saved; 2 and 3 save none");
        assert_eq!((r.keys[0].1.saving(), r.keys[1].1.saving()), (30, 5));
        let (saved, share) = r.saving(2);
        assert_eq!(saved, 2 * (30 + 5));
        assert!((share - saved as f64 / r.values as f64).abs() < 1e-12);
        assert_eq!((r.workers, r.pushed_keys), (4, 8));
    }

    #[test]
    fn own_keys_save_nothing_and_round_samples_keep_rounds_whole() {
        let recs: Vec<(u32, u32, Vec<u64>)> = (1..=20u32)
            .flat_map(|round| (0..3u32).map(move |w| (w, round, vec![u64::from(w) * 10 + 1])))
            .collect();
        let recs: Vec<(u32, u32, &[u64])> = recs
            .iter()
            .map(|(w, r, k)| (*w, *r, k.as_slice()))
            .collect();
        let c = round_records(&recs);
        assert_eq!(c.rank().keys.len(), 3);
        assert!(c.rank_by_saving().keys.is_empty());

        // Every worker pushes key 7 every round: a half sample of the rounds
        // keeps all three pushes of the rounds it keeps.
        let w = u64::MAX / 2;
        let mut s = Sample::by_rounds(0.5, 9, vec![0..w, w..2 * w]);
        for round in 1..=200u32 {
            for worker in 0..3 {
                let r = Record {
                    worker,
                    round,
                    pairs: vec![(7, 1), (w + 7, 1)],
                };
                s.offer(&r, 0, 0);
            }
        }
        for key in [7, w + 7] {
            let st = s.counts.get(key).unwrap();
            assert_eq!(st.count % 3, 0);
            assert_eq!(st.saving(), st.count / 3 * 2);
            assert!((60..140).contains(&(st.count / 3)), "{}", st.count);
        }
        assert_ne!(
            s.counts.get(7).unwrap().count,
            s.counts.get(w + 7).unwrap().count,
            "each server's rounds are drawn apart"
        );
    }
}
