//! `zebra`: the command-line front of Zebra for PS-lite.

mod switch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zebra_config::{Config, VARIABLES};

/// In-network aggregation of hot parameters for PS-lite jobs, behind a drop-in libzmq.so.5.
///
/// Use: LD_PRELOAD=<prefix>/lib/libzmq.so.5 (or relink against it), then set ZEBRA_*
/// variables; `zebra config --list` lists them.
#[derive(Debug, Parser)]
#[command(name = "zebra", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check the ZEBRA_* variables of this environment exactly as the library will at start-up.
    Config {
        /// List every setting with its default instead.
        #[arg(long)]
        list: bool,
    },
    /// Run the software switch for one job over UDP until SIGINT or SIGTERM.
    ///
    /// Sums the hot pairs of the job's workers (ACK or FALLBACK to each packet's source), sends
    /// each server its aggregate (at the address learned from its REGISTER, or --server-addr),
    /// and prints the statistics on SIGUSR1 and at exit.
    #[command(after_long_help = switch::FORMATS)]
    Switch(switch::SwitchArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Config { list: true } => {
            for v in VARIABLES {
                println!("{:<20} default {:<22} {}", v.name, v.default, v.help);
            }
            ExitCode::SUCCESS
        }
        Command::Config { list: false } => match Config::from_env() {
            Ok(config) => {
                println!("{config:#?}");
                ExitCode::SUCCESS
            }
            Err(errors) => {
                eprintln!("zebra: {errors}");
                ExitCode::from(2)
            }
        },
        Command::Switch(args) => switch::run(args),
    }
}
