//! `zebra profile`: rank the keys of one or more push traces by update
//! count, choose `k` by Principle 1 and write the hot-keys file; also the
//! options and the trace scan `zebra precision` shares.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use zebra_hotkeys::profile::{self, FileScan, Limit, Sample};
use zebra_hotkeys::{BytePrediction, Choice, Principle1, Ranking};

/// Traces to read, and how to report progress.
#[derive(Debug, Clone, Args)]
pub struct TraceInput {
    /// Push traces (ZEBRA_TRACE recordings or `zebra trace gen` output), one per worker or
    /// several workers in one; all are counted together.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print progress to standard error every this many MiB read (0: never). Only inputs
    /// larger than this get progress lines.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub progress_mb: u64,
}

/// Principle 1's settings.
#[derive(Debug, Clone, Args)]
pub struct Principle1Args {
    /// Target share of all updates the hot keys should take: the smallest k with
    /// T_k / T_n >= p, in (0, 1].
    #[arg(long, default_value_t = 0.5)]
    pub p: f64,
    /// The job's share of the switch memory, in (0, 1]: the hot keys' values must fit in
    /// c x m (4 bytes a value).
    #[arg(long, default_value_t = 1.0)]
    pub c: f64,
    /// Switch register memory m in bytes; K, M, G suffixes are powers of 1024. Default: the
    /// software switch's registers (40 x 65536 entries x 4 B = 10 MiB).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub switch_mem: Option<u64>,
}

impl Principle1Args {
    /// The checked settings.
    pub fn principle(&self) -> Result<Principle1, String> {
        let mut p = Principle1 {
            p: self.p,
            c: self.c,
            ..Principle1::default()
        };
        if let Some(m) = self.switch_mem {
            p.switch_mem = m;
        }
        p.check().map_err(|e| e.to_string())?;
        Ok(p)
    }
}

/// Parses a byte count with an optional K, M or G (binary) suffix.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count (e.g. 118K, 10M)"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("{s:?} is zero or too large"))
}

/// `zebra profile`'s options.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    input: TraceInput,
    /// Where to write the hot-keys file (`-`: standard output).
    #[arg(long, short, value_name = "FILE")]
    out: PathBuf,
    /// Count only this percentage of the records, each kept or not by a seeded draw
    /// (a sample of the job's pushes, as a sample of its data would give), in (0, 100].
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0)]
    sample_rate: f64,
    /// Seed of the sampling draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    principle: Principle1Args,
    /// Also write the cumulative share of updates and values against the top k (the
    /// paper's Figure 4) as CSV: k,key_share,update_share,value_share
    /// (scripts/plot-hotkeys.py draws it).
    #[arg(long, value_name = "FILE.csv")]
    cdf: Option<PathBuf>,
    /// Count the hot keys of each of this many PS-lite servers (PS-lite's default key
    /// ranges) in the file's header.
    #[arg(long, value_name = "N")]
    servers: Option<u16>,
}

/// Checks a sampling percentage and returns it as a share.
pub fn rate(percent: f64) -> Result<f64, String> {
    if percent > 0.0 && percent <= 100.0 {
        Ok(percent / 100.0)
    } else {
        Err(format!("sampling rate {percent} % must be in (0, 100]"))
    }
}

/// Reads every trace once, offering each record to every sample, with
/// progress lines on standard error. Returns the scans and the warnings.
pub fn scan(
    cmd: &str,
    input: &TraceInput,
    samples: &mut [Sample],
) -> Result<(Vec<FileScan>, Vec<String>), String> {
    let missing = profile::missing(&input.traces);
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no such trace file: {}", list.join(", ")));
    }
    let total: u64 = input
        .traces
        .iter()
        .filter_map(|p| p.metadata().ok())
        .map(|m| m.len())
        .sum();
    let step = input.progress_mb.saturating_mul(1 << 20);
    let mut next = if step > 0 && total > step {
        step
    } else {
        u64::MAX
    };
    let mut progress = |done: u64| {
        if done >= next {
            eprintln!(
                "{cmd}: {} of {} MiB read ({:.0} %)",
                done >> 20,
                total >> 20,
                100.0 * done as f64 / total as f64
            );
            next = done - done % step + step;
        }
    };
    let scans = profile::scan(&input.traces, samples, &mut progress).map_err(|e| e.to_string())?;
    let warnings = scans
        .iter()
        .filter_map(|s| {
            s.truncated.as_ref().map(|why| {
                format!(
                    "warning: {}: {why}; its first {} records were used",
                    s.path.display(),
                    s.records
                )
            })
        })
        .collect();
    Ok((scans, warnings))
}

