//! Configuration of Zebra: every `ZEBRA_*` environment variable in one table.
//!
//! The table [`VARIABLES`] is the single source of truth: each entry carries its own
//! parser, [`Config::from_vars`] runs them, `zebra config --list` prints the table, and a
//! test holds `docs/CONFIG.md` to it. Parsing never panics; each bad value yields one
//! [`ConfigError`] naming the variable, the value as typed and what was expected. The
//! hot-path settings some variables stand for (`ZEBRA_SWITCH`, `ZEBRA_HOT_KEYS`,
//! `ZEBRA_HOT_CONFIG`, ...) are checked once more, with the settings file, by
//! `zebra_hotpath::settings` when the hot path's plan is made.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

mod job_key;
pub use job_key::JobKey;
pub use zebra_agent::{Delivery, SyncMode};
pub use zebra_pslite::FormatChoice;

/// One documented variable.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
    /// Its parser: checks the value as typed and sets it.
    read: Read,
}

/// A variable's parser.
type Read = fn(&mut Reading, &str) -> Result<(), Bad>;

/// What a variable's parser found wrong.
#[derive(Debug)]
enum Bad {
    /// The value is not what the variable takes: `NAME="value": expected ...`.
    Expected(&'static str),
    /// A message of its own, naming the variable (a job key: never the key).
    Said(String),
}

/// A configuration being read, and what its parsers remember.
#[derive(Debug)]
struct Reading {
    cfg: Config,
    pid: u32,
    zebra_log: Option<String>,
    /// `ZEBRA_STATS_INTERVAL` and `ZEBRA_NET` as typed, for the checks of
    /// the whole.
    interval_typed: String,
    net_typed: String,
}

impl Reading {
    /// `text` with `%p` replaced by the process id.
    fn with_pid(&self, text: &str) -> String {
        text.replace("%p", &self.pid.to_string())
    }

    fn job_key(&mut self, key: Result<JobKey, String>) -> Result<(), Bad> {
        if self.cfg.job_key.is_some() {
            return Err(Bad::Said(
                "ZEBRA_JOB_KEY and ZEBRA_JOB_KEY_FILE are both set: give one".into(),
            ));
        }
        self.cfg.job_key = Some(key.map_err(Bad::Said)?);
        Ok(())
    }
}

/// `HOST:PORT` (trimmed), `None` when empty.
fn host_port(value: &str) -> Result<Option<String>, ()> {
    match value.trim() {
        "" => Ok(None),
        v => match v.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Some(v.to_string()))
            }
            _ => Err(()),
        },
    }
}

/// A path, `None` when empty.
fn path(value: &str) -> Option<PathBuf> {
    (!value.trim().is_empty()).then(|| PathBuf::from(value))
}

