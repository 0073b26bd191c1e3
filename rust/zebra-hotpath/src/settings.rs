//! The hot-path configuration: one file every party reads (the switch,
//! every worker, every server), the same knobs as `zebra switch` flags, and
//! the variables that stand for some of them (`ZEBRA_SWITCH`,
//! `ZEBRA_HOT_KEYS`, `ZEBRA_HOT_LOSS`, `ZEBRA_JOB_KEY_FILE`, PS-lite's
//! `DMLC_NUM_WORKER` and `DMLC_NUM_SERVER`).
//!
//! Every setting is a [`Knob`] of [`KNOBS`], with its own parser
//! ([`Knob::apply`]): the file, the flags and the variables feed the same
//! entries, and an error names the setting as the user gave it (`FILE:LINE:
//! key = "value"`, `--flag`, `VAR="value"`). The file is TOML (`file.rs`): a
//! flat table of `key = value` lines, strings in double quotes, numbers bare,
//! `server_addr` an array; an unknown key or a bad value is an error naming
//! the file and line. A relative `hot_keys` or `job_key_file` path is
//! relative to the file's directory. Flags given after the file (see
//! [`Settings::set`]) override it. [`Settings::build`] reports every bad
//! value at once, then checks the combination with
//! [`zebra_proto::Config::validate`].
//!
//! ```text
//! # zebra hot path, job 1
//! switch = "10.0.0.250:9950"
//! workers = 8
//! servers = 2
//! hot_keys = "hot.keys"
//! round_timeout_ms = 20
//! server_addr = ["0=10.0.0.1:9951"]
//! ```

mod file;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use zebra_config::{HotLoss, JobKey};
use zebra_proto::config::MAX_UPDATE_WINDOW;
use zebra_proto::consts;
use zebra_proto::number::MAX_FRAC_BITS;
use zebra_proto::{job_token, Config, JobConfig, LayoutKind, NumberMode, Packing};

use std::sync::Arc;

use zebra_agent::{AgentConfig, HotSet, KeyRanges, OnlineConfig};

use crate::hotkeys::{HotKeys, HotKeysError};
use crate::switch_node::SwitchNodeConfig;

/// One setting: a key of the file, a flag of `zebra switch`.
#[derive(Clone, Copy)]
pub struct Knob {
    /// Key in the file.
    pub key: &'static str,
    /// Long flag of `zebra switch` (without `--`).
    pub flag: &'static str,
    /// Placeholder for the value in help texts.
    pub value: &'static str,
    /// Default, as text.
    pub default: &'static str,
    /// What it does.
    pub help: &'static str,
    /// Whether it may be given more than once (values accumulate).
    pub repeat: bool,
    /// Environment variable that `zebra switch` also reads for it.
    pub env: Option<&'static str>,
    /// Its parser: checks one value and sets it.
    apply: Apply,
}

/// A knob's parser: the value of `Entry` into the settings being built, or
/// the problem, naming the entry as the user gave it ([`Entry::bad`]).
type Apply = fn(&mut Builder, &Entry) -> Result<(), String>;

impl std::fmt::Debug for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Knob")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

const fn knob(
    key: &'static str,
    flag: &'static str,
    value: &'static str,
    default: &'static str,
    help: &'static str,
    apply: Apply,
) -> Knob {
    Knob {
        key,
        flag,
        value,
        default,
        help,
        repeat: false,
        env: None,
        apply,
    }
}

/// Sets a single-valued setting.
fn set<T>(field: &mut Option<T>, value: T) -> Result<(), String> {
    *field = Some(value);
    Ok(())
}

