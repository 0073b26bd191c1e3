//! `zebra`: the command-line front of Zebra for PS-lite.

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
    }
}
