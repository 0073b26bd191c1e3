//! `zebra env` and `zebra run`: the variables that put a process on Zebra
//! (`LD_PRELOAD` of the shim, `ZEBRA_ENABLE=1`, `ZEBRA_SWITCH`), printed for
//! a shell or set for one command, whatever launcher starts the job.
//!
//! The shim is found beside this binary, as both installs lay them out:
//! `PREFIX/bin/zebra` with `PREFIX/lib/libzmq.so.5` (`scripts/setup.sh`),
//! and `zebra_pslite/bin/zebra` with `zebra_pslite/lib/libzmq.so.5` (the
//! wheel); `--lib` names another.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Args;
use zebra_config::Config;

use crate::failure::{finish, Failure};

/// The shim's file name, as the dynamic loader and PS-lite's build know it.
const SHIM: &str = "libzmq.so.5";

/// What both subcommands take.
#[derive(Debug, Args)]
pub struct Target {
    /// The aggregator, `zebra switch` or a Tofino (sets ZEBRA_SWITCH); without it the job
    /// runs on Zebra's engine with no in-network aggregation.
    #[arg(long, value_name = "HOST:PORT")]
    switch: Option<String>,
    /// The shim to preload (default: ../lib/libzmq.so.5 beside this binary).
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
}

/// `zebra env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    target: Target,
}

/// `zebra run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    target: Target,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// The variables to set, in order, or why they cannot be.
fn variables(target: &Target) -> Result<Vec<(&'static str, String)>, Failure> {
    let lib = match &target.lib {
        Some(lib) => lib.clone(),
        None => beside_this_binary()?,
    };
    let lib = lib
        .canonicalize()
        .map_err(|e| Failure::file(&lib, &e).after("--lib"))?;
    if !lib.is_file() {
        return Err(Failure::usage(format!(
            "--lib {}: not a file (expected the shim, {SHIM})",
            lib.display()
        )));
    }
    let lib = lib
        .to_str()
        .ok_or_else(|| Failure::usage(format!("--lib {}: not UTF-8", lib.display())))?;
    if lib.contains([':', ' ']) {
        // The dynamic loader splits LD_PRELOAD on both.
        return Err(Failure::usage(format!(
            "--lib {lib}: LD_PRELOAD cannot hold a path with ':' or ' '"
        )));
    }
    let mut vars = vec![
        (
            "LD_PRELOAD",
            preload_with(lib, std::env::var("LD_PRELOAD").ok()),
        ),
        ("ZEBRA_ENABLE", "1".to_string()),
    ];
    if let Some(switch) = &target.switch {
        // The library's own rule for ZEBRA_SWITCH, named by the flag typed.
        if let Err(errors) = Config::from_vars([("ZEBRA_SWITCH", switch.as_str())], 0) {
            let why = errors.0.first().map(|e| e.to_string()).unwrap_or_default();
            let expected = why.rsplit_once(": ").map_or(why.as_str(), |(_, e)| e);
            return Err(Failure::usage(format!("--switch {switch:?}: {expected}")));
        }
        vars.push(("ZEBRA_SWITCH", switch.trim().to_string()));
    }
    Ok(vars)
}

/// `lib` first in `LD_PRELOAD`, before what was already there (once).
fn preload_with(lib: &str, existing: Option<String>) -> String {
    let rest: Vec<&str> = existing
        .as_deref()
        .unwrap_or("")
        .split([':', ' '])
        .filter(|p| !p.is_empty() && *p != lib)
        .collect();
    std::iter::once(lib)
        .chain(rest)
        .collect::<Vec<_>>()
        .join(":")
}

/// `../lib/libzmq.so.5` from the directory of the running binary.
fn beside_this_binary() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .map_err(|e| Failure::runtime(format!("cannot find this binary's path: {e}")))?;
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let lib = bin.join("../lib").join(SHIM);
    if lib.is_file() {
        return Ok(lib);
    }
    Err(Failure::usage(format!(
        "no {SHIM} beside {} (looked for {}); give it with --lib PATH",
        exe.display(),
        lib.display()
    )))
}

/// `VALUE` quoted for a POSIX shell.
fn shell_quoted(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-:=,+@%".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// `zebra env`: `export NAME=VALUE` lines for `eval`.
pub fn env(args: EnvArgs) -> ExitCode {
    let result = variables(&args.target).map(|vars| {
        for (name, value) in vars {
            println!("export {name}={}", shell_quoted(&value));
        }
    });
    finish("zebra env", result)
}

/// `zebra run`: the command with the variables set, in place of this process.
pub fn run(args: RunArgs) -> ExitCode {
    let result = variables(&args.target).and_then(|vars| {
        let (program, rest) = args.command.split_first().expect("clap requires COMMAND");
        let e = Command::new(program).args(rest).envs(vars).exec();
        let what = Path::new(program);
        Err(match e.kind() {
            std::io::ErrorKind::NotFound => {
                Failure::usage(format!("{}: command not found", what.display()))
            }
            _ => Failure::runtime(format!("cannot run {}: {e}", what.display())),
        })
    });
    finish("zebra run", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_goes_first_and_once() {
        assert_eq!(preload_with("/a/libzmq.so.5", None), "/a/libzmq.so.5");
        assert_eq!(
            preload_with("/a/libzmq.so.5", Some("/x.so /a/libzmq.so.5:/y.so".into())),
            "/a/libzmq.so.5:/x.so:/y.so"
        );
    }

    #[test]
    fn values_are_quoted_for_the_shell() {
        assert_eq!(
            shell_quoted("/opt/z/lib/libzmq.so.5"),
            "/opt/z/lib/libzmq.so.5"
        );
        assert_eq!(shell_quoted("a b"), "'a b'");
        assert_eq!(shell_quoted("it's"), r"'it'\''s'");
        assert_eq!(shell_quoted(""), "''");
    }
}
