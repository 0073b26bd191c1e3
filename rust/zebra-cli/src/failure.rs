//! How every `zebra` subcommand ends: one convention, as clap's own for
//! the flags it rejects.
//!
//! - 0: done;
//! - 2: a bad argument or setting (a value out of range, a file named by an
//!   argument that does not exist or does not parse, a bad `ZEBRA_*`
//!   variable): nothing was done, the message says what to change;
//! - 1: a failure while running (reading or writing a file, a socket that
//!   cannot be bound, input that holds nothing to work on).
//!
//! Each message goes to standard error as `zebra SUBCOMMAND: MESSAGE`.

use std::fmt;
use std::io;
use std::path::Path;
use std::process::ExitCode;

/// Why a subcommand stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A bad argument or setting: exit 2.
    Usage(String),
    /// A failure while running: exit 1.
    Runtime(String),
}

impl Failure {
    /// A bad argument or setting.
    pub fn usage(message: impl fmt::Display) -> Failure {
        Failure::Usage(message.to_string())
    }

    /// A failure while running.
    pub fn runtime(message: impl fmt::Display) -> Failure {
        Failure::Runtime(message.to_string())
    }

    /// A file named by an argument could not be opened or read: a usage
    /// failure when it does not exist, else a runtime one.
    pub fn file(path: &Path, e: &io::Error) -> Failure {
        let message = format!("{}: {e}", path.display());
        match e.kind() {
            io::ErrorKind::NotFound => Failure::Usage(message),
            _ => Failure::Runtime(message),
        }
    }

    /// The same failure, its message after `what` (`--config`).
    pub fn after(self, what: &str) -> Failure {
        match self {
            Failure::Usage(m) => Failure::Usage(format!("{what} {m}")),
            Failure::Runtime(m) => Failure::Runtime(format!("{what} {m}")),
        }
    }

    /// The exit code: 2 or 1.
    pub fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(m) | Failure::Runtime(m) => f.write_str(m),
        }
    }
}

/// Reports `result` of subcommand `name` (`"zebra profile"`) and returns
/// its exit code.
pub fn finish(name: &str, result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("{name}: {f}");
            ExitCode::from(f.code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_2_and_runtime_is_1() {
        assert_eq!(Failure::usage("--p 1.5").code(), 2);
        assert_eq!(Failure::runtime("disk full").code(), 1);
        assert_eq!(Failure::usage("x").to_string(), "x");
        let gone = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(Failure::file(Path::new("t"), &gone).code(), 2);
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(Failure::file(Path::new("t"), &denied).code(), 1);
    }
}
