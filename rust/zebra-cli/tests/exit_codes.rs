//! One exit-code convention for every `zebra` subcommand (`src/failure.rs`):
//! 2 for a bad argument or setting, 1 for a failure while running, and each
//! message naming what the user typed.

use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::Command;

/// Runs `zebra args` with `env` set; its exit code and standard error.
fn zebra(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args(args)
        .env_remove("ZEBRA_NET")
        .env_remove("ZEBRA_HOT_LOSS")
        .env("ZEBRA_LOG", "error")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `zebra args` exits `code` and says `want` on standard error.
fn exits(code: i32, args: &[&str], env: &[(&str, &str)], want: &str) {
    let (got, err) = zebra(args, env);
    assert_eq!(got, Some(code), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {want:?} not in {err}");
}

/// A small synthetic trace in `dir`.
fn trace(dir: &Path) -> String {
    let path = dir.join("t.trace").display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args([
            "trace",
            "gen",
            "--out",
            &path,
            "--keys",
            "1000",
            "--hot-fraction",
            "0.05",
        ])
        .args(["--workers", "2", "--rounds", "4", "--keys-per-push", "20"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    path
}

#[test]
fn bad_arguments_exit_2_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let keys = dir.path().join("hot.keys").display().to_string();
    // Checked by clap and by the subcommand alike.
    exits(
        2,
        &["profile", "--switch-mem", "10Q", "-o", &keys, &t],
        &[],
        "'10Q' for '--switch-mem <BYTES>'",
    );
    exits(
        2,
        &["profile", "--p", "1.5", "-o", &keys, &t],
        &[],
        "zebra profile: --p 1.5 must be in (0, 1]",
    );
    exits(
        2,
        &["profile", "--sample-rate", "0", "-o", &keys, &t],
        &[],
        "sampling rate 0 % must be in (0, 100]",
    );
    exits(
        2,
        &["profile", "-o", &keys, "/nonexistent/t.trace"],
        &[],
        "no such trace file: /nonexistent/t.trace",
    );
    exits(
        2,
        &["profile", "--config", "/nonexistent.conf", "-o", &keys, &t],
        &[],
        "--config /nonexistent.conf: ",
    );
    exits(
        2,
        &["profile", "--registers", "41", "-o", &keys, &t],
        &[],
        "--registers \"41\"",
    );
    exits(
        2,
        &["profile", "-o", &keys, "/etc/hostname"],
        &[],
        "/etc/hostname: ",
    );
    exits(
        2,
        &["precision", "--rates", "0,4", &t],
        &[],
        "zebra precision: --rates: sampling rate 0 %",
    );
    exits(
        2,
        &["trace", "stats", "/nonexistent.trace"],
        &[],
        "zebra trace: /nonexistent.trace: ",
    );
    exits(2, &["config"], &[("ZEBRA_ENABLE", "maybe")], "ZEBRA_ENABLE");
    exits(
        2,
        &["switch", "--listen", "127.0.0.1:0", "--metrics", "no-port"],
        &[],
        "zebra switch: --metrics \"no-port\": expected HOST:PORT",
    );
    // A variable is named as the user typed it, not as the flag it stands for.
    let (code, err) = zebra(
        &["switch", "--listen", "127.0.0.1:0"],
        &[("ZEBRA_HOT_LOSS", "drop=2")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ZEBRA_HOT_LOSS=\"drop=2\""), "{err}");
    assert!(!err.contains("--loss"), "{err}");
    // No subcommand: the usage, as clap reports every bad invocation.
    let (code, err) = zebra(&[], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("Usage: zebra <COMMAND>"), "{err}");
}

#[test]
fn failures_while_running_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    exits(
        1,
        &["profile", "-o", "/nonexistent/dir/hot.keys", &t],
        &[],
        "zebra profile: /nonexistent/dir/hot.keys: ",
    );
    // A directory opens but cannot be read.
    let d = dir.path().display().to_string();
    exits(1, &["trace", "stats", &d], &[], "zebra trace: ");
    // Addresses already taken.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let taken = udp.local_addr().unwrap().to_string();
    exits(
        1,
        &["switch", "--listen", &taken],
        &[],
        "zebra switch: cannot bind the switch socket",
    );
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = tcp.local_addr().unwrap().to_string();
    exits(
        1,
        &["switch", "--listen", "127.0.0.1:0", "--metrics", &taken],
        &[],
        &format!("zebra switch: --metrics: cannot serve on {taken}"),
    );
}

#[test]
fn the_help_says_what_is_built_and_the_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(!help.contains("later"), "{help}");
    for want in [
        "profile",
        "precision",
        "trace",
        "switch",
        "config",
        "Exit codes",
    ] {
        assert!(help.contains(want), "{want} in {help}");
    }
}
