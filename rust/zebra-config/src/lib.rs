//! Configuration of Zebra: every setting in one table, [`SETTINGS`].
//!
//! Each entry carries its own parser and says which environment variable,
//! settings-file key and `zebra switch` flag give it (`settings.rs`).
//! [`Config::from_vars`] reads a process's `ZEBRA_*` variables at its first zmq
//! call; [`Settings`] collects the hot-path settings from the settings file, flags
//! and the variables that stand for them, and `zebra_hotpath` checks them together.
//! `zebra config --list` prints the table, and tests hold `docs/CONFIG.md` and
//! `docs/HOTPATH.md` to it. Parsing never panics; each bad value yields one problem
//! naming the setting as the user gave it, the value as typed and what was expected.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub mod entries;
mod job_key;
pub mod settings;
pub use entries::{Entry, HotValues, Settings, SettingsError};
pub use job_key::JobKey;
pub use settings::{setting_by_env, setting_by_key, Setting, SETTINGS};
pub use zebra_agent::{Delivery, Rank, SyncMode};
pub use zebra_pslite::FormatChoice;

/// What a process setting's parser found wrong.
#[derive(Debug)]
pub(crate) enum Bad {
    /// The value is not what the variable takes: `NAME="value": expected ...`.
    Expected(&'static str),
}

/// A configuration being read, and what its parsers remember.
#[derive(Debug)]
pub(crate) struct Reading {
    pub(crate) cfg: Config,
    pid: u32,
    pub(crate) zebra_log: Option<String>,
    /// `ZEBRA_STATS_INTERVAL` and `ZEBRA_NET` as typed, for the checks of
    /// the whole.
    pub(crate) interval_typed: String,
    pub(crate) net_typed: String,
}

impl Reading {
    /// `text` with `%p` replaced by the process id.
    pub(crate) fn with_pid(&self, text: &str) -> String {
        text.replace("%p", &self.pid.to_string())
    }
}

/// `HOST:PORT` (trimmed), `None` when empty.
pub(crate) fn host_port(value: &str) -> Result<Option<String>, ()> {
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
/// Probabilities are in parts per million. Serialized as `zebra switch
/// --plan` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
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
    /// `ZEBRA_SWITCH`, as given (resolved when the hot path starts).
    pub switch: Option<String>,
    /// The variables that stand for hot-path settings (`ZEBRA_SWITCH`,
    /// `ZEBRA_HOT_KEYS`, `ZEBRA_HOT_LOSS`, the job key's), each checked by
    /// its setting's parser, as typed: the hot path gives them to its
    /// [`Settings`] after the settings file's lines.
    pub hot: Vec<(&'static str, String)>,
    pub hot_config: Option<PathBuf>,
    pub hot_mode: HotMode,
    pub delivery: Delivery,
    pub pull: Pull,
    /// `ZEBRA_SYNC`.
    pub sync: SyncMode,
    /// `ZEBRA_SYNC_RANK`.
    pub sync_rank: Rank,
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
            switch: None,
            hot: Vec::new(),
            hot_config: None,
            hot_mode: HotMode::Auto,
            delivery: Delivery::PerWorker,
            pull: Pull::Switch,
            sync: SyncMode::Exact,
            sync_rank: Rank::Saving,
            flavor: FormatChoice::Auto,
            net: Network::Kernel,
            dpdk_args: None,
            net_ip: None,
            net_gateway: None,
            trace: None,
            trace_max_bytes: 256 << 20,
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
    /// A bad value of a variable that stands for a hot-path setting, named
    /// by its parser (`ZEBRA_SWITCH="h": expected ...`; a job key never shown).
    #[error("{0}")]
    Hot(String),
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

pub(crate) fn parse_bool(value: &str) -> Result<bool, Bad> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "off" | "no" => Ok(false),
        "1" | "true" | "on" | "yes" => Ok(true),
        _ => Err(Bad::Expected(
            "expected 0 or 1 (also accepted: true/false, on/off, yes/no)",
        )),
    }
}

/// `ZEBRA_STATS_INTERVAL`: seconds, `0` or empty for off.
pub(crate) fn parse_interval(value: &str) -> Result<Option<std::time::Duration>, &'static str> {
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
        // The variables that stand for hot-path settings, checked by their
        // settings' parsers.
        let mut hot = Settings::new();
        for (name, value) in vars {
            if name == "RUST_LOG" {
                rust_log = Some(value.to_string());
                continue;
            }
            if !name.starts_with("ZEBRA_") {
                continue;
            }
            let Some(setting) = setting_by_env(name) else {
                errors.push(ConfigError::Unknown {
                    name: name.to_string(),
                    known: SETTINGS
                        .iter()
                        .filter_map(|s| s.env.filter(|v| v.starts_with("ZEBRA_")))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
                continue;
            };
            if let Some(read) = setting.read {
                if let Err(Bad::Expected(expected)) = read(&mut r, value) {
                    errors.push(ConfigError::BadValue {
                        name: setting.name(),
                        value: value.to_string(),
                        expected,
                    });
                }
            } else if setting.key.is_none() || !value.trim().is_empty() {
                // Empty: not given (the file's value, or the default, holds).
                hot.set_from_env(name, value)
                    .map_err(|e| errors.extend(e.problems.into_iter().map(ConfigError::Hot)))
                    .ok();
                r.cfg
                    .hot
                    .push((setting.env.unwrap_or_default(), value.to_string()));
            }
        }
        match hot.values() {
            Ok(values) => r.cfg.switch = values.switch.map(|e| e.value),
            Err(e) => errors.extend(e.problems.into_iter().map(ConfigError::Hot)),
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
        assert_eq!(
            c.hot,
            [
                ("ZEBRA_SWITCH", "10.0.0.250:9950".to_string()),
                ("ZEBRA_HOT_KEYS", "/tmp/hot.keys".to_string())
            ]
        );
        assert_eq!(
            (c.delivery, c.flavor),
            (
                Delivery::Merged,
                FormatChoice::Fixed(zebra_pslite::Format::Protobuf)
            )
        );
        assert_eq!(c.hot_mode, HotMode::Auto);
        assert!(!parse(&[("ZEBRA_SWITCH", "")]).unwrap().wants_switch());
        assert!(parse(&[("ZEBRA_HOT_KEYS", " ")]).unwrap().hot.is_empty());
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
            ("ZEBRA_SWITCH_STANDBY", "a:1,b:2", "HOST:PORT"),
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
        let l: HotLoss = "0.05".parse().unwrap();
        assert_eq!((l.drop_ppm, l.duplicate_ppm, l.seed), (50_000, 0, 1));
        assert_eq!(
            parse(&[("ZEBRA_HOT_LOSS", "0.05")]).unwrap().hot,
            [("ZEBRA_HOT_LOSS", "0.05".to_string())]
        );
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
        assert!(parse(&[("ZEBRA_HOT_LOSS", "")]).unwrap().hot.is_empty());
        for bad in ["1.5", "drop=x", "loss=0.1", "delay_ms=0", "seed=-1", "0.1,"] {
            let err = parse(&[("ZEBRA_HOT_LOSS", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("expected a drop probability"),
                "{bad}: {err}"
            );
        }
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
    fn sync_rank() {
        assert_eq!(parse(&[]).unwrap().sync_rank, Rank::Saving);
        for (v, want) in [("hot", Rank::Saving), ("pgp", Rank::Pgp)] {
            assert_eq!(
                parse(&[("ZEBRA_SYNC_RANK", v)]).unwrap().sync_rank,
                want,
                "{v}"
            );
        }
        let e = parse(&[("ZEBRA_SYNC_RANK", "lgp")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("ZEBRA_SYNC_RANK") && e.contains("pgp"), "{e}");
    }

    #[test]
    fn each_documented_default_is_what_unset_means() {
        // Every variable parses its own default (one not in parentheses)
        // into the configuration of an empty environment.
        let process = SETTINGS.iter().filter(|s| s.read.is_some());
        for s in process.filter(|s| !s.default.starts_with('(')) {
            let var = s.env.unwrap();
            assert_eq!(
                parse(&[(var, s.default)]),
                Ok(Config::default()),
                "{var}={}",
                s.default
            );
        }
    }

    #[test]
    fn every_setting_is_given_somehow_and_parsed_once() {
        for s in SETTINGS {
            assert!(
                s.env.is_some() || s.key.is_some(),
                "{s:?}: neither a variable nor a key"
            );
            assert!(s.read.is_some() != s.apply.is_some(), "{s:?}: one parser");
            assert_eq!(s.key.is_some(), s.flag.is_some(), "{s:?}: a key has a flag");
            if let Some(flag) = s.flag {
                assert!(flag.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
                assert_eq!(
                    flag.replace('-', "_"),
                    s.key.unwrap().replace("switch", "listen")
                );
            }
        }
        for (i, s) in SETTINGS.iter().enumerate() {
            for t in &SETTINGS[i + 1..] {
                for (a, b) in [(s.env, t.env), (s.key, t.key), (s.flag, t.flag)] {
                    assert!(a.is_none() || a != b, "{s:?} and {t:?}");
                }
            }
        }
    }

    /// The rows `| `NAME` | ...` of the table after the header `header` in
    /// `doc`, as cells.
    fn doc_rows<'a>(doc: &'a str, header: &str) -> Vec<Vec<&'a str>> {
        let start = doc.find(header).unwrap_or_else(|| panic!("{header}"));
        doc[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
            .collect()
    }

    #[test]
    fn docs_config_lists_every_variable_and_only_those() {
        let doc = include_str!("../../../docs/CONFIG.md");
        let rows = doc_rows(doc, "| variable | default | meaning |");
        let names: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
        for s in SETTINGS.iter().filter_map(|s| s.env) {
            if s.starts_with("ZEBRA_") {
                assert!(names.contains(&s), "docs/CONFIG.md does not document {s}");
            } else {
                assert!(
                    doc.contains(&format!("`{s}`")),
                    "docs/CONFIG.md does not name {s}"
                );
            }
        }
        for name in names {
            assert!(
                setting_by_env(name).is_some(),
                "docs/CONFIG.md documents {name}, which is not a setting"
            );
        }
    }

    #[test]
    fn docs_hotpath_lists_every_key_with_its_flag_and_default() {
        let doc = include_str!("../../../docs/HOTPATH.md");
        let rows = doc_rows(doc, "| key | flag | default | meaning |");
        let keyed: Vec<&Setting> = SETTINGS.iter().filter(|s| s.key.is_some()).collect();
        assert_eq!(rows.len(), keyed.len(), "docs/HOTPATH.md: one row per key");
        for (row, s) in rows.iter().zip(keyed) {
            let (key, flag) = (s.key.unwrap(), s.flag.unwrap());
            assert_eq!(
                (row[0], row[1]),
                (format!("`{key}`").as_str(), format!("`--{flag}`").as_str()),
                "docs/HOTPATH.md: the rows in the table's order"
            );
            if !s.default.starts_with('(') {
                let more = format!("{}; ", s.default);
                assert!(
                    row[2] == s.default || row[2].starts_with(&more),
                    "docs/HOTPATH.md: the default of {key} is {}",
                    s.default
                );
            }
            if let Some(var) = s.env {
                assert!(row[3].contains(var), "docs/HOTPATH.md: {key} names {var}");
            }
        }
    }
}