/// Every variable Zebra reads. Keep in step with `docs/CONFIG.md` (a test checks).
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "ZEBRA_ENABLE",
        default: "0",
        help: "1: Zebra's own engine carries the zmq calls; 0 or unset: every call is forwarded to the real libzmq",
        read: |r, v| {
            r.cfg.enable = parse_bool(v)?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_LOG",
        default: "warn",
        help: "log filter (env_logger syntax, e.g. `info` or `zebra_ffi=debug`); RUST_LOG is read when this is unset",
        read: |r, v| {
            r.zebra_log = Some(v.to_string());
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_REAL_LIBZMQ",
        default: "(found at run time)",
        help: "absolute path of the real libzmq to forward to when no other definition is loaded in the process",
        read: |r, v| {
            if !v.starts_with('/') {
                return Err(Bad::Expected("expected an absolute path to a libzmq shared object"));
            }
            r.cfg.real_libzmq = Some(PathBuf::from(v));
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_STATS",
        default: "(off)",
        help: "`stderr` or a file path: at exit, write the mode, the library forwarded to and per-function call counts (a file path may contain `%p`, replaced by the process id)",
        read: |r, v| {
            r.cfg.stats = match v {
                "" => None,
                "stderr" => Some(StatsSink::Stderr),
                path => Some(StatsSink::File(r.with_pid(path).into())),
            };
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_STATS_INTERVAL",
        default: "(off: at exit only)",
        help: "with ZEBRA_STATS: every SECONDS (e.g. `1` or `0.5`) while the process runs, write its statistics to the ZEBRA_STATS destination as one JSON object per line (JSON Lines), and a last one at exit, in place of the at-exit `key value` report; `0`: off",
        read: |r, v| {
            r.cfg.stats_interval = parse_interval(v).map_err(Bad::Expected)?;
            r.interval_typed = v.to_string();
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_METRICS",
        default: "(off)",
        help: "HOST:PORT: serve this process's counters (zmq calls, the hot path's) in Prometheus's text format at http://HOST:PORT/metrics while it runs (`127.0.0.1:0`: a free port, logged); counters only, no authentication: bind to loopback",
        read: |r, v| {
            r.cfg.metrics = host_port(v).map_err(|_| {
                Bad::Expected("expected HOST:PORT to serve the metrics on (e.g. 127.0.0.1:9960, or port 0 for a free one)")
            })?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_HOT_LOSS",
        default: "(off)",
        help: "seeded fault injection on every hot-path send, for tests: a drop probability (`0.05`) or `drop=P,dup=P,delay=P,delay_ms=MS,seed=N`",
        read: |r, v| {
            r.cfg.hot_loss = match v.trim() {
                "" => None,
                spec => Some(spec.parse::<HotLoss>().map_err(Bad::Expected)?).filter(HotLoss::is_active),
            };
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_SWITCH",
        default: "(none: no in-network aggregation)",
        help: "HOST:PORT of the aggregating switch (`zebra switch` or a Tofino running p4/); with ZEBRA_ENABLE=1, workers send hot keys there (alone: zero configuration, online hot keys in jobs the switch admits)",
        read: |r, v| {
            r.cfg.switch = host_port(v).map_err(|_| Bad::Expected("expected HOST:PORT (e.g. 10.0.0.250:9950)"))?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_JOB_KEY",
        default: "(none: the switch draws the job's token)",
        help: "the job's secret key, the same string in every worker, server and the switch: each derives the job's membership token from it (HMAC-SHA-256), shows it from its first packet, and the switch takes on only members that show it (docs/SECURITY.md); visible to anyone who can read this process's environment, so prefer ZEBRA_JOB_KEY_FILE",
        read: |r, v| r.job_key(JobKey::from_value("ZEBRA_JOB_KEY", v)),
    },
    Variable {
        name: "ZEBRA_JOB_KEY_FILE",
        default: "(none)",
        help: "a file holding the job's secret key (one line), instead of ZEBRA_JOB_KEY; refused if every user may read it (chmod 600)",
        read: |r, v| match v.trim() {
            "" => Ok(()),
            _ => r.job_key(JobKey::from_file("ZEBRA_JOB_KEY_FILE", std::path::Path::new(v))),
        },
    },
    Variable {
        name: "ZEBRA_HOT_KEYS",
        default: "(none)",
        help: "the hot-keys file (PS-lite keys hottest first, `KEY [VALUES]` or `A-B [VALUES]` per line); the switch, every worker and every server read the same file",
        read: |r, v| {
            r.cfg.hot_keys = path(v);
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_HOT",
        default: "auto",
        help: "`auto`: `file` when hot keys are given (ZEBRA_HOT_KEYS, or hot_keys or online_capacity in ZEBRA_HOT_CONFIG), else `online` with each server's job an equal share of the switch's memory, admitted when it registers (zero configuration); `file`: the hot keys of ZEBRA_HOT_KEYS stay for the whole job; `online` or `online:T`: each server re-ranks its keys over every worker's first T pushes (default: online_rounds of ZEBRA_HOT_CONFIG) and, if the ranking moved, installs new hot keys in every worker at one round boundary; ZEBRA_HOT_KEYS is then the starting set and sizes the switch memory (without it, online_capacity of ZEBRA_HOT_CONFIG does); `watch` or `watch:T`: the keys of ZEBRA_HOT_KEYS, installed after every worker's first T pushes went whole (the pace without aggregation), and stepped aside from by the online rules when they cost (slower pushes, flushed rounds, a silent switch), tried again later; `watch:0`: no probe, the file's keys from the first push, stepped aside from on flushed rounds or a silent switch",
        read: |r, v| {
            r.cfg.hot_mode = v.parse().map_err(Bad::Expected)?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_HOT_CONFIG",
        default: "(none: protocol defaults)",
        help: "the hot-path settings file `zebra switch --config` reads (TOML: `key = value` lines, text in double quotes): registers, slots, timeouts, packet size; every party must use the same one",
        read: |r, v| {
            r.cfg.hot_config = path(v);
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_DELIVERY",
        default: "per-worker",
        help: "how a server sees a round's hot sums: `per-worker` (each worker's push request, one carrying the sum, the others zeros: right for every server) or `merged` (one request carries the sum: only for servers that do not count pushes)",
        read: |r, v| {
            r.cfg.delivery = match v.trim() {
                "" | "per-worker" => Delivery::PerWorker,
                "merged" => Delivery::Merged,
                _ => return Err(Bad::Expected("expected per-worker or merged")),
            };
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_PULL",
        default: "switch",
        help: "the pull half with a switch (docs/PULL.md): `switch`: after each round a server sends the round's updated hot values once through the switch, which copies them to every worker, and a worker answers pulls of hot keys from them when they are what the server would return (its first answers checked against the server's); `server`: every pull goes to its server (for servers that change values outside pushes)",
        read: |r, v| {
            r.cfg.pull = match v.trim() {
                "" | "switch" => Pull::Switch,
                "server" => Pull::Server,
                _ => return Err(Bad::Expected("expected switch or server")),
            };
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_SYNC",
        default: "exact",
        help: "when a worker's push completes with a switch (docs/OSP.md): `exact`: when the server has applied all of it (PS-lite's own); `two-stage`: once its hot part is settled at the switch, the cold part still on its way (a later pull is still served after the push); `two-stage:S`: the same, and a pull may be served with up to S of its worker's pushes to that server not yet applied",
        read: |r, v| {
            r.cfg.sync = v.parse().map_err(Bad::Expected)?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_TRACE",
        default: "(off)",
        help: "with ZEBRA_ENABLE=1, each worker records the keys of every push it sends to this file (`%p`: process id, `%r`: worker rank), the input of `zebra profile` (format: rust/zebra-hotkeys/TRACE.md)",
        read: |r, v| {
            r.cfg.trace = (!v.trim().is_empty()).then(|| r.with_pid(v));
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_TRACE_MAX_MB",
        default: "256",
        help: "size bound of each ZEBRA_TRACE file in MiB; pushes after it are not recorded (logged once)",
        read: |r, v| match v.trim().parse::<u64>() {
            Ok(mb) if (1..=1 << 20).contains(&mb) => {
                r.cfg.trace_max_bytes = mb << 20;
                Ok(())
            }
            _ => Err(Bad::Expected("expected MiB, 1..=1048576")),
        },
    },
    Variable {
        name: "ZEBRA_PSLITE_FLAVOR",
        default: "auto",
        help: "PS-lite message format: `auto` (detected from the bytes), `byteps` (BytePS's binary meta) or `protobuf` (dmlc/ps-lite and MXNet)",
        read: |r, v| {
            r.cfg.flavor = v.parse().map_err(|_| Bad::Expected("expected auto, byteps or protobuf"))?;
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_NET",
        default: "kernel",
        help: "the network under the engine's tcp:// and the hot path: `kernel` (kernel sockets), `dpdk` (the user-level stack, smoltcp over a DPDK port; needs ZEBRA_DPDK_ARGS and ZEBRA_IP) or `raw:IFACE` (smoltcp over an AF_PACKET raw socket on IFACE; needs ZEBRA_IP and root)",
        read: |r, v| {
            r.cfg.net = match v.trim() {
                "" | "kernel" => Network::Kernel,
                "dpdk" => Network::Dpdk,
                v if v.starts_with("raw:") && v.len() > 4 && v.len() < 4 + 16 => Network::Raw(v[4..].to_string()),
                _ => return Err(Bad::Expected("expected kernel, dpdk or raw:IFACE")),
            };
            r.net_typed = v.to_string();
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_DPDK_ARGS",
        default: "(none)",
        help: "with ZEBRA_NET=dpdk: the DPDK EAL arguments, whitespace-separated (e.g. `--no-huge -m 256 --no-pci --no-shconf --file-prefix=w0 -l 0 --vdev=net_af_packet0,iface=veth0,framecnt=8192,blocksz=65536`); the first port found is used",
        read: |r, v| {
            r.cfg.dpdk_args = Some(v.trim().to_string()).filter(|a| !a.is_empty());
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_IP",
        default: "(none)",
        help: "with ZEBRA_NET=dpdk or raw: the user-level stack's own IPv4 address and prefix, `A.B.C.D/N` (it answers ARP for it; the kernel must not use it)",
        read: |r, v| {
            r.cfg.net_ip = match v.trim() {
                "" => None,
                _ => Some(v.parse::<Ipv4Cidr>().map_err(Bad::Expected)?),
            };
            Ok(())
        },
    },
    Variable {
        name: "ZEBRA_GATEWAY",
        default: "(none: on-link peers only)",
        help: "with ZEBRA_NET=dpdk or raw: the IPv4 default gateway of the user-level stack",
        read: |r, v| {
            r.cfg.net_gateway = match v.trim() {
                "" => None,
                gw => Some(gw.parse().map_err(|_| Bad::Expected("expected an IPv4 address"))?),
            };
            Ok(())
        },
    },
];

/// Where the hot keys come from (`ZEBRA_HOT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HotMode {
    /// `File` when something sizes the jobs (hot keys or `online_capacity`),
    /// else `Online` with the switch's share (zero configuration).
    #[default]
    Auto,
    /// The hot-keys file, for the whole job.
    File,
    /// Re-ranked online from the file's set, after `rounds` pushes (None:
    /// the hot-path configuration's `online_rounds`).
    Online { rounds: Option<u32> },
    /// The hot-keys file's keys, watched: each server times its workers'
    /// first `rounds` pushes whole (None: `online_rounds`), then installs
    /// the file's keys, and steps aside by the online rules when they cost
    /// (pace, flushed rounds, a silent switch), trying again later. `Some(0)`:
    /// no probe (the file's keys from the first push; no pace rule).
    Watched { rounds: Option<u32> },
}

impl FromStr for HotMode {
    type Err = &'static str;

    /// `ZEBRA_HOT`: `auto` (or empty), `file`, `online`, `online:T` (T > 0),
    /// `watch`, `watch:T`.
    fn from_str(value: &str) -> Result<HotMode, &'static str> {
        let counted = |prefix: &str| {
            value
                .trim()
                .strip_prefix(prefix)
                .and_then(|t| t.trim().parse::<u32>().ok())
        };
        match value.trim() {
            "" | "auto" => Ok(HotMode::Auto),
            "file" => Ok(HotMode::File),
            "online" => Ok(HotMode::Online { rounds: None }),
            "watch" => Ok(HotMode::Watched { rounds: None }),
            _ => match (counted("online:").filter(|&t| t > 0), counted("watch:")) {
                (Some(t), _) => Ok(HotMode::Online { rounds: Some(t) }),
                (None, Some(t)) => Ok(HotMode::Watched { rounds: Some(t) }),
                (None, None) => Err("auto, file, online, online:T, watch or watch:T with T \
                                     a number of pushes (positive for online)"),
            },
        }
    }
}

/// Where pulls of hot keys are answered with a switch (`ZEBRA_PULL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pull {
    /// Updates through the switch; workers answer from them.
    #[default]
    Switch,
    /// Every pull goes to its server.
    Server,
}

/// The network under the engine and the hot path (`ZEBRA_NET`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    #[default]
    Kernel,
    /// smoltcp over a DPDK port (`ZEBRA_DPDK_ARGS`).
    Dpdk,
    /// smoltcp over an `AF_PACKET` raw socket on this interface.
    Raw(String),
}

/// An IPv4 address with its prefix length (`ZEBRA_IP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Cidr {
    pub addr: std::net::Ipv4Addr,
    pub prefix_len: u8,
}

impl FromStr for Ipv4Cidr {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<Ipv4Cidr, &'static str> {
        const EXPECTED: &str = "expected an IPv4 address and prefix, A.B.C.D/N with N in 1..=32";
        let (addr, len) = s.trim().split_once('/').ok_or(EXPECTED)?;
        let addr: std::net::Ipv4Addr = addr.parse().map_err(|_| EXPECTED)?;
        let prefix_len: u8 = len.parse().map_err(|_| EXPECTED)?;
        if !(1..=32).contains(&prefix_len)
            || addr.is_unspecified()
            || addr.is_multicast()
            || addr.is_broadcast()
        {
            return Err(EXPECTED);
        }
        Ok(Ipv4Cidr { addr, prefix_len })
    }
}

/// Seeded faults injected on the hot path's send side (`ZEBRA_HOT_LOSS`).
/// Probabilities are in parts per million.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HotLoss {
    pub drop_ppm: u32,
    pub duplicate_ppm: u32,
    pub delay_ppm: u32,
    /// A delayed datagram waits up to this long (uniformly).
    pub max_delay_us: u64,
    pub seed: u64,
}

impl HotLoss {
    /// What a bad spec is told.
    pub const EXPECTED: &'static str = "expected a drop probability (e.g. 0.05) or comma-separated drop=P, dup=P, delay=P (P in 0..=1), delay_ms=MS (> 0, at most 10000), seed=N";

    /// Whether any fault is injected.
    pub fn is_active(&self) -> bool {
        self.drop_ppm > 0 || self.duplicate_ppm > 0 || self.delay_ppm > 0
    }
}

impl FromStr for HotLoss {
    type Err = &'static str;

    fn from_str(spec: &str) -> Result<HotLoss, &'static str> {
        fn ppm(v: &str) -> Option<u32> {
            let p: f64 = v.trim().parse().ok()?;
            (0.0..=1.0).contains(&p).then(|| (p * 1e6).round() as u32)
        }
        let mut loss = HotLoss {
            max_delay_us: 1000,
            seed: 1,
            ..HotLoss::default()
        };
        if let Some(p) = ppm(spec) {
            loss.drop_ppm = p;
            return Ok(loss);
        }
        for item in spec.split(',') {
            let (k, v) = item.split_once('=').ok_or(Self::EXPECTED)?;
            match k.trim() {
                "drop" => loss.drop_ppm = ppm(v).ok_or(Self::EXPECTED)?,
                "dup" => loss.duplicate_ppm = ppm(v).ok_or(Self::EXPECTED)?,
                "delay" => loss.delay_ppm = ppm(v).ok_or(Self::EXPECTED)?,
                "delay_ms" => {
                    let ms: f64 = v.trim().parse().map_err(|_| Self::EXPECTED)?;
                    if !(ms > 0.0 && ms <= 10_000.0) {
                        return Err(Self::EXPECTED);
                    }
                    loss.max_delay_us = (ms * 1000.0).round().max(1.0) as u64;
                }
                "seed" => loss.seed = v.trim().parse().map_err(|_| Self::EXPECTED)?,
                _ => return Err(Self::EXPECTED),
            }
        }
        Ok(loss)
    }
}

/// Where the at-exit statistics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsSink {
    Stderr,
    /// A file path; `%p` already replaced by the process id.
    File(PathBuf),
}

/// The checked configuration of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub enable: bool,
    pub log_filter: String,
    pub real_libzmq: Option<PathBuf>,
    pub stats: Option<StatsSink>,
    /// `ZEBRA_STATS_INTERVAL`: write the statistics as JSON Lines this often.
    pub stats_interval: Option<std::time::Duration>,
    /// `ZEBRA_METRICS`: `HOST:PORT` of the process's Prometheus endpoint.
    pub metrics: Option<String>,
    pub hot_loss: Option<HotLoss>,
    /// `ZEBRA_SWITCH`, as given (resolved when the hot path starts).
    pub switch: Option<String>,
    pub hot_keys: Option<PathBuf>,
    pub hot_config: Option<PathBuf>,
    pub hot_mode: HotMode,
    pub delivery: Delivery,
    pub pull: Pull,
    /// `ZEBRA_SYNC`.
    pub sync: SyncMode,
    /// `ZEBRA_PSLITE_FLAVOR`.
    pub flavor: FormatChoice,
    /// `ZEBRA_NET` and, for the user-level stack, its EAL arguments, address and gateway.
    pub net: Network,
    pub dpdk_args: Option<String>,
    pub net_ip: Option<Ipv4Cidr>,
    pub net_gateway: Option<std::net::Ipv4Addr>,
    /// `ZEBRA_TRACE`, `%p` already replaced (`%r` is the worker rank, known later).
    pub trace: Option<String>,
    pub trace_max_bytes: u64,
    /// `ZEBRA_JOB_KEY` or the key in `ZEBRA_JOB_KEY_FILE`.
    pub job_key: Option<JobKey>,
}

impl Config {
    /// Whether the in-network aggregation is asked for (`ZEBRA_SWITCH` set).
    pub fn wants_switch(&self) -> bool {
        self.switch.is_some()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            enable: false,
            log_filter: "warn".into(),
            real_libzmq: None,
            stats: None,
            stats_interval: None,
            metrics: None,
            hot_loss: None,
            switch: None,
            hot_keys: None,
            hot_config: None,
            hot_mode: HotMode::Auto,
            delivery: Delivery::PerWorker,
            pull: Pull::Switch,
            sync: SyncMode::Exact,
            flavor: FormatChoice::Auto,
            net: Network::Kernel,
            dpdk_args: None,
            net_ip: None,
            net_gateway: None,
            trace: None,
            trace_max_bytes: 256 << 20,
            job_key: None,
        }
    }
}

/// One bad setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name}={value:?}: {expected}")]
    BadValue {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A bad job key: the message names the variable, never the key.
    #[error("{0}")]
    JobKey(String),
    #[error("{name} is not a Zebra setting (known: {known}); check the spelling")]
    Unknown { name: String, known: String },
}

/// All bad settings found, so a user fixes them in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Zebra configuration:")?;
        for e in &self.0 {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

fn parse_bool(value: &str) -> Result<bool, Bad> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "off" | "no" => Ok(false),
        "1" | "true" | "on" | "yes" => Ok(true),
        _ => Err(Bad::Expected(
            "expected 0 or 1 (also accepted: true/false, on/off, yes/no)",
        )),
    }
}

/// `ZEBRA_STATS_INTERVAL`: seconds, `0` or empty for off.
fn parse_interval(value: &str) -> Result<Option<std::time::Duration>, &'static str> {
    const EXPECTED: &str =
        "expected seconds between reports, 0.01..=86400 (e.g. 1 or 0.5), or 0 for off";
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let seconds: f64 = v.parse().map_err(|_| EXPECTED)?;
    if seconds == 0.0 {
        Ok(None)
    } else if (0.01..=86_400.0).contains(&seconds) {
        Ok(Some(std::time::Duration::from_secs_f64(seconds)))
    } else {
        Err(EXPECTED)
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigErrors> {
        let vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
            .collect();
        Config::from_vars(
            vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            std::process::id(),
        )
    }

    /// Parses `(name, value)` pairs; names without the `ZEBRA_` prefix are ignored
    /// except `RUST_LOG`, the fallback log filter.
    pub fn from_vars<'a>(
        vars: impl IntoIterator<Item = (&'a str, &'a str)>,
        pid: u32,
    ) -> Result<Config, ConfigErrors> {
        let mut r = Reading {
            cfg: Config::default(),
            pid,
            zebra_log: None,
            interval_typed: String::new(),
            net_typed: String::new(),
        };
        let mut errors = Vec::new();
        let mut rust_log = None;
        for (name, value) in vars {
            if name == "RUST_LOG" {
                rust_log = Some(value.to_string());
                continue;
            }
            if !name.starts_with("ZEBRA_") {
                continue;
            }
            let Some(var) = VARIABLES.iter().find(|v| v.name == name) else {
                errors.push(ConfigError::Unknown {
                    name: name.to_string(),
                    known: VARIABLES
                        .iter()
                        .map(|v| v.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
                continue;
            };
            match (var.read)(&mut r, value) {
                Ok(()) => {}
                Err(Bad::Expected(expected)) => errors.push(ConfigError::BadValue {
                    name: var.name,
                    value: value.to_string(),
                    expected,
                }),
                Err(Bad::Said(message)) => errors.push(ConfigError::JobKey(message)),
            }
        }
        let Reading {
            mut cfg,
            zebra_log,
            interval_typed,
            net_typed,
            ..
        } = r;
        if cfg.net != Network::Kernel && cfg.net_ip.is_none() {
            errors.push(ConfigError::BadValue {
                name: "ZEBRA_NET",
                value: net_typed,
                expected: "the user-level stack needs its own address: set ZEBRA_IP=A.B.C.D/N",
            });
        }
        if cfg.net == Network::Dpdk && cfg.dpdk_args.is_none() {
            errors.push(ConfigError::BadValue {
                name: "ZEBRA_NET",
                value: "dpdk".into(),
                expected: "ZEBRA_NET=dpdk needs ZEBRA_DPDK_ARGS (the EAL arguments)",
            });
        }
        if cfg.stats_interval.is_some() && cfg.stats.is_none() {
            errors.push(ConfigError::BadValue {
                name: "ZEBRA_STATS_INTERVAL",
                value: interval_typed,
                expected: "ZEBRA_STATS_INTERVAL needs ZEBRA_STATS (stderr or a file path) to say where the statistics go",
            });
        }
        if let Some(filter) = zebra_log.or(rust_log).filter(|f| !f.trim().is_empty()) {
            cfg.log_filter = filter;
        }
        if errors.is_empty() {
            Ok(cfg)
        } else {
            Err(ConfigErrors(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vars: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
        Config::from_vars(vars.iter().copied(), 42)
    }

    #[test]
    fn sync_mode() {
        assert_eq!(parse(&[]).unwrap().sync, SyncMode::Exact);
        for (v, want) in [
            ("exact", SyncMode::Exact),
            ("two-stage", SyncMode::TwoStage { staleness: 0 }),
            ("two-stage:4", SyncMode::TwoStage { staleness: 4 }),
        ] {
            assert_eq!(parse(&[("ZEBRA_SYNC", v)]).unwrap().sync, want, "{v}");
        }
        let e = parse(&[("ZEBRA_SYNC", "osp")]).unwrap_err().to_string();
        assert!(e.contains("ZEBRA_SYNC") && e.contains("two-stage:S"), "{e}");
    }

    #[test]
    fn hot_path_settings() {
        let c = parse(&[
            ("ZEBRA_SWITCH", "10.0.0.250:9950"),
            ("ZEBRA_HOT_KEYS", "/tmp/hot.keys"),
            ("ZEBRA_DELIVERY", "merged"),
            ("ZEBRA_PSLITE_FLAVOR", "MXNet"),
        ])
        .unwrap();
        assert_eq!(c.switch.as_deref(), Some("10.0.0.250:9950"));
        assert!(c.wants_switch());
        assert_eq!(c.hot_keys, Some(PathBuf::from("/tmp/hot.keys")));
        assert_eq!(
            (c.delivery, c.flavor),
            (
                Delivery::Merged,
                FormatChoice::Fixed(zebra_pslite::Format::Protobuf)
            )
        );
        assert_eq!(c.hot_mode, HotMode::Auto);
        assert!(!parse(&[("ZEBRA_SWITCH", "")]).unwrap().wants_switch());
        for (v, want) in [
            ("online", HotMode::Online { rounds: None }),
            ("online:30", HotMode::Online { rounds: Some(30) }),
            ("file", HotMode::File),
            ("watch", HotMode::Watched { rounds: None }),
            ("watch:7", HotMode::Watched { rounds: Some(7) }),
            ("watch:0", HotMode::Watched { rounds: Some(0) }),
            ("auto", HotMode::Auto),
        ] {
            assert_eq!(parse(&[("ZEBRA_HOT", v)]).unwrap().hot_mode, want, "{v}");
        }
        let t = parse(&[("ZEBRA_TRACE", "/t/w%r.%p"), ("ZEBRA_TRACE_MAX_MB", "2")]).unwrap();
        assert_eq!(
            (t.trace.as_deref(), t.trace_max_bytes),
            (Some("/t/w%r.42"), 2 << 20)
        );
        for (name, bad, want) in [
            ("ZEBRA_SWITCH", "10.0.0.250", "HOST:PORT"),
            ("ZEBRA_SWITCH", ":9950", "HOST:PORT"),
            ("ZEBRA_SWITCH", "h:99999", "HOST:PORT"),
            ("ZEBRA_DELIVERY", "both", "per-worker or merged"),
            ("ZEBRA_HOT", "online:0", "online:T"),
            ("ZEBRA_HOT", "sampled", "online:T"),
            ("ZEBRA_PSLITE_FLAVOR", "thrift", "auto, byteps or protobuf"),
            ("ZEBRA_TRACE_MAX_MB", "0", "MiB"),
        ] {
            let err = parse(&[(name, bad)]).unwrap_err().to_string();
            assert!(
                err.contains(name) && err.contains(want),
                "{name}={bad}: {err}"
            );
        }
    }

    #[test]
    fn network_settings() {
        assert_eq!(parse(&[]).unwrap().net, Network::Kernel);
        let c = parse(&[
            ("ZEBRA_NET", "dpdk"),
            ("ZEBRA_DPDK_ARGS", " --no-huge -l 0 "),
            ("ZEBRA_IP", "10.1.2.3/24"),
            ("ZEBRA_GATEWAY", "10.1.2.1"),
        ])
        .unwrap();
        assert_eq!(c.net, Network::Dpdk);
        assert_eq!(c.dpdk_args.as_deref(), Some("--no-huge -l 0"));
        let ip = c.net_ip.unwrap();
        assert_eq!((ip.addr, ip.prefix_len), ([10, 1, 2, 3].into(), 24));
        assert_eq!(c.net_gateway, Some([10, 1, 2, 1].into()));
        let r = parse(&[("ZEBRA_NET", "raw:veth0"), ("ZEBRA_IP", "10.0.0.2/8")]).unwrap();
        assert_eq!(r.net, Network::Raw("veth0".into()));
        for (vars, want) in [
            (
                &[("ZEBRA_NET", "dpdk"), ("ZEBRA_IP", "10.0.0.2/8")][..],
                "needs ZEBRA_DPDK_ARGS",
            ),
            (&[("ZEBRA_NET", "raw:veth0")][..], "set ZEBRA_IP"),
            (&[("ZEBRA_NET", "raw:")][..], "kernel, dpdk or raw:IFACE"),
            (&[("ZEBRA_NET", "netmap")][..], "kernel, dpdk or raw:IFACE"),
            (&[("ZEBRA_IP", "10.0.0.2")][..], "A.B.C.D/N"),
            (&[("ZEBRA_IP", "10.0.0.2/33")][..], "A.B.C.D/N"),
            (&[("ZEBRA_IP", "0.0.0.0/8")][..], "A.B.C.D/N"),
            (&[("ZEBRA_GATEWAY", "gw")][..], "IPv4 address"),
        ] {
            let err = parse(vars).unwrap_err().to_string();
            assert!(err.contains(want), "{vars:?}: {err}");
        }
    }

    #[test]
    fn unset_means_off() {
        assert_eq!(parse(&[("HOME", "/root")]).unwrap(), Config::default());
    }

    #[test]
    fn enable_values() {
        assert!(parse(&[("ZEBRA_ENABLE", "1")]).unwrap().enable);
        assert!(parse(&[("ZEBRA_ENABLE", "On")]).unwrap().enable);
        assert!(!parse(&[("ZEBRA_ENABLE", "0")]).unwrap().enable);
        assert!(!parse(&[("ZEBRA_ENABLE", "")]).unwrap().enable);
    }

    #[test]
    fn every_bad_value_is_reported() {
        let err = parse(&[
            ("ZEBRA_ENABLE", "2"),
            ("ZEBRA_REAL_LIBZMQ", "libzmq.so"),
            ("ZEBRA_ENABEL", "1"),
        ])
        .unwrap_err();
        assert_eq!(err.0.len(), 3);
        let text = err.to_string();
        assert!(
            text.contains("ZEBRA_ENABLE=\"2\": expected 0 or 1"),
            "{text}"
        );
        assert!(
            text.contains("ZEBRA_REAL_LIBZMQ=\"libzmq.so\": expected an absolute path"),
            "{text}"
        );
        assert!(
            text.contains("ZEBRA_ENABEL is not a Zebra setting"),
            "{text}"
        );
    }

    #[test]
    fn log_filter_prefers_zebra_log() {
        assert_eq!(parse(&[("RUST_LOG", "debug")]).unwrap().log_filter, "debug");
        assert_eq!(
            parse(&[("RUST_LOG", "debug"), ("ZEBRA_LOG", "info")])
                .unwrap()
                .log_filter,
            "info"
        );
        assert_eq!(
            parse(&[("ZEBRA_LOG", "info"), ("RUST_LOG", "debug")])
                .unwrap()
                .log_filter,
            "info"
        );
    }

    #[test]
    fn stats_sink_substitutes_pid() {
        assert_eq!(
            parse(&[("ZEBRA_STATS", "stderr")]).unwrap().stats,
            Some(StatsSink::Stderr)
        );
        assert_eq!(
            parse(&[("ZEBRA_STATS", "/tmp/s.%p.txt")]).unwrap().stats,
            Some(StatsSink::File("/tmp/s.42.txt".into()))
        );
    }

    #[test]
    fn stats_interval_values() {
        let with = |v| parse(&[("ZEBRA_STATS", "stderr"), ("ZEBRA_STATS_INTERVAL", v)]);
        assert_eq!(
            with("1").unwrap().stats_interval,
            Some(std::time::Duration::from_secs(1))
        );
        assert_eq!(
            with(" 0.5 ").unwrap().stats_interval,
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(with("0").unwrap().stats_interval, None);
        assert_eq!(with("").unwrap().stats_interval, None);
        assert_eq!(parse(&[]).unwrap().stats_interval, None);
        for bad in ["-1", "1s", "NaN", "inf", "0.001", "100000"] {
            let err = with(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("ZEBRA_STATS_INTERVAL={bad:?}: expected seconds")),
                "{bad}: {err}"
            );
        }
        let err = parse(&[("ZEBRA_STATS_INTERVAL", "2")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs ZEBRA_STATS"), "{err}");
        let m = parse(&[("ZEBRA_METRICS", "127.0.0.1:0")]).unwrap();
        assert_eq!(m.metrics.as_deref(), Some("127.0.0.1:0"));
        for bad in ["9960", ":9960", "h:http"] {
            let err = parse(&[("ZEBRA_METRICS", bad)]).unwrap_err().to_string();
            assert!(
                err.contains(&format!("ZEBRA_METRICS={bad:?}: expected HOST:PORT")),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn hot_loss_specs() {
        let l = parse(&[("ZEBRA_HOT_LOSS", "0.05")])
            .unwrap()
            .hot_loss
            .unwrap();
        assert_eq!((l.drop_ppm, l.duplicate_ppm, l.seed), (50_000, 0, 1));
        let l: HotLoss = "drop=0.01, dup=0.5,delay=1,delay_ms=2.5,seed=9"
            .parse()
            .unwrap();
        assert_eq!(
            l,
            HotLoss {
                drop_ppm: 10_000,
                duplicate_ppm: 500_000,
                delay_ppm: 1_000_000,
                max_delay_us: 2500,
                seed: 9
            }
        );
        assert_eq!(parse(&[("ZEBRA_HOT_LOSS", "0")]).unwrap().hot_loss, None);
        assert_eq!(parse(&[("ZEBRA_HOT_LOSS", "")]).unwrap().hot_loss, None);
        for bad in ["1.5", "drop=x", "loss=0.1", "delay_ms=0", "seed=-1", "0.1,"] {
            let err = parse(&[("ZEBRA_HOT_LOSS", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("expected a drop probability"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn each_documented_default_is_what_unset_means() {
        // Every entry parses its own default (one not in parentheses) into the
        // configuration of an empty environment.
        for v in VARIABLES.iter().filter(|v| !v.default.starts_with('(')) {
            assert_eq!(
                parse(&[(v.name, v.default)]),
                Ok(Config::default()),
                "{}={}",
                v.name,
                v.default
            );
        }
    }

    #[test]
    fn docs_list_every_variable() {
        let doc = include_str!("../../../docs/CONFIG.md");
        for v in VARIABLES {
            assert!(
                doc.contains(&format!("`{}`", v.name)),
                "docs/CONFIG.md does not document {}",
                v.name
            );
        }
    }
}
