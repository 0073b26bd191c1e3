//! `zebra`: the command-line front of Zebra for PS-lite.

mod config;
mod failure;
mod launch;
mod metrics;
mod precision;
mod profile;
mod switch;
mod trace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// In-network aggregation of hot parameters for PS-lite jobs, behind a drop-in libzmq.so.5.
///
/// Use: LD_PRELOAD=<prefix>/lib/libzmq.so.5 (or relink against it), then set ZEBRA_*
/// variables; `zebra config --list` lists them, and the hot-path settings file's keys.
///
/// Exit codes of every subcommand: 0 done, 2 a bad argument or setting (nothing was done),
/// 1 a failure while running.
#[derive(Debug, Parser)]
#[command(name = "zebra", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check this environment exactly as the library will at start-up: the ZEBRA_* variables,
    /// and with ZEBRA_ENABLE=1 and ZEBRA_SWITCH the hot path too (ZEBRA_HOT_CONFIG, the
    /// hot-keys file, PS-lite's DMLC_NUM_WORKER and DMLC_NUM_SERVER; DMLC_ROLE may be unset).
    /// Prints what was read, in the names typed, or every problem (exit 2).
    Config {
        /// List every setting instead: its variable, settings-file key, `zebra switch` flag,
        /// default and meaning.
        #[arg(long)]
        list: bool,
    },
    /// Run the software switch over UDP until SIGINT or SIGTERM.
    ///
    /// With --listen alone it admits each job as its servers register; with --workers and hot
    /// keys it serves that one job. Sums the hot pairs of each job's workers (ACK or FALLBACK
    /// to each packet's source), sends each server its aggregate (at the address learned from
    /// its REGISTER, or --server-addr), prints the statistics on SIGUSR1 and at exit, and
    /// serves them as Prometheus metrics with --metrics.
    #[command(after_long_help = switch::FORMATS)]
    Switch(switch::SwitchArgs),
    /// Push traces: generate a synthetic one, or summarise recorded ones.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Rank keys by the copies aggregation saves in push traces and write the hot-keys file.
    ///
    /// Numbers each worker's pushes in rounds per PS-lite server (as the hot path does) and
    /// ranks the keys by the copies the switch would sum away: a key saves one copy for every
    /// worker but one that pushes it in the same round, so a key only one worker pushes per
    /// round saves nothing and is never chosen. Chooses k by Principle 1: the smallest k whose
    /// keys take a share p of all updates, unless they do not fit the switch, then the largest
    /// k that fits. "Fits" is the switch's own test: the settings of `zebra switch` (--config
    /// FILE, --registers, --slots, --servers, with its defaults) are built with the candidate
    /// keys, split over the servers by PS-lite's default key ranges, each server with a hot key
    /// a job of ceil(its values / R) slots a register, all within S (c x S). The file written
    /// is checked the same way: `zebra switch` with the same settings accepts it. Writes `KEY
    /// VALUES` lines, most copies saved first (`A-B VALUES` for runs of consecutive keys),
    /// after a `#` header with k, each server's values and slots, the slots used of S and the
    /// predicted saving. When no key saves anything (one worker; every worker pushes its own
    /// keys) the file has no key and its header says why.
    ///
    /// --switch-mem no longer stands for the switch (it defaulted to 10 MiB whatever the switch
    /// had): the switch's memory is R x S from its settings; --switch-mem only lowers it.
    Profile(profile::ProfileArgs),
    /// Precision of hot sets found from samples against the one found from all records.
    ///
    /// For each sampling rate and seed: |H_g ∩ H_s| / |H_g| (H_g the top k of all records,
    /// H_s the top k of the sample) and the normalised Kendall tau distance between the two
    /// rankings restricted to the keys both hold (the share of those key pairs ordered
    /// differently; 0 = same order). One pass over the traces for every rate and seed.
    Precision(precision::PrecisionArgs),
    /// Print the variables that put a job on Zebra, as `export` lines for `eval`.
    ///
    /// LD_PRELOAD (the shim first, before what LD_PRELOAD already held), ZEBRA_ENABLE=1 and,
    /// with --switch, ZEBRA_SWITCH: `eval "$(zebra env --switch HOST:PORT)"` before a
    /// launcher that copies its environment to every process it starts (MXNet's `--launcher
    /// local`, PS-lite's tests/local.sh). docs/LAUNCH.md: every launcher.
    Env(launch::EnvArgs),
    /// Run a command with the variables of `zebra env` set.
    ///
    /// `zebra run --switch HOST:PORT -- python -m mxnet.tools.launch ...` puts the launcher and
    /// every process it starts on Zebra; in front of the command a remote launcher runs (ssh)
    /// it puts that process on Zebra. Exits as the command does; 2 when the command is not
    /// found or an argument is bad.
    Run(launch::RunArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Config { list: true } => {
            print!("{}", config::settings_table());
            ExitCode::SUCCESS
        }
        Command::Config { list: false } => config::check(),
        Command::Switch(args) => switch::run(args),
        Command::Trace(cmd) => trace::run(cmd),
        Command::Profile(args) => profile::run(args),
        Command::Precision(args) => precision::run(args),
        Command::Env(args) => launch::env(args),
        Command::Run(args) => launch::run(args),
    }
}