/// Every setting, in the order `--help` and the docs list them.
pub const KNOBS: &[Knob] = &[
    knob("switch", "listen", "HOST:PORT", "(required for zebra switch)", "the switch's UDP address: `zebra switch` binds it (0.0.0.0 for all interfaces); workers and servers send to it", |b, e| set(&mut b.switch, address(e, &e.value)?)),
    knob("job", "job", "ID", "1", "job id carried in every packet; with a hot-keys file, PS-lite server s is job ID + s", |b, e| set(&mut b.job, int(e, 0, u16::MAX)?)),
    knob("workers", "workers", "N", "(required)", "workers of the job (ranks 0..N), 1..=64", |b, e| set(&mut b.workers, int(e, 1, 64)?)),
    knob("servers", "servers", "S", "1", "servers of the job (PS-lite server ranks 0..S)", |b, e| set(&mut b.servers, int(e, 1, u16::MAX)?)),
    knob("hot_keys", "hot-keys", "FILE", "(none)", "hot-keys file: PS-lite keys hottest first (line order = hot rank), `KEY [VALUES]` per line; owners follow PS-lite's default key ranges, each owning server is its own job", Builder::hot_keys),
    knob("hot_key_count", "hot-key-count", "K", "(none)", "instead of a file: hot ranks 0..K, split into S contiguous ranges by owner", |b, e| set(&mut b.hot_key_count, int(e, 1, u32::MAX)?)),
    knob("registers", "registers", "R", "32", "register arrays: hot rank r lives in register r mod R", |b, e| {
        b.config().registers = int(e, 1, consts::MAX_REGISTERS as u16)?;
        Ok(())
    }),
    knob("slots", "slots", "K", "1024", "slots per register array and copy, shared by the jobs (ceil(hot keys / R) needed)", |b, e| {
        b.config().slots = int(e, 1, consts::MAX_REGISTER_ENTRIES as u32)?;
        Ok(())
    }),
    knob("copies", "copies", "W", "2", "copies of the slot memory: rounds of one job open at once, 1..=4", |b, e| {
        b.config().copies = int(e, 1, consts::MAX_COPIES as u8)?;
        Ok(())
    }),
    knob("packet_size", "packet-size", "BYTES", "192", "UDP payload of every hot-path packet, 64..=1472", |b, e| {
        b.config().packet_size = int(e, consts::MIN_PACKET_SIZE, consts::MAX_PACKET_SIZE)?;
        Ok(())
    }),
    knob("max_seqs", "max-seqs", "N", "4096", "most packets one worker sends for one round; the rest falls back", |b, e| {
        b.config().max_seqs = int(e, 1, u16::MAX)?;
        Ok(())
    }),
    knob("packing", "packing", "strict|fill|sequential", "strict", "how workers pack pairs: Algorithm 1 without conflicts, Algorithm 1 with full packets, or rank order", |b, e| {
        b.config().packing = match e.value.as_str() {
            "strict" => Packing::Strict,
            "fill" => Packing::Fill,
            "sequential" => Packing::Sequential,
            _ => return Err(e.bad("expected strict, fill or sequential")),
        };
        Ok(())
    }),
    knob("round_timeout_ms", "round-timeout-ms", "MS", "50", "a round still open this long after its first packet is flushed, until the switch has measured the job's rounds: then srtt + 4 rttvar of their lengths, never below MS, doubled after each flush, at most 10 s and half of uncertain_timeout_ms", |b, e| {
        b.config().round_timeout = millis(e)?;
        Ok(())
    }),
    knob("aggregate_rto_ms", "aggregate-rto-ms", "MS", "2", "switch: first resend timeout of an aggregate part, until round trips to the server are measured (rto.rs)", |b, e| {
        b.config().aggregate_rto = millis(e)?;
        Ok(())
    }),
    knob("aggregate_max_retries", "aggregate-max-retries", "N", "50", "switch: resends before an aggregate part is given up (counted)", |b, e| {
        b.config().aggregate_max_retries = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("worker_rto_ms", "worker-rto-ms", "MS", "2", "worker: first resend timeout of a hot packet, until round trips to the switch are measured (rto.rs)", |b, e| {
        b.config().worker_rto = millis(e)?;
        Ok(())
    }),
    knob("worker_max_retries", "worker-max-retries", "N", "10", "worker: resends before a packet's pairs go to the servers as uncertain fallback", |b, e| {
        b.config().worker_max_retries = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("worker_max_in_flight", "worker-max-in-flight", "N", "256", "worker: hot packets in flight at once", |b, e| {
        b.config().worker_max_in_flight = int(e, 1, 1 << 20)?;
        Ok(())
    }),
    knob("worker_window", "worker-window", "true|false", "true", "worker: keep at most the congestion window of hot packets in flight (slow start, halved on a timeout; docs/HOTPATH.md, Congestion control); false: every packet up to worker_max_in_flight leaves at once (for measurements); the switch ignores it", |b, e| set(&mut b.worker_window, boolean(e)?)),
    knob("worker_retain_pairs", "worker-retain-pairs", "N", "1048576", "worker: hot pairs of settled rounds kept (8 bytes each, oldest rounds dropped first) until the server answers, so that what a switch held when it was killed is sent to the servers when it starts again; 0: none (a restart then costs those rounds' hot sums, reported by the servers)", |b, e| {
        b.config().worker_retain_pairs = int(e, 0, 1 << 30)?;
        Ok(())
    }),
    knob("max_round_ahead", "max-round-ahead", "ROUNDS", "1048576", "switch: a hot packet more than ROUNDS rounds past its job's newest round is refused (FALLBACK FarAhead, counted), not remembered (docs/SECURITY.md)", |b, e| {
        b.config().max_round_ahead = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    Knob {
        env: Some("ZEBRA_JOB_KEY_FILE"),
        ..knob("job_key_file", "job-key-file", "FILE", "(none: the switch draws each job's token)", "the job's secret key, in a file nobody else may read (chmod 600): every party derives the job's token from it and the switch takes on only members that show it (docs/SECURITY.md); a relative path is relative to this file; ZEBRA_JOB_KEY gives the key itself", Builder::job_key_file)
    },
    knob("uncertain_timeout_ms", "uncertain-timeout-ms", "MS", "5000", "server: how long uncertain fallback pairs wait for their round's aggregate (a switch learns round timeouts up to half of it)", |b, e| {
        b.config().uncertain_timeout = millis(e)?;
        Ok(())
    }),
    knob("server_history", "server-history", "ROUNDS", "4096", "server: reported rounds remembered", |b, e| {
        b.config().server_history = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("update_window", "update-window", "N", "8", "server and workers (the pull half, docs/PULL.md): a server keeps its updates of the last N seqs (older ones unacknowledged are given up); a worker that sees update n takes any still missing below n - N + 1 as a gap; 1..=1024", |b, e| {
        b.config().update_window = int(e, 1, MAX_UPDATE_WINDOW)?;
        Ok(())
    }),
    knob("register_wait_ms", "register-wait-ms", "MS", "2000", "server: a switch that has not acknowledged the server's REGISTER this long is taken as silent (not running, unreachable, or not taking the job's token): the server steps aside, its workers push whole, until the switch answers (needs online hot keys or the file's watcher; the switch ignores it)", |b, e| set(&mut b.register_wait, millis(e)?)),
    knob("settle_timeout_ms", "settle-timeout-ms", "MS", "30000", "server (PS-lite level): a push whose hot part is still unsettled this long is delivered with what arrived, logged and counted (a party died); the switch ignores it", |b, e| set(&mut b.settle_timeout, millis(e)?)),
    knob("number", "number", "f32|fixed:BITS", "f32", "value format: exact f32 sums, or i32 fixed point with BITS fraction bits (0..=30, the Tofino mode)", |b, e| set(&mut b.number, number(e)?)),
    knob("layout", "layout", "heat|random:SEED", "heat", "register layout: the paper's heat layout, or a seeded random permutation (baseline)", |b, e| set(&mut b.layout, layout(e)?)),
    knob("dense_ranks", "dense-ranks", "N", "0", "ranks 0..N travel as dense blocks (every worker sends every block)", |b, e| set(&mut b.dense_ranks, int(e, 0, u32::MAX)?)),
    knob("online_rounds", "online-rounds", "T", "10", "with ZEBRA_HOT=online: each server counts its keys over every worker's first T pushes to it, then decides", |b, e| set(&mut b.online_rounds, int(e, 1, u32::MAX)?)),
    knob("online_tau", "online-tau", "D", "0.05", "with ZEBRA_HOT=online: the counted ranking replaces a server's hot keys when its top-k Kendall tau distance to them is at least D (0..=1)", |b, e| set(&mut b.online_tau, unit(e, "expected a distance in 0..=1")?)),
    knob("online_max_drift", "online-max-drift", "ROUNDS", "inf", "with ZEBRA_HOT=online: a server steps aside (its workers' pushes go unchanged, without the switch) when their latest rounds were on average more than ROUNDS apart while it counted (asynchronous workers, uneven push counts, stragglers); inf (the default): never for this reason, the pace rule (online_min_pace) measures what aggregation costs instead", |b, e| set(&mut b.online_max_drift, drift(e)?)),
    knob("online_min_saving", "online-min-saving", "SHARE", "0.05", "with ZEBRA_HOT=online: a server steps aside when the keys it would choose save less than SHARE (0..=1) of the values its counted pushes carried (a key saves one copy per extra worker pushing it in the same round; none when each worker pushes its own keys)", |b, e| set(&mut b.online_min_saving, unit(e, SHARE)?)),
    knob("online_min_pace", "online-min-pace", "SHARE", "0.95", "with ZEBRA_HOT=online: after installing keys, a server steps aside when its workers push at less than SHARE (0..=1) of the pace they had while it counted, without aggregation: aggregation made them slower (judged over every stretch of max(T, 10) pushes of each worker)", |b, e| set(&mut b.online_min_pace, unit(e, SHARE)?)),
    knob("online_retry_ms", "online-retry-ms", "MS", "30000", "with ZEBRA_HOT=online: a server that stepped aside counts again this long after (every worker pushing whole, then a new decision), doubling each time up to 16x; 0: never (a job the switch did not admit counts again once the switch admits it, not after this)", |b, e| {
        let retry = if e.value == "0" { Duration::ZERO } else { millis(e)? };
        set(&mut b.online_retry, retry)
    }),
    knob("online_wait_ms", "online-wait-ms", "MS", "5000", "with ZEBRA_HOT=online: once some worker pushed its T-th, a server with no counted push for this long decides without the missing ones (keeps its hot keys; starting from none, takes the counted ones)", |b, e| set(&mut b.online_wait, millis(e)?)),
    knob("online_capacity", "online-capacity", "VALUES", "(the hot-keys file's)", "hot values each PS-lite server's job holds at least, for keys installed online (ZEBRA_HOT=online); without a hot-keys file the job starts with no hot key and this size", |b, e| set(&mut b.online_capacity, int(e, 1, u32::MAX)?)),
    knob("online_out", "online-out", "FILE", "(none)", "with ZEBRA_HOT=online: each server writes the hot keys it decided on to FILE (`%r`: server rank), in the hot-keys file format", |b, e| set(&mut b.online_out, path(e)?)),
    Knob {
        repeat: true,
        ..knob("server_addr", "server-addr", "INDEX=HOST:PORT", "(learned from REGISTER)", "fix server INDEX's address instead of learning it from its REGISTER (repeatable)", Builder::server_addr)
    },
    Knob {
        env: Some("ZEBRA_HOT_LOSS"),
        ..knob("loss", "loss", "SPEC", "(off)", "seeded faults on every send: a drop probability, or drop=P,dup=P,delay=P,delay_ms=MS,seed=N", |b, e| {
        b.loss = if e.value.is_empty() {
            None
        } else {
            Some(e.value.parse::<HotLoss>().map_err(|x| e.bad(x))?).filter(HotLoss::is_active)
        };
        Ok(())
    })
    },
];

/// The knob with file key `key`.
pub fn knob_by_key(key: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.key == key)
}

/// A loaded and checked hot-path configuration (one job).
#[derive(Debug, Clone)]
pub struct HotpathConfig {
    /// The switch's address (`switch` / `--listen`), if given.
    pub switch: Option<SocketAddr>,
    /// The protocol configuration, validated; its one job is [`Self::job`].
    pub proto: Config,
    /// The hot keys, when read from a file (else ranks are given directly).
    pub hot_keys: Option<HotKeys>,
    /// With a hot-keys file: the keys' owners and hot indices. Each PS-lite
    /// server `s` that owns a hot key is then its own job `job + s` with one
    /// server (index 0), as `zebra-agent` splits pushes; [`Self::proto`]
    /// holds those jobs.
    pub hot_set: Option<Arc<HotSet>>,
    /// The first job id (`job`).
    pub job_base: u16,
    /// Pinned server addresses, by server index.
    pub server_addrs: BTreeMap<u16, SocketAddr>,
    /// Faults to inject on every send.
    pub loss: Option<HotLoss>,
    /// `settle_timeout_ms`: the PS-lite level's last resort (`zebra-agent`).
    pub settle_timeout: Duration,
    /// `register_wait_ms`: how long a server waits for the switch to answer
    /// its REGISTER before it steps aside (`Aside::Unanswered`).
    pub register_wait: Duration,
    /// `worker_window`: whether workers keep to their congestion window
    /// ([`LinkConfig::window`](crate::LinkConfig::window)).
    pub worker_window: bool,
    /// `online_rounds`, `online_tau`, `online_wait_ms`: the online
    /// re-ranking, used when `ZEBRA_HOT=online` asks for it.
    pub online: OnlineConfig,
    /// `online_out`: where each server writes its decided hot keys.
    pub online_out: Option<String>,
    /// A switch with nothing that sizes a job (no workers, no hot keys):
    /// it admits jobs as their servers register, each like this template
    /// (number format, layout, dense ranks); `proto` then has no job.
    pub admit: Option<JobConfig>,
    /// Nothing sized the jobs (no hot keys, no `online_capacity`): each
    /// server's job is an equal share of the switch's memory
    /// ([`Config::share`]), asked for at registration, its keys found
    /// online.
    pub zero_config: bool,
    /// The hot-keys file lists no key (`zebra profile` writes one when
    /// aggregation would save nothing; its comments say why): there is
    /// nothing to aggregate, and `proto` has no job. The file's path.
    pub no_keys: Option<String>,
    /// The job's secret key (`job_key_file`, `ZEBRA_JOB_KEY`): every job of
    /// [`Self::proto`] has the token it derives; a switch that admits jobs
    /// gives each the token of its id and admits only REGISTERs showing it.
    pub job_key: Option<JobKey>,
}

/// Default of `online_rounds`.
pub const ONLINE_ROUNDS: u32 = 10;

/// Default of `settle_timeout_ms`.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of `register_wait_ms`: a switch answers a REGISTER in a round
/// trip, a loaded 2-core testbed in milliseconds; a REGISTER lost on the way
/// is sent again well within it.
pub const REGISTER_WAIT: Duration = Duration::from_secs(2);

impl HotpathConfig {
    /// The first job (a switch that admits jobs has none: see
    /// [`Self::admit`]).
    pub fn job(&self) -> &JobConfig {
        &self.proto.jobs[0]
    }

    /// The job and server index of PS-lite server `server`: with a hot-keys
    /// file each server is its own job; else server `server` of the one job.
    pub fn server_member(&self, server: u16) -> (u16, u16) {
        match &self.hot_set {
            Some(_) => (self.job_base.wrapping_add(server), 0),
            None => (self.job().id, server),
        }
    }

    /// What a [`SwitchNode`](crate::SwitchNode) listening on `listen` needs.
    pub fn switch_node_config(&self, listen: SocketAddr) -> SwitchNodeConfig {
        SwitchNodeConfig {
            server_addrs: self
                .server_addrs
                .iter()
                .map(|(&s, &a)| (self.server_member(s), a))
                .collect(),
            loss: self.loss,
            admit: self.admit.clone(),
            job_key: self.job_key.clone(),
            ..SwitchNodeConfig::new(listen, self.proto.clone())
        }
    }
}

/// Every problem found, so they are fixed in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// One line per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid hot-path configuration:")?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SettingsError {}

impl SettingsError {
    fn one(problem: String) -> SettingsError {
        SettingsError {
            problems: vec![problem],
        }
    }
}

#[derive(Debug, Clone)]
enum Origin {
    /// A line of the settings file, and the value as written there.
    File {
        path: PathBuf,
        line: usize,
        typed: String,
    },
    Flag(&'static str),
    /// An environment variable, and its value as the user typed it.
    Env {
        var: String,
        typed: String,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, .. } => write!(f, "{}:{line}", path.display()),
            Origin::Flag(flag) => write!(f, "--{flag}"),
            Origin::Env { var, .. } => f.write_str(var),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    knob: &'static Knob,
    value: String,
    origin: Origin,
}

impl Entry {
    fn bad(&self, expected: &str) -> String {
        match &self.origin {
            // The user wrote no key: name the variable and what they typed.
            Origin::Env { var, typed } => format!("{var}={typed:?}: {expected}"),
            Origin::Flag(flag) => format!("--{flag} {:?}: {expected}", self.value),
            // As written in the file: `hot.conf:2: workers = 65`.
            Origin::File { typed, .. } => {
                format!("{}: {} = {typed}: {expected}", self.origin, self.knob.key)
            }
        }
    }

    /// The setting as the user named it: `VAR`, `--flag`, `FILE:LINE: key`.
    fn named(&self) -> String {
        match &self.origin {
            Origin::File { .. } => format!("{}: {}", self.origin, self.knob.key),
            origin => origin.to_string(),
        }
    }

    /// The value as a path: relative to the settings file's directory when
    /// it comes from the file.
    fn path(&self) -> PathBuf {
        let path = PathBuf::from(&self.value);
        match &self.origin {
            Origin::File { path: file, .. } if path.is_relative() => {
                file.parent().map_or(path.clone(), |dir| dir.join(&path))
            }
            _ => path,
        }
    }
}

/// Settings as given, before checking: a file's lines, then flags.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    entries: Vec<Entry>,
    /// The job key given itself ([`Settings::set_job_key`]) and its origin.
    job_key: Option<(JobKey, String)>,
    /// The job id of a zero-configuration job without `job`
    /// ([`Settings::set_zero_config_job`]).
    zero_config_job: Option<u16>,
}

impl Settings {
    /// No setting: every knob at its default.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SettingsError::one(format!("{}: {e}", path.display())))?;
        Settings::parse(&text, path)
    }

    /// Parses the text of a configuration file read from `path` (TOML,
    /// `file.rs`).
    pub fn parse(text: &str, path: &Path) -> Result<Settings, SettingsError> {
        let items = file::items(text, path).map_err(|problems| SettingsError { problems })?;
        let mut s = Settings::new();
        let mut problems = Vec::new();
        for item in items {
            let at = format!("{}:{}", path.display(), item.line);
            let Some(knob) = knob_by_key(&item.key) else {
                problems.push(format!(
                    "{at}: unknown key {:?} (known: {})",
                    item.key,
                    KNOBS.iter().map(|k| k.key).collect::<Vec<_>>().join(", ")
                ));
                continue;
            };
            if item.array && !knob.repeat {
                problems.push(format!("{at}: {} takes one value, not an array", knob.key));
                continue;
            }
            for (value, typed) in item.values.into_iter().zip(item.typed) {
                s.entries.push(Entry {
                    knob,
                    value: value.trim().to_string(),
                    origin: Origin::File {
                        path: path.to_path_buf(),
                        line: item.line,
                        typed,
                    },
                });
            }
        }
        if problems.is_empty() {
            Ok(s)
        } else {
            Err(SettingsError { problems })
        }
    }

    /// Takes out every value of knob `key`, returning where each was given
    /// (`FILE:LINE`, `--flag`, `VAR`).
    pub fn remove(&mut self, key: &str) -> Vec<String> {
        let (gone, kept) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| e.knob.key == key);
        self.entries = kept;
        gone.iter().map(|e: &Entry| e.origin.to_string()).collect()
    }

    /// Whether knob `key` is given.
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|e| e.knob.key == key)
    }

    /// Every setting given, one line each, named as the user gave it:
    /// `FILE:LINE: key = "value"`, `--flag "value"`, `VAR="value"`; the job
    /// key's file named, never its key.
    pub fn given(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| match &e.origin {
                Origin::Env { var, typed } => format!("{var}={typed:?}"),
                Origin::Flag(flag) => format!("--{flag} {:?}", e.value),
                Origin::File { typed, .. } => format!("{}: {} = {typed}", e.origin, e.knob.key),
            })
            .collect()
    }

    /// Sets a knob from a flag (overriding the file for single-valued
    /// knobs, adding to it for repeatable ones).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingsError> {
        let knob = knob_by_key(key)
            .ok_or_else(|| SettingsError::one(format!("unknown setting {key:?}")))?;
        self.entries.push(Entry {
            knob,
            value: value.trim().to_string(),
            origin: Origin::Flag(knob.flag),
        });
        Ok(())
    }

    /// Sets a knob from environment variable `var`, whose value is `typed`
    /// (as [`set`](Self::set) does for a flag): a bad value is reported as
    /// `VAR="typed": expected ...`, naming neither the key nor a flag the
    /// user did not write.
    pub fn set_from_env(&mut self, key: &str, var: &str, typed: &str) -> Result<(), SettingsError> {
        let knob = knob_by_key(key)
            .ok_or_else(|| SettingsError::one(format!("unknown setting {key:?}")))?;
        self.entries.push(Entry {
            knob,
            value: typed.trim().to_string(),
            origin: Origin::Env {
                var: var.to_string(),
                typed: typed.to_string(),
            },
        });
        Ok(())
    }

    /// Gives the job's secret key itself (`ZEBRA_JOB_KEY`, read by
    /// `zebra_config`), named `origin` in errors; never printed. A
    /// `job_key_file` as well is an error.
    pub fn set_job_key(&mut self, key: JobKey, origin: &str) {
        self.job_key = Some((key, origin.to_string()));
    }

    /// The job id a zero-configuration job (nothing sizes it: no hot keys,
    /// no `online_capacity`) takes when `job` is not given, instead of 1:
    /// one every process of the job derives alike and other jobs do not
    /// (zebra-runtime: from the scheduler's address), so that jobs sharing
    /// a switch that admits them do not collide. A `job` given wins.
    pub fn set_zero_config_job(&mut self, id: u16) {
        self.zero_config_job = Some(id);
    }

    /// Checks every value and the combination.
    pub fn build(&self) -> Result<HotpathConfig, SettingsError> {
        let mut b = Builder {
            job_key: self.job_key.clone(),
            zero_config_job: self.zero_config_job,
            ..Builder::default()
        };
        let mut problems = Vec::new();
        for e in &self.entries {
            b.named.insert(e.knob.key, e.named());
            if let Err(p) = (e.knob.apply)(&mut b, e) {
                problems.push(p);
            }
        }
        if !problems.is_empty() {
            return Err(SettingsError { problems });
        }
        b.finish()
    }
}

#[derive(Debug, Default)]
struct Builder {
    config: Option<Config>,
    switch: Option<SocketAddr>,
    job: Option<u16>,
    workers: Option<u16>,
    servers: Option<u16>,
    /// How each knob given was named last ([`Entry::named`]).
    named: BTreeMap<&'static str, String>,
    hot_keys_file: Option<PathBuf>,
    hot_key_count: Option<u32>,
    number: Option<NumberMode>,
    layout: Option<LayoutKind>,
    dense_ranks: Option<u32>,
    server_addrs: BTreeMap<u16, (SocketAddr, String)>,
    loss: Option<HotLoss>,
    settle_timeout: Option<Duration>,
    register_wait: Option<Duration>,
    worker_window: Option<bool>,
    online_rounds: Option<u32>,
    online_tau: Option<f64>,
    online_wait: Option<Duration>,
    online_max_drift: Option<f64>,
    online_min_saving: Option<f64>,
    online_min_pace: Option<f64>,
    online_retry: Option<Duration>,
    online_out: Option<String>,
    online_capacity: Option<u32>,
    job_key: Option<(JobKey, String)>,
    zero_config_job: Option<u16>,
}

fn int<T: FromStr + PartialOrd + fmt::Display + Copy>(
    e: &Entry,
    min: T,
    max: T,
) -> Result<T, String> {
    match e.value.parse::<T>() {
        Ok(v) if v >= min && v <= max => Ok(v),
        _ => Err(e.bad(&format!("expected an integer in {min}..={max}"))),
    }
}

fn millis(e: &Entry) -> Result<Duration, String> {
    let expected =
        "expected milliseconds, more than 0 and at most 3600000 (fractions allowed: 0.5)";
    let ms: f64 = e.value.parse().map_err(|_| e.bad(expected))?;
    if !(ms > 0.0 && ms <= 3_600_000.0) {
        return Err(e.bad(expected));
    }
    let us = (ms * 1000.0).round() as u64;
    if us == 0 {
        return Err(e.bad(expected));
    }
    Ok(Duration::from_micros(us))
}

/// What a bad share is told.
const SHARE: &str = "expected a share in 0..=1";

/// A number in `0..=1`.
fn unit(e: &Entry, expected: &str) -> Result<f64, String> {
    match e.value.parse::<f64>() {
        Ok(d) if (0.0..=1.0).contains(&d) => Ok(d),
        _ => Err(e.bad(expected)),
    }
}

/// `online_max_drift`: rounds, 0 or more, or `inf`.
fn drift(e: &Entry) -> Result<f64, String> {
    match e.value.parse::<f64>() {
        Ok(d) if d >= 0.0 => Ok(d),
        _ => Err(e.bad("expected a number of rounds, 0 or more, or inf")),
    }
}

/// `true` or `false` (a TOML boolean, or the same words from a flag).
fn boolean(e: &Entry) -> Result<bool, String> {
    match e.value.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(e.bad("expected true or false")),
    }
}

