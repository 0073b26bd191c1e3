//! `zebra precision`: the hot set of seeded samples of the traces against
//! the hot set of all of them (the paper's Figure 9), in one pass; or, with
//! `--first-rounds`, the hot set of each worker's first rounds against it
//! (what an online ranking knows after them: the paper's Table II).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use zebra_hotkeys::profile::Sample;
use zebra_hotkeys::{sweep, SamplingPoint};

use crate::failure::{finish, Failure};
use crate::profile::{create, rate, scan, Principle1Args, SwitchSettingsArgs, Target, TraceInput};

/// `zebra precision`'s options.
#[derive(Debug, Args)]
pub struct PrecisionArgs {
    #[command(flatten)]
    input: TraceInput,
    /// Sampling rates to measure, in percent of the records.
    #[arg(
        long,
        value_name = "PERCENT,...",
        value_delimiter = ',',
        default_value = "1,2,3,4,5,6,7,8"
    )]
    rates: Vec<f64>,
    /// Independent samples per rate (seeds SEED, SEED+1, ...); the table gives their mean
    /// and lowest precision. Within one seed a lower rate's sample is a subset of a higher
    /// rate's.
    #[arg(long, default_value_t = 5)]
    repeats: u32,
    /// Seed of the first sample.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead of sampling rates: the hot set of each worker's first T records (its first
    /// T rounds), for each T given, against the hot set of all records.
    #[arg(long, value_name = "T,...", value_delimiter = ',', conflicts_with_all = ["rates", "repeats"])]
    first_rounds: Vec<u32>,
    /// Compare the top K keys; default: the k Principle 1 (--p, --c, --switch-mem) chooses
    /// on all the records, ranked by update count, for the switch of --config, --registers,
    /// --slots and --servers (as `zebra profile`).
    #[arg(long, value_name = "K")]
    k: Option<usize>,
    #[command(flatten)]
    principle: Principle1Args,
    #[command(flatten)]
    switch: SwitchSettingsArgs,
    /// Also write the table as CSV: rate_percent,k,precision_mean,precision_min,tau_mean
    /// (with --first-rounds: first_rounds,k,precision,tau).
    #[arg(long, value_name = "FILE.csv")]
    csv: Option<PathBuf>,
}

fn measure(args: &PrecisionArgs) -> Result<(usize, Vec<SamplingPoint>, Vec<String>), Failure> {
    let p = args.principle.principle()?;
    if args.repeats == 0 || args.rates.is_empty() {
        return Err(Failure::usage(
            "--repeats and --rates need at least one value",
        ));
    }
    let rates: Vec<f64> = args
        .rates
        .iter()
        .map(|&r| rate(r))
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::usage(format!("--rates: {e}")))?;
    let mut samples = vec![Sample::new(1.0, 0)];
    if !args.first_rounds.is_empty() {
        if args.first_rounds.contains(&0) {
            return Err(Failure::usage("--first-rounds: every T must be at least 1"));
        }
        samples.extend(args.first_rounds.iter().map(|&t| Sample::first_rounds(t)));
    } else {
        for r in 0..u64::from(args.repeats) {
            for &x in &rates {
                samples.push(Sample::new(x, args.seed.wrapping_add(r)));
            }
        }
    }
    let (_, mut notes) = scan("zebra precision", &args.input, &mut samples)?;
    let full = samples[0].counts.rank();
    let k = match args.k {
        Some(k) => k.min(full.keys.len()),
        None => {
            let mut target = Target::load(&args.switch, &mut notes)?;
            let (budget, note) = target.budget(&args.principle);
            notes.extend(note);
            p.choose(&full, |k| budget > 0 && target.fits(&full, k, budget))
                .k
        }
    };
    if k == 0 {
        return Err(Failure::runtime(
            "no hot key to compare (empty traces, or no key fits the switch)",
        ));
    }
    Ok((k, sweep(&full, k, &samples[1..]), notes))
}

/// Runs `zebra precision`.
pub fn run(args: PrecisionArgs) -> ExitCode {
    finish("zebra precision", precision(&args))
}

fn precision(args: &PrecisionArgs) -> Result<(), Failure> {
    let (k, points, notes) = measure(args)?;
    for n in notes {
        eprintln!("zebra precision: {n}");
    }
    let csv = if args.first_rounds.is_empty() {
        rate_table(k, &points, args.repeats)
    } else {
        window_table(k, &points)
    };
    if let Some(path) = &args.csv {
        let written = create(path).and_then(|mut o| {
            o.write_all(csv.as_bytes())?;
            o.flush()
        });
        written.map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// Prints the first-rounds table; returns it as CSV.
fn window_table(k: usize, points: &[SamplingPoint]) -> String {
    println!("top {k} keys of all records vs top {k} of each worker's first T records");
    println!("{:>8} {:>10} {:>13}", "T", "precision", "kendall tau");
    let mut csv = String::from("first_rounds,k,precision,tau\n");
    for p in points {
        let t = p.first.unwrap_or(0);
        println!(
            "{:>8} {:>9.1}% {:>13.4}",
            t,
            100.0 * p.mean_precision(),
            p.mean_tau()
        );
        csv.push_str(&format!(
            "{t},{},{:.6},{:.6}\n",
            p.k,
            p.mean_precision(),
            p.mean_tau()
        ));
    }
    csv
}

/// Prints the sampling-rate table; returns it as CSV.
fn rate_table(k: usize, points: &[SamplingPoint], repeats: u32) -> String {
    println!("top {k} keys of all records vs top {k} of each sample; {repeats} samples a rate");
    println!(
        "{:>8} {:>10} {:>10} {:>13}",
        "rate %", "precision", "lowest", "kendall tau"
    );
    let mut csv = String::from("rate_percent,k,precision_mean,precision_min,tau_mean\n");
    for p in points {
        let percent = (p.rate * 100.0 * 1e6).round() / 1e6;
        println!(
            "{:>8} {:>9.1}% {:>9.1}% {:>13.4}",
            percent,
            100.0 * p.mean_precision(),
            100.0 * p.min_precision(),
            p.mean_tau()
        );
        csv.push_str(&format!(
            "{},{},{:.6},{:.6},{:.6}\n",
            percent,
            p.k,
            p.mean_precision(),
            p.min_precision(),
            p.mean_tau()
        ));
    }
    csv
}