fn limit_text(l: Limit) -> &'static str {
    match l {
        Limit::Share => "reached p",
        Limit::Memory => "limited by c x m",
        Limit::Capacity => "limited by the switch's register entries",
        Limit::AllKeys => "every key pushed; p not reached",
    }
}

fn header(
    args: &ProfileArgs,
    p: &Principle1,
    scans: &[FileScan],
    ranking: &Ranking,
    choice: &Choice,
    bytes: &BytePrediction,
) -> Vec<String> {
    let names: Vec<String> = scans
        .iter()
        .map(|s| format!("{} ({} records)", s.path.display(), s.records))
        .collect();
    let mut h = vec![
        format!(
            "zebra profile: {} hot keys, hottest first; each line `KEY VALUES` or `A-B VALUES` \
             (VALUES = f32 values per key)",
            choice.k
        ),
        format!("input: {}", names.join(", ")),
        format!(
            "sampling: {} % of the records (seed {}): {} records, {} updates of {} keys, {} values",
            args.sample_rate,
            args.seed,
            ranking.records,
            ranking.updates,
            ranking.keys.len(),
            ranking.values
        ),
        format!(
            "Principle 1: p = {}, c = {}, switch memory m = {} bytes -> k = {} ({}), {} values = {} bytes",
            p.p,
            p.c,
            p.switch_mem,
            choice.k,
            limit_text(choice.limit),
            choice.hot_values,
            choice.hot_values * 4
        ),
        format!(
            "predicted hot share: {:.2} % of updates, {:.2} % of pushed values",
            100.0 * choice.update_share,
            100.0 * choice.value_share
        ),
        format!(
            "predicted server bytes with aggregation: {:.2} % of the pushes' entries (their cold \
             entries, and each round's hot values once; headers and trailers not counted)",
            100.0 * bytes.ratio()
        ),
    ];
    if ranking.mixed > 0 {
        h.push(format!(
            "{} keys were pushed with differing value counts: each is listed with its first",
            ranking.mixed
        ));
    }
    if let Some(n) = args.servers {
        let per = profile::per_server(&ranking.top(choice.k), n);
        let list: Vec<String> = per.iter().map(usize::to_string).collect();
        h.push(format!(
            "hot keys per server (PS-lite default key ranges, {n} servers): {}",
            list.join(", ")
        ));
    }
    h
}

/// Opens `path` for writing (`-`: standard output).
pub fn create(path: &Path) -> io::Result<Box<dyn Write>> {
    if path == Path::new("-") {
        Ok(Box::new(BufWriter::new(io::stdout().lock())))
    } else {
        Ok(Box::new(BufWriter::new(File::create(path)?)))
    }
}

fn write_to(path: &Path, f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), String> {
    let mut out = create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn profile(args: &ProfileArgs) -> Result<Vec<String>, String> {
    let p = args.principle.principle()?;
    let mut samples = [Sample::new(rate(args.sample_rate)?, args.seed)];
    let (scans, mut notes) = scan("zebra profile", &args.input, &mut samples)?;
    let ranking = samples[0].counts.rank();
    let choice = p.choose(&ranking);
    if choice.k == 0 {
        return Err(match ranking.keys.is_empty() {
            true => "no key with values in the sampled records".into(),
            false => format!(
                "not even the hottest key fits: c x m = {} bytes",
                p.c * p.switch_mem as f64
            ),
        });
    }
    let hot: HashSet<u64> = ranking.top(choice.k).into_iter().collect();
    let bytes = profile::predict_bytes(&args.input.traces, &hot).map_err(|e| e.to_string())?;
    let head = header(args, &p, &scans, &ranking, &choice, &bytes);
    write_to(&args.out, |o| {
        profile::write_hot_keys(o, &ranking, choice.k, &head)
    })?;
    if let Some(csv) = &args.cdf {
        write_to(csv, |o| profile::write_cdf(o, &ranking, choice.k))?;
    }
    notes.extend(head.into_iter().skip(2));
    Ok(notes)
}

/// Runs `zebra profile`.
pub fn run(args: ProfileArgs) -> ExitCode {
    match profile(&args) {
        Ok(lines) => {
            for l in lines {
                eprintln!("zebra profile: {l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zebra profile: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_binary_suffixes() {
        assert_eq!(parse_bytes("118K"), Ok(118 * 1024));
        assert_eq!(parse_bytes("10m"), Ok(10 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        for bad in ["", "K", "1.5M", "0", "-3", "99999999999999999999G", "12T"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_are_percentages() {
        assert_eq!(rate(4.0), Ok(0.04));
        assert_eq!(rate(100.0), Ok(1.0));
        assert!(rate(0.0).is_err() && rate(101.0).is_err() && rate(f64::NAN).is_err());
    }
}
