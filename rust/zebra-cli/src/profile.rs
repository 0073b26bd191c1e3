//! `zebra profile`: rank the keys of one or more push traces by the copies
//! aggregation saves, choose `k` by Principle 1 against the switch's own
//! settings and write the hot-keys file; also the options and the trace
//! scan `zebra precision` shares.
//!
//! One source of truth for the switch: the profile reads the settings
//! `zebra switch` reads (`--config`, `--registers`, `--slots`, `--servers`,
//! with the switch's defaults), and tests every candidate `k` by building
//! those settings with the candidate keys as their hot-keys file
//! ([`zebra_hotpath::Settings::build`], which splits the keys over the
//! PS-lite servers, gives each owning server a job of `ceil(values / R)`
//! slots a register and validates the whole with
//! [`zebra_proto::Config::validate`]). The file written is built once more
//! before it replaces `--out`: `zebra switch` with the same settings accepts
//! it by construction.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use zebra_config::setting_by_key;
use zebra_hotkeys::profile::{self, FileScan, Limit, ProfileError, Sample};
use zebra_hotkeys::{BytePrediction, Choice, Principle1, Ranking, RECENT_ROUNDS};
use zebra_hotpath::hotkeys::pslite_server_ranges;
use zebra_hotpath::{Build, HotpathConfig, Settings, SettingsError};
use zebra_proto::consts::{MAX_WORKERS, VALUE_LEN};

use crate::failure::{finish, Failure};

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
    /// The job's share of the switch memory, in (0, 1]: the hot keys' jobs take at most
    /// c x S of the S slots of each register (c x m with --switch-mem).
    #[arg(long, default_value_t = 1.0)]
    pub c: f64,
    /// Principle 1's switch memory m in bytes (K, M, G: powers of 1024), to give the hot
    /// keys less than the switch holds: their jobs take at most c x m / (4 B x R) slots a
    /// register. Default, and at most: the switch's own, 4 B x R x S. (It no longer
    /// stands for the switch: R and S come from --config, --registers, --slots.)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub switch_mem: Option<u64>,
}

impl Principle1Args {
    /// The checked settings.
    pub fn principle(&self) -> Result<Principle1, Failure> {
        let p = Principle1 {
            p: self.p,
            c: self.c,
        };
        p.check().map_err(Failure::usage)?;
        Ok(p)
    }
}

fn default_of(key: &str) -> &'static str {
    setting_by_key(key).map_or("?", |k| k.default)
}

fn registers_help() -> String {
    format!(
        "Register arrays R of the switch, as `zebra switch --registers` (overrides --config) \
         [default: the switch's, {}]",
        zebra_proto::Config::new(Vec::new()).registers
    )
}

fn slots_help() -> String {
    format!(
        "Slots per register array S of the switch, as `zebra switch --slots` (overrides \
         --config) [default: the switch's, {}]",
        zebra_proto::Config::new(Vec::new()).slots
    )
}

fn servers_help() -> String {
    format!(
        "PS-lite servers of the job, as `zebra switch --servers` (overrides --config): the keys \
         split over them by PS-lite's default key ranges, each server with a hot key is a job \
         of its own [default: {}]",
        default_of("servers")
    )
}

/// The switch the hot keys are for: the settings `zebra switch` reads.
#[derive(Debug, Clone, Args)]
pub struct SwitchSettingsArgs {
    /// The hot-path settings file `zebra switch --config` reads (ZEBRA_HOT_CONFIG): its
    /// registers, slots, copies, servers, online_capacity, ... bound the hot keys. Its
    /// hot_keys and hot_key_count lines are ignored (this writes the keys), and so are the
    /// addresses (switch, server_addr).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long, value_name = "R", help = registers_help())]
    pub registers: Option<u16>,
    #[arg(long, value_name = "S", help = slots_help())]
    pub slots: Option<u32>,
    #[arg(long, value_name = "N", help = servers_help())]
    pub servers: Option<u16>,
}