/// A file path, not empty.
fn path(e: &Entry) -> Result<String, String> {
    if e.value.is_empty() {
        return Err(e.bad("expected a file path"));
    }
    Ok(e.value.clone())
}

fn number(e: &Entry) -> Result<NumberMode, String> {
    let expected = "expected f32 or fixed:BITS with BITS in 0..=30";
    match e.value.split_once(':') {
        None if e.value == "f32" => Ok(NumberMode::F32),
        Some(("fixed", bits)) => match bits.parse::<u8>() {
            Ok(frac_bits) if frac_bits <= MAX_FRAC_BITS => Ok(NumberMode::Fixed { frac_bits }),
            _ => Err(e.bad(expected)),
        },
        _ => Err(e.bad(expected)),
    }
}

fn layout(e: &Entry) -> Result<LayoutKind, String> {
    let expected = "expected heat or random:SEED (SEED a u64)";
    match e.value.split_once(':') {
        None if e.value == "heat" => Ok(LayoutKind::Heat),
        Some(("random", seed)) => Ok(LayoutKind::Random {
            seed: seed.parse().map_err(|_| e.bad(expected))?,
        }),
        _ => Err(e.bad(expected)),
    }
}

fn address(e: &Entry, text: &str) -> Result<SocketAddr, String> {
    let expected = "expected HOST:PORT (an IP address or a name that resolves, and a port)";
    text.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| e.bad(expected))
}

