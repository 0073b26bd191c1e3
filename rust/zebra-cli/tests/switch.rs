//! `zebra switch` as a process: its help, its refusals, and a real round
//! through it from worker and server links built from the same file,
//! with statistics on SIGUSR1 and at SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use zebra_hotpath::settings::KNOBS;
use zebra_hotpath::{LinkConfig, ServerLink, Settings, WorkerEvent, WorkerLink};

fn zebra() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zebra"));
    c.env_remove("ZEBRA_HOT_LOSS").env("ZEBRA_LOG", "warn");
    c
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("kill -{name} {}", child.id())])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name}");
}

#[test]
fn help_documents_every_knob_and_both_file_formats() {
    let out = zebra().args(["switch", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for k in KNOBS {
        assert!(help.contains(&format!("--{} <", k.flag)), "--{}", k.flag);
    }
    for text in [
        "--config <FILE>",
        "Configuration file",
        "Hot-keys file",
        "SIGUSR1",
        "ZEBRA_HOT_LOSS",
    ] {
        assert!(help.contains(text), "{text}");
    }
}

#[test]
fn bad_values_are_each_named_and_exit_2() {
    let out = zebra()
        .args([
            "switch",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--slots",
            "x",
        ])
        .args(["--hot-key-count", "10", "--number", "fixed:40"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    for want in [
        "--workers: workers = \"0\": expected an integer in 1..=64",
        "--slots: slots = \"x\"",
        "--number: number = \"fixed:40\"",
    ] {
        assert!(err.contains(want), "{want} in {err}");
    }
    let out = zebra()
        .args(["switch", "--workers", "2", "--hot-key-count", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("no address to listen on"));
}

#[test]
fn a_round_through_the_process_then_stats_on_signals() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("zebra-switch-cmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hot.keys"), "# hottest first\n500\n1000-1009\n").unwrap();
    let conf = dir.join("hot.conf");
    std::fs::write(
        &conf,
        "workers = 2\nhot_keys = hot.keys\nregisters = 4\nslots = 8\nround_timeout_ms = 200\n",
    )
    .unwrap();

    let mut child = zebra()
        .args(["switch", "--config"])
        .arg(&conf)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    let at: SocketAddr = banner
        .split_whitespace()
        .nth(4)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {banner:?}"));
    assert!(banner.contains("11 hot keys from the file"), "{banner}");

    let hot = Settings::load(&conf).unwrap().build().unwrap();
    let keys = hot.hot_keys.as_ref().unwrap();
    let link = |rank| {
        let mut c = LinkConfig::new(hot.proto.clone(), hot.job().id, rank, at);
        c.bind = "127.0.0.1:0".parse().unwrap();
        c
    };
    let server = ServerLink::start(link(0)).unwrap();
    let workers: Vec<WorkerLink> = (0..2)
        .map(|w| WorkerLink::start(link(w)).unwrap())
        .collect();
    for _ in 0..2000 {
        if server.is_registered() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(server.is_registered());
    let r500 = keys.rank(500).unwrap();
    let r1003 = keys.rank(1003).unwrap();
    workers[0].push(1, vec![(r500, 2.0), (r1003, 1.0)]).unwrap();
    workers[1].push(1, vec![(r500, 5.0)]).unwrap();
    for w in &workers {
        assert!(matches!(
            w.recv_timeout(Duration::from_secs(5)),
            Some(WorkerEvent::RoundDone(s)) if s.added == s.packets
        ));
    }
    let (applied, round) = server.next_round(Duration::from_secs(5));
    assert!(applied.is_empty());
    assert_eq!(round.unwrap().pairs, vec![(r500, 7.0), (r1003, 1.0)]);

    signal(&child, "USR1");
    let mut line = String::new();
    while !line.contains("rounds") {
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    assert!(line.contains("1 completed"), "{line}");
    signal(&child, "TERM");
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(status.success());
    assert!(
        rest.contains("added            3 packets, 3 pairs"),
        "{rest}"
    );
    assert!(rest.contains("registrations    "), "{rest}");
    std::fs::remove_dir_all(&dir).unwrap();
}