/// Keys of the settings file the profile leaves out: the hot keys it
/// writes, and addresses (resolved by the switch, of no bearing on what
/// fits, and perhaps not resolvable where the profile runs).
const IGNORED: &[&str] = &["hot_keys", "hot_key_count", "switch", "server_addr"];

/// The switch's settings, and the test of a candidate hot-keys file.
#[derive(Debug)]
pub struct Target {
    base: Settings,
    /// Where the settings came from (for the header).
    pub source: String,
    /// Register arrays `R`.
    pub registers: u16,
    /// Slots per register `S`.
    pub slots: u32,
    /// PS-lite servers.
    pub servers: u16,
    probe: tempfile::NamedTempFile,
}

impl Target {
    /// Loads the settings of `args`; notes about them go to `notes`. Bad
    /// settings are usage failures.
    pub fn load(args: &SwitchSettingsArgs, notes: &mut Vec<String>) -> Result<Target, Failure> {
        let mut base = Settings::new();
        let mut workers = false;
        let mut from = Vec::new();
        if let Some(path) = &args.config {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::file(path, &e).after("--config"))?;
            base = Settings::parse(&text, path).map_err(Failure::usage)?;
            for key in IGNORED {
                for at in base.remove(key) {
                    if key.starts_with("hot_key") {
                        notes.push(format!(
                            "{at}: {key} ignored: this profile writes the hot keys"
                        ));
                    }
                }
            }
            workers = base.has("workers");
            from.push(path.display().to_string());
        }
        let flags = [
            ("registers", args.registers.map(|v| v.to_string())),
            ("slots", args.slots.map(|v| v.to_string())),
            ("servers", args.servers.map(|v| v.to_string())),
        ];
        for (key, value) in flags {
            if let Some(v) = value {
                base.set(key, &v).map_err(Failure::usage)?;
                from.push(format!("--{} {v}", key));
            }
        }
        if !workers {
            // Workers only bound the parts of a round (`Config::max_parts`,
            // more with more workers): test with the most a switch takes,
            // so that any job of the traces' keys fits.
            base.set("workers", &MAX_WORKERS.to_string())
                .map_err(Failure::usage)?;
        }
        // The geometry, and every value checked: the same settings with one
        // hot rank.
        let mut one = base.clone();
        one.set("hot_key_count", "1").map_err(Failure::usage)?;
        let c = one.build().map_err(Failure::usage)?;
        let servers = c.proto.jobs.first().map_or(1, |j| j.servers);
        let probe = tempfile::Builder::new()
            .prefix("zebra-profile-")
            .suffix(".keys")
            .tempfile()
            .map_err(|e| Failure::runtime(format!("a temporary file: {e}")))?;
        Ok(Target {
            base,
            source: if from.is_empty() {
                "zebra switch's defaults".into()
            } else {
                from.join(", ")
            },
            registers: c.proto.registers,
            slots: c.proto.slots,
            servers,
            probe,
        })
    }

    /// PS-lite's default key ranges of the servers.
    pub fn ranges(&self) -> Vec<Range<u64>> {
        pslite_server_ranges(self.servers)
    }

    /// Slots a register the hot keys may take under Principle 1 (`c x m /
    /// (4 B x R)`, at most `S`), and a note if `--switch-mem` asked for
    /// more than the switch holds.
    pub fn budget(&self, args: &Principle1Args) -> (u32, Option<String>) {
        let r = u64::from(self.registers);
        let whole = VALUE_LEN as u64 * r * u64::from(self.slots);
        let m = args.switch_mem.unwrap_or(whole);
        let note = (m > whole).then(|| {
            format!(
                "--switch-mem {m} is more than the switch holds, 4 B x R x S = {whole} bytes: the \
                 switch's bound applies"
            )
        });
        let slots = (args.c * m.min(whole) as f64 / (VALUE_LEN as u64 * r) as f64).floor();
        (slots.min(f64::from(self.slots)) as u32, note)
    }

    /// The switch's settings with `path` as their hot-keys file, and
    /// `slots` slots a register instead of the switch's if given.
    fn build_with(&self, path: &Path, slots: Option<u32>) -> Result<HotpathConfig, String> {
        let mut s = self.base.clone();
        s.set("hot_keys", &path.to_string_lossy())
            .and_then(|()| match slots {
                Some(n) => s.set("slots", &n.to_string()),
                None => Ok(()),
            })
            .and_then(|()| s.build())
            .map_err(|e: SettingsError| e.problems.join("; "))
    }

    /// The switch's settings with the top `k` keys of `ranking` (`k > 0`)
    /// as their hot keys, within `slots` slots a register if given, or why
    /// they do not take them.
    pub fn build(
        &mut self,
        ranking: &Ranking,
        k: usize,
        slots: Option<u32>,
    ) -> Result<HotpathConfig, String> {
        let mut text = Vec::new();
        profile::write_hot_keys(&mut text, ranking, k, &[]).map_err(|e| e.to_string())?;
        let file = self.probe.as_file_mut();
        file.set_len(0)
            .and_then(|()| io::Seek::rewind(file))
            .and_then(|()| file.write_all(&text))
            .and_then(|()| file.flush())
            .map_err(|e| format!("{}: {e}", self.probe.path().display()))?;
        let path = self.probe.path().to_path_buf();
        self.build_with(&path, slots)
    }

    /// Whether the top `k` keys fit in `budget` slots a register.
    pub fn fits(&mut self, ranking: &Ranking, k: usize, budget: u32) -> bool {
        k == 0 || self.build(ranking, k, self.override_slots(budget)).is_ok()
    }

    fn override_slots(&self, budget: u32) -> Option<u32> {
        (budget < self.slots).then_some(budget)
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
    /// Count only this percentage of the rounds, each round of each server kept with every
    /// worker's pushes in it or left out by a seeded draw (a sample of the job's steps), in
    /// (0, 100].
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0)]
    sample_rate: f64,
    /// Seed of the sampling draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    principle: Principle1Args,
    #[command(flatten)]
    switch: SwitchSettingsArgs,
    /// Also write the cumulative share of updates and values against the top k keys by
    /// update count (the paper's Figure 4) as CSV: k,key_share,update_share,value_share
    /// (scripts/plot-hotkeys.py draws it).
    #[arg(long, value_name = "FILE.csv")]
    cdf: Option<PathBuf>,
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
) -> Result<(Vec<FileScan>, Vec<String>), Failure> {
    let missing = profile::missing(&input.traces);
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        return Err(Failure::usage(format!(
            "no such trace file: {}",
            list.join(", ")
        )));
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
    let scans = profile::scan(&input.traces, samples, &mut progress).map_err(|e| match e {
        ProfileError::Trace { path, source } => crate::trace::unreadable(&path, source),
        ProfileError::Invalid(why) => Failure::usage(why),
    })?;
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

/// The header lines every file gets: what was read and for which switch.
fn input_lines(
    args: &ProfileArgs,
    target: &Target,
    scans: &[FileScan],
    ranking: &Ranking,
) -> Vec<String> {
    let names: Vec<String> = scans
        .iter()
        .map(|s| format!("{} ({} records)", s.path.display(), s.records))
        .collect();
    vec![
        format!("input: {}", names.join(", ")),
        format!(
            "sampling: {} % of the rounds (seed {}; a round of a server kept with every worker's \
             push): {} records of {}, {} updates of {} keys, {} values",
            args.sample_rate,
            args.seed,
            ranking.records,
            plural(ranking.workers as u64, "worker"),
            ranking.updates,
            ranking.pushed_keys,
            ranking.values
        ),
        format!(
            "switch: R = {} registers x S = {} slots, {} (default key ranges); settings: {}",
            target.registers,
            target.slots,
            plural(target.servers.into(), "PS-lite server"),
            target.source
        ),
    ]
}

fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Why nothing saves copies.
fn nothing_saved(ranking: &Ranking) -> String {
    if ranking.workers <= 1 {
        format!(
            "the traces hold the pushes of {}: with one worker there is nothing to sum",
            plural(ranking.workers as u64, "worker")
        )
    } else {
        format!(
            "no key was pushed by two of the {} workers in the same round (each worker pushes \
             its own keys, or their rounds never meet): aggregation would save nothing",
            ranking.workers
        )
    }
}

/// Per server: its hot keys, values and slots; and the slots used in all.
fn layout(config: &HotpathConfig) -> (String, u64) {
    let p = &config.proto;
    let Some(hot) = &config.hot_set else {
        return (String::new(), 0);
    };
    let mut used = 0u64;
    let per: Vec<String> = (0..hot.ranges().len() as u16)
        .map(|s| {
            let (job, _) = config.server_member(s);
            let Some(j) = p.job(job) else {
                return format!("server {s}: no hot key");
            };
            let slots = p.region_slots(j);
            used += u64::from(slots);
            let values = hot.used(s);
            let job_size = if hot.indices(s) > values {
                format!(" (its job: {} values, online_capacity)", hot.indices(s))
            } else {
                String::new()
            };
            format!(
                "server {s}: {} keys, {values} values{job_size}, {slots} slots",
                hot.server_keys(s).len()
            )
        })
        .collect();
    (per.join("; "), used)
}

#[allow(clippy::too_many_arguments)]
fn header(
    args: &ProfileArgs,
    p: &Principle1,
    target: &Target,
    budget: u32,
    scans: &[FileScan],
    ranking: &Ranking,
    choice: &Choice,
    config: &HotpathConfig,
    refused: Option<&str>,
    bytes: &BytePrediction,
) -> Vec<String> {
    let mut h = vec![format!(
        "zebra profile: {} hot keys, most copies saved first; each line `KEY VALUES` or \
         `A-B VALUES` (VALUES = f32 values per key)",
        choice.k
    )];
    h.extend(input_lines(args, target, scans, ranking));
    h.push(format!(
        "ranking: by copies saved per value (a key pushed by n workers in one round saves n - 1; \
         each key over its last {RECENT_ROUNDS} distinct rounds): {} of the {} keys pushed save copies",
        ranking.keys.len(),
        ranking.pushed_keys
    ));
    let m = match args.principle.switch_mem {
        Some(m) => format!(", m = {m} bytes"),
        None => String::new(),
    };
    let limit = match (choice.limit, refused) {
        (Limit::Share, _) => "reached p".to_string(),
        (Limit::AllKeys, _) => "every key that saves copies; p not reached".to_string(),
        (Limit::Memory, Some(why)) => format!("limited by the switch: one key more and {why}"),
        (Limit::Memory, None) => "limited by the switch".to_string(),
    };
    h.push(format!(
        "Principle 1: p = {}, c = {}{m} -> at most {budget} of the {} slots a register -> k = {} \
         ({limit})",
        p.p, p.c, target.slots, choice.k
    ));
    let (per, used) = layout(config);
    h.push(format!(
        "per server (one job each, ceil(values / R) slots a register): {per}"
    ));
    h.push(format!(
        "switch slots used: {used} of {} a register, {} hot values; zebra switch with these \
         settings accepts this file (checked)",
        target.slots, choice.hot_values
    ));
    h.push(format!(
        "predicted hot share: {:.2} % of updates, {:.2} % of pushed values",
        100.0 * choice.update_share,
        100.0 * choice.value_share
    ));
    h.push(format!(
        "predicted saving: {:.2} % of the pushed values ({} copies of values the switch sums away)",
        100.0 * choice.saving,
        choice.saved
    ));
    h.push(format!(
        "predicted server bytes with aggregation: {:.2} % of the pushes' entries (their cold \
         entries, and each round's hot values once; headers and trailers not counted)",
        100.0 * bytes.ratio()
    ));
    if ranking.mixed > 0 {
        h.push(format!(
            "{} keys were pushed with differing value counts: each is listed with its first",
            ranking.mixed
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

/// Writes the hot-keys file to a temporary file beside `path`, has
/// `target` build the switch's settings with it, and only then puts it at
/// `path` (`-`: standard output). `check`: whether to build (a file with
/// no key is not a switch's).
fn write_checked(
    path: &Path,
    target: &Target,
    check: bool,
    f: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), String> {
    let at = |e: io::Error| format!("{}: {e}", path.display());
    let stdout = path == Path::new("-");
    let dir = match path.parent() {
        _ if stdout => std::env::temp_dir(),
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".zebra-profile-")
        .tempfile_in(&dir)
        .map_err(at)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        f(&mut w).and_then(|()| w.flush()).map_err(at)?;
    }
    if check {
        target.build_with(tmp.path(), None).map_err(|e| {
            format!(
                "zebra switch with these settings would refuse the file written (a bug: please \
                 report): {e}"
            )
        })?;
    }
    if stdout {
        let mut text = Vec::new();
        File::open(tmp.path())
            .and_then(|mut f| f.read_to_end(&mut text))
            .map_err(at)?;
        let mut out = io::stdout().lock();
        out.write_all(&text).and_then(|()| out.flush()).map_err(at)
    } else {
        tmp.persist(path).map_err(|e| at(e.error))?;
        Ok(())
    }
}

fn profile(args: &ProfileArgs) -> Result<Vec<String>, Failure> {
    let p = args.principle.principle()?;
    let rate = rate(args.sample_rate).map_err(Failure::usage)?;
    let mut notes = Vec::new();
    let mut target = Target::load(&args.switch, &mut notes)?;
    let (budget, note) = target.budget(&args.principle);
    notes.extend(note);
    if budget == 0 {
        return Err(Failure::usage(format!(
            "c x m leaves no slot of the switch's {} a register for hot keys",
            target.slots
        )));
    }
    let mut samples = [Sample::by_rounds(rate, args.seed, target.ranges())];
    let (scans, warnings) = scan("zebra profile", &args.input, &mut samples)?;
    notes.extend(warnings);
    choose(args, &p, &mut target, budget, &scans, &samples[0], notes).map_err(Failure::runtime)
}

/// Ranks the keys counted in `sample`, chooses `k` and writes the files
/// (every failure here is one of running).
fn choose(
    args: &ProfileArgs,
    p: &Principle1,
    target: &mut Target,
    budget: u32,
    scans: &[FileScan],
    sample: &Sample,
    mut notes: Vec<String>,
) -> Result<Vec<String>, String> {
    let counts = &sample.counts;
    let ranking = counts.rank_by_saving();
    if ranking.values == 0 {
        return Err("no key with values in the sampled records".into());
    }
    let cdf = |mark: usize| match &args.cdf {
        Some(csv) => write_to(csv, |o| profile::write_cdf(o, &counts.rank(), mark)),
        None => Ok(()),
    };
    if ranking.keys.is_empty() {
        let why = nothing_saved(&ranking);
        let mut head = vec!["zebra profile: no hot key: aggregation would save nothing".into()];
        head.extend(input_lines(args, target, scans, &ranking));
        head.push(format!("why: {why}"));
        head.push(
            "a hot-keys file without keys is refused by zebra switch: run this job without \
             ZEBRA_SWITCH (its pushes go to the servers unchanged)"
                .into(),
        );
        write_checked(&args.out, target, false, |o| {
            profile::write_hot_keys(o, &ranking, 0, &head)
        })?;
        cdf(0)?;
        notes.push(format!("no hot key written: {why}"));
        return Ok(notes);
    }
    let choice = p.choose(&ranking, |k| target.fits(&ranking, k, budget));
    if choice.k == 0 {
        let why = target
            .build(&ranking, 1, target.override_slots(budget))
            .err()
            .unwrap_or_default();
        return Err(format!("not even the best key fits the switch: {why}"));
    }
    let refused = match choice.limit {
        Limit::Memory => target
            .build(&ranking, choice.k + 1, target.override_slots(budget))
            .err(),
        _ => None,
    };
    let config = target.build(&ranking, choice.k, None)?;
    let hot: HashSet<u64> = ranking.top(choice.k).into_iter().collect();
    let bytes = profile::predict_bytes(&args.input.traces, target.ranges(), &hot)
        .map_err(|e| e.to_string())?;
    let head = header(
        args,
        p,
        target,
        budget,
        scans,
        &ranking,
        &choice,
        &config,
        refused.as_deref(),
        &bytes,
    );
    write_checked(&args.out, target, true, |o| {
        profile::write_hot_keys(o, &ranking, choice.k, &head)
    })?;
    cdf(choice.k)?;
    notes.extend(head.into_iter().skip(2));
    Ok(notes)
}

/// Runs `zebra profile`.
pub fn run(args: ProfileArgs) -> ExitCode {
    let result = profile(&args).map(|lines| {
        for l in lines {
            eprintln!("zebra profile: {l}");
        }
    });
    finish("zebra profile", result)
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

    fn switch(config: Option<PathBuf>, slots: Option<u32>) -> SwitchSettingsArgs {
        SwitchSettingsArgs {
            config,
            registers: None,
            slots,
            servers: None,
        }
    }

    #[test]
    fn the_switch_defaults_are_the_protocols() {
        let t = Target::load(&switch(None, None), &mut Vec::new()).unwrap();
        let want = zebra_proto::Config::new(Vec::new());
        assert_eq!(
            (t.registers, t.slots, t.servers),
            (want.registers, want.slots, 1)
        );
        assert_eq!(t.source, "zebra switch's defaults");
        let principle = |c, switch_mem| Principle1Args {
            p: 0.5,
            c,
            switch_mem,
        };
        assert_eq!(t.budget(&principle(1.0, None)), (want.slots, None));
        assert_eq!(t.budget(&principle(0.5, None)).0, want.slots / 2);
        let m = 4 * u64::from(want.registers) * 100;
        assert_eq!(t.budget(&principle(1.0, Some(m))), (100, None));
        let (slots, note) = t.budget(&principle(1.0, Some(1 << 40)));
        assert_eq!(slots, want.slots);
        assert!(note.unwrap().contains("more than the switch holds"));
    }

    #[test]
    fn a_settings_file_is_read_as_the_switch_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("hot.conf");
        std::fs::write(
            &conf,
            "# job\nswitch = \"nowhere.invalid:1\"\nhot_keys = \"old.keys\"\nregisters = 8\n\
             slots = 64\nservers = 3\nserver_addr = [\"0=nowhere.invalid:2\"]\n",
        )
        .unwrap();
        let mut notes = Vec::new();
        let t = Target::load(&switch(Some(conf.clone()), Some(16)), &mut notes).unwrap();
        assert_eq!((t.registers, t.slots, t.servers), (8, 16, 3));
        assert!(t.source.ends_with("hot.conf, --slots 16"), "{}", t.source);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].ends_with("hot.conf:3: hot_keys ignored: this profile writes the hot keys")
        );

        std::fs::write(&conf, "registers = 41\n").unwrap();
        let err = Target::load(&switch(Some(conf), None), &mut Vec::new()).unwrap_err();
        assert_eq!(err.code(), 2);
        let err = err.to_string();
        assert!(err.contains("hot.conf:1: registers = 41"), "{err}");
    }
}