impl Builder {
    fn config(&mut self) -> &mut Config {
        self.config.get_or_insert_with(|| Config::new(Vec::new()))
    }

    /// `job_key_file`: the key read at once (a relative path is relative
    /// to the settings file).
    fn job_key_file(&mut self, e: &Entry) -> Result<(), String> {
        let named = match &e.origin {
            Origin::File { .. } => format!("{}: job_key_file", e.origin),
            other => other.to_string(),
        };
        let key = JobKey::from_file(&named, &e.path())?;
        if let Some((_, first)) = &self.job_key {
            return Err(format!(
                "{named}: the job key is given twice (also by {first}): give one"
            ));
        }
        self.job_key = Some((key, named));
        Ok(())
    }

    fn hot_keys(&mut self, e: &Entry) -> Result<(), String> {
        if e.value.is_empty() {
            return Err(e.bad("expected a file path"));
        }
        self.hot_keys_file = Some(e.path());
        Ok(())
    }

    fn server_addr(&mut self, e: &Entry) -> Result<(), String> {
        let expected = "expected INDEX=HOST:PORT";
        let (index, addr) = e.value.split_once('=').ok_or_else(|| e.bad(expected))?;
        let index: u16 = index.trim().parse().map_err(|_| e.bad(expected))?;
        let addr = address(e, addr.trim())?;
        self.server_addrs
            .insert(index, (addr, e.origin.to_string()));
        Ok(())
    }

