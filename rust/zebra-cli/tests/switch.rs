//! `zebra switch` as a process: its help, its refusals, and a real round
//! through it from worker and server links built from the same file,
//! with statistics on SIGUSR1 and at SIGTERM, and its metrics scraped
//! over HTTP while a job runs (`--metrics`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use zebra_config::SETTINGS;
use zebra_hotpath::{
    Build, HotpathConfig, LinkConfig, ServerLink, Settings, WorkerEvent, WorkerLink,
};

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
    for flag in SETTINGS.iter().filter_map(|k| k.flag) {
        assert!(help.contains(&format!("--{flag} <")), "--{flag}");
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
        "--workers \"0\": expected an integer in 1..=64",
        "--slots \"x\"",
        "--number \"fixed:40\"",
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

/// A `zebra switch` process started on a settings file, reading its
/// standard output.
struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// The switch's UDP address.
    at: SocketAddr,
    banner: String,
}

impl Running {
    /// Starts `zebra switch --config conf --listen 127.0.0.1:0 args` and
    /// reads its banner.
    fn start(conf: &Path, args: &[&str]) -> Running {
        let mut child = zebra()
            .args(["switch", "--config"])
            .arg(conf)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
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
        Running {
            child,
            stdout,
            at,
            banner,
        }
    }

    /// Reads lines up to the first that holds `needle`, and returns it.
    fn line_with(&mut self, needle: &str) -> String {
        let mut line = String::new();
        while !line.contains(needle) {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "no {needle:?}"
            );
        }
        line
    }

    /// Stops it with SIGTERM; its exit status and what it printed last.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        signal(&self.child, "TERM");
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        (status, rest)
    }
}

/// A job of two workers in a fresh directory: its settings file and the
/// settings as every party builds them.
fn job(name: &str) -> (PathBuf, PathBuf, HotpathConfig) {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("zebra-switch-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hot.keys"), "# hottest first\n500\n1000-1009\n").unwrap();
    let conf = dir.join("hot.conf");
    std::fs::write(
        &conf,
        "workers = 2\nhot_keys = \"hot.keys\"\nregisters = 4\nslots = 8\nround_timeout_ms = 200\n",
    )
    .unwrap();
    let hot = Settings::load(&conf).unwrap().build().unwrap();
    (dir, conf, hot)
}

/// The job's server link and its two worker links, on loopback, the server
/// registered.
fn links(hot: &HotpathConfig, at: SocketAddr) -> (ServerLink, Vec<WorkerLink>) {
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
    (server, workers)
}

/// One round: worker 0 pushes keys 500 and 1003, worker 1 key 500; the
/// server's aggregate.
fn round(
    hot: &HotpathConfig,
    server: &ServerLink,
    workers: &[WorkerLink],
    n: u32,
) -> Vec<(u32, f32)> {
    let keys = hot.hot_keys.as_ref().unwrap();
    let r500 = keys.rank(500).unwrap();
    let r1003 = keys.rank(1003).unwrap();
    workers[0].push(n, vec![(r500, 2.0), (r1003, 1.0)]).unwrap();
    workers[1].push(n, vec![(r500, 5.0)]).unwrap();
    for w in workers {
        assert!(matches!(
            w.recv_timeout(Duration::from_secs(5)),
            Some(WorkerEvent::RoundDone(s)) if s.added == s.packets
        ));
    }
    let (applied, aggregate) = server.next_round(Duration::from_secs(5));
    assert!(applied.is_empty());
    let mut pairs = aggregate.unwrap().pairs;
    pairs.sort_by_key(|p| p.0);
    let mut want = vec![(r500, 7.0), (r1003, 1.0)];
    want.sort_by_key(|p| p.0);
    assert_eq!(pairs, want);
    pairs
}

#[test]
fn a_round_through_the_process_then_stats_on_signals() {
    let (dir, conf, hot) = job("cmd");
    let mut sw = Running::start(&conf, &[]);
    assert!(
        sw.banner.contains("11 hot keys from the file"),
        "{}",
        sw.banner
    );
    let (server, workers) = links(&hot, sw.at);
    round(&hot, &server, &workers, 1);

    signal(&sw.child, "USR1");
    let line = sw.line_with("rounds");
    assert!(line.contains("1 completed"), "{line}");
    let (status, rest) = sw.stop();
    assert!(status.success());
    assert!(
        rest.contains("added            3 packets, 3 pairs"),
        "{rest}"
    );
    assert!(rest.contains("registrations    "), "{rest}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `GET path` from an HTTP server: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let code = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (code, body)
}

/// The value of the sample `series` (name and labels, as exposed).
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[test]
fn metrics_are_scraped_during_a_job_and_move_with_it() {
    let (dir, conf, hot) = job("metrics");
    let mut sw = Running::start(&conf, &["--metrics", "127.0.0.1:0"]);
    let line = sw.line_with("metrics at");
    let at: SocketAddr = line
        .trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let job = hot.job().id;
    let series = |name: &str| format!("zebra_switch_{name}{{zebra_job=\"{job}\"}}");

    let (code, before) = get(at, "/metrics");
    assert_eq!(code, 200);
    assert_eq!(sample(&before, &series("pairs_summed_total")), 0);
    assert!(sample(&before, &series("job_memory_bytes")) > 0);
    assert_eq!(sample(&before, &series("job_workers")), 2);

    let (server, workers) = links(&hot, sw.at);
    for n in 1..=3 {
        round(&hot, &server, &workers, n);
        let (_, now) = get(at, "/metrics");
        assert_eq!(
            sample(&now, &series("pairs_summed_total")),
            3 * u64::from(n)
        );
        assert_eq!(
            sample(&now, &series("rounds_completed_total")),
            u64::from(n)
        );
    }
    let garbage = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    garbage.send_to(b"not a hot-path packet", sw.at).unwrap();
    let mut after = String::new();
    for _ in 0..500 {
        after = get(at, "/metrics").1;
        if sample(&after, "zebra_switch_bad_packets_total{zebra_job=\"none\"}") == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for (name, want) in [
        ("added_packets_total", 9),
        ("rounds_flushed_total", 0),
        ("aggregate_abandoned_total", 0),
        ("bad_packets_total", 0),
    ] {
        assert_eq!(sample(&after, &series(name)), want, "{name}");
    }
    assert!(sample(&after, &series("packets_total")) >= 9);
    assert!(sample(&after, &series("registrations_total")) >= 1);
    assert_eq!(
        sample(&after, "zebra_switch_bad_packets_total{zebra_job=\"none\"}"),
        1
    );
    assert_eq!(
        sample(
            &after,
            &format!("zebra_switch_fallbacks_total{{zebra_job=\"{job}\",reason=\"Late\"}}")
        ),
        0
    );
    assert!(after.contains("# TYPE zebra_switch_pairs_summed_total counter"));
    assert!(after.contains("# TYPE zebra_switch_open_rounds gauge"));
    assert_eq!(get(at, "/").0, 404);

    let (status, rest) = sw.stop();
    assert!(status.success());
    assert!(
        rest.contains("added            9 packets, 9 pairs"),
        "{rest}"
    );
    assert!(
        TcpStream::connect(at).is_err(),
        "the endpoint closes with the switch"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
