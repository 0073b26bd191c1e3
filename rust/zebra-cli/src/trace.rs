//! `zebra trace`: make a synthetic push trace (`gen`), or summarise traces
//! (`stats`).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use zebra_hotkeys::synth::{generate, Model};
use zebra_hotkeys::{trace, Record, Shape, SynthSpec, TraceError, TraceWriter};

use crate::failure::{finish, Failure};

/// `zebra trace` subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Write a seeded synthetic push trace shaped like the paper's Figure 4.
    ///
    /// Key popularity is Zipf; its exponent is fitted so that the top --hot-fraction of the
    /// --keys keys take --hot-share of all updates (an update = one key in one push). Each of
    /// --workers workers pushes once per round for --rounds rounds, about --keys-per-push
    /// distinct keys each time, in ascending key order. Prints the fitted model and what
    /// was written.
    Gen(GenArgs),
    /// Summarise push traces: records, workers, rounds, pairs, distinct keys, value counts.
    Stats {
        /// Trace files.
        #[arg(required = true, value_name = "TRACE")]
        traces: Vec<PathBuf>,
    },
}

/// The paper's workloads.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShapeArg {
    /// "OA": the top 0.02 % of the keys (30 K of 150 M) take 50 % of the updates.
    Oa,
    /// "SE": the top 0.02 % of the keys take 70 % of the updates.
    Se,
}

/// `zebra trace gen`'s options.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Output trace file.
    #[arg(long, short, value_name = "FILE")]
    out: PathBuf,
    /// Preset for --hot-fraction and --hot-share.
    #[arg(long, value_enum, default_value_t = ShapeArg::Oa)]
    shape: ShapeArg,
    /// Distinct keys of the model (the paper's 150 M, scaled down).
    #[arg(long, default_value_t = 5_000_000)]
    keys: u64,
    /// Share of the keys that are "top" (k = keys x this); default from --shape (0.0002).
    #[arg(long, value_name = "SHARE")]
    hot_fraction: Option<f64>,
    /// Share of all updates the top k keys take, in (0, 1); default from --shape.
    #[arg(long, value_name = "SHARE")]
    hot_share: Option<f64>,
    /// Use this Zipf exponent instead of fitting one to --hot-share.
    #[arg(long, value_name = "S")]
    zipf: Option<f64>,
    /// Expected distinct keys in each push. The top k keys can take at most
    /// k / keys-per-push of the updates (each key at most once a push).
    #[arg(long, default_value_t = 1000)]
    keys_per_push: u32,
    /// Workers (ranks 0..N); each pushes once a round.
    #[arg(long, default_value_t = 8)]
    workers: u32,
    /// Rounds.
    #[arg(long, default_value_t = 200)]
    rounds: u32,
    /// f32 values per key (PS-lite val_len).
    #[arg(long, default_value_t = 1)]
    values: u32,
    /// Key id of popularity rank r is perm(r) x STRIDE, perm a seeded bijection of 0..keys;
    /// default u64::MAX / keys (keys spread over every PS-lite server's key range).
    #[arg(long)]
    stride: Option<u64>,
    /// Seed of every push's draws: traces of the same model with other seeds are other
    /// samples of the same job (e.g. one file per worker).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seed of the rank -> key permutation.
    #[arg(long, default_value_t = 1)]
    key_seed: u64,
}

fn spec(a: &GenArgs) -> SynthSpec {
    let shape = match a.shape {
        ShapeArg::Oa => Shape::Oa,
        ShapeArg::Se => Shape::Se,
    };
    let mut s = SynthSpec::new(shape, a.keys, a.keys_per_push, a.workers, a.rounds);
    if let Some(f) = a.hot_fraction {
        s.hot_fraction = f;
    }
    if let Some(h) = a.hot_share {
        s.hot_share = h;
    }
    s.exponent = a.zipf;
    s.values = a.values;
    s.stride = a.stride;
    s.seed = a.seed;
    s.key_seed = a.key_seed;
    s
}

fn gen(a: &GenArgs) -> Result<(), Failure> {
    let spec = spec(a);
    let model = Model::fit(&spec).map_err(Failure::usage)?;
    println!(
        "model: {} keys, Zipf exponent {:.4}, {:.1} draws a push -> {:.1} distinct keys a push; \
         top {} keys expected to take {:.2} % of the updates",
        spec.keys,
        model.exponent,
        model.draws,
        model.expected_keys_per_push,
        spec.hot_keys(),
        100.0 * model.expected_hot_share
    );
    let at = |e| Failure::runtime(format!("{}: {e}", a.out.display()));
    let mut w = TraceWriter::create(&a.out, u64::MAX).map_err(at)?;
    let g = generate(&spec, &model, &mut w).map_err(at)?;
    println!(
        "wrote {}: {} records ({} workers x {} rounds), {} pairs, {} bytes ({:.2} bytes a pair); \
         the top {} keys took {:.2} % of the pairs",
        a.out.display(),
        g.records,
        spec.workers,
        spec.rounds,
        g.pairs,
        g.bytes,
        g.bytes as f64 / g.pairs.max(1) as f64,
        spec.hot_keys(),
        100.0 * g.top_pairs as f64 / g.pairs.max(1) as f64
    );
    Ok(())
}

fn stats(paths: &[PathBuf]) -> Result<(), Failure> {
    for path in paths {
        let mut reader = trace::open(path).map_err(|e| unreadable(path, e))?;
        let mut r = Record::default();
        let (mut records, mut pairs, mut values) = (0u64, 0u64, 0u64);
        let (mut workers, mut lens) = (BTreeSet::new(), BTreeSet::new());
        let mut keys = HashSet::new();
        let mut rounds = (u32::MAX, 0u32);
        loop {
            match reader.next_into(&mut r) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    println!("{}: stopped: {e}", path.display());
                    break;
                }
            }
            records += 1;
            pairs += r.pairs.len() as u64;
            workers.insert(r.worker);
            rounds = (rounds.0.min(r.round), rounds.1.max(r.round));
            for &(k, n) in &r.pairs {
                keys.insert(k);
                values += u64::from(n);
                lens.insert(n);
            }
        }
        let lens: Vec<String> = lens.iter().take(8).map(u32::to_string).collect();
        println!(
            "{}: {} bytes, {records} records, {} workers (ranks {}..={}), rounds {}..={}, {pairs} pairs, \
             {} distinct keys, {values} values, value counts {{{}}}",
            path.display(),
            reader.offset(),
            workers.len(),
            workers.first().unwrap_or(&0),
            workers.last().unwrap_or(&0),
            if records == 0 { 0 } else { rounds.0 },
            rounds.1,
            keys.len(),
            lens.join(", ")
        );
    }
    Ok(())
}

/// A trace named by an argument that cannot be read: a usage failure when
/// it does not exist or is no trace, a runtime one when reading it fails.
pub fn unreadable(path: &Path, e: TraceError) -> Failure {
    match e {
        TraceError::Io(e) => Failure::file(path, &e),
        not_a_trace => Failure::usage(format!("{}: {not_a_trace}", path.display())),
    }
}

/// Runs `zebra trace`.
pub fn run(cmd: TraceCommand) -> ExitCode {
    let result = match &cmd {
        TraceCommand::Gen(a) => gen(a),
        TraceCommand::Stats { traces } => stats(traces),
    };
    finish("zebra trace", result)
}