    fn finish(mut self) -> Result<HotpathConfig, SettingsError> {
        let mut problems = Vec::new();
        let servers = self.servers.unwrap_or(1);
        let sized = self.hot_keys_file.is_some()
            || self.hot_key_count.is_some()
            || self.online_capacity.is_some();
        if self.workers.is_none() && !sized {
            return self.admitting();
        }
        let zero_config = !sized;
        if zero_config {
            // Nothing sizes the jobs: each server asks the switch for an equal
            // share of its memory (admission), and finds its keys online.
            let geometry = self.config.get_or_insert_with(|| Config::new(Vec::new()));
            self.online_capacity = Some(geometry.share(servers));
        }
        if self.workers.is_none() {
            problems.push("workers: not set (--workers N, or `workers = N` in the file)".into());
        }
        let hot_keys = match (&self.hot_keys_file, self.hot_key_count) {
            (Some(_), Some(_)) => {
                problems.push(format!(
                    "hot keys: {} gives a hot-keys file and {} a number of hot keys: give one, not both",
                    self.named["hot_keys"], self.named["hot_key_count"]
                ));
                None
            }
            (None, None) => None,
            (Some(path), None) => match HotKeys::load(path) {
                Ok(hk) => Some(hk),
                // Online, the file only starts the count: as if there were none.
                Err(HotKeysError::Empty) if self.online_capacity.is_some() => None,
                Err(HotKeysError::Empty) if problems.is_empty() => {
                    // `zebra profile` writes such a file when aggregation would save
                    // nothing (its comments say why): a job with nothing to aggregate.
                    let no_keys = Some(path.display().to_string());
                    return self.jobless(None, no_keys);
                }
                Err(e) => {
                    problems.push(format!("hot keys: {e}"));
                    None
                }
            },
            (None, Some(_)) => None,
        };
        for (index, (_, origin)) in &self.server_addrs {
            if *index >= servers {
                problems.push(format!(
                    "{origin}: server_addr names server {index}, the job has {servers} servers"
                ));
            }
        }
        if !problems.is_empty() {
            return Err(SettingsError { problems });
        }
        let number = self.number.unwrap_or(NumberMode::F32);
        let layout = self.layout.unwrap_or(LayoutKind::Heat);
        let dense_ranks = self.dense_ranks.unwrap_or(0);
        let job_base = self
            .job
            .or(self.zero_config_job.filter(|_| zero_config))
            .unwrap_or(1);
        let workers = self.workers.unwrap_or(0);
        let entries = match &hot_keys {
            Some(hk) => Some(hk.entries().collect::<Vec<_>>()),
            None if self.hot_key_count.is_none() => self.online_capacity.map(|_| Vec::new()),
            None => None,
        };
        let (jobs, hot_set) = match entries {
            Some(entries) => {
                let mut hot = HotSet::new(entries, KeyRanges::pslite(servers))
                    .map_err(|e| SettingsError::one(format!("hot keys: {e}")))?;
                if let Some(values) = self.online_capacity {
                    hot = hot
                        .with_capacity(values)
                        .map_err(|e| SettingsError::one(format!("online_capacity: {e}")))?;
                }
                let agent = AgentConfig::new(job_base, workers, servers);
                agent
                    .validate()
                    .map_err(|e| SettingsError::one(e.to_string()))?;
                let jobs = hot
                    .job_configs(&agent)
                    .into_iter()
                    .map(|mut job| {
                        job.number = number;
                        job.layout = layout;
                        job.dense_ranks = dense_ranks;
                        job
                    })
                    .collect();
                (jobs, Some(Arc::new(hot)))
            }
            None => {
                let mut job =
                    JobConfig::new(job_base, workers, self.hot_key_count.unwrap_or(0), servers);
                job.number = number;
                job.layout = layout;
                job.dense_ranks = dense_ranks;
                (vec![job], None)
            }
        };
        let mut proto = self
            .config
            .take()
            .unwrap_or_else(|| Config::new(Vec::new()));
        proto.jobs = jobs;
        if let Some((key, _)) = &self.job_key {
            for job in &mut proto.jobs {
                job.token = job_token(key.as_bytes(), job.id);
            }
        }
        proto
            .validate()
            .map_err(|e| SettingsError::one(format!("the settings do not fit together: {e}")))?;
        Ok(HotpathConfig {
            switch: self.switch,
            proto,
            hot_keys,
            hot_set,
            job_base,
            server_addrs: self
                .server_addrs
                .into_iter()
                .map(|(i, (a, _))| (i, a))
                .collect(),
            loss: self.loss,
            settle_timeout: self.settle_timeout.unwrap_or(SETTLE_TIMEOUT),
            register_wait: self.register_wait.unwrap_or(REGISTER_WAIT),
            worker_window: self.worker_window.unwrap_or(true),
            online: {
                let mut o = OnlineConfig::new(self.online_rounds.unwrap_or(ONLINE_ROUNDS));
                o.tau = self.online_tau.unwrap_or(o.tau);
                o.wait = self.online_wait.unwrap_or(o.wait);
                o.max_drift = self.online_max_drift.unwrap_or(o.max_drift);
                o.min_saving = self.online_min_saving.unwrap_or(o.min_saving);
                o.min_pace = self.online_min_pace.unwrap_or(o.min_pace);
                o.retry = self.online_retry.unwrap_or(o.retry);
                o
            },
            online_out: self.online_out,
            admit: None,
            zero_config,
            no_keys: None,
            job_key: self.job_key.map(|(k, _)| k),
        })
    }

    /// `zebra switch --listen` with nothing that sizes a job: a switch that
    /// admits jobs as their servers register, with this file's geometry,
    /// timeouts and number format.
    fn admitting(self) -> Result<HotpathConfig, SettingsError> {
        if !self.server_addrs.is_empty() {
            return Err(SettingsError::one(
                "server_addr: a switch that admits jobs as they register has no server to pin \
                 (give workers and hot keys to fix the job)"
                    .into(),
            ));
        }
        let mut template = JobConfig::new(0, 1, 1, 1);
        template.number = self.number.unwrap_or(NumberMode::F32);
        template.layout = self.layout.unwrap_or(LayoutKind::Heat);
        template.dense_ranks = self.dense_ranks.unwrap_or(0);
        self.jobless(Some(template), None)
    }

    /// A configuration with no job: a switch that admits jobs like
    /// `admit`, or a job whose hot-keys file `no_keys` lists no key.
    fn jobless(
        mut self,
        admit: Option<JobConfig>,
        no_keys: Option<String>,
    ) -> Result<HotpathConfig, SettingsError> {
        let mut proto = self
            .config
            .take()
            .unwrap_or_else(|| Config::new(Vec::new()));
        proto.jobs = Vec::new();
        proto
            .validate_for_admission()
            .map_err(|e| SettingsError::one(format!("the settings do not fit together: {e}")))?;
        Ok(HotpathConfig {
            switch: self.switch,
            proto,
            hot_keys: None,
            hot_set: None,
            job_base: self.job.unwrap_or(1),
            server_addrs: BTreeMap::new(),
            loss: self.loss,
            settle_timeout: self.settle_timeout.unwrap_or(SETTLE_TIMEOUT),
            register_wait: self.register_wait.unwrap_or(REGISTER_WAIT),
            worker_window: self.worker_window.unwrap_or(true),
            online: OnlineConfig::new(self.online_rounds.unwrap_or(ONLINE_ROUNDS)),
            online_out: self.online_out,
            zero_config: admit.is_some(),
            admit,
            no_keys,
            job_key: self.job_key.map(|(k, _)| k),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathBuf {
        PathBuf::from("/etc/zebra/hot.conf")
    }

    #[test]
    fn defaults_are_the_protocol_defaults() {
        let mut s = Settings::new();
        s.set("workers", "4").unwrap();
        s.set("hot_key_count", "1000").unwrap();
        let c = s.build().unwrap();
        let want = Config::new(vec![JobConfig::new(1, 4, 1000, 1)]);
        assert_eq!(c.proto, want);
        assert_eq!((c.switch, c.loss, c.hot_keys.is_none()), (None, None, true));
        let defaults = [
            ("registers", want.registers.to_string()),
            ("slots", want.slots.to_string()),
            ("copies", want.copies.to_string()),
            ("packet_size", want.packet_size.to_string()),
            ("max_seqs", want.max_seqs.to_string()),
            (
                "round_timeout_ms",
                want.round_timeout.as_millis().to_string(),
            ),
            (
                "aggregate_rto_ms",
                want.aggregate_rto.as_millis().to_string(),
            ),
            (
                "aggregate_max_retries",
                want.aggregate_max_retries.to_string(),
            ),
            ("worker_rto_ms", want.worker_rto.as_millis().to_string()),
            ("worker_max_retries", want.worker_max_retries.to_string()),
            (
                "worker_max_in_flight",
                want.worker_max_in_flight.to_string(),
            ),
            ("worker_retain_pairs", want.worker_retain_pairs.to_string()),
            ("max_round_ahead", want.max_round_ahead.to_string()),
            (
                "uncertain_timeout_ms",
                want.uncertain_timeout.as_millis().to_string(),
            ),
            ("server_history", want.server_history.to_string()),
            ("update_window", want.update_window.to_string()),
            ("register_wait_ms", REGISTER_WAIT.as_millis().to_string()),
            ("settle_timeout_ms", SETTLE_TIMEOUT.as_millis().to_string()),
            ("job", "1".into()),
            ("servers", "1".into()),
            ("packing", "strict".into()),
            ("number", "f32".into()),
            ("layout", "heat".into()),
            ("dense_ranks", "0".into()),
            ("online_rounds", ONLINE_ROUNDS.to_string()),
            ("online_tau", OnlineConfig::new(1).tau.to_string()),
            (
                "online_max_drift",
                OnlineConfig::new(1).max_drift.to_string(),
            ),
            (
                "online_min_saving",
                OnlineConfig::new(1).min_saving.to_string(),
            ),
            (
                "online_wait_ms",
                OnlineConfig::new(1).wait.as_millis().to_string(),
            ),
        ];
        assert_eq!(c.online, OnlineConfig::new(ONLINE_ROUNDS));
        for (key, value) in defaults {
            assert_eq!(knob_by_key(key).unwrap().default, value, "{key}");
        }
        for k in KNOBS {
            assert!(k.flag.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        }
    }

    #[test]
    fn worker_window_is_on_unless_switched_off() {
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        assert!(s.clone().build().unwrap().worker_window);
        let file = Settings::parse("workers = 2\nworker_window = false\n", &path()).unwrap();
        assert!(!file.build().unwrap().worker_window);
        s.set("worker_window", "false").unwrap();
        assert!(!s.clone().build().unwrap().worker_window);
        s.set("worker_window", "off").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains("--worker-window \"off\": expected true or false"),
            "{err}"
        );
    }

    #[test]
    fn a_zero_configuration_job_takes_the_id_given_for_it_unless_job_is_set() {
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("servers", "2").unwrap();
        s.set_zero_config_job(4000);
        let c = s.clone().build().unwrap();
        assert!(c.zero_config);
        let ids: Vec<u16> = c.proto.jobs.iter().map(|j| j.id).collect();
        assert_eq!((c.job_base, ids), (4000, vec![4000, 4001]));
        let mut sized = s.clone();
        sized.set("online_capacity", "64").unwrap();
        assert_eq!(sized.build().unwrap().job_base, 1, "a sized job keeps 1");
        s.set("job", "11").unwrap();
        assert_eq!(s.build().unwrap().job_base, 11, "job wins");
    }

    #[test]
    fn online_capacity_without_a_file() {
        let mut s = Settings::new();
        s.set("workers", "4").unwrap();
        s.set("servers", "2").unwrap();
        let zero = s.clone().build().unwrap();
        assert!(zero.zero_config && zero.admit.is_none());
        let share = Config::new(Vec::new()).share(2);
        assert_eq!(share, 32 * 512, "half of the default switch's memory each");
        let jobs: Vec<(u16, u32)> = zero.proto.jobs.iter().map(|j| (j.id, j.hot_keys)).collect();
        assert_eq!(
            jobs,
            vec![(1, share), (2, share)],
            "nothing else sizes them"
        );
        s.set("online_capacity", "640").unwrap();
        let c = s.build().unwrap();
        let hot = c.hot_set.unwrap();
        assert!(hot.is_empty());
        assert_eq!((hot.indices(0), hot.indices(1)), (640, 640));
        let jobs: Vec<(u16, u32)> = c.proto.jobs.iter().map(|j| (j.id, j.hot_keys)).collect();
        assert_eq!(jobs, vec![(1, 640), (2, 640)]);
    }

    #[test]
    fn a_hot_keys_file_with_no_key_is_a_job_with_nothing_to_aggregate() {
        let dir = std::env::temp_dir().join(format!("zebra-empty-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hot.keys");
        std::fs::write(&file, "# why: every worker pushes its own keys\n").unwrap();
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_keys", &file.display().to_string()).unwrap();
        let c = s.clone().build().unwrap();
        assert_eq!(c.no_keys.as_deref(), Some(&*file.display().to_string()));
        assert!(c.proto.jobs.is_empty() && c.admit.is_none() && c.hot_set.is_none());
        s.set("online_capacity", "64").unwrap();
        let c = s.build().unwrap();
        assert!(
            c.no_keys.is_none(),
            "online: the file only starts the count"
        );
        assert_eq!(c.proto.jobs.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_switch_given_only_its_address_admits_jobs() {
        let mut s = Settings::new();
        s.set("switch", "127.0.0.1:9950").unwrap();
        s.set("number", "fixed:16").unwrap();
        s.set("slots", "2048").unwrap();
        let c = s.clone().build().unwrap();
        assert!(c.proto.jobs.is_empty());
        assert_eq!(c.proto.slots, 2048);
        let template = c.admit.clone().expect("admits jobs");
        assert_eq!(template.number, NumberMode::Fixed { frac_bits: 16 });
        assert_eq!(
            c.switch_node_config("127.0.0.1:0".parse().unwrap()).admit,
            Some(template)
        );
        s.set("server_addr", "0=127.0.0.1:5").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(err.contains("server_addr"), "{err}");
    }

    #[test]
    fn docs_list_every_knob() {
        let doc = include_str!("../../../docs/HOTPATH.md");
        for k in KNOBS {
            let row = format!("| `{}` | `--{}` |", k.key, k.flag);
            assert!(doc.contains(&row), "docs/HOTPATH.md lacks the row {row}");
        }
    }

    #[test]
    fn file_then_flags() {
        let dir = std::env::temp_dir().join(format!("zebra-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("hot.keys"),
            "# two hot keys\n7\n18446744073709551000\n",
        )
        .unwrap();
        let text = "\
# hot path
switch = \"127.0.0.1:9950\"
job = 3
workers = \"5\"   # quoted
servers = 2
hot_keys = \"hot.keys\"
registers = 8
slots = 64
copies = 3
packet_size = 96
max_seqs = 100
packing = \"fill\"
round_timeout_ms = 0.5
aggregate_rto_ms = 3
aggregate_max_retries = 7
worker_rto_ms = 4
worker_max_retries = 5
worker_max_in_flight = 9
uncertain_timeout_ms = 60
server_history = 10
update_window = 3
number = \"fixed:12\"
layout = \"random:42\"
dense_ranks = 1
server_addr = [\"0=127.0.0.1:9001\", \"1=127.0.0.1:9002\"]
loss = \"drop=0.01\"
";
        let file = dir.join("hot.conf");
        std::fs::write(&file, text).unwrap();
        let mut s = Settings::load(&file).unwrap();
        s.set("workers", "6").unwrap();
        s.set("server_addr", "1=127.0.0.1:9003").unwrap();
        let c = s.build().unwrap();
        let p = &c.proto;
        assert_eq!(c.switch, Some("127.0.0.1:9950".parse().unwrap()));
        assert_eq!(
            (p.registers, p.slots, p.copies, p.packet_size, p.max_seqs),
            (8, 64, 3, 96, 100)
        );
        assert_eq!(p.packing, Packing::Fill);
        assert_eq!(p.round_timeout, Duration::from_micros(500));
        assert_eq!(
            (p.aggregate_rto, p.worker_rto, p.uncertain_timeout),
            (
                Duration::from_millis(3),
                Duration::from_millis(4),
                Duration::from_millis(60)
            )
        );
        assert_eq!(
            (
                p.aggregate_max_retries,
                p.worker_max_retries,
                p.worker_max_in_flight,
                p.server_history,
                p.update_window
            ),
            (7, 5, 9, 10, 3)
        );
        let jobs: Vec<_> = p
            .jobs
            .iter()
            .map(|j| (j.id, j.workers, j.servers, j.hot_keys))
            .collect();
        assert_eq!(
            jobs,
            [(3, 6, 1, 1), (4, 6, 1, 1)],
            "one job per PS-lite server that owns a hot key (PS-lite key ranges)"
        );
        for j in &p.jobs {
            assert_eq!(j.number, NumberMode::Fixed { frac_bits: 12 });
            assert_eq!(j.layout, LayoutKind::Random { seed: 42 });
            assert_eq!(j.dense_ranks, 1);
        }
        assert_eq!((c.server_member(1), c.job_base), ((4, 0), 3));
        assert_eq!(c.hot_keys.as_ref().unwrap().rank(7), Some(0));
        assert_eq!(
            c.server_addrs
                .values()
                .map(|a| a.port())
                .collect::<Vec<_>>(),
            [9001, 9003]
        );
        assert_eq!(c.loss.unwrap().drop_ppm, 10_000);
        let node = c.switch_node_config("127.0.0.1:0".parse().unwrap());
        assert_eq!(node.server_addrs.len(), 2);
        assert!(node.server_addrs.contains_key(&(4, 0)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_syntax_errors_name_the_line() {
        let err = Settings::parse(
            "workers = 2\nfoo = 1\nswitch = 10.0.0.250:9950\nserver_addr = \"0=1.2.3.4:5\"\nservers = [\"2\"]\n",
            &path(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 1, "{text}");
        assert!(
            text.contains(
                "/etc/zebra/hot.conf:3: not TOML: a text value goes in double quotes: \
                 write switch = \"10.0.0.250:9950\""
            ),
            "{text}"
        );
        let err = Settings::parse(
            "workers = 2\nfoo = 1\nserver_addr = \"0=1.2.3.4:5\"\nservers = [\"2\"]\n",
            &path(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 2, "{text}");
        assert!(
            text.contains("/etc/zebra/hot.conf:2: unknown key \"foo\" (known: switch, job,"),
            "{text}"
        );
        assert!(
            text.contains("/etc/zebra/hot.conf:4: servers takes one value, not an array"),
            "{text}"
        );
        let err = Settings::parse("workers = 2\nworkers = 3\n", &path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("/etc/zebra/hot.conf:2: not TOML: "),
            "a key set twice: {err}"
        );
    }

    #[test]
    fn a_value_from_the_environment_is_named_by_its_variable_as_typed() {
        let mut s = Settings::new();
        s.set_from_env("switch", "ZEBRA_SWITCH", " nowhere")
            .unwrap();
        s.set_from_env("workers", "DMLC_NUM_WORKER", "99").unwrap();
        s.set_from_env("loss", "ZEBRA_HOT_LOSS", "drop=2").unwrap();
        s.set("hot_key_count", "4").unwrap();
        let text = s.build().unwrap_err().to_string();
        for want in [
            "ZEBRA_SWITCH=\" nowhere\": expected HOST:PORT",
            "DMLC_NUM_WORKER=\"99\": expected an integer in 1..=64",
            "ZEBRA_HOT_LOSS=\"drop=2\"",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        for flag in ["--listen", "--workers", "--loss", "switch =", "workers ="] {
            assert!(!text.contains(flag), "{flag} in {text}");
        }
    }

    #[test]
    fn every_bad_value_is_reported_with_its_origin() {
        let text = "\
switch = \"nowhere\"
workers = 65
servers = 0
registers = 41
copies = 9
packet_size = 20
packing = \"best\"
round_timeout_ms = 0
worker_rto_ms = \"abc\"
number = \"fixed:31\"
layout = \"random:x\"
server_addr = \"0\"
loss = \"drop=2\"
";
        let mut s = Settings::parse(text, &path()).unwrap();
        s.set("slots", "-1").unwrap();
        let err = s.build().unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 14, "{text}");
        for want in [
            "hot.conf:1: switch = \"nowhere\": expected HOST:PORT",
            "hot.conf:2: workers = 65: expected an integer in 1..=64",
            "hot.conf:3: servers = 0: expected an integer in 1..=65535",
            "hot.conf:4: registers = 41: expected an integer in 1..=40",
            "hot.conf:5: copies = 9: expected an integer in 1..=4",
            "hot.conf:6: packet_size = 20: expected an integer in 64..=1472",
            "hot.conf:7: packing = \"best\": expected strict, fill or sequential",
            "hot.conf:8: round_timeout_ms = 0: expected milliseconds",
            "hot.conf:9: worker_rto_ms = \"abc\": expected milliseconds",
            "hot.conf:10: number = \"fixed:31\": expected f32 or fixed:BITS",
            "hot.conf:11: layout = \"random:x\": expected heat or random:SEED",
            "hot.conf:12: server_addr = \"0\": expected INDEX=HOST:PORT",
            "hot.conf:13: loss = \"drop=2\": expected a drop probability",
            "--slots \"-1\": expected an integer in 1..=65536",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn missing_and_conflicting_settings() {
        assert!(
            Settings::new().build().unwrap().admit.is_some(),
            "nothing set: a switch that admits jobs"
        );
        let mut s = Settings::new();
        s.set("hot_key_count", "5").unwrap();
        let err = s.build().unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(err.problems[0].starts_with("workers: not set"));

        let mut s = Settings::new();
        for (k, v) in [
            ("workers", "2"),
            ("hot_keys", "/nonexistent.keys"),
            ("hot_key_count", "5"),
            ("server_addr", "3=127.0.0.1:1"),
        ] {
            s.set(k, v).unwrap();
        }
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains(
                "hot keys: --hot-keys gives a hot-keys file and --hot-key-count a number of hot \
                 keys: give one, not both"
            ),
            "{err}"
        );
        let mut env = Settings::parse("hot_key_count = 5\n", &path()).unwrap();
        env.set_from_env("workers", "DMLC_NUM_WORKER", "2").unwrap();
        env.set_from_env("hot_keys", "ZEBRA_HOT_KEYS", "/k")
            .unwrap();
        let both = env.build().unwrap_err().to_string();
        assert!(
            both.contains(
                "ZEBRA_HOT_KEYS gives a hot-keys file and /etc/zebra/hot.conf:1: hot_key_count a \
                 number of hot keys"
            ),
            "{both}"
        );
        assert!(
            err.contains("--server-addr: server_addr names server 3, the job has 1 servers"),
            "{err}"
        );

        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_keys", "/nonexistent.keys").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(err.contains("hot keys: /nonexistent.keys: "), "{err}");

        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_key_count", "40000").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains(
                "do not fit together: jobs need 1250 slots per register, the switch has 1024"
            ),
            "{err}"
        );
        assert!(Settings::new().set("nope", "1").is_err());
    }
}
